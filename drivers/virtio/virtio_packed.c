/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * virtio frontend data path: packed virtqueues (virtio 1.1+ section 2.8), zero copy both
 * ways, run when VIRTIO_F_RING_PACKED was negotiated (the queue's live value carries
 * VIRTIO_LIVE_PACKED; the split bursts of virtio_rxtx.c jump here, each instance to its
 * own: with offloads or without, as virtio_rx_fn() / virtio_tx_fn() chose).
 *
 * One ring of descriptors goes both ways. We make a buffer available by writing its
 * descriptor (address, length, buffer id) and then, with release, its flags: AVAIL = our
 * wrap counter, USED = the inverse. The device hands a buffer back by writing a used
 * element (buffer id, length, AVAIL = USED = its wrap counter) at its next used position,
 * in ring order. Every buffer is one descriptor, so each used element takes one position.
 * Queue sizes are powers of two: the wrap counter of a free-running index i is
 * !(i & num) (both start at 1 and flip each pass; 2^16 and 2^32 are whole passes).
 *
 *   Rx (vring 2i, device-writable): as in the split ring, one descriptor per mbuf, header
 *       then data room; the refill (rxr.h) writes a batch and the flags of each, and the
 *       descriptor id is the slot's (slot_desc[], a device may use buffers in any order).
 *       The used position is rxr.next. With MRG_RXBUF num_buffers in the first header
 *       says how many used elements make the packet; a packet whose later elements are not
 *       written yet waits for the next burst.
 *   Tx (vring 2i+1, device-readable): descriptor id = engine slot = ring position; a
 *       chain goes through the slot's indirect table (packed descriptors). Completion:
 *       with VIRTIO_F_IN_ORDER one used element may stand for a run of buffers: its id
 *       names the run's last, the next used position follows it (count mode, O(1) per
 *       element); otherwise each used element marks its id's slot and the engine advances
 *       over the marked run. The used position is last_used (16 bits are enough).
 *
 * [avail] our release store of a descriptor's flags -> the device's acquire load of them
 *         (the descriptor, and for Tx the header and packet, were written before).
 * [used]  our acquire load of a used element's flags <- the device's release store of
 *         them (the element and, for Rx, the frame were written before).
 * Event suppression: after making buffers available, a full fence, then the device event
 * area: DISABLE no kick, DESC (with the event index) a kick when the positions made
 * available passed its offset and wrap, anything else a kick. The device's half is its
 * fence between writing that area and re-reading our flags. A polling backend says
 * DISABLE: no syscall on the data path. The driver event area (ours) says DISABLE unless
 * an Rx interrupt is enabled.
 *
 * Everything the device writes is hostile. At a position in flight the flags are either
 * our available form (not used yet) or the used form of that pass; any other value (the
 * wrong wrap counter) faults. A used element is read once (flags, then id and length) and
 * checked: the id below the queue size and naming a buffer in flight, not used twice; an
 * in-order run no longer than what is in flight; an Rx length within the posted buffer and
 * at least the header; num_buffers between 1 and what is posted. A violation faults the
 * queue as in the split ring (virtio.h).
 */
#include <string.h>

#include "inline.h"
#include "virtio_dp.h"

#define PK_AU VRING_PACKED_DESC_F_AVAIL_USED

TIDE_ALWAYS_INLINE struct vring_packed_desc *pk_ring(const struct virtio_vq *vq)
{
	return (struct vring_packed_desc *)(void *)vq->desc;
}

/* The wrap counter of the pass of free-running index @i in a ring of @num (a power of two). */
TIDE_ALWAYS_INLINE bool pk_wrap(uint32_t i, uint32_t num)
{
	return !(i & num);
}

/* What the flags of the element at free-running position @pos say. */
enum pk_state { PK_AVAIL, PK_USED, PK_BAD };

