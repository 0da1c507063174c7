/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost data path: split virtqueues, copy mode, both directions.
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
#include "copy.h"
#include "vhost.h"
#include "vhost_copy.h"

static uint8_t *gpa_host_search(struct vhost_mtab *m, uint64_t gpa, uint64_t *contig)
{
	for (unsigned i = 0; i < m->n; i++) {
		uint64_t off = gpa - m->r[i].gpa;

		if (off < m->r[i].size) {
			m->last = i;
			*contig = m->r[i].size - off;
			return m->r[i].host + off;
		}
	}
	return NULL;
}

/*
 * Guest physical address -> our address and how many bytes follow it in its region. The
 * region of the previous translation first: a guest's buffers are mostly in one region.
 */
TIDE_ALWAYS_INLINE uint8_t *gpa_host(struct vhost_mtab *m, uint64_t gpa, uint64_t *contig)
{
	const struct vhost_mreg *r = &m->r[m->last];
	uint64_t off = gpa - r->gpa;

	if (tide_likely(off < r->size)) {
		*contig = r->size - off;
		return r->host + off;
	}
	return gpa_host_search(m, gpa, contig);
}

/* Read a descriptor once: the copy is what gets checked and used. */
TIDE_ALWAYS_INLINE void desc_fetch(const struct vring_desc *s, struct vring_desc *d)
{
	memcpy(d, s, sizeof(*d));
	__atomic_signal_fence(__ATOMIC_SEQ_CST); /* no re-reads of guest memory after this */
}

TIDE_ALWAYS_INLINE uint16_t load16(const uint16_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/* Walking one descriptor chain. */
struct walk {
	const struct vring_desc *tbl;
	uint32_t n;     /* entries in tbl */
	uint32_t count; /* descriptors visited in tbl */
	bool indirect;  /* tbl is an indirect table */
};

static const char *walk_indirect(struct vhost_vq *q, struct walk *w, struct vring_desc *d)
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
	tbl = (const struct vring_desc *)gpa_host(&q->mem, d->addr, &contig);
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
					  struct vring_desc *d)
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

/* The next descriptor into @d: 1, 0 at the end of the chain, -1 with *why set. */
TIDE_ALWAYS_INLINE int walk_next(struct walk *w, struct vring_desc *d, const char **why)
{
	uint16_t next = d->next;

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
		if (!vring_need_event(load16(&q->avail->ring[q->num]), uidx, old))
			return;
	} else if (load16(&q->avail->flags) & VRING_AVAIL_F_NO_INTERRUPT) {
		return;
	}
	if (write(q->callfd, &one, sizeof(one)) < 0) {
		/* Non-blocking (vhost_vring.c): a full counter already wakes the guest. */
		tide_stat_add(&q->call_errors, 1);
	}
}

/*
 * Split burst, after the entry found the queue live with the split layout and sound: count
 * the avail entries waiting ([avail] acquire). avail->idx may move at most the queue size
 * past what we took. Returns the count, or 0 with the burst already left (empty, or the
 * index jumped: then the queue faults).
 */
TIDE_ALWAYS_INLINE unsigned vq_avail(uint32_t *busy, struct vhost_fault_slot *fs, uint64_t *errors,
				     struct vhost_vq *q, uint16_t *idx)
{
	uint16_t a, k;

	a = __atomic_load_n(&q->avail->idx, __ATOMIC_ACQUIRE);
	k = (uint16_t)(a - q->last_avail);
	if (tide_unlikely(k > q->num)) {
		vhost_fault(fs, errors, "avail index moved more than the queue size");
		k = 0;
	}
	if (k == 0)
		vhost_leave(busy);
	*idx = a;
	return k;
}

/* ---- Rx: guest Tx vring -> mbufs ---- */

enum { RX_OK, RX_DROP, RX_NOMBUF, RX_FAULT };

