/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The recycle link: the one owner of Tx -> Rx pairing (docs/design/link.md).
 *
 *   lcore i:  Rx burst on A --(hint: A)--> Tx burst on T --(A.pair = T)--> next refill of A
 *                                                                          pulls from T
 *
 * The words it keeps, who writes them, and which grace period makes a stale read harmless:
 *
 *   link_rx.pair    in the Rx queue (struct rxr, afxdp's Rx queue); relaxed atomic.
 *       written by  the Tx burst of the thread that polled the queue last (automatic), the
 *                   control thread (tide_recycle_pair, link_unpair);
 *       read by     the queue's refill, which follows it only if it owns the engine named;
 *       protected   queue release clears it (link_unpair), then waits one grace period
 *                   before the engine's memory goes (port.c, release_queues).
 *   link_tx.owner   in the Tx engine (struct txc); relaxed atomic, FREE stored with release.
 *       written by  the control thread (STOPPED at setup and stop, FREE at start); data-path
 *                   threads only by compare-and-swap (taking FREE, adopting: see below);
 *       read by     every entry to the engine (txc_own) and every refill before it follows
 *                   a pairing (txc_link_src);
 *       protected   stop's grace period (no burst that saw the engine running is left when
 *                   the driver takes its buffers back); an adoption's own grace period (the
 *                   old owner's refills are done before the new owner enters).
 *   link_hint_      thread-local, with the grace-period token of the moment it was taken:
 *                   written and read by the polling thread; stale after any grace period.
 *
 * An Rx queue that can take recycled buffers embeds a struct link_rx: `pair` names the Tx
 * engine its refill takes completed buffers from first. The pairing is automatic (the Tx
 * burst pairs the Rx queue this thread polled last, `link_hint_`) or manual
 * (tide_recycle_pair, LINK_MANUAL set: automatic pairing leaves it alone).
 *
 * Who may follow `pair`: only a thread that owns the Tx engine it names (link_tx.owner is
 * the index of the thread that polls it: link_tx_owned()). A pairing written by another
 * thread, or to a queue since moved, is never followed, so an Rx queue that moves to
 * another lcore is re-paired by that lcore's next Tx burst and a Tx queue that moves is
 * adopted only after its old lcore passed a quiescent point (link_tx__adopt).

 */
#ifndef TIDE_SRC_LINK_H
#define TIDE_SRC_LINK_H

#include <stdbool.h>
#include <stdint.h>

#include <tide/lcore.h>
#include <tide/port.h>

#include "inline.h"

#define LINK_MANUAL ((uintptr_t)1) /* low bit of `pair`: set by tide_recycle_pair() */

/* How buffers move from a Tx engine to an Rx queue. */
enum link_kind {
	LINK_NONE = 0,  /* cannot take part */
	LINK_SLOTS,     /* mbuf pointers from Tx ring slots into Rx refill slots (rxr.h) */
	LINK_ADDR,      /* frame addresses from a completion ring into a fill ring (AF_XDP) */
};

struct link_rx {
	uintptr_t pair;       /* struct txc * | LINK_MANUAL, or 0; relaxed atomic word */
	uint8_t kind;         /* enum link_kind */
	struct tide_rxq *q;
};

/* The Rx queue this thread polled last and the grace-period token of that moment. */
extern __thread struct link_rx *link_hint_ __attribute__((tls_model("initial-exec")));
extern __thread uint64_t link_hint_tok_ __attribute__((tls_model("initial-exec")));

/* An Rx burst of @l's queue (drivers call it from their refill). */
TIDE_ALWAYS_INLINE void link_rx_polled(struct link_rx *l)
{
	link_hint_ = l;
	link_hint_tok_ = __atomic_load_n(&tide_qs_.token, __ATOMIC_RELAXED);
}

