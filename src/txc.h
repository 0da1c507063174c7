/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The Tx completion engine: one implementation of Tx ring bookkeeping for every driver.
 *
 * A driver owns its descriptor format; the engine owns the software ring (one mbuf pointer
 * per slot), the indices, the RS placement, the thresholds and the release policy. All
 * indices are free-running 32-bit counters; a slot is index & mask.
 *
 *        clean          done                 tail
 *    ......|  completed   |  in flight (device)  |  free  ......
 *          | not released |                      |
 *
 * Who writes what: only the thread that owns the Tx queue touches this structure. The
 * device (or peer) reports completion through one of two driver hooks:
 *   - desc_done(ctx, slot): has the device written back the descriptor at a slot that
 *     carried an RS mark? (descriptor NICs). The engine keeps a FIFO of RS-marked slots and
 *     asks about one mark per check;
 *   - a count: the driver tells the engine how many slots completed since last time
 *     (head write-back, memif tail, AF_XDP completion ring).
 * Drivers instantiate the inline templates below with their hooks (always_inline, so the
 * hook inlines too) and hand the engine an out-of-line `advance` for callers that do not
 * know the driver (Rx refill pulling recycled buffers, done_cleanup).
 */
#ifndef TIDE_SRC_TXC_H
#define TIDE_SRC_TXC_H

#include <stdbool.h>
#include <string.h>

#include <tide/mbuf.h>
#include <tide/port.h>

#include "inline.h"
#include "link.h"
#include "stat.h"

#define TXC_DEFAULT_THRESH 32
#define TXC_FAST_FREE_CHUNK 64 /* bulk put size of txfree=fast */

struct txc;

typedef void (*txc_release_fn)(struct txc *t, struct tide_mbuf **m, unsigned n);
typedef unsigned (*txc_advance_fn)(struct txc *t);

struct txc {
	/* Hot: read and written on every burst. */
	uint32_t tail;   /* next slot to fill */
	uint32_t done;   /* slots before this were completed by the device */
	uint32_t clean;  /* slots before this were released */
	uint32_t gap;    /* slots filled since the last RS mark */
	uint32_t mark_head, mark_tail; /* FIFO of RS-marked slot indices (desc_done mode) */
	uint32_t size, mask;
	uint16_t rs_thresh, free_thresh;
	uint8_t rs;          /* enum tide_rs */
	uint8_t txfree;      /* enum tide_txfree */
	bool count_mode;     /* completions arrive as a count: no marks kept */
	bool auto_pair;      /* pair with the Rx queue the sent packets came from (link.h; here,
				not in `link`, because every burst reads it with the fields above) */
	uint8_t link_kind;   /* enum link_kind: how this engine's buffers reach an Rx queue */
	bool index_only;     /* slots never hold buffers and are not walked: completion only
				moves `clean`, and the driver counts what it releases */
	bool track;          /* check the fast-free contract per packet (auto/recycle without
				it asserted): the unsafe_left slots from `clean` may break it */
	uint8_t unsafe_pending; /* the burst being committed had a packet breaking the contract,
				   or a slot without a buffer (txc_burst_hole) */
	uint32_t unsafe_left; /* slots from `clean` on that may hold unsafe buffers or none: they
				 are released the safe way (a count, not an index: it cannot go
				 stale when the indices wrap) */
	struct tide_mbuf **sw;  /* one pointer per slot */
	uint32_t *marks;        /* size entries */
	txc_release_fn release;  /* for completed slots: the policy, or the benchmark's walk */
	txc_release_fn policy;   /* the release policy itself (txc_release_burst) */
	txc_advance_fn advance;
	void *drv;              /* the driver's queue, for `advance` */
	struct tide_pool *fast_pool; /* learned from the first mbuf seen (fast contract) */
	struct tide_txq *q;

	/* Which thread may enter the engine (read at the start of every burst): the recycle
	 * link's words, written as link.h says (struct link_tx). */
	struct link_tx link;

	/* Counters (owner thread writes; relaxed so others may read): tx_released and
	 * tx_recycled of tide/port.h, counted only through txc_count_*() below. */
	uint64_t released;
	uint64_t recycled;
};

