/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test packets for the offload tests: TCP and UDP over IPv4 and IPv6 with every checksum
 * right or the L4 one partial, and the reference one's-complement arithmetic they are
 * checked with (one big-endian word at a time, independent of the library's sums).
 */
#ifndef TIDE_TEST_OL_PKT_H
#define TIDE_TEST_OL_PKT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- reference arithmetic: big-endian words, one at a time ---- */

static inline uint32_t ref_add(uint32_t s, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i += 2)
		s += (uint32_t)p[i] << 8 | (i + 1 < n ? p[i + 1] : 0);
	return s;
}

static inline uint16_t ref_fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

static inline void put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline uint32_t get16(const uint8_t *p)
{
	return (uint32_t)p[0] << 8 | p[1];
}

/* The pseudo-header's sum of the IP header at @ip for @l4len bytes of @proto. */
static inline uint32_t ref_pseudo(const uint8_t *ip, bool v6, uint32_t l4len, uint8_t proto)
{
	uint8_t ph[8] = {0};

	if (v6) {
		put16(ph + 2, l4len);
		ph[7] = proto;
		return ref_add(ref_add(0, ip + 8, 32), ph, 8);
	}
	ph[1] = proto;
	put16(ph + 2, l4len);
	return ref_add(ref_add(0, ip + 12, 8), ph, 4);
}

/* ---- packets ---- */

struct pkt {
	bool v6, udp;
	uint32_t l2, l3, l4, len, payload;
};

/*
 * A TCP (20 bytes of header and 12 of options) or UDP packet of @payload bytes in @buf,
 * IPv4 or IPv6, every checksum right (@partial: the L4 field holds the pseudo-header's sum,
 * as a guest that asks for a checksum offload leaves it).
 */
static inline struct pkt build(uint8_t *buf, bool v6, bool udp, uint32_t payload, uint32_t seed,
			       bool partial)
{
	struct pkt k = {.v6 = v6, .udp = udp, .l2 = 14, .l3 = v6 ? 40 : 20, .l4 = udp ? 8 : 32};
	uint8_t *ip = buf + 14, *l4;
	uint32_t l4len = k.l4 + payload;

	k.payload = payload;
	k.len = k.l2 + k.l3 + l4len;
	memset(buf, 0, k.l2 + k.l3 + k.l4);
	memcpy(buf, "\x52\x54\x00\x00\x00\x01\x02\x00\x00\x00\x00\x01", 12);
	put16(buf + 12, v6 ? 0x86dd : 0x0800);
	if (v6) {
		ip[0] = 0x60;
		put16(ip + 4, l4len);
		ip[6] = udp ? 17 : 6;
		ip[7] = 64;
		memcpy(ip + 8, "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x01", 16);
		memcpy(ip + 24, "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x02", 16);
	} else {
		ip[0] = 0x45;
		put16(ip + 2, k.l3 + l4len);
		put16(ip + 4, 0x1234);
		ip[6] = 0x40;
		ip[8] = 64;
		ip[9] = udp ? 17 : 6;
		memcpy(ip + 12, "\x0a\x00\x00\x01\x0a\x00\x00\x02", 8);
		put16(ip + 10, (uint16_t)~ref_fold(ref_add(0, ip, 20)));
	}
	l4 = ip + k.l3;
	put16(l4, 40000);
	put16(l4 + 2, udp ? 4789 : 80);
	if (udp) {
		put16(l4 + 4, l4len);
	} else {
		put16(l4 + 4, seed >> 16);
		put16(l4 + 6, seed);
		l4[12] = (uint8_t)((k.l4 / 4) << 4);
		l4[13] = 0x18; /* PSH ACK */
		put16(l4 + 14, 65535);
		memset(l4 + 20, 1, 12); /* NOPs */
	}
	for (uint32_t i = 0; i < payload; i++)
		l4[k.l4 + i] = (uint8_t)(seed * 7 + i * 13 + (i >> 8));
	{
		uint32_t ps = ref_pseudo(ip, v6, l4len, udp ? 17 : 6);
		uint16_t c = partial ? ref_fold(ps) : (uint16_t)~ref_fold(ref_add(ps, l4, l4len));

		put16(l4 + (udp ? 6 : 16), c);
	}
	return k;
}

#endif
