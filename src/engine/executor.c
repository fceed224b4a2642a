/* executor.c - the thread pool and the inline executor behind base/executor.h (see
 * engine/executor_impl.h). Both keep tasks in one singly linked FIFO. The pool's workers sleep on
 * a condition variable and run tasks with the lock released; free closes the queue, wakes every
 * worker, and joins them once the queue is empty. The inline executor runs tasks only inside
 * executor_inline_run, which keeps `fleetplane sim` single-threaded and reproducible. */
#include "engine/executor_impl.h"

#include <pthread.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/banned.h"

struct task {
	struct task *next;
	fp_task_fn fn;
	void *arg;
};

struct task_fifo {
	struct task *head, *tail;
	size_t len;
};

static void fifo_push(struct task_fifo *q, fp_task_fn fn, void *arg)
{
	struct task *t = xmalloc(sizeof(*t));
	t->next = NULL;
	t->fn = fn;
	t->arg = arg;
	if (q->tail)
		q->tail->next = t;
	else
		q->head = t;
	q->tail = t;
	q->len++;
}

/* Pops the head into *t (copied) and frees the node; returns 0 when empty. */
static int fifo_pop(struct task_fifo *q, struct task *out)
{
	struct task *t = q->head;
	if (!t)
		return 0;
	q->head = t->next;
	if (!q->head)
		q->tail = NULL;
	q->len--;
	*out = *t;
	free(t);
	return 1;
}

/* ---- thread pool ---- */

#define EXECUTOR_POOL_MAX_THREADS 256

struct executor_pool {
	struct fp_executor base; /* first */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct task_fifo q;
	size_t running;
	int closed;
	int nthreads;
	pthread_t *threads;
};

static const struct fp_executor_ops executor_pool_ops;

static void *pool_main(void *arg)
{
	struct executor_pool *p = arg;
	struct task t;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		if (fifo_pop(&p->q, &t)) {
			p->running++;
			pthread_mutex_unlock(&p->mu);
			t.fn(t.arg);
			pthread_mutex_lock(&p->mu);
			p->running--;
			continue;
		}
		if (p->closed)
			break;
		pthread_cond_wait(&p->cv, &p->mu);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

static int pool_submit(struct fp_executor *e, fp_task_fn fn, void *arg)
{
	struct executor_pool *p = (struct executor_pool *)e;
	BUG_ON(!fn);
	pthread_mutex_lock(&p->mu);
	if (p->closed) {
		pthread_mutex_unlock(&p->mu);
		return FP_ECLOSED;
	}
	fifo_push(&p->q, fn, arg);
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return 0;
}

static size_t pool_pending(struct fp_executor *e)
{
	struct executor_pool *p = (struct executor_pool *)e;
	pthread_mutex_lock(&p->mu);
	size_t n = p->q.len + p->running;
	pthread_mutex_unlock(&p->mu);
	return n;
}

static void pool_free(struct fp_executor *e)
{
	struct executor_pool *p = (struct executor_pool *)e;
	for (int i = 0; i < p->nthreads; i++)
		BUG_ON(pthread_equal(pthread_self(), p->threads[i]));
	pthread_mutex_lock(&p->mu);
	p->closed = 1;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	BUG_ON(p->q.len != 0 || p->running != 0);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p->threads);
	free(p);
}

static const struct fp_executor_ops executor_pool_ops = {
	.submit = pool_submit,
	.pending = pool_pending,
	.free = pool_free,
};

struct fp_executor *executor_pool_new(int nthreads)
{
	if (nthreads < 1)
		nthreads = 1;
	if (nthreads > EXECUTOR_POOL_MAX_THREADS)
		nthreads = EXECUTOR_POOL_MAX_THREADS;
	struct executor_pool *p = xcalloc(1, sizeof(*p));
	p->base.ops = &executor_pool_ops;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->nthreads = nthreads;
	p->threads = xcalloc((size_t)nthreads, sizeof(*p->threads));
	for (int i = 0; i < nthreads; i++) {
		int rc = pthread_create(&p->threads[i], NULL, pool_main, p);
		BUG_ON(rc != 0);
		pthread_setname_np(p->threads[i], "fp-executor");
	}
	return &p->base;
}

/* ---- inline executor ---- */

struct executor_inline {
	struct fp_executor base; /* first */
	pthread_mutex_t mu;
	struct task_fifo q;
	size_t running;
	int closed;
};

static const struct fp_executor_ops executor_inline_ops;

static struct executor_inline *to_inline(struct fp_executor *e)
{
	BUG_ON(!e || e->ops != &executor_inline_ops);
	return (struct executor_inline *)e;
}

static int inline_submit(struct fp_executor *e, fp_task_fn fn, void *arg)
{
	struct executor_inline *x = to_inline(e);
	BUG_ON(!fn);
	pthread_mutex_lock(&x->mu);
	if (x->closed) {
		pthread_mutex_unlock(&x->mu);
		return FP_ECLOSED;
	}
	fifo_push(&x->q, fn, arg);
	pthread_mutex_unlock(&x->mu);
	return 0;
}

static size_t inline_pending(struct fp_executor *e)
{
	struct executor_inline *x = to_inline(e);
	pthread_mutex_lock(&x->mu);
	size_t n = x->q.len + x->running;
	pthread_mutex_unlock(&x->mu);
	return n;
}

size_t executor_inline_run(struct fp_executor *e, size_t max_tasks)
{
	struct executor_inline *x = to_inline(e);
	size_t ran = 0;
	struct task t;
	while (max_tasks == 0 || ran < max_tasks) {
		pthread_mutex_lock(&x->mu);
		if (!fifo_pop(&x->q, &t)) {
			pthread_mutex_unlock(&x->mu);
			break;
		}
		x->running++;
		pthread_mutex_unlock(&x->mu);
		t.fn(t.arg);
		pthread_mutex_lock(&x->mu);
		x->running--;
		pthread_mutex_unlock(&x->mu);
		ran++;
	}
	return ran;
}

static void inline_free(struct fp_executor *e)
{
	struct executor_inline *x = to_inline(e);
	pthread_mutex_lock(&x->mu);
	x->closed = 1;
	pthread_mutex_unlock(&x->mu);
	executor_inline_run(e, 0);
	pthread_mutex_destroy(&x->mu);
	free(x);
}

static const struct fp_executor_ops executor_inline_ops = {
	.submit = inline_submit,
	.pending = inline_pending,
	.free = inline_free,
};

struct fp_executor *executor_inline_new(void)
{
	struct executor_inline *x = xcalloc(1, sizeof(*x));
	x->base.ops = &executor_inline_ops;
	pthread_mutex_init(&x->mu, NULL);
	return &x->base;
}
