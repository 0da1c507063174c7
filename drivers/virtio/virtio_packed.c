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
#include "virtio_burst.h"

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
	return virtio_kick(vq);
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

		d->addr = (uint64_t)(uintptr_t)tide_mbuf__buf_of(sw[s]) + off;
		d->len = len;
		d->id = slot_desc[s];
		/* [avail] release */
		__atomic_store_n(&d->flags, flags, __ATOMIC_RELEASE);
	}
}

TIDE_ALWAYS_INLINE void pk_rx_doorbell(void *ctx, uint32_t refill)
{
	virtio_rx_doorbell(ctx, refill, pk_kick);
}

void virtio_packed_rx_post(struct virtio_rxq *q, uint32_t first, unsigned n, bool doorbell)
{
	pk_rx_post(q, first, n);
	if (doorbell)
		pk_rx_doorbell(q, first + n);
}

/* The packed ring's Rx cursor: the ring, whose flags say at each position whether the
 * device used it. */
struct packed_rxc {
	const struct vring_packed_desc *ring;
	uint32_t mask, num;
};

/* Each element's flags say whether it is used: the burst may look at every posted one. */
TIDE_ALWAYS_INLINE int pk_rx_begin(struct virtio_rxq *q, void *c, uint32_t posted, uint32_t *lim,
				   const char **why)
{
	struct packed_rxc *x = c;

	(void)why;
	x->ring = pk_ring(&q->vq);
	x->mask = q->vq.mask;
	x->num = q->vq.num;
	*lim = posted;
	return 0;
}

/* The element at @pos: its flags first ([used] acquire), then id and length, once. */
TIDE_ALWAYS_INLINE int pk_rx_elem(void *c, uint32_t pos, uint32_t *id, uint32_t *len,
				  const char **why)
{
	const struct packed_rxc *x = c;
	const struct vring_packed_desc *e = &x->ring[pos & x->mask];
	/* [used] acquire */
	enum pk_state st = pk_state(__atomic_load_n(&e->flags, __ATOMIC_ACQUIRE), pos, x->num);

	if (st == PK_AVAIL)
		return 0;
	if (tide_unlikely(st == PK_BAD)) {
		*why = "used flags with the wrong wrap counter";
		return -1;
	}
	*id = __atomic_load_n(&e->id, __ATOMIC_RELAXED);
	*len = __atomic_load_n(&e->len, __ATOMIC_RELAXED);
	return 1;
}

static const struct virtio_rx_layout packed_rx = {
	.begin = pk_rx_begin,
	.elem = pk_rx_elem,
	.post = pk_rx_post,
	.doorbell = pk_rx_doorbell,
	.by_index = false,
};

/* virtio_rxq_resync() out of line, off the burst's path. */
static bool pk_rxq_resync(struct virtio_rxq *q, uint32_t live)
{
	return virtio_rxq_resync(q, live, &packed_rx);
}

/* The Rx burst (virtio_rx_burst() with the packed layout); @ol as in the split ring's. */
TIDE_ALWAYS_INLINE uint16_t pk_rx_burst(struct virtio_rxq *q, struct tide_mbuf **pkts, uint16_t n,
					uint32_t live, const bool ol)
{
	struct packed_rxc c;

	if (!virtio_live_seen(live, q->seen) && !pk_rxq_resync(q, live)) {
		quiesce_leave(&q->busy);
		return 0;
	}
	return virtio_rx_burst(q, pkts, n, &c, &packed_rx, ol);
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
		if (tide_unlikely(virtio_tx_mark(q, t, id, inflight, &why) < 0))
			goto fault;
		pos++;
	}
	q->last_used = pos;
	if (!in_order)
		c = virtio_tx_sweep(q, t, inflight); /* per id: the run of marked slots */
	virtio_tx_claim(q, t, c);
	txc_advance_count(t, c);
	return c;
fault:
	virtio_fault(&q->fault, &q->pub.stats.errors, why);
	return 0;
}

unsigned virtio_packed_tx_advance(struct txc *t)
{
	return pk_tx_advance(t);
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
	int rc = virtio_tx_ind_hdr(q, m, ol, &hdr);

	if (rc <= 0)
		return rc;
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

/* The packed ring's Tx cursor: the ring, whose flags carry each pass's wrap counter. */
struct packed_txc {
	struct vring_packed_desc *ring;
	uint32_t num;
};

/* One buffer at free-running ring position @pos: header and frame together at @hdr. */
TIDE_ALWAYS_INLINE void pk_tx_place(void *c, uint32_t mask, uint32_t pos, const uint8_t *hdr,
				    uint32_t len)
{
	const struct packed_txc *x = c;
	struct vring_packed_desc *d = &x->ring[pos & mask];

	d->addr = (uint64_t)(uintptr_t)hdr;
	d->len = len;
	d->id = (uint16_t)(pos & mask);
	/* [avail] release */
	__atomic_store_n(&d->flags, vring_packed_avail_flags(pk_wrap(pos, x->num)),
			 __ATOMIC_RELEASE);
}

/* Out of line: off the burst's loop. */
static int pk_tx_cut(struct virtio_txq *q, void *c, struct tide_mbuf *m, struct txc_burst *b,
		     uint32_t at, unsigned room, uint64_t *bytes, uint64_t *dropped)
{
	return virtio_tx_cut_place(q, c, m, b, at, room, bytes, dropped, pk_tx_place);
}

static const struct virtio_tx_layout packed_tx = {
	.advance = pk_tx_advance,
	.place = pk_tx_place,
	.indirect = pk_tx_indirect,
	.bounce = pk_tx_bounce,
	.cut = pk_tx_cut,
	.kick = pk_kick,
};

/* The Tx burst (virtio_tx_burst() with the packed layout); @ol as in the split ring's. */
TIDE_ALWAYS_INLINE uint16_t pk_tx_burst(struct virtio_txq *q, struct tide_mbuf **pkts, uint16_t n,
					uint32_t live, const bool ol)
{
	struct packed_txc c;

	if (!virtio_live_seen(live, q->seen) && !virtio_txq_resync(q, live)) {
		quiesce_leave(&q->busy);
		return 0;
	}
	c.ring = pk_ring(&q->vq);
	c.num = q->vq.num;
	return virtio_tx_burst(q, pkts, n, &c, &packed_tx, ol);
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
