/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * virtio frontend: the virtio-net header of each packet on a queue with offloads enabled,
 * one inline helper per direction, for every ring layout's burst (split: virtio_rxtx.c,
 * packed: virtio_packed.c); and on every Tx queue, virtio_hdr_put(), which writes a
 * header only where the buffer does not hold it already.
 * They hold no ring state: a queue keeps one struct virtio_rx_ol / virtio_tx_ol, set by
 * the control plane while the queue is off (virtio_dev_init) and written by the queue's
 * polling thread only (its counters).
 *
 *   Rx: virtio_hdr_rx_copy() takes the header out of the buffer the device wrote, once
 *       (the device is hostile: every later use, num_buffers included, is of the copy);
 *       after the packet is complete (all its buffers chained, pkt_len set),
 *       virtio_hdr_rx() applies the copy (offload_vnet_to_mbuf()) or refuses it with a
 *       per-reason count; the caller then frees the packet and counts the drop.
 *   Tx: virtio_hdr_tx_cut() says whether a TSO packet must be cut in software because the
 *       device does not segment it (the caller cuts it before placing it:
 *       tide_offload_segment() into a pool the device reaches, the pieces sent with a zero
 *       header, counted in sw_tso); virtio_hdr_tx() writes the header of a packet placed in
 *       writable memory (virtio_hdr_put()), doing in software what the device lacks
 *       (checksums: sw_cksum), or refuses a bad request (counted in refused; the caller
 *       drops the packet).
 */
#ifndef TIDE_VIRTIO_HDR_H
#define TIDE_VIRTIO_HDR_H

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <tide/offload.h>

#include "inline.h"
#include "offload_vnet.h"
#include "stat.h"

/* What the device does for a Tx queue (struct virtio_tx_ol.dev). */
#define VIRTIO_OL_CSUM 0x1u /* VIRTIO_NET_F_CSUM */
#define VIRTIO_OL_TSO4 0x2u /* VIRTIO_NET_F_HOST_TSO4 */
#define VIRTIO_OL_TSO6 0x4u /* VIRTIO_NET_F_HOST_TSO6 */
#define VIRTIO_OL_ECN  0x8u /* VIRTIO_NET_F_HOST_ECN */

/* The Tx requests of an mbuf (tide/mbuf.h). */
#define VIRTIO_TX_REQ                                                                              \
	(TIDE_MBUF_F_TX_IP_CKSUM | TIDE_MBUF_F_TX_L4_MASK | TIDE_MBUF_F_TX_TCP_SEG |               \
	 TIDE_MBUF_F_TX_UDP_SEG)

struct virtio_rx_ol {
	bool lro; /* TIDE_OFFLOAD_RX_TCP_LRO enabled: GSO headers are taken */
	uint64_t refused[OFFLOAD_VNET_NR_REASONS]; /* headers refused, by reason */
};

struct virtio_tx_ol {
	uint32_t dev;	   /* VIRTIO_OL_*: what the device does */
	uint64_t refused;  /* packets dropped: requests that do not match the packet */
	uint64_t sw_cksum; /* packets whose checksums were filled in software */
	uint64_t sw_tso;   /* TSO packets cut in software */
};

/* Rx: copy the header the device wrote at @src (12 bytes) into @h, once. */
TIDE_ALWAYS_INLINE void virtio_hdr_rx_copy(struct virtio_net_hdr_mrg *h, const void *src)
{
	memcpy(h, src, sizeof(*h));
	/* The copy is what counts: no later read of @src may stand in for it. */
	__asm__ __volatile__("" : : "r"(h) : "memory");
}

/*
 * Rx: apply header @h (virtio_hdr_rx_copy()'s) to received packet @m, complete (every
 * buffer chained, pkt_len set, ol_flags fresh): a zero header leaves @m as it is; else
 * offload_vnet_to_mbuf() sets the checksum status or the requests and lengths. A GSO
 * header on a queue without TIDE_OFFLOAD_RX_TCP_LRO is refused (gso_type): the device
 * was not allowed to send one.
 * Returns true (deliver @m), or false: refused, counted in @o->refused[reason], @m
 * unchanged (the caller frees it and counts the drop).
 */
TIDE_ALWAYS_INLINE bool virtio_hdr_rx(struct virtio_rx_ol *o, const struct virtio_net_hdr_mrg *h,
				      struct tide_mbuf *m)
{
	unsigned reason;

	if (tide_likely(h->flags == 0 && h->gso_type == VIRTIO_NET_HDR_GSO_NONE))
		return true;
	if (h->gso_type != VIRTIO_NET_HDR_GSO_NONE && !o->lro)
		reason = OFFLOAD_VNET_GSO_TYPE;
	else if (offload_vnet_to_mbuf(h, m, &reason) == 0)
		return true;
	tide_stat_add(&o->refused[reason], 1);
	return false;
}