/* Copy the chain at @head into @m (reset, empty). */
TIDE_ALWAYS_INLINE int rx_chain(struct vhost_rxq *q, uint16_t head, struct tide_mbuf *m,
				const char **why)
{
	struct vhost_vq *vq = &q->vq;
	struct tide_mbuf *cur = m;
	struct vring_desc d;
	struct walk w;
	uint32_t skip = vq->hdr_len;
	uint64_t total = 0;
	int rc;

	if ((*why = walk_first(vq, &w, head, &d)) != NULL)
		return RX_FAULT;
	/* One readable descriptor, header and frame in the region of the previous translation,
	 * the frame fits one mbuf. */
	if (tide_likely(!(d.flags & (VRING_DESC_F_NEXT | VRING_DESC_F_WRITE)) && d.len > skip &&
			d.len - skip <= q->fast_max)) {
		const uint8_t *src = vhost_gpa_fast(&vq->mem, d.addr, d.len);

		if (tide_likely(src != NULL)) {
			uint16_t k = (uint16_t)(d.len - skip);

			memcpy(tide_mbuf_mtod(m, uint8_t *), src + skip, k);
			m->data_len = k;
			m->pkt_len = k;
			return RX_OK;
		}
	}
	do {
		uint64_t addr = d.addr, left = d.len;

		if (tide_unlikely(d.flags & VRING_DESC_F_WRITE)) {
			*why = "device-writable descriptor in a transmit chain";
			return RX_FAULT;
		}
		total += left;
		while (left > 0 && total <= VHOST_MAX_PKT + vq->hdr_len) {
			uint64_t contig;
			const uint8_t *src = gpa_host(&vq->mem, addr, &contig);
			uint32_t k;

			if (tide_unlikely(src == NULL)) {
				*why = "descriptor address outside guest memory";
				return RX_FAULT;
			}
			k = (uint32_t)(left < contig ? left : contig);
			addr += k;
			left -= k;
			if (skip) {
				uint32_t s = k < skip ? k : skip;

				skip -= s;
				src += s;
				k -= s;
			}
			if (k && copy_append(q->pool, q->dataroom, m, &cur, src, k) < 0)
				return RX_NOMBUF;
		}
	} while ((rc = walk_next(&w, &d, why)) > 0);
	if (rc < 0)
		return RX_FAULT;
	if (tide_unlikely(skip != 0 || total > VHOST_MAX_PKT + vq->hdr_len))
		return RX_DROP; /* shorter than the header, or longer than we take */
	return RX_OK;
}

/* The split Rx burst, entered (busy stored, live read as split). */
static __attribute__((noinline)) uint16_t rx_split(struct tide_rxq *pub, struct tide_mbuf **pkts,
						   uint16_t n)
{
	struct vhost_rxq *q = (struct vhost_rxq *)pub;
	struct vhost_vq *vq = &q->vq;
	uint16_t aidx, last, uidx, i = 0, last_head = 0;
	uint64_t bytes = 0, dropped = 0;
	const char *why = NULL;
	unsigned nb = vq_avail(&q->busy, &q->fs, &pub->stats.errors, vq, &aidx);
	bool used_per_pkt, batch;

	if (nb == 0)
		return 0;
	if (nb > n)
		nb = n;
	if (tide_pool_get_bulk(q->pool, (void **)pkts, nb) < 0) {
		tide_stat_add(&pub->stats.nombuf, 1);
		vhost_leave(&q->busy);
		return 0;
	}
	last = vq->last_avail;
	uidx = vq->used_idx;
	used_per_pkt = vq->used_per_pkt;
	batch = vq->in_order && !used_per_pkt; /* one used entry for the burst (see the top) */
	/* At most @nb chains: each takes an avail entry, and @nb are there. */
	for (unsigned t = 0; t < nb; t++) {
		uint16_t head = load16(&vq->avail->ring[last & vq->mask]);
		struct tide_mbuf *m = pkts[i];
		int rc;

		tide_mbuf_reset(m);
		rc = rx_chain(q, head, m, &why);
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
			last_head = head;
		else
			used_put(vq, uidx, head, 0);
		uidx++;
		last++;
		if (used_per_pkt)
			used_publish(vq, uidx);
	}
	if (i < nb)
		tide_pool_put_bulk(q->pool, (void **)&pkts[i], nb - i);
	if (batch && uidx != vq->used_idx)
		used_put(vq, vq->used_idx, last_head, 0);
	vq->last_avail = last;
	if (uidx != vq->used_idx)
		used_publish(vq, uidx);
	if (dropped)
		tide_stat_add(&pub->stats.errors, dropped);
	tide_stat_burst(&pub->stats, i, bytes);
	vhost_leave(&q->busy);
	return i;
}

