/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tide-bench pool: cost of get_bulk + put_bulk of n objects, with per-thread caches and
 * without (every call then goes to the pool's shared MP/MC ring).
 *
 * Single thread: the calling thread, registered with tide_thread_register() so that it owns
 * a cache. Two threads: two lcores, each doing its own get/put loop on the same pool; ns/obj
 * is the cost per object seen by one thread (averaged over both), Mobj/s the total of both.
 *
 * The first pointer of every get is added to a checksum (reported in JSON) so the loop
 * cannot be optimised away. After each pool's runs every cache is flushed and the pool must
 * be full again; if it is not, the bench fails.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <tide/lcore.h>
#include <tide/pool.h>

#include "bench_util.h"

#define BENCH_POOL_N   8192
#define BENCH_POOL_ELT 64

struct bench_pool_ctx {
	struct tide_pool *p;
	unsigned bulk;
	const struct bench_opts *o;
};

/* One thread's get/put loop: @budget ns of work; objects moved and time taken out. */
static int bench_pool_loop(struct tide_pool *p, unsigned n, uint64_t budget, uint64_t *objs_out,
			   uint64_t *ns_out, uint64_t *sum_out)
{
	unsigned calls = bench_chunk_calls(n), i;
	uint64_t sum = 0, loops = 0, t0, t1;
	void *objs[BENCH_BULK_MAX];

	t0 = bench_now_ns();
	do {
		for (i = 0; i < calls; i++) {
			if (tide_pool_get_bulk(p, objs, n) < 0) {
				fprintf(stderr, "tide-bench: pool: get_bulk of %u failed\n", n);
				return -ENOENT;
			}
			sum += (uintptr_t)objs[0];
			tide_pool_put_bulk(p, objs, n);
		}
		loops += calls;
		t1 = bench_now_ns();
	} while (t1 - t0 < budget);
	*objs_out = loops * n;
	*ns_out = t1 - t0;
	*sum_out = sum;
	return 0;
}

static int bench_pool_run_st(void *arg, unsigned ms, struct bench_sample *s)
{
	struct bench_pool_ctx *c = arg;
	uint64_t objs, ns;
	int rc;

	rc = bench_pool_loop(c->p, c->bulk, (uint64_t)ms * 1000000, &objs, &ns, &s->checksum);
	if (rc < 0)
		return rc;
	s->ns_per_obj = (double)ns / (double)objs;
	s->mops = (double)objs * 1e3 / (double)ns;
	return 0;
}

struct bench_pool_shared {
	unsigned ready TIDE_CACHE_ALIGNED; /* start barrier */
	int abort;
};

/* One worker of a two-thread run; results written only by its own thread. */
struct bench_pool_worker {
	struct bench_pool_ctx *c;
	struct bench_pool_shared *sh;
	uint64_t budget;
	uint64_t objs, ns, sum;
} TIDE_CACHE_ALIGNED;

static int bench_pool_worker_fn(void *arg)
{
	struct bench_pool_worker *w = arg;
	int rc;

	if (bench_barrier(&w->sh->ready, 2, &w->sh->abort) < 0)
		return -ECANCELED;
	rc = bench_pool_loop(w->c->p, w->c->bulk, w->budget, &w->objs, &w->ns, &w->sum);
	/* The thread index is released on return: give the cached objects back first. */
	tide_pool_cache_flush(w->c->p);
	return rc;
}

static int bench_pool_run_mt(void *arg, unsigned ms, struct bench_sample *s)
{
	struct bench_pool_ctx *c = arg;
	struct bench_pool_shared sh;
	struct bench_pool_worker w[2];
	unsigned i;
	int rc;

	memset(&sh, 0, sizeof(sh));
	memset(w, 0, sizeof(w));
	for (i = 0; i < 2; i++) {
		w[i].c = c;
		w[i].sh = &sh;
		w[i].budget = (uint64_t)ms * 1000000;
	}
	rc = bench_run_pair(c->o, bench_pool_worker_fn, &w[0], bench_pool_worker_fn, &w[1],
			    &sh.abort);
	if (rc != 0)
		return rc < 0 ? rc : -EIO;
	s->ns_per_obj = 0;
	s->mops = 0;
	s->checksum = 0;
	for (i = 0; i < 2; i++) {
		s->ns_per_obj += (double)w[i].ns / (double)w[i].objs / 2;
		s->mops += (double)w[i].objs * 1e3 / (double)w[i].ns;
		s->checksum += w[i].sum;
	}
	return 0;
}

/* Flush this thread's cache and require every element to be back. */
static int bench_pool_check_full(struct tide_pool *p, unsigned cache)
{
	unsigned avail, n = tide_pool_size(p);

	tide_pool_cache_flush(p);
	avail = tide_pool_avail(p);
	if (avail != n) {
		fprintf(stderr,
			"tide-bench: pool (cache %u) is not full after the bench: %u of %u "
			"elements free\n",
			cache, avail, n);
		return 1;
	}
	return 0;
}

static int bench_pool_one(const struct bench_opts *o, unsigned cache, struct bench_report *rep)
{
	struct bench_pool_ctx ctx;
	unsigned b, th;
	int rc, full;

	memset(&ctx, 0, sizeof(ctx));
	ctx.o = o;
	rc = tide_pool_create("bench", BENCH_POOL_N, BENCH_POOL_ELT, cache, NULL, &ctx.p);
	if (rc < 0) {
		fprintf(stderr, "tide-bench: cannot create a pool with cache %u: %s\n", cache,
			strerror(-rc));
		return rc;
	}
	for (th = 1; th <= 2 && rc == 0; th++) {
		for (b = 0; b < o->nb_bulks && rc == 0; b++) {
			struct bench_result r;

			memset(&r, 0, sizeof(r));
			snprintf(r.bench, sizeof(r.bench), "pool");
			snprintf(r.variant, sizeof(r.variant), "cache=%u", cache);
			r.bulk = o->bulks[b];
			r.threads = th;
			ctx.bulk = r.bulk;
			rc = bench_measure(o, th == 1 ? bench_pool_run_st : bench_pool_run_mt, &ctx,
					   &r);
			if (rc == 0)
				rc = bench_report_add(rep, &r);
		}
	}
	full = bench_pool_check_full(ctx.p, cache);
	if (full == 0)
		tide_pool_free(ctx.p);
	/* A pool with elements missing is left allocated: freeing it would only add noise. */
	return rc != 0 ? rc : full;
}

int bench_pool(const struct bench_opts *o, struct bench_report *rep)
{
	static char title[96];
	int rc;

	snprintf(title, sizeof(title),
		 "pool: get_bulk + put_bulk, ns per object (%u elements of %u bytes)", BENCH_POOL_N,
		 BENCH_POOL_ELT);
	rep->title = title;
	rep->notes[0] = "threads=1: the main thread (registered, so it owns a cache) does "
			"get then put in a loop.";
	rep->notes[1] = "threads=2: two lcores each loop on the same pool; ns/obj is per thread, "
			"Mobj/s the sum of both.";
	rep->notes[2] = "cache=0: no per-thread caches; every call goes to the shared MP/MC ring.";
	rc = tide_thread_register();
	if (rc < 0) {
		fprintf(stderr, "tide-bench: cannot register the main thread: %s\n", strerror(-rc));
		return rc;
	}
	rc = 0;
	if (o->cache > 0)
		rc = bench_pool_one(o, o->cache, rep);
	if (rc == 0)
		rc = bench_pool_one(o, 0, rep);
	rep->notes[3] = bench_pin_note(o);
	if (rc == 0)
		rep->notes[4] = "after each pool's runs: all caches flushed, tide_pool_avail() == "
				"pool size (checked).";
	/* Every pool is gone or flushed: the index holds nothing. */
	tide_thread_unregister();
	return rc;
}