/* How a driver uses the engine. */
struct txc_drv {
	bool slots_empty;   /* slots never keep a buffer after the burst (copy-mode drivers free
			       right after copying): completion is O(1), an index move */
	bool count_mode;    /* completions arrive as a count (txc_advance_count) */
	bool walk_empty;    /* with slots_empty: walk the (empty) slots on completion anyway,
			       the per-entry cost that O(1) completion removes (benchmarks) */
	txc_advance_fn advance; /* out-of-line completion check */
	void *drv;          /* the driver's queue, passed back through t->drv */
};

/*
 * Set up the engine for a ring of @size slots with a checked @conf (txc_conf_check).
 * Returns 0 or -ENOMEM.
 */
int txc_init(struct txc *t, struct tide_txq *q, unsigned size, const struct tide_txq_conf *conf,
	     const struct txc_drv *d);

/* Free the engine's memory (buffers must have been released first: txc_release_all). */
void txc_fini(struct txc *t);

/* driver.h txq_release for Tx queues that are one allocation with the handle first and
 * the engine inside: frees both. */
void txc_txq_release(struct tide_txq *q);

/* Release every buffer still held (in flight or completed): the device is stopped. The
 * owner word is left as it is (STOPPED when the port stops). */
unsigned txc_release_all(struct txc *t);

/* Fill in defaults and check a Tx configuration against a ring size and the device's max
 * RS gap. @eager (struct tide_port_info.tx_reclaim_eager) makes the default free_thresh
 * nb_desc - rs_thresh. Logs which value is wrong and why. Returns 0 or -EINVAL. */
int txc_conf_check(const char *who, unsigned nb_desc, unsigned max_rs_gap, bool eager,
		   struct tide_txq_conf *conf);

/* Recycle: move @n completed buffers of @t into @dst if it is safe (see tide_recycle()).
 * Returns n, or 0 when not enough were completed or the buffers were not safe to recycle
 * (they are then released normally). */
unsigned txc_recycle_into(struct txc *t, struct tide_mbuf **dst, unsigned n,
			  const struct tide_pool *pool);

/*
 * Every entry to a Tx queue's state from its polling thread goes through this: does the
 * calling thread own the engine? (Another thread's refill may be recycling from it until
 * that thread passed a quiescent point; a stopped queue belongs to its driver.) One load
 * and a compare when it does. The caller is between two quiescent points (a burst, or a
 * public call such as tide_recycle() made between bursts): a stop that stores STOPPED
 * waits for it before the driver takes the engine's buffers back.
 */
TIDE_ALWAYS_INLINE bool txc_own(struct txc *t)
{
	return tide_likely(link_tx_owned(&t->link)) || link_tx__adopt(t);
}

/* The Tx engine an Rx queue's link is paired with, if the calling thread owns it. */
TIDE_ALWAYS_INLINE struct txc *txc_link_src(const struct link_rx *l)
{
	struct txc *t = (struct txc *)link_rx_pair(l);

	return t != NULL && link_tx_owned(&t->link) ? t : NULL;
}

/*
 * The Tx counters (tide/port.h, struct tide_port_stats). released: buffers a Tx burst took
 * that the queue has let go of since - released to a pool on completion (txc_reclaim), right
 * after a copy (txc_release_burst, or one by one in a driver's copy loop), dropped, handed
 * to a peer port, at stop, or recycled into an Rx queue. recycled: those of them that went
 * into an Rx queue instead of a pool. Every path counts here, through these two, and each
 * buffer once: where the engine's slots hold the buffers, txc_reclaim and txc_recycle_into
 * count; where they do not (copy drivers, AF_XDP's frames), the driver does, when it lets
 * the buffer go.
 */
TIDE_ALWAYS_INLINE void txc_count_released(struct txc *t, unsigned n)
{
	tide_stat_add(&t->released, n);
}

/* @n of the buffers counted released went into an Rx queue. */
TIDE_ALWAYS_INLINE void txc_count_recycled(struct txc *t, unsigned n)
{
	tide_stat_add(&t->recycled, n);
}

static inline unsigned txc_free_slots(const struct txc *t)
{
	return t->size - (t->tail - t->clean);
}

/* ---- RS placement ---- */

TIDE_ALWAYS_INLINE void txc__mark(struct txc *t, uint32_t idx,
				  void (*set_rs)(void *ctx, uint32_t slot), void *ctx)
{
	set_rs(ctx, idx & t->mask);
	if (!t->count_mode)
		t->marks[t->mark_tail++ & t->mask] = idx;
}

