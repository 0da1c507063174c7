/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The software fallback of the checksum and segmentation offloads (tide/offload.h), and
 * the packet parsing they share with the virtio-net header translation (offload_vnet.c).
 *
 * Checksums are summed in memory order: the Internet checksum is the same whichever byte
 * order its 16-bit words are added in, as long as the result is stored back in that order
 * (RFC 1071), so words are loaded natively and the folded sum is stored with memcpy.
 */
#include <errno.h>
#include <string.h>

#include <tide/offload.h>

#include "offload_pkt.h"

/* ---- checksums ---- */

uint32_t offload_sum(const void *buf, uint32_t len)
{
	const uint8_t *p = buf;
	uint64_t s = 0;

	for (; len >= 8; p += 8, len -= 8) {
		uint32_t w[2];

		memcpy(w, p, 8);
		s += (uint64_t)w[0] + w[1];
	}
	for (; len >= 2; p += 2, len -= 2) {
		uint16_t h;

		memcpy(&h, p, 2);
		s += h;
	}
	if (len) {
		uint8_t b[2] = {p[0], 0};
		uint16_t h;

		memcpy(&h, b, 2);
		s += h;
	}
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint32_t)s;
}

static uint32_t fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return s;
}

static uint32_t swap16(uint32_t s)
{
	return ((s & 0xff) << 8) | (s >> 8);
}

uint32_t offload_sum_chain(const struct tide_mbuf *m, uint32_t off, uint32_t len)
{
	uint32_t s = 0, pos = 0;

	while (m != NULL && off >= m->data_len) {
		off -= m->data_len;
		m = m->next;
	}
	while (m != NULL && pos < len) {
		uint32_t n = m->data_len - off;
		uint32_t part;

		if (n > len - pos)
			n = len - pos;
		part = offload_sum(tide_mbuf_mtod_offset(m, const uint8_t *, off), n);
		/* A piece that starts at an odd position adds its words shifted by one byte. */
		s = fold(s + ((pos & 1) ? swap16(part) : part));
		pos += n;
		off = 0;
		m = m->next;
	}
	return s;
}

/* The pseudo-header's sum for an L4 length @l4len and protocol @proto. */
uint32_t offload_pseudo_sum(const uint8_t *ip, int v6, uint32_t l4len, uint8_t proto)
{
	uint8_t tail[8] = {0};
	uint32_t s;

	if (v6) {
		s = offload_sum(ip + 8, 32);
		tail[0] = (uint8_t)(l4len >> 24);
		tail[1] = (uint8_t)(l4len >> 16);
		tail[2] = (uint8_t)(l4len >> 8);
		tail[3] = (uint8_t)l4len;
		tail[7] = proto;
		return fold(s + offload_sum(tail, 8));
	}
	s = offload_sum(ip + 12, 8);
	tail[1] = proto;
	tail[2] = (uint8_t)(l4len >> 8);
	tail[3] = (uint8_t)l4len;
	return fold(s + offload_sum(tail, 4));
}

static void put_cksum(uint8_t *field, uint32_t sum)
{
	uint16_t c = (uint16_t)~fold(sum);

	memcpy(field, &c, 2);
}

static void ipv4_cksum_set(uint8_t *ip, uint32_t hlen)
{
	ip[10] = ip[11] = 0;
	put_cksum(ip + 10, offload_sum(ip, hlen));
}

/* ---- parsing ---- */

int offload_chain_ok(const struct tide_mbuf *m)
{
	unsigned n = 0;

	for (; m != NULL; m = m->next)
		if (++n > TIDE_OFFLOAD_MAX_SEGS)
			return 0;
	return 1;
}

/*
 * Walk IPv6 extension headers (hop-by-hop, routing, destination options) from the fixed
 * header at @ip, with @avail bytes readable, up to @limit bytes of header. Returns the
 * header length and stores the next protocol, or 0 when a header runs past @avail.
 */
uint32_t offload_ipv6_walk(const uint8_t *ip, uint32_t avail, uint32_t limit, uint8_t *proto)
{
	uint32_t off = 40;
	uint8_t nh = ip[6];

	while (off < limit && (nh == 0 || nh == 43 || nh == 60)) {
		if (off + 8 > avail)
			return 0;
		nh = ip[off];
		off += (ip[off + 1] + 1u) * 8;
	}
	if (off > avail)
		return 0;
	*proto = nh;
	return off;
}

/*
 * Check the L3 header @m's Tx lengths describe (IPv4 if @v6 is 0) against the packet:
 * it lies in the first segment, its length field agrees with l3_len and its stated length
 * fits in the packet. Stores the L4 protocol and the L4 length (IP length less l3_len).
 */
