/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost data path: the split virtqueue layout (virtio 1.x section 2.7), copy mode, both
 * directions, on the copy layer (vhost_copy.h): its chain iterator, its used ring and its
 * publication, and its one-descriptor fast paths. The queue's burst (vhost_rxtx.c) jumps
 * here when its live word says VHOST_LIVE_SPLIT.
 *
 *   Rx burst <- guest Tx vring (2i+1): take avail entries [last_avail, avail->idx), copy each
 *               chain (minus the virtio-net header) into tide mbufs, one used entry per
 *               chain (length 0: we wrote nothing); with VIRTIO_F_IN_ORDER one for the
 *               whole burst, at its first used slot with the head of its last chain, and
 *               used->idx moved by the burst's chains (split-ring "In-order use of
 *               descriptors"; DPDK's in-order Tx cleanup reads only used->idx).
 *   Tx burst -> guest Rx vring (2i):   take avail entries, write header + packet into the
 *               guest's buffers (several chains per packet with MRG_RXBUF, num_buffers in
 *               the first header), one used entry per chain with the bytes written.
 *
 * Both publish used->idx once per burst (release: the used entries and the buffers are
 * written first) and then notify the guest only when it asked: with the event index when
 * the new used index passed used_event, without it unless avail->flags says
 * NO_INTERRUPT. That check reads guest memory after our store of used->idx, so a full
 * fence stands between them (the other half is the guest's fence between its update of
 * used_event and its read of used->idx); it costs one per burst that moved something.
 *
 * Index pairs:
 *   [avail] our acquire load of avail->idx <- the driver's release of it after the ring
 *           entries and descriptors;
 *   [used]  our release store of used->idx -> the driver's acquire load.
 *
 * Everything in guest memory is hostile. avail->idx may move at most the queue size past
 * our last_avail; every ring entry and descriptor is read once into a local and checked
 * (head and next below the table size, chains no longer than the table, indirect tables
 * only with the feature, whole, inside one region and not nested, write flags as the
 * direction requires); every buffer address is translated through the queue's copy of
 * the memory table chunk by chunk, so a buffer never reaches outside a region. A violation
 * stops the queue and records the reason; the control thread disconnects the frontend.
 *
 * Tx frees the burst after the copy loop in bulk (seed 003), or with txfree_loop=yes each
 * packet right after its copy; the engine completes slots as they are copied (count mode,
 * O(1)). used_per_pkt=yes publishes used->idx after every packet (seed 004 comparison).
 */
#include <string.h>
#include <unistd.h>

#include "inline.h"
#include "vhost_copy.h"

/* Read a descriptor once: the copy is what gets checked and used. */
TIDE_ALWAYS_INLINE void desc_fetch(const struct vring_desc *s, struct vhost_desc *d)
{
	memcpy(d, s, sizeof(*d));
	__atomic_signal_fence(__ATOMIC_SEQ_CST); /* no re-reads of guest memory after this */
}

/* Walking one descriptor chain (the chain iterator: walk_next()). */
struct walk {
	const struct vring_desc *tbl;
	uint32_t n;     /* entries in tbl */
	uint32_t count; /* descriptors visited in tbl */
	bool indirect;  /* tbl is an indirect table */
};

static const char *walk_indirect(struct vhost_vq *q, struct walk *w, struct vhost_desc *d)
{
	uint64_t contig;
	const struct vring_desc *tbl;

	if (!q->indirect)
		return "indirect descriptor without VIRTIO_F_INDIRECT_DESC";
	if (d->flags & VRING_DESC_F_NEXT)
		return "indirect descriptor with the next flag";
	if (d->len == 0 || d->len % sizeof(struct vring_desc) != 0 ||
	    d->len / sizeof(struct vring_desc) > q->num)
		return "indirect table size not a multiple of 16 up to the queue size";
	tbl = (const struct vring_desc *)vhost_gpa_host(&q->mem, d->addr, &contig);
	if (tide_unlikely(q->mem.iotlb) && (tbl == NULL || contig < d->len))
		return tbl == NULL ? vhost_why_nomap : "indirect table crosses IOTLB entries";
	if (tbl == NULL || contig < d->len)
		return "indirect table outside guest memory";
	w->tbl = tbl;
	w->n = d->len / sizeof(struct vring_desc);
	w->count = 1;
	w->indirect = true;
	desc_fetch(&tbl[0], d);
	if (d->flags & VRING_DESC_F_INDIRECT)
		return "nested indirect descriptor table";
	return NULL;
}