/*
 * After a Tx burst of engine @self (auto pairing, @kind its link kind): pair the Rx queue
 * this thread polled last with it, unless that queue is paired by hand or is of another
 * kind. The hint is followed only while no grace period ran since it was taken: a queue
 * freed since is never touched.
 */
TIDE_ALWAYS_INLINE void link_tx_sent(uintptr_t self, uint8_t kind)
{
	struct link_rx *l = link_hint_;
	uintptr_t cur;

	if (l == NULL || link_hint_tok_ != __atomic_load_n(&tide_qs_.token, __ATOMIC_RELAXED) ||
	    l->kind != kind)
		return;
	cur = __atomic_load_n(&l->pair, __ATOMIC_RELAXED);
	if (cur != self && !(cur & LINK_MANUAL))
		__atomic_store_n(&l->pair, self, __ATOMIC_RELAXED);
}

/* The Tx engine @l is paired with (not yet checked for ownership), or 0. */
static inline uintptr_t link_rx_pair(const struct link_rx *l)
{
	return __atomic_load_n(&l->pair, __ATOMIC_RELAXED) & ~LINK_MANUAL;
}

/*
 * The Tx side: which thread may enter a Tx engine (struct txc embeds one). `owner` is the
 * index of the thread that polls the engine, or one of the values below (none of them
 * matches a thread index):
 *   STOPPED  set up and not started, or stopped: no thread may enter the engine, and none
 *            can take it (link_tx__adopt refuses), so the driver's start and stop own it
 *            alone. Stored only by the control thread: link_tx_init(), and link_tx_stop()
 *            before stop's grace period; link_tx_start() makes it FREE.
 *   FREE     started and not polled since: the first thread that asks takes it at once.
 *   BUSY     a thread adopts an engine another thread polled; `adopter` and `adopt_token`
 *            (written and read only by that thread) say who and which grace period it
 *            waits for.
 * Data-path threads move the word only by compare-and-swap from the value they read, so a
 * STOPPED stored meanwhile is never overwritten. Readers load it relaxed: ownership is a
 * thread's own earlier store, or was handed over by a grace period (its release publishes
 * the change) or by start (release, paired with the acquire load in link_tx__adopt).
 */
#define LINK_OWNER_FREE 0xfffffffeu
#define LINK_OWNER_BUSY 0xfffffffdu
#define LINK_OWNER_STOPPED 0xfffffffcu

struct link_tx {
	uint32_t owner;       /* relaxed atomic word: see above */
	uint32_t adopter;     /* the thread adopting the engine (owner == BUSY) */
	uint64_t adopt_token; /* grace period the adoption waits for */
};

/* Does the calling thread own the engine? One load and a compare: the burst path's check. */
TIDE_ALWAYS_INLINE bool link_tx_owned(const struct link_tx *tx)
{
	return __atomic_load_n(&tx->owner, __ATOMIC_RELAXED) == tide_thread_index_;
}

/* Out of line: the calling thread is not the owner of @t's `link`; take the engine over if
 * the old owner cannot be using it any more and it is not stopped. Returns whether the
 * caller owns it now. It takes the engine, not its link_tx, so that the burst path's call
 * passes the pointer it already holds. */
struct txc;
bool link_tx__adopt(struct txc *t);

/* Control thread: a new engine is STOPPED; start makes it FREE (release: what the driver's
 * start wrote is visible to the first owner); stop makes it STOPPED before its grace period. */
void link_tx_init(struct link_tx *tx);
void link_tx_start(struct link_tx *tx);
void link_tx_stop(struct link_tx *tx);

/* Control thread. */
void link_rx_init(struct link_rx *l, struct tide_rxq *q, enum link_kind kind);
/* Pair by hand (@src 0 unpairs and gives the queue back to automatic pairing). */
void link_rx_set(struct link_rx *l, uintptr_t src);
/* Clear every pairing that names @src; the caller runs a grace period before freeing it. */
void link_unpair(uintptr_t src);

#endif
