/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * virtio frontend data path: split virtqueues, zero copy both ways (packed ones:
 * virtio_packed.c, entered from the bursts here when the queue's live value says so).
 *
 *   Rx (vring 2i, device-writable): the Rx refill (rxr.h) posts one descriptor per mbuf,
 *       starting VIRTIO_HDR_LEN bytes before the mbuf's data (the header lands in the
 *       headroom, the frame where the data starts) and as long as header + data room; the
 *       avail index moves once per refill batch, and the avail entries are written only
 *       while one may be stale (rx_avail_sync()): in steady state each slot keeps its
 *       descriptor. The burst takes used entries {id, len}:
 *       the mbuf of descriptor id, len - header bytes of frame. With VIRTIO_NET_F_MRG_RXBUF
 *       the first header's num_buffers says how many used entries make the packet; the
 *       others continue it from the start of their descriptor (no header), as chained
 *       mbufs.
 *   Tx (vring 2i+1, device-readable): the header is written into the mbuf's headroom and
 *       one descriptor covers header and frame: descriptor id = engine slot = avail
 *       position (the avail ring is the identity, written once per connection). The Tx
 *       engine (txc.h) holds the mbufs until the device uses them: in count mode from
 *       used->idx alone with VIRTIO_F_IN_ORDER, O(1); otherwise each used id marks its
 *       slot and the engine advances over the marked run. A packet the device cannot reach
 *       in place (its pool is not in the memory table, several segments, refcnt above 1,
 *       headroom below the header) is copied into an mbuf of a pool it can reach.
 *
 * Index pairs:
 *   [avail] our release store of avail->idx -> the device's acquire load (descriptors and,
 *           for Tx, the packet bytes and header were written before);
 *   [used]  our acquire load of used->idx <- the device's release store (the used entries
 *           and, for Rx, the frame bytes were written before).
 * Notification: after the avail store a full fence, then the device's wish is read
 * (used->flags NO_NOTIFY, or avail_event with the event index); the device's half is its
 * fence between re-enabling notifications and re-reading avail->idx. A polling backend
 * sets NO_NOTIFY and is never kicked: no syscall on the data path. A kick writes the
 * kick eventfd (vhost-user) or the queue's notify register (virtio-pci: a store, no
 * syscall).
 *
 * Everything the device writes is hostile: used->idx may move at most as far as we posted,
 * each used entry is read once into locals and checked (id below the queue size and naming
 * a buffer in flight, not used twice; Rx length within the posted buffer and at least the
 * header; num_buffers between 1 and what is posted), and the num_buffers field is read
 * once from the header. A violation faults the queue (fault.why): it moves nothing more, the
 * control thread logs the reason and drops the connection, and the buffers come home at
 * the next burst or at stop.
 */
#include <errno.h>
#include <string.h>

#include "inline.h"
#include "copy.h"
#include "virtio_burst.h"

/*
 * Publish the avail index and kick the device if it asked ([avail] release, then the
 * fence of the notification protocol: see the top).
 */
TIDE_ALWAYS_INLINE uint64_t vq_publish(struct virtio_vq *vq, uint32_t old, uint32_t now)
{
	bool kick;

	__atomic_store_n(&vq->avail->idx, (uint16_t)now, __ATOMIC_RELEASE);
	if (vq->kickfd < 0)
		return 0;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (vq->event_idx)
		kick = vring_need_event(virtio_load16((const uint16_t *)&vq->used->ring[vq->num]),
					(uint16_t)now, (uint16_t)old);
	else
		kick = !(virtio_load16(&vq->used->flags) & VRING_USED_F_NO_NOTIFY);
	return kick ? virtio_kick(vq) : 0;
}

/* ---- Rx ---- */

/*
 * The avail entries of slots [first, first + n), compared with the descriptor each slot
 * holds and written where they differ. Only while q->avail_check says an entry may be
 * stale: after a flush (the maps are the identity again, the ring may hold an older
 * order) and after the device used a buffer out of order (virtio_rx_take() moved
 * descriptors between slots). Once a whole ring of slots has been posted since, every
 * entry holds its slot's descriptor and posts leave the avail ring alone: storing the same
 * value again would still take its line from the device's cache, which then fetches it
 * back (one line between the cores per 32 buffers, for nothing).
 */
