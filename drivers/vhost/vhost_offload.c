/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost data path: the checksum and segmentation offloads, off the fast paths (vhost.h;
 * docs/drivers/vhost.md, "Offloads"). The bursts call here only for a packet that has
 * something to do: a guest header with a flag or a GSO type (Rx), a packet with Tx requests
 * (Tx, on a queue that enabled Tx offloads).
 */
#include <errno.h>

#include <tide/offload.h>

#include "vhost.h"

int vhost_rx_ol(struct vhost_rxq *q, struct tide_mbuf *m, const struct virtio_net_hdr_mrg *h)
{
	unsigned reason;

	/* @h is the burst's copy of the guest's header: read once, checked here. */
	if (offload_vnet_to_mbuf(h, m, &reason) < 0) {
		tide_stat_add(&q->hdr_drops[reason < OFFLOAD_VNET_NR_REASONS ? reason : 0], 1);
		return -1;
	}
	return 0;
}

/* Keep (+1) or give back (-1) one reference on every segment of @m. */
static void ref_chain(struct tide_mbuf *m, int16_t d)
{
	for (; m != NULL; m = m->next)
		tide_mbuf_refcnt_update(m, d);
}

/* Cut @m in software: its outputs into @segs (see vhost.h), or -1 (counted). */
static int sw_segment(struct vhost_txq *q, struct tide_mbuf *m, struct tide_mbuf **segs)
{
	int k;

	ref_chain(m, 1); /* tide_offload_segment() drops one: @m stays whole until sent */
	k = tide_offload_segment(m, m->pool, segs, VHOST_GSO_MAX_SEGS);
	if (k < 0) {
		ref_chain(m, -1);
		tide_stat_add(k == -ENOBUFS ? &q->ols.nombuf : &q->ols.bad, 1);
		return -1;
	}
	return k;
}

int vhost_tx_ol_prep(struct vhost_txq *q, struct tide_mbuf *m, struct virtio_net_hdr_mrg *h,
		     struct tide_mbuf **segs)
{
	const uint32_t f = m->ol_flags;
	const unsigned g = q->vq.gfeat;

	h->num_buffers = 1;
	if (f & TIDE_MBUF_F_TX_UDP_SEG) {
		/* No UDP fragmentation is offered to the guest, and none is done in software. */
		tide_stat_add(&q->ols.bad, 1);
		return -1;
	}
	if (f & TIDE_MBUF_F_TX_TCP_SEG) {
		unsigned need =
		    VHOST_G_CSUM | ((f & TIDE_MBUF_F_TX_IPV6) ? VHOST_G_TSO6 : VHOST_G_TSO4);

		if ((g & need) != need)
			return sw_segment(q, m, segs);
		if (offload_vnet_from_mbuf(m, h) < 0) {
			tide_stat_add(&q->ols.bad, 1);
			return -1;
		}
		/* A segment with CWR asks the guest for ECN, which it must have negotiated. */
		if ((h->gso_type & VIRTIO_NET_HDR_GSO_ECN) && !(g & VHOST_G_ECN))
			return sw_segment(q, m, segs);
		return 0;
	}
	if ((f & TIDE_MBUF_F_TX_L4_MASK) && !(g & VHOST_G_CSUM)) {
		/* The guest takes no partial checksum: every checksum filled here. */
		if (tide_offload_cksum_fill(m) < 0) {
			tide_stat_add(&q->ols.bad, 1);
			return -1;
		}
		tide_stat_add(&q->ols.sw_cksum, 1);
		*h = (struct virtio_net_hdr_mrg){.num_buffers = 1};
		return 0;
	}
	/* A partial TCP/UDP checksum for the guest, the IPv4 header's filled here. */
	if (offload_vnet_from_mbuf(m, h) < 0) {
		tide_stat_add(&q->ols.bad, 1);
		return -1;
	}
	if (!(f & TIDE_MBUF_F_TX_L4_MASK))
		tide_stat_add(&q->ols.sw_cksum, 1);
	return 0;
}
