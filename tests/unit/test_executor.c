/* layers: base core store engine */
/* test_executor.c - the thread pool runs every task exactly once under 4 threads, counts
 * pending work, and drains on free; the inline executor runs in submission order, only when
 * asked, within a budget, and refuses submissions once freeing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>

#include "base/err.h"
#include "engine/executor_impl.h"

#define NTASKS 20000

static atomic_int runs[NTASKS];

static void count_task(void *arg)
{
	atomic_fetch_add(&runs[(intptr_t)arg], 1);
}

static void test_pool_exactly_once(void **state)
{
	for (int i = 0; i < NTASKS; i++)
		atomic_store(&runs[i], 0);
	struct fp_executor *e = executor_pool_new(4);
	for (intptr_t i = 0; i < NTASKS; i++)
		assert_int_equal(executor_submit(e, count_task, (void *)i), 0);
	executor_free(e); /* drains the queue, joins */
	int once = 0;
	for (int i = 0; i < NTASKS; i++)
		once += atomic_load(&runs[i]) == 1;
	assert_int_equal(once, NTASKS);
}

/* Tasks that block on a gate, so pending can be observed exactly. */
struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int open;
	int started;
	int finished;
};

static void gated_task(void *arg)
{
	struct gate *g = arg;
	pthread_mutex_lock(&g->mu);
	g->started++;
	pthread_cond_broadcast(&g->cv);
	while (!g->open)
		pthread_cond_wait(&g->cv, &g->mu);
	g->finished++;
	pthread_mutex_unlock(&g->mu);
}

static void test_pool_pending_and_drain(void **state)
{
	struct gate g = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
	struct fp_executor *e = executor_pool_new(4);
	assert_int_equal(executor_pending(e), 0);
	for (int i = 0; i < 6; i++)
		assert_int_equal(executor_submit(e, gated_task, &g), 0);
	pthread_mutex_lock(&g.mu);
	while (g.started < 4) /* 4 threads busy, 2 tasks queued */
		pthread_cond_wait(&g.cv, &g.mu);
	pthread_mutex_unlock(&g.mu);
	assert_int_equal(executor_pending(e), 6);
	pthread_mutex_lock(&g.mu);
	g.open = 1;
	pthread_cond_broadcast(&g.cv);
	pthread_mutex_unlock(&g.mu);
	executor_free(e);
	assert_int_equal(g.started, 6);
	assert_int_equal(g.finished, 6);
}

/* ---- inline ---- */

struct order {
	struct fp_executor *e;
	int seq[16];
	int n;
};

struct step {
	struct order *o;
	int id;
	int spawn; /* submit another step with this id from inside the task (0 = none) */
	int spawn_rc;
};

static void step_task(void *arg)
{
	struct step *s = arg;
	s->o->seq[s->o->n++] = s->id;
	if (s->spawn) {
		static struct step child[4];
		static int nchild;
		struct step *c = &child[nchild++ % 4];
		*c = (struct step){.o = s->o, .id = s->spawn};
		s->spawn_rc = executor_submit(s->o->e, step_task, c);
	}
}

static void test_inline_order(void **state)
{
	struct order o = {.e = executor_inline_new()};
	struct step s[4] = {{&o, 1, 0, 0}, {&o, 2, 9, 0}, {&o, 3, 0, 0}, {&o, 4, 0, 0}};
	for (int i = 0; i < 4; i++)
		assert_int_equal(executor_submit(o.e, step_task, &s[i]), 0);
	assert_int_equal(o.n, 0); /* nothing runs until asked */
	assert_int_equal(executor_pending(o.e), 4);
	assert_int_equal(executor_inline_run(o.e, 2), 2);
	assert_int_equal(o.n, 2);
	assert_int_equal(o.seq[0], 1);
	assert_int_equal(o.seq[1], 2);
	assert_int_equal(s[1].spawn_rc, 0);
	assert_int_equal(executor_pending(o.e), 3); /* 3, 4 and the spawned 9 */
	assert_int_equal(executor_inline_run(o.e, 0), 3);
	assert_int_equal(o.n, 5);
	assert_int_equal(o.seq[2], 3);
	assert_int_equal(o.seq[3], 4);
	assert_int_equal(o.seq[4], 9);
	assert_int_equal(executor_inline_run(o.e, 0), 0);
	assert_int_equal(executor_pending(o.e), 0);
	executor_free(o.e);
}

static void test_inline_free_drains_and_closes(void **state)
{
	struct order o = {.e = executor_inline_new()};
	struct step s[2] = {{&o, 1, 0, 0}, {&o, 2, 7, 1}};
	assert_int_equal(executor_submit(o.e, step_task, &s[0]), 0);
	assert_int_equal(executor_submit(o.e, step_task, &s[1]), 0);
	executor_free(o.e); /* runs both; the submit from inside is refused */
	assert_int_equal(o.n, 2);
	assert_int_equal(o.seq[0], 1);
	assert_int_equal(o.seq[1], 2);
	assert_int_equal(s[1].spawn_rc, FP_ECLOSED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pool_exactly_once),
		cmocka_unit_test(test_pool_pending_and_drain),
		cmocka_unit_test(test_inline_order),
		cmocka_unit_test(test_inline_free_drains_and_closes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