/*
 * Burst entry, both layouts: publish busy and read the live word. Returns the layout of a
 * queue that runs and is sound, or 0 with the burst already left (down, or faulted: it
 * moves nothing until the control thread has disconnected).
 */
TIDE_ALWAYS_INLINE uint32_t q_enter(uint32_t *busy, const uint32_t *live, bool fence,
				    const struct vhost_fault_slot *fs)
{
	uint32_t l = vhost_enter(busy, live, fence);

	if (tide_unlikely(l == 0 || __atomic_load_n(&fs->why, __ATOMIC_RELAXED) != NULL)) {
		vhost_leave(busy);
		return 0;
	}
	return l;
}

/*
 * The queue's Rx burst, for either layout: the entry, then a jump to the body of the layout
 * the live word names (small, so that the bodies' register saves come after the choice).
 */
static uint16_t rx_burst(struct tide_rxq *pub, struct tide_mbuf **pkts, uint16_t n)
{
	struct vhost_rxq *q = (struct vhost_rxq *)pub;
	uint32_t live = q_enter(&q->busy, &q->live, q->fence, &q->fs);

	if (tide_likely(live == VHOST_LIVE_SPLIT))
		return rx_split(pub, pkts, n);
	if (live == VHOST_LIVE_PACKED)
		return vhost_packed_rx(pub, pkts, n);
	return 0;
}

tide_rx_burst_fn vhost_rx_fn(void)
{
	return rx_burst;
}

/* ---- Tx: mbufs -> guest Rx vring ---- */

unsigned vhost_tx_advance_ool(struct txc *t)
{
	(void)t; /* slots complete as they are copied (txc_commit_done) */
	return 0;
}

/* Where the packet's bytes come from: the header first, then each segment. */
struct src {
	const uint8_t *p;
	uint32_t left;
	const struct tide_mbuf *m;
};

TIDE_ALWAYS_INLINE bool src_next(struct src *s)
{
	while (s->left == 0) {
		s->m = s->m == NULL ? NULL : s->m->next;
		if (s->m == NULL)
			return false;
		s->p = tide_mbuf_mtod(s->m, const uint8_t *);
		s->left = s->m->data_len;
	}
	return true;
}

enum { TX_OK, TX_FULL, TX_DROP, TX_FAULT };

static const struct virtio_net_hdr_mrg tx_hdr = {.num_buffers = 1};

/*
 * The general case of tx_pkt(): chains of any shape, packets of any number of segments,
 * several chains per packet with MRG_RXBUF. The first chain (@head, already read into @d
 * and @w) is at *@cursor.
 */
static int tx_chains(struct vhost_vq *vq, const struct tide_mbuf *m, uint16_t aidx,
		     uint16_t *cursor, uint16_t *uidx, const char **why, uint16_t head,
		     struct vring_desc d, struct walk w)
{
	struct src s = {.p = (const uint8_t *)&tx_hdr, .left = vq->hdr_len, .m = NULL};
	uint16_t cur = *cursor, u = *uidx, nbuf = 0;
	uint8_t *hdr_at = NULL;
	bool more = true;