/* The first descriptor of the chain at @head, in @d. Returns NULL or why it is bad. */
TIDE_ALWAYS_INLINE const char *walk_first(struct vhost_vq *q, struct walk *w, uint16_t head,
					  struct vhost_desc *d)
{
	if (tide_unlikely(head >= q->num))
		return "avail ring entry beyond the queue size";
	w->tbl = q->desc;
	w->n = q->num;
	w->count = 1;
	w->indirect = false;
	desc_fetch(&w->tbl[head], d);
	if (tide_unlikely(d->flags & VRING_DESC_F_INDIRECT))
		return walk_indirect(q, w, d);
	return NULL;
}

/* The chain iterator (vhost_next_fn; @walk: a struct walk, or a struct that starts with one). */
TIDE_ALWAYS_INLINE int walk_next(struct vhost_vq *q, void *walk, struct vhost_desc *d,
				 const char **why)
{
	struct walk *w = walk;
	uint16_t next = d->next;

	(void)q;
	if (!(d->flags & VRING_DESC_F_NEXT))
		return 0;
	if (tide_unlikely(next >= w->n)) {
		*why = "descriptor next index beyond the table";
		return -1;
	}
	if (tide_unlikely(++w->count > w->n)) {
		*why = "descriptor chain loops or is longer than its table";
		return -1;
	}
	desc_fetch(&w->tbl[next], d);
	if (tide_unlikely(d->flags & VRING_DESC_F_INDIRECT)) {
		*why = w->indirect ? "nested indirect descriptor table"
				   : "indirect descriptor inside a chain";
		return -1;
	}
	return 1;
}

/* ---- the used ring and its publication ---- */

TIDE_ALWAYS_INLINE void used_put(struct vhost_vq *q, uint16_t uidx, uint32_t id, uint32_t len)
{
	struct vring_used_elem *e = &q->used->ring[uidx & q->mask];

	__atomic_store_n(&e->id, id, __ATOMIC_RELAXED);
	__atomic_store_n(&e->len, len, __ATOMIC_RELAXED);
}

/* Publish used->idx and notify the guest if it asked. */
static void used_publish(struct vhost_vq *q, uint16_t uidx)
{
	uint16_t old = q->used_idx;
	uint64_t one = 1;

	/* [used] release: entries and buffers are written before the index. */
	__atomic_store_n(&q->used->idx, uidx, __ATOMIC_RELEASE);
	q->used_idx = uidx;
	if (q->callfd < 0)
		return;
	/* Our store of used->idx before our load of the guest's wish (see the top). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (q->event_idx) {
		if (!vring_need_event(vhost_load16(&q->avail->ring[q->num]), uidx, old))
			return;
	} else if (vhost_load16(&q->avail->flags) & VRING_AVAIL_F_NO_INTERRUPT) {
		return;
	}
	if (write(q->callfd, &one, sizeof(one)) < 0) {
		/* Non-blocking (vhost_vring.c): a full counter already wakes the guest. */
		tide_stat_add(&q->call_errors, 1);
	}
}

/*
 * The avail entries waiting ([avail] acquire) into *@idx, and their count: avail->idx may
 * move at most the queue size past what we took (0 and a fault when it jumped further).
 */
TIDE_ALWAYS_INLINE unsigned vq_avail(struct vhost_fault_slot *fault, uint64_t *errors,
				     struct vhost_vq *q, uint16_t *idx)
{
	uint16_t a, k;