/*
 * After the driver wrote descriptors for slots [first, first + n), decide which carry the
 * RS mark and call @set_rs for each. The gap between two marks never exceeds rs_thresh,
 * which setup checked against the device's limit.
 */
TIDE_ALWAYS_INLINE void txc_place_rs(struct txc *t, uint32_t first, unsigned n,
				     void (*set_rs)(void *ctx, uint32_t slot), void *ctx)
{
	const uint32_t thresh = t->rs_thresh;
	uint32_t off;

	switch ((enum tide_rs)t->rs) {
	case TIDE_RS_EVERY:
		for (off = 0; off < n; off++)
			txc__mark(t, first + off, set_rs, ctx);
		t->gap = 0;
		break;
	case TIDE_RS_BUCKET:
		/* Fixed slots: the last of each thresh-slot bucket (thresh divides the ring). */
		for (off = (thresh - 1 - (first & (thresh - 1))); off < n; off += thresh)
			txc__mark(t, first + off, set_rs, ctx);
		t->gap = (first + n) & (thresh - 1);
		break;
	case TIDE_RS_BURST:
		/* The slot where the gap would reach thresh gets a mark, then the burst's last slot. */
		for (off = thresh - 1 - t->gap; off + 1 < n; off += thresh)
			txc__mark(t, first + off, set_rs, ctx);
		txc__mark(t, first + n - 1, set_rs, ctx);
		t->gap = 0;
		break;
	}
}

/* ---- completion ---- */

/*
 * desc_done mode: check one RS mark and move `done` past it if the device wrote it back.
 * The mark checked is the furthest one within rs_thresh slots of `done` (one check per
 * bucket even when every slot is marked); if that one is not done yet, the oldest mark is
 * tried. Returns the number of slots newly completed.
 */
TIDE_ALWAYS_INLINE unsigned txc_advance_dd(struct txc *t,
					   int (*desc_done)(void *ctx, uint32_t slot), void *ctx)
{
	uint32_t head = t->mark_head, cand, old = t->done;

	if (head == t->mark_tail)
		return 0;
	cand = head;
	while (cand + 1 != t->mark_tail &&
	       t->marks[(cand + 1) & t->mask] - t->done < t->rs_thresh)
		cand++;
	if (!desc_done(ctx, t->marks[cand & t->mask] & t->mask)) {
		if (cand == head || !desc_done(ctx, t->marks[head & t->mask] & t->mask))
			return 0;
		cand = head;
	}
	t->done = t->marks[cand & t->mask] + 1;
	t->mark_head = cand + 1;
	return t->done - old;
}

/* Count mode: @n more slots completed, in order. */
TIDE_ALWAYS_INLINE void txc_advance_count(struct txc *t, unsigned n)
{
	t->done += n;
}

/* Release @n slots from `clean` with @fn, in at most two slices (the ring may wrap). */
TIDE_ALWAYS_INLINE void txc__release_slots(struct txc *t, unsigned n, txc_release_fn fn)
{
	unsigned idx = t->clean & t->mask;
	unsigned first = t->size - idx < n ? t->size - idx : n;

	fn(t, &t->sw[idx], first);
	if (n > first)
		fn(t, &t->sw[0], n - first);
	t->clean += n;
}

/* The refcount-safe release, for slots that may break the fast-free contract. */
void txc__release_bulk(struct txc *t, struct tide_mbuf **m, unsigned n);

/* The pool is learned once, from the first buffer of the burst of @n slots being committed
 * (a slot may be a hole). Out of line: rare, and its loop would weigh on the bursts that
 * inline txc_commit(). */
void txc__learn_pool(struct txc *t, unsigned n);

/* The same for slots among which some hold no buffer (txc_burst_hole): skips those and
 * counts as released only the buffers. */
void txc__release_unsafe(struct txc *t, struct tide_mbuf **m, unsigned n);

/*
 * Release up to @max completed slots through the queue's release policy. With slots that
 * hold no buffers this only moves an index: O(1) however many completed (docs/design/engine.md,
 * "O(1) completion"). Returns the slots released.
 */
