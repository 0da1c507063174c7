/* SPDX-License-Identifier: BSD-3-Clause */
/* Pool: caches, flush/refill boundaries, exhaustion, threads, audit, debug tracking. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tide/lcore.h>
#include <tide/log.h>
#include <tide/pool.h>

#include "testutil.h"

static int setup_thread(void **state)
{
	(void)state;
	return tide_thread_register() < 0;
}

static void test_create_errors(void **state)
{
	struct tide_pool *p = NULL;
	struct tide_pool_opts bad = {.sz = 3};

	(void)state;
	assert_int_equal(tide_pool_create("p", 0, 64, 0, NULL, &p), -EINVAL);
	assert_int_equal(tide_pool_create("p", 16, 0, 0, NULL, &p), -EINVAL);
	assert_int_equal(tide_pool_create("p", 16, 64, TIDE_POOL_CACHE_MAX + 1, NULL, &p), -EINVAL);
	assert_int_equal(tide_pool_create("p", 16, 64, 0, &bad, &p), -EINVAL);
	assert_null(p);
}

/* Walk through the cache's flush and refill edges with avail and audit checked each step. */
static void test_cache_boundaries(void **state)
{
	enum { N = 64, CACHE = 8 };
	static const unsigned caches[] = {0, 2, CACHE, 16};
	void *objs[N];

	(void)state;
	for (unsigned ci = 0; ci < 4; ci++) {
		struct tide_pool *p;
		struct tide_pool_audit a;
		struct tide_pool_stats st = {.sz = sizeof(st)};
		unsigned held = 0, cache = caches[ci];

		assert_int_equal(tide_pool_create("edges", N, 64, cache, NULL, &p), 0);
		assert_pool_full(p);
		/* Take one at a time up to the whole pool. */
		for (unsigned i = 0; i < N; i++) {
			assert_int_equal(tide_pool_get(p, &objs[held++]), 0);
			assert_int_equal(tide_pool_avail(p), N - held);
			assert_int_equal(tide_pool_audit(p, &a), 0);
			assert_int_equal(a.in_use, held);
		}
		/* Put back in bursts that cross the flush threshold (cache + 1, etc.). */
		for (unsigned n = cache ? cache - 1 : 1; held > 0; n = n % (cache + 2) + 1) {
			unsigned k = n < held ? n : held;

			held -= k;
			tide_pool_put_bulk(p, &objs[held], k);
			assert_int_equal(tide_pool_avail(p), N - held);
			assert_int_equal(tide_pool_audit(p, &a), 0);
			assert_int_equal(a.in_use, held);
			if (cache)
				assert_true(p->cache[tide_thread_index()].len <= cache);
		}
		tide_pool_stats_get(p, &st);
		assert_int_equal(st.gets, N);
		assert_int_equal(st.puts, N);
		if (cache)
			assert_true(st.cache_hits > 0);
		assert_pool_full(p);
		tide_pool_cache_flush(p);
		assert_int_equal(tide_ring_count(p->ring), N);
		tide_pool_free(p);
	}
}

/* A bulk get that cannot be satisfied returns an error and takes nothing. */
static void test_exhaustion(void **state)
{
	enum { N = 40 };
	void *objs[N + 8];

	(void)state;
	for (unsigned cache = 0; cache <= 16; cache += 16) {
		struct tide_pool *p;

		assert_int_equal(tide_pool_create("exh", N, 32, cache, NULL, &p), 0);
		assert_int_equal(tide_pool_get_bulk(p, objs, 30), 0);
		assert_int_equal(tide_pool_get_bulk(p, objs + 30, 11), -ENOENT);
		assert_int_equal(tide_pool_avail(p), N - 30);
		assert_int_equal(tide_pool_get_bulk(p, objs + 30, 10), 0);
		assert_int_equal(tide_pool_avail(p), 0);
		assert_int_equal(tide_pool_get(p, objs + 40), -ENOENT);
		tide_pool_put_bulk(p, objs, N);
		assert_pool_full(p);
		/* A request larger than the whole pool. */
		assert_int_equal(tide_pool_get_bulk(p, objs, N + 1), -ENOENT);
		assert_pool_full(p);
		tide_pool_free(p);
	}
}

