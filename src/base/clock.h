/* clock.h - the clock and rng interfaces every controller uses instead of time()/sleep()
 * (DESIGN.md principle 6). Real and virtual implementations live in engine/ (clock_real.c,
 * clock_virtual.c): the same controllers run threaded against real time in `serve` and
 * single-threaded in virtual time in deterministic tests.
 *
 * Times are int64_t milliseconds. now_ms is monotonic (arbitrary epoch); wall_ms is Unix epoch
 * milliseconds (what goes into documents). */
#ifndef FP_BASE_CLOCK_H
#define FP_BASE_CLOCK_H

#include <pthread.h>
#include <stdint.h>

typedef void (*fp_timer_fn)(void *arg);

struct fp_clock;

struct fp_clock_ops {
	int64_t (*now_ms)(struct fp_clock *c);
	int64_t (*wall_ms)(struct fp_clock *c);
	/* Block the caller for ms (virtual: advance time by ms, firing due timers). */
	void (*sleep_ms)(struct fp_clock *c, int64_t ms);
	/* Run fn(arg) once, delay_ms from now, on the clock's timer context (real: the timer
	 * thread; virtual: inside advance). Callbacks must be short and must not block.
	 * Returns a timer id > 0. */
	uint64_t (*after)(struct fp_clock *c, int64_t delay_ms, fp_timer_fn fn, void *arg);
	/* Cancel a pending timer; returns 0 if cancelled, FP_ENOTFOUND if it already ran. */
	int (*cancel)(struct fp_clock *c, uint64_t id);
	void (*free)(struct fp_clock *c);
};

struct fp_clock {
	const struct fp_clock_ops *ops;
};

static inline int64_t clock_now_ms(struct fp_clock *c)
{
	return c->ops->now_ms(c);
}
static inline int64_t clock_wall_ms(struct fp_clock *c)
{
	return c->ops->wall_ms(c);
}
static inline void clock_sleep_ms(struct fp_clock *c, int64_t ms)
{
	c->ops->sleep_ms(c, ms);
}
static inline uint64_t clock_after(struct fp_clock *c, int64_t d, fp_timer_fn fn, void *arg)
{
	return c->ops->after(c, d, fn, arg);
}
static inline int clock_cancel(struct fp_clock *c, uint64_t id)
{
	return c->ops->cancel(c, id);
}
static inline void clock_free(struct fp_clock *c)
{
	if (c)
		c->ops->free(c);
}

/* A seeded pseudo-random generator (xoshiro256**, seeded through splitmix64). Deterministic
 * for a given seed; fp_rng_init(r, 0) seeds from getrandom(2). Thread-safe. */
struct fp_rng {
	uint64_t s[4];
	pthread_mutex_t mu;
};

void fp_rng_init(struct fp_rng *r, uint64_t seed);
void fp_rng_release(struct fp_rng *r);
uint64_t fp_rng_u64(struct fp_rng *r);
/* Uniform in [0, n); n == 0 returns 0. */
uint64_t fp_rng_below(struct fp_rng *r, uint64_t n);
/* Uniform in [0, 1). */
double fp_rng_double(struct fp_rng *r);

#endif
