/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Offloads in tide-fwd: which ones each queue enables, and the software fallback for packets
 * whose Tx requests (a virtio guest's partial checksum or TSO frame, received on a port with
 * Rx offloads) their egress queue does not do.
 */
#include "fwd.h"

/* What forwarding uses of a port's Rx offloads: checksum status, and large TCP packets
 * passed on whole (the egress port, or the software fallback below, cuts them). */
#define FWD_RX_OL                                                                          \
	(TIDE_OFFLOAD_RX_IPV4_CKSUM | TIDE_OFFLOAD_RX_TCP_CKSUM | TIDE_OFFLOAD_RX_UDP_CKSUM | \
	 TIDE_OFFLOAD_RX_TCP_LRO)

/* Every Tx request flag. */
#define FWD_TX_REQ                                                                      \
	(TIDE_MBUF_F_TX_IP_CKSUM | TIDE_MBUF_F_TX_L4_MASK | TIDE_MBUF_F_TX_TCP_SEG |    \
	 TIDE_MBUF_F_TX_UDP_SEG)

uint64_t fwd_rx_offloads(const struct fwd_ctx *ctx, unsigned p)
{
	return ctx->cfg->offloads ? ctx->info[p].rx_offload_capa & FWD_RX_OL : 0;
}

uint64_t fwd_tx_offloads(const struct fwd_ctx *ctx, unsigned p)
{
	return ctx->cfg->offloads ? ctx->info[p].tx_offload_capa & TIDE_OFFLOAD_TX_ALL : 0;
}

/* The requests of @m its egress queue (enabled offloads @en) does not do. */
static uint32_t missing(const struct tide_mbuf *m, uint64_t en)
{
	uint32_t f = m->ol_flags, miss = 0;

	if ((f & TIDE_MBUF_F_TX_IP_CKSUM) && !(en & TIDE_OFFLOAD_TX_IPV4_CKSUM))
		miss |= TIDE_MBUF_F_TX_IP_CKSUM;
	if ((f & TIDE_MBUF_F_TX_L4_MASK) == TIDE_MBUF_F_TX_TCP_CKSUM &&
	    !(en & (TIDE_OFFLOAD_TX_TCP_CKSUM | TIDE_OFFLOAD_TX_TCP_TSO)))
		miss |= TIDE_MBUF_F_TX_TCP_CKSUM;
	if ((f & TIDE_MBUF_F_TX_L4_MASK) == TIDE_MBUF_F_TX_UDP_CKSUM &&
	    !(en & TIDE_OFFLOAD_TX_UDP_CKSUM))
		miss |= TIDE_MBUF_F_TX_UDP_CKSUM;
	if ((f & TIDE_MBUF_F_TX_TCP_SEG) && !(en & TIDE_OFFLOAD_TX_TCP_TSO))
		miss |= TIDE_MBUF_F_TX_TCP_SEG;
	if ((f & TIDE_MBUF_F_TX_UDP_SEG) && !(en & TIDE_OFFLOAD_TX_UDP_SEG))
		miss |= TIDE_MBUF_F_TX_UDP_SEG;
	return miss;
}

/*
 * Send @n packets of @pkts on @port's queue; what it refused is freed and counted. A
 * software segmentation turns one received packet into up to ~45, more than an egress ring
 * sized for bursts takes at once: the queue is given FWD_OL_TX_RETRY more calls in a row
 * without progress before the rest is dropped (each call completes what the device sent;
 * AF_XDP kicks the kernel in it). Dropping instead cost a guest's TCP stream its
 * retransmission timeouts: 32 MiB through AF_XDP took 28 s instead of 2.
 */
#define FWD_OL_TX_RETRY 64

static void send(struct fwd_lcore *lc, uint16_t port, struct tide_mbuf **pkts, uint16_t n)
{
	struct tide_txq *q = lc->txq[port];
	uint16_t k = 0;

	for (unsigned idle = 0; tide_likely(q != NULL) && k < n && idle <= FWD_OL_TX_RETRY;) {
		uint16_t s = tide_tx_burst(q, pkts + k, (uint16_t)(n - k));

		k = (uint16_t)(k + s);
		idle = s ? 0 : idle + 1;
	}
	lc->sent += k;
	if (k < n) {
		tide_mbuf_free_bulk(pkts + k, (unsigned)(n - k));
		fwd_stat_add(&lc->ctr[port].drops[q ? FWD_DROP_TX_FULL : FWD_DROP_NO_TXQ],
			     (uint64_t)(n - k));
	}
}

/*
 * One egress buffer: packets that need nothing stay in place; a segmented packet's outputs
 * go out in its place, in order: what was gathered before it is sent first when they do not
 * fit behind it.
 */
static void flush_port(struct fwd_lcore *lc, uint16_t port, struct fwd_txbuf *b)
{
	const uint64_t en = lc->ctx->tx_ol[port];
	struct tide_mbuf *segs[FWD_BURST_MAX];
	struct fwd_ctr *c = &lc->ctr[port];
	uint16_t o = 0;

	for (uint16_t i = 0; i < b->n; i++) {
		struct tide_mbuf *m = b->pkts[i];
		uint32_t miss;
		int k;

		/* One test for a packet without requests (most of them). */
		if (tide_likely(!(m->ol_flags & FWD_TX_REQ)) || (miss = missing(m, en)) == 0) {
			b->pkts[o++] = m;
			continue;
		}
		if (miss & (TIDE_MBUF_F_TX_TCP_SEG | TIDE_MBUF_F_TX_UDP_SEG)) {
			k = tide_offload_segment(m, m->pool, segs, FWD_BURST_MAX);
			if (k < 0) {
				fwd_drop(lc, port, FWD_DROP_OFFLOAD, m);
				continue;
			}
			fwd_stat_add(&c->sw_gso, 1);
			/* b->pkts[o..i] is free: the packets before i are at most o <= i. */
			if (o + k > i + 1) {
				send(lc, port, b->pkts, o);
				o = 0;
			}
			if (k > i + 1) {
				/* More outputs than slots left behind: send them at once. */
				send(lc, port, segs, (uint16_t)k);
				continue;
			}
			memcpy(b->pkts + o, segs, (size_t)k * sizeof(*segs));
			o = (uint16_t)(o + k);
			continue;
		}
		if (tide_offload_cksum_fill(m) < 0) {
			fwd_drop(lc, port, FWD_DROP_OFFLOAD, m);
			continue;
		}
		fwd_stat_add(&c->sw_cksum, 1);
		b->pkts[o++] = m;
	}
	if (o != 0)
		send(lc, port, b->pkts, o);
	b->n = 0;
}

void fwd_tx_flush_ol(struct fwd_lcore *lc)
{
	for (unsigned i = 0; i < lc->ndirty; i++) {
		uint16_t port = lc->dirty[i];

		flush_port(lc, port, &lc->txb[port]);
	}
	lc->ndirty = 0;
}
