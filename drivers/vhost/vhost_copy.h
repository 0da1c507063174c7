/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost copy steps shared by the split (vhost_split.c) and the packed (vhost_packed.c) data
 * paths: one guest descriptor's bytes into mbufs, a packet into one guest descriptor, the
 * virtio-net header, and the end of a Tx burst. Every guest address goes through the
 * queue's checked memory table (vhost_gpa_host()) chunk by chunk, so no copy crosses the
 * end of a region. Inline: each is the body of a per-packet loop. Internal.
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

/* The header tide writes: no offloads, one buffer (num_buffers set later when more). */
static const struct virtio_net_hdr_mrg vhost_tx_hdr = {.num_buffers = 1};

/*
 * Guest -> mbuf: the @left bytes at guest address @addr appended to @m (last segment *@cur),
 * the first *@skip bytes of the frame (its virtio-net header) left out. *@total counts the
 * bytes of the whole chain; past @max nothing more is copied (the caller drops the frame).
 * Returns 0, 1 when the pool ran dry, -1 with *@why for an address outside guest memory.
 */
TIDE_ALWAYS_INLINE int vhost_copy_in(struct vhost_mtab *mem, struct tide_pool *pool,
				     uint16_t dataroom, struct tide_mbuf *m, struct tide_mbuf **cur,
				     uint64_t addr, uint64_t left, uint32_t *skip, uint64_t *total,
				     uint64_t max, const char **why)
{
	*total += left;
	while (left > 0 && *total <= max) {
		uint64_t contig;
		const uint8_t *src = vhost_gpa_host(mem, addr, &contig);
		uint32_t k;

		if (tide_unlikely(src == NULL)) {
			*why = "descriptor address outside guest memory";
			return -1;
		}
		k = (uint32_t)(left < contig ? left : contig);
		addr += k;
		left -= k;
		if (*skip) {
			uint32_t s = k < *skip ? k : *skip;

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
				       uint16_t hdr_len)
{
	s->p = (const uint8_t *)&vhost_tx_hdr;
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
			*why = "descriptor address outside guest memory";
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

/* The header of a one-buffer packet at @dst (10 or 12 bytes). */
TIDE_ALWAYS_INLINE void vhost_hdr_put(uint8_t *dst, uint16_t hdr_len)
{
	if (hdr_len == sizeof(vhost_tx_hdr))
		memcpy(dst, &vhost_tx_hdr, sizeof(vhost_tx_hdr));
	else
		memcpy(dst, &vhost_tx_hdr, sizeof(vhost_tx_hdr) - sizeof(vhost_tx_hdr.num_buffers));
}

/* A packet over @nbuf buffers (mergeable receive buffers): num_buffers in its header. */
TIDE_ALWAYS_INLINE void vhost_hdr_nbuf(uint8_t *hdr_at, uint16_t nbuf)
{
	if (nbuf > 1)
		memcpy(hdr_at + offsetof(struct virtio_net_hdr_mrg, num_buffers), &nbuf,
		       sizeof(nbuf));
}

/*
 * The end of a Tx burst that took @k packets, @dropped of them dropped (freed, NULL in
 * @pkts): their slots completed, the burst freed after the copy loop (seed 003) unless each
 * packet was (VHOST_FREE_LOOP), the stats.
 */
TIDE_ALWAYS_INLINE void vhost_tx_done(struct tide_txq *pub, struct txc *t, struct tide_mbuf **pkts,
				      uint16_t k, uint64_t dropped, uint64_t bytes,
				      const enum vhost_txfree f)
{
	if (k)
		txc_commit_done(t, k);
	if (f == VHOST_FREE_AFTER) {
		unsigned nfree = k;

		if (tide_unlikely(dropped)) {
			/* Dropped packets were freed in place: close the gaps they left. */
			nfree = 0;
			for (uint16_t j = 0; j < k; j++)
				if (pkts[j] != NULL)
					pkts[nfree++] = pkts[j];
		}
		txc_release_burst(t, pkts, nfree);
	} else {
		txc_count_released(t, (unsigned)(k - dropped)); /* freed in the copy loop */
	}
	if (tide_unlikely(dropped)) {
		txc_count_released(t, (unsigned)dropped);
		tide_stat_add(&pub->stats.errors, dropped);
	}
	tide_stat_burst(&pub->stats, k - dropped, bytes);
}

#endif
