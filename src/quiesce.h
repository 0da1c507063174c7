/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Quiesce: the control thread takes shared memory (a peer's rings and buffers) away from
 * the workers' bursts without a lock on the data path. Used by the memif and vhost drivers.
 * Each queue has two words:
 *
 *   live   written by the control thread: 1 while the queue may touch the shared memory;
 *          what the queue uses is written before live is stored (release).
 *   busy   written by the worker: 1 from the start of a burst until its end.
 *
 * Burst entry stores busy, then loads live; taking the queue away stores live = 0, then
 * waits until busy reads 0. Each side's store-then-load needs a full fence against the
 * other's (Dekker). With membarrier() the control thread supplies it on every thread at
 * once (quiesce_barrier()) and a burst needs only a compiler barrier; without it (an old
 * kernel, a seccomp filter), @fence is set and every burst entry carries a real fence.
 * After the barrier a worker either saw live == 0 or shows busy == 1 until its burst ends.
 * Should membarrier() fail after the probe found it working, the barrier says so and the
 * caller waits for a grace period instead (quiesce_fallback(); slower, as correct).
 * Internal.
 */
#ifndef TIDE_SRC_QUIESCE_H
#define TIDE_SRC_QUIESCE_H

#include <stdbool.h>
#include <stdint.h>

#include <tide/common.h>

#include "inline.h"
#include "stat.h"

/* Which scheme works here, found once per process: 1 private expedited membarrier, 2 the
 * global membarrier command, 0 none (then the workers fence: @fence). */
int quiesce_kind(void);

/*
 * The control thread's half of the pair, after its stores of live = 0. Returns 0, or
 * -errno when membarrier() failed although the probe found it working (a seccomp filter
 * installed since, ENOMEM in the kernel): then nothing orders a worker's store of busy
 * before its load of live, busy == 0 proves nothing, and the caller goes on with
 * quiesce_fallback() before it reads busy or takes the memory away.
 */
int quiesce_barrier(bool fence);

/*
 * After quiesce_barrier() failed with @err: say so (for @who) and wait for a grace period
 * (src/qs.h). Every burst call that began before it has then ended, and every later one
 * reads live == 0 (its quiescent point's acquire load of the token pairs with the bump,
 * which comes after the stores of live). Covers the threads with an index, as every
 * control call that may run beside bursts does (tide/port.h).
 */
void quiesce_fallback(const char *who, int err);

/*
 * One entry into a queue, as the control thread takes it down: the queue's live word, the
 * busy word of this entry, and where a worker records a fault found while inside (NULL:
 * nowhere). A queue with a second kind of entry that reads the shared memory under its own
 * busy word (memif's Rx interrupt calls) takes a second slot with the same live word.
 */
struct quiesce_slot {
	uint32_t *live;
	const uint32_t *busy;
	const char **fault;
};

/*
 * Take the queues of @slot[0..n) away from the workers (control thread): live = 0 in each,
 * quiesce_barrier(@fence) (when it fails, quiesce_fallback() for @who), then wait until
 * each busy word reads 0 (acquire: pairs with quiesce_leave(); the bursts' accesses to the
 * shared memory are over) and clear each fault. After it no burst or call touches what the
 * queues used until their live word is stored again (release), and the caller may unmap,
 * close or read the queues' indices. A fault is cleared after the waits of every slot
 * before it, so a queue's slots come in the order: other entries first, the one with the
 * fault last.
 */
void quiesce_take(const char *who, bool fence, const struct quiesce_slot *slot, unsigned n);

/* Burst entry: publish busy, then read live (acquire: pairs with the store that published
 * the queue). */
TIDE_ALWAYS_INLINE uint32_t
quiesce_enter(uint32_t *busy, const uint32_t *live, bool fence)
{
	__atomic_store_n(busy, 1, __ATOMIC_RELAXED);
	if (tide_unlikely(fence))
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	else
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return __atomic_load_n(live, __ATOMIC_ACQUIRE);
}

/* Burst exit. Release: every access to shared memory of this burst happens before busy
 * reads 0. */
TIDE_ALWAYS_INLINE void quiesce_leave(uint32_t *busy)
{
	__atomic_store_n(busy, 0, __ATOMIC_RELEASE);
}

/* A worker found the peer breaking a rule: count it and record the first reason (release:
 * the control thread reads it with acquire and disconnects). */
static inline void quiesce_fault(const char **fault, uint64_t *errors, const char *why)
{
	tide_stat_add(errors, 1);
	if (__atomic_load_n(fault, __ATOMIC_RELAXED) == NULL)
		__atomic_store_n(fault, why, __ATOMIC_RELEASE);
}

#endif /* TIDE_SRC_QUIESCE_H */