int offload_l3_check(const struct tide_mbuf *m, int v6, uint8_t *proto, uint32_t *l4len)
{
	const uint8_t *ip = tide_mbuf_mtod_offset(m, const uint8_t *, m->l2_len);
	uint32_t l3 = m->l3_len, iplen;

	if ((uint32_t)m->l2_len + l3 > m->data_len)
		return -EINVAL;
	if (!v6) {
		if (l3 < 20 || ip[0] >> 4 != 4 || (ip[0] & 0xfu) * 4u != l3)
			return -EINVAL;
		iplen = (uint32_t)ip[2] << 8 | ip[3];
		*proto = ip[9];
	} else {
		if (l3 < 40 || ip[0] >> 4 != 6)
			return -EINVAL;
		iplen = 40 + ((uint32_t)ip[4] << 8 | ip[5]);
		if (offload_ipv6_walk(ip, l3, l3, proto) != l3)
			return -EINVAL;
	}
	if (iplen < l3 || m->l2_len + iplen > m->pkt_len)
		return -EINVAL;
	*l4len = iplen - l3;
	return 0;
}

/* ---- tide_offload_cksum_fill ---- */

int tide_offload_cksum_fill(struct tide_mbuf *m)
{
	uint32_t f = m->ol_flags, l4 = f & TIDE_MBUF_F_TX_L4_MASK, l4len = 0, l4off, field = 0;
	int v4 = !!(f & TIDE_MBUF_F_TX_IPV4), v6 = !!(f & TIDE_MBUF_F_TX_IPV6);
	uint8_t proto = 0, *ip;

	if (!(f & (TIDE_MBUF_F_TX_IP_CKSUM | TIDE_MBUF_F_TX_L4_MASK)))
		return 0;
	if (v4 + v6 != 1 || ((f & TIDE_MBUF_F_TX_IP_CKSUM) && !v4) || l4 == TIDE_MBUF_F_TX_L4_MASK)
		return -EINVAL;
	if (!offload_chain_ok(m))
		return -E2BIG;
	if (offload_l3_check(m, v6, &proto, &l4len) < 0)
		return -EINVAL;
	l4off = (uint32_t)m->l2_len + m->l3_len;
	if (l4 == TIDE_MBUF_F_TX_TCP_CKSUM) {
		if (proto != OFFLOAD_IPPROTO_TCP || l4len < 20)
			return -EINVAL;
		field = 16;
	} else if (l4 == TIDE_MBUF_F_TX_UDP_CKSUM) {
		if (proto != OFFLOAD_IPPROTO_UDP || l4len < 8)
			return -EINVAL;
		field = 6;
	}
	if (l4 && l4off + field + 2 > m->data_len)
		return -EINVAL;

	ip = tide_mbuf_mtod_offset(m, uint8_t *, m->l2_len);
	if (f & TIDE_MBUF_F_TX_IP_CKSUM)
		ipv4_cksum_set(ip, m->l3_len);
	if (l4) {
		uint8_t *c = tide_mbuf_mtod_offset(m, uint8_t *, l4off + field);
		uint32_t s;

		c[0] = c[1] = 0;
		s = fold(offload_pseudo_sum(ip, v6, l4len, proto) +
			 offload_sum_chain(m, l4off, l4len));
		/* UDP: a computed 0 goes out as all ones (0 means "no checksum"). */
		if (l4 == TIDE_MBUF_F_TX_UDP_CKSUM && (uint16_t)~s == 0)
			s = 0;
		put_cksum(c, s);
	}
	m->ol_flags = f & ~(TIDE_MBUF_F_TX_IP_CKSUM | TIDE_MBUF_F_TX_L4_MASK);
	return 0;
}

/* ---- tide_offload_cksum_verify ---- */

