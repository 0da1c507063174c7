/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internal: the checksum arithmetic and packet parsing behind tide/offload.h, shared by the
 * software fallback (offload.c) and the virtio-net header translation (offload_vnet.c).
 */
#ifndef TIDE_SRC_OFFLOAD_PKT_H
#define TIDE_SRC_OFFLOAD_PKT_H

#include <stdint.h>

#include <tide/mbuf.h>

#define OFFLOAD_IPPROTO_TCP 6
#define OFFLOAD_IPPROTO_UDP 17

/* One's complement sum of @len bytes in memory order, folded to 16 bits. */
uint32_t offload_sum(const void *buf, uint32_t len);

/* The same over @len bytes of a chain from packet offset @off (the range must exist). */
uint32_t offload_sum_chain(const struct tide_mbuf *m, uint32_t off, uint32_t len);

/* The TCP/UDP pseudo-header's sum for the IP header at @ip (IPv6 if @v6). */
uint32_t offload_pseudo_sum(const uint8_t *ip, int v6, uint32_t l4len, uint8_t proto);

/* 1 when the chain has at most TIDE_OFFLOAD_MAX_SEGS segments. */
int offload_chain_ok(const struct tide_mbuf *m);

/* IPv6 extension headers (hop-by-hop, routing, destination options): the header length up
 * to @limit and the next protocol, or 0 when a header runs past @avail bytes. */
uint32_t offload_ipv6_walk(const uint8_t *ip, uint32_t avail, uint32_t limit, uint8_t *proto);

/* Check m's Tx l2_len/l3_len against its IP header (IPv4 unless @v6); stores the L4
 * protocol and length. 0 or -EINVAL. */
int offload_l3_check(const struct tide_mbuf *m, int v6, uint8_t *proto, uint32_t *l4len);

/* What offload_parse() found. */
struct offload_pkt {
	uint32_t l2, l3;  /* header lengths (l2 with VLAN tags, l3 with IPv6 extensions) */
	uint32_t l4len;   /* IP length less l3 */
	uint8_t proto;    /* L4 protocol */
	uint8_t ip, v6;   /* IPv4 or IPv6 found; which */
	uint8_t frag;     /* an IP fragment */
};

/* Parse Ethernet (two VLAN tags at most) and IPv4/IPv6 in the @avail bytes at @h of a packet
 * of @pkt_len bytes. 0, or -EINVAL (not IP, truncated, or the IP length beyond the packet). */
int offload_parse(const uint8_t *h, uint32_t avail, uint32_t pkt_len, struct offload_pkt *o);

#endif