static void rx_avail_sync(struct virtio_rxq *q, uint32_t first, unsigned n)
{
	uint16_t *ring = q->vq.avail->ring;
	uint32_t mask = q->rxr.mask;

	for (unsigned k = 0; k < n; k++) {
		uint32_t s = (first + k) & mask;
		uint16_t id = q->slot_desc[s];

		if (__atomic_load_n(&ring[s], __ATOMIC_RELAXED) != id)
			ring[s] = id;
	}
	q->avail_check -= n < q->avail_check ? n : q->avail_check;
}

TIDE_ALWAYS_INLINE void rx_post(void *ctx, uint32_t first, unsigned n)
{
	struct virtio_rxq *q = ctx;
	struct vring_desc *desc = q->vq.desc;
	uint16_t *slot_desc = q->slot_desc;
	struct tide_mbuf **sw = q->rxr.sw;
	uint32_t mask = q->rxr.mask, off = (uint32_t)q->headroom - VIRTIO_HDR_LEN,
		 len = q->buf_len;

	for (unsigned k = 0; k < n; k++) {
		uint32_t s = (first + k) & mask;
		struct vring_desc *d = &desc[slot_desc[s]];

		d->addr = (uint64_t)(uintptr_t)tide_mbuf__buf_of(sw[s]) + off;
		d->len = len;
		d->flags = VRING_DESC_F_WRITE;
		d->next = 0;
	}
	if (tide_unlikely(q->avail_check != 0))
		rx_avail_sync(q, first, n);
}

TIDE_ALWAYS_INLINE void rx_doorbell(void *ctx, uint32_t refill)
{
	virtio_rx_doorbell(ctx, refill, vq_publish);
}

void virtio_rxq_flush(struct virtio_rxq *q)
{
	rxr_release_all(&q->rxr);
	for (unsigned i = 0; i < q->rxr.size; i++)
		q->slot_desc[i] = q->desc_slot[i] = (uint16_t)i;
	q->avail_check = q->rxr.size; /* the avail ring may hold another order */
	q->last_used = 0;
	q->avail_idx = 0;
	__atomic_store_n(&q->seen, VIRTIO_SEEN_NONE, __ATOMIC_RELAXED);
}

/* tide_recycle()'s post: recycled buffers in slots [first, first + n). While the queue is
 * off they wait in the slots, and the next resync gives them back. */
void virtio_rx_post_ool(struct rxr *r, uint32_t first, unsigned n, bool doorbell)
{
	struct virtio_rxq *q = r->drv;
	uint32_t live = quiesce_enter(&q->busy, &q->live, q->fence);

	/* The queue runs (seen is never 0, live never VIRTIO_SEEN_NONE). */
	if (virtio_live_seen(live, q->seen) &&
	    __atomic_load_n(&q->fault.why, __ATOMIC_RELAXED) == NULL) {
		if (live & VIRTIO_LIVE_PACKED) {
			virtio_packed_rx_post(q, first, n, doorbell);
		} else {
			rx_post(q, first, n);
			if (doorbell)
				rx_doorbell(q, first + n);
		}
	}
	quiesce_leave(&q->busy);
}

/* The split ring's Rx cursor: the used ring, read at positions below the used index. */
struct split_rxc {
	const struct vring_used_elem *ring;
	uint32_t mask;
};

/* How many used entries the burst may take: up to the used index, which may move at most
 * as far as we posted. */
TIDE_ALWAYS_INLINE int rx_begin(struct virtio_rxq *q, void *c, uint32_t posted, uint32_t *lim,
				const char **why)
{
	struct split_rxc *x = c;
	/* [used] acquire: the entries and the frames before them are written. */
	uint16_t uidx = __atomic_load_n(&q->vq.used->idx, __ATOMIC_ACQUIRE);
	uint32_t avail = (uint16_t)(uidx - q->last_used);

	if (tide_unlikely(avail > posted)) {
		*why = "used index moved past the posted buffers";
		return -1;
	}
	x->ring = q->vq.used->ring;
	x->mask = q->vq.mask;
	*lim = avail;
	return 0;
}

/* Below the used index every entry is used: read once into locals. */
TIDE_ALWAYS_INLINE int rx_elem(void *c, uint32_t pos, uint32_t *id, uint32_t *len, const char **why)
{
	const struct split_rxc *x = c;
	const struct vring_used_elem *e = &x->ring[pos & x->mask];

	(void)why;
	*id = __atomic_load_n(&e->id, __ATOMIC_RELAXED);
	*len = __atomic_load_n(&e->len, __ATOMIC_RELAXED);
	return 1;
}

