/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tide-bench ring: cost of moving objects through a ring with bulk calls.
 *
 * Single thread: enqueue_bulk of n objects then dequeue_bulk of n, in a loop; the figure is
 * the cost of one enqueue plus one dequeue per object. Two threads: a producer enqueues and a
 * consumer dequeues on two pinned lcores; the figure is wall time per object transferred,
 * from the common start until the consumer has taken the last object.
 *
 * Every dequeued burst adds its first and last pointer to a checksum that is compared with
 * what was enqueued, so the work cannot be optimised away and a lost or reordered object
 * is caught.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <tide/ring.h>

#include "bench_util.h"

#define BENCH_RING_SIZE 2048

struct bench_ring_mode {
	const char *name;
	unsigned flags;
};

static const struct bench_ring_mode bench_ring_modes[] = {
    {"sp/sc", TIDE_RING_SP_ENQ | TIDE_RING_SC_DEQ},
    {"mp/mc", 0},
};

/* Stand-ins for objects: only their addresses travel through the ring. */
static uint64_t bench_ring_objs[BENCH_BULK_MAX] TIDE_CACHE_ALIGNED;

struct bench_ring_ctx {
	struct tide_ring *r;
	unsigned bulk;
	void *src[BENCH_BULK_MAX]; /* what every enqueue sends */
	const struct bench_opts *o;
};

/* Checksum contribution of one burst of @n objects. */
static inline uint64_t bench_ring_sum(void *const *objs, unsigned n)
{
	return (uintptr_t)objs[0] + (uintptr_t)objs[n - 1];
}

static int bench_ring_run_st(void *arg, unsigned ms, struct bench_sample *s)
{
	struct bench_ring_ctx *c = arg;
	struct tide_ring *r = c->r;
	unsigned n = c->bulk, calls = bench_chunk_calls(n), i;
	uint64_t budget = (uint64_t)ms * 1000000, sum = 0, loops = 0, t0, t1;
	void *out[BENCH_BULK_MAX];

	t0 = bench_now_ns();
	do {
		for (i = 0; i < calls; i++) {
			if (tide_ring_enqueue_bulk(r, c->src, n, NULL) != n ||
			    tide_ring_dequeue_bulk(r, out, n, NULL) != n) {
				fprintf(stderr, "tide-bench: ring: bulk of %u refused\n", n);
				return -EIO;
			}
			sum += bench_ring_sum(out, n);
		}
		loops += calls;
		t1 = bench_now_ns();
	} while (t1 - t0 < budget);
	if (sum != loops * bench_ring_sum(c->src, n)) {
		fprintf(stderr, "tide-bench: ring: checksum mismatch (single thread, bulk %u)\n",
			n);
		return -EIO;
	}
	s->ns_per_obj = (double)(t1 - t0) / (double)(loops * n);
	s->mops = (double)(loops * n) * 1e3 / (double)(t1 - t0);
	s->checksum = sum;
	return 0;
}

/* Shared state of one two-thread run; each writer's fields on their own cache line. */
struct bench_ring_xfer {
	struct bench_ring_ctx *c;
	uint64_t budget;
	unsigned ready TIDE_CACHE_ALIGNED; /* start barrier */
	int abort;
	/* producer */
	uint64_t t_start TIDE_CACHE_ALIGNED;
	uint64_t produced; /* objects enqueued; final once done is set */
	int done;
	/* consumer */
	uint64_t t_end TIDE_CACHE_ALIGNED;
	uint64_t consumed;
	uint64_t sum;
};

static int bench_ring_producer(void *arg)
{
	struct bench_ring_xfer *x = arg;
	struct tide_ring *r = x->c->r;
	unsigned n = x->c->bulk, calls = bench_chunk_calls(n), i;
	uint64_t produced = 0, t0;

	if (bench_barrier(&x->ready, 2, &x->abort) < 0)
		return -ECANCELED;
	t0 = bench_now_ns();
	x->t_start = t0;
	do {
		for (i = 0; i < calls; i++) {
			while (tide_ring_enqueue_bulk(r, x->c->src, n, NULL) != n)
				tide_pause();
		}
		produced += (uint64_t)calls * n;
	} while (bench_now_ns() - t0 < x->budget);
	__atomic_store_n(&x->produced, produced, __ATOMIC_RELAXED);
	/* Pairs with the consumer's acquire load of done: produced is final once done is seen. */
	__atomic_store_n(&x->done, 1, __ATOMIC_RELEASE);
	return 0;
}