	a = __atomic_load_n(&q->avail->idx, __ATOMIC_ACQUIRE);
	k = (uint16_t)(a - q->last_avail);
	if (tide_unlikely(k > q->num)) {
		vhost_fault(fault, errors, "avail index moved more than the queue size");
		k = 0;
	}
	*idx = a;
	return k;
}

/* ---- Rx: guest Tx vring -> mbufs ---- */

/* The Rx cursor: the next avail entry and the next used entry. */
struct split_rxc {
	uint16_t last, uidx;
};

/* Copy the chain at @head into @m (reset, empty); with @ol its header into *@h. */
TIDE_ALWAYS_INLINE int rx_chain(struct vhost_rxq *q, uint16_t head, struct tide_mbuf *m,
				struct virtio_net_hdr_mrg *h, const bool ol, const char **why)
{
	struct vhost_vq *vq = &q->vq;
	struct vhost_desc d;
	struct walk w;
	uint32_t skip = vq->hdr_len;

	if ((*why = walk_first(vq, &w, head, &d)) != NULL)
		return VHOST_RX_FAULT;
	/* One readable descriptor, header and frame in the region of the previous translation,
	 * the frame fits one mbuf. */
	if (tide_likely(!(d.flags & (VRING_DESC_F_NEXT | VRING_DESC_F_WRITE)) && d.len > skip &&
			d.len - skip <= q->fast_max)) {
		const uint8_t *src = vhost_gpa_fast(&vq->mem, d.addr, d.len);

		if (tide_likely(src != NULL)) {
			uint16_t k = (uint16_t)(d.len - skip);

			if (ol) /* flags .. csum_offset: every header has them */
				memcpy(h, src, offsetof(struct virtio_net_hdr_mrg, num_buffers));
			memcpy(tide_mbuf_mtod(m, uint8_t *), src + skip, k);
			m->data_len = k;
			m->pkt_len = k;
			return VHOST_RX_OK;
		}
	}
	return vhost_rx_buf(q, &w, walk_next, d, m, ol ? h : NULL, why);
}

TIDE_ALWAYS_INLINE unsigned rx_count(struct vhost_rxq *q, void *c, uint16_t n)
{
	struct split_rxc *r = c;
	const struct vhost_vq *vq = &q->vq;
	struct vhost_rx_pf pf;
	uint16_t aidx;
	unsigned k = vq_avail(&q->fault, &q->pub.stats.errors, &q->vq, &aidx);

	r->last = q->vq.last_avail;
	r->uidx = q->vq.used_idx;
	if (k > n)
		k = n;
	/* The frames' first lines, for the whole burst (vhost_rx_prefetch()). A hint: a head
	 * beyond the table is masked into it here (and faults when its buffer is taken). */
	pf = vhost_rx_prefetch_begin(vq);
	for (unsigned j = 0; j < k; j++) {
		uint16_t head = vhost_load16(&vq->avail->ring[(uint16_t)(r->last + j) & vq->mask]);

		vhost_rx_prefetch(&pf, __atomic_load_n(&vq->desc[head & vq->mask].addr,
						       __ATOMIC_RELAXED));
	}
	return k;
}

TIDE_ALWAYS_INLINE int rx_buf(struct vhost_rxq *q, void *c, struct tide_mbuf *m, uint16_t *id,
			      struct virtio_net_hdr_mrg *h, const bool ol, const char **why)
{
	struct split_rxc *r = c;
	uint16_t head = vhost_load16(&q->vq.avail->ring[r->last & q->vq.mask]);

	tide_mbuf_reset(m);
	*id = head;
	return rx_chain(q, head, m, h, ol, why);
}

TIDE_ALWAYS_INLINE void rx_used(struct vhost_vq *q, void *c, uint16_t id)
{
	used_put(q, ((struct split_rxc *)c)->uidx, id, 0);
}

