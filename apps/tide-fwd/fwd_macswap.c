/* SPDX-License-Identifier: BSD-3-Clause */
/* macswap: swap the Ethernet source and destination addresses, forward to the paired port. */
#include "fwd.h"
#include "pkt.h"

static void macswap_burst(struct fwd_lcore *lc, const struct fwd_stream *s, struct tide_mbuf **pkts,
			  uint16_t n)
{
	uint16_t out = lc->ctx->pair[s->port];

	for (uint16_t i = 0; i < n; i++) {
		struct tide_mbuf *m = pkts[i];
		uint8_t *eth = tide_mbuf_mtod(m, uint8_t *);
		uint8_t tmp[6];

		if (m->data_len < 12) {
			fwd_drop(lc, s->port, FWD_DROP_BAD_HEADER, m);
			continue;
		}
		memcpy(tmp, eth, 6);
		memcpy(eth, eth + 6, 6);
		memcpy(eth + 6, tmp, 6);
		fwd_tx_add(lc, out, m);
	}
}

const struct fwd_engine fwd_engine_macswap = {
    .name = "macswap",
    .help = "swap source and destination MAC, forward to the paired port",
    .burst = macswap_burst,
};
