/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tide/port_core.h - what the inline burst calls of tide/port.h read. Public only for that
 * reason; use tide/port.h.
 *
 * A queue handle is the first member of its driver's queue structure. The driver chooses
 * `burst` when the queue starts (specialised for its mode and the queue's release policy);
 * `call`, what the burst calls run, is that function while the queue is started and a
 * no-op otherwise, so a burst call on a stopped queue returns 0. Only the control thread
 * writes `call` (release when it starts the queue: the queue is set up before a burst can
 * see it; the burst calls load it with acquire).
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
 * Per-queue counters. Counted only by the thread that polls the queue, with relaxed atomic
 * loads and stores, so another thread may read them (tide_port_stats_get()) without tearing
 * and zero them (tide_port_stats_reset(); a count made at that moment may be lost).
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
	tide_rx_burst_fn call;  /* what tide_rx_burst() runs */
	tide_rx_burst_fn burst; /* internal: the driver's burst function */
	void *refill;           /* internal: the queue's recycle link (link.h), NULL if none */
	struct tide_port *port;
	uint16_t qid;
	struct tide_queue_stats stats;
};

struct tide_txq {
	tide_tx_burst_fn call;  /* what tide_tx_burst() runs */
	tide_tx_burst_fn burst; /* internal: the driver's burst function */
	void *txc;              /* internal: the queue's Tx completion state */
	struct tide_port *port;
	uint16_t qid;
	struct tide_queue_stats stats;
};

#ifdef __cplusplus
}
#endif

#endif /* TIDE_PORT_CORE_H */
