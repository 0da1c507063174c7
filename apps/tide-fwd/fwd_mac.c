/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mac: forward to the paired port with the Ethernet addresses rewritten for it: destination
 * the port's next-hop MAC (02:00:00:00:01:<port>), source the port's own MAC.
 */
#include "fwd.h"
#include "pkt.h"

static void mac_burst(struct fwd_lcore *lc, const struct fwd_stream *s, struct tide_mbuf **pkts,
		      uint16_t n)
{
	const struct fwd_ctx *ctx = lc->ctx;
	uint16_t out = ctx->pair[s->port];

	for (uint16_t i = 0; i < n; i++) {
		struct tide_mbuf *m = pkts[i];
		uint8_t *eth = tide_mbuf_mtod(m, uint8_t *);

		if (m->data_len < 12) {
			fwd_drop(lc, s->port, FWD_DROP_BAD_HEADER, m);
			continue;
		}
		memcpy(eth, ctx->nexthop_mac[out], 6);
		memcpy(eth + 6, ctx->info[out].mac, 6);
		fwd_tx_add(lc, out, m);
	}
}

const struct fwd_engine fwd_engine_mac = {
    .name = "mac",
    .help = "set next-hop destination and own source MAC, forward to the paired port",
    .burst = mac_burst,
};