TIDE_ALWAYS_INLINE void rx_step(struct vhost_vq *q, void *c)
{
	struct split_rxc *r = c;

	(void)q;
	r->uidx++;
	r->last++;
}

TIDE_ALWAYS_INLINE void rx_publish(struct vhost_vq *q, void *c)
{
	used_publish(q, ((struct split_rxc *)c)->uidx);
}

/* In order: one used entry for the burst, at its first used slot, with the head of its last
 * chain (see the top). */
TIDE_ALWAYS_INLINE void rx_finish(struct vhost_vq *vq, void *c, bool batch, uint16_t last_id)
{
	struct split_rxc *r = c;
	uint16_t uidx = r->uidx;

	if (batch && uidx != vq->used_idx)
		used_put(vq, vq->used_idx, last_id, 0);
	vq->last_avail = r->last;
	if (uidx != vq->used_idx)
		used_publish(vq, uidx);
}

static const struct vhost_rx_layout split_rx = {
	.count = rx_count,
	.buf = rx_buf,
	.used = rx_used,
	.step = rx_step,
	.publish = rx_publish,
	.finish = rx_finish,
};

/* ---- Tx: mbufs -> guest Rx vring ---- */

/* The Tx cursor: avail->idx as read at the start, the next avail entry, the next used one. */
struct split_txc {
	uint16_t aidx, cursor, uidx;
};

/* The walk of the general case: the chain, and the packet's chains so far. */
struct split_txw {
	struct walk w;	/* first: walk_next() takes the struct as a struct walk */
	uint16_t aidx;	/* avail->idx as the burst read it */
	uint16_t start; /* the packet's first avail entry */
	uint16_t head;	/* of the chain being walked */
	uint16_t cur;	/* its avail entry */
	uint16_t u;	/* its used entry */
};

TIDE_ALWAYS_INLINE int txw_end(struct vhost_vq *vq, void *walk, uint32_t wrote)
{
	struct split_txw *tw = walk;

	used_put(vq, tw->u++, tw->head, wrote);
	tw->cur++;
	return VHOST_TX_OK;
}

TIDE_ALWAYS_INLINE int txw_first(struct vhost_vq *vq, void *walk, struct vhost_desc *d,
				 const char **why)
{
	struct split_txw *tw = walk;

	if (tw->cur == tw->aidx) {
		/* Out of guest buffers: wait for more, unless the ring could never hold it. */
		return (uint16_t)(tw->cur - tw->start) >= vq->num ? VHOST_TX_DROP : VHOST_TX_FULL;
	}
	tw->head = vhost_load16(&vq->avail->ring[tw->cur & vq->mask]);
	if ((*why = walk_first(vq, &tw->w, tw->head, d)) != NULL)
		return VHOST_TX_FAULT;
	return VHOST_TX_OK;
}

/* Nothing to do: the used entries are written, and tx_chains() hands the cursor back. */
TIDE_ALWAYS_INLINE void txw_commit(struct vhost_vq *vq, void *walk)
{
	(void)vq;
	(void)walk;
}

static const struct vhost_tx_chain split_tx_chain = {
	.next = walk_next,
	.whole = false, /* the chain's end tells nothing: stop where the packet ends */
	.end = txw_end,
	.first = txw_first,
	.commit = txw_commit,
};

/* How the general case went and, on VHOST_TX_OK, where the cursor moves. */
struct split_txr {
	int rc;
	uint16_t cursor, uidx;
};

/* The general case of tx_pkt(), with the first chain (@head, at avail entry @cursor) already
 * read into @d and @w. Out of line; the cursor goes in and out by value, so that the burst
 * keeps it in registers. */
static struct split_txr tx_chains(struct vhost_vq *vq, uint16_t aidx, uint16_t cursor,
				  uint16_t uidx, const struct tide_mbuf *m,
				  const struct virtio_net_hdr_mrg *hdr, const char **why,
				  uint16_t head, struct vhost_desc d, struct walk w)
{
	struct split_txw tw = {
		.w = w, .aidx = aidx, .start = cursor, .head = head, .cur = cursor, .u = uidx};
	int rc = vhost_tx_bufs(vq, m, &tw, d, &split_tx_chain, hdr, why);

	return (struct split_txr){.rc = rc, .cursor = tw.cur, .uidx = tw.u};
}