TIDE_ALWAYS_INLINE unsigned txc_reclaim(struct txc *t, unsigned max)
{
	unsigned n = t->done - t->clean, total, unsafe;

	if (n > max)
		n = max;
	if (n == 0)
		return 0;
	total = n;
	if (t->index_only) {
		t->clean += n;
		return n;
	}
	if (tide_unlikely(t->unsafe_left != 0)) {
		/* Buffers that broke the contract, and slots without one, go the safe way; the
		 * rest the queue's way. */
		unsafe = t->unsafe_left < n ? t->unsafe_left : n;
		t->unsafe_left -= unsafe;
		txc__release_slots(t, unsafe, txc__release_unsafe);
		n -= unsafe;
	}
	if (n) {
		txc_count_released(t, n);
		txc__release_slots(t, n, t->release);
	}
	return total;
}

/*
 * Make room before a burst of @want packets: when fewer than free_thresh slots, or fewer
 * than @want, are free, check completion and release what is done. One check covers one
 * bucket, and with bursts longer than rs_thresh several buckets may have completed since
 * the last burst: check until there is room or nothing more is done. @advance_inline is the
 * driver's inline completion check. Returns the free slots.
 */
TIDE_ALWAYS_INLINE unsigned txc_make_room(struct txc *t, unsigned want,
					  unsigned (*advance_inline)(struct txc *t))
{
	unsigned free_slots, need = want > t->free_thresh ? want : t->free_thresh;

	if (tide_unlikely(!txc_own(t)))
		return 0;
	free_slots = txc_free_slots(t);
	if (free_slots < need) {
		if (need > t->size)
			need = t->size;
		while (advance_inline(t) != 0 && t->size - (t->tail - t->done) < need)
			;
		txc_reclaim(t, UINT32_MAX);
		free_slots = txc_free_slots(t);
	}
	return free_slots;
}

/*
 * Drivers whose "device" is done with a slot before the burst returns (null, ring, pcap):
 * completion is reported in the burst itself with txc_commit_done(), so a later check has
 * nothing to find. txc_advance_none_ool is their txc_drv.advance.
 */
TIDE_ALWAYS_INLINE unsigned txc_advance_none(struct txc *t)
{
	(void)t;
	return 0;
}

unsigned txc_advance_none_ool(struct txc *t);

/* Such a queue never has to refuse packets for lack of room: everything in it is complete,
 * so reclaim it all. Returns the slots free for a burst of @n. */
TIDE_ALWAYS_INLINE unsigned txc_room_sync(struct txc *t, unsigned n)
{
	unsigned room = txc_make_room(t, n, txc_advance_none);

	if (tide_unlikely(n > room)) {
		txc_reclaim(t, UINT32_MAX);
		room = txc_free_slots(t);
	}
	return room;
}

/* refcnt and nb_segs as one word (mbuf.h pins them together): 1 and 1 keep the contract. */
#define TXC_REFCNT_SEGS_ONE (1u | 1u << 16)

TIDE_ALWAYS_INLINE uint32_t txc__refcnt_segs(const struct tide_mbuf *m)
{
	return __atomic_load_n((const uint32_t *)(const void *)&m->refcnt, __ATOMIC_RELAXED);
}

/*
 * After a burst: pair with the Rx queue the packets came from (txfree=auto/recycle), so
 * that its refill pulls completed buffers from this queue (link_tx_sent: a few loads).
 */
TIDE_ALWAYS_INLINE void txc_commit(struct txc *t, unsigned n)
{
	if (tide_unlikely(t->unsafe_pending)) {
		t->unsafe_pending = 0;
		t->unsafe_left = t->tail + n - t->clean;
		if (t->fast_pool == NULL)
			txc__learn_pool(t, n);
	}
	t->tail += n;
	if (t->auto_pair)
		link_tx_sent((uintptr_t)t, t->link_kind);
}

/*
 * Filling slots: a driver's Tx burst does begin, fill for each slot, end, then commit. The
 * burst view holds the ring pointer, mask, pool and tracking flag in locals (registers)
 * across the driver's loop instead of reloading them from `t` after every store.
 *
 * When tracking, fill notes whether each buffer keeps the fast-free contract (its pool is
 * the queue's, refcnt 1, one segment): the driver has just read the same header line, so
 * the check costs a few instructions and no cache miss, and it lets txfree=auto release and
 * recycle like txfree=fast without the application promising it.
 */
struct txc_burst {
	struct tide_mbuf **sw;
	uint32_t mask;
	bool track;
	uintptr_t unsafe; /* non-zero: a packet broke the contract */
	const struct tide_pool *pool;
};

TIDE_ALWAYS_INLINE void txc_burst_begin(const struct txc *t, struct txc_burst *b)
{
	b->sw = t->sw;
	b->mask = t->mask;
	b->track = t->track;
	b->unsafe = 0;
	b->pool = t->fast_pool;
}

