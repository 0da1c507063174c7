/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * virtio frontend: the Rx and Tx burst bodies, one for both virtqueue layouts (split:
 * virtio_rxtx.c, packed: virtio_packed.c). A layout provides what differs, as a static
 * const table of always-inline hooks (struct virtio_rx_layout, virtio_tx_layout) and a
 * cursor of its own: how the used elements are found and read (Rx), how a descriptor is
 * written and made available, and how the device is kicked. Each layout file instantiates
 * the bodies once with offloads and once without, so every hook call is a direct, inlined
 * call and every choice a constant the compiler folds.
 *
 * The bodies start where a burst has entered the queue (quiesce_enter()) and found it
 * live for this connection (the layout's resync done); they leave it themselves.
 * Every value the device wrote is checked here or in the hooks, as the layout files'
 * headers describe; a violation faults the queue (virtio_fault()). Internal, inline.
 */
#ifndef TIDE_VIRTIO_BURST_H
#define TIDE_VIRTIO_BURST_H

#include "inline.h"
#include "virtio_dp.h"

/* ---- Rx ---- */

/*
 * The refill's doorbell (rxr_refill()): the ring published up to @refill, the device
 * kicked by the layout's @kick if it asked (counted).
 */
TIDE_ALWAYS_INLINE void virtio_rx_doorbell(struct virtio_rxq *q, uint32_t refill,
					   uint64_t (*kick)(struct virtio_vq *vq, uint32_t old,
							    uint32_t now))
{
	uint16_t old = q->avail_idx;

	q->avail_idx = (uint16_t)refill;
	if (tide_unlikely(kick(&q->vq, old, (uint16_t)refill)))
		tide_stat_add(&q->kicks, 1);
}

/*
 * An Rx layout. @c is the layout's cursor, set up by the entry point.
 *   begin: before the loop, how many used elements the burst may take at the most (*@lim,
 *          at most @posted); -1 with *@why set when the device broke a rule.
 *   elem:  the used element at free-running position @pos: 1 with its *@id and *@len
 *          (each read once), 0 when it is not used yet, -1 with *@why set when it is
 *          neither.
 *   post, doorbell: the refill's (rxr_refill()).
 *   by_index: begin's *@lim counts exactly the elements used (split: the used index); a
 *          mergeable packet whose buffers are not all counted waits for the next burst
 *          before any of it is taken. Otherwise elem finds the end (packed: the flags).
 */
struct virtio_rx_layout {
	int (*begin)(struct virtio_rxq *q, void *c, uint32_t posted, uint32_t *lim,
		     const char **why);
	int (*elem)(void *c, uint32_t pos, uint32_t *id, uint32_t *len, const char **why);
	void (*post)(void *ctx, uint32_t first, unsigned n);
	void (*doorbell)(void *ctx, uint32_t refill);
	bool by_index;
};

/*
 * A new connection (or none): the old one's posted buffers will never be used, they go
 * home; the ring (zeroed by the control thread) starts at position 0 with a full refill
 * (@L's post and doorbell). Then `seen` tells the control thread that the receive buffers
 * are posted (release: pairs with its acquire load in virtio_dev_init(), which waits for
 * it before the Tx queues go live). Returns whether the queue runs.
 */
TIDE_ALWAYS_INLINE bool virtio_rxq_resync(struct virtio_rxq *q, uint32_t live,
					  const struct virtio_rx_layout *L)
{
	/* (Recycled buffers may wait in the slots of a queue that holds no connection.) */
	if (q->seen != VIRTIO_SEEN_NONE || q->rxr.refill != q->rxr.next)
		virtio_rxq_flush(q);
	if (live == 0 || __atomic_load_n(&q->fault.why, __ATOMIC_RELAXED) != NULL)
		return false;
	rxr_refill(&q->rxr, L->post, L->doorbell, q);
	__atomic_store_n(&q->seen, live & ~VIRTIO_LIVE_PACKED, __ATOMIC_RELEASE);
	return true;
}

/* The fault reason of a used id that virtio_rx_take() refused. */
TIDE_ALWAYS_INLINE const char *virtio_rx_why_id(const struct virtio_rx_view *v, uint32_t id)
{
	return id >= v->num ? "used id beyond the queue size" : "used id of a buffer not posted";
}

/*
 * The header's num_buffers of a mergeable packet whose first buffer is @m (header at
 * @hdr_off): with offloads (@ol) from the copy @h (virtio_hdr_rx_copy()), else from its
 * one read of the buffer.
 */
TIDE_ALWAYS_INLINE uint16_t virtio_rx_nbuf(const struct tide_mbuf *m, uint32_t hdr_off,
					   const struct virtio_net_hdr_mrg *h, const bool ol)
{
	const uint16_t *nb =
	    (const uint16_t *)(const void *)((const uint8_t *)tide_mbuf__buf_of(m) + hdr_off +
					     offsetof(struct virtio_net_hdr_mrg, num_buffers));

	return ol ? h->num_buffers : __atomic_load_n(nb, __ATOMIC_RELAXED);
}

/*
 * The Rx burst body. @ol (a constant in each instance): the queue enabled offloads, so
 * each packet's header is copied once and applied (virtio_hdr.h), and a refused one drops
 * the packet. Used elements are taken from position rxr.next on; each is checked (id
 * naming a posted buffer, length within it and, for the first of a packet, at least the
 * header; num_buffers between 1 and what is posted).
 */
TIDE_ALWAYS_INLINE uint16_t virtio_rx_burst(struct virtio_rxq *q, struct tide_mbuf **pkts,
					    uint16_t n, void *c, const struct virtio_rx_layout *L,
					    const bool ol)
{
	struct virtio_vq *vq = &q->vq;
	struct rxr *r = &q->rxr;
	uint32_t next, posted, lim, used = 0, hdr_off, buf_len;
	struct tide_mbuf__rx_regs tmpl;
	uint64_t bytes = 0, dropped = 0;
	const char *why = NULL;
	struct virtio_rx_view v;
	uint16_t i = 0;
	bool mrg;

	if (tide_unlikely(__atomic_load_n(&q->fault.why, __ATOMIC_RELAXED) != NULL))
		goto out;
	next = r->next;
	posted = r->refill - next;
	if (tide_unlikely(L->begin(q, c, posted, &lim, &why) < 0))
		goto fault;
	v.sw = r->sw;
	v.slot_desc = q->slot_desc;
	v.desc_slot = q->desc_slot;
	v.avail_check = &q->avail_check;
	v.mask = vq->mask;
	v.num = vq->num;
	buf_len = q->buf_len;
	mrg = vq->mrg;
	hdr_off = (uint32_t)q->headroom - VIRTIO_HDR_LEN;
	tmpl = tide_mbuf__rx_tmpl_load(&q->tmpl);
	while (i < n && used < lim) {
		uint32_t pos = next + used, id, len;
		struct virtio_net_hdr_mrg h;
		struct tide_mbuf *m, *last;
		uint16_t nbuf = 1;
		int rc = L->elem(c, pos, &id, &len, &why);

		if (rc == 0)
			break;
		if (tide_unlikely(rc < 0))
			goto fault;
		m = virtio_rx_take(&v, id, pos, posted - used);
		if (tide_unlikely(m == NULL)) {
			why = virtio_rx_why_id(&v, id);
			goto fault;
		}
		if (tide_unlikely(len < VIRTIO_HDR_LEN || len > buf_len)) {
			why = "used length outside the posted buffer";
			goto fault;
		}
		if (ol)
			virtio_hdr_rx_copy(&h, (const uint8_t *)tide_mbuf__buf_of(m) + hdr_off);
		/* A buffer the device did not fill is the packet's last (virtio 1.1, 5.1.6.4.1:
		 * the device uses every buffer but the last up to its full length), so
		 * num_buffers is 1 and the header is not read: its line stays in the device's
		 * cache (with a headroom of whole lines, the default, the frame starts in the
		 * next). A device that says otherwise gets that buffer taken as one packet. With
		 * offloads the header is copied anyway. */
		if (mrg && (ol || len == buf_len)) {
			nbuf = virtio_rx_nbuf(m, hdr_off, &h, ol);
			if (tide_unlikely(nbuf == 0 || nbuf > posted - used)) {
				why = "num_buffers of 0 or beyond the posted buffers";
				goto fault;
			}
			if (L->by_index && tide_unlikely(nbuf > lim - used))
				break; /* the rest of the packet is not used yet */
		}
		tide_mbuf__rx_tmpl_write(m, tmpl);
		m->data_len = (uint16_t)(len - VIRTIO_HDR_LEN);
		m->pkt_len = len - VIRTIO_HDR_LEN;
		last = m;
		for (uint16_t j = 1; tide_unlikely(j < nbuf); j++) {
			struct tide_mbuf *s;

			rc = L->elem(c, pos + j, &id, &len, &why);
			if (rc != 1) {
				virtio_rx_unlink(m);
				if (rc == 0)
					goto wait; /* the rest of the packet is not used yet */
				goto fault;
			}
			s = virtio_rx_take(&v, id, pos + j, posted - used - j);
			if (tide_unlikely(s == NULL || len > buf_len)) {
				virtio_rx_unlink(m);
				why = s == NULL ? virtio_rx_why_id(&v, id)
						: "used length outside the posted buffer";
				goto fault;
			}
			tide_mbuf__rx_tmpl_write(s, tmpl);
			s->data_off = (uint16_t)hdr_off; /* no header: data from the start */
			s->data_len = (uint16_t)len;
			last->next = s;
			last = s;
			m->nb_segs++;
			m->pkt_len += len;
		}
		used += nbuf;
		if (tide_unlikely(m->pkt_len == 0)) {
			/* Header only: counted, the buffers go back (the slots are refilled). */
			tide_mbuf_free(m);
			dropped++;
			continue;
		}
		if (ol && tide_unlikely(!virtio_hdr_rx(&q->ol, &h, m))) {
			tide_mbuf_free(m); /* counted by reason, and as an error */
			dropped++;
			continue;
		}
		bytes += m->pkt_len;
		pkts[i++] = m;
	}
wait:
	r->next = next + used;
	q->last_used = (uint16_t)r->next;
	if (rxr_empty_slots(r) >= r->batch)
		rxr_refill(r, L->post, L->doorbell, q);
	if (tide_unlikely(dropped))
		tide_stat_add(&q->pub.stats.errors, dropped);
	tide_stat_burst(&q->pub.stats, i, bytes);
	quiesce_leave(&q->busy);
	return i;
fault:
	/* Packets completed before the violation are the application's; the rest stays in
	 * the ring until the connection is dropped. */
	r->next = next + used;
	q->last_used = (uint16_t)r->next;
	virtio_fault(&q->fault, &q->pub.stats.errors, why);
	tide_stat_burst(&q->pub.stats, i, bytes);
out:
	quiesce_leave(&q->busy);
	return i;
}

/* ---- Tx ---- */

/* A new connection (or none): the old one's buffers in flight go home. Returns whether
 * the queue runs. */
static inline bool virtio_txq_resync(struct virtio_txq *q, uint32_t live)
{
	if (q->seen != VIRTIO_SEEN_NONE)
		virtio_txq_flush(q);
	if (live == 0 || __atomic_load_n(&q->fault.why, __ATOMIC_RELAXED) != NULL)
		return false;
	__atomic_store_n(&q->seen, live & ~VIRTIO_LIVE_PACKED, __ATOMIC_RELAXED);
	return true;
}

/*
 * A Tx layout. @c is the layout's cursor, set up by the entry point.
 *   advance:  the completion step (txc_make_room()'s): every used element checked.
 *   place:    one buffer, header and frame together at @hdr (@len bytes), made available
 *             at free-running position @pos (descriptor id = slot = @pos & @mask).
 *   indirect: a chain in place through the slot's indirect table at @pos, its header
 *             written (virtio_tx_hdr()): 1 when it did, 0 when the chain cannot go in
 *             place (virtio_tx_ind_ok()), -1 when its header was refused (nothing made
 *             available, @m untouched).
 *   bounce:   virtio_tx_bounce(), in line or not as the layout's loop prefers.
 *   cut:      virtio_tx_cut() placed from @at: virtio_tx_cut_place() with @place.
 *   kick:     after positions [@old, @now) were made available, kick the device if it
 *             asked; whether it did.
 */
struct virtio_tx_layout {
	unsigned (*advance)(struct txc *t);
	void (*place)(void *c, uint32_t mask, uint32_t pos, const uint8_t *hdr, uint32_t len);
	int (*indirect)(struct virtio_txq *q, struct tide_mbuf *m, uint32_t pos, bool ol);
	struct tide_mbuf *(*bounce)(struct virtio_txq *q, struct tide_mbuf *m);
	int (*cut)(struct virtio_txq *q, void *c, struct tide_mbuf *m, struct txc_burst *b,
		   uint32_t at, unsigned room, uint64_t *bytes, uint64_t *dropped);
	uint64_t (*kick)(struct virtio_vq *vq, uint32_t old, uint32_t now);
};

/*
 * virtio_tx_cut() in a layout's burst: the pieces placed from ring position @at with
 * @place, one buffer each with a zero header. Returns their number, 0 when @m was dropped
 * (counted in @dropped), or -1 when there is no room (@m and the rest of the burst stay
 * the caller's).
 */
TIDE_ALWAYS_INLINE int virtio_tx_cut_place(struct virtio_txq *q, void *c, struct tide_mbuf *m,
					   struct txc_burst *b, uint32_t at, unsigned room,
					   uint64_t *bytes, uint64_t *dropped,
					   void (*place)(void *c, uint32_t mask, uint32_t pos,
							 const uint8_t *hdr, uint32_t len))
{
	struct tide_mbuf *out[VIRTIO_CUT_MAX];
	int k = virtio_tx_cut(q, m, room, out, dropped);

	for (int j = 0; j < k; j++) {
		struct tide_mbuf *s = out[j];

		place(c, b->mask, at + (uint32_t)j, tide_mbuf_mtod(s, uint8_t *) - VIRTIO_HDR_LEN,
		      (uint32_t)s->data_len + VIRTIO_HDR_LEN);
		*bytes += s->data_len;
		txc_burst_fill(b, at + (uint32_t)j, s);
	}
	return k;
}

/*
 * The Tx burst body. @ol (a constant in each instance): the queue enabled offloads, so
 * each packet's requests become its header, or are done in software where the device
 * lacks them (virtio_hdr.h; a TSO packet cut, its pieces one buffer each), and a bad
 * request drops the packet. Descriptor id = engine slot = ring position.
 */
TIDE_ALWAYS_INLINE uint16_t virtio_tx_burst(struct virtio_txq *q, struct tide_mbuf **pkts,
					    uint16_t n, void *c, const struct virtio_tx_layout *L,
					    const bool ol)
{
	struct txc *t = &q->txc;
	const struct tide_pool *pool0;
	uint64_t bytes = 0, dropped = 0;
	struct txc_burst b;
	uint32_t tail, sent = 0;
	unsigned room;
	uint16_t i;

	if (tide_unlikely(__atomic_load_n(&q->fault.why, __ATOMIC_RELAXED) != NULL)) {
		quiesce_leave(&q->busy);
		return 0;
	}
	room = txc_make_room(t, n, L->advance);
	if (n > room)
		n = (uint16_t)room;
	/* In locals: the stores into mbufs and descriptors could alias q. */
	pool0 = q->pools[0];
	tail = t->tail;
	txc_burst_begin(t, &b);
	for (i = 0; i < n && (!ol || sent < room); i++) {
		struct tide_mbuf *m = pkts[i];
		uint8_t *hdr;

		if (ol && tide_unlikely(virtio_hdr_tx_cut(&q->ol, m))) {
			int k = L->cut(q, c, m, &b, tail + sent, room - sent, &bytes, &dropped);

			if (k < 0)
				break; /* no room: this packet and the rest stay the caller's */
			sent += (uint32_t)k;
			continue;
		}
		if (tide_unlikely(!virtio_tx_direct(q, pool0, m))) {
			int rc = m->nb_segs > 1 ? L->indirect(q, m, tail + sent, ol) : 0;
			struct tide_mbuf *cp;

			if (rc < 0) {
				tide_mbuf_free(m); /* counted as refused, and as an error */
				dropped++;
				continue;
			}
			if (rc > 0) {
				bytes += m->pkt_len;
				txc_burst_fill(&b, tail + sent, m);
				sent++;
				continue;
			}
			cp = L->bounce(q, m);
			if (ol && cp == NULL && (m->ol_flags & TIDE_MBUF_F_TX_TCP_SEG)) {
				/* It cannot be placed whole: cut here instead. */
				int k =
				    L->cut(q, c, m, &b, tail + sent, room - sent, &bytes, &dropped);

				if (k < 0)
					break;
				sent += (uint32_t)k;
				continue;
			}
			if (cp == NULL) {
				tide_mbuf_free(m); /* taken, counted as an error */
				dropped++;
				continue;
			}
			m = cp;
		}
		hdr = tide_mbuf_mtod(m, uint8_t *) - VIRTIO_HDR_LEN;
		if (tide_unlikely(virtio_tx_hdr(q, m, hdr, ol) < 0)) {
			tide_mbuf_free(m); /* counted as refused, and as an error */
			dropped++;
			continue;
		}
		L->place(c, b.mask, tail + sent, hdr, (uint32_t)m->data_len + VIRTIO_HDR_LEN);
		bytes += m->data_len;
		txc_burst_fill(&b, tail + sent, m);
		sent++;
	}
	txc_burst_end(t, &b);
	if (sent) {
		if (tide_unlikely(L->kick(&q->vq, tail, tail + sent)))
			tide_stat_add(&q->kicks, 1);
		txc_commit(t, sent);
	}
	if (tide_unlikely(dropped))
		tide_stat_add(&q->pub.stats.errors, dropped);
	tide_stat_burst(&q->pub.stats, sent, bytes);
	quiesce_leave(&q->busy);
	return i;
}

#endif
