/* engine/clock.h - constructors for the two implementations of the base/clock.h interface
 * (DESIGN.md principle 6): the real clock used by `fleetplane serve` (clock_real.c: monotonic and
 * wall time from the kernel, one timer thread over a min-heap) and the virtual clock used by
 * `fleetplane sim` and every timing test (clock_virtual.c: time moves only when the caller
 * advances it, timers fire on the advancing thread in (time, insertion) order, so a run is
 * reproducible). Everything above base/ takes a struct fp_clock * and never asks the kernel
 * for the time itself.
 *
 * Timer semantics common to both: clock_after() with delay_ms <= 0 fires at the next chance
 * (real: promptly on the timer thread; virtual: during the next advance, even by 0 ms).
 * clock_cancel() never waits for a callback that is already running: it returns FP_ENOTFOUND
 * for a timer that has fired or is firing, so callers may cancel while holding their own locks;
 * callbacks that touch an object the caller may free must guard its lifetime themselves (see
 * workqueue.c for the pattern). */
#ifndef FP_ENGINE_CLOCK_H
#define FP_ENGINE_CLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"

/* clock_real_new returns a clock over CLOCK_MONOTONIC (now_ms) and CLOCK_REALTIME (wall_ms)
 * whose sleep_ms is nanosleep(2) and whose timers run on one dedicated thread, started here.
 * The caller owns it and frees it with clock_free(), which stops and joins the timer thread;
 * timers still pending then are dropped without running. clock_free() must not be called from
 * a timer callback (BUG_ON). Aborts on out-of-memory or if the thread cannot start. */
struct fp_clock *clock_real_new(void);

/* clock_virtual_new returns a manual clock: now_ms starts at 0 and wall_ms is
 * start_wall_ms + now_ms (Unix epoch ms). Time moves only through clock_virtual_advance,
 * clock_sleep_ms (same as advance) and the run helpers below. The caller owns it and frees it
 * with clock_free(); pending timers are dropped without running. Thread-safe: timer callbacks
 * run on the thread that advances, with no clock lock held, so they may call clock_after,
 * clock_cancel and clock_now_ms re-entrantly. */
struct fp_clock *clock_virtual_new(int64_t start_wall_ms);

/* clock_virtual_advance moves time forward by ms (ms < 0 is treated as 0), firing every timer
 * due at or before the target in order of due time, ties in the order they were added; now_ms
 * equals each timer's due time while it runs and the target afterwards. Timers added by a
 * callback that fall due at or before the target fire within the same call. c must come from
 * clock_virtual_new (BUG_ON otherwise). Returns the number of callbacks run. */
size_t clock_virtual_advance(struct fp_clock *c, int64_t ms);

/* clock_virtual_next_timer stores the due time (now_ms scale) of the earliest pending timer in
 * *at_ms and returns 0, or returns FP_ENOTFOUND when no timer is pending (*at_ms untouched). */
int clock_virtual_next_timer(struct fp_clock *c, int64_t *at_ms);

/* clock_virtual_step_wall moves the wall clock alone by delta_ms (either sign), as an NTP step
 * or an operator's `date -s` does to a real machine: now_ms and pending timers are untouched.
 * c must come from clock_virtual_new (BUG_ON otherwise). */
void clock_virtual_step_wall(struct fp_clock *c, int64_t delta_ms);

/* clock_virtual_pending returns the number of timers not yet fired or cancelled. */
size_t clock_virtual_pending(struct fp_clock *c);

/* clock_virtual_run_until_idle jumps from timer to timer until none is pending or the next one
 * lies more than max_ms after the time of the call; time ends at the last fired timer (not at
 * now + max_ms). A chain of timers that keeps re-arming stops at the bound, so the call
 * returns, except for a callback that re-arms itself with delay <= 0 forever (time never moves,
as with clock_virtual_advance). Returns the number of callbacks run. */
size_t clock_virtual_run_until_idle(struct fp_clock *c, int64_t max_ms);

#endif