int offload_parse(const uint8_t *h, uint32_t avail, uint32_t pkt_len, struct offload_pkt *o)
{
	uint32_t l2 = 14, l3, iplen;
	uint16_t type;

	memset(o, 0, sizeof(*o));
	if (avail < 14)
		return -EINVAL;
	type = (uint16_t)(h[12] << 8 | h[13]);
	for (int tags = 0; tags < 2 && (type == 0x8100 || type == 0x88a8); tags++) {
		if (l2 + 4 > avail)
			return -EINVAL;
		type = (uint16_t)(h[l2 + 2] << 8 | h[l2 + 3]);
		l2 += 4;
	}
	o->l2 = l2;
	if (type == 0x0800) {
		const uint8_t *ip = h + l2;

		if (l2 + 20 > avail || ip[0] >> 4 != 4 || (ip[0] & 0xf) < 5)
			return -EINVAL;
		/* The header's end within @avail follows from the length checks below (an IPv4
		 * header ends by byte 82, and a shorter packet is all there). */
		l3 = (ip[0] & 0xfu) * 4;
		iplen = (uint32_t)ip[2] << 8 | ip[3];
		o->proto = ip[9];
		o->frag = ((ip[6] & 0x3f) | ip[7]) != 0; /* MF or an offset */
	} else if (type == 0x86dd) {
		const uint8_t *ip = h + l2;

		if (l2 + 40 > avail || ip[0] >> 4 != 6)
			return -EINVAL;
		iplen = 40 + ((uint32_t)ip[4] << 8 | ip[5]);
		l3 = offload_ipv6_walk(ip, avail - l2, iplen, &o->proto);
		if (l3 == 0)
			return -EINVAL;
		o->v6 = 1;
		o->frag = o->proto == 44;
	} else {
		return -EINVAL;
	}
	if (iplen < l3 || l2 + iplen > pkt_len)
		return -EINVAL;
	o->ip = 1;
	o->l3 = l3;
	o->l4len = iplen - l3;
	return 0;
}

/* Enough header for Ethernet + 2 tags + IPv6 with extensions + the checksum fields. */
#define VERIFY_HDR 256

int tide_offload_cksum_verify(struct tide_mbuf *m)
{
	uint8_t h[VERIFY_HDR];
	uint32_t avail = m->pkt_len < VERIFY_HDR ? m->pkt_len : VERIFY_HDR;
	uint32_t ipst = TIDE_MBUF_F_RX_IP_CKSUM_UNKNOWN, l4st = TIDE_MBUF_F_RX_L4_CKSUM_UNKNOWN;
	struct offload_pkt o;

	if (!offload_chain_ok(m))
		return -E2BIG;
	if (tide_mbuf_read(m, 0, avail, h) == 0 && offload_parse(h, avail, m->pkt_len, &o) == 0) {
		const uint8_t *ip = h + o.l2;
		uint32_t l4off = o.l2 + o.l3;

		if (!o.v6)
			ipst = offload_sum(ip, o.l3) == 0xffff ? TIDE_MBUF_F_RX_IP_CKSUM_GOOD
							       : TIDE_MBUF_F_RX_IP_CKSUM_BAD;
		if (!o.frag && ((o.proto == OFFLOAD_IPPROTO_TCP && o.l4len >= 20) ||
				(o.proto == OFFLOAD_IPPROTO_UDP && o.l4len >= 8))) {
			uint8_t zero[2] = {0, 0};
			uint32_t s;

			if (o.proto == OFFLOAD_IPPROTO_UDP && !o.v6 && l4off + 8 <= avail &&
			    memcmp(h + l4off + 6, zero, 2) == 0)
				s = 0xffff; /* IPv4 UDP without a checksum */
			else
				s = fold(offload_pseudo_sum(ip, o.v6, o.l4len, o.proto) +
					 offload_sum_chain(m, l4off, o.l4len));
			l4st = s == 0xffff ? TIDE_MBUF_F_RX_L4_CKSUM_GOOD : TIDE_MBUF_F_RX_L4_CKSUM_BAD;
		}
	}
	m->ol_flags = (m->ol_flags & ~(TIDE_MBUF_F_RX_IP_CKSUM_MASK | TIDE_MBUF_F_RX_L4_CKSUM_MASK)) |
		      ipst | l4st;
	return 0;
}

/* ---- tide_offload_segment ---- */

/* A read position in a chain. */
struct cursor {
	const struct tide_mbuf *seg;
	uint32_t off;
};

static void cursor_copy(struct cursor *c, uint8_t *dst, uint32_t len)
{
	while (len > 0) {
		uint32_t n;

		while (c->off == c->seg->data_len) {
			c->seg = c->seg->next;
			c->off = 0;
		}
		n = c->seg->data_len - c->off;
		if (n > len)
			n = len;
		memcpy(dst, tide_mbuf_mtod_offset(c->seg, const uint8_t *, c->off), n);
		dst += n;
		len -= n;
		c->off += n;
	}
}

#define TCP_FIN 0x01
#define TCP_PSH 0x08
#define TCP_CWR 0x80