/* Random gets and puts against a reference set of held objects. */
static void test_random_vs_model(void **state)
{
	enum { N = 300, OPS = 20000 };
	void *held[N], *buf[N];
	unsigned nheld = 0;
	uint64_t seed = 42;
	uint8_t *taken;
	struct tide_pool *p;

	(void)state;
	assert_int_equal(tide_pool_create("model", N, 48, 32, NULL, &p), 0);
	taken = calloc(N, 1);
	for (unsigned op = 0; op < OPS; op++) {
		uint64_t x = test_rand(&seed);
		unsigned n = 1 + (unsigned)((x >> 4) % 70);

		if (x & 1) {
			int rc = tide_pool_get_bulk(p, buf, n);

			if (n > N - nheld) {
				/* The model says it cannot work; the pool must agree. */
				assert_int_equal(rc, -ENOENT);
			} else if (rc == 0) {
				for (unsigned i = 0; i < n; i++) {
					unsigned idx = (unsigned)(((uint8_t *)buf[i] - p->elt_base) /
								  p->elt_size);
					assert_int_equal(taken[idx], 0);
					taken[idx] = 1;
					held[nheld++] = buf[i];
				}
			}
		} else if (nheld > 0) {
			/* Put back n random held objects. */
			if (n > nheld)
				n = nheld;
			for (unsigned i = 0; i < n; i++) {
				unsigned j = (unsigned)(test_rand(&seed) % nheld);
				unsigned idx = (unsigned)(((uint8_t *)held[j] - p->elt_base) / p->elt_size);

				buf[i] = held[j];
				held[j] = held[--nheld];
				taken[idx] = 0;
			}
			tide_pool_put_bulk(p, buf, n);
		}
		assert_int_equal(tide_pool_in_use(p), nheld);
	}
	tide_pool_put_bulk(p, held, nheld);
	assert_pool_full(p);
	free(taken);
	tide_pool_free(p);
}

struct mt_arg {
	struct tide_pool *p;
	unsigned seed;
	uint64_t ops;
	int registered;
};

static void *mt_worker(void *arg)
{
	struct mt_arg *a = arg;
	uint64_t seed = a->seed;
	void *held[128];

	if (a->registered)
		tide_thread_register();
	for (unsigned i = 0; i < 20000; i++) {
		unsigned n = 1 + (unsigned)(test_rand(&seed) % 64);

		if (tide_pool_get_bulk(a->p, held, n) == 0) {
			/* Write to the objects: a double hand-out would show as an ASan/TSan
			 * report or an audit duplicate. */
			for (unsigned j = 0; j < n; j++)
				memset(held[j], (int)a->seed, 32);
			tide_pool_put_bulk(a->p, held, n);
			a->ops++;
		}
	}
	tide_pool_cache_flush(a->p);
	if (a->registered)
		tide_thread_unregister();
	return NULL;
}