static const struct virtio_rx_layout split_rx = {
	.begin = rx_begin,
	.elem = rx_elem,
	.post = rx_post,
	.doorbell = rx_doorbell,
	.by_index = true,
};

/*
 * The Rx burst (virtio_rx_burst() with the split layout), or the packed one when the
 * queue's live value says so; @ol (a constant in each instance): the queue enabled
 * offloads.
 */
TIDE_ALWAYS_INLINE uint16_t rx_burst_gen(struct tide_rxq *pub, struct tide_mbuf **pkts, uint16_t n,
					 const bool ol)
{
	struct virtio_rxq *q = (struct virtio_rxq *)pub;
	uint32_t live = quiesce_enter(&q->busy, &q->live, q->fence);
	struct split_rxc c;

	if (tide_unlikely(live != q->seen)) {
		if (ol && (live & VIRTIO_LIVE_PACKED))
			return virtio_packed_rx_ol(q, pkts, n, live);
		if (live & VIRTIO_LIVE_PACKED)
			return virtio_packed_rx(q, pkts, n, live);
		if (!virtio_rxq_resync(q, live, &split_rx)) {
			quiesce_leave(&q->busy);
			return 0;
		}
	}
	return virtio_rx_burst(q, pkts, n, &c, &split_rx, ol);
}

static uint16_t rx_burst(struct tide_rxq *pub, struct tide_mbuf **pkts, uint16_t n)
{
	return rx_burst_gen(pub, pkts, n, false);
}

static uint16_t rx_burst_ol(struct tide_rxq *pub, struct tide_mbuf **pkts, uint16_t n)
{
	return rx_burst_gen(pub, pkts, n, true);
}

tide_rx_burst_fn virtio_rx_fn(const struct virtio_rxq *q)
{
	return q->offloads ? rx_burst_ol : rx_burst;
}

/* ---- Tx ---- */

void virtio_txq_flush(struct virtio_txq *q)
{
	txc_release_all(&q->txc);
	memset(q->done, 0, q->txc.size);
	q->last_used = 0;
	__atomic_store_n(&q->seen, VIRTIO_SEEN_NONE, __ATOMIC_RELAXED);
}

/*
 * How many slots the device completed since the last call ([used] acquire), with every
 * value it wrote checked. On a violation the queue faults and nothing completes.
 */
TIDE_ALWAYS_INLINE unsigned tx_advance(struct txc *t)
{
	struct virtio_txq *q = t->drv;
	struct virtio_vq *vq = &q->vq;
	uint16_t u = __atomic_load_n(&vq->used->idx, __ATOMIC_ACQUIRE);
	uint16_t k = (uint16_t)(u - q->last_used);
	uint32_t c, inflight;
	const char *why;

	if (k == 0)
		return 0;
	/* Used entries not yet consumed: at most the descriptors made available. */
	if (tide_unlikely(k > (uint16_t)((uint16_t)t->tail - q->last_used))) {
		why = "used index moved past the posted buffers";
		goto fault;
	}
	if (vq->in_order) {
		/* In order: the index alone says how many; the entries are not read. */
		q->last_used = u;
		virtio_tx_claim(q, t, k);
		txc_advance_count(t, k);
		return k;
	}
	inflight = t->tail - t->done;
	for (uint16_t j = 0; j < k; j++) {
		uint32_t id = __atomic_load_n(&vq->used->ring[(uint16_t)(q->last_used + j) & vq->mask].id,
					      __ATOMIC_RELAXED);

		if (tide_unlikely(id >= vq->num)) {
			why = "used id beyond the queue size";
			goto fault;
		}
		if (tide_unlikely(virtio_tx_mark(q, t, id, inflight, &why) < 0))
			goto fault;
	}
	q->last_used = u;
	c = virtio_tx_sweep(q, t, inflight);
	virtio_tx_claim(q, t, c);
	txc_advance_count(t, c);
	return c;
fault:
	virtio_fault(&q->fault, &q->pub.stats.errors, why);
	return 0;
}

/* tide_txq_done_cleanup() and the recycle link: outside a burst, so enter like one. */
unsigned virtio_tx_advance_ool(struct txc *t)
{
	struct virtio_txq *q = t->drv;
	uint32_t live = quiesce_enter(&q->busy, &q->live, q->fence);
	unsigned k = 0;

	if (virtio_live_seen(live, q->seen) &&
	    __atomic_load_n(&q->fault.why, __ATOMIC_RELAXED) == NULL)
		k = live & VIRTIO_LIVE_PACKED ? virtio_packed_tx_advance(t) : tx_advance(t);
	quiesce_leave(&q->busy);
	return k;
}

