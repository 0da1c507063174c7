/* SPDX-License-Identifier: BSD-3-Clause */
/* The virtio-net header <-> mbuf offload fields (offload_vnet.h). */
#include <errno.h>
#include <string.h>

#include <tide/offload.h>

#include "offload_pkt.h"
#include "offload_vnet.h"

static const char *const reason_names[OFFLOAD_VNET_NR_REASONS] = {
	[OFFLOAD_VNET_OK] = "ok",
	[OFFLOAD_VNET_FLAGS] = "flags",
	[OFFLOAD_VNET_CSUM_BEYOND] = "csum_beyond",
	[OFFLOAD_VNET_CSUM_ALIGN] = "csum_align",
	[OFFLOAD_VNET_CSUM_FIELD] = "csum_field",
	[OFFLOAD_VNET_GSO_TYPE] = "gso_type",
	[OFFLOAD_VNET_GSO_SIZE] = "gso_size",
	[OFFLOAD_VNET_GSO_CSUM] = "gso_csum",
	[OFFLOAD_VNET_GSO_PROTO] = "gso_proto",
};

const char *offload_vnet_reason_name(unsigned reason)
{
	return reason < OFFLOAD_VNET_NR_REASONS ? reason_names[reason] : "?";
}

/* Enough for Ethernet, two tags, IPv6 with extensions and a TCP header with options. */
#define VNET_HDR_COPY 256

static int refuse(unsigned *reason, unsigned r)
{
	*reason = r;
	return -EINVAL;
}

int offload_vnet_to_mbuf(const struct virtio_net_hdr_mrg *h, struct tide_mbuf *m,
			 unsigned *reason)
{
	const uint8_t gso = h->gso_type & (uint8_t)~VIRTIO_NET_HDR_GSO_ECN;
	const int ecn = !!(h->gso_type & VIRTIO_NET_HDR_GSO_ECN);
	uint32_t set = 0, l4_len = 0, cs = h->csum_start, co = h->csum_offset;
	uint8_t buf[VNET_HDR_COPY];
	struct offload_pkt o;

	*reason = OFFLOAD_VNET_OK;
	if (h->flags & ~(VIRTIO_NET_HDR_F_NEEDS_CSUM | VIRTIO_NET_HDR_F_DATA_VALID))
		return refuse(reason, OFFLOAD_VNET_FLAGS);
	if ((gso != VIRTIO_NET_HDR_GSO_NONE && gso != VIRTIO_NET_HDR_GSO_TCPV4 &&
	     gso != VIRTIO_NET_HDR_GSO_TCPV6 && gso != VIRTIO_NET_HDR_GSO_UDP) ||
	    (ecn && gso != VIRTIO_NET_HDR_GSO_TCPV4 && gso != VIRTIO_NET_HDR_GSO_TCPV6))
		return refuse(reason, OFFLOAD_VNET_GSO_TYPE);
	if (gso != VIRTIO_NET_HDR_GSO_NONE) {
		if (h->gso_size == 0 || h->gso_size > m->pkt_len)
			return refuse(reason, OFFLOAD_VNET_GSO_SIZE);
		if (!(h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM))
			return refuse(reason, OFFLOAD_VNET_GSO_CSUM);
	}
	if (!(h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM)) {
		if (h->flags & VIRTIO_NET_HDR_F_DATA_VALID)
			m->ol_flags = (m->ol_flags & ~TIDE_MBUF_F_RX_L4_CKSUM_MASK) |
				      TIDE_MBUF_F_RX_L4_CKSUM_GOOD;
		return 0;
	}

	if (cs + co + 2 > m->pkt_len)
		return refuse(reason, OFFLOAD_VNET_CSUM_BEYOND);
	if (co & 1)
		return refuse(reason, OFFLOAD_VNET_CSUM_ALIGN);
	{
		uint32_t avail = m->pkt_len < VNET_HDR_COPY ? m->pkt_len : VNET_HDR_COPY;

		if (!offload_chain_ok(m) || tide_mbuf_read(m, 0, avail, buf) < 0 ||
		    offload_parse(buf, avail, m->pkt_len, &o) < 0 || o.frag || o.l2 + o.l3 != cs ||
		    !((o.proto == OFFLOAD_IPPROTO_TCP && co == 16 && o.l4len >= 20) ||
		      (o.proto == OFFLOAD_IPPROTO_UDP && co == 6 && o.l4len >= 8)))
			return refuse(reason, OFFLOAD_VNET_CSUM_FIELD);
		if (gso == VIRTIO_NET_HDR_GSO_TCPV4 || gso == VIRTIO_NET_HDR_GSO_TCPV6) {
			if (o.proto != OFFLOAD_IPPROTO_TCP || o.v6 != (gso == VIRTIO_NET_HDR_GSO_TCPV6) ||
			    cs + 13 > avail)
				return refuse(reason, OFFLOAD_VNET_GSO_PROTO);
			l4_len = (buf[cs + 12] >> 4) * 4u;
			if (l4_len < 20 || l4_len > o.l4len)
				return refuse(reason, OFFLOAD_VNET_GSO_PROTO);
			if (o.l4len - l4_len > h->gso_size)
				set = TIDE_MBUF_F_TX_TCP_SEG;
		} else if (gso == VIRTIO_NET_HDR_GSO_UDP) {
			if (o.proto != OFFLOAD_IPPROTO_UDP)
				return refuse(reason, OFFLOAD_VNET_GSO_PROTO);
			l4_len = 8;
			if (o.l4len - l4_len > h->gso_size)
				set = TIDE_MBUF_F_TX_UDP_SEG;
		}
	}

	set |= o.v6 ? TIDE_MBUF_F_TX_IPV6 : TIDE_MBUF_F_TX_IPV4;
	set |= o.proto == OFFLOAD_IPPROTO_TCP ? TIDE_MBUF_F_TX_TCP_CKSUM : TIDE_MBUF_F_TX_UDP_CKSUM;
	m->ol_flags = (m->ol_flags & ~(TIDE_MBUF_F_RX_L4_CKSUM_MASK | TIDE_MBUF_F_TX_L4_MASK)) | set |
		      TIDE_MBUF_F_RX_L4_CKSUM_NONE;
	m->l2_len = (uint8_t)o.l2;
	m->l3_len = (uint16_t)o.l3;
	if (set & (TIDE_MBUF_F_TX_TCP_SEG | TIDE_MBUF_F_TX_UDP_SEG)) {
		m->l4_len = (uint8_t)l4_len;
		m->tso_segsz = h->gso_size;
	}
	return 0;
}

