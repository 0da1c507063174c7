/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The checksum test frames of the PCI suite, shared by the host side (wire.c) and the guest
 * side (pci_guest.c): Ethernet, IPv4 (20 bytes) or IPv6 (40), UDP (8) or TCP (20) or, in
 * IPv4, protocol 253 (experimental: no L4 checksum), then a payload that says which test
 * and which frame it is:
 *
 *   L4 payload + 0   magic "TCSM", tag (1 byte), seq (le32), then byte i of the frame =
 *                    (seq * 5 + i + tag) & 0xff
 *
 * Kinds cycle with the sequence number (csum_kind), so both sides know what each frame is.
 * The builder writes correct checksums; the check recomputes both from scratch (the
 * reference the guest's offloads are measured against). Written for the tests, independent
 * of the library's own checksum code.
 */
#ifndef TIDE_TEST_CSUM_FRAME_H
#define TIDE_TEST_CSUM_FRAME_H

#include <stdint.h>
#include <string.h>

enum csum_kind { CSUM_V4_UDP, CSUM_V4_TCP, CSUM_V6_UDP, CSUM_V6_TCP, CSUM_V4_OTHER, CSUM_KINDS };

#define CSUM_MIN_LEN 128u /* room for the largest headers and the payload's header */

static inline enum csum_kind csum_kind(uint32_t seq)
{
	return (enum csum_kind)(seq % CSUM_KINDS);
}

static inline int csum_kind_v6(enum csum_kind k)
{
	return k == CSUM_V6_UDP || k == CSUM_V6_TCP;
}

static inline int csum_kind_tcp(enum csum_kind k)
{
	return k == CSUM_V4_TCP || k == CSUM_V6_TCP;
}

static inline uint32_t csum_l3_len(enum csum_kind k)
{
	return csum_kind_v6(k) ? 40 : 20;
}

static inline uint32_t csum_l4_len(enum csum_kind k)
{
	return k == CSUM_V4_OTHER ? 0 : csum_kind_tcp(k) ? 20 : 8;
}

/* Offset of the L4 checksum field in the L4 header (TCP 16, UDP 6). */
static inline uint32_t csum_l4_field(enum csum_kind k)
{
	return csum_kind_tcp(k) ? 16 : 6;
}

/* One's complement sum of big-endian 16-bit words, not folded. */
static inline uint32_t csum_add(uint32_t s, const uint8_t *p, uint32_t len)
{
	for (uint32_t i = 0; i + 1 < len; i += 2)
		s += (uint32_t)p[i] << 8 | p[i + 1];
	if (len & 1)
		s += (uint32_t)p[len - 1] << 8;
	return s;
}

static inline uint16_t csum_fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

/*
 * The L4 checksum as it must be in the frame, over @l4len bytes from @l4 with the checksum
 * field at @field left out (UDP: a computed 0 is sent as 0xffff).
 */
static inline uint16_t csum_l4(const uint8_t *ip, int v6, uint8_t proto, const uint8_t *l4,
			       uint32_t l4len, uint32_t field)
{
	uint32_t s = v6 ? csum_add(0, ip + 8, 32) : csum_add(0, ip + 12, 8);
	uint16_t c;

	s += proto + l4len;
	s = csum_add(s, l4, field);
	s = csum_add(s, l4 + field + 2, l4len - field - 2); /* field + 2 is even */
	c = (uint16_t)~csum_fold(s);
	return proto == 17 && c == 0 ? 0xffff : c;
}

static inline void csum_put(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/*
 * Write frame @seq of test @tag, @len bytes (at least CSUM_MIN_LEN), with correct
 * checksums. @bad: 1 corrupts one payload byte after the checksums (the L4 checksum is
 * wrong; kind CSUM_V4_OTHER has none), 2 the IPv4 TTL (the header checksum is wrong, the L4
 * one, which does not cover the TTL, stays right; IPv6 has no header checksum).
 */
static inline void csum_fill(uint8_t *b, uint32_t len, uint8_t tag, uint32_t seq,
			     const uint8_t dst[6], const uint8_t src[6], int bad)
{
	enum csum_kind k = csum_kind(seq);
	int v6 = csum_kind_v6(k);
	uint32_t l3 = csum_l3_len(k), l4 = csum_l4_len(k), pay = 14 + l3 + l4;
	uint8_t proto = k == CSUM_V4_OTHER ? 253 : csum_kind_tcp(k) ? 6 : 17;
	uint8_t *ip = b + 14, *th = ip + l3;

	memset(b, 0, pay);
	memcpy(b, dst, 6);
	memcpy(b + 6, src, 6);
	b[12] = v6 ? 0x86 : 0x08;
	b[13] = v6 ? 0xdd : 0x00;
	if (v6) {
		ip[0] = 0x60;
		csum_put(ip + 4, (uint16_t)(len - 14 - 40));
		ip[6] = proto;
		ip[7] = 64;
		for (unsigned i = 0; i < 16; i++) {
			ip[8 + i] = (uint8_t)(0xfd + i * 3);
			ip[24 + i] = (uint8_t)(0xfd + i * 7 + tag);
		}
	} else {
		ip[0] = 0x45;
		csum_put(ip + 2, (uint16_t)(len - 14));
		csum_put(ip + 4, (uint16_t)seq);
		ip[8] = 64;
		ip[9] = proto;
		ip[12] = 10, ip[13] = 0, ip[14] = 2, ip[15] = 2;
		ip[16] = 10, ip[17] = 0, ip[18] = 2, ip[19] = (uint8_t)(15 + tag);
	}
	if (l4) {
		csum_put(th, (uint16_t)(1024 + tag));
		csum_put(th + 2, (uint16_t)(5000 + seq % 7));
		if (proto == 6) {
			th[4] = (uint8_t)(seq >> 24), th[5] = (uint8_t)(seq >> 16);
			th[6] = (uint8_t)(seq >> 8), th[7] = (uint8_t)seq;
			th[12] = 5 << 4;
			th[13] = 0x18; /* PSH, ACK */
			csum_put(th + 14, 1024);
		} else {
			csum_put(th + 4, (uint16_t)(len - pay + 8));
		}
	}
	memcpy(b + pay, "TCSM", 4);
	b[pay + 4] = tag;
	for (unsigned i = 0; i < 4; i++)
		b[pay + 5 + i] = (uint8_t)(seq >> (8 * i));
	for (uint32_t i = pay + 9; i < len; i++)
		b[i] = (uint8_t)(seq * 5u + i + tag);
	if (!v6)
		csum_put(ip + 10, (uint16_t)~csum_fold(csum_add(0, ip, 20)));
	if (l4)
		csum_put(th + csum_l4_field(k),
			 csum_l4(ip, v6, proto, th, len - 14 - l3, csum_l4_field(k)));
	if (bad == 1)
		b[len - 1] ^= 0x5a;
	else if (bad == 2 && !v6)
		ip[8] ^= 0x11;
}

/*
 * Check a frame from the wire: 0 when it is a checksum test frame with both checksums right
 * (and stores tag and seq), -1 when it is not one, -2 IPv4 header checksum wrong, -3 TCP/UDP
 * checksum wrong, -4 the payload is not the pattern.
 */
static inline int csum_check(const uint8_t *b, uint32_t len, uint8_t *tag, uint32_t *seq)
{
	int v6;
	uint32_t l3, l4, pay, s = 0;
	const uint8_t *ip = b + 14, *th;
	uint8_t proto;

	if (len < CSUM_MIN_LEN)
		return -1;
	if (b[12] == 0x08 && b[13] == 0x00 && ip[0] == 0x45)
		v6 = 0;
	else if (b[12] == 0x86 && b[13] == 0xdd && ip[0] >> 4 == 6)
		v6 = 1;
	else
		return -1;
	l3 = v6 ? 40 : 20;
	proto = v6 ? ip[6] : ip[9];
	l4 = proto == 6 ? 20 : proto == 17 ? 8 : 0;
	th = ip + l3;
	pay = 14 + l3 + l4;
	if (memcmp(b + pay, "TCSM", 4) != 0)
		return -1;
	*tag = b[pay + 4];
	for (unsigned i = 0; i < 4; i++)
		s |= (uint32_t)b[pay + 5 + i] << (8 * i);
	*seq = s;
	if (!v6 && csum_fold(csum_add(0, ip, 20)) != 0xffff)
		return -2;
	if (l4) {
		uint32_t f = proto == 6 ? 16 : 6;

		if ((uint16_t)(th[f] << 8 | th[f + 1]) != csum_l4(ip, v6, proto, th, len - 14 - l3, f))
			return -3;
	}
	for (uint32_t i = pay + 9; i < len; i++)
		if (b[i] != (uint8_t)(s * 5u + i + *tag))
			return -4;
	return 0;
}

#endif
