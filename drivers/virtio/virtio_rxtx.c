/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * virtio frontend data path: split virtqueues, zero copy both ways.
 *
 *   Rx (vring 2i, device-writable): the Rx refill (rxr.h) posts one descriptor per mbuf,
 *       starting VIRTIO_HDR_LEN bytes before the mbuf's data (the header lands in the
 *       headroom, the frame where the data starts) and as long as header + data room; the
 *       avail index moves once per refill batch. The burst takes used entries {id, len}:
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
 * once from the header. A violation faults the queue (fs.why): it moves nothing more, the
 * control thread logs the reason and drops the connection, and the buffers come home at
 * the next burst or at stop.
 */
#include <errno.h>
#include <string.h>

#include "inline.h"
#include "copy.h"
#include "virtio.h"

TIDE_ALWAYS_INLINE uint16_t load16(const uint16_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/*
 * Publish the avail index and kick the device if it asked ([avail] release, then the
 * fence of the notification protocol: see the top).
 */
TIDE_ALWAYS_INLINE uint64_t vq_publish(struct virtio_vq *vq, uint16_t old, uint16_t now)
{
	uint64_t one = 1;
	bool kick;

	__atomic_store_n(&vq->avail->idx, now, __ATOMIC_RELEASE);
	if (vq->kickfd < 0)
		return 0;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (vq->event_idx)
		kick = vring_need_event(load16((const uint16_t *)&vq->used->ring[vq->num]), now,
					old);
	else
		kick = !(load16(&vq->used->flags) & VRING_USED_F_NO_NOTIFY);
	if (!kick)
		return 0;
	if (vq->notify != NULL) {
		*vq->notify = vq->notify_val; /* PCI: after the fence, as the avail store is */
		return 1;
	}
	if (write(vq->kickfd, &one, sizeof(one)) < 0) {
		/* a full eventfd counter wakes the device already */
	}
	return 1;
}

/* ---- Rx ---- */

TIDE_ALWAYS_INLINE void rx_post(void *ctx, uint32_t first, unsigned n)
{
	struct virtio_rxq *q = ctx;
	struct vring_desc *desc = q->vq.desc;
	uint16_t *ring = q->vq.avail->ring, *slot_desc = q->slot_desc;
	struct tide_mbuf **sw = q->rxr.sw;
	uint32_t mask = q->rxr.mask, off = (uint32_t)q->headroom - VIRTIO_HDR_LEN,
		 len = q->buf_len;

	for (unsigned k = 0; k < n; k++) {
		uint32_t s = (first + k) & mask;
		uint16_t id = slot_desc[s];
		struct vring_desc *d = &desc[id];

		d->addr = (uint64_t)(uintptr_t)sw[s]->buf_addr + off;
		d->len = len;
		d->flags = VRING_DESC_F_WRITE;
		d->next = 0;
		ring[s] = id;
	}
}

TIDE_ALWAYS_INLINE void rx_doorbell(void *ctx, uint32_t refill)
{
	struct virtio_rxq *q = ctx;
	uint16_t old = q->avail_idx;

	q->avail_idx = (uint16_t)refill;
	if (tide_unlikely(vq_publish(&q->vq, old, (uint16_t)refill)))
		tide_stat_add(&q->kicks, 1);
}

void virtio_rxq_flush(struct virtio_rxq *q)
{
	rxr_release_all(&q->rxr);
	for (unsigned i = 0; i < q->rxr.size; i++)
		q->slot_desc[i] = q->desc_slot[i] = (uint16_t)i;
	q->last_used = 0;
	q->avail_idx = 0;
	__atomic_store_n(&q->seen, VIRTIO_SEEN_NONE, __ATOMIC_RELAXED);
}

/*
 * A new connection (or none): the old one's posted buffers will never be used, they go
 * home; the ring (zeroed by the control thread) starts at index 0 with a full refill. Then
 * `seen` tells the control thread that the receive buffers are posted (release: pairs with
 * its acquire load in virtio_dev_init(), which waits for it before the Tx queues go live).
 * Returns whether the queue runs.
 */
TIDE_ALWAYS_INLINE bool rxq_resync(struct virtio_rxq *q, uint32_t live)
{
	/* (Recycled buffers may wait in the slots of a queue that holds no connection.) */
	if (q->seen != VIRTIO_SEEN_NONE || q->rxr.refill != q->rxr.next)
		virtio_rxq_flush(q);
	if (live == 0 || __atomic_load_n(&q->fs.why, __ATOMIC_RELAXED) != NULL)
		return false;
	rxr_refill(&q->rxr, rx_post, rx_doorbell, q);
	__atomic_store_n(&q->seen, live, __ATOMIC_RELEASE);
	return true;
}

/* tide_recycle()'s post: recycled buffers in slots [first, first + n). While the queue is
 * off they wait in the slots, and the next resync gives them back. */
void virtio_rx_post_ool(struct rxr *r, uint32_t first, unsigned n, bool doorbell)
{
	struct virtio_rxq *q = r->drv;
	uint32_t live = quiesce_enter(&q->busy, &q->live, q->fence);

	/* live == seen: the queue runs (seen is never 0, live never VIRTIO_SEEN_NONE). */
	if (live == q->seen && __atomic_load_n(&q->fs.why, __ATOMIC_RELAXED) == NULL) {
		rx_post(q, first, n);
		if (doorbell)
			rx_doorbell(q, first + n);
	}
	quiesce_leave(&q->busy);
}

/* What the Rx loop reads on every entry, in locals: the stores into mbufs could alias the
 * queue's fields (-fno-strict-aliasing) and force a reload of each after every store. */
struct rx_view {
	struct tide_mbuf **sw;
	uint16_t *slot_desc, *desc_slot;
	uint32_t mask, num;
};

/*
 * The buffer of used entry @id, to be received at position @pos; @posted buffers are
 * posted from @pos on. A device may use buffers in any order: the slot of @id trades places
 * with the slot at @pos (descriptor and mbuf alike), so that [pos + 1, refill) stays
 * exactly what is posted. NULL when @id names no posted buffer.
 */
TIDE_ALWAYS_INLINE struct tide_mbuf *rx_take(const struct rx_view *v, uint32_t id, uint32_t pos,
					     uint32_t posted)
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
	}
	return v->sw[p];
}