/*
 * Copy packet @m into guest buffers from the cursor's avail entry on, writing used entries
 * from its used one. On VHOST_TX_OK both moved past what the packet took; otherwise they are
 * unchanged and nothing is visible to the guest (used->idx was not published). Inline: the
 * common case, a one-segment packet into the first descriptor of one chain, header and frame
 * in one region; everything else in tx_chains(), with the chain already read.
 */
TIDE_ALWAYS_INLINE int tx_pkt(struct vhost_vq *vq, void *c, const struct tide_mbuf *m,
			      const struct virtio_net_hdr_mrg *hdr, const char **why)
{
	struct split_txc *t = c;
	uint16_t cur = t->cursor, head;
	struct vhost_desc d;
	struct split_txr r;
	struct walk w;

	if (cur == t->aidx)
		return VHOST_TX_FULL; /* no guest buffer: wait for more */
	head = vhost_load16(&vq->avail->ring[cur & vq->mask]);
	if ((*why = walk_first(vq, &w, head, &d)) != NULL)
		return VHOST_TX_FAULT;
	if (tide_likely(m->next == NULL && (d.flags & VRING_DESC_F_WRITE) &&
			d.len >= (uint32_t)vq->hdr_len + m->data_len)) {
		uint32_t len = (uint32_t)vq->hdr_len + m->data_len;
		uint8_t *dst = vhost_gpa_fast(&vq->mem, d.addr, len);

		if (tide_likely(dst != NULL)) {
			vhost_hdr_put(dst, vq->hdr_len, hdr);
			memcpy(dst + vq->hdr_len, tide_mbuf_mtod(m, const uint8_t *), m->data_len);
			used_put(vq, t->uidx, head, len);
			t->cursor = (uint16_t)(cur + 1);
			t->uidx = (uint16_t)(t->uidx + 1);
			return VHOST_TX_OK;
		}
	}
	r = tx_chains(vq, t->aidx, cur, t->uidx, m, hdr, why, head, d, w);
	if (r.rc == VHOST_TX_OK) {
		t->cursor = r.cursor;
		t->uidx = r.uidx;
	}
	return r.rc;
}

TIDE_ALWAYS_INLINE bool tx_begin(struct vhost_txq *q, void *c)
{
	struct split_txc *t = c;

	if (vq_avail(&q->fault, &q->pub.stats.errors, &q->vq, &t->aidx) == 0)
		return false;
	t->cursor = q->vq.last_avail;
	t->uidx = q->vq.used_idx;
	return true;
}

TIDE_ALWAYS_INLINE void tx_publish(struct vhost_vq *q, void *c)
{
	used_publish(q, ((struct split_txc *)c)->uidx);
}

TIDE_ALWAYS_INLINE void tx_finish(struct vhost_vq *vq, void *c)
{
	struct split_txc *t = c;

	vq->last_avail = t->cursor;
	if (t->uidx != vq->used_idx)
		used_publish(vq, t->uidx);
}

/* A packet with Tx requests (vhost_tx_ol()): out of line, off the burst's loop. */
static __attribute__((noinline)) int tx_ol(struct vhost_txq *q, void *c, struct tide_mbuf *m,
					   uint64_t *bytes, const char **why)
{
	return vhost_tx_ol(q, c, m, bytes, why, tx_pkt);
}

static const struct vhost_tx_layout split_tx = {
	.begin = tx_begin,
	.pkt = tx_pkt,
	.ol = tx_ol,
	.publish = tx_publish,
	.finish = tx_finish,
};

VHOST_LAYOUT_BURSTS(split, struct split_rxc c, struct split_txc c)
