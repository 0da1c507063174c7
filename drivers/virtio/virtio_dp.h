/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * virtio frontend: what the data paths of both virtqueue layouts share (virtio_rxtx.c:
 * split, virtio_packed.c: packed; their burst bodies: virtio_burst.h): the Rx buffer of
 * a used id, a chain cut short, the tests for a Tx packet the device can read in place, its
 * bounce copy, its header and the software cut of a TSO packet. Internal, inline.
 */
#ifndef TIDE_VIRTIO_DP_H
#define TIDE_VIRTIO_DP_H

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "copy.h"
#include "inline.h"
#include "virtio.h"

TIDE_ALWAYS_INLINE uint16_t virtio_load16(const uint16_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/*
 * Kick the device, after the full fence of the notification protocol found that it asked:
 * its notify register (virtio-pci: a store after the fence, as the avail store is) or
 * the kick eventfd. Returns 1, the kick to count.
 */
TIDE_ALWAYS_INLINE uint64_t virtio_kick(const struct virtio_vq *vq)
{
	uint64_t one = 1;

	if (vq->notify != NULL) {
		*vq->notify = vq->notify_val;
		return 1;
	}
	if (write(vq->kickfd, &one, sizeof(one)) < 0) {
		/* a full eventfd counter wakes the device already */
	}
	return 1;
}

/* What the Rx loop reads on every entry, in locals: the stores into mbufs could alias the
 * queue's fields (-fno-strict-aliasing) and force a reload of each after every store. */
struct virtio_rx_view {
	struct tide_mbuf **sw;
	uint16_t *slot_desc, *desc_slot;
	uint32_t *avail_check; /* the queue's: reset when descriptors change slots */
	uint32_t mask, num;
};

/*
 * The buffer of used entry @id, to be received at position @pos; @posted buffers are
 * posted from @pos on. A device may use buffers in any order: the slot of @id trades places
 * with the slot at @pos (descriptor and mbuf alike), so that [pos + 1, refill) stays
 * exactly what is posted. NULL when @id names no posted buffer.
 */
TIDE_ALWAYS_INLINE struct tide_mbuf *virtio_rx_take(const struct virtio_rx_view *v, uint32_t id,
						    uint32_t pos, uint32_t posted)
{
	uint32_t mask = v->mask, s, p = pos & mask;

	if (tide_unlikely(id >= v->num))
		return NULL;
	s = v->desc_slot[id];
	if (tide_unlikely(s != p)) {
		struct tide_mbuf *m;
		uint16_t other;

		if (((s - p) & mask) >= posted)
			return NULL; /* not posted: used already, or never */
		m = v->sw[s];
		other = v->slot_desc[p];
		v->sw[s] = v->sw[p];
		v->sw[p] = m;
		v->slot_desc[s] = other;
		v->desc_slot[other] = (uint16_t)s;
		v->slot_desc[p] = (uint16_t)id;
		v->desc_slot[id] = (uint16_t)p;
		*v->avail_check = v->mask + 1; /* the two slots' avail entries are stale */
	}
	return v->sw[p];
}

/* A chain cut short by a fault: its segments stay in their slots, each freed on its own. */
static inline void virtio_rx_unlink(struct tide_mbuf *m)
{
	while (m != NULL) {
		struct tide_mbuf *nx = m->next;

		m->next = NULL;
		m->nb_segs = 1;
		m = nx;
	}
}

/* Can the device read @m in place? One segment, refcnt 1 (the header goes into its
 * headroom, which nobody else may be writing), room for the header, a pool it reaches. */
TIDE_ALWAYS_INLINE bool virtio_tx_direct(const struct virtio_txq *q,
					 const struct tide_pool *pool0, const struct tide_mbuf *m)
{
	if (tide_unlikely(tide_mbuf__refcnt_segs(m) != TIDE_MBUF_REFCNT_SEGS_ONE ||
			  m->data_off < VIRTIO_HDR_LEN))
		return false;
	if (tide_likely(m->pool == pool0))
		return true;
	for (unsigned k = 1; k < q->npools; k++)
		if (m->pool == q->pools[k])
			return true;
	return false;
}

/*
 * Can a packet of several segments go in place through the slot's indirect table? Needs
 * the feature, at most VIRTIO_TX_SEGS segments, refcnt 1 and headroom on the first (the
 * header is written there), and every segment from a pool the device reaches.
 */
TIDE_ALWAYS_INLINE bool virtio_tx_ind_ok(const struct virtio_txq *q, const struct tide_mbuf *m)
{
	const struct tide_mbuf *s;

	if (!q->vq.indirect || m->nb_segs > VIRTIO_TX_SEGS || tide_mbuf_refcnt_read(m) != 1 ||
	    m->data_off < VIRTIO_HDR_LEN)
		return false;
	for (s = m; s != NULL; s = s->next) {
		unsigned j = 0;

		while (j < q->npools && s->pool != q->pools[j])
			j++;
		if (j == q->npools)
			return false;
	}
	return true;
}

/*
 * The header on Tx, at @hdr before @m's data: all zero without offloads (@ol false); with
 * them virtio_hdr_tx()'s (the requests, or done in software). Either is written only where
 * the buffer does not hold it already (virtio_hdr_put()). Returns 0, or -EINVAL: a request
 * refused (counted; the caller drops @m, whose descriptor it has not made available).
 */
TIDE_ALWAYS_INLINE int virtio_tx_hdr(struct virtio_txq *q, struct tide_mbuf *m, uint8_t *hdr,
				     const bool ol)
{
	if (!ol) {
		virtio_hdr_put_zero(hdr);
		return 0;
	}
	return virtio_hdr_tx(&q->ol, m, hdr);
}

/*
 * The header of chain @m for its slot's indirect table, written at *@hdr (the first
 * segment's headroom, virtio_tx_hdr()). Returns 1, 0 when the chain cannot go in place
 * (virtio_tx_ind_ok()), or -1 when its header was refused (counted; @m untouched).
 */
TIDE_ALWAYS_INLINE int virtio_tx_ind_hdr(struct virtio_txq *q, struct tide_mbuf *m, bool ol,
					 uint8_t **hdr)
{
	if (!virtio_tx_ind_ok(q, m))
		return 0;
	*hdr = tide_mbuf_mtod(m, uint8_t *) - VIRTIO_HDR_LEN;
	return virtio_tx_hdr(q, m, *hdr, ol) < 0 ? -1 : 1;
}

/* A copy of @m the device can reach (and @m freed), its offload requests with it, or NULL
 * (then @m is still the caller's). */
TIDE_ALWAYS_INLINE struct tide_mbuf *virtio_tx_bounce(struct virtio_txq *q, struct tide_mbuf *m)
{
	struct tide_mbuf *c;

	if (q->bounce == NULL || m->pkt_len > tide_pktpool_data_room(q->bounce))
		return NULL;
	c = tide_mbuf_alloc(q->bounce);
	if (c == NULL)
		return NULL;
	tide_mbuf_read(m, 0, m->pkt_len, tide_mbuf_mtod(c, void *));
	c->data_len = (uint16_t)m->pkt_len;
	c->pkt_len = m->pkt_len;
	c->ol_flags = m->ol_flags;
	c->tso_segsz = m->tso_segsz;
	c->l2_len = m->l2_len;
	c->l3_len = m->l3_len;
	c->l4_len = m->l4_len;
	tide_mbuf_free(m);
	tide_stat_add(&q->bounced, 1);
	return c;
}

/* Most pieces one TSO packet is cut into in software. */
#define VIRTIO_CUT_MAX 128

/*
 * TSO packet @m cut in software (the device does not segment it, or it cannot be placed
 * whole) into mbufs of the bounce pool, which the device reaches: at most @room pieces,
 * each with its checksums filled and a zero header written before its data, into @out
 * (VIRTIO_CUT_MAX). The caller places one piece per descriptor, in its ring's layout.
 * Returns the number of pieces (@m consumed; counted in sw_tso); -1 when they need more
 * than @room but could fit the ring (@m untouched: the burst ends there); or 0 when @m
 * cannot be cut (freed and counted in @dropped; a request the cut refuses also in
 * refused) or needs more pieces than the ring or VIRTIO_CUT_MAX allow (the same).
 */
static inline int virtio_tx_cut(struct virtio_txq *q, struct tide_mbuf *m, unsigned room,
				struct tide_mbuf **out, uint64_t *dropped)
{
	unsigned most = q->txc.size < VIRTIO_CUT_MAX ? q->txc.size : VIRTIO_CUT_MAX;
	int k = -ENOBUFS;

	if (q->bounce != NULL) {
		k = tide_offload_segment(m, q->bounce, out, room < most ? room : most);
		if (k == -ENOSPC && room < most)
			return -1;
	}
	if (k < 0) {
		if (k != -ENOBUFS)
			tide_stat_add(&q->ol.refused, 1);
		tide_mbuf_free(m);
		(*dropped)++;
		return 0;
	}
	for (int j = 0; j < k; j++)
		memset(tide_mbuf_mtod(out[j], uint8_t *) - VIRTIO_HDR_LEN, 0, VIRTIO_HDR_LEN);
	tide_stat_add(&q->ol.sw_tso, 1);
	return k;
}

/*
 * Tx completion per id, without VIRTIO_F_IN_ORDER: used id @id (below the queue size)
 * marks its slot. It must name a buffer in flight (@inflight of them from the engine's
 * done position) that is not marked yet. Returns 0, or -1 with *@why set.
 */
TIDE_ALWAYS_INLINE int virtio_tx_mark(struct virtio_txq *q, const struct txc *t, uint32_t id,
				      uint32_t inflight, const char **why)
{
	if (tide_unlikely(((id - t->done) & t->mask) >= inflight || q->done[id])) {
		*why = "used id of a buffer not in flight";
		return -1;
	}
	q->done[id] = 1;
	return 0;
}

/* How far the engine may advance: the run of marked slots from its done position, each
 * cleared on the way (at most @inflight). */
TIDE_ALWAYS_INLINE uint32_t virtio_tx_sweep(struct virtio_txq *q, const struct txc *t,
					    uint32_t inflight)
{
	uint32_t c = 0;

	while (c < inflight && q->done[(t->done + c) & t->mask]) {
		q->done[(t->done + c) & t->mask] = 0;
		c++;
	}
	return c;
}

/*
 * Tx completion: the @n slots from the engine's done position came back. The device read
 * their buffers from its core, so the line where a sender writes next (the frame's first
 * bytes, right after our virtio-net header) sits in that core's cache, and each store into
 * it would first wait for the line to come back; the next burst's stores, then its fence
 * before the kick check, wait for them all. The pool hands these buffers out again first
 * (its cache is LIFO), so ask for that line now (copy_claim_line()): the transfers overlap
 * with this burst. Not the header's own line where it is another: a header is rewritten
 * only where it changed (virtio_hdr_put()), and a claim would take that line from the
 * device for nothing. A hint, set per queue when the CPU has PREFETCHW (claim_off: where a
 * packet starts in an mbuf of the first pool; 0: off); a slot without a buffer is skipped.
 */
TIDE_ALWAYS_INLINE void virtio_tx_claim(const struct virtio_txq *q, const struct txc *t,
					 uint32_t n)
{
	if (q->claim_off == 0)
		return;
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *m = (const uint8_t *)t->sw[(t->done + i) & t->mask];

		if (tide_likely(m != NULL))
			copy_claim_line(m + q->claim_off);
	}
}

#endif
