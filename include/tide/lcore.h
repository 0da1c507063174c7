/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tide/lcore.h - worker threads and per-thread indices.
 *
 * Pools keep one object cache per thread, indexed by a small thread index. Threads started
 * with tide_lcore_launch() get an index automatically; any other thread may take one with
 * tide_thread_register(). A thread without an index still works: its pool calls go straight
 * to the shared ring (slower, but correct).
 */
#ifndef TIDE_LCORE_H
#define TIDE_LCORE_H

#include <tide/common.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TIDE_THREAD_NONE 0xffffffffu

/*
 * The calling thread's index, read by inline fast-path code. Public only for that reason:
 * use tide_thread_index(). initial-exec keeps the access a single load in shared builds.
 */
TIDE_EXPORT extern __thread unsigned tide_thread_index_ __attribute__((tls_model("initial-exec")));

/* Index of the calling thread in [0, TIDE_MAX_THREADS), or TIDE_THREAD_NONE. */
static inline unsigned tide_thread_index(void)
{
	return tide_thread_index_;
}

/*
 * Give the calling thread an index. Returns the index (>= 0), the existing index when the
 * thread already has one, or -ENOSPC when all TIDE_MAX_THREADS indices are in use.
 */
TIDE_EXPORT int tide_thread_register(void);

/*
 * Release the calling thread's index. The caller must first have flushed its pool caches
 * (tide_pool_cache_flush()) or the objects in them stay there until another thread takes
 * the same index.
 */
TIDE_EXPORT void tide_thread_unregister(void);

/*
 * Quiescent states (internal; public only because the inline burst calls of tide/port.h
 * report them). A thread with an index is "online" from its first burst call until it
 * unregisters or calls tide_thread_offline(). Every burst call is a quiescent point: the
 * thread holds no pointer into tide's internal state there. When the control thread stops,
 * closes or re-pairs a queue, it bumps `token` and waits until every online thread has
 * seen the new token (`seen`) or is offline; only then does it free or reuse what the data
 * path could still be following. See docs/design/link.md.
 */
struct tide_qs_thread_ {
	uint64_t seen; /* token seen at the last quiescent point; 0 = offline */
} TIDE_CACHE_ALIGNED;

struct tide_qs_ {
	uint64_t token; /* bumped by every grace period */
	struct tide_qs_thread_ thread[TIDE_MAX_THREADS] TIDE_CACHE_ALIGNED;
};

TIDE_EXPORT extern struct tide_qs_ tide_qs_;

/* Out of line: the token moved (or the thread comes online). */
TIDE_EXPORT void tide_qs_report_(unsigned idx);

/* A quiescent point of the calling thread: a few loads when nothing changed. */
static inline void tide_qs_tick_(void)
{
	unsigned i = tide_thread_index_;

	/* Acquire: pairs with the release of the token bump in the grace period; what the
	 * control thread unpublished before it is visible from here on. */
	if (i < TIDE_MAX_THREADS &&
	    tide_unlikely(__atomic_load_n(&tide_qs_.thread[i].seen, __ATOMIC_RELAXED) !=
			  __atomic_load_n(&tide_qs_.token, __ATOMIC_ACQUIRE)))
		tide_qs_report_(i);
}

/*
 * Tell tide that the calling thread will not call burst functions for a while (before it
 * blocks, sleeps or waits for work). Control calls in other threads (stop, close, re-pair)
 * wait for every thread that has polled queues and is not offline to reach its next burst
 * call; a thread that blocks without going offline makes them wait (they log after a
 * second). The next burst call brings the thread back online. Threads started with
 * tide_lcore_launch() go offline when their function returns. No-op for a thread without
 * an index.
 */
TIDE_EXPORT void tide_thread_offline(void);

/*
 * Bring the calling thread back online at once, as its next burst call would: a quiescent
 * point, after which control calls in other threads wait for it again. Call it after a
 * blocking wait when the thread's next call on a queue is not a burst (for example
 * tide_rxq_intr_disable() after sleeping on an Rx interrupt), so that a stop or close
 * running meanwhile waits for that call too. No-op for a thread without an index.
 */
TIDE_EXPORT void tide_thread_online(void);

struct tide_lcore;

typedef int (*tide_lcore_fn)(void *arg);

/*
 * Start a thread running @fn(@arg), pinned to CPU @cpu (or not pinned when @cpu < 0), with
 * its own thread index. Returns 0 and the handle in *@out, -EINVAL for a CPU this process
 * may not run on, -ENOSPC when no thread index is free, or another -errno from pthreads.
 */
TIDE_EXPORT int tide_lcore_launch(int cpu, tide_lcore_fn fn, void *arg, struct tide_lcore **out);

/*
 * Wait for the thread to end, store its return value in *@ret (if non-NULL), and free the
 * handle. Returns 0 or -errno from pthread_join.
 */
TIDE_EXPORT int tide_lcore_join(struct tide_lcore *lc, int *ret);

/* Number of CPUs this process may run on (its affinity mask). */
TIDE_EXPORT int tide_lcore_count(void);

#ifdef __cplusplus
}
#endif

#endif /* TIDE_LCORE_H */
