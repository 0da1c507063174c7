/* SPDX-License-Identifier: BSD-3-Clause */
/* rxonly: count (the loop does) and free. */
#include "fwd.h"

static void rxonly_burst(struct fwd_lcore *lc, const struct fwd_stream *s, struct tide_mbuf **pkts,
			 uint16_t n)
{
	(void)lc;
	(void)s;
	tide_mbuf_free_bulk(pkts, n);
}

const struct fwd_engine fwd_engine_rxonly = {
    .name = "rxonly",
    .help = "receive, count and free",
    .burst = rxonly_burst,
};
