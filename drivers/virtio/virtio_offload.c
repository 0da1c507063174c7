/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * virtio driver: the offload features a start asks the device for, from what the queues
 * enabled, and what the device then does for the Tx queues (virtio_dev_init uses them;
 * the virtio-net header each packet carries: virtio_hdr.h).
 */
#include <tide/offload.h>

#include "virtio.h"

/*
 * The offload features to ask for, from what the queues enabled. Tx: VIRTIO_NET_F_CSUM
 * when any Tx queue enabled a checksum or TSO, HOST_TSO4/6 and HOST_ECN with TSO (a queue
 * that did not enable them writes zero headers; what the device lacks, the queues do in
 * software). Rx: the device sends partial checksums and GSO packets to every Rx queue
 * alike, so GUEST_CSUM only when every Rx queue enabled an Rx checksum offload or
 * TIDE_OFFLOAD_RX_TCP_LRO, and GUEST_TSO4/6 with GUEST_ECN only when every one enabled
 * LRO (and mergeable buffers are negotiated: a large packet spans several receive buffers).
 */
uint64_t virtio_offload_features(const struct virtio_port *vp)
{
	const struct tide_port *p = vp->port;
	uint64_t tx = 0, rx = p->nb_rxq ? ~0ull : 0, f = 0;

	for (unsigned i = 0; i < p->nb_txq; i++)
		if (p->txq[i] != NULL)
			tx |= ((const struct virtio_txq *)p->txq[i])->offloads;
	for (unsigned i = 0; i < p->nb_rxq; i++)
		rx &= p->rxq[i] != NULL ? ((const struct virtio_rxq *)p->rxq[i])->offloads : 0;
	if (tx & (TIDE_OFFLOAD_TX_TCP_CKSUM | TIDE_OFFLOAD_TX_UDP_CKSUM | TIDE_OFFLOAD_TX_TCP_TSO))
		f |= VIRTIO_BIT(VIRTIO_NET_F_CSUM);
	if (tx & TIDE_OFFLOAD_TX_TCP_TSO)
		f |= VIRTIO_BIT(VIRTIO_NET_F_HOST_TSO4) | VIRTIO_BIT(VIRTIO_NET_F_HOST_TSO6) |
		     VIRTIO_BIT(VIRTIO_NET_F_HOST_ECN);
	if (rx & (TIDE_OFFLOAD_RX_TCP_CKSUM | TIDE_OFFLOAD_RX_UDP_CKSUM | TIDE_OFFLOAD_RX_TCP_LRO))
		f |= VIRTIO_BIT(VIRTIO_NET_F_GUEST_CSUM);
	if (rx & TIDE_OFFLOAD_RX_TCP_LRO) /* dropped without MRG_RXBUF: virtio_offload_deps() */
		f |= VIRTIO_BIT(VIRTIO_NET_F_GUEST_TSO4) | VIRTIO_BIT(VIRTIO_NET_F_GUEST_TSO6) |
		     VIRTIO_BIT(VIRTIO_NET_F_GUEST_ECN);
	return f;
}

/* Drop the features whose prerequisites the device did not give (virtio 1.x, 5.1.3.1). */
uint64_t virtio_offload_deps(uint64_t f)
{
	const uint64_t gtso = VIRTIO_BIT(VIRTIO_NET_F_GUEST_TSO4) | VIRTIO_BIT(VIRTIO_NET_F_GUEST_TSO6);
	const uint64_t htso = VIRTIO_BIT(VIRTIO_NET_F_HOST_TSO4) | VIRTIO_BIT(VIRTIO_NET_F_HOST_TSO6);

	if (!(f & VIRTIO_BIT(VIRTIO_NET_F_CSUM)))
		f &= ~(htso | VIRTIO_BIT(VIRTIO_NET_F_HOST_ECN));
	if (!(f & VIRTIO_BIT(VIRTIO_NET_F_GUEST_CSUM)) || !(f & VIRTIO_BIT(VIRTIO_NET_F_MRG_RXBUF)))
		f &= ~(gtso | VIRTIO_BIT(VIRTIO_NET_F_GUEST_ECN));
	if (!(f & htso))
		f &= ~VIRTIO_BIT(VIRTIO_NET_F_HOST_ECN);
	if (!(f & gtso))
		f &= ~VIRTIO_BIT(VIRTIO_NET_F_GUEST_ECN);
	return f;
}

/* What the device does for the Tx queues (struct virtio_tx_ol.dev). */
uint32_t virtio_offload_dev(uint64_t f)
{
	return (f & VIRTIO_BIT(VIRTIO_NET_F_CSUM) ? VIRTIO_OL_CSUM : 0) |
	       (f & VIRTIO_BIT(VIRTIO_NET_F_HOST_TSO4) ? VIRTIO_OL_TSO4 : 0) |
	       (f & VIRTIO_BIT(VIRTIO_NET_F_HOST_TSO6) ? VIRTIO_OL_TSO6 : 0) |
	       (f & VIRTIO_BIT(VIRTIO_NET_F_HOST_ECN) ? VIRTIO_OL_ECN : 0);
}