static int bench_ring_consumer(void *arg)
{
	struct bench_ring_xfer *x = arg;
	struct tide_ring *r = x->c->r;
	unsigned n = x->c->bulk;
	uint64_t consumed = 0, sum = 0;
	void *out[BENCH_BULK_MAX];

	if (bench_barrier(&x->ready, 2, &x->abort) < 0)
		return -ECANCELED;
	for (;;) {
		if (tide_ring_dequeue_bulk(r, out, n, NULL) == n) {
			consumed += n;
			sum += bench_ring_sum(out, n);
			continue;
		}
		if (__atomic_load_n(&x->done, __ATOMIC_ACQUIRE) &&
		    consumed == __atomic_load_n(&x->produced, __ATOMIC_RELAXED))
			break;
		tide_pause();
	}
	x->t_end = bench_now_ns();
	x->consumed = consumed;
	x->sum = sum;
	return 0;
}

static int bench_ring_run_mt(void *arg, unsigned ms, struct bench_sample *s)
{
	struct bench_ring_ctx *c = arg;
	struct bench_ring_xfer x;
	uint64_t calls, t;
	int rc;

	memset(&x, 0, sizeof(x));
	x.c = c;
	x.budget = (uint64_t)ms * 1000000;
	rc = bench_run_pair(c->o, bench_ring_producer, &x, bench_ring_consumer, &x, &x.abort);
	if (rc != 0)
		return rc < 0 ? rc : -EIO;
	calls = x.consumed / c->bulk;
	if (x.consumed != x.produced || x.sum != calls * bench_ring_sum(c->src, c->bulk)) {
		fprintf(stderr, "tide-bench: ring: checksum mismatch (two threads, bulk %u)\n",
			c->bulk);
		return -EIO;
	}
	t = x.t_end - x.t_start;
	s->ns_per_obj = (double)t / (double)x.consumed;
	s->mops = (double)x.consumed * 1e3 / (double)t;
	s->checksum = x.sum;
	return 0;
}

int bench_ring(const struct bench_opts *o, struct bench_report *rep)
{
	static struct bench_ring_ctx ctx; /* too large for a worker-friendly stack frame */
	unsigned m, b, th, i;
	int rc = 0;

	rep->title = "ring: enqueue_bulk + dequeue_bulk, ns per object (ring of 2048 slots)";
	rep->notes[0] = "threads=1: enqueue then dequeue in a loop on one thread; ns/obj covers "
			"both calls.";
	rep->notes[1] = "threads=2: producer and consumer lcores; ns/obj is wall time per "
			"object transferred.";
	for (i = 0; i < BENCH_BULK_MAX; i++)
		ctx.src[i] = &bench_ring_objs[i];
	ctx.o = o;
	for (m = 0; m < sizeof(bench_ring_modes) / sizeof(bench_ring_modes[0]); m++) {
		const struct bench_ring_mode *mode = &bench_ring_modes[m];

		rc = tide_ring_create("bench", BENCH_RING_SIZE, mode->flags, &ctx.r);
		if (rc < 0) {
			fprintf(stderr, "tide-bench: cannot create ring: %s\n", strerror(-rc));
			return rc;
		}
		for (th = 1; th <= 2 && rc == 0; th++) {
			for (b = 0; b < o->nb_bulks && rc == 0; b++) {
				struct bench_result r;

				memset(&r, 0, sizeof(r));
				snprintf(r.bench, sizeof(r.bench), "ring");
				snprintf(r.variant, sizeof(r.variant), "%s", mode->name);
				r.bulk = o->bulks[b];
				r.threads = th;
				ctx.bulk = r.bulk;
				rc = bench_measure(
				    o, th == 1 ? bench_ring_run_st : bench_ring_run_mt, &ctx, &r);
				if (rc == 0)
					rc = bench_report_add(rep, &r);
			}
		}
		tide_ring_free(ctx.r);
		ctx.r = NULL;
		if (rc != 0)
			return rc;
	}
	rep->notes[2] = bench_pin_note(o);
	return 0;
}
