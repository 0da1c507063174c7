/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * peer_loop.h - what tide_peer.c and dpdk_peer.c share, so that both sides run the very
 * same loops and report them the same way: the clock, the report line, the arguments, and
 * the two timed loops, written once as macros over each side's calls (each side's inline
 * bulk calls stay direct calls, as an application writes them).
 */
#ifndef TIDE_BENCH_PEER_LOOP_H
#define TIDE_BENCH_PEER_LOOP_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define PEER_MAX_BULK 512

static inline uint64_t peer_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* "<name> ns_per_obj=<x> mops=<y> objs=<n>": the time of one get+put (enqueue+dequeue)
 * pair divided by the bulk size; objs for instructions per object under callgrind. */
static inline void peer_report(const char *name, uint64_t objs, uint64_t ns)
{
	printf("%s ns_per_obj=%.3f mops=%.3f objs=%llu\n", name, (double)ns / (double)objs,
	       (double)objs * 1e3 / (double)ns, (unsigned long long)objs);
}

/* argv: pool|ring BULK MS. Returns 0, or 2 (the exit status) after a usage line of @usage. */
static inline int peer_args(const char *who, const char *usage, int argc, char **argv,
			    unsigned *bulk, unsigned *ms)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s %s\n", who, usage);
		return 2;
	}
	*bulk = (unsigned)atoi(argv[2]);
	*ms = (unsigned)atoi(argv[3]);
	if (*bulk == 0 || *bulk > PEER_MAX_BULK || *ms == 0) {
		fprintf(stderr, "%s: BULK 1..%d, MS > 0\n", who, PEER_MAX_BULK);
		return 2;
	}
	return 0;
}

/*
 * pool_loop(pool, objs, bulk, budget, &ns): GET(pool, objs, bulk) (0: got them) then
 * PUT(pool, objs, bulk), 1024 times between two reads of the clock, until @budget ns have
 * passed. Returns the objects got and put, 0 when a get failed; *ns: the time taken. Its own
 * function, never inlined, so that callgrind can count it alone (--toggle-collect=pool_loop).
 */
#define PEER_POOL_LOOP(POOL_T, GET, PUT)                                                       \
	static __attribute__((noinline)) uint64_t pool_loop(POOL_T *pool, void **objs,         \
							    unsigned bulk, uint64_t budget,    \
							    uint64_t *ns)                      \
	{                                                                                      \
		uint64_t t0 = peer_now_ns(), t1, n = 0;                                        \
                                                                                               \
		do {                                                                           \
			for (int i = 0; i < 1024; i++) {                                       \
				if (GET(pool, objs, bulk) != 0)                                \
					return 0;                                              \
				PUT(pool, objs, bulk);                                         \
			}                                                                      \
			n += 1024ull * bulk;                                                   \
			t1 = peer_now_ns();                                                    \
		} while (t1 - t0 < budget);                                                    \
		*ns = t1 - t0;                                                                 \
		return n;                                                                      \
	}

/*
 * ring_loop(ring, objs, out, bulk, budget, &ns): ENQ(ring, objs, bulk, NULL) then
 * DEQ(ring, out, bulk, NULL) (must return @bulk), 1024 times between two reads of the
 * clock, until @budget ns have passed. Returns the pointers moved, 0 when a dequeue failed;
 * *ns: the time taken. What was dequeued is summed so that the loop cannot be dropped.
 */
#define PEER_RING_LOOP(RING_T, ENQ, DEQ)                                                       \
	static uint64_t ring_loop(RING_T *ring, void **objs, void **out, unsigned bulk,        \
				  uint64_t budget, uint64_t *ns)                               \
	{                                                                                      \
		uint64_t t0 = peer_now_ns(), t1, n = 0, sum = 0;                               \
                                                                                               \
		do {                                                                           \
			for (int i = 0; i < 1024; i++) {                                       \
				ENQ(ring, objs, bulk, NULL);                                   \
				if (DEQ(ring, out, bulk, NULL) != bulk)                        \
					return 0;                                              \
				sum += (uintptr_t)out[0];                                      \
			}                                                                      \
			n += 1024ull * bulk;                                                   \
			t1 = peer_now_ns();                                                    \
		} while (t1 - t0 < budget);                                                    \
		*ns = t1 - t0;                                                                 \
		return sum != 0 ? n : 0;                                                       \
	}

#endif /* TIDE_BENCH_PEER_LOOP_H */