/* Note whether @m keeps the fast-free contract of this queue (same pool, refcnt 1, one
 * segment) when tracking. */
TIDE_ALWAYS_INLINE void txc_burst_check(struct txc_burst *b, const struct tide_mbuf *m)
{
	b->unsafe |= ((uintptr_t)m->pool ^ (uintptr_t)b->pool) |
		     (txc__refcnt_segs(m) ^ TXC_REFCNT_SEGS_ONE);
}

/*
 * The same test as a branch, for drivers whose burst functions are specialised on `track`
 * (chosen at start): true when @m keeps the contract; a driver calls txc_burst_check() for
 * the rest, out of its loop. Two compares on the header line the driver reads anyway.
 */
TIDE_ALWAYS_INLINE bool txc_burst_keeps(const struct txc_burst *b, const struct tide_mbuf *m)
{
	return txc__refcnt_segs(m) == TXC_REFCNT_SEGS_ONE && m->pool == b->pool;
}

TIDE_ALWAYS_INLINE void txc_burst_fill(struct txc_burst *b, uint32_t idx, struct tide_mbuf *m)
{
	b->sw[idx & b->mask] = m;
	if (b->track)
		txc_burst_check(b, m);
}

/*
 * A slot that holds no buffer: a descriptor of the driver's own (a context descriptor)
 * between packets. Its completion releases nothing and counts nothing; the burst's slots
 * are released the safe way (refcount-aware, skipping the hole) and never recycled
 * whole, under every txfree policy, so that no NULL reaches a pool or an Rx ring.
 */
TIDE_ALWAYS_INLINE void txc_burst_hole(struct txc_burst *b, uint32_t idx)
{
	b->sw[idx & b->mask] = NULL;
	b->unsafe |= 1;
}

TIDE_ALWAYS_INLINE void txc_burst_end(struct txc *t, const struct txc_burst *b)
{
	t->unsafe_pending |= b->unsafe != 0;
}

/*
 * Copy-mode drivers: a burst whose packets were copied out is free right away. Release it
 * with the queue's policy, in one go after the copy loop. With txfree=auto the burst is
 * checked against the fast-free contract first (the driver has just read every header):
 * all keep it -> the fast way, otherwise the bulk way. No NULL entries.
 */
TIDE_ALWAYS_INLINE void txc_release_burst(struct txc *t, struct tide_mbuf **pkts, unsigned n)
{
	if (n == 0)
		return;
	txc_count_released(t, n);
	if (t->track) {
		uintptr_t bad = 0;

		if (tide_unlikely(t->fast_pool == NULL))
			t->fast_pool = pkts[0]->pool;
		for (unsigned i = 0; i < n; i++)
			bad |= ((uintptr_t)pkts[i]->pool ^ (uintptr_t)t->fast_pool) |
			       (txc__refcnt_segs(pkts[i]) ^ TXC_REFCNT_SEGS_ONE);
		if (bad) {
			txc__release_bulk(t, pkts, n);
			return;
		}
	}
	t->policy(t, pkts, n);
}

/*
 * The end of a copy-mode burst that took @k packets, @inplace of which the driver freed or
 * handed on itself (dropped, or segmented and sent; their entries in @pkts are NULL). @after:
 * the others are released here in one go (txc_release_burst(), the gaps closed first); else
 * the copy loop freed each one as it went and they are only counted.
 */
TIDE_ALWAYS_INLINE void txc_release_copied(struct txc *t, struct tide_mbuf **pkts, unsigned k,
					   unsigned inplace, const bool after)
{
	if (after) {
		unsigned nfree = k;

		if (tide_unlikely(inplace)) {
			nfree = 0;
			for (unsigned j = 0; j < k; j++)
				if (pkts[j] != NULL)
					pkts[nfree++] = pkts[j];
		}
		txc_release_burst(t, pkts, nfree);
	} else {
		txc_count_released(t, k - inplace); /* freed in the copy loop */
	}
	if (tide_unlikely(inplace))
		txc_count_released(t, inplace);
}

/* Commit @n filled slots that the device has already completed. */
TIDE_ALWAYS_INLINE void txc_commit_done(struct txc *t, unsigned n)
{
	txc_commit(t, n);
	txc_advance_count(t, n);
}

#endif
