/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Small operating-system helpers of the control planes (memif, vhost, pcap, the simnic
 * device model, the virtio-user frontend). Internal.
 */
#ifndef TIDE_SRC_OSUTIL_H
#define TIDE_SRC_OSUTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

/* CLOCK_MONOTONIC in nanoseconds: deadlines, retry times, pacing. Never fails on Linux. */
static inline uint64_t os_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Sleep @ns nanoseconds (a poll's step or a retry's pause; an interrupting signal only
 * shortens it, which every caller's loop tolerates). */
static inline void os_sleep_ns(uint64_t ns)
{
	const struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000u),
				    .tv_nsec = (long)(ns % 1000000000u)};

	nanosleep(&ts, NULL);
}

/*
 * Wait for a condition of a device or a peer: call @done(@ctx) now and after each 1 ms
 * sleep, at most @wait_ms sleeps. Returns true as soon as @done does, false when the time
 * ran out (the caller reports it). Control planes only: it sleeps.
 */
static inline bool os_poll_ms(bool (*done)(void *ctx), void *ctx, unsigned wait_ms)
{
	for (unsigned ms = 0;; ms++) {
		if (done(ctx))
			return true;
		if (ms == wait_ms)
			return false;
		os_sleep_ns(1000000);
	}
}

/* Close *@fd when it is open (>= 0) and mark it closed (-1): safe to call twice. */
static inline void os_close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

#endif /* TIDE_SRC_OSUTIL_H */
