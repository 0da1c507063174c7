/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The vhost copy layer, one for both ring layouts (vhost_split.c, vhost_packed.c): the
 * bursts, the copy of a guest buffer into mbufs and of a packet into guest buffers, the
 * virtio-net header, mergeable receive buffers and the Tx free policy. A layout provides
 * what differs: a chain iterator (the next descriptor of a buffer: address, length, flags,
 * with its own checks), where the next buffer starts and how its used element is written,
 * and the publish step (struct vhost_rx_layout, vhost_tx_layout). Every guest address goes
 * through the queue's checked memory table (vhost_gpa_host()) chunk by chunk, so no copy
 * crosses the end of a region.
 *
 * Inline: each function here is the body of a per-packet loop or the burst itself. A layout
 * instantiates the bursts with a static const table of its hooks, so every hook call is a
 * direct, inlined call and each burst is specialised for its layout. Internal.
 */
#ifndef TIDE_VHOST_COPY_H
#define TIDE_VHOST_COPY_H

#include <stddef.h>
#include <string.h>

#include "inline.h"
#include "copy.h"
#include "vhost.h"

/*
 * The fast translation of the per-packet paths: the @len bytes at @gpa lie wholly in the
 * region of the previous translation. Their address here, or NULL: then the caller takes its
 * general path (vhost_gpa_host(), chunk by chunk over regions).
 */
TIDE_ALWAYS_INLINE uint8_t *vhost_gpa_fast(const struct vhost_mtab *m, uint64_t gpa, uint64_t len)
{
	const struct vhost_mreg *r = &m->r[m->last];
	uint64_t off = gpa - r->gpa;

	return tide_likely(off < r->size && r->size - off >= len) ? r->host + off : NULL;
}

/*
 * A hint ahead of an Rx burst's copies: fetch the line where each guest buffer starts its
 * frame, or with Rx offloads its header (the first bytes the copy reads). The guest wrote
 * that line (headers) just before it made the buffer available, so from another core it is
 * a miss that waits for a line to cross between the cores, and each copy would wait for its
 * own in turn (the rest of a frame streams behind its first line). Asked for a whole burst
 * before the first copy, those transfers overlap. A hint only: the descriptor fields read
 * for it are read again, once, and checked when the buffer is taken; an address outside the
 * region of the previous translation gets none; a prefetch cannot fault. The layout reads
 * each buffer's address and passes it to vhost_rx_prefetch() with the burst's
 * vhost_rx_prefetch_begin().
 */
struct vhost_rx_pf {
	uint64_t gpa, size;
	const uint8_t *host; /* the region's start here, plus the bytes the copy skips */
};

TIDE_ALWAYS_INLINE struct vhost_rx_pf vhost_rx_prefetch_begin(const struct vhost_vq *q)
{
	const struct vhost_mreg *r = &q->mem.r[q->mem.last];

	return (struct vhost_rx_pf){r->gpa, r->size, r->host + (q->ol ? 0 : q->hdr_len)};
}

TIDE_ALWAYS_INLINE void vhost_rx_prefetch(const struct vhost_rx_pf *f, uint64_t gpa)
{
	uint64_t off = gpa - f->gpa;

	if (off < f->size)
		__builtin_prefetch(f->host + off, 0, 3);
}

/* The header tide writes: no offloads, one buffer (num_buffers set later when more). */
static const struct virtio_net_hdr_mrg vhost_tx_hdr = {.num_buffers = 1};

/*
 * One descriptor of a buffer as a layout's chain iterator hands it to the copy layer. The
 * split descriptor's layout, so that the split ring reads one into it with one copy (the
 * packed ring converts, off its fast paths).
 */