	for (;;) {
		uint32_t wrote = 0;
		int rc = 0;

		do {
			uint64_t addr = d.addr, left = d.len;

			if (tide_unlikely(!(d.flags & VRING_DESC_F_WRITE))) {
				*why = "device-readable descriptor in a receive chain";
				return TX_FAULT;
			}
			while (left > 0 && more) {
				uint64_t contig;
				uint8_t *dst = gpa_host(&vq->mem, addr, &contig);
				uint32_t k;

				if (tide_unlikely(dst == NULL)) {
					*why = "descriptor address outside guest memory";
					return TX_FAULT;
				}
				if (hdr_at == NULL) {
					if (tide_unlikely(contig < vq->hdr_len || left < vq->hdr_len)) {
						*why = "receive buffer shorter than the virtio-net header";
						return TX_FAULT;
					}
					hdr_at = dst;
				}
				k = (uint32_t)(left < contig ? left : contig);
				if (k > s.left)
					k = s.left;
				memcpy(dst, s.p, k);
				s.p += k;
				s.left -= k;
				addr += k;
				left -= k;
				wrote += k;
				if (s.left == 0) {
					if (s.m == NULL) {
						/* Header done: the packet's first segment. */
						s.m = m;
						s.p = tide_mbuf_mtod(m, const uint8_t *);
						s.left = m->data_len;
					}
					more = src_next(&s);
				}
			}
		} while (more && (rc = walk_next(&w, &d, why)) > 0);
		if (more && rc < 0)
			return TX_FAULT;
		used_put(vq, u++, head, wrote);
		cur++;
		nbuf++;
		if (!more)
			break;
		if (!vq->mrg)
			return TX_DROP; /* larger than one receive buffer */
		if (cur == aidx) {
			/* Out of guest buffers: wait for more, unless the ring could never hold it. */
			return (uint16_t)(cur - *cursor) >= vq->num ? TX_DROP : TX_FULL;
		}
		head = load16(&vq->avail->ring[cur & vq->mask]);
		if ((*why = walk_first(vq, &w, head, &d)) != NULL)
			return TX_FAULT;
	}
	if (nbuf > 1)
		memcpy(hdr_at + offsetof(struct virtio_net_hdr_mrg, num_buffers), &nbuf,
		       sizeof(nbuf));
	*cursor = cur;
	*uidx = u;
	return TX_OK;
}

/*
 * Copy packet @m into guest buffers from avail entry *@cursor on, writing used entries
 * from *@uidx. On TX_OK both moved past what the packet took; otherwise they are unchanged
 * and nothing is visible to the guest (used->idx was not published). Inline: the common
 * case, a one-segment packet into the first descriptor of one chain, header and frame in
 * one region; everything else in tx_chains(), with the chain already read.
 */
TIDE_ALWAYS_INLINE int tx_pkt(struct vhost_vq *vq, const struct tide_mbuf *m, uint16_t aidx,
			      uint16_t *cursor, uint16_t *uidx, const char **why)
{
	uint16_t cur = *cursor, head;
	struct vring_desc d;
	struct walk w;

	if (cur == aidx)
		return TX_FULL; /* no guest buffer: wait for more */
	head = load16(&vq->avail->ring[cur & vq->mask]);
	if ((*why = walk_first(vq, &w, head, &d)) != NULL)
		return TX_FAULT;
	if (tide_likely(m->next == NULL && (d.flags & VRING_DESC_F_WRITE) &&
			d.len >= (uint32_t)vq->hdr_len + m->data_len)) {
		uint32_t len = (uint32_t)vq->hdr_len + m->data_len;
		uint8_t *dst = vhost_gpa_fast(&vq->mem, d.addr, len);

		if (tide_likely(dst != NULL)) {
			if (vq->hdr_len == sizeof(tx_hdr))
				memcpy(dst, &tx_hdr, sizeof(tx_hdr));
			else
				memcpy(dst, &tx_hdr, sizeof(tx_hdr) - sizeof(tx_hdr.num_buffers));
			memcpy(dst + vq->hdr_len, tide_mbuf_mtod(m, const uint8_t *), m->data_len);
			used_put(vq, *uidx, head, len);
			*cursor = (uint16_t)(cur + 1);
			*uidx = (uint16_t)(*uidx + 1);
			return TX_OK;
		}
	}
	return tx_chains(vq, m, aidx, cursor, uidx, why, head, d, w);
}

