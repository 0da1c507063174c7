/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pkt.h - Ethernet/IPv4 byte helpers for the engines of tide-fwd.
 *
 * Headers are read and written byte by byte (big-endian on the wire): the IPv4 header of an
 * Ethernet frame starts 14 bytes in and is not 4-byte aligned, and byte accesses compile to
 * the same loads on x86 without any alignment assumption.
 */
#ifndef TIDE_FWD_PKT_H
#define TIDE_FWD_PKT_H

#include <stdint.h>
#include <string.h>

#define ETH_HDR_LEN   14
#define ETH_TYPE_IPV4 0x0800
#define IPV4_HDR_MIN  20
#define UDP_HDR_LEN   8
#define IPV4_OFF_TTL  8
#define IPV4_OFF_CSUM 10
#define IPV4_OFF_DST  16

static inline uint16_t pkt_rd16(const uint8_t *p)
{
	return (uint16_t)((unsigned)p[0] << 8 | p[1]);
}

static inline uint32_t pkt_rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void pkt_wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* Fold a 32-bit ones' complement sum to 16 bits. */
static inline uint16_t pkt_csum_fold(uint32_t s)
{
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

/* Ones' complement sum of @len bytes (even) of big-endian 16-bit words, folded. */
static inline uint16_t pkt_csum_sum(const uint8_t *p, unsigned len)
{
	uint32_t s = 0;

	for (unsigned i = 0; i + 1 < len; i += 2)
		s += pkt_rd16(p + i);
	return pkt_csum_fold(s);
}

/* The checksum to store in an IPv4 header of @hlen bytes whose checksum field is zero. */
static inline uint16_t pkt_ipv4_csum(const uint8_t *ip, unsigned hlen)
{
	return (uint16_t)~pkt_csum_sum(ip, hlen);
}

/*
 * Incremental update of checksum @hc when one 16-bit word changes from @old to @new:
 * RFC 1624 equation 3, HC' = ~(~HC + ~m + m'). Unlike equation 2 of RFC 1141 it never
 * produces 0x0000 for a header whose sum is non-zero, so it agrees with a full recompute.
 */
static inline uint16_t pkt_csum_update16(uint16_t hc, uint16_t old, uint16_t new_word)
{
	uint32_t s = (uint32_t)(uint16_t)~hc + (uint16_t)~old + new_word;

	return (uint16_t)~pkt_csum_fold(s);
}

#endif
