/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The wall-clock side of memif_instr and dpdk_memif_instr (libc only, so that the DPDK
 * harness can include it): the time of each of the four burst calls, summed over the lock
 * step and printed per packet. One CPU, hot caches, no other process: the time each side's
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

/* "ns_per_pkt=client_tx,server_rx,server_tx,client_rx" for @pkts packets each way. */
static inline void ls_print(const uint64_t ns[4], uint64_t pkts)
{
	double p = pkts ? (double)pkts : 1.0;

	printf("ns_per_pkt=%.2f,%.2f,%.2f,%.2f\n", ns[0] / p, ns[1] / p, ns[2] / p, ns[3] / p);
}

#endif
