/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tide/offload.h - checksum and segmentation offloads: the capability bits a port
 * advertises and enables, and the software fallback for what a port does not do.
 *
 * A port says what its device can do in struct tide_port_info (rx_offload_capa,
 * tx_offload_capa); the application enables a subset per queue (the offloads field of
 * struct tide_rxq_conf / tide_txq_conf; a bit the driver lacks is refused with -ENOTSUP).
 * On an enabled Tx queue the driver honours the TIDE_MBUF_F_TX_* requests of each packet
 * (tide/mbuf.h); on an enabled Rx queue it sets the TIDE_MBUF_F_RX_*_CKSUM_* status.
 * Where the port lacks an offload, the calls below do the same work in software.
 *
 * The software calls take one packet each, are thread-safe for different packets, never
 * log, and leave the packet as it was when they fail.
 */
#ifndef TIDE_OFFLOAD_H
#define TIDE_OFFLOAD_H

#include <tide/common.h>
#include <tide/mbuf.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Capability and enable bits (rx_offload_capa / tx_offload_capa, queue conf offloads). */
#define TIDE_OFFLOAD_RX_IPV4_CKSUM (1ull << 0) /* Rx: IPv4 header checksum status */
#define TIDE_OFFLOAD_RX_TCP_CKSUM (1ull << 1)  /* Rx: TCP checksum status */
#define TIDE_OFFLOAD_RX_UDP_CKSUM (1ull << 2)  /* Rx: UDP checksum status */
/* Rx: large TCP packets, as a peer's TSO made them or a device coalesced them: such a
 * packet arrives with TIDE_MBUF_F_TX_TCP_SEG, tso_segsz and the header lengths set (a TSO
 * request, ready to send on or to cut with tide_offload_segment()). */
#define TIDE_OFFLOAD_RX_TCP_LRO (1ull << 3)
#define TIDE_OFFLOAD_TX_IPV4_CKSUM (1ull << 8) /* Tx: TIDE_MBUF_F_TX_IP_CKSUM */
#define TIDE_OFFLOAD_TX_TCP_CKSUM (1ull << 9)  /* Tx: TIDE_MBUF_F_TX_TCP_CKSUM */
#define TIDE_OFFLOAD_TX_UDP_CKSUM (1ull << 10) /* Tx: TIDE_MBUF_F_TX_UDP_CKSUM */
#define TIDE_OFFLOAD_TX_TCP_TSO (1ull << 11)   /* Tx: TIDE_MBUF_F_TX_TCP_SEG */
#define TIDE_OFFLOAD_TX_UDP_SEG (1ull << 12)   /* Tx: TIDE_MBUF_F_TX_UDP_SEG */
#define TIDE_OFFLOAD_RX_ALL                                                             \
	(TIDE_OFFLOAD_RX_IPV4_CKSUM | TIDE_OFFLOAD_RX_TCP_CKSUM | TIDE_OFFLOAD_RX_UDP_CKSUM | \
	 TIDE_OFFLOAD_RX_TCP_LRO)
#define TIDE_OFFLOAD_TX_ALL                                                            \
	(TIDE_OFFLOAD_TX_IPV4_CKSUM | TIDE_OFFLOAD_TX_TCP_CKSUM | TIDE_OFFLOAD_TX_UDP_CKSUM | \
	 TIDE_OFFLOAD_TX_TCP_TSO | TIDE_OFFLOAD_TX_UDP_SEG)

/* Longest chain the software calls accept (segments of one packet). */
#define TIDE_OFFLOAD_MAX_SEGS 64

/*
 * Fill the checksums @m requests: the IPv4 header checksum (TIDE_MBUF_F_TX_IP_CKSUM, with
 * TIDE_MBUF_F_TX_IPV4) and the TCP or UDP checksum (TIDE_MBUF_F_TX_TCP_CKSUM /
 * TIDE_MBUF_F_TX_UDP_CKSUM, over IPv4 or IPv6 as TIDE_MBUF_F_TX_IPV4 / _IPV6 say), over
 * every segment of the chain. l2_len and l3_len locate the headers, which must lie in the
 * first segment; the L4 length is the IP header's (total or payload length). On success the
 * request flags are cleared (the work is done) and the lengths stay.
 * Returns 0, or (nothing changed):
 *   -EINVAL   a request without its IP version flag, or with both; headers beyond the
 *             first segment; an IP header that disagrees with l3_len or says the packet is
 *             longer than it is; the L4 header beyond the IP length;
 *   -E2BIG    a chain longer than TIDE_OFFLOAD_MAX_SEGS.
 * A packet with no request returns 0 untouched.
 */
TIDE_EXPORT int tide_offload_cksum_fill(struct tide_mbuf *m);

/*
 * Check the checksums of a received packet in software, for a port without Rx checksum
 * offload: parses Ethernet (up to two VLAN tags), IPv4 or IPv6 (hop-by-hop, routing and
 * destination options headers) and TCP or UDP, and sets the TIDE_MBUF_F_RX_IP_CKSUM_* and
 * TIDE_MBUF_F_RX_L4_CKSUM_* fields of ol_flags: GOOD or BAD where there is a checksum to
 * check (a UDP checksum of 0 over IPv4 means none and is GOOD), UNKNOWN where there is
 * none (not IP, IPv6's header, another L4 protocol, a fragment, a truncated packet).
 * Returns 0, or -E2BIG (chain longer than TIDE_OFFLOAD_MAX_SEGS; flags unchanged).
 */
TIDE_EXPORT int tide_offload_cksum_verify(struct tide_mbuf *m);

/*
 * Software TSO: cut TCP packet @m (TIDE_MBUF_F_TX_TCP_SEG, TIDE_MBUF_F_TX_IPV4 or _IPV6,
 * l2_len, l3_len, l4_len, tso_segsz) into packets of at most tso_segsz payload bytes, each
 * a single-segment mbuf from @pool holding a copy of the headers and its piece of the
 * payload (the input may be a chain). In every output: IPv4 total length, id (the input's
 * plus the output's index) and header checksum; IPv6 payload length; TCP sequence number
 * advanced by the payload before it; FIN and PSH only on the last output, CWR only on the
 * first; TCP checksum. Outputs carry the input's port and L2/L3/L4 lengths and no TX flags
 * (every checksum is filled).
 *
 * The input: consumed on success (one reference dropped, tide_mbuf_free()), still the
 * caller's and unchanged on failure.
 * Returns the number of outputs (>= 1) stored in @out, or (nothing allocated, nothing
 * changed):
 *   -EINVAL   no TIDE_MBUF_F_TX_TCP_SEG, or no or both IP version flags; headers beyond
 *             the first segment; l4_len below 20 or not the TCP header's data offset; the
 *             IP header disagrees with l3_len, is not followed by TCP, or its length is not
 *             the packet's; tso_segsz
 *             0 or larger than the payload; headers plus tso_segsz larger than @pool's
 *             data room;
 *   -ENOTSUP  TIDE_MBUF_F_TX_UDP_SEG (no software fallback);
 *   -E2BIG    a chain longer than TIDE_OFFLOAD_MAX_SEGS;
 *   -ENOSPC   more outputs needed than @max_out;
 *   -ENOBUFS  @pool ran out midway (every output taken so far is freed).
 */
TIDE_EXPORT int tide_offload_segment(struct tide_mbuf *m, struct tide_pool *pool,
				     struct tide_mbuf **out, unsigned max_out);

#ifdef __cplusplus
}
#endif

#endif /* TIDE_OFFLOAD_H */
