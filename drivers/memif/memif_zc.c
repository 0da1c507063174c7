/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memif zero-copy data path (client only). The Rx pools' memory areas are regions 1..n;
 * descriptors point straight into mbufs, so nothing is copied:
 *
 *   Rx (S2C ring): the Rx refill (rxr.h) posts empty mbufs as descriptors {pool region,
 *       offset of the data room, data room} and publishes head; the server writes packets
 *       into them and publishes tail; we hand the same mbufs to the application. Only the
 *       length and the "continues" flag are read back, and the length is checked against
 *       the data room we posted: the mbuf of a slot is ours, never taken from the peer.
 *   Tx (C2S ring): each segment becomes one descriptor pointing at its data; the Tx engine
 *       holds the mbufs until the server's tail passes them (count-mode completion), then
 *       releases them through the queue's policy (bulk, fast or recycled into an Rx refill).
 *       A packet from a pool that is not a region, or a chain other holders share (its
 *       segments cannot be cut into slots), is copied into mbufs of a region pool.
 *
 * Index pairs: [S2C-head] and [C2S-head] are published here (release), [S2C-tail] and
 * [C2S-tail] loaded (acquire); see memif_copy.c for the table.
 */
#include <string.h>

#include "inline.h"
#include "memif.h"

TIDE_ALWAYS_INLINE void zc_post(void *ctx, uint32_t first, unsigned n)
{
	struct memif_rxq *q = ctx;
	/* In locals: the descriptor stores below may alias q (-fno-strict-aliasing). */
	struct memif_desc *desc = q->r.ring->desc;
	struct tide_mbuf *const *sw = q->rxr.sw;
	const struct tide_pool *pool = q->pool;
	const uint32_t sw_mask = q->rxr.mask, ring_mask = q->r.mask;
	const uint32_t headroom = q->headroom, dataroom = q->dataroom;
	const uint16_t region = q->zreg;

	for (unsigned k = 0; k < n; k++) {
		uint32_t i = first + k;
		struct memif_desc *d = &desc[i & ring_mask];

		memif_desc_put_len(d, 0, region, dataroom);
		/* Fresh mbufs of the queue's pool: their offsets from their addresses, not from
		 * their (cold) headers (mbuf.h). */
		d->offset = (uint32_t)(tide_mbuf__iova_of(pool, sw[i & sw_mask]) + headroom);
	}
}

TIDE_ALWAYS_INLINE void zc_doorbell(void *ctx, uint32_t refill)
{
	struct memif_rxq *q = ctx;

	q->head = (uint16_t)refill;
	/* [S2C-head] release: the posted descriptors are written. */
	memif_publish(&q->r.ring->head, q->head);
}

void memif_zc_rx_post_ool(struct rxr *r, uint32_t first, unsigned n, bool doorbell)
{
	struct memif_rxq *q = r->drv;
	uint32_t live = memif_enter(&q->busy, &q->live, q->fence);

	/* Recycled buffers land in the refill slots even while the link is down: they
	 * are posted by the first burst after the link comes up. */
	if (live == q->seen) {
		zc_post(q, first, n);
		if (doorbell)
			zc_doorbell(q, first + n);
	}
	memif_leave(&q->busy);
}

/*
 * A chain cut short by a violation: its segments stay in the refill ring's slots, each
 * released there on its own, so they must not point at each other.
 */
static void zc_unlink(struct tide_mbuf *m)
{
	while (m != NULL) {
		struct tide_mbuf *nx = m->next;

		m->next = NULL;
		m->nb_segs = 1;
		m = nx;
	}
}

