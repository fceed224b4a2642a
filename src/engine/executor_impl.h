/* engine/executor_impl.h - constructors for the two implementations of base/executor.h: a
 * fixed thread pool for `fleetplane serve` (blocking BMC and scheduler calls run there, libuv
 * threadpool.c style) and an inline executor for `fleetplane sim` and deterministic tests, which
 * only queues and runs tasks when the caller's loop says so. Both run tasks in FIFO submission
 * order (the pool starts them in that order; with more than one thread they may overlap). */
#ifndef FP_ENGINE_EXECUTOR_IMPL_H
#define FP_ENGINE_EXECUTOR_IMPL_H

#include <stddef.h>

#include "base/executor.h"

/* executor_pool_new starts nthreads worker threads (1..256; outside that range is clamped) over
 * one FIFO queue and returns the executor, owned by the caller. executor_submit never blocks
 * (the queue is unbounded: callers bound their own submissions, e.g. one task per workqueue
 * key). executor_pending counts tasks queued plus tasks running. executor_free stops accepting
 * (submits from then on, including from running tasks, return FP_ECLOSED), lets the workers
 * drain every task already queued, joins them and frees; it must not be called from a task of
 * the same pool (BUG_ON). Aborts on out-of-memory or if a thread cannot start. */
struct fp_executor *executor_pool_new(int nthreads);

/* executor_inline_new returns an executor, owned by the caller, that runs nothing by itself:
 * executor_submit appends to a FIFO and executor_inline_run runs tasks on the caller's thread.
 * executor_pending counts queued tasks plus the one running. executor_free first stops
 * accepting (submits then return FP_ECLOSED), then runs every task still queued on the calling
 * thread, then frees. Thread-safe, but meant for single-threaded deterministic loops. */
struct fp_executor *executor_inline_new(void);

/* executor_inline_run runs up to max_tasks queued tasks (0 means until the queue is empty), in
 * submission order, on the calling thread; tasks submitted by a running task join the end of
 * the queue and run in this call if the budget allows. e must come from executor_inline_new
 * (BUG_ON otherwise). Returns the number of tasks run. */
size_t executor_inline_run(struct fp_executor *e, size_t max_tasks);

#endif
