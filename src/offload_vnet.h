/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internal: the virtio-net header <-> mbuf offload fields, for the virtio backends and
 * frontends (vhost, virtio). Pure functions of a header and a packet: no device state.
 *
 * Receiving (a header a peer wrote, hostile input): offload_vnet_to_mbuf() checks it
 * against the packet and turns it into TIDE_MBUF_F_* requests and lengths, so that the
 * packet can go on to a port that does the work, to tide/offload.h's software fallback, or
 * back out through offload_vnet_from_mbuf() to another virtio peer. A refused header gets a
 * reason (enum offload_vnet_reason) for the caller's counters.
 *
 * Sending: offload_vnet_from_mbuf() writes the header for a packet's TX requests.
 *
 * Header fields are read and written in the host's byte order: virtio 1.0 and the legacy
 * layout on the little-endian hosts tide supports.
 */
#ifndef TIDE_SRC_OFFLOAD_VNET_H
#define TIDE_SRC_OFFLOAD_VNET_H

#include <tide/mbuf.h>

#include "virtio_ring.h"

#ifndef VIRTIO_NET_HDR_F_NEEDS_CSUM
#define VIRTIO_NET_HDR_F_NEEDS_CSUM 1
#endif
#ifndef VIRTIO_NET_HDR_F_DATA_VALID
#define VIRTIO_NET_HDR_F_DATA_VALID 2
#endif
#ifndef VIRTIO_NET_HDR_GSO_NONE
#define VIRTIO_NET_HDR_GSO_NONE 0
#endif
#ifndef VIRTIO_NET_HDR_GSO_TCPV4
#define VIRTIO_NET_HDR_GSO_TCPV4 1
#endif
#ifndef VIRTIO_NET_HDR_GSO_UDP
#define VIRTIO_NET_HDR_GSO_UDP 3
#endif
#ifndef VIRTIO_NET_HDR_GSO_TCPV6
#define VIRTIO_NET_HDR_GSO_TCPV6 4
#endif
#ifndef VIRTIO_NET_HDR_GSO_ECN
#define VIRTIO_NET_HDR_GSO_ECN 0x80
#endif

/* Why a received header was refused. */
enum offload_vnet_reason {
	OFFLOAD_VNET_OK = 0,
	OFFLOAD_VNET_FLAGS,       /* a flag other than NEEDS_CSUM / DATA_VALID */
	OFFLOAD_VNET_CSUM_BEYOND, /* csum_start + csum_offset + 2 beyond the frame */
	OFFLOAD_VNET_CSUM_ALIGN,  /* csum_offset odd */
	OFFLOAD_VNET_CSUM_FIELD,  /* not the checksum field of a TCP/UDP header at csum_start */
	OFFLOAD_VNET_GSO_TYPE,    /* unknown gso_type, or ECN on a non-TCP type */
	OFFLOAD_VNET_GSO_SIZE,    /* gso_size 0 or larger than the frame */
	OFFLOAD_VNET_GSO_CSUM,    /* GSO without NEEDS_CSUM */
	OFFLOAD_VNET_GSO_PROTO,   /* gso_type does not match the packet's IP version / L4 */
	OFFLOAD_VNET_NR_REASONS
};

/* A short name for counters and logs ("csum_beyond", ...); "?" when out of range. */
const char *offload_vnet_reason_name(unsigned reason);

/*
 * Apply the header @h a peer sent with packet @m (pkt_len and data as received; the
 * header itself no longer in the data):
 *  - NEEDS_CSUM: TIDE_MBUF_F_TX_IPV4/IPV6, TIDE_MBUF_F_TX_TCP_CKSUM or _UDP_CKSUM, l2_len,
 *    l3_len, and TIDE_MBUF_F_RX_L4_CKSUM_NONE (the data is intact, the field holds the
 *    peer's partial sum);
 *  - DATA_VALID alone: TIDE_MBUF_F_RX_L4_CKSUM_GOOD;
 *  - gso_type TCPV4/TCPV6 (ECN allowed) / UDP: also TIDE_MBUF_F_TX_TCP_SEG / _UDP_SEG,
 *    tso_segsz = gso_size and l4_len, unless the payload fits in one gso_size piece (then
 *    only the checksum request stays). hdr_len is a hint and is not used.
 * Returns 0 (*@reason = OFFLOAD_VNET_OK), or -EINVAL with *@reason set and @m unchanged.
 */
int offload_vnet_to_mbuf(const struct virtio_net_hdr_mrg *h, struct tide_mbuf *m,
			 unsigned *reason);

/*
 * Write the header (flags .. csum_offset; num_buffers is the caller's) for packet @m:
 * TIDE_MBUF_F_TX_TCP_SEG / _UDP_SEG -> gso_type (TCPV4/TCPV6, ECN when the TCP header has
 * CWR; UDP), gso_size, hdr_len and NEEDS_CSUM; a TCP/UDP checksum request -> NEEDS_CSUM with
 * csum_start = l2_len + l3_len and the field's offset; otherwise DATA_VALID when the Rx
 * status says the L4 checksum is GOOD. For NEEDS_CSUM the packet's checksum field is set to
 * the pseudo-header sum, as the peer expects; an IPv4 header checksum request is filled in
 * software (virtio has no such offload). @m's flags are not changed.
 * Returns 0, or -EINVAL (requests whose lengths do not match the packet; @h and @m unchanged).
 */
int offload_vnet_from_mbuf(struct tide_mbuf *m, struct virtio_net_hdr_mrg *h);

#endif