static uint16_t zc_rx(struct tide_rxq *pub, struct tide_mbuf **pkts, uint16_t n)
{
	struct memif_rxq *q = (struct memif_rxq *)pub;
	uint32_t live = memif_enter(&q->busy, &q->live, q->fence);
	struct rxr *r = &q->rxr;
	struct memif_ring *ring;
	uint32_t next;
	uint16_t tail, moved, avail, i = 0;
	uint64_t bytes = 0, dropped = 0;
	const char *why = NULL;

	if (tide_unlikely(live != q->seen) && !memif_rxq_resync(q, live)) {
		memif_leave(&q->busy);
		return 0;
	}
	ring = q->r.ring;
	if (rxr_empty_slots(r) >= r->batch)
		rxr_refill(r, zc_post, zc_doorbell, q);
	/* [S2C-tail] acquire */
	tail = __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE);
	if (tide_unlikely(memif_ring_index_check(q->peer, tail, (uint16_t)(q->head - q->peer),
						 &moved, &why))) {
		memif_rx_fault(q, why);
		memif_leave(&q->busy);
		return 0;
	}
	q->peer = tail;
	next = r->next;
	avail = (uint16_t)(tail - (uint16_t)next);
	while (i < n && avail > 0) {
		struct tide_mbuf *m = NULL, *last = NULL;
		unsigned nd = 0;
		struct memif_desc d;

		do {
			struct tide_mbuf *s;

			if (nd == avail) {
				zc_unlink(m);
				memif_rx_fault(q, "descriptor chain not terminated");
				goto out;
			}
			memif_desc_fetch(&ring->desc[(next + nd) & q->r.mask], &d);
			/* Region and offset are ours (the slot's mbuf); only the length is read. */
			if (tide_unlikely(d.length > q->dataroom)) {
				zc_unlink(m);
				memif_rx_fault(q, "descriptor length exceeds buffer size");
				goto out;
			}
			s = rxr_take(r, next + nd);
			tide_mbuf_reset(s);
			s->data_len = (uint16_t)d.length;
			if (m == NULL) {
				m = s;
			} else {
				last->next = s;
				m->nb_segs++;
			}
			m->pkt_len += d.length;
			last = s;
			nd++;
		} while (d.flags & MEMIF_DESC_FLAG_NEXT);
		next += nd;
		avail = (uint16_t)(avail - nd);
		if (tide_unlikely(m->pkt_len == 0 || nd > q->r.lim.max_chain)) {
			/* Empty, or longer than max_chain: dropped and counted, the link stays. */
			tide_mbuf_free(m);
			dropped++;
			continue;
		}
		m->port = q->port_id;
		bytes += m->pkt_len;
		pkts[i++] = m;
	}
out:
	r->next = next;
	q->cons = (uint16_t)next;
	if (tide_unlikely(dropped))
		tide_stat_add(&pub->stats.errors, dropped);
	tide_stat_burst(&pub->stats, i, bytes);
	memif_leave(&q->busy);
	return i;
}

tide_rx_burst_fn memif_zc_rx_fn(void)
{
	return zc_rx;
}

/* Region of @p (1..nzpool), or 0 when it is not exposed. */
TIDE_ALWAYS_INLINE uint16_t zc_region(const struct memif_txq *q, const struct tide_pool *p)
{
	for (unsigned k = 0; k < q->nzpool; k++)
		if (q->zpool[k] == p)
			return (uint16_t)(k + 1);
	return 0;
}

/*
 * A packet that cannot be handed to the peer as it is, for one of two reasons: a segment
 * from a pool the peer cannot see, or a chain some other holder shares (a segment with
 * refcnt above 1: flooding, mirroring). Each segment of a sent chain becomes its own
 * descriptor and its own engine slot, released on its own, so the chain is cut apart; a
 * chain still in someone else's hands must not be. Such a packet is copied into fresh
 * mbufs of a region pool (a chain of as many as its length needs) and our reference to the
 * original is dropped, which leaves the other holders' chain as it was.
 */
TIDE_ALWAYS_INLINE bool zc_needs_copy(const struct memif_txq *q, const struct tide_mbuf *m)
{
	if (tide_likely(m->next == NULL))
		return zc_region(q, m->pool) == 0; /* one slot: nothing to cut */
	for (const struct tide_mbuf *s = m; s != NULL; s = s->next)
		if (zc_region(q, s->pool) == 0 || tide_mbuf_refcnt_read(s) != 1)
			return true;
	return false;
}

/* Segments of the copy of a @len-byte packet (0 when no region pool can take it). */
static unsigned zc_copy_segs(const struct memif_txq *q, uint32_t len)
{
	unsigned room = q->nzpool ? tide_pktpool_data_room(q->zpool[0]) : 0;

	return room ? (unsigned)((len + room - 1) / room) : 0;
}

/* The copy, or NULL when the pool has too few free mbufs (@m is then untouched). */
static struct tide_mbuf *zc_copy(struct memif_txq *q, struct tide_mbuf *m)
{
	struct tide_pool *zp = q->zpool[0];
	uint32_t room = tide_pktpool_data_room(zp), len = m->pkt_len, off = 0;
	struct tide_mbuf *head = NULL, *last = NULL;

