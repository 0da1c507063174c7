/* SPDX-License-Identifier: BSD-3-Clause */
/* io: forward every packet untouched to the paired port (0<->1, 2<->3; a lone port to itself). */
#include "fwd.h"

static void io_burst(struct fwd_lcore *lc, const struct fwd_stream *s, struct tide_mbuf **pkts,
		     uint16_t n)
{
	uint16_t out = lc->ctx->pair[s->port];

	for (uint16_t i = 0; i < n; i++)
		fwd_tx_add(lc, out, pkts[i]);
}

const struct fwd_engine fwd_engine_io = {
    .name = "io",
    .help = "forward untouched to the paired port",
    .burst = io_burst,
};
