/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost data path: the packed virtqueue layout (virtio 1.1+ section 2.8), copy mode, both
 * directions, on the copy layer (vhost_copy.h): its chain iterator, its used elements and
 * their publication, and its one-descriptor fast paths. Run when VIRTIO_F_RING_PACKED was
 * negotiated: the queue's burst (vhost_rxtx.c) jumps here when its live word says
 * VHOST_LIVE_PACKED.
 *
 * One ring of descriptors shared both ways. The driver makes a descriptor available by
 * writing it and then its flags with AVAIL = its wrap counter and USED = the inverse; the
 * device hands a buffer back by overwriting the first descriptor position of the buffer
 * with a used element (buffer id, bytes written, AVAIL = USED = its wrap counter) and then
 * moves on past every descriptor of the chain. Both counters start at 1 and flip each time
 * the position wraps. We complete every buffer in the order it was made available, so the
 * next used position is always our next avail position (vq->last_avail, vq->wrap).
 *
 *   Rx burst <- guest Tx vring (2i+1): take the available chains, copy each (minus the
 *               virtio-net header) into tide mbufs, one used element per chain (length 0);
 *               with VIRTIO_F_IN_ORDER one for the whole burst: at the burst's first
 *               position, the id of its last chain ("In-order use of descriptors": the
 *               driver takes every buffer up to that id as used and skips their
 *               descriptors; DPDK's virtio_xmit_cleanup_inorder_packed() does just that).
 *   Tx burst -> guest Rx vring (2i):   write header + packet into the guest's buffers
 *               (several buffers per packet with MRG_RXBUF, num_buffers in the first
 *               header), one used element per buffer with the bytes written. A packet's
 *               used elements are written only once all its bytes are in: a packet that
 *               does not fit (yet) leaves the ring untouched.
 *
 * Publication once per burst: the used elements are written as buffers complete, except the
 * flags of the burst's first one, stored last with release ([used]; the driver polls that
 * position and reads the rest after its acquire load). Then, when the guest has a call fd,
 * a full fence (our store before our read of its wish, as in the split ring) and the
 * driver's event area: DISABLE never, DESC (with EVENT_IDX) when the used positions written
 * passed its offset and wrap, anything else always. We poll: the device event area says
 * DISABLE, so the driver does not kick.
 *
 * [avail] our acquire load of a descriptor's flags <- the driver's release store of them
 * after the descriptor (for a chain: after all of its descriptors, the head's flags last).
 *
 * Everything in guest memory is hostile. A descriptor is read once into a local (flags
 * first, checked, then the rest) and only the copy is used: every chained descriptor must
 * itself be available in the pass it is in, a chain may not be longer than the queue, an
 * indirect table needs the feature, no next flag beside it, a size that is a multiple of 16
 * up to the queue size, and must lie wholly in one region (its entries: only the write flag
 * counts, as the spec says), the buffer id (in the chain's last descriptor) must be below
 * the queue size, the write flag must be what the direction needs, and every buffer address
 * is translated through the queue's copy of the memory table chunk by chunk. A violation
 * stops the queue with the reason; the control thread disconnects the frontend.
 */
#include <string.h>
#include <unistd.h>

#include "inline.h"
#include "vhost_copy.h"

#define PK_MAX_BUFS   64 /* receive buffers one packet may take (MRG_RXBUF); more: dropped */
/* The flags that decide a buffer's shape: one writable descriptor takes the Tx fast path. */
#define PK_TX_SHAPE   (VRING_DESC_F_WRITE | VRING_DESC_F_NEXT | VRING_DESC_F_INDIRECT)

TIDE_ALWAYS_INLINE struct vring_packed_desc *pk_ring(const struct vhost_vq *q)
{
	return (struct vring_packed_desc *)(void *)q->desc;
}

/* A bound on the chains available from @pos on, up to @n (at most the queue size): @n when
 * the n-th descriptor is available, else the run of available descriptors. */
TIDE_ALWAYS_INLINE uint16_t pk_count(const struct vhost_vq *q, uint16_t pos, bool wrap, uint16_t n)
{
	const struct vring_packed_desc *ring = pk_ring(q);
	uint16_t k = 0;

	if (n > q->num)
		n = q->num;
	if (n > 1) {
		/* The common case under load: the @n-th is available too. Only a bound (the
		 * caller reads each head again), so those between are not looked at. */
		uint16_t far = (uint16_t)(pos + n - 1);
		bool fwrap = wrap;

		if (far >= q->num) {
			far = (uint16_t)(far - q->num);
			fwrap = !wrap;
		}
		if (vring_packed_desc_avail(vhost_load16(&ring[far].flags), fwrap))
			return n;
	}
	/* Up to the end of the ring in this pass, then from its start in the next. */
	for (uint16_t want = vring_packed_avail_flags(wrap); k < n;
	     want = vring_packed_avail_flags(wrap = !wrap), pos = 0) {
		uint16_t end = (uint16_t)(q->num - pos < n - k ? q->num : pos + (n - k));

		while (pos < end &&
		       (vhost_load16(&ring[pos].flags) & VRING_PACKED_DESC_F_AVAIL_USED) == want)
			pos++, k++;
		if (pos < end)
			break;
	}
	return k;
}

TIDE_ALWAYS_INLINE void pk_step(const struct vhost_vq *q, uint16_t *pos, bool *wrap)
{
	if (++*pos == q->num) {
		*pos = 0;
		*wrap = !*wrap;
	}
}

/* Read a ring descriptor once if it is available in the pass whose used flags
 * (vring_packed_used_flags()) are @pass_flags ([avail] acquire). */
TIDE_ALWAYS_INLINE bool pk_fetch_pass_flags(const struct vring_packed_desc *s, uint16_t pass_flags,
					    struct vring_packed_desc *d)
{
	uint16_t flags = __atomic_load_n(&s->flags, __ATOMIC_ACQUIRE);

	if ((flags & VRING_PACKED_DESC_F_AVAIL_USED) != (pass_flags ^ VRING_PACKED_DESC_F_USED))
		return false;
	d->addr = __atomic_load_n(&s->addr, __ATOMIC_RELAXED);
	d->len = __atomic_load_n(&s->len, __ATOMIC_RELAXED);
	d->id = __atomic_load_n(&s->id, __ATOMIC_RELAXED);
	d->flags = flags; /* the flags checked, not a second read */
	__atomic_signal_fence(__ATOMIC_SEQ_CST); /* no re-reads of guest memory after this */
	return true;
}

/* Read a ring descriptor once if it is available in pass @wrap. */
TIDE_ALWAYS_INLINE bool pk_fetch(const struct vring_packed_desc *s, bool wrap,
				 struct vring_packed_desc *d)
{
	return pk_fetch_pass_flags(s, vring_packed_used_flags(wrap), d);
}

/* Walking one buffer (a chain of ring descriptors, or one indirect table): the chain
 * iterator pk_next(). */
struct pwalk {
	const struct vring_packed_desc *ind; /* the indirect table, or NULL */
	uint32_t ind_n, ind_i;
	uint16_t ind_flags; /* the flags an indirect entry keeps (see pk_ind_fetch()) */
	uint16_t pos;	/* ring position of the latest ring descriptor */
	bool wrap;	/* and its pass */
	uint16_t ndesc; /* ring descriptors of the chain so far */
	uint16_t id;	/* the buffer id, once the walk reached the end */
};

TIDE_ALWAYS_INLINE void pk_desc(struct vhost_desc *d, const struct vring_packed_desc *r)
{
	d->addr = r->addr;
	d->len = r->len;
	d->flags = r->flags;
}

/* An indirect entry has only the write flag. Tx needs it on every entry; Rx ignores it
 * (@ind_flags 0): DPDK's virtio PMD leaves it set on the header entry of its transmit
 * tables, and reading such a buffer harms nothing. */
TIDE_ALWAYS_INLINE void pk_ind_fetch(struct pwalk *w, struct vhost_desc *d)
{
	struct vring_packed_desc r;

	memcpy(&r, &w->ind[w->ind_i], sizeof(r));
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	pk_desc(d, &r);
	d->flags &= w->ind_flags & VRING_DESC_F_WRITE;
}

/* The buffer's head @d is an indirect descriptor (w->id already its id): walk its table. */
static int pk_indirect(struct vhost_vq *q, struct pwalk *w, struct vhost_desc *d,
		       const char **why)
{
	uint64_t contig;
	const uint8_t *tbl;
	const uint32_t esz = sizeof(struct vring_packed_desc);

	if (!q->indirect) {
		*why = "indirect descriptor without VIRTIO_F_INDIRECT_DESC";
		return -1;
	}
	if (d->flags & VRING_DESC_F_NEXT) {
		*why = "indirect descriptor with the next flag";
		return -1;
	}
	if (d->len == 0 || d->len % esz != 0 || d->len / esz > q->num) {
		*why = "indirect table size not a multiple of 16 up to the queue size";
		return -1;
	}
	tbl = vhost_gpa_host(&q->mem, d->addr, &contig);
	if (tide_unlikely(q->mem.iotlb) && (tbl == NULL || contig < d->len)) {
		*why = tbl == NULL ? vhost_why_nomap : "indirect table crosses IOTLB entries";
		return -1;
	}
	if (tbl == NULL || contig < d->len) {
		*why = "indirect table outside guest memory";
		return -1;
	}
	w->ind = (const struct vring_packed_desc *)(const void *)tbl;
	w->ind_n = d->len / esz;
	w->ind_i = 0;
	pk_ind_fetch(w, d);
	return 1;
}

/* The first descriptor of the (Tx) buffer at @pos into @d: 1, 0 when none is available
 * there, -1 with *why set. */
TIDE_ALWAYS_INLINE int pk_first(struct vhost_vq *q, struct pwalk *w, uint16_t pos, bool wrap,
				struct vhost_desc *d, const char **why)
{
	struct vring_packed_desc r;

	w->ind = NULL;
	w->ind_flags = VRING_DESC_F_WRITE;
	w->pos = pos;
	w->wrap = wrap;
	w->ndesc = 1;
	if (!pk_fetch(&pk_ring(q)[pos], wrap, &r))
		return 0;
	pk_desc(d, &r);
	w->id = r.id;
	if (tide_unlikely(d->flags & VRING_DESC_F_INDIRECT))
		return pk_indirect(q, w, d, why);
	return 1;
}

/* The buffer id of a walk that reached its end. */
TIDE_ALWAYS_INLINE bool pk_id_ok(const struct vhost_vq *q, const struct pwalk *w, const char **why)
{
	if (tide_likely(w->id < q->num))
		return true;
	*why = "buffer id beyond the queue size";
	return false;
}

/* The chain iterator (vhost_next_fn; @walk: a struct pwalk, or a struct that starts with
 * one). At the end of the buffer, its id is checked. */
TIDE_ALWAYS_INLINE int pk_next(struct vhost_vq *q, void *walk, struct vhost_desc *d,
			       const char **why)
{
	struct pwalk *w = walk;
	struct vring_packed_desc r;

	if (w->ind != NULL) {
		if (++w->ind_i >= w->ind_n)
			return pk_id_ok(q, w, why) ? 0 : -1;
		pk_ind_fetch(w, d);
		return 1;
	}
	if (!(d->flags & VRING_DESC_F_NEXT))
		return pk_id_ok(q, w, why) ? 0 : -1;
	if (tide_unlikely(++w->ndesc > q->num)) {
		*why = "descriptor chain longer than the queue";
		return -1;
	}
	pk_step(q, &w->pos, &w->wrap);
	if (tide_unlikely(!pk_fetch(&pk_ring(q)[w->pos], w->wrap, &r))) {
		*why = "chained descriptor not marked available";
		return -1;
	}
	pk_desc(d, &r);
	if (tide_unlikely(d->flags & VRING_DESC_F_INDIRECT)) {
		*why = "indirect descriptor inside a chain";
		return -1;
	}
	w->id = r.id; /* the id of a chain is in its last descriptor */
	return 1;
}

/* ---- publication ---- */

/* The used elements of one burst: the first one's flags wait for pk_publish(). */
struct pk_burst_used {
	bool pending;
	uint16_t pos, flags; /* of the first used element not yet published */
	uint16_t old_pos;    /* where the used elements of this publication start */
	bool old_wrap;
};

/* A used element at @pos in the pass whose used flags are @flags. */
TIDE_ALWAYS_INLINE void pk_used_pass_flags(struct vhost_vq *q, struct pk_burst_used *burst_used,
					   uint16_t pos, uint16_t flags, uint16_t id, uint32_t len)
{
	struct vring_packed_desc *e = &pk_ring(q)[pos];

	__atomic_store_n(&e->id, id, __ATOMIC_RELAXED);
	__atomic_store_n(&e->len, len, __ATOMIC_RELAXED);
	if (!burst_used->pending) {
		burst_used->pending = true;
		burst_used->pos = pos;
		burst_used->flags = flags;
	} else {
		__atomic_store_n(&e->flags, flags, __ATOMIC_RELAXED);
	}
}

TIDE_ALWAYS_INLINE void pk_used(struct vhost_vq *q, struct pk_burst_used *burst_used, uint16_t pos,
				bool wrap, uint16_t id, uint32_t len)
{
	pk_used_pass_flags(q, burst_used, pos, vring_packed_used_flags(wrap), id, len);
}

/* Did the driver ask to hear about the used positions [old, new)? */
static bool pk_want_call(const struct vhost_vq *q, uint16_t old_pos, bool old_wrap,
			 uint16_t new_pos, bool new_wrap)
{
	const struct vring_packed_event *ev = (const struct vring_packed_event *)(void *)q->avail;
	uint16_t flags;

	/* Our store of the used flags before our load of the guest's wish (see the top). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	/* Acquire: the driver writes off_wrap before the flags that make it count. */
	flags = __atomic_load_n(&ev->flags, __ATOMIC_ACQUIRE);
	if (flags == VRING_PACKED_EVENT_F_DISABLE)
		return false;
	if (flags != VRING_PACKED_EVENT_F_DESC || !q->event_idx)
		return true;
	return vring_packed_need_event(vhost_load16(&ev->off_wrap), old_pos, old_wrap, new_pos,
				       new_wrap, q->num);
}

static void pk_publish(struct vhost_vq *q, struct pk_burst_used *burst_used, uint16_t new_pos,
		       bool new_wrap)
{
	uint64_t one = 1;

	/* [used] release: the buffers and the other used elements are written before. */
	__atomic_store_n(&pk_ring(q)[burst_used->pos].flags, burst_used->flags, __ATOMIC_RELEASE);
	burst_used->pending = false;
	if (q->callfd >= 0 &&
	    pk_want_call(q, burst_used->old_pos, burst_used->old_wrap, new_pos, new_wrap) &&
	    write(q->callfd, &one, sizeof(one)) < 0) {
		/* Non-blocking (vhost_vring.c): a full counter already wakes the guest. */
		tide_stat_add(&q->call_errors, 1);
	}
	burst_used->old_pos = new_pos;
	burst_used->old_wrap = new_wrap;
}

/* ---- Rx: guest Tx vring -> mbufs ---- */

/* The Rx cursor: the position of the next buffer and its pass, where the latest buffer
 * ended (its last ring descriptor and pass), the burst's used elements (apart: their
 * address goes to pk_publish(), the cursor's stays in registers). */
struct pk_rxc {
	uint16_t pos, pass_flags;
	uint16_t end, end_pass_flags;
	struct pk_burst_used *burst_used;
};

/* Where a buffer ended (its last ring descriptor and pass), its id, and how it went. */
struct pk_end {
	int rc;
	uint16_t pos, id;
	bool wrap;
};

/* The buffer at @pos (first descriptor read into @d) in the general case: chains, indirect
 * tables, frames over several mbufs. Out of line; the result in registers. */
static struct pk_end pk_rx_slow(struct vhost_rxq *q, uint16_t pos, bool wrap,
				struct vring_packed_desc d, struct tide_mbuf *m,
				struct virtio_net_hdr_mrg *h, const char **why)
{
	struct pk_end e = {.rc = VHOST_RX_FAULT};
	struct pwalk w = {.pos = pos, .wrap = wrap, .ndesc = 1, .id = d.id, .ind_flags = 0};
	struct vhost_desc vd;

	pk_desc(&vd, &d);
	if (!(vd.flags & VRING_DESC_F_INDIRECT) || pk_indirect(&q->vq, &w, &vd, why) > 0)
		e.rc = vhost_rx_buf(q, &w, pk_next, vd, m, h, why);
	e.pos = w.pos;
	e.wrap = w.wrap;
	e.id = w.id;
	return e;
}

/* A bound on the buffers available from here (the mbufs to take), up to @n. */
TIDE_ALWAYS_INLINE unsigned rx_count(struct vhost_rxq *q, void *c, uint16_t n)
{
	struct pk_rxc *r = c;
	struct vhost_vq *vq = &q->vq;
	const struct vring_packed_desc *ring = pk_ring(vq);
	struct vhost_rx_pf pf;
	unsigned nb;

	r->pos = vq->last_avail;
	r->pass_flags = vring_packed_used_flags(vq->wrap); /* the pass (wrap again at the end) */
	r->burst_used->pending = false;
	r->burst_used->old_pos = vq->last_avail;
	r->burst_used->old_wrap = vq->wrap;
	nb = pk_count(vq, vq->last_avail, vq->wrap, n);
	/* The frames' first lines, for the whole burst (vhost_rx_prefetch()). */
	pf = vhost_rx_prefetch_begin(vq);
	for (unsigned k = 0, pos = vq->last_avail; k < nb; k++) {
		vhost_rx_prefetch(&pf, __atomic_load_n(&ring[pos].addr, __ATOMIC_RELAXED));
		pos = pos + 1 == vq->num ? 0 : pos + 1;
	}
	return nb;
}

TIDE_ALWAYS_INLINE int rx_buf(struct vhost_rxq *q, void *c, struct tide_mbuf *m, uint16_t *idp,
			      struct virtio_net_hdr_mrg *h, const bool ol, const char **why)
{
	struct pk_rxc *r = c;
	struct vhost_vq *vq = &q->vq;
	struct vring_packed_desc d;
	uint32_t skip = vq->hdr_len;
	uint16_t id;
	const uint8_t *src;
	int rc = VHOST_RX_OK;

	/* Each head is checked again: pk_count() gave a bound. */
	if (!pk_fetch_pass_flags(&pk_ring(vq)[r->pos], r->pass_flags, &d))
		return VHOST_RX_NONE;
	tide_mbuf_reset(m);
	id = d.id;
	r->end = r->pos;
	r->end_pass_flags = r->pass_flags;
	/* The common case inline: one readable descriptor, header and frame in the region of
	 * the previous translation, the frame fits one mbuf. */
	if (tide_likely(!(d.flags & (VRING_DESC_F_NEXT | VRING_DESC_F_WRITE |
				     VRING_DESC_F_INDIRECT)) &&
			d.len - skip - 1u < q->fast_max && /* skip < d.len <= skip + max */
			(src = vhost_gpa_fast(&vq->mem, d.addr, d.len)) != NULL)) {
		uint16_t k = (uint16_t)(d.len - skip);

		if (tide_unlikely(id >= vq->num)) {
			*why = "buffer id beyond the queue size";
			rc = VHOST_RX_FAULT;
		}
		if (ol) /* flags .. csum_offset: every header has them */
			memcpy(h, src, offsetof(struct virtio_net_hdr_mrg, num_buffers));
		memcpy(tide_mbuf_mtod(m, uint8_t *), src + skip, k);
		m->data_len = k;
		m->pkt_len = k;
	} else {
		struct pk_end e =
			pk_rx_slow(q, r->pos, r->pass_flags != 0, d, m, ol ? h : NULL, why);

		rc = e.rc;
		r->end = e.pos;
		r->end_pass_flags = vring_packed_used_flags(e.wrap);
		id = e.id;
	}
	*idp = id;
	return rc;
}

TIDE_ALWAYS_INLINE void rx_used(struct vhost_vq *q, void *c, uint16_t id)
{
	struct pk_rxc *r = c;

	pk_used_pass_flags(q, r->burst_used, r->pos, r->pass_flags, id, 0);
}

TIDE_ALWAYS_INLINE void rx_step(struct vhost_vq *q, void *c)
{
	struct pk_rxc *r = c;

	r->pos = r->end;
	r->pass_flags = r->end_pass_flags;
	if (++r->pos == q->num) {
		r->pos = 0;
		r->pass_flags ^= VRING_PACKED_DESC_F_AVAIL_USED;
	}
}

TIDE_ALWAYS_INLINE void rx_publish(struct vhost_vq *q, void *c)
{
	struct pk_rxc *r = c;

	pk_publish(q, r->burst_used, r->pos, r->pass_flags != 0);
}

/* In order: one used element for the whole burst, at its first position, with the id of its
 * last buffer (see the top). */
TIDE_ALWAYS_INLINE void rx_finish(struct vhost_vq *vq, void *c, bool batch, uint16_t last_id)
{
	struct pk_rxc *r = c;
	struct pk_burst_used *bu = r->burst_used;
	uint16_t pos = r->pos;
	bool wrap = r->pass_flags != 0;

	if (batch && (pos != bu->old_pos || wrap != bu->old_wrap))
		pk_used(vq, bu, bu->old_pos, bu->old_wrap, last_id, 0);
	if (bu->pending)
		pk_publish(vq, bu, pos, wrap);
	vq->last_avail = vq->used_idx = pos;
	vq->wrap = wrap;
}

static const struct vhost_rx_layout packed_rx = {
	.count = rx_count, .buf = rx_buf, .used = rx_used,
	.step = rx_step, .publish = rx_publish, .finish = rx_finish,
};

/* ---- Tx: mbufs -> guest Rx vring ---- */

/* The Tx cursor: the position of the next buffer and its pass, the burst's used elements
 * (apart, as for Rx). */
struct pk_txc {
	uint16_t pos, pass_flags;
	struct pk_burst_used *burst_used;
};

/* One receive buffer a packet took, its used element written once the packet is whole. */
struct pk_ubuf {
	uint16_t pos, id;
	bool wrap;
	uint32_t len;
};

/* The walk of the general case: the buffer, and the packet's buffers so far. */
struct pk_txw {
	struct pwalk w; /* first: pk_next() takes the struct as a struct pwalk */
	struct pk_burst_used *burst_used;
	uint16_t head;	/* where the buffer being walked starts */
	bool hwrap;	/* and its pass */
	uint16_t nbuf;
	uint32_t ndesc; /* ring descriptors of the buffers so far */
	struct pk_ubuf u[PK_MAX_BUFS];
};

TIDE_ALWAYS_INLINE int txw_end(struct vhost_vq *vq, void *walk, uint32_t wrote)
{
	struct pk_txw *tw = walk;

	if (tw->nbuf == PK_MAX_BUFS)
		return VHOST_TX_DROP; /* more receive buffers than one packet may take */
	tw->u[tw->nbuf++] = (struct pk_ubuf){
		.pos = tw->head, .id = tw->w.id, .wrap = tw->hwrap, .len = wrote};
	tw->ndesc += tw->w.ndesc;
	tw->head = tw->w.pos;
	tw->hwrap = tw->w.wrap;
	pk_step(vq, &tw->head, &tw->hwrap);
	return VHOST_TX_OK;
}

TIDE_ALWAYS_INLINE int txw_first(struct vhost_vq *vq, void *walk, struct vhost_desc *d,
				 const char **why)
{
	struct pk_txw *tw = walk;
	int rc;

	if (tw->ndesc >= vq->num)
		return VHOST_TX_DROP; /* larger than the whole ring could ever hold */
	rc = pk_first(vq, &tw->w, tw->head, tw->hwrap, d, why);
	if (rc <= 0) /* none: out of guest buffers, wait for more */
		return rc == 0 ? VHOST_TX_FULL : VHOST_TX_FAULT;
	return VHOST_TX_OK;
}

/* The packet is whole: the used elements of its buffers. */
TIDE_ALWAYS_INLINE void txw_commit(struct vhost_vq *vq, void *walk)
{
	struct pk_txw *tw = walk;

	for (unsigned b = 0; b < tw->nbuf; b++)
		pk_used(vq, tw->burst_used, tw->u[b].pos, tw->u[b].wrap, tw->u[b].id, tw->u[b].len);
}

static const struct vhost_tx_chain packed_tx_chain = {
	.next = pk_next,
	.whole = true, /* the id is in the buffer's last descriptor; the next starts after it */
	.end = txw_end,
	.first = txw_first,
	.commit = txw_commit,
};

/* How the general case went and, on VHOST_TX_OK, where the cursor moves. */
struct pk_txr {
	int rc;
	uint16_t pos;
	bool wrap;
};

/* The general case of tx_pkt() for the buffer at @pos in pass @wrap, its first descriptor
 * read into @d. Out of line; the position goes in and out by value. */
static struct pk_txr pk_tx_slow(struct vhost_vq *vq, struct pk_burst_used *burst_used,
				const struct tide_mbuf *m, const struct virtio_net_hdr_mrg *hdr,
				uint16_t pos, bool wrap, const char **why,
				struct vring_packed_desc d)
{
	struct pk_txr r = {.rc = VHOST_TX_FAULT};
	struct pk_txw tw;
	struct vhost_desc vd;

	tw.w = (struct pwalk){.pos = pos, .wrap = wrap, .ndesc = 1, .id = d.id,
			      .ind_flags = VRING_DESC_F_WRITE};
	tw.burst_used = burst_used;
	tw.head = pos;
	tw.hwrap = wrap;
	tw.nbuf = 0;
	tw.ndesc = 0;
	pk_desc(&vd, &d);
	if ((vd.flags & VRING_DESC_F_INDIRECT) && pk_indirect(vq, &tw.w, &vd, why) < 0)
		return r;
	r.rc = vhost_tx_bufs(vq, m, &tw, vd, &packed_tx_chain, hdr, why);
	r.pos = tw.head; /* where the next buffer starts */
	r.wrap = tw.hwrap;
	return r;
}

/* Packet @m into guest buffers from the cursor on (VHOST_TX_OK: the cursor moved past them,
 * their used elements written, not yet published; else the ring is untouched). Inline: the
 * common case, one segment into one descriptor in the region of the previous translation. */
TIDE_ALWAYS_INLINE int tx_pkt(struct vhost_vq *vq, void *cp, const struct tide_mbuf *m,
			      const struct virtio_net_hdr_mrg *hdr, const char **why)
{
	struct pk_txc *c = cp;
	uint32_t len = (uint32_t)vq->hdr_len + m->data_len;
	struct vring_packed_desc d;
	struct pk_txr r;
	uint8_t *dst;

	if (!pk_fetch_pass_flags(&pk_ring(vq)[c->pos], c->pass_flags, &d))
		return VHOST_TX_FULL;
	if (tide_likely(m->next == NULL &&
			(d.flags & PK_TX_SHAPE) == VRING_DESC_F_WRITE &&
			d.len >= len && (dst = vhost_gpa_fast(&vq->mem, d.addr, len)) != NULL)) {
		if (tide_unlikely(d.id >= vq->num)) {
			*why = "buffer id beyond the queue size";
			return VHOST_TX_FAULT;
		}
		vhost_hdr_put(dst, vq->hdr_len, hdr);
		memcpy(dst + vq->hdr_len, tide_mbuf_mtod(m, const uint8_t *), m->data_len);
		pk_used_pass_flags(vq, c->burst_used, c->pos, c->pass_flags, d.id, len);
		if (++c->pos == vq->num) {
			c->pos = 0;
			c->pass_flags ^= VRING_PACKED_DESC_F_AVAIL_USED;
		}
		return VHOST_TX_OK;
	}
	r = pk_tx_slow(vq, c->burst_used, m, hdr, c->pos, c->pass_flags != 0, why, d);
	if (r.rc == VHOST_TX_OK) {
		c->pos = r.pos;
		c->pass_flags = vring_packed_used_flags(r.wrap);
	}
	return r.rc;
}

TIDE_ALWAYS_INLINE bool tx_begin(struct vhost_txq *q, void *cp)
{
	struct pk_txc *c = cp;
	struct vhost_vq *vq = &q->vq;

	if (!vring_packed_desc_avail(vhost_load16(&pk_ring(vq)[vq->last_avail].flags), vq->wrap))
		return false;
	c->pos = vq->last_avail;
	c->pass_flags = vring_packed_used_flags(vq->wrap); /* the pass (wrap again at the end) */
	c->burst_used->pending = false;
	c->burst_used->old_pos = vq->last_avail;
	c->burst_used->old_wrap = vq->wrap;
	return true;
}

TIDE_ALWAYS_INLINE void tx_publish(struct vhost_vq *q, void *cp)
{
	struct pk_txc *c = cp;

	pk_publish(q, c->burst_used, c->pos, c->pass_flags != 0);
}

TIDE_ALWAYS_INLINE void tx_finish(struct vhost_vq *vq, void *cp)
{
	struct pk_txc *c = cp;
	bool wrap = c->pass_flags != 0;

	if (c->burst_used->pending)
		pk_publish(vq, c->burst_used, c->pos, wrap);
	vq->last_avail = vq->used_idx = c->pos;
	vq->wrap = wrap;
}

/* A packet with Tx requests (vhost_tx_ol()): out of line, off the burst's loop. */
static __attribute__((noinline)) int tx_ol(struct vhost_txq *q, void *c, struct tide_mbuf *m,
					   uint64_t *bytes, const char **why)
{
	return vhost_tx_ol(q, c, m, bytes, why, tx_pkt);
}

static const struct vhost_tx_layout packed_tx = {
	.begin = tx_begin, .pkt = tx_pkt, .ol = tx_ol, .publish = tx_publish, .finish = tx_finish,
};

/* Each burst's used elements stand apart from its cursor (struct pk_burst_used). */
#define PK_RXC struct pk_burst_used burst_used; struct pk_rxc c = {.burst_used = &burst_used}
#define PK_TXC struct pk_burst_used burst_used; struct pk_txc c = {.burst_used = &burst_used}
VHOST_LAYOUT_BURSTS(packed, PK_RXC, PK_TXC)
