/* SPDX-License-Identifier: BSD-3-Clause */
/* lcore: pinned launch, thread indices, join; log: handler, levels, names. */
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include <tide/lcore.h>
#include <tide/log.h>

#include "log.h"
#include "testutil.h"

struct seen {
	int cpu;
	unsigned index;
};

static int worker(void *arg)
{
	struct seen *s = arg;

	s->cpu = sched_getcpu();
	s->index = tide_thread_index();
	return 42;
}

static void test_launch_pinned(void **state)
{
	int ncpu = tide_lcore_count();

	(void)state;
	assert_true(ncpu >= 1);
	for (int cpu = 0; cpu < ncpu && cpu < 4; cpu++) {
		struct tide_lcore *lc;
		struct seen s = {-1, TIDE_THREAD_NONE};
		int ret = 0;

		assert_int_equal(tide_lcore_launch(cpu, worker, &s, &lc), 0);
		assert_int_equal(tide_lcore_join(lc, &ret), 0);
		assert_int_equal(ret, 42);
		assert_int_equal(s.cpu, cpu);
		assert_true(s.index < TIDE_MAX_THREADS);
	}
	/* Unpinned works too; an impossible CPU is refused. */
	{
		struct tide_lcore *lc;
		struct seen s;

		assert_int_equal(tide_lcore_launch(-1, worker, &s, &lc), 0);
		assert_int_equal(tide_lcore_join(lc, NULL), 0);
		assert_true(s.index < TIDE_MAX_THREADS);
		tide_log_set_level((enum tide_log_level)0); /* silence the expected error */
		assert_int_equal(tide_lcore_launch(100000, worker, &s, &lc), -EINVAL);
		assert_int_equal(tide_lcore_launch(0, NULL, &s, &lc), -EINVAL);
		tide_log_set_level(TIDE_LOG_ERR);
	}
}

static void test_register(void **state)
{
	int idx[TIDE_MAX_THREADS];

	(void)state;
	/* This thread starts without an index; registering is idempotent. */
	assert_int_equal(tide_thread_index(), TIDE_THREAD_NONE);
	idx[0] = tide_thread_register();
	assert_true(idx[0] >= 0);
	assert_int_equal(tide_thread_register(), idx[0]);
	assert_int_equal(tide_thread_index(), (unsigned)idx[0]);
	tide_thread_unregister();
	assert_int_equal(tide_thread_index(), TIDE_THREAD_NONE);
	/* Take every index (through the TLS variable of this one thread), then one more. */
	for (int i = 0; i < TIDE_MAX_THREADS; i++) {
		idx[i] = tide_thread_register();
		assert_true(idx[i] >= 0);
		for (int j = 0; j < i; j++)
			assert_int_not_equal(idx[i], idx[j]);
		tide_thread_index_ = TIDE_THREAD_NONE; /* pretend to be a new thread */
	}
	assert_int_equal(tide_thread_register(), -ENOSPC);
	for (int i = 0; i < TIDE_MAX_THREADS; i++) {
		tide_thread_index_ = (unsigned)idx[i];
		tide_thread_unregister();
	}
	assert_true(tide_thread_register() >= 0);
	tide_thread_unregister();
}

struct capture {
	int calls;
	enum tide_log_level level;
	char comp[32];
	char msg[128];
};

static void capture(enum tide_log_level level, const char *comp, const char *msg, void *u)
{
	struct capture *c = u;

	c->calls++;
	c->level = level;
	snprintf(c->comp, sizeof(c->comp), "%s", comp);
	snprintf(c->msg, sizeof(c->msg), "%s", msg);
}

static void test_log(void **state)
{
	struct capture c = {0};

	(void)state;
	tide_log_set_handler(capture, &c);
	tide_log_set_level(TIDE_LOG_WARNING);
	tide_log(TIDE_LOG_INFO, "unit", "dropped %d", 1);
	assert_int_equal(c.calls, 0);
	tide_log(TIDE_LOG_ERR, "unit", "kept %d", 2);
	assert_int_equal(c.calls, 1);
	assert_int_equal(c.level, TIDE_LOG_ERR);
	assert_string_equal(c.comp, "unit");
	assert_string_equal(c.msg, "kept 2");
	tide_log_set_level(TIDE_LOG_DEBUG);
	tide_log(TIDE_LOG_DEBUG, "unit", "now %s", "visible");
	assert_int_equal(c.calls, 2);
	assert_string_equal(tide_log_level_name(TIDE_LOG_WARNING), "WARNING");
	assert_int_equal(tide_log_get_level(), TIDE_LOG_DEBUG);
	tide_log_set_handler(NULL, NULL);
	tide_log_set_level(TIDE_LOG_ERR);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_register),
		cmocka_unit_test(test_launch_pinned),
		cmocka_unit_test(test_log),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
