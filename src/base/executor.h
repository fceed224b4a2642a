/* executor.h - the interface through which blocking work (BMC calls, operation steps) runs off
 * the reconcile and API threads (libuv threadpool.c). Implementations in engine/executor.c:
 * a thread pool for `serve`, and an inline executor that queues tasks and runs them only when
 * the deterministic test loop calls executor_inline_run (virtual time, single thread).
 *
 * Deadlines are not enforced by killing threads: each task receives its deadline and passes it
 * to every driver call, which must return FP_ETIMEDOUT once it is past. */
#ifndef FP_BASE_EXECUTOR_H
#define FP_BASE_EXECUTOR_H

#include <stddef.h>
#include <stdint.h>

typedef void (*fp_task_fn)(void *arg);

struct fp_executor;

struct fp_executor_ops {
	/* Queue fn(arg). Returns 0, or FP_ECLOSED after shutdown (fn is then not called). */
	int (*submit)(struct fp_executor *e, fp_task_fn fn, void *arg);
	/* Tasks queued or running right now. */
	size_t (*pending)(struct fp_executor *e);
	/* Stop accepting, finish queued tasks, join threads, free. */
	void (*free)(struct fp_executor *e);
};

struct fp_executor {
	const struct fp_executor_ops *ops;
};

static inline int executor_submit(struct fp_executor *e, fp_task_fn fn, void *arg)
{
	return e->ops->submit(e, fn, arg);
}
static inline size_t executor_pending(struct fp_executor *e)
{
	return e->ops->pending(e);
}
static inline void executor_free(struct fp_executor *e)
{
	if (e)
		e->ops->free(e);
}

#endif
