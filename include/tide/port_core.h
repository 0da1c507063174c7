/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tide/port_core.h - what the inline burst calls of tide/port.h read. Public only for that
 * reason; use tide/port.h.
 *
 * A queue handle is the first member of its driver's queue structure. `burst` is chosen when
 * the queue starts (specialised for the driver's mode and the queue's release policy) and
 * points to a no-op while the queue is stopped, so a burst call on a stopped or closed queue
 * returns 0 instead of crashing.
 */
#ifndef TIDE_PORT_CORE_H
#define TIDE_PORT_CORE_H

#include <tide/common.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tide_mbuf;
struct tide_rxq;
struct tide_txq;
struct tide_port;

typedef uint16_t (*tide_rx_burst_fn)(struct tide_rxq *q, struct tide_mbuf **pkts, uint16_t n);
typedef uint16_t (*tide_tx_burst_fn)(struct tide_txq *q, struct tide_mbuf **pkts, uint16_t n);

/*
 * Per-queue counters. Written only by the thread that polls the queue (relaxed stores, so
 * another thread may read them without tearing); read with tide_port_stats_get().
 */
struct tide_queue_stats {
	uint64_t packets;
	uint64_t bytes;
	uint64_t errors;  /* Rx: bad descriptors; Tx: device hangs and refused packets */
	uint64_t nombuf;  /* Rx: refills that found the pool empty */
	uint64_t polls;   /* burst calls */
	uint64_t idle_polls; /* burst calls that moved nothing */
};

struct tide_rxq {
	tide_rx_burst_fn burst;
	void *refill;           /* internal: the queue's Rx refill state, NULL if it has none */
	struct tide_port *port;
	uint16_t qid;
	struct tide_queue_stats stats;
};

struct tide_txq {
	tide_tx_burst_fn burst;
	void *txc;              /* internal: the queue's Tx completion state */
	struct tide_port *port;
	uint16_t qid;
	struct tide_queue_stats stats;
};

/*
 * The Rx queue that most recently returned packets on this thread, and the queue
 * generation it was seen in. Read by the Tx completion engine to pair Tx queues with Rx
 * queues for buffer recycling (txfree=auto). The generation (bumped whenever an Rx queue is
 * freed) keeps a thread from following a pointer to a queue closed since.
 */
TIDE_EXPORT extern __thread struct tide_rxq *tide_last_rxq_ __attribute__((tls_model("initial-exec")));
TIDE_EXPORT extern __thread uint32_t tide_last_rxq_gen_ __attribute__((tls_model("initial-exec")));
TIDE_EXPORT extern uint32_t tide_rxq_gen_;

/* Add to a counter that only the calling thread writes but others may read. */
static inline void tide_stat_add(uint64_t *c, uint64_t v)
{
	__atomic_store_n(c, *c + v, __ATOMIC_RELAXED);
}

/* Count a burst of @packets packets, @bytes bytes, on a queue (drivers' bursts). */
static inline void tide_stat_burst(struct tide_queue_stats *s, uint64_t packets, uint64_t bytes)
{
	if (packets != 0) {
		tide_stat_add(&s->packets, packets);
		tide_stat_add(&s->bytes, bytes);
	}
}

#ifdef __cplusplus
}
#endif

#endif /* TIDE_PORT_CORE_H */