int tide_offload_segment(struct tide_mbuf *m, struct tide_pool *pool, struct tide_mbuf **out,
			 unsigned max_out)
{
	uint32_t f = m->ol_flags, hdr, payload, l4len, seg = m->tso_segsz, n, seq0;
	int v4 = !!(f & TIDE_MBUF_F_TX_IPV4), v6 = !!(f & TIDE_MBUF_F_TX_IPV6);
	const uint8_t *ip, *tcp;
	uint16_t id0;
	uint8_t proto;
	struct cursor c;

	if (f & TIDE_MBUF_F_TX_UDP_SEG)
		return -ENOTSUP;
	if (!(f & TIDE_MBUF_F_TX_TCP_SEG) || v4 + v6 != 1)
		return -EINVAL;
	if (!offload_chain_ok(m))
		return -E2BIG;
	if (m->l4_len < 20 || offload_l3_check(m, v6, &proto, &l4len) < 0)
		return -EINVAL;
	hdr = (uint32_t)m->l2_len + m->l3_len + m->l4_len;
	ip = tide_mbuf_mtod_offset(m, const uint8_t *, m->l2_len);
	tcp = ip + m->l3_len;
	if (proto != OFFLOAD_IPPROTO_TCP || hdr > m->data_len || (tcp[12] >> 4) * 4u != m->l4_len ||
	    (uint32_t)m->l2_len + m->l3_len + l4len != m->pkt_len)
		return -EINVAL;
	payload = m->pkt_len - hdr;
	if (seg == 0 || seg > payload || hdr + seg > tide_pktpool_data_room(pool))
		return -EINVAL;
	n = (payload + seg - 1) / seg;
	if (n > max_out)
		return -ENOSPC;

	seq0 = (uint32_t)tcp[4] << 24 | (uint32_t)tcp[5] << 16 | (uint32_t)tcp[6] << 8 | tcp[7];
	id0 = (uint16_t)(ip[4] << 8 | ip[5]);
	c.seg = m;
	c.off = hdr;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t plen = i + 1 < n ? seg : payload - i * seg, seq = seq0 + i * seg;
		struct tide_mbuf *o = tide_mbuf_alloc(pool);
		uint8_t *d, *oip, *otcp;
		uint32_t s;

		if (o == NULL) {
			for (uint32_t j = 0; j < i; j++) {
				tide_mbuf_free(out[j]);
				out[j] = NULL;
			}
			return -ENOBUFS;
		}
		d = tide_mbuf_mtod(o, uint8_t *);
		memcpy(d, tide_mbuf_mtod(m, const uint8_t *), hdr);
		cursor_copy(&c, d + hdr, plen);
		o->data_len = (uint16_t)(hdr + plen);
		o->pkt_len = hdr + plen;
		o->port = m->port;
		o->rss_hash = m->rss_hash;
		o->ol_flags = f & (TIDE_MBUF_F_RX_RSS_HASH | TIDE_MBUF_F_RX_IP_CKSUM_MASK |
				   TIDE_MBUF_F_RX_L4_CKSUM_MASK);
		o->l2_len = m->l2_len;
		o->l3_len = m->l3_len;
		o->l4_len = m->l4_len;

		oip = d + m->l2_len;
		otcp = oip + m->l3_len;
		if (v4) {
			uint32_t tot = m->l3_len + m->l4_len + plen;
			uint16_t id = (uint16_t)(id0 + i);

			oip[2] = (uint8_t)(tot >> 8);
			oip[3] = (uint8_t)tot;
			oip[4] = (uint8_t)(id >> 8);
			oip[5] = (uint8_t)id;
			ipv4_cksum_set(oip, m->l3_len);
		} else {
			uint32_t pl = m->l3_len - 40u + m->l4_len + plen;

			oip[4] = (uint8_t)(pl >> 8);
			oip[5] = (uint8_t)pl;
		}
		otcp[4] = (uint8_t)(seq >> 24);
		otcp[5] = (uint8_t)(seq >> 16);
		otcp[6] = (uint8_t)(seq >> 8);
		otcp[7] = (uint8_t)seq;
		if (i + 1 < n)
			otcp[13] &= (uint8_t)~(TCP_FIN | TCP_PSH);
		if (i > 0)
			otcp[13] &= (uint8_t)~TCP_CWR;
		otcp[16] = otcp[17] = 0;
		s = fold(offload_pseudo_sum(oip, v6, m->l4_len + plen, OFFLOAD_IPPROTO_TCP) +
			 offload_sum(otcp, m->l4_len + plen));
		put_cksum(otcp + 16, s);
		out[i] = o;
	}
	tide_mbuf_free(m);
	return (int)n;
}