TIDE_ALWAYS_INLINE uint16_t tx_burst(struct tide_txq *pub, struct tide_mbuf **pkts, uint16_t n,
				     const enum vhost_txfree f)
{
	struct vhost_txq *q = (struct vhost_txq *)pub;
	struct vhost_vq *vq = &q->vq;
	struct txc *t = &q->txc;
	uint64_t bytes = 0, dropped = 0;
	uint16_t aidx, cursor, uidx, i, k;
	const char *why = NULL;
	unsigned room;
	bool used_per_pkt;

	if (vq_avail(&q->busy, &q->fs, &pub->stats.errors, vq, &aidx) == 0)
		return 0;
	room = txc_room_sync(t, n);
	if (room < n)
		n = (uint16_t)room;
	cursor = vq->last_avail;
	uidx = vq->used_idx;
	used_per_pkt = vq->used_per_pkt;
	for (i = 0; i < n; i++) {
		struct tide_mbuf *m = pkts[i];
		int rc = tx_pkt(vq, m, aidx, &cursor, &uidx, &why);

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
		if (used_per_pkt) {
			vq->last_avail = cursor;
			used_publish(vq, uidx);
		}
	}
	k = i;
	vq->last_avail = cursor;
	if (uidx != vq->used_idx)
		used_publish(vq, uidx);
	vhost_tx_done(pub, t, pkts, k, dropped, bytes, f);
	vhost_leave(&q->busy);
	return k;
}

/* The split Tx bursts, entered (busy stored, live read as split). */
static __attribute__((noinline)) uint16_t tx_split_after(struct tide_txq *q,
							 struct tide_mbuf **pkts, uint16_t n)
{
	return tx_burst(q, pkts, n, VHOST_FREE_AFTER);
}

static __attribute__((noinline)) uint16_t tx_split_loop(struct tide_txq *q,
							struct tide_mbuf **pkts, uint16_t n)
{
	return tx_burst(q, pkts, n, VHOST_FREE_LOOP);
}

/* The queue's Tx burst, for either layout (as rx_burst()). */
TIDE_ALWAYS_INLINE uint16_t tx_enter(struct tide_txq *pub, struct tide_mbuf **pkts, uint16_t n,
				     const enum vhost_txfree f)
{
	struct vhost_txq *q = (struct vhost_txq *)pub;
	uint32_t live = q_enter(&q->busy, &q->live, q->fence, &q->fs);

	if (tide_likely(live == VHOST_LIVE_SPLIT))
		return f == VHOST_FREE_LOOP ? tx_split_loop(pub, pkts, n)
					    : tx_split_after(pub, pkts, n);
	if (live == VHOST_LIVE_PACKED)
		return f == VHOST_FREE_LOOP ? vhost_packed_tx_loop(pub, pkts, n)
					    : vhost_packed_tx_after(pub, pkts, n);
	return 0;
}

static uint16_t tx_after(struct tide_txq *q, struct tide_mbuf **pkts, uint16_t n)
{
	return tx_enter(q, pkts, n, VHOST_FREE_AFTER);
}

static uint16_t tx_loop(struct tide_txq *q, struct tide_mbuf **pkts, uint16_t n)
{
	return tx_enter(q, pkts, n, VHOST_FREE_LOOP);
}

tide_tx_burst_fn vhost_tx_fn(enum vhost_txfree f)
{
	return f == VHOST_FREE_LOOP ? tx_loop : tx_after;
}
