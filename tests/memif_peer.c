/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memif_peer: a tide memif port for interoperability tests. Waits for the link, sends
 * COUNT packets of SIZE bytes (sequence numbers and a checked payload), receives for the
 * rest of SECONDS, and prints "link=1 tx=N rx=M bad=B": what was sent, what came back,
 * and how many received packets failed the payload check.
 *
 * usage: memif_peer SPEC SECONDS COUNT SIZE
 */
#include <stdio.h>
#include <stdlib.h>

#include <tide/lcore.h>

#include "memif_util.h"

int main(int argc, char **argv)
{
	struct tide_pool *pool;
	struct tide_port *p;
	double secs, end;
	uint64_t count, tx = 0, rx = 0, bad = 0;
	uint32_t size;
	int up;

	if (argc != 5) {
		fprintf(stderr, "usage: %s SPEC SECONDS COUNT SIZE\n", argv[0]);
		return 2;
	}
	secs = atof(argv[2]);
	count = strtoull(argv[3], NULL, 0);
	size = (uint32_t)strtoul(argv[4], NULL, 0);
	tide_thread_register();
	MT_CHECK(tide_pktpool_create("peer", 8192, 256, 0, NULL, &pool) == 0);
	p = mt_port(argv[1], 1, 1024, pool);
	up = mt_wait_link(p, 1, secs);
	end = mt_now() + secs;
	while (up && mt_now() < end) {
		struct tide_mbuf *pk[32];
		unsigned b = 0, k;

		tide_port_poll_ctl(p);
		while (b < 32 && tx + b < count)
			pk[b] = mt_pkt(pool, 0, tx + b, size), b++;
		k = b ? tide_tx_burst(tide_port_txq(p, 0), pk, (uint16_t)b) : 0;
		for (unsigned i = k; i < b; i++)
			tide_mbuf_free(pk[i]);
		tx += k;
		k = tide_rx_burst(tide_port_rxq(p, 0), pk, 32);
		for (unsigned i = 0; i < k; i++) {
			uint8_t buf[16];
			uint32_t q;

			/* testpmd io forwarding returns our packets unchanged. */
			if (pk[i]->pkt_len != size || tide_mbuf_read(pk[i], 0, 12, buf) < 0)
				bad++;
			else if (memcpy(&q, buf, 4), q != 0)
				bad++;
			rx++;
		}
		tide_mbuf_free_bulk(pk, k);
	}
	printf("link=%d tx=%llu rx=%llu bad=%llu\n", up, (unsigned long long)tx,
	       (unsigned long long)rx, (unsigned long long)bad);
	tide_port_close(p);
	MT_CHECK(tide_pool_in_use(pool) == 0);
	tide_pool_free(pool);
	return 0;
}