struct vhost_desc {
	uint64_t addr;	/* guest physical */
	uint32_t len;
	uint16_t flags; /* VRING_DESC_F_WRITE, NEXT, INDIRECT (a layout's other bits may be set) */
	uint16_t next;	/* split: the next descriptor's index; packed: not used */
};
static_assert(sizeof(struct vhost_desc) == sizeof(struct vring_desc) &&
		      offsetof(struct vhost_desc, flags) == offsetof(struct vring_desc, flags) &&
		      offsetof(struct vhost_desc, next) == offsetof(struct vring_desc, next),
	      "struct vhost_desc has the split descriptor's layout");

/*
 * A layout's chain iterator: the next descriptor of the buffer being walked (@walk: the
 * layout's walk state) into *@d. Returns 1, 0 at the end of the buffer, -1 with *@why set
 * when the guest broke a rule (the layout's checks: indices, loops, availability, ids).
 */
typedef int (*vhost_next_fn)(struct vhost_vq *q, void *walk, struct vhost_desc *d,
			     const char **why);

/* What a guest buffer gave (Rx) or what a packet found (Tx); VHOST_RX_NONE: no buffer is
 * available where the layout looked (nothing taken). */
enum { VHOST_RX_OK, VHOST_RX_DROP, VHOST_RX_NOMBUF, VHOST_RX_FAULT, VHOST_RX_NONE };
enum { VHOST_TX_OK, VHOST_TX_FULL, VHOST_TX_DROP, VHOST_TX_FAULT, VHOST_TX_GONE };