/*
 * Tx: whether TSO packet @m must be cut in software: the device does not segment its IP
 * version (HOST_TSO4 / HOST_TSO6), or the TCP flags byte (at l2_len + l3_len + 13) has
 * CWR and the device has no HOST_ECN. False for a packet without TIDE_MBUF_F_TX_TCP_SEG.
 * A packet whose lengths do not match it is refused later, by the cut or by
 * virtio_hdr_tx().
 */
TIDE_ALWAYS_INLINE bool virtio_hdr_tx_cut(const struct virtio_tx_ol *o, const struct tide_mbuf *m)
{
	uint32_t f = m->ol_flags;
	uint8_t fl;

	if (!(f & TIDE_MBUF_F_TX_TCP_SEG))
		return false;
	if (!(o->dev & ((f & TIDE_MBUF_F_TX_IPV6) ? VIRTIO_OL_TSO6 : VIRTIO_OL_TSO4)))
		return true;
	return !(o->dev & VIRTIO_OL_ECN) &&
	       tide_mbuf_read(m, (uint32_t)m->l2_len + m->l3_len + 13, 1, &fl) == 0 && (fl & 0x80);
}

/*
 * Tx: put header @h at @dst (in a packet's headroom) unless @dst holds it already. A buffer
 * sent before holds the header of its last packet, most often the same one (zero without
 * requests), and its line (the headroom's last, before a frame that starts on a line) then
 * stays clean: the device's core, which read it last time, keeps its copy, where a store
 * would take the line away and make the device fetch it back for every packet. The read
 * finds the line in our cache as often (both cores may share a clean line).
 */
TIDE_ALWAYS_INLINE void virtio_hdr_put(void *dst, const struct virtio_net_hdr_mrg *h)
{
	uint64_t have_lo, want_lo;
	uint32_t have_hi, want_hi;
	bool same;

	static_assert(sizeof(*h) == sizeof(have_lo) + sizeof(have_hi), "12-byte header");
	memcpy(&have_lo, dst, sizeof(have_lo));
	memcpy(&have_hi, (uint8_t *)dst + sizeof(have_lo), sizeof(have_hi));
	memcpy(&want_lo, h, sizeof(want_lo));
	memcpy(&want_hi, (const uint8_t *)h + sizeof(want_lo), sizeof(want_hi));
	same = have_lo == want_lo && have_hi == want_hi;
	if (!same)
		memcpy(dst, h, sizeof(*h));
}

/* Tx: virtio_hdr_put() of a zero header, a packet's without requests. */
TIDE_ALWAYS_INLINE void virtio_hdr_put_zero(void *dst)
{
	const struct virtio_net_hdr_mrg zero = {0};

	virtio_hdr_put(dst, &zero);
}

/*
 * Tx: write the header of packet @m at @hdr (VIRTIO_HDR_LEN bytes, just before its data).
 * @m is writable (refcnt 1: the pseudo-header sum goes into its checksum field) and needs
 * no cutting (virtio_hdr_tx_cut()). No request: a zero header. Requests the device does:
 * offload_vnet_from_mbuf()'s header (an IPv4 header checksum is filled in software, virtio
 * has none). Checksum requests without the device's VIRTIO_NET_F_CSUM: filled in
 * software (tide_offload_cksum_fill(), counted in sw_cksum), a zero header.
 * UDP segmentation is never negotiated: refused.
 * Returns 0, or -EINVAL: the requests do not match the packet; counted in @o->refused,
 * @m and @hdr unchanged (the caller drops the packet).
 */
TIDE_ALWAYS_INLINE int virtio_hdr_tx(struct virtio_tx_ol *o, struct tide_mbuf *m, void *hdr)
{
	struct virtio_net_hdr_mrg h;
	uint32_t f = m->ol_flags;

	if (tide_likely(!(f & VIRTIO_TX_REQ))) {
		virtio_hdr_put_zero(hdr);
		return 0;
	}
	if (f & TIDE_MBUF_F_TX_UDP_SEG)
		goto refuse;
	if (!(f & TIDE_MBUF_F_TX_TCP_SEG) && !(o->dev & VIRTIO_OL_CSUM)) {
		if (tide_offload_cksum_fill(m) < 0)
			goto refuse;
		tide_stat_add(&o->sw_cksum, 1);
		virtio_hdr_put_zero(hdr);
		return 0;
	}
	if (offload_vnet_from_mbuf(m, &h) < 0)
		goto refuse;
	h.num_buffers = 0;
	virtio_hdr_put(hdr, &h);
	return 0;
refuse:
	tide_stat_add(&o->refused, 1);
	return -EINVAL;
}

#endif