/* The split ring's Tx cursor: the descriptor table (the avail ring is the identity). */
struct split_txc {
	struct vring_desc *desc;
};

/* One buffer at free-running position @pos: header and frame together at @hdr. */
TIDE_ALWAYS_INLINE void tx_place(void *c, uint32_t mask, uint32_t pos, const uint8_t *hdr,
				 uint32_t len)
{
	struct vring_desc *d = &((struct split_txc *)c)->desc[pos & mask];

	d->addr = (uint64_t)(uintptr_t)hdr;
	d->len = len;
	d->flags = 0;
	d->next = 0;
}

/*
 * A packet of several segments, in place through the slot's indirect table: the header in
 * the first segment's headroom, one descriptor per segment, when virtio_tx_ind_ok().
 * Returns 1 when it did, 0 when it cannot, -1 when its header was refused.
 */
TIDE_ALWAYS_INLINE int tx_indirect(struct virtio_txq *q, struct tide_mbuf *m, uint32_t pos, bool ol)
{
	uint32_t slot = pos & q->vq.mask;
	struct vring_desc *d = &q->vq.desc[slot], *t = &q->ind[(size_t)slot * VIRTIO_TX_SEGS];
	const struct tide_mbuf *s;
	unsigned k = 0;
	uint8_t *hdr;
	int rc = virtio_tx_ind_hdr(q, m, ol, &hdr);

	if (rc <= 0)
		return rc;
	for (s = m; s != NULL; s = s->next, k++) {
		t[k].addr = (uint64_t)(uintptr_t)(k ? tide_mbuf_mtod(s, uint8_t *) : hdr);
		t[k].len = (uint32_t)s->data_len + (k ? 0 : VIRTIO_HDR_LEN);
		t[k].flags = s->next ? VRING_DESC_F_NEXT : 0;
		t[k].next = (uint16_t)(k + 1);
	}
	d->addr = (uint64_t)(uintptr_t)t;
	d->len = k * (uint32_t)sizeof(*t);
	d->flags = VRING_DESC_F_INDIRECT;
	d->next = 0;
	return 1;
}

/* Out of line, as the packed ring's: off the burst's loop. */
static int tx_cut(struct virtio_txq *q, void *c, struct tide_mbuf *m, struct txc_burst *b,
		  uint32_t at, unsigned room, uint64_t *bytes, uint64_t *dropped)
{
	return virtio_tx_cut_place(q, c, m, b, at, room, bytes, dropped, tx_place);
}

static const struct virtio_tx_layout split_tx = {
	.advance = tx_advance,
	.place = tx_place,
	.indirect = tx_indirect,
	.bounce = virtio_tx_bounce,
	.cut = tx_cut,
	.kick = vq_publish,
};

/*
 * The Tx burst (virtio_tx_burst() with the split layout), or the packed one when the
 * queue's live value says so; @ol (a constant in each instance): the queue enabled
 * offloads.
 */
TIDE_ALWAYS_INLINE uint16_t tx_burst_gen(struct tide_txq *pub, struct tide_mbuf **pkts, uint16_t n,
					 const bool ol)
{
	struct virtio_txq *q = (struct virtio_txq *)pub;
	uint32_t live = quiesce_enter(&q->busy, &q->live, q->fence);
	struct split_txc c;

	if (tide_unlikely(live != q->seen)) {
		if (ol && (live & VIRTIO_LIVE_PACKED))
			return virtio_packed_tx_ol(q, pkts, n, live);
		if (live & VIRTIO_LIVE_PACKED)
			return virtio_packed_tx(q, pkts, n, live);
		if (!virtio_txq_resync(q, live)) {
			quiesce_leave(&q->busy);
			return 0;
		}
	}
	c.desc = q->vq.desc;
	return virtio_tx_burst(q, pkts, n, &c, &split_tx, ol);
}

static uint16_t tx_burst(struct tide_txq *pub, struct tide_mbuf **pkts, uint16_t n)
{
	return tx_burst_gen(pub, pkts, n, false);
}

static uint16_t tx_burst_ol(struct tide_txq *pub, struct tide_mbuf **pkts, uint16_t n)
{
	return tx_burst_gen(pub, pkts, n, true);
}

tide_tx_burst_fn virtio_tx_fn(const struct virtio_txq *q)
{
	return q->offloads ? tx_burst_ol : tx_burst;
}
