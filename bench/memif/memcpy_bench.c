/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memcpy_bench: libc memcpy (what tide's copy path calls above 128 bytes) against DPDK's
 * rte_memcpy (what net_memif calls), ns per copy at the memif frame sizes.
 *
 *   memcpy_bench [REPS]        (default 5; prints one line per size and pattern)
 *
 * Two patterns: "hot", one source and one destination (both in L1); "ring", the
 * destination walks 1024 slots of 2048 bytes and the source 1024 buffers of 2176 bytes
 * (a memif ring's buffers and a pool's mbufs: 4.2 MiB, beyond L2), as a copy path sees them
 * without a second CPU. The two functions alternate rep by rep; each figure is the median
 * over REPS. Built when libdpdk is installed, with DPDK's own compile flags (rte_memcpy is
 * inline: this is the variant Debian's net_memif was built with only if the flags match,
 * -march=corei7 from its pkg-config file). A benchmark, never a test.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_memcpy.h>

#define SLOTS 1024
#define DST_STRIDE 2048
#define SRC_STRIDE 2176
#define MAX_REPS 64

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

typedef void *(*copy_fn)(void *, const void *, size_t);

static void *rte_copy(void *d, const void *s, size_t n)
{
	return rte_memcpy(d, s, n);
}

/* ns per copy of @n bytes, @iters copies; @ring: walk the slots, else one buffer each. */
static double run(copy_fn f, uint8_t *dst, const uint8_t *src, size_t n, unsigned iters,
		  int ring)
{
	uint64_t t0 = now_ns();

	for (unsigned i = 0; i < iters; i++) {
		unsigned k = ring ? i % SLOTS : 0;

		f(dst + (size_t)k * DST_STRIDE, src + (size_t)k * SRC_STRIDE, n);
		__asm__ volatile("" : : "r"(dst) : "memory"); /* keep every copy */
	}
	return (double)(now_ns() - t0) / iters;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const unsigned sizes[] = {64, 128, 256, 512, 1024, 1518};
	int reps = argc > 1 ? atoi(argv[1]) : 5;
	uint8_t *dst = aligned_alloc(64, (size_t)SLOTS * DST_STRIDE);
	uint8_t *src = aligned_alloc(64, (size_t)SLOTS * SRC_STRIDE);

	if (reps < 1 || reps > MAX_REPS || dst == NULL || src == NULL) {
		fprintf(stderr, "memcpy_bench: REPS must be 1..%d\n", MAX_REPS);
		return 2;
	}
	memset(dst, 1, (size_t)SLOTS * DST_STRIDE);
	memset(src, 2, (size_t)SLOTS * SRC_STRIDE);
	printf("%-5s %-7s %-12s %-12s %s\n", "size", "pattern", "libc ns", "rte ns", "rte/libc");
	for (int ring = 0; ring < 2; ring++)
		for (unsigned z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
			double a[MAX_REPS], b[MAX_REPS];
			/* The source 128 bytes in, as an mbuf's data after its headroom. */
			const uint8_t *s = src + 128;
			unsigned iters = ring ? 200000 : 2000000;

			for (int r = 0; r < reps; r++) {
				a[r] = run(memcpy, dst, s, sizes[z], iters, ring);
				b[r] = run(rte_copy, dst, s, sizes[z], iters, ring);
			}
			qsort(a, (size_t)reps, sizeof(double), cmp);
			qsort(b, (size_t)reps, sizeof(double), cmp);
			printf("%-5u %-7s %-12.2f %-12.2f %.2f\n", sizes[z], ring ? "ring" : "hot",
			       a[reps / 2], b[reps / 2], b[reps / 2] / a[reps / 2]);
		}
	free(dst);
	free(src);
	return 0;
}