/* A chain cut short by a fault: its segments stay in their slots, each freed on its own. */
static void rx_unlink(struct tide_mbuf *m)
{
	while (m != NULL) {
		struct tide_mbuf *nx = m->next;

		m->next = NULL;
		m->nb_segs = 1;
		m = nx;
	}
}

/*
 * The Rx burst; @ol (a constant in each instance): the queue enabled offloads, so each
 * packet's header is copied once and applied (virtio_hdr.h), and a refused one drops the
 * packet.
 */
TIDE_ALWAYS_INLINE uint16_t rx_burst_gen(struct tide_rxq *pub, struct tide_mbuf **pkts, uint16_t n,
					 const bool ol)
{
	struct virtio_rxq *q = (struct virtio_rxq *)pub;
	struct virtio_vq *vq = &q->vq;
	struct rxr *r = &q->rxr;
	uint32_t live = quiesce_enter(&q->busy, &q->live, q->fence);
	uint32_t next, posted, avail, used = 0, hdr_off, buf_len;
	const struct vring_used_elem *ring;
	struct tide_mbuf__rx_regs tmpl;
	uint64_t bytes = 0, dropped = 0;
	const char *why = NULL;
	struct rx_view v;
	uint16_t uidx, i = 0, lu;
	bool mrg;

	if (tide_unlikely(live != q->seen) && !rxq_resync(q, live))
		goto out;
	if (tide_unlikely(__atomic_load_n(&q->fs.why, __ATOMIC_RELAXED) != NULL))
		goto out;
	/* [used] acquire: the entries and the frames before them are written. */
	uidx = __atomic_load_n(&vq->used->idx, __ATOMIC_ACQUIRE);
	next = r->next;
	posted = r->refill - next;
	avail = (uint16_t)(uidx - q->last_used);
	if (tide_unlikely(avail > posted)) {
		why = "used index moved past the posted buffers";
		goto fault;
	}
	v.sw = r->sw;
	v.slot_desc = q->slot_desc;
	v.desc_slot = q->desc_slot;
	v.mask = vq->mask;
	v.num = vq->num;
	ring = vq->used->ring;
	lu = q->last_used;
	buf_len = q->buf_len;
	mrg = vq->mrg;
	hdr_off = (uint32_t)q->headroom - VIRTIO_HDR_LEN;
	tmpl = tide_mbuf__rx_tmpl_load(&q->tmpl);
	while (i < n && used < avail) {
		const struct vring_used_elem *e = &ring[(lu + used) & v.mask];
		uint32_t id = __atomic_load_n(&e->id, __ATOMIC_RELAXED);
		uint32_t len = __atomic_load_n(&e->len, __ATOMIC_RELAXED);
		struct tide_mbuf *m = rx_take(&v, id, next + used, posted - used), *last;
		struct virtio_net_hdr_mrg h;
		uint16_t nbuf = 1;

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
			virtio_hdr_rx_copy(&h, (const uint8_t *)m->buf_addr + hdr_off);
		if (mrg) {
			const uint16_t *nb = (const uint16_t *)(const void *)((const uint8_t *)m->buf_addr +
				hdr_off + offsetof(struct virtio_net_hdr_mrg, num_buffers));

			nbuf = ol ? h.num_buffers : __atomic_load_n(nb, __ATOMIC_RELAXED);
			if (tide_unlikely(nbuf == 0 || nbuf > posted - used)) {
				why = "num_buffers of 0 or beyond the posted buffers";
				goto fault;
			}
			if (tide_unlikely(nbuf > avail - used))
				break; /* the rest of the packet is not used yet */
		}
		tide_mbuf__rx_tmpl_write(m, tmpl);
		m->data_len = (uint16_t)(len - VIRTIO_HDR_LEN);
		m->pkt_len = len - VIRTIO_HDR_LEN;
		last = m;
		for (uint16_t j = 1; tide_unlikely(j < nbuf); j++) {
			struct tide_mbuf *s;

			e = &ring[(lu + used + j) & v.mask];
			id = __atomic_load_n(&e->id, __ATOMIC_RELAXED);
			len = __atomic_load_n(&e->len, __ATOMIC_RELAXED);
			s = rx_take(&v, id, next + used + j, posted - used - j);
			if (tide_unlikely(s == NULL || len > buf_len)) {
				rx_unlink(m);
				why = s == NULL ? "used id of a buffer not posted"
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
	r->next = next + used;
	q->last_used = (uint16_t)(q->last_used + used);
	if (rxr_empty_slots(r) >= r->batch)
		rxr_refill(r, rx_post, rx_doorbell, q);
	if (tide_unlikely(dropped))
		tide_stat_add(&pub->stats.errors, dropped);
	tide_stat_burst(&pub->stats, i, bytes);
	quiesce_leave(&q->busy);
	return i;
fault:
	/* Packets completed before the violation are the application's; the rest stays in
	 * the ring until the connection is dropped. */
	r->next = next + used;
	q->last_used = (uint16_t)(q->last_used + used);
	virtio_fault(&q->fs, &pub->stats.errors, why);
	tide_stat_burst(&pub->stats, i, bytes);
out:
	quiesce_leave(&q->busy);
	return i;
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

static bool txq_resync(struct virtio_txq *q, uint32_t live)
{
	if (q->seen != VIRTIO_SEEN_NONE)
		virtio_txq_flush(q);
	if (live == 0 || __atomic_load_n(&q->fs.why, __ATOMIC_RELAXED) != NULL)
		return false;
	__atomic_store_n(&q->seen, live, __ATOMIC_RELAXED);
	return true;
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
	uint16_t k = (uint16_t)(u - q->last_used), c = 0;
	uint32_t inflight;
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
		if (tide_unlikely(((id - t->done) & t->mask) >= inflight || q->done[id])) {
			why = "used id of a buffer not in flight";
			goto fault;
		}
		q->done[id] = 1;
	}
	q->last_used = u;
	while (c < inflight && q->done[(t->done + c) & t->mask]) {
		q->done[(t->done + c) & t->mask] = 0;
		c++;
	}
	txc_advance_count(t, c);
	return c;
fault:
	virtio_fault(&q->fs, &q->pub.stats.errors, why);
	return 0;
}

/* tide_txq_done_cleanup() and the recycle link: outside a burst, so enter like one. */
unsigned virtio_tx_advance_ool(struct txc *t)
{
	struct virtio_txq *q = t->drv;
	uint32_t live = quiesce_enter(&q->busy, &q->live, q->fence);
	unsigned k = 0;

	if (live == q->seen && __atomic_load_n(&q->fs.why, __ATOMIC_RELAXED) == NULL)
		k = tx_advance(t);
	quiesce_leave(&q->busy);
	return k;
}

/* Can the device read @m in place? One segment, refcnt 1 (the header goes into its
 * headroom, which nobody else may be writing), room for the header, a pool it reaches. */
TIDE_ALWAYS_INLINE bool tx_direct(const struct virtio_txq *q, const struct tide_pool *pool0,
				  const struct tide_mbuf *m)
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
 * A packet of several segments, in place through the slot's indirect table: the header in
 * the first segment's headroom, one descriptor per segment. Needs the feature, at most
 * VIRTIO_TX_SEGS segments, refcnt 1 and headroom on the first (the header is written
 * there), and every segment from a pool the device reaches. Returns whether it did.
 */
TIDE_ALWAYS_INLINE bool tx_indirect(struct virtio_txq *q, struct tide_mbuf *m, struct vring_desc *d,
				    uint32_t slot)
{
	struct vring_desc *t = &q->ind[(size_t)slot * VIRTIO_TX_SEGS];
	const struct tide_mbuf *s;
	unsigned k = 0;
	uint8_t *hdr;

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
	hdr = tide_mbuf_mtod(m, uint8_t *) - VIRTIO_HDR_LEN;
	memset(hdr, 0, VIRTIO_HDR_LEN);
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
	return true;
}

/* A copy of @m the device can reach (and @m freed), or NULL (then @m is still the caller's). */
TIDE_ALWAYS_INLINE struct tide_mbuf *tx_bounce(struct virtio_txq *q, struct tide_mbuf *m)
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
 * whole) into mbufs of the bounce pool, which the device reaches, placed from ring
 * position @at with zero headers (every checksum filled), at most @room of them. Returns
 * the pieces placed (@m consumed), -ENOSPC when they need more room than @room but could
 * fit the ring (@m untouched: the burst ends there), or another -errno (@m untouched, the
 * caller drops it; a request the cut refuses is counted in refused).
 */
static int tx_cut(struct virtio_txq *q, struct tide_mbuf *m, struct txc_burst *b, uint32_t at,
		  unsigned room, uint64_t *bytes)
{
	struct tide_mbuf *out[VIRTIO_CUT_MAX];
	unsigned most = q->txc.size < VIRTIO_CUT_MAX ? q->txc.size : VIRTIO_CUT_MAX;
	int k;

	if (q->bounce == NULL)
		return -ENOBUFS;
	k = tide_offload_segment(m, q->bounce, out, room < most ? room : most);
	if (k == -ENOSPC && room < most)
		return -ENOSPC;
	if (k < 0) {
		if (k != -ENOBUFS)
			tide_stat_add(&q->ol.refused, 1);
		return k == -ENOSPC ? -E2BIG : k;
	}
	for (int j = 0; j < k; j++) {
		struct tide_mbuf *s = out[j];
		uint8_t *hdr = tide_mbuf_mtod(s, uint8_t *) - VIRTIO_HDR_LEN;
		struct vring_desc *d = &q->vq.desc[(at + (uint32_t)j) & b->mask];

		memset(hdr, 0, VIRTIO_HDR_LEN);
		d->addr = (uint64_t)(uintptr_t)hdr;
		d->len = (uint32_t)s->data_len + VIRTIO_HDR_LEN;
		d->flags = 0;
		d->next = 0;
		*bytes += s->data_len;
		txc_burst_fill(b, at + (uint32_t)j, s);
	}
	tide_stat_add(&q->ol.sw_tso, 1);
	return k;
}

/* tx_cut() in the burst: the pieces placed, 0 when @m was dropped (counted in @dropped),
 * or -1 when there is no room (@m and the rest of the burst stay the caller's). */
static int tx_cut_step(struct virtio_txq *q, struct tide_mbuf *m, struct txc_burst *b, uint32_t at,
		       unsigned room, uint64_t *bytes, uint64_t *dropped)
{
	int k = tx_cut(q, m, b, at, room, bytes);

	if (k == -ENOSPC)
		return -1;
	if (k < 0) {
		tide_mbuf_free(m);
		(*dropped)++;
		return 0;
	}
	return k;
}

/*
 * The Tx burst; @ol (a constant in each instance): the queue enabled offloads, so each
 * packet's requests become its header, or are done in software where the device lacks
 * them (virtio_hdr.h), and a bad request drops the packet.
 */
TIDE_ALWAYS_INLINE uint16_t tx_burst_gen(struct tide_txq *pub, struct tide_mbuf **pkts, uint16_t n,
					 const bool ol)
{
	struct virtio_txq *q = (struct virtio_txq *)pub;
	uint32_t live = quiesce_enter(&q->busy, &q->live, q->fence);
	struct txc *t = &q->txc;
	const struct tide_pool *pool0;
	struct vring_desc *desc;
	uint64_t bytes = 0, dropped = 0;
	struct txc_burst b;
	uint32_t tail, sent = 0;
	unsigned room;
	uint16_t i;

	if (tide_unlikely(live != q->seen) && !txq_resync(q, live)) {
		quiesce_leave(&q->busy);
		return 0;
	}
	if (tide_unlikely(__atomic_load_n(&q->fs.why, __ATOMIC_RELAXED) != NULL)) {
		quiesce_leave(&q->busy);
		return 0;
	}
	room = txc_make_room(t, n, tx_advance);
	if (n > room)
		n = (uint16_t)room;
	/* In locals: the stores into mbufs and descriptors could alias q. */
	desc = q->vq.desc;
	pool0 = q->pools[0];
	tail = t->tail;
	txc_burst_begin(t, &b);
	for (i = 0; i < n && (!ol || sent < room); i++) {
		struct tide_mbuf *m = pkts[i];
		struct vring_desc *d;
		uint8_t *hdr;

		if (ol && tide_unlikely(virtio_hdr_tx_cut(&q->ol, m))) {
			int k = tx_cut_step(q, m, &b, tail + sent, room - sent, &bytes, &dropped);

			if (k < 0)
				break; /* no room: this packet and the rest stay the caller's */
			sent += (uint32_t)k;
			continue;
		}
		if (tide_unlikely(!tx_direct(q, pool0, m))) {
			struct tide_mbuf *c;

			d = &desc[(tail + sent) & b.mask];
			if (m->nb_segs > 1 && tx_indirect(q, m, d, (tail + sent) & b.mask)) {
				if (ol && virtio_hdr_tx(&q->ol, m,
							tide_mbuf_mtod(m, uint8_t *) -
							    VIRTIO_HDR_LEN) < 0) {
					tide_mbuf_free(m); /* counted as refused, and as an error */
					dropped++;
					continue;
				}
				bytes += m->pkt_len;
				txc_burst_fill(&b, tail + sent, m);
				sent++;
				continue;
			}
			c = tx_bounce(q, m);

			if (ol && c == NULL && (m->ol_flags & TIDE_MBUF_F_TX_TCP_SEG)) {
				/* It cannot be placed whole: cut here instead. */
				int k = tx_cut_step(q, m, &b, tail + sent, room - sent, &bytes,
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
		if (!ol)
			memset(hdr, 0, VIRTIO_HDR_LEN);
		else if (tide_unlikely(virtio_hdr_tx(&q->ol, m, hdr) < 0)) {
			tide_mbuf_free(m); /* counted as refused, and as an error */
			dropped++;
			continue;
		}
		d = &desc[(tail + sent) & b.mask];
		d->addr = (uint64_t)(uintptr_t)hdr;
		d->len = (uint32_t)m->data_len + VIRTIO_HDR_LEN;
		d->flags = 0;
		d->next = 0;
		bytes += m->data_len;
		txc_burst_fill(&b, tail + sent, m);
		sent++;
	}
	txc_burst_end(t, &b);
	if (sent) {
		if (tide_unlikely(vq_publish(&q->vq, (uint16_t)tail, (uint16_t)(tail + sent))))
			tide_stat_add(&q->kicks, 1);
		txc_commit(t, sent);
	}
	if (tide_unlikely(dropped))
		tide_stat_add(&pub->stats.errors, dropped);
	tide_stat_burst(&pub->stats, sent, bytes);
	quiesce_leave(&q->busy);
	return i;
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