int offload_vnet_from_mbuf(struct tide_mbuf *m, struct virtio_net_hdr_mrg *h)
{
	const uint32_t f = m->ol_flags, l4 = f & TIDE_MBUF_F_TX_L4_MASK;
	const uint32_t seg = f & (TIDE_MBUF_F_TX_TCP_SEG | TIDE_MBUF_F_TX_UDP_SEG);
	int v4 = !!(f & TIDE_MBUF_F_TX_IPV4), v6 = !!(f & TIDE_MBUF_F_TX_IPV6);
	uint32_t l4len, l4off, field;
	uint8_t proto, gso = VIRTIO_NET_HDR_GSO_NONE, *ip, *c;
	uint16_t hdr_len = 0;

	if (!seg && !l4 && !(f & TIDE_MBUF_F_TX_IP_CKSUM)) {
		h->flags = (f & TIDE_MBUF_F_RX_L4_CKSUM_MASK) == TIDE_MBUF_F_RX_L4_CKSUM_GOOD
				   ? VIRTIO_NET_HDR_F_DATA_VALID
				   : 0;
		h->gso_type = VIRTIO_NET_HDR_GSO_NONE;
		h->hdr_len = h->gso_size = h->csum_start = h->csum_offset = 0;
		return 0;
	}
	if (v4 + v6 != 1 || ((f & TIDE_MBUF_F_TX_IP_CKSUM) && !v4) ||
	    l4 == TIDE_MBUF_F_TX_L4_MASK || seg == (TIDE_MBUF_F_TX_TCP_SEG | TIDE_MBUF_F_TX_UDP_SEG) ||
	    offload_l3_check(m, v6, &proto, &l4len) < 0)
		return -EINVAL;
	l4off = (uint32_t)m->l2_len + m->l3_len;
	if (seg == TIDE_MBUF_F_TX_TCP_SEG || (!seg && l4 == TIDE_MBUF_F_TX_TCP_CKSUM)) {
		if (proto != OFFLOAD_IPPROTO_TCP || l4len < 20)
			return -EINVAL;
		field = 16;
	} else if (seg || l4) {
		if (proto != OFFLOAD_IPPROTO_UDP || l4len < 8)
			return -EINVAL;
		field = 6;
	} else {
		field = 0;
	}
	if (field && l4off + field + 2 > m->data_len)
		return -EINVAL;
	if (seg) {
		if (m->tso_segsz == 0 || m->l4_len < (field == 16 ? 20 : 8) || m->l4_len > l4len ||
		    l4off + m->l4_len > m->data_len)
			return -EINVAL;
		hdr_len = (uint16_t)(l4off + m->l4_len);
		if (seg == TIDE_MBUF_F_TX_UDP_SEG)
			gso = VIRTIO_NET_HDR_GSO_UDP;
		else
			gso = v6 ? VIRTIO_NET_HDR_GSO_TCPV6 : VIRTIO_NET_HDR_GSO_TCPV4;
	}

	ip = tide_mbuf_mtod_offset(m, uint8_t *, m->l2_len);
	if (f & TIDE_MBUF_F_TX_IP_CKSUM) {
		uint16_t s;

		ip[10] = ip[11] = 0;
		s = (uint16_t)~offload_sum(ip, m->l3_len);
		memcpy(ip + 10, &s, 2);
	}
	h->flags = 0;
	h->gso_type = gso;
	h->hdr_len = hdr_len;
	h->gso_size = seg ? m->tso_segsz : 0;
	h->csum_start = h->csum_offset = 0;
	if (field) {
		uint16_t s = (uint16_t)offload_pseudo_sum(ip, v6, l4len, proto);

		c = ip + m->l3_len;
		if (gso != VIRTIO_NET_HDR_GSO_UDP && gso != VIRTIO_NET_HDR_GSO_NONE && (c[13] & 0x80))
			h->gso_type |= VIRTIO_NET_HDR_GSO_ECN;
		memcpy(c + field, &s, 2);
		h->flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
		h->csum_start = (uint16_t)l4off;
		h->csum_offset = (uint16_t)field;
	}
	return 0;
}
