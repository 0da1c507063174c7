/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost data path: packed virtqueues (virtio 1.1+ section 2.8), copy mode, both directions,
 * run when VIRTIO_F_RING_PACKED was negotiated: the queue's burst (vhost_split.c) jumps here
 * when its live word says VHOST_LIVE_PACKED.
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

TIDE_ALWAYS_INLINE uint16_t load16(const uint16_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
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
		if (vring_packed_desc_avail(load16(&ring[far].flags), fwrap))
			return n;
	}
	/* Up to the end of the ring in this pass, then from its start in the next. */
	for (uint16_t want = vring_packed_avail_flags(wrap); k < n;
	     want = vring_packed_avail_flags(wrap = !wrap), pos = 0) {
		uint16_t end = (uint16_t)(q->num - pos < n - k ? q->num : pos + (n - k));

		while (pos < end && (load16(&ring[pos].flags) & VRING_PACKED_DESC_F_AVAIL_USED) == want)
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

/* Walking one buffer (a chain of ring descriptors, or one indirect table). */
struct pwalk {
	const struct vring_packed_desc *ind; /* the indirect table, or NULL */
	uint32_t ind_n, ind_i;
	uint16_t pos;	/* ring position of the latest ring descriptor */
	bool wrap;	/* and its pass */
	uint16_t ndesc; /* ring descriptors of the chain so far */
	uint16_t id;	/* the buffer id, once the walk reached the end */
};

TIDE_ALWAYS_INLINE void pk_ind_fetch(struct pwalk *w, struct vring_packed_desc *d)
{
	memcpy(d, &w->ind[w->ind_i], sizeof(*d));
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	d->flags &= VRING_DESC_F_WRITE; /* the only flag an indirect entry has */
}

static int pk_indirect(struct vhost_vq *q, struct pwalk *w, struct vring_packed_desc *d,
		       const char **why)
{
	uint64_t contig;
	const uint8_t *tbl;

	if (!q->indirect) {
		*why = "indirect descriptor without VIRTIO_F_INDIRECT_DESC";
		return -1;
	}
	if (d->flags & VRING_DESC_F_NEXT) {
		*why = "indirect descriptor with the next flag";
		return -1;
	}
	if (d->len == 0 || d->len % sizeof(*d) != 0 || d->len / sizeof(*d) > q->num) {
		*why = "indirect table size not a multiple of 16 up to the queue size";
		return -1;
	}
	tbl = vhost_gpa_host(&q->mem, d->addr, &contig);
	if (tbl == NULL || contig < d->len) {
		*why = "indirect table outside guest memory";
		return -1;
	}
	w->id = d->id;
	w->ind = (const struct vring_packed_desc *)(const void *)tbl;
	w->ind_n = d->len / sizeof(*d);
	w->ind_i = 0;
	pk_ind_fetch(w, d);
	return 1;
}

/* The first descriptor of the buffer at @pos into @d: 1, 0 when none is available there,
 * -1 with *why set. */
TIDE_ALWAYS_INLINE int pk_first(struct vhost_vq *q, struct pwalk *w, uint16_t pos, bool wrap,
				struct vring_packed_desc *d, const char **why)
{
	w->ind = NULL;
	w->pos = pos;
	w->wrap = wrap;
	w->ndesc = 1;
	if (!pk_fetch(&pk_ring(q)[pos], wrap, d))
		return 0;
	if (tide_unlikely(d->flags & VRING_DESC_F_INDIRECT))
		return pk_indirect(q, w, d, why);
	w->id = d->id;
	return 1;
}

/* The next descriptor of the buffer into @d: 1, 0 at its end (w->id set), -1 with *why. */
TIDE_ALWAYS_INLINE int pk_next(struct vhost_vq *q, struct pwalk *w, struct vring_packed_desc *d,
			       const char **why)
{
	if (w->ind != NULL) {
		if (++w->ind_i >= w->ind_n)
			return 0;
		pk_ind_fetch(w, d);
		return 1;
	}
	if (!(d->flags & VRING_DESC_F_NEXT))
		return 0;
	if (tide_unlikely(++w->ndesc > q->num)) {
		*why = "descriptor chain longer than the queue";
		return -1;
	}
	pk_step(q, &w->pos, &w->wrap);
	if (tide_unlikely(!pk_fetch(&pk_ring(q)[w->pos], w->wrap, d))) {
		*why = "chained descriptor not marked available";
		return -1;
	}
	if (tide_unlikely(d->flags & VRING_DESC_F_INDIRECT)) {
		*why = "indirect descriptor inside a chain";
		return -1;
	}
	w->id = d->id; /* the id of a chain is in its last descriptor */
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
	return vring_packed_need_event(load16(&ev->off_wrap), old_pos, old_wrap, new_pos, new_wrap,
				       q->num);
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

enum { RX_OK, RX_DROP, RX_NOMBUF, RX_FAULT };

/* The general case of pk_rx_buf(): chains, indirect tables, frames over several mbufs. */
static int pk_rx_bufs(struct vhost_rxq *q, struct pwalk *w, struct vring_packed_desc d,
		      struct tide_mbuf *m, const char **why)
{
	struct vhost_vq *vq = &q->vq;
	struct tide_mbuf *cur = m;
	uint32_t skip = vq->hdr_len;
	uint64_t total = 0;
	int rc;

	do {
		/* Not for indirect entries: DPDK's virtio PMD leaves the write flag set on the
		 * header entry of its transmit tables (reading such a buffer harms nothing). */
		if (tide_unlikely((d.flags & VRING_DESC_F_WRITE) && w->ind == NULL)) {
			*why = "device-writable descriptor in a transmit chain";
			return RX_FAULT;
		}
		rc = vhost_copy_in(&vq->mem, q->pool, q->dataroom, m, &cur, d.addr, d.len, &skip,
				   &total, VHOST_MAX_PKT + vq->hdr_len, why);
		if (tide_unlikely(rc != 0))
			return rc < 0 ? RX_FAULT : RX_NOMBUF;
	} while ((rc = pk_next(vq, w, &d, why)) > 0);
	if (rc < 0 || !pk_id_ok(vq, w, why))
		return RX_FAULT;
	if (tide_unlikely(skip != 0 || total > VHOST_MAX_PKT + vq->hdr_len))
		return RX_DROP; /* shorter than the header, or longer than we take */
	return RX_OK;
}

/* Where a buffer ended (its last ring descriptor and pass), its id, and how it went. */
struct pk_end {
	int rc;
	uint16_t pos, id;
	bool wrap;
};

/* The buffer at @pos (first descriptor read into @d) in the general case: chains, indirect
 * tables, frames over several mbufs. Out of line; the result in registers. */
static struct pk_end pk_rx_slow(struct vhost_rxq *q, uint16_t pos, bool wrap,
				struct vring_packed_desc d, struct tide_mbuf *m, const char **why)
{
	struct pk_end e = {.rc = RX_FAULT};
	struct pwalk w = {.pos = pos, .wrap = wrap, .ndesc = 1, .id = d.id};

	if (!(d.flags & VRING_DESC_F_INDIRECT) || pk_indirect(&q->vq, &w, &d, why) > 0)
		e.rc = pk_rx_bufs(q, &w, d, m, why);
	e.pos = w.pos;
	e.wrap = w.wrap;
	e.id = w.id;
	return e;
}

uint16_t vhost_packed_rx(struct tide_rxq *pub, struct tide_mbuf **pkts, uint16_t n)
{
	struct vhost_rxq *q = (struct vhost_rxq *)pub;
	struct vhost_vq *vq = &q->vq;
	uint64_t bytes = 0, dropped = 0;
	const char *why = NULL;
	struct pk_burst_used burst_used;
	uint16_t pos, i = 0, nb, last_id = 0, pass_flags;
	bool wrap, used_per_pkt, batch;

	pos = vq->last_avail;
	wrap = vq->wrap;
	/* A bound on the chains available from here (the mbufs to take), up to @n. */
	nb = pk_count(vq, pos, wrap, n);
	if (nb == 0) {
		vhost_leave(&q->busy);
		return 0;
	}
	if (tide_pool_get_bulk(q->pool, (void **)pkts, nb) < 0) {
		tide_stat_add(&pub->stats.nombuf, 1);
		vhost_leave(&q->busy);
		return 0;
	}
	burst_used.pending = false;
	burst_used.old_pos = pos;
	burst_used.old_wrap = wrap;
	used_per_pkt = vq->used_per_pkt;
	/* In order: one used element for the whole burst (see the top). */
	batch = vq->in_order && !used_per_pkt;
	pass_flags = vring_packed_used_flags(wrap); /* the pass, in the loop (wrap again after it) */
	/* At most @nb chains; each head is checked again (pk_fetch_pass_flags()). */
	for (uint16_t t = 0; t < nb; t++) {
		struct tide_mbuf *m = pkts[i];
		struct vring_packed_desc d;
		uint32_t skip = vq->hdr_len;
		uint16_t id, end = pos, end_pass_flags = pass_flags;
		const uint8_t *src;
		int rc = RX_OK;

		if (!pk_fetch_pass_flags(&pk_ring(vq)[pos], pass_flags, &d))
			break;
		tide_mbuf_reset(m);
		id = d.id;
		/* The common case inline: one readable descriptor, header and frame in the
		 * region of the previous translation, the frame fits one mbuf. */
		if (tide_likely(!(d.flags & (VRING_DESC_F_NEXT | VRING_DESC_F_WRITE |
					     VRING_DESC_F_INDIRECT)) &&
				d.len - skip - 1u < q->fast_max && /* skip < d.len <= skip + max */
				(src = vhost_gpa_fast(&vq->mem, d.addr, d.len)) != NULL)) {
			uint16_t k = (uint16_t)(d.len - skip);

			if (tide_unlikely(id >= vq->num)) {
				why = "buffer id beyond the queue size";
				rc = RX_FAULT;
			}
			memcpy(tide_mbuf_mtod(m, uint8_t *), src + skip, k);
			m->data_len = k;
			m->pkt_len = k;
		} else {
			struct pk_end e = pk_rx_slow(q, pos, pass_flags != 0, d, m, &why);

			rc = e.rc;
			end = e.pos;
			end_pass_flags = vring_packed_used_flags(e.wrap);
			id = e.id;
		}
		if (tide_unlikely(rc != RX_OK)) {
			tide_mbuf_free(m->next);
			tide_mbuf_reset(m);
			if (rc == RX_NOMBUF) {
				tide_stat_add(&pub->stats.nombuf, 1);
				break;
			}
			if (rc == RX_FAULT) {
				vhost_fault(&q->fs, &pub->stats.errors, why);
				break;
			}
			dropped++; /* consumed, counted, the mbuf reused for the next chain */
		} else {
			m->port = q->port_id;
			bytes += m->pkt_len;
			i++;
		}
		if (batch)
			last_id = id;
		else
			pk_used_pass_flags(vq, &burst_used, pos, pass_flags, id, 0);
		pos = end;
		pass_flags = end_pass_flags;
		if (++pos == vq->num) {
			pos = 0;
			pass_flags ^= VRING_PACKED_DESC_F_AVAIL_USED;
		}
		if (used_per_pkt)
			pk_publish(vq, &burst_used, pos, pass_flags != 0);
	}
	wrap = pass_flags != 0;
	if (i < nb)
		tide_pool_put_bulk(q->pool, (void **)&pkts[i], nb - i);
	if (batch && (pos != burst_used.old_pos || wrap != burst_used.old_wrap))
		pk_used(vq, &burst_used, burst_used.old_pos, burst_used.old_wrap, last_id, 0);
	if (burst_used.pending)
		pk_publish(vq, &burst_used, pos, wrap);
	vq->last_avail = vq->used_idx = pos;
	vq->wrap = wrap;
	if (dropped)
		tide_stat_add(&pub->stats.errors, dropped);
	tide_stat_burst(&pub->stats, i, bytes);
	vhost_leave(&q->busy);
	return i;
}


/* ---- Tx: mbufs -> guest Rx vring ---- */

enum { TX_OK, TX_FULL, TX_DROP, TX_FAULT };

/* One receive buffer a packet took, its used element written once the packet is whole. */
struct pk_ubuf {
	uint16_t pos, id;
	bool wrap;
	uint32_t len;
};

/*
 * The general case of pk_tx_pkt(): buffers of any shape, packets of any number of segments,
 * several buffers per packet with MRG_RXBUF. The first buffer (at *@pos, *@wrap) is already
 * read into @d and @w.
 */
static int pk_tx_bufs(struct vhost_vq *vq, struct pk_burst_used *burst_used,
		      const struct tide_mbuf *m, uint16_t *pos, bool *wrap, const char **why,
		      struct vring_packed_desc d, struct pwalk w)
{
	struct pk_ubuf u[PK_MAX_BUFS];
	struct vhost_src s;
	uint16_t head = *pos, nbuf = 0;
	uint32_t ndesc = 0;
	bool hwrap = *wrap;

	vhost_src_init(&s, m, vq->hdr_len);

	for (;;) {
		uint32_t wrote = 0;
		int rc;

		/* The whole buffer is walked even when the packet ends early: its id is in its
		 * last descriptor, and the next buffer starts after it. */
		do {
			if (tide_unlikely(!(d.flags & VRING_DESC_F_WRITE))) {
				*why = "device-readable descriptor in a receive chain";
				return TX_FAULT;
			}
			if (vhost_copy_out(&vq->mem, &s, vq->hdr_len, d.addr, d.len, &wrote, why) < 0)
				return TX_FAULT;
		} while ((rc = pk_next(vq, &w, &d, why)) > 0);
		if (rc < 0 || !pk_id_ok(vq, &w, why))
			return TX_FAULT;
		if (nbuf == PK_MAX_BUFS)
			return TX_DROP; /* more receive buffers than one packet may take */
		u[nbuf++] = (struct pk_ubuf){.pos = head, .id = w.id, .wrap = hwrap, .len = wrote};
		ndesc += w.ndesc;
		head = w.pos;
		hwrap = w.wrap;
		pk_step(vq, &head, &hwrap);
		if (!s.more)
			break;
		if (!vq->mrg)
			return TX_DROP; /* larger than one receive buffer */
		if (ndesc >= vq->num)
			return TX_DROP; /* larger than the whole ring could ever hold */
		rc = pk_first(vq, &w, head, hwrap, &d, why);
		if (rc <= 0)
			return rc == 0 ? TX_FULL : TX_FAULT; /* out of guest buffers: wait for more */
	}
	vhost_hdr_nbuf(s.hdr_at, nbuf);
	for (unsigned b = 0; b < nbuf; b++)
		pk_used(vq, burst_used, u[b].pos, u[b].wrap, u[b].id, u[b].len);
	*pos = head;
	*wrap = hwrap;
	return TX_OK;
}

/* pk_tx_bufs() for the buffer at *@pos, its first descriptor read into @d. Out of line. */
static int pk_tx_slow(struct vhost_vq *vq, struct pk_burst_used *burst_used,
		      const struct tide_mbuf *m, uint16_t *pos, bool *wrap, const char **why,
		      struct vring_packed_desc d)
{
	struct pwalk w = {.pos = *pos, .wrap = *wrap, .ndesc = 1, .id = d.id};

	if ((d.flags & VRING_DESC_F_INDIRECT) && pk_indirect(vq, &w, &d, why) < 0)
		return TX_FAULT;
	return pk_tx_bufs(vq, burst_used, m, pos, wrap, why, d, w);
}

/*
 * Copy packet @m into guest buffers from *@pos on. On TX_OK the position moved past what the
 * packet took and its used elements are written (not yet published); otherwise the ring is
 * untouched. Inline: the common case, a one-segment packet into one descriptor in the region
 * of the previous translation.
 */
TIDE_ALWAYS_INLINE int pk_tx_pkt(struct vhost_vq *vq, struct pk_burst_used *burst_used,
				 const struct tide_mbuf *m, uint16_t *pos, uint16_t *pass_flags,
				 const char **why)
{
	uint32_t len = (uint32_t)vq->hdr_len + m->data_len;
	struct vring_packed_desc d;
	uint8_t *dst;
	bool wrap;
	int rc;

	if (!pk_fetch_pass_flags(&pk_ring(vq)[*pos], *pass_flags, &d))
		return TX_FULL;
	if (tide_likely(m->next == NULL &&
			(d.flags & PK_TX_SHAPE) == VRING_DESC_F_WRITE &&
			d.len >= len && (dst = vhost_gpa_fast(&vq->mem, d.addr, len)) != NULL)) {
		if (tide_unlikely(d.id >= vq->num)) {
			*why = "buffer id beyond the queue size";
			return TX_FAULT;
		}
		vhost_hdr_put(dst, vq->hdr_len);
		memcpy(dst + vq->hdr_len, tide_mbuf_mtod(m, const uint8_t *), m->data_len);
		pk_used_pass_flags(vq, burst_used, *pos, *pass_flags, d.id, len);
		if (++*pos == vq->num) {
			*pos = 0;
			*pass_flags ^= VRING_PACKED_DESC_F_AVAIL_USED;
		}
		return TX_OK;
	}
	wrap = *pass_flags != 0;
	rc = pk_tx_slow(vq, burst_used, m, pos, &wrap, why, d);
	*pass_flags = vring_packed_used_flags(wrap);
	return rc;
}

TIDE_ALWAYS_INLINE uint16_t pk_tx_burst(struct tide_txq *pub, struct tide_mbuf **pkts, uint16_t n,
					const enum vhost_txfree f)
{
	struct vhost_txq *q = (struct vhost_txq *)pub;
	struct vhost_vq *vq = &q->vq;
	struct txc *t = &q->txc;
	uint64_t bytes = 0, dropped = 0;
	const char *why = NULL;
	struct pk_burst_used burst_used;
	uint16_t pos, i, k;
	unsigned room;
	uint16_t pass_flags;
	bool wrap, used_per_pkt;

	pos = vq->last_avail;
	wrap = vq->wrap;
	if (!vring_packed_desc_avail(load16(&pk_ring(vq)[pos].flags), wrap)) {
		vhost_leave(&q->busy); /* no guest buffer */
		return 0;
	}
	room = txc_room_sync(t, n);
	if (room < n)
		n = (uint16_t)room;
	burst_used.pending = false;
	burst_used.old_pos = pos;
	burst_used.old_wrap = wrap;
	used_per_pkt = vq->used_per_pkt;
	pass_flags = vring_packed_used_flags(wrap); /* the pass, in the loop (wrap again after it) */
	for (i = 0; i < n; i++) {
		struct tide_mbuf *m = pkts[i];
		int rc = pk_tx_pkt(vq, &burst_used, m, &pos, &pass_flags, &why);

		if (tide_unlikely(rc != TX_OK)) {
			if (rc == TX_FULL)
				break;
			if (rc == TX_FAULT) {
				vhost_fault(&q->fs, &pub->stats.errors, why);
				break;
			}
			/* Too large for the guest's buffers: dropped and counted. */
			tide_mbuf_free(m);
			pkts[i] = NULL;
			dropped++;
			continue;
		}
		bytes += m->pkt_len;
		if (f == VHOST_FREE_LOOP)
			tide_mbuf_free(m);
		if (used_per_pkt)
			pk_publish(vq, &burst_used, pos, pass_flags != 0);
	}
	wrap = pass_flags != 0;
	k = i;
	if (burst_used.pending)
		pk_publish(vq, &burst_used, pos, wrap);
	vq->last_avail = vq->used_idx = pos;
	vq->wrap = wrap;
	vhost_tx_done(pub, t, pkts, k, dropped, bytes, f);
	vhost_leave(&q->busy);
	return k;
}

uint16_t vhost_packed_tx_after(struct tide_txq *q, struct tide_mbuf **pkts, uint16_t n)
{
	return pk_tx_burst(q, pkts, n, VHOST_FREE_AFTER);
}

uint16_t vhost_packed_tx_loop(struct tide_txq *q, struct tide_mbuf **pkts, uint16_t n)
{
	return pk_tx_burst(q, pkts, n, VHOST_FREE_LOOP);
}