	while (off < len) {
		uint32_t k = len - off < room ? len - off : room;
		struct tide_mbuf *c = tide_mbuf_alloc(zp);

		if (c == NULL) {
			tide_mbuf_free(head);
			return NULL;
		}
		tide_mbuf_read(m, off, k, tide_mbuf_mtod(c, void *));
		c->data_len = (uint16_t)k;
		if (head == NULL) {
			head = c;
		} else {
			last->next = c;
			head->nb_segs++;
		}
		head->pkt_len += k;
		last = c;
		off += k;
	}
	tide_mbuf_free(m);
	return head;
}

static uint16_t zc_tx(struct tide_txq *pub, struct tide_mbuf **pkts, uint16_t n)
{
	struct memif_txq *q = (struct memif_txq *)pub;
	uint32_t live = memif_enter(&q->busy, &q->live, q->fence);
	struct txc *t = &q->txc;
	struct memif_ring *ring;
	unsigned room, rr, used = 0;
	uint64_t bytes = 0, dropped = 0;
	struct txc_burst b;
	bool refreshed = false;
	uint16_t i;

	if (tide_unlikely(live != q->seen) && !memif_txq_resync(q, live)) {
		memif_leave(&q->busy);
		return 0;
	}
	ring = q->r.ring;
	room = txc_make_room(t, n, memif_tx_advance_client);
	rr = (uint16_t)(q->r.size - (uint16_t)(q->head - q->peer));
	if (rr < room)
		room = rr;
	txc_burst_begin(t, &b);
	for (i = 0; i < n; i++) {
		struct tide_mbuf *m = pkts[i], *s;
		uint32_t len = m->pkt_len;
		uint16_t reg;
		bool copy;
		unsigned need;

		if (tide_unlikely(len == 0 || m->nb_segs > q->r.lim.max_chain)) {
			/* Empty (a peer refuses it) or longer than max_chain: never sendable. */
			tide_mbuf_free(m);
			dropped++;
			continue;
		}
		copy = zc_needs_copy(q, m);
		need = m->nb_segs;
		if (tide_unlikely(copy)) {
			need = zc_copy_segs(q, len);
			if (need == 0 || need > q->r.lim.max_chain) {
				/* No region pool, or a copy longer than max_chain: not sendable. */
				tide_mbuf_free(m);
				dropped++;
				continue;
			}
		}
		if (tide_unlikely(need > room - used)) {
			if (refreshed)
				break;
			refreshed = true;
			room = memif_tx_room_more(q, false);
			if (room == 0 || need > room - used)
				break;
		}
		if (tide_unlikely(copy)) {
			struct tide_mbuf *c = zc_copy(q, m);

			if (c == NULL) {
				/* No free mbuf for the copy: dropped and counted. */
				tide_mbuf_free(m);
				dropped++;
				continue;
			}
			m = c;
		}
		/* Each segment is its own descriptor and its own engine slot. */
		for (s = m; s != NULL;) {
			struct tide_mbuf *nx = s->next;
			uint16_t slot = (uint16_t)(q->head + used) & q->r.mask;
			struct memif_desc *d = &ring->desc[slot];

			reg = zc_region(q, s->pool);
			d->region = reg;
			d->offset = (uint32_t)(s->iova + s->data_off);
			d->length = s->data_len;
			d->flags = nx != NULL ? MEMIF_DESC_FLAG_NEXT : 0;
			if (nx != NULL) {
				/* Ours alone (zc_needs_copy()): cut into slots. */
				s->next = NULL;
				s->nb_segs = 1;
			}
			txc_burst_fill(&b, t->tail + used, s);
			used++;
			s = nx;
		}
		bytes += len;
	}
	txc_burst_end(t, &b);
	if (used) {
		q->head = (uint16_t)(q->head + used);
		/* [C2S-head] release: descriptors are written, the data was written earlier. */
		memif_publish(&ring->head, q->head);
		txc_commit(t, used);
		memif_kick(&q->r);
	}
	if (dropped) {
		txc_count_released(t, (unsigned)dropped);
		tide_stat_add(&pub->stats.errors, dropped);
	}
	tide_stat_burst(&pub->stats, i - dropped, bytes);
	memif_leave(&q->busy);
	return i;
}

tide_tx_burst_fn memif_zc_tx_fn(void)
{
	return zc_tx;
}