/* Two threads (cached), then a cached and an uncached thread, share one pool. */
static void test_threads(void **state)
{
	(void)state;
	for (int mixed = 0; mixed < 2; mixed++) {
		struct tide_pool *p;
		struct mt_arg a[2];
		pthread_t t[2];

		assert_int_equal(tide_pool_create("mt", 512, 64, 64, NULL, &p), 0);
		for (int i = 0; i < 2; i++) {
			a[i] = (struct mt_arg){.p = p, .seed = 7u + (unsigned)i,
					       .registered = !(mixed && i == 1)};
			pthread_create(&t[i], NULL, mt_worker, &a[i]);
		}
		for (int i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
		assert_true(a[0].ops > 0 && a[1].ops > 0);
		assert_pool_full(p);
		tide_pool_free(p);
	}
}

static unsigned log_errors;

static void count_log(enum tide_log_level level, const char *comp, const char *msg, void *u)
{
	(void)comp;
	(void)msg;
	(void)u;
	if (level == TIDE_LOG_ERR)
		log_errors++;
}

/* Debug tracking refuses a double free and a foreign pointer; the pool stays whole. */
static void test_debug_double_free(void **state)
{
	struct tide_pool_opts o = {.sz = sizeof(o), .flags = TIDE_POOL_F_DEBUG};
	struct tide_pool_stats st = {.sz = sizeof(st)};
	struct tide_pool *p;
	void *objs[4], *twice[2];
	char foreign[64] __attribute__((aligned(64)));

	(void)state;
	assert_int_equal(tide_pool_create("dbg", 16, 64, 8, &o, &p), 0);
	tide_log_set_handler(count_log, NULL);
	assert_int_equal(tide_pool_get_bulk(p, objs, 4), 0);
	tide_pool_put(p, objs[0]);
	tide_pool_put(p, objs[0]); /* freed twice */
	twice[0] = objs[1];
	twice[1] = objs[1]; /* twice in one call */
	tide_pool_put_bulk(p, twice, 2);
	tide_pool_put(p, foreign);
	tide_log_set_handler(NULL, NULL);
	assert_int_equal(log_errors, 3);
	tide_pool_stats_get(p, &st);
	assert_int_equal(st.debug_errors, 3);
	tide_pool_put_bulk(p, objs + 2, 2);
	assert_pool_full(p);
	tide_pool_free(p);
}

/* Without debug tracking, the audit still catches a double free after the fact. */
static void test_audit_catches_duplicate(void **state)
{
	struct tide_pool *p;
	struct tide_pool_audit a;
	void *o;

	(void)state;
	/* 7 elements in a ring of 8 slots: room for the one extra (bad) entry. */
	setenv("TIDE_POOL_DEBUG", "0", 1);
	assert_int_equal(tide_pool_create("aud", 7, 64, 0, NULL, &p), 0);
	assert_null(p->debug_state);
	assert_int_equal(tide_pool_get(p, &o), 0);
	tide_pool_put(p, o);
	tide_pool_put(p, o);
	tide_log_set_handler(count_log, NULL); /* the audit logs the problem; keep it quiet */
	assert_int_equal(tide_pool_audit(p, &a), -EUCLEAN);
	tide_log_set_handler(NULL, NULL);
	assert_int_equal(a.duplicates, 1);
	/* Repair so the pool can be freed cleanly: drain, drop the second copy, refill. */
	void *all[8];
	unsigned k = 0;
	assert_int_equal(tide_ring_dequeue_burst(p->ring, all, 8, NULL), 8);
	for (unsigned i = 0; i < 8; i++)
		if (all[i] != o)
			all[k++] = all[i];
	all[k++] = o;
	assert_int_equal(k, 7);
	assert_int_equal(tide_ring_enqueue_bulk(p->ring, all, 7, NULL), 7);
	assert_pool_full(p);
	tide_pool_free(p);
	setenv("TIDE_POOL_DEBUG", "1", 1);
}

static unsigned env_warnings;

static void env_log(enum tide_log_level level, const char *comp, const char *msg, void *u)
{
	(void)u;
	if (level == TIDE_LOG_WARNING && strcmp(comp, "env") == 0 &&
	    strstr(msg, "TIDE_POOL_DEBUG=on") != NULL)
		env_warnings++;
}

/* TIDE_POOL_DEBUG set to neither 0 nor 1 is reported, and the flags decide: tracking with
 * TIDE_POOL_F_DEBUG, none without (but in a debug build, where it is on by default). */
static void test_debug_env_not_understood(void **state)
{
	struct tide_pool_opts opt = {.sz = sizeof(opt), .flags = TIDE_POOL_F_DEBUG};
	enum tide_log_level level = tide_log_get_level();
	struct tide_pool *p, *q;

	(void)state;
	setenv("TIDE_POOL_DEBUG", "on", 1);
	tide_log_set_level(TIDE_LOG_WARNING);
	tide_log_set_handler(env_log, NULL);
	assert_int_equal(tide_pool_create("envd", 8, 64, 0, &opt, &p), 0);
	assert_int_equal(tide_pool_create("envn", 8, 64, 0, NULL, &q), 0);
	tide_log_set_handler(NULL, NULL);
	tide_log_set_level(level);
	assert_int_equal(env_warnings, 2);
	assert_non_null(p->debug_state);
#ifdef TIDE_DEBUG_BUILD
	assert_non_null(q->debug_state);
#else
	assert_null(q->debug_state);
#endif
	tide_pool_free(p);
	tide_pool_free(q);
	setenv("TIDE_POOL_DEBUG", "1", 1);
}

/*
 * The audit names what is wrong with a free list: an entry that is not an element (one just
 * past the last), and, with debug tracking, an element found free that was never put.
 * Debug tracking refuses puts just outside the element range or off an element's start.
 */
static void test_audit_foreign_and_mismatch(void **state)
{
	struct tide_pool_opts opt = {.sz = sizeof(opt), .flags = TIDE_POOL_F_DEBUG};
	struct tide_pool_stats st = {.sz = sizeof(st)};
	struct tide_pool_audit a;
	struct tide_pool *p;
	void *o, *all[8], *past;
	unsigned k;

	(void)state;
	/* 7 elements in a ring of 8 slots: room for one bad entry. */
	assert_int_equal(tide_pool_create("edge", 7, 64, 0, &opt, &p), 0);
	past = p->elt_base + (size_t)p->n * p->elt_size;
	tide_log_set_handler(count_log, NULL);
	log_errors = 0;
	assert_int_equal(tide_ring_enqueue_bulk(p->ring, &past, 1, NULL), 1);
	assert_int_equal(tide_pool_audit(p, &a), -EUCLEAN);
	assert_int_equal(a.foreign, 1);
	assert_int_equal(a.duplicates, 0);
	assert_int_equal(tide_ring_dequeue_burst(p->ring, all, 8, NULL), 8);
	assert_ptr_equal(all[7], past);
	assert_int_equal(tide_ring_enqueue_bulk(p->ring, all, 7, NULL), 7);
	assert_pool_full(p);
	/* An element slipped into the free list behind the pool's back. */
	assert_int_equal(tide_pool_get(p, &o), 0);
	assert_int_equal(tide_ring_enqueue_bulk(p->ring, &o, 1, NULL), 1);
	assert_int_equal(tide_pool_audit(p, &a), -EUCLEAN);
	assert_int_equal(a.state_mismatch, 1);
	assert_int_equal(a.foreign + a.duplicates, 0);
	assert_int_equal(tide_ring_dequeue_burst(p->ring, all, 8, NULL), 7);
	for (k = 0; k < 7 && all[k] != o; k++)
		;
	assert_true(k < 7);
	all[k] = all[6];
	assert_int_equal(tide_ring_enqueue_bulk(p->ring, all, 6, NULL), 6);
	tide_pool_put(p, o);
	assert_pool_full(p);
	/* Just before the first element, just past the last, one byte into an element. */
	assert_int_equal(tide_pool_get(p, &o), 0);
	tide_pool_put(p, (void *)(p->elt_base - p->elt_size));
	tide_pool_put(p, past);
	tide_pool_put(p, (void *)((uint8_t *)o + 1));
	tide_log_set_handler(NULL, NULL);
	tide_pool_stats_get(p, &st);
	assert_int_equal(st.debug_errors, 3);
	assert_int_equal(tide_pool_in_use(p), 1);
	tide_pool_put(p, o);
	assert_pool_full(p);
	tide_pool_free(p);
}

static void test_shared_memory(void **state)
{
	struct tide_pool_opts o = {.sz = sizeof(o), .flags = TIDE_POOL_F_SHARED};
	struct tide_pool_mem mi;
	struct tide_pool *p;
	void *e;

	(void)state;
	assert_int_equal(tide_pool_create("shm", 100, 2048, 0, &o, &p), 0);
	tide_pool_mem_info(p, &mi);
	assert_true(mi.fd >= 0);
	assert_true(mi.len >= 100u * 2048);
	assert_int_equal(mi.elt_size, 2048);
	/* Offsets are stable and match the area layout. */
	e = tide_pool_elt(p, 7);
	assert_int_equal(tide_pool_offset(p, e), 7u * 2048);
	assert_ptr_equal((char *)mi.base + tide_pool_offset(p, e), e);
	tide_pool_free(p);
}

static long read_long(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static int write_long(const char *path, long v)
{
	FILE *f = fopen(path, "w");
	int rc;

	if (f == NULL)
		return -1;
	rc = fprintf(f, "%ld\n", v) > 0 ? 0 : -1;
	return fclose(f) == 0 ? rc : -1;
}

static const char *const nr_hugepages = "/proc/sys/vm/nr_hugepages";
static long hugepages_before = -1;

/* Reserve 8 more 2 MiB pages, or say why not (the caller exits 77: a skip). */
static const char *hugepages_reserve(void)
{
	if (test_emulated())
		return "runs under an emulator (cross build), which does not map hugetlb pages";
	hugepages_before = read_long(nr_hugepages);
	if (hugepages_before < 0)
		return "cannot read /proc/sys/vm/nr_hugepages";
	if (geteuid() != 0)
		return "needs root to reserve hugepages";
	if (write_long(nr_hugepages, hugepages_before + 8) != 0 ||
	    read_long(nr_hugepages) < hugepages_before + 4) {
		write_long(nr_hugepages, hugepages_before);
		return "the kernel would not reserve 4 more 2 MiB hugepages";
	}
	return NULL;
}

/* With 2 MiB pages reserved, pools use them (private and memfd-backed); without, they fall
 * back to normal pages (every other test). Runs as its own test (pool_hugepages). */
static void test_hugepages(void **state)
{
	const char *const nr = nr_hugepages;
	long before = hugepages_before;
	struct tide_pool_opts o = {.sz = sizeof(o)};
	struct tide_pool_mem mi;
	struct tide_pool *p;

	(void)state;
	for (int shared = 0; shared < 2; shared++) {
		o.flags = shared ? TIDE_POOL_F_SHARED : 0;
		assert_int_equal(tide_pool_create("huge", 1000, 2048, 32, &o, &p), 0);
		tide_pool_mem_info(p, &mi);
		assert_int_equal(mi.hugepages, 1);
		assert_int_equal(mi.len % (2u << 20), 0);
		assert_true(shared ? mi.fd >= 0 : mi.fd < 0);
		assert_pool_full(p);
		tide_pool_free(p);
	}
	/* TIDE_POOL_F_NO_HUGE is honoured even when pages are there. */
	o.flags = TIDE_POOL_F_NO_HUGE;
	assert_int_equal(tide_pool_create("nohuge", 1000, 2048, 32, &o, &p), 0);
	tide_pool_mem_info(p, &mi);
	assert_int_equal(mi.hugepages, 0);
	tide_pool_free(p);
	assert_int_equal(write_long(nr, before), 0);
}

/* "pool" runs every case but the hugepage one and the threads; "pool_hugepages" (argument
 * "hugepages") runs that one alone and exits 77, a skip, when pages cannot be reserved here;
 * "pool_threads" (argument "threads") runs the two-thread case, and skips under qemu-user
 * (skip_threads_when_emulated(): the test pool, with this case in it, took 1.3-46 s in
 * eleven runs of one build there, 0.1 s natively). */
int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_errors),
		cmocka_unit_test(test_cache_boundaries),
		cmocka_unit_test(test_exhaustion),
		cmocka_unit_test(test_random_vs_model),
		cmocka_unit_test(test_debug_double_free),
		cmocka_unit_test(test_audit_catches_duplicate),
		cmocka_unit_test(test_debug_env_not_understood),
		cmocka_unit_test(test_audit_foreign_and_mismatch),
		cmocka_unit_test(test_shared_memory),
	};
	const struct CMUnitTest huge_tests[] = {
		cmocka_unit_test(test_hugepages),
	};
	const struct CMUnitTest thread_tests[] = {
		cmocka_unit_test(test_threads),
	};
	int rc;

	if (argc > 1 && strcmp(argv[1], "threads") == 0) {
		if ((rc = skip_threads_when_emulated()) != 0)
			return rc;
		return cmocka_run_group_tests(thread_tests, setup_thread, NULL);
	}

	if (argc > 1 && strcmp(argv[1], "hugepages") == 0) {
		const char *why = hugepages_reserve();

		if (why != NULL) {
			fprintf(stderr, "skip: %s\n", why);
			return 77;
		}
		rc = cmocka_run_group_tests(huge_tests, setup_thread, NULL);
		write_long(nr_hugepages, hugepages_before); /* also after a failed assertion */
		return rc;
	}

	return cmocka_run_group_tests(tests, setup_thread, NULL);
}