TIDE_ALWAYS_INLINE enum pk_state pk_state(uint16_t flags, uint32_t pos, uint32_t num)
{
	uint16_t used = vring_packed_used_flags(pk_wrap(pos, num));

	flags &= PK_AU;
	if (flags == used)
		return PK_USED;
	return flags == (used ^ VRING_PACKED_DESC_F_USED) ? PK_AVAIL : PK_BAD;
}

/* After buffers [@old, @now) were made available: kick the device if it asked (see the top). */
TIDE_ALWAYS_INLINE uint64_t pk_kick(struct virtio_vq *vq, uint32_t old, uint32_t now)
{
	const struct vring_packed_event *ev = (const struct vring_packed_event *)(void *)vq->used;
	uint32_t num = vq->num;
	uint64_t one = 1;
	uint16_t flags;

	if (vq->kickfd < 0)
		return 0;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	flags = virtio_load16(&ev->flags);
	if (flags == VRING_PACKED_EVENT_F_DISABLE)
		return 0;
	if (flags == VRING_PACKED_EVENT_F_DESC && vq->event_idx &&
	    !vring_packed_need_event(virtio_load16(&ev->off_wrap), (uint16_t)(old & vq->mask),
				     pk_wrap(old, num), (uint16_t)(now & vq->mask),
				     pk_wrap(now, num), num))
		return 0;
	if (vq->notify != NULL) {
		*vq->notify = vq->notify_val; /* PCI: after the fence */
		return 1;
	}
	if (write(vq->kickfd, &one, sizeof(one)) < 0) {
		/* a full eventfd counter wakes the device already */
	}
	return 1;
}

/* ---- Rx ---- */

/* Post sw[first .. first + n): a refill batch, which never wraps the ring (batch divides
 * it), so one pass and one flags value. */
TIDE_ALWAYS_INLINE void pk_rx_post(void *ctx, uint32_t first, unsigned n)
{
	struct virtio_rxq *q = ctx;
	struct vring_packed_desc *ring = pk_ring(&q->vq);
	uint16_t *slot_desc = q->slot_desc;
	struct tide_mbuf **sw = q->rxr.sw;
	uint32_t mask = q->rxr.mask, off = (uint32_t)q->headroom - VIRTIO_HDR_LEN,
		 len = q->buf_len;
	uint16_t flags = (uint16_t)(vring_packed_avail_flags(pk_wrap(first, q->vq.num)) |
				    VRING_DESC_F_WRITE);

	for (unsigned k = 0; k < n; k++) {
		uint32_t s = (first + k) & mask;
		struct vring_packed_desc *d = &ring[s];

		d->addr = (uint64_t)(uintptr_t)sw[s]->buf_addr + off;
		d->len = len;
		d->id = slot_desc[s];
		/* [avail] release */
		__atomic_store_n(&d->flags, flags, __ATOMIC_RELEASE);
	}
}

TIDE_ALWAYS_INLINE void pk_rx_doorbell(void *ctx, uint32_t refill)
{
	struct virtio_rxq *q = ctx;
	uint16_t old = q->avail_idx;

	q->avail_idx = (uint16_t)refill;
	if (tide_unlikely(pk_kick(&q->vq, old, (uint16_t)refill)))
		tide_stat_add(&q->kicks, 1);
}

/* As the split ring's resync (virtio_rxtx.c): the old connection's buffers home, a full
 * refill, then seen (release: virtio_dev_init() waits for it). */
static bool pk_rxq_resync(struct virtio_rxq *q, uint32_t live)
{
	if (q->seen != VIRTIO_SEEN_NONE || q->rxr.refill != q->rxr.next)
		virtio_rxq_flush(q);
	if (__atomic_load_n(&q->fs.why, __ATOMIC_RELAXED) != NULL)
		return false;
	rxr_refill(&q->rxr, pk_rx_post, pk_rx_doorbell, q);
	__atomic_store_n(&q->seen, live & ~VIRTIO_LIVE_PACKED, __ATOMIC_RELEASE);
	return true;
}

void virtio_packed_rx_post(struct virtio_rxq *q, uint32_t first, unsigned n, bool doorbell)
{
	pk_rx_post(q, first, n);
	if (doorbell)
		pk_rx_doorbell(q, first + n);
}