TIDE_ALWAYS_INLINE uint16_t vhost_load16(const uint16_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/*
 * Guest -> mbuf: the @left bytes at guest address @addr appended to @m (last segment *@cur),
 * the first *@skip bytes of the frame (its virtio-net header) left out of the packet and,
 * unless @hdr_end is NULL, copied to the header's end @hdr_end less *@skip. *@total counts
 * the bytes of the whole chain; past @max nothing more is copied (the caller drops the
 * frame). Returns 0, 1 when the pool ran dry, -1 with *@why for an address outside guest
 * memory (vhost_why_nomap: with the IOTLB, a miss).
 */
TIDE_ALWAYS_INLINE int vhost_copy_in(struct vhost_mtab *mem, struct tide_pool *pool,
				     uint16_t dataroom, struct tide_mbuf *m, struct tide_mbuf **cur,
				     uint64_t addr, uint64_t left, uint32_t *skip, uint8_t *hdr_end,
				     uint64_t *total, uint64_t max, const char **why)
{
	*total += left;
	while (left > 0 && *total <= max) {
		uint64_t contig;
		const uint8_t *src = vhost_gpa_host(mem, addr, &contig);
		uint32_t k;

		if (tide_unlikely(src == NULL)) {
			*why = vhost_why_nomap;
			return -1;
		}
		k = (uint32_t)(left < contig ? left : contig);
		addr += k;
		left -= k;
		if (*skip) {
			uint32_t s = k < *skip ? k : *skip;

			if (hdr_end != NULL)
				memcpy(hdr_end - *skip, src, s);
			*skip -= s;
			src += s;
			k -= s;
		}
		if (k && copy_append(pool, dataroom, m, cur, src, k) < 0)
			return 1;
	}
	return 0;
}

/* Where a packet's bytes come from: the virtio-net header first, then each segment. */
struct vhost_src {
	const uint8_t *p;
	uint32_t left;
	const struct tide_mbuf *m;   /* the segment being copied; NULL during the header */
	const struct tide_mbuf *pkt; /* the packet */
	uint8_t *hdr_at;	     /* where the header went (NULL: not yet) */
	bool more;		     /* bytes left to copy */
};

TIDE_ALWAYS_INLINE void vhost_src_init(struct vhost_src *s, const struct tide_mbuf *pkt,
				       uint16_t hdr_len, const struct virtio_net_hdr_mrg *hdr)
{
	s->p = (const uint8_t *)hdr;
	s->left = hdr_len;
	s->m = NULL;
	s->pkt = pkt;
	s->hdr_at = NULL;
	s->more = true;
}

/* After a piece ran out: the next non-empty one; false when the packet is done. */
TIDE_ALWAYS_INLINE bool vhost_src_next(struct vhost_src *s)
{
	if (s->m == NULL) {
		/* Header done: the packet's first segment. */
		s->m = s->pkt;
		s->p = tide_mbuf_mtod(s->m, const uint8_t *);
		s->left = s->m->data_len;
	}
	while (s->left == 0) {
		s->m = s->m->next;
		if (s->m == NULL)
			return false;
		s->p = tide_mbuf_mtod(s->m, const uint8_t *);
		s->left = s->m->data_len;
	}
	return true;
}

/*
 * mbuf -> guest: as much of the packet as fits the device-writable buffer of @left bytes at
 * guest address @addr, added to *@wrote. The packet's first buffer must hold the whole
 * header. Returns 0, or -1 with *@why.
 */
TIDE_ALWAYS_INLINE int vhost_copy_out(struct vhost_mtab *mem, struct vhost_src *s, uint16_t hdr_len,
				      uint64_t addr, uint64_t left, uint32_t *wrote, const char **why)
{
	while (left > 0 && s->more) {
		uint64_t contig;
		uint8_t *dst = vhost_gpa_host(mem, addr, &contig);
		uint32_t k;

		if (tide_unlikely(dst == NULL)) {
			*why = vhost_why_nomap;
			return -1;
		}
		if (s->hdr_at == NULL) {
			if (tide_unlikely(contig < hdr_len || left < hdr_len)) {
				*why = "receive buffer shorter than the virtio-net header";
				return -1;
			}
			s->hdr_at = dst;
		}
		k = (uint32_t)(left < contig ? left : contig);
		if (k > s->left)
			k = s->left;
		memcpy(dst, s->p, k);
		s->p += k;
		s->left -= k;
		addr += k;
		left -= k;
		*wrote += k;
		if (s->left == 0)
			s->more = vhost_src_next(s);
	}
	return 0;
}

/* The header @hdr (num_buffers 1) of a one-buffer packet at @dst (10 or 12 bytes). */
TIDE_ALWAYS_INLINE void vhost_hdr_put(uint8_t *dst, uint16_t hdr_len,
				      const struct virtio_net_hdr_mrg *hdr)
{
	if (hdr_len == sizeof(*hdr))
		memcpy(dst, hdr, sizeof(*hdr));
	else
		memcpy(dst, hdr, sizeof(*hdr) - sizeof(hdr->num_buffers));
}

/* A packet over @nbuf buffers (mergeable receive buffers): num_buffers in its header. */
TIDE_ALWAYS_INLINE void vhost_hdr_nbuf(uint8_t *hdr_at, uint16_t nbuf)
{
	if (nbuf > 1)
		memcpy(hdr_at + offsetof(struct virtio_net_hdr_mrg, num_buffers), &nbuf,
		       sizeof(nbuf));
}

/*
 * The end of a Tx burst that took @k packets, @dropped of them dropped and @gone others
 * sent and freed already (software segmentation): those are NULL in @pkts. Their slots
 * completed, the burst freed after the copy loop (seed 003) unless each packet was
 * (VHOST_FREE_LOOP), the stats.
 */
TIDE_ALWAYS_INLINE void vhost_tx_done(struct tide_txq *pub, struct txc *t, struct tide_mbuf **pkts,
				      uint16_t k, uint64_t dropped, uint64_t gone, uint64_t bytes,
				      const enum vhost_txfree f)
{
	uint64_t inplace = dropped + gone;

	if (k)
		txc_commit_done(t, k);
	txc_release_copied(t, pkts, k, (unsigned)inplace, f == VHOST_FREE_AFTER);
	if (tide_unlikely(dropped))
		tide_stat_add(&pub->stats.errors, dropped);
	tide_stat_burst(&pub->stats, k - dropped, bytes);
}

/*
 * Rx, the general case: the guest's transmit buffer whose first descriptor is @d (the rest
 * through @next over @walk) copied into @m (reset, empty), its virtio-net header left out
 * and, unless @h is NULL, copied to *@h (whole when VHOST_RX_OK). Every descriptor must be device-readable: a
 * layout whose entries' write flag does not count (packed indirect tables) clears it in
 * its iterator.
 */
TIDE_ALWAYS_INLINE int vhost_rx_buf(struct vhost_rxq *q, void *walk, vhost_next_fn next,
				    struct vhost_desc d, struct tide_mbuf *m,
				    struct virtio_net_hdr_mrg *h, const char **why)
{
	struct vhost_vq *vq = &q->vq;
	struct tide_mbuf *cur = m;
	uint32_t skip = vq->hdr_len;
	uint64_t total = 0;
	int rc;

	do {
		if (tide_unlikely(d.flags & VRING_DESC_F_WRITE)) {
			*why = "device-writable descriptor in a transmit chain";
			return VHOST_RX_FAULT;
		}
		rc = vhost_copy_in(&vq->mem, q->pool, q->dataroom, m, &cur, d.addr, d.len, &skip,
				   h != NULL ? (uint8_t *)h + vq->hdr_len : NULL, &total,
				   (uint64_t)vq->max_frame + vq->hdr_len, why);
		if (tide_unlikely(rc != 0))
			return rc < 0 ? VHOST_RX_FAULT : VHOST_RX_NOMBUF;
	} while ((rc = next(vq, walk, &d, why)) > 0);
	if (rc < 0)
		return VHOST_RX_FAULT;
	if (tide_unlikely(skip != 0 || total > (uint64_t)vq->max_frame + vq->hdr_len))
		return VHOST_RX_DROP; /* shorter than the header, or longer than we take */
	return VHOST_RX_OK;
}

/*
 * What a layout gives the Tx general case (vhost_tx_bufs()), over its walk state:
 *   next    its chain iterator;
 *   whole   walk every descriptor of a buffer even when the packet ended before it (the
 *           layout needs the buffer's end: packed rings keep the id in its last descriptor);
 *   end     the buffer just walked took @wrote bytes: note its used element (not visible to
 *           the guest yet) and move past it; VHOST_TX_OK or VHOST_TX_DROP (too many buffers);
 *   first   the first descriptor of the next buffer into *@d: VHOST_TX_OK, VHOST_TX_FULL (none
 *           available yet), VHOST_TX_DROP (the ring could never hold the packet) or
 *           VHOST_TX_FAULT;
 *   commit  the packet is whole: its used elements and the layout's cursor move on.
 */
struct vhost_tx_chain {
	vhost_next_fn next;
	bool whole;
	int (*end)(struct vhost_vq *q, void *walk, uint32_t wrote);
	int (*first)(struct vhost_vq *q, void *walk, struct vhost_desc *d, const char **why);
	void (*commit)(struct vhost_vq *q, void *walk);
};

/*
 * Tx, the general case: packet @m into the guest's receive buffers from the one whose first
 * descriptor is @d on: buffers of any shape, packets of any number of segments, several
 * buffers per packet with MRG_RXBUF (num_buffers in the first header). On VHOST_TX_OK the
 * layout committed the packet; otherwise the guest sees nothing of it.
 */
TIDE_ALWAYS_INLINE int vhost_tx_bufs(struct vhost_vq *vq, const struct tide_mbuf *m, void *walk,
				     struct vhost_desc d, const struct vhost_tx_chain *L,
				     const struct virtio_net_hdr_mrg *hdr, const char **why)
{
	struct vhost_src s;
	uint16_t nbuf = 0;

	vhost_src_init(&s, m, vq->hdr_len, hdr);
	for (;;) {
		uint32_t wrote = 0;
		int rc = 0;

		do {
			if (tide_unlikely(!(d.flags & VRING_DESC_F_WRITE))) {
				*why = "device-readable descriptor in a receive chain";
				return VHOST_TX_FAULT;
			}
			if (vhost_copy_out(&vq->mem, &s, vq->hdr_len, d.addr, d.len, &wrote,
					   why) < 0)
				return VHOST_TX_FAULT;
		} while ((L->whole || s.more) && (rc = L->next(vq, walk, &d, why)) > 0);
		if (rc < 0)
			return VHOST_TX_FAULT;
		if ((rc = L->end(vq, walk, wrote)) != VHOST_TX_OK)
			return rc;
		nbuf++;
		if (!s.more)
			break;
		if (!vq->mrg)
			return VHOST_TX_DROP; /* larger than one receive buffer */
		if ((rc = L->first(vq, walk, &d, why)) != VHOST_TX_OK)
			return rc;
	}
	vhost_hdr_nbuf(s.hdr_at, nbuf);
	L->commit(vq, walk);
	return VHOST_TX_OK;
}

/*
 * A layout's Rx burst hooks, over its cursor @c (its positions in the ring during a burst):
 *   count    a bound on the buffers available, up to @n, the cursor set up: 0 when none (or
 *            the guest broke a rule: then the queue has faulted);
 *   buf      the next buffer into @m, its used id into *@id: VHOST_RX_* (the layout resets @m
 *            once it has a buffer; VHOST_RX_NONE: none there, @m untouched); with @ol, the
 *            buffer's virtio-net header (its first 10 bytes at least) into *@h on VHOST_RX_OK;
 *   used     the used element of that buffer (a whole chain: length 0);
 *   step     move past that buffer;
 *   publish  make the used elements written so far visible and notify the guest if it asked;
 *   finish   the end of the burst: with @batch (VIRTIO_F_IN_ORDER) the one used element of
 *            the buffers taken (if any), with the last one's id @last_id; the publication;
 *            the queue's state.
 */
struct vhost_rx_layout {
	unsigned (*count)(struct vhost_rxq *q, void *c, uint16_t n);
	int (*buf)(struct vhost_rxq *q, void *c, struct tide_mbuf *m, uint16_t *id,
		   struct virtio_net_hdr_mrg *h, bool ol, const char **why);
	void (*used)(struct vhost_vq *q, void *c, uint16_t id);
	void (*step)(struct vhost_vq *q, void *c);
	void (*publish)(struct vhost_vq *q, void *c);
	void (*finish)(struct vhost_vq *q, void *c, bool batch, uint16_t last_id);
};

/*
 * The Rx burst of a layout, entered (busy stored, the live word read as that layout, no
 * fault): copy up to @n of the guest's transmit buffers into mbufs, one used element per
 * buffer (length 0: we wrote nothing) or, with @batch (VIRTIO_F_IN_ORDER), one for the
 * burst; a buffer that breaks no rule but cannot be taken (too short, too long) is consumed
 * and counted. With @ol (VIRTIO_NET_F_CSUM negotiated) each buffer's header is applied to
 * its packet (vhost_rx_ol()); a header refused drops the packet, counted by reason. Leaves
 * the burst.
 */
TIDE_ALWAYS_INLINE uint16_t vhost_rx_burst_as(struct vhost_rxq *q, struct tide_mbuf **pkts,
					      uint16_t n, void *c, const struct vhost_rx_layout *L,
					      const bool batch, const bool ol)
{
	struct tide_rxq *pub = &q->pub;
	struct vhost_vq *vq = &q->vq;
	uint64_t bytes = 0, dropped = 0;
	const char *why = NULL;
	uint16_t last_id = 0;
	uint16_t i = 0;
	bool used_per_pkt;
	unsigned nb = L->count(q, c, n);

	if (nb == 0) {
		vhost_leave(&q->busy);
		return 0;
	}
	if (tide_pool_get_bulk(q->pool, (void **)pkts, nb) < 0) {
		tide_stat_add(&pub->stats.nombuf, 1);
		vhost_leave(&q->busy);
		return 0;
	}
	used_per_pkt = TIDE_BENCH_VARIANTS && vq->used_per_pkt;
	/* At most @nb buffers: the layout checks each again. */
	for (unsigned t = 0; t < nb; t++) {
		struct tide_mbuf *m = pkts[i];
		struct virtio_net_hdr_mrg h;
		uint16_t id;
		int rc = L->buf(q, c, m, &id, &h, ol, &why);

		/* The header as read once from guest memory: a packet without requests (both
		 * bytes 0) takes no call. */
		if (ol && rc == VHOST_RX_OK && tide_unlikely(h.flags | h.gso_type) &&
		    vhost_rx_ol(q, m, &h) < 0)
			rc = VHOST_RX_DROP;

		if (tide_unlikely(rc != VHOST_RX_OK)) {
			if (rc == VHOST_RX_NONE)
				break;
			tide_mbuf_free(m->next);
			tide_mbuf_reset(m);
			if (rc == VHOST_RX_NOMBUF) {
				tide_stat_add(&pub->stats.nombuf, 1);
				break;
			}
			if (rc == VHOST_RX_FAULT) {
				vhost_fail(&q->fault, &pub->stats.errors, &vq->mem, why);
				break;
			}
			dropped++; /* consumed, counted, the mbuf reused for the next buffer */
		} else {
			m->port = q->port_id;
			bytes += m->pkt_len;
			i++;
		}
		if (batch)
			last_id = id;
		else
			L->used(vq, c, id);
		L->step(vq, c);
		if (!batch && tide_unlikely(used_per_pkt))
			L->publish(vq, c);
	}
	if (i < nb)
		tide_pool_put_bulk(q->pool, (void **)&pkts[i], nb - i);
	L->finish(vq, c, batch, last_id);
	if (dropped)
		tide_stat_add(&pub->stats.errors, dropped);
	tide_stat_burst(&pub->stats, i, bytes);
	vhost_leave(&q->busy);
	return i;
}

/* The Rx burst of a layout: in-order or not chosen once per burst, each loop specialised;
 * and for @ol_fn (the burst of a queue that enabled Rx offloads), whether the guest's headers
 * are applied (vhost_vq.ol, which the connection sets). */
TIDE_ALWAYS_INLINE uint16_t vhost_rx_burst(struct vhost_rxq *q, struct tide_mbuf **pkts,
					   uint16_t n, void *c, const struct vhost_rx_layout *L,
					   const bool ol_fn)
{
	const struct vhost_vq *vq = &q->vq;
	bool used_per_pkt = TIDE_BENCH_VARIANTS && vq->used_per_pkt;
	bool batch = vq->in_order && !used_per_pkt; /* one used element for the burst */

	if (ol_fn && vq->ol)
		return batch ? vhost_rx_burst_as(q, pkts, n, c, L, true, true)
			     : vhost_rx_burst_as(q, pkts, n, c, L, false, true);
	return batch ? vhost_rx_burst_as(q, pkts, n, c, L, true, false)
		     : vhost_rx_burst_as(q, pkts, n, c, L, false, false);
}

/*
 * A layout's Tx burst hooks, over its cursor @c:
 *   begin    is a guest receive buffer available? The cursor set up (false: none, or the
 *            guest broke a rule: then the queue has faulted);
 *   pkt      packet @m behind header @hdr into the guest's buffers (VHOST_TX_*; on
 *            VHOST_TX_OK the cursor moved past them and their used elements are written, not
 *            yet visible);
 *   ol       packet @m, which carries Tx requests, on a queue with offloads enabled: the
 *            layout's vhost_tx_ol() (out of line), *@bytes counting what went out;
 *   publish, finish  as for Rx (finish: without the in-order element).
 */
struct vhost_tx_layout {
	bool (*begin)(struct vhost_txq *q, void *c);
	int (*pkt)(struct vhost_vq *q, void *c, const struct tide_mbuf *m,
		   const struct virtio_net_hdr_mrg *hdr, const char **why);
	int (*ol)(struct vhost_txq *q, void *c, struct tide_mbuf *m, uint64_t *bytes,
		  const char **why);
	void (*publish)(struct vhost_vq *q, void *c);
	void (*finish)(struct vhost_vq *q, void *c);
};

/* A layout's per-packet copy (struct vhost_tx_layout.pkt). */
typedef int (*vhost_tx_pkt_fn)(struct vhost_vq *q, void *c, const struct tide_mbuf *m,
			       const struct virtio_net_hdr_mrg *hdr, const char **why);

/*
 * Packet @m with Tx requests into the guest's buffers through the layout's @pkt: the
 * requests the guest takes go into the header, the others are done in software first
 * (vhost_tx_ol_prep()). Returns what @pkt returned for @m, VHOST_TX_DROP (refused: counted,
 * the caller drops @m), or VHOST_TX_GONE: @m was segmented, its segments sent (those that
 * did not fit once the guest's ring filled are dropped and counted; *@bytes counts those
 * sent) and @m freed.
 * VHOST_TX_FULL and VHOST_TX_FAULT leave @m the caller's, unchanged but for its checksums.
 * The layout calls it from its own out-of-line function, so that the burst stays small.
 */
TIDE_ALWAYS_INLINE int vhost_tx_ol(struct vhost_txq *q, void *c, struct tide_mbuf *m,
				   uint64_t *bytes, const char **why, vhost_tx_pkt_fn pkt)
{
	struct tide_mbuf *segs[VHOST_GSO_MAX_SEGS];
	struct virtio_net_hdr_mrg h;
	int k = vhost_tx_ol_prep(q, m, &h, segs), rc = VHOST_TX_OK, j;

	if (k < 0)
		return VHOST_TX_DROP;
	if (k == 0)
		return pkt(&q->vq, c, m, &h, why);
	for (j = 0; j < k; j++) {
		rc = pkt(&q->vq, c, segs[j], &vhost_tx_hdr, why);
		if (rc != VHOST_TX_OK)
			break;
		*bytes += segs[j]->pkt_len;
	}
	/* Copied, or not sent. tide_offload_segment() dropped the reference vhost_tx_ol_prep()
	 * added: @m has the caller's alone. */
	tide_mbuf_free_bulk(segs, (unsigned)k);
	if (j == 0 && rc != VHOST_TX_OK)
		return rc; /* nothing went out: wait, drop or fault as for any packet */
	if (rc == VHOST_TX_FAULT)
		return rc; /* the queue stops; @m stays the caller's */
	if (j < k)
		tide_stat_add(&q->ols.gso_partial, (uint64_t)(k - j));
	tide_stat_add(&q->ols.sw_gso, 1);
	/* opackets counts frames on the wire: the burst counts @m once, its other segments here. */
	if (j > 1)
		tide_stat_add(&q->pub.stats.packets, (uint64_t)(j - 1));
	tide_mbuf_free(m);
	return VHOST_TX_GONE;
}

/*
 * The Tx burst of a layout, entered: copy up to @n packets into the guest's receive buffers;
 * a packet too large for them is dropped and counted; the used elements published once per
 * burst (or per packet, used_per_pkt); the burst freed as @f says (vhost_tx_done()). With
 * @ol (the burst of a queue that enabled Tx offloads) a packet with Tx requests goes through
 * the layout's ol hook. Leaves the burst.
 */
TIDE_ALWAYS_INLINE uint16_t vhost_tx_burst(struct vhost_txq *q, struct tide_mbuf **pkts,
					      uint16_t n, const enum vhost_txfree f, void *c,
					      const struct vhost_tx_layout *L, const bool ol)
{
	struct tide_txq *pub = &q->pub;
	struct vhost_vq *vq = &q->vq;
	struct txc *t = &q->txc;
	uint64_t bytes = 0, dropped = 0, gone = 0;
	const char *why = NULL;
	uint16_t i;
	unsigned room;
	bool used_per_pkt;

	if (!L->begin(q, c)) {
		vhost_leave(&q->busy); /* no guest buffer */
		return 0;
	}
	room = txc_room_sync(t, n);
	if (room < n)
		n = (uint16_t)room;
	used_per_pkt = TIDE_BENCH_VARIANTS && vq->used_per_pkt;
	for (i = 0; i < n; i++) {
		struct tide_mbuf *m = pkts[i];
		int rc;

		if (ol && tide_unlikely(m->ol_flags & VHOST_TX_REQ))
			rc = L->ol(q, c, m, &bytes, &why);
		else
			rc = L->pkt(vq, c, m, &vhost_tx_hdr, &why);
		if (tide_unlikely(rc != VHOST_TX_OK)) {
			if (rc == VHOST_TX_FULL)
				break;
			if (rc == VHOST_TX_FAULT) {
				vhost_fail(&q->fault, &pub->stats.errors, &vq->mem, why);
				break;
			}
			pkts[i] = NULL;
			if (rc == VHOST_TX_GONE) { /* segmented, sent and freed */
				gone++;
			} else {
				/* Too large for the guest's buffers, or refused: counted. */
				tide_mbuf_free(m);
				dropped++;
			}
			continue;
		}
		bytes += m->pkt_len;
		if (f == VHOST_FREE_LOOP)
			tide_mbuf_free(m);
		if (used_per_pkt)
			L->publish(vq, c);
	}
	L->finish(vq, c);
	vhost_tx_done(pub, t, pkts, i, dropped, gone, bytes, f);
	vhost_leave(&q->busy);
	return i;
}

/*
 * A layout's burst entry points (declared in vhost.h): vhost_LAYOUT_rx and _rx_ol; _tx_after,
 * _tx_loop, _tx_after_ol and _tx_loop_ol (the copy's buffers freed after the loop or in it,
 * see VHOST_FREE_AFTER). Each declares the layout's cursor `c` with @RXC / @TXC (statements:
 * a cursor may point at burst-local state) and runs the one burst body above with the
 * layout's table LAYOUT_rx / LAYOUT_tx, every choice a constant the compiler folds.
 */
#define VHOST_LAYOUT_RX_ENTRY(NAME, LAYOUT, RXC, OL)                                          \
	uint16_t NAME(struct tide_rxq *pub, struct tide_mbuf **pkts, uint16_t n)             \
	{                                                                                    \
		RXC;                                                                         \
		return vhost_rx_burst((struct vhost_rxq *)pub, pkts, n, &c, &LAYOUT##_rx, OL); \
	}
#define VHOST_LAYOUT_TX_ENTRY(NAME, LAYOUT, TXC, FREE, OL)                                    \
	uint16_t NAME(struct tide_txq *pub, struct tide_mbuf **pkts, uint16_t n)             \
	{                                                                                    \
		TXC;                                                                         \
		return vhost_tx_burst((struct vhost_txq *)pub, pkts, n, FREE, &c, &LAYOUT##_tx, \
				      OL);                                                   \
	}
#define VHOST_LAYOUT_BURSTS(LAYOUT, RXC, TXC)                                                 \
	VHOST_LAYOUT_RX_ENTRY(vhost_##LAYOUT##_rx, LAYOUT, RXC, false)                        \
	VHOST_LAYOUT_RX_ENTRY(vhost_##LAYOUT##_rx_ol, LAYOUT, RXC, true)                      \
	VHOST_LAYOUT_TX_ENTRY(vhost_##LAYOUT##_tx_after, LAYOUT, TXC, VHOST_FREE_AFTER, false) \
	VHOST_LAYOUT_TX_ENTRY(vhost_##LAYOUT##_tx_loop, LAYOUT, TXC, VHOST_FREE_LOOP, false)   \
	VHOST_LAYOUT_TX_ENTRY(vhost_##LAYOUT##_tx_after_ol, LAYOUT, TXC, VHOST_FREE_AFTER, true) \
	VHOST_LAYOUT_TX_ENTRY(vhost_##LAYOUT##_tx_loop_ol, LAYOUT, TXC, VHOST_FREE_LOOP, true)

#endif
