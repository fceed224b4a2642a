/* engine/breaker.h - a circuit breaker per BMC (Nygard, "Release It!", the Circuit Breaker
 * pattern; the same three states as gRPC's outlier ejection and Envoy's): after
 * failure_threshold consecutive failed commands a BMC is left alone for a backoff, then one
 * probe command is let through; its success closes the breaker, its failure (or no report
 * within probe_timeout_ms) re-opens it with the backoff doubled, up to probe_max_ms, plus a
 * random jitter so a rack of BMCs that failed together is not probed in lockstep.
 *
 * Times come from a struct fp_clock (virtual in tests) and all arithmetic is in integer
 * milliseconds, so a run in virtual time is exact and reproducible for a given rng seed.
 * Keys are strings (the lifecycle uses the BMC address); a key whose state equals a fresh
 * key's (closed, no failures) is not stored at all, closed keys with a failure count and no
 * activity for probe_max_ms are forgotten, so are open keys whose probe has been due for
 * probe_max_ms with nobody asking, and at most max_keys are held, so memory follows the failing
 * part of the fleet. Thread-safe: one mutex, never held across a call out.
 *
 * Use: rc = breaker_allow(br, key, &wait); if rc == 0 make the BMC call, then
 * breaker_report(br, key, ok) exactly once; if rc == FP_EAGAIN retry after wait ms. */
#ifndef FP_ENGINE_BREAKER_H
#define FP_ENGINE_BREAKER_H

#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"

struct breaker_config {
	int failure_threshold;    /* consecutive failures that open; <= 0: 5 */
	int64_t probe_min_ms;     /* first probe after opening; <= 0: 5000 */
	int64_t probe_max_ms;     /* backoff cap; <= 0: 300000 (raised to probe_min_ms if lower) */
	double jitter;            /* 0..1, fraction added at random (clamped; NaN = 0) */
	int64_t probe_timeout_ms; /* a granted probe not reported within this counts as failed;
				   * <= 0: 120000 */
	size_t max_keys;          /* 0: 65536 */
};

enum breaker_state {
	BREAKER_CLOSED,
	BREAKER_OPEN,
	BREAKER_HALF_OPEN
};

/* Transitions breaker_report returns. OPENED and CLOSED alternate per key: each OPENED (the
 * breaker trips from closed) is followed by exactly one CLOSED (a probe succeeded) before the
 * next OPENED; probe failures and timeouts while open are not transitions (BREAKER_T_NONE). */
enum {
	BREAKER_T_NONE = 0,
	BREAKER_T_OPENED,
	BREAKER_T_CLOSED
};

struct breaker;

/* breaker_new returns a breaker owned by the caller (breaker_free). cfg is copied; NULL means
 * all defaults. The clock is borrowed and must outlive the breaker; rng is borrowed and may be
 * NULL (no jitter). */
struct breaker *breaker_new(struct fp_clock *clock, struct fp_rng *rng,
			    const struct breaker_config *cfg);
/* breaker_free frees the breaker and its keys. NULL is a no-op. */
void breaker_free(struct breaker *br);

/* breaker_allow asks whether a command may go to key (non-empty; keys are copied).
 * Returns 0 with *wait_ms = 0 when the breaker is closed, or when it is open, its backoff has
 * run out and no probe is outstanding: the caller then holds the single half-open probe and
 * must breaker_report its result (not reporting within probe_timeout_ms counts as a failure).
 * Returns FP_EAGAIN with *wait_ms > 0 when open: the milliseconds until the next probe may be
 * granted (backoff left), or, while another caller's probe is outstanding, the time left until
 * that probe times out but at most probe_min_ms (so waiters look again soon after it reports).
 * FP_EINVAL for a NULL or empty key. wait_ms may be NULL. */
int breaker_allow(struct breaker *br, const char *key, int64_t *wait_ms);

/* breaker_report records the result of a command allowed on key (ok != 0: success) and
 * returns the transition it caused:
 *   closed:  a failure counts toward failure_threshold; reaching it opens the breaker with a
 *            backoff of probe_min_ms plus jitter (BREAKER_T_OPENED); a success resets the count.
 *   probe outstanding: success closes (BREAKER_T_CLOSED); failure re-opens with the backoff
 *            doubled (capped at probe_max_ms) plus jitter, counted from now (BREAKER_T_NONE).
 *   open, no probe outstanding (a command allowed before the breaker opened, or a probe whose
 *            report came after probe_timeout_ms): ignored (BREAKER_T_NONE).
 * The jitter is a uniform integer in [0, floor(backoff * jitter)] ms drawn from the rng.
 * FP_EINVAL for a NULL or empty key. When max_keys keys are held and none can be dropped, a
 * failure of a new key is not recorded (the breaker fails open: it never blocks a BMC it
 * cannot track). */
int breaker_report(struct breaker *br, const char *key, int ok);

/* breaker_state returns the state of key now: CLOSED (also for unknown keys), OPEN while the
 * backoff runs, HALF_OPEN once a probe may be granted or while one is outstanding. A probe not
 * reported within probe_timeout_ms is taken as failed when any call looks at the key at or
 * after its deadline; the new backoff then counts from that deadline. */
enum breaker_state breaker_state(struct breaker *br, const char *key);

/* breaker_nkeys returns the number of keys held (for tests and metrics). */
size_t breaker_nkeys(struct breaker *br);

#endif