/*
 * The header's reads on Rx, of the first buffer of a packet (@m, its header at @hdr_off).
 * With offloads (@ol) the whole header is copied once into @h (virtio_hdr_rx_copy())
 * before anything else reads it; pk_rx_hdr_nbuf() then gives num_buffers of a mergeable
 * packet from the copy, or without offloads from its one read of the buffer.
 */
TIDE_ALWAYS_INLINE const uint8_t *pk_rx_hdr(const struct tide_mbuf *m, uint32_t hdr_off)
{
	return (const uint8_t *)m->buf_addr + hdr_off;
}

TIDE_ALWAYS_INLINE uint16_t pk_rx_hdr_nbuf(const struct tide_mbuf *m, uint32_t hdr_off,
					   const struct virtio_net_hdr_mrg *h, const bool ol)
{
	if (ol)
		return h->num_buffers;
	return __atomic_load_n(&((const struct virtio_net_hdr_mrg *)(const void *)pk_rx_hdr(
					  m, hdr_off))->num_buffers,
			       __ATOMIC_RELAXED);
}

/* The Rx burst; @ol (a constant in each instance) as in the split ring's: each packet's
 * header is copied once and applied (virtio_hdr.h), and a refused one drops the packet. */
TIDE_ALWAYS_INLINE uint16_t pk_rx_burst(struct virtio_rxq *q, struct tide_mbuf **pkts, uint16_t n,
					uint32_t live, const bool ol)
{
	struct virtio_vq *vq = &q->vq;
	struct rxr *r = &q->rxr;
	uint32_t next, posted, used = 0, hdr_off, buf_len, num;
	const struct vring_packed_desc *ring;
	struct tide_mbuf__rx_regs tmpl;
	uint64_t bytes = 0, dropped = 0;
	const char *why = NULL;
	struct virtio_rx_view v;
	uint16_t i = 0;
	bool mrg;

	if (!virtio_live_seen(live, q->seen) && !pk_rxq_resync(q, live))
		goto out;
	if (tide_unlikely(__atomic_load_n(&q->fs.why, __ATOMIC_RELAXED) != NULL))
		goto out;
	next = r->next;
	posted = r->refill - next;
	v.sw = r->sw;
	v.slot_desc = q->slot_desc;
	v.desc_slot = q->desc_slot;
	v.mask = vq->mask;
	v.num = num = vq->num;
	ring = pk_ring(vq);
	buf_len = q->buf_len;
	mrg = vq->mrg;
	hdr_off = (uint32_t)q->headroom - VIRTIO_HDR_LEN;
	tmpl = tide_mbuf__rx_tmpl_load(&q->tmpl);
	while (i < n && used < posted) {
		uint32_t pos = next + used;
		const struct vring_packed_desc *e = &ring[pos & v.mask];
		/* [used] acquire */
		uint16_t flags = __atomic_load_n(&e->flags, __ATOMIC_ACQUIRE);
		enum pk_state st = pk_state(flags, pos, num);
		struct virtio_net_hdr_mrg h;
		struct tide_mbuf *m, *last;
		uint32_t id, len;
		uint16_t nbuf = 1;

		if (st == PK_AVAIL)
			break;
		if (tide_unlikely(st == PK_BAD)) {
			why = "used flags with the wrong wrap counter";
			goto fault;
		}
		id = __atomic_load_n(&e->id, __ATOMIC_RELAXED);
		len = __atomic_load_n(&e->len, __ATOMIC_RELAXED);
		m = virtio_rx_take(&v, id, pos, posted - used);
		if (tide_unlikely(m == NULL)) {
			why = id >= v.num ? "used id beyond the queue size"
					  : "used id of a buffer not posted";
			goto fault;
		}
		if (tide_unlikely(len < VIRTIO_HDR_LEN || len > buf_len)) {
			why = "used length outside the posted buffer";
			goto fault;
		}
		if (ol)
			virtio_hdr_rx_copy(&h, pk_rx_hdr(m, hdr_off));
		if (mrg) {
			nbuf = pk_rx_hdr_nbuf(m, hdr_off, &h, ol);
			if (tide_unlikely(nbuf == 0 || nbuf > posted - used)) {
				why = "num_buffers of 0 or beyond the posted buffers";
				goto fault;
			}
		}
		tide_mbuf__rx_tmpl_write(m, tmpl);
		m->data_len = (uint16_t)(len - VIRTIO_HDR_LEN);
		m->pkt_len = len - VIRTIO_HDR_LEN;
		last = m;
		for (uint16_t j = 1; tide_unlikely(j < nbuf); j++) {
			struct tide_mbuf *s;

			e = &ring[(pos + j) & v.mask];
			flags = __atomic_load_n(&e->flags, __ATOMIC_ACQUIRE);
			st = pk_state(flags, pos + j, num);
			if (st != PK_USED) {
				virtio_rx_unlink(m);
				if (st == PK_AVAIL)
					goto wait; /* the rest of the packet is not used yet */
				why = "used flags with the wrong wrap counter";
				goto fault;
			}
			id = __atomic_load_n(&e->id, __ATOMIC_RELAXED);
			len = __atomic_load_n(&e->len, __ATOMIC_RELAXED);
			s = virtio_rx_take(&v, id, pos + j, posted - used - j);
			if (tide_unlikely(s == NULL || len > buf_len)) {
				virtio_rx_unlink(m);
				why = s == NULL ? (id >= v.num ? "used id beyond the queue size"
							       : "used id of a buffer not posted")
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
		rxr_refill(r, pk_rx_post, pk_rx_doorbell, q);
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
	virtio_fault(&q->fs, &q->pub.stats.errors, why);
	tide_stat_burst(&q->pub.stats, i, bytes);
out:
	quiesce_leave(&q->busy);
	return i;
}

uint16_t virtio_packed_rx(struct virtio_rxq *q, struct tide_mbuf **pkts, uint16_t n,
			  uint32_t live)
{
	return pk_rx_burst(q, pkts, n, live, false);
}

uint16_t virtio_packed_rx_ol(struct virtio_rxq *q, struct tide_mbuf **pkts, uint16_t n,
			     uint32_t live)
{
	return pk_rx_burst(q, pkts, n, live, true);
}

/*
 * Rx interrupts (virtio_rxq_intr_set): the driver event area asks for a call at every used
 * element (ENABLE), or with the event index at our next used position and wrap (DESC);
 * DISABLE asks for none. The caller fences after enabling.
 */
void virtio_packed_rx_intr(struct virtio_rxq *q, bool enable)
{
	struct vring_packed_event *ev = (struct vring_packed_event *)(void *)q->vq.avail;
	uint32_t pos = q->rxr.next;
	uint16_t flags = VRING_PACKED_EVENT_F_DISABLE;

	if (enable && q->vq.event_idx) {
		__atomic_store_n(&ev->off_wrap,
				 (uint16_t)((pos & q->vq.mask) |
					    (pk_wrap(pos, q->vq.num) ? VRING_PACKED_WRAP : 0)),
				 __ATOMIC_RELAXED);
		flags = VRING_PACKED_EVENT_F_DESC;
	} else if (enable) {
		flags = VRING_PACKED_EVENT_F_ENABLE;
	}
	__atomic_store_n(&ev->flags, flags, __ATOMIC_RELAXED);
}

/* ---- Tx ---- */

static bool pk_txq_resync(struct virtio_txq *q, uint32_t live)
{
	if (q->seen != VIRTIO_SEEN_NONE)
		virtio_txq_flush(q);
	if (__atomic_load_n(&q->fs.why, __ATOMIC_RELAXED) != NULL)
		return false;
	__atomic_store_n(&q->seen, live & ~VIRTIO_LIVE_PACKED, __ATOMIC_RELAXED);
	return true;
}

/*
 * How many slots the device completed since the last call, every element checked (see the
 * top). Positions in flight: [last_used, tail). On a violation the queue faults and
 * nothing more completes.
 */
TIDE_ALWAYS_INLINE unsigned pk_tx_advance(struct txc *t)
{
	struct virtio_txq *q = t->drv;
	struct virtio_vq *vq = &q->vq;
	const struct vring_packed_desc *ring = pk_ring(vq);
	uint16_t pos = q->last_used, tail = (uint16_t)t->tail;
	uint32_t num = vq->num, inflight = t->tail - t->done, c = 0;
	bool in_order = vq->in_order;
	const char *why;

	while (pos != tail) {
		const struct vring_packed_desc *e = &ring[pos & vq->mask];
		uint16_t flags = __atomic_load_n(&e->flags, __ATOMIC_ACQUIRE); /* [used] */
		enum pk_state st = pk_state(flags, pos, num);
		uint32_t id, k;

		if (st == PK_AVAIL)
			break;
		if (tide_unlikely(st != PK_USED)) {
			why = "used flags with the wrong wrap counter";
			goto fault;
		}
		id = __atomic_load_n(&e->id, __ATOMIC_RELAXED);
		if (tide_unlikely(id >= num)) {
			why = "used id beyond the queue size";
			goto fault;
		}
		if (in_order) {
			/* One element may stand for a run: the run ends at its id (slot ==
			 * position), the next used position follows it. */
			k = ((id - pos) & vq->mask) + 1u;
			if (tide_unlikely(k > (uint16_t)(tail - pos))) {
				why = "used id of a buffer not in flight";
				goto fault;
			}
			pos = (uint16_t)(pos + k);
			c += k;
			continue;
		}
		if (tide_unlikely(((id - t->done) & t->mask) >= inflight || q->done[id])) {
			why = "used id of a buffer not in flight";
			goto fault;
		}
		q->done[id] = 1;
		pos++;
	}
	q->last_used = pos;
	if (!in_order) {
		/* Per id: the engine advances over the run of marked slots. */
		while (c < inflight && q->done[(t->done + c) & t->mask]) {
			q->done[(t->done + c) & t->mask] = 0;
			c++;
		}
	}
	txc_advance_count(t, c);
	return c;
fault:
	virtio_fault(&q->fs, &q->pub.stats.errors, why);
	return 0;
}

unsigned virtio_packed_tx_advance(struct txc *t)
{
	return pk_tx_advance(t);
}

/*
 * The header's one write on Tx, at @hdr before @m's data: all zero without offloads (@ol
 * false); with them virtio_hdr_tx()'s (the requests, or done in software). Returns 0, or
 * -EINVAL: a request refused (counted; the caller drops @m, whose descriptor it has not
 * made available).
 */
TIDE_ALWAYS_INLINE int pk_tx_hdr(struct virtio_txq *q, struct tide_mbuf *m, uint8_t *hdr,
				 const bool ol)
{
	if (!ol) {
		memset(hdr, 0, VIRTIO_HDR_LEN);
		return 0;
	}
	return virtio_hdr_tx(&q->ol, m, hdr);
}

/* A chain in place at free-running ring position @pos, through its slot's indirect table
 * of packed descriptors (their flags: device-readable; the order is the chain's). Returns
 * 1 when it did, 0 when the chain cannot go in place, -1 when its header was refused (@m
 * untouched, nothing made available). Out of line, its own ring arithmetic: the burst's
 * loop keeps its registers. */
static int pk_tx_indirect(struct virtio_txq *q, struct tide_mbuf *m, uint32_t pos, bool ol)
{
	uint32_t slot = pos & q->vq.mask;
	struct vring_packed_desc *d = &pk_ring(&q->vq)[slot];
	uint16_t flags = vring_packed_avail_flags(pk_wrap(pos, q->vq.num));
	struct vring_packed_desc *t =
		(struct vring_packed_desc *)(void *)&q->ind[(size_t)slot * VIRTIO_TX_SEGS];
	const struct tide_mbuf *s;
	unsigned k = 0;
	uint8_t *hdr;

	if (!virtio_tx_ind_ok(q, m))
		return 0;
	hdr = tide_mbuf_mtod(m, uint8_t *) - VIRTIO_HDR_LEN;
	if (pk_tx_hdr(q, m, hdr, ol) < 0)
		return -1;
	for (s = m; s != NULL; s = s->next, k++) {
		t[k].addr = (uint64_t)(uintptr_t)(k ? tide_mbuf_mtod(s, uint8_t *) : hdr);
		t[k].len = (uint32_t)s->data_len + (k ? 0 : VIRTIO_HDR_LEN);
		t[k].id = 0;
		t[k].flags = 0;
	}
	d->addr = (uint64_t)(uintptr_t)t;
	d->len = k * (uint32_t)sizeof(*t);
	d->id = (uint16_t)slot;
	/* [avail] release */
	__atomic_store_n(&d->flags, (uint16_t)(flags | VRING_DESC_F_INDIRECT), __ATOMIC_RELEASE);
	return 1;
}

/* virtio_tx_bounce() out of line: the packed burst's loop keeps its registers. */
static struct tide_mbuf *pk_tx_bounce(struct virtio_txq *q, struct tide_mbuf *m)
{
	return virtio_tx_bounce(q, m);
}

/* One buffer at free-running ring position @pos: header and frame together at @hdr. */
TIDE_ALWAYS_INLINE void pk_tx_place(struct vring_packed_desc *ring, uint32_t mask, uint32_t num,
				    uint32_t pos, const uint8_t *hdr, uint32_t len)
{
	struct vring_packed_desc *d = &ring[pos & mask];

	d->addr = (uint64_t)(uintptr_t)hdr;
	d->len = len;
	d->id = (uint16_t)(pos & mask);
	/* [avail] release */
	__atomic_store_n(&d->flags, vring_packed_avail_flags(pk_wrap(pos, num)), __ATOMIC_RELEASE);
}

/* virtio_tx_cut() in the packed burst: the pieces placed from ring position @at, one
 * buffer each with a zero header; 0 when @m was dropped (counted in @dropped), or -1 when
 * there is no room (@m and the rest of the burst stay the caller's). */
static int pk_tx_cut_step(struct virtio_txq *q, struct tide_mbuf *m, struct txc_burst *b,
			  uint32_t at, unsigned room, uint64_t *bytes, uint64_t *dropped)
{
	struct tide_mbuf *out[VIRTIO_CUT_MAX];
	int k = virtio_tx_cut(q, m, room, out, dropped);

	for (int j = 0; j < k; j++) {
		struct tide_mbuf *s = out[j];

		pk_tx_place(pk_ring(&q->vq), b->mask, q->vq.num, at + (uint32_t)j,
			    tide_mbuf_mtod(s, uint8_t *) - VIRTIO_HDR_LEN,
			    (uint32_t)s->data_len + VIRTIO_HDR_LEN);
		*bytes += s->data_len;
		txc_burst_fill(b, at + (uint32_t)j, s);
	}
	return k;
}

/* The Tx burst; @ol (a constant in each instance) as in the split ring's: each packet's
 * requests become its header, or are done in software where the device lacks them (a TSO
 * packet cut, its pieces one buffer each), and a bad request drops the packet. */
TIDE_ALWAYS_INLINE uint16_t pk_tx_burst(struct virtio_txq *q, struct tide_mbuf **pkts, uint16_t n,
					uint32_t live, const bool ol)
{
	struct txc *t = &q->txc;
	const struct tide_pool *pool0;
	struct vring_packed_desc *ring;
	uint64_t bytes = 0, dropped = 0;
	struct txc_burst b;
	uint32_t tail, sent = 0, num;
	unsigned room;
	uint16_t i;

	if (!virtio_live_seen(live, q->seen) && !pk_txq_resync(q, live)) {
		quiesce_leave(&q->busy);
		return 0;
	}
	if (tide_unlikely(__atomic_load_n(&q->fs.why, __ATOMIC_RELAXED) != NULL)) {
		quiesce_leave(&q->busy);
		return 0;
	}
	room = txc_make_room(t, n, pk_tx_advance);
	if (n > room)
		n = (uint16_t)room;
	/* In locals: the stores into mbufs and descriptors could alias q. */
	ring = pk_ring(&q->vq);
	num = q->vq.num;
	pool0 = q->pools[0];
	tail = t->tail;
	txc_burst_begin(t, &b);
	for (i = 0; i < n && (!ol || sent < room); i++) {
		struct tide_mbuf *m = pkts[i];
		uint32_t slot = (tail + sent) & b.mask;
		uint16_t flags = vring_packed_avail_flags(pk_wrap(tail + sent, num));
		struct vring_packed_desc *d = &ring[slot];
		uint8_t *hdr;

		if (ol && tide_unlikely(virtio_hdr_tx_cut(&q->ol, m))) {
			int k = pk_tx_cut_step(q, m, &b, tail + sent, room - sent, &bytes,
					       &dropped);

			if (k < 0)
				break; /* no room: this packet and the rest stay the caller's */
			sent += (uint32_t)k;
			continue;
		}
		if (tide_unlikely(!virtio_tx_direct(q, pool0, m))) {
			int r = m->nb_segs > 1 ? pk_tx_indirect(q, m, tail + sent, ol) : 0;

			if (r < 0) {
				tide_mbuf_free(m); /* counted as refused, and as an error */
				dropped++;
				continue;
			}
			if (r > 0) {
				bytes += m->pkt_len;
				txc_burst_fill(&b, tail + sent, m);
				sent++;
				continue;
			}
			struct tide_mbuf *c = pk_tx_bounce(q, m);

			if (ol && c == NULL && (m->ol_flags & TIDE_MBUF_F_TX_TCP_SEG)) {
				/* It cannot be placed whole: cut here instead. */
				int k = pk_tx_cut_step(q, m, &b, tail + sent, room - sent, &bytes,
						       &dropped);

				if (k < 0)
					break;
				sent += (uint32_t)k;
				continue;
			}
			if (c == NULL) {
				tide_mbuf_free(m); /* taken, counted as an error */
				dropped++;
				continue;
			}
			m = c;
		}
		hdr = tide_mbuf_mtod(m, uint8_t *) - VIRTIO_HDR_LEN;
		if (tide_unlikely(pk_tx_hdr(q, m, hdr, ol) < 0)) {
			tide_mbuf_free(m); /* counted as refused, and as an error */
			dropped++;
			continue;
		}
		d->addr = (uint64_t)(uintptr_t)hdr;
		d->len = (uint32_t)m->data_len + VIRTIO_HDR_LEN;
		d->id = (uint16_t)slot;
		/* [avail] release */
		__atomic_store_n(&d->flags, flags, __ATOMIC_RELEASE);
		bytes += m->data_len;
		txc_burst_fill(&b, tail + sent, m);
		sent++;
	}
	txc_burst_end(t, &b);
	if (sent) {
		if (tide_unlikely(pk_kick(&q->vq, tail, tail + sent)))
			tide_stat_add(&q->kicks, 1);
		txc_commit(t, sent);
	}
	if (tide_unlikely(dropped))
		tide_stat_add(&q->pub.stats.errors, dropped);
	tide_stat_burst(&q->pub.stats, sent, bytes);
	quiesce_leave(&q->busy);
	return i;
}

uint16_t virtio_packed_tx(struct virtio_txq *q, struct tide_mbuf **pkts, uint16_t n,
			  uint32_t live)
{
	return pk_tx_burst(q, pkts, n, live, false);
}

uint16_t virtio_packed_tx_ol(struct virtio_txq *q, struct tide_mbuf **pkts, uint16_t n,
			     uint32_t live)
{
	return pk_tx_burst(q, pkts, n, live, true);
}
