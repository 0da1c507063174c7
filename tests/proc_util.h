/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a test asks of its own process: a monotonic clock (for deadlines), the CPU time of
 * the calling thread (for a bound on work that being descheduled must not trip), how
 * many file descriptors it holds (a port that was closed must have given all of its back),
 * and how many page faults it took (memory meant to be resident before the data path).
 */
#ifndef TIDE_TEST_PROC_UTIL_H
#define TIDE_TEST_PROC_UTIL_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Open descriptors, counting the one the count itself holds open (the same on each call). */
static inline unsigned count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned n = 0;

	if (d == NULL) {
		perror("opendir /proc/self/fd");
		exit(1);
	}
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n;
}

/* Minor page faults of the process so far. */
static inline long minor_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/* UNDER_TSAN: ThreadSanitizer faults in its own shadow of every byte first written, so
 * a count of page faults says nothing of tide's memory there. */
#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

/* Do @step until @cond holds, for up to 5 s; then name @what and fail the test process. */
#define POLL_UNTIL(step, cond, what)                                                               \
	do {                                                                                       \
		double end_ = now_s() + 5;                                                         \
		for (;;) {                                                                         \
			step;                                                                      \
			if (cond)                                                                  \
				break;                                                             \
			if (now_s() > end_) {                                                      \
				fprintf(stderr, "timed out waiting for %s\n", what);              \
				exit(1);                                                           \
			}                                                                          \
		}                                                                                  \
	} while (0)

#endif
