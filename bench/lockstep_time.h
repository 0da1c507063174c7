/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The wall-clock side of the lock-step harnesses (memif_instr, dpdk_memif_instr,
 * vhost_lockstep; libc only, so that the DPDK harnesses can include it): the time of each
 * burst call, summed over the lock step and printed per packet. One CPU, hot caches, no other process: the time each side's
 * work takes without a second CPU or the scheduler in it. Under callgrind the figures are
 * meaningless and the counts do not include this code (it runs outside bench_*).
 */
#ifndef TIDE_BENCH_LOCKSTEP_TIME_H
#define TIDE_BENCH_LOCKSTEP_TIME_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>

static inline uint64_t ls_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ns[i] += time of @call. */
#define LS_TIMED(ns, i, call)                                                                      \
	({                                                                                         \
		uint64_t ls_t0_ = ls_now_ns();                                                     \
		__typeof__(call) ls_r_ = (call);                                                   \
		(ns)[i] += ls_now_ns() - ls_t0_;                                                   \
		ls_r_;                                                                             \
	})

/* "ns_per_pkt=A,B,..." : the @n sums of @ns over @pkts packets (the harness names the order). */
static inline void ls_print(const uint64_t *ns, unsigned n, uint64_t pkts)
{
	double p = pkts ? (double)pkts : 1.0;

	printf("ns_per_pkt=");
	for (unsigned i = 0; i < n; i++)
		printf("%s%.2f", i ? "," : "", ns[i] / p);
	printf("\n");
}

#endif
