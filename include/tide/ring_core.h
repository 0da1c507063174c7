/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tide/ring_core.h - ring layout, public only because the inline calls of tide/ring.h read
 * it. Do not touch these fields; use tide/ring.h.
 *
 * Indices are free-running 32-bit counters; a slot is index & mask. The ring holds up to
 * `size` objects (full when prod.tail - cons.tail == size).
 *
 *     cons.tail   cons.head         prod.tail   prod.head
 *         |  being  |    ready to be    |  being   |
 *         |  read   |    dequeued       |  written |
 *
 * Who writes what: producers write prod.head (reserve) and prod.tail (publish); consumers
 * write cons.head and cons.tail. Each side reads the other side's tail only.
 *  - producer's release store of prod.tail  pairs with  consumer's acquire load of prod.tail
 *    (slots written before they are published);
 *  - consumer's release store of cons.tail  pairs with  producer's acquire load of cons.tail
 *    (slots read before they can be overwritten).
 */
#ifndef TIDE_RING_CORE_H
#define TIDE_RING_CORE_H

#include <tide/common.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tide_ring_headtail {
	uint32_t head;
	uint32_t tail;
	uint32_t single; /* 1: single producer (or consumer), no CAS needed */
};

struct tide_ring {
	uint32_t size;
	uint32_t mask;
	uint32_t flags;
	char name[32];

	struct tide_ring_headtail prod TIDE_CACHE_ALIGNED;
	struct tide_ring_headtail cons TIDE_CACHE_ALIGNED;

	void *slots[] TIDE_CACHE_ALIGNED;
};

#ifdef __cplusplus
}
#endif

#endif /* TIDE_RING_CORE_H */
