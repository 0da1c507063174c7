/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_virtio_peer: a tide virtio port (the frontend) for interoperability tests with a
 * vhost-user backend that sends back what it receives (dpdk-testpmd io forwarding over
 * net_vhost). Run by test_virtio_dpdk.sh.
 *
 * Every time the link comes up a session starts: COUNT packets of SIZE bytes go out
 * (queue 0, sequence numbers, a checked payload), and what comes back is counted and
 * checked. A session ends when everything came back, or QUIET_MS (default 1000) after the
 * last packet arrived once all were sent, or when the link goes down. One line per session:
 *     "session=K tx=N rx=M bad=B faults=F"
 * The program ends after SESSIONS sessions or SECONDS, and exits 1 when a packet fails its
 * check or the pool is not whole after the port is closed.
 *
 * usage: test_virtio_peer SPEC SECONDS COUNT SIZE SESSIONS
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <tide/lcore.h>
#include <tide/port.h>

#include "memif_util.h"

static int link_up(struct tide_port *p)
{
	struct tide_link l;

	tide_port_link_get(p, &l);
	return l.up;
}

int main(int argc, char **argv)
{
	struct tide_pktpool_opts o = {.sz = sizeof(o), .pool_flags = TIDE_POOL_F_SHARED};
	const char *qm = getenv("QUIET_MS");
	struct tide_pool *pool;
	struct tide_port *p;
	struct tide_rxq *rxq;
	struct tide_txq *txq;
	double end, quiet = qm ? atof(qm) / 1000 : 1.0;
	uint64_t count;
	uint32_t size;
	unsigned sessions, done = 0;

	if (argc != 6) {
		fprintf(stderr, "usage: %s SPEC SECONDS COUNT SIZE SESSIONS\n", argv[0]);
		return 2;
	}
	end = mt_now() + atof(argv[2]);
	count = strtoull(argv[3], NULL, 0);
	size = (uint32_t)strtoul(argv[4], NULL, 0);
	sessions = (unsigned)strtoul(argv[5], NULL, 0);
	tide_thread_register();
	MT_CHECK(tide_pktpool_create("peer", 8192, 256, 0, &o, &pool) == 0);
	p = mt_port(argv[1], 1, 1024, pool);
	rxq = tide_port_rxq(p, 0);
	txq = tide_port_txq(p, 0);
	while (done < sessions && mt_now() < end) {
		uint64_t tx = 0, rx = 0, bad = 0, faults = 0;
		double last_rx = mt_now();

		if (!link_up(p)) {
			struct timespec ts = {0, 1000000};

			nanosleep(&ts, NULL);
			continue;
		}
		while (mt_now() < end && link_up(p)) {
			struct tide_mbuf *pk[32];
			unsigned b = 0, k;

			while (b < 32 && tx + b < count && (pk[b] = mt_pkt(pool, 0, tx + b, size)) != NULL)
				b++;
			k = b ? tide_tx_burst(txq, pk, (uint16_t)b) : 0;
			tide_mbuf_free_bulk(pk + k, b - k);
			tx += k;
			k = tide_rx_burst(rxq, pk, 32);
			for (unsigned i = 0; i < k; i++) {
				uint32_t q;

				if (pk[i]->pkt_len != size || tide_mbuf_read(pk[i], 0, 4, &q) < 0 || q != 0)
					bad++;
				else
					mt_check_pkt(pk[i], 0, size);
			}
			tide_mbuf_free_bulk(pk, k);
			rx += k;
			if (k)
				last_rx = mt_now();
			if (tx == count && (rx >= tx || mt_now() - last_rx > quiet))
				break;
		}
		done++;
		tide_xstats_get_by_name(p, "virtio_faults", &faults);
		printf("session=%u tx=%llu rx=%llu bad=%llu faults=%llu\n", done,
		       (unsigned long long)tx, (unsigned long long)rx, (unsigned long long)bad,
		       (unsigned long long)faults);
		fflush(stdout);
		/* The next session needs a new connection: wait for this one to end. */
		while (done < sessions && link_up(p) && mt_now() < end) {
			struct tide_mbuf *pk[32];

			tide_mbuf_free_bulk(pk, tide_rx_burst(rxq, pk, 32));
			tide_txq_done_cleanup(txq, 0);
		}
	}
	tide_port_close(p);
	if (tide_pool_in_use(pool) != 0) {
		fprintf(stderr, "test_virtio_peer: %u buffers not returned\n", tide_pool_in_use(pool));
		return 1;
	}
	tide_pool_free(pool);
	return done == sessions ? 0 : 1;
}
