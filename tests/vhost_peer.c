/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost_peer: a tide vhost port for interoperability tests with a frontend that sends back
 * what it receives (dpdk-testpmd io forwarding over net_virtio_user).
 *
 * Every time the link comes up a session starts: the peer sends COUNT packets of SIZE bytes
 * on each queue (sequence numbers and a checked payload; the first 12 bytes carry queue and
 * sequence, so testpmd's io forwarding returns them unchanged), and counts and checks what
 * comes back. A session ends when the link goes down or when SESSIONS have all been
 * served and everything came back. The peer prints one line per session,
 *     "session=K link=1 tx=N rx=M bad=B"
 * and exits after SECONDS, after the last session, or with status 1 when a received packet
 * fails its check or buffers were not returned to the pool.
 *
 * usage: vhost_peer SPEC SECONDS COUNT SIZE QUEUES SESSIONS
 *   A session that got back every packet it sent ends at once; with QUIET_MS set, a session
 *   also ends when nothing arrived for that many milliseconds after all were sent, and with
 *   STOP_FILE set as well only once the file STOP_FILE.K exists for session K (the test
 *   creates it when the frontend has counted every packet we sent).
 *   With START_FILE set, session K sends nothing until the file START_FILE.K exists: the
 *   test creates it once the frontend's port has started. DPDK's virtio PMD makes its
 *   receive ring available before its port start ends and then discards, uncounted, what
 *   the backend completed in between (virtio_dev_start: virtqueue_rxvq_flush); a test that
 *   counts every packet must not send into that window.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <tide/lcore.h>
#include <tide/vhost.h>

#include "memif_util.h"

static int link_up(struct tide_port *p)
{
	struct tide_link l;

	tide_port_link_get(p, &l);
	return l.up;
}

int main(int argc, char **argv)
{
	struct tide_pool *pool;
	struct tide_port *p;
	double end, quiet;
	uint64_t count, tx[TIDE_MAX_QUEUES], rx[TIDE_MAX_QUEUES], bad, first;
	uint32_t size;
	unsigned nq, sessions, done = 0;
	const char *qm = getenv("QUIET_MS"), *stop = getenv("STOP_FILE");
	const char *start = getenv("START_FILE");

	if (argc != 7) {
		fprintf(stderr, "usage: %s SPEC SECONDS COUNT SIZE QUEUES SESSIONS\n", argv[0]);
		return 2;
	}
	end = mt_now() + atof(argv[2]);
	count = strtoull(argv[3], NULL, 0);
	size = (uint32_t)strtoul(argv[4], NULL, 0);
	nq = (unsigned)strtoul(argv[5], NULL, 0);
	sessions = (unsigned)strtoul(argv[6], NULL, 0);
	quiet = qm ? atof(qm) / 1000 : 0;
	MT_CHECK(nq >= 1 && nq <= TIDE_MAX_QUEUES);
	tide_thread_register();
	MT_CHECK(tide_pktpool_create("peer", 16384, 256, 0, NULL, &pool) == 0);
	p = mt_port(argv[1], nq, 1024, pool);
	while (done < sessions && mt_now() < end) {
		uint64_t ttx = 0, trx = 0;
		double last_rx;
		bool released = stop == NULL, started = start == NULL;
		unsigned iter = 0;

		if (!link_up(p)) {
			tide_port_poll_ctl(p);
			struct timespec ts = {0, 1000000};
			nanosleep(&ts, NULL);
			continue;
		}
		/* A session: while the link stays up. */
		for (unsigned q = 0; q < nq; q++)
			tx[q] = rx[q] = 0;
		bad = 0;
		first = UINT64_MAX;
		last_rx = mt_now();
		while (mt_now() < end) {
			int all_sent = 1, all_back = 1;

			tide_port_poll_ctl(p);
			if (!link_up(p))
				break;
			for (unsigned q = 0; q < nq; q++) {
				struct tide_mbuf *pk[32];
				unsigned b = 0, k;

				while (started && b < 32 && tx[q] + b < count &&
				       (pk[b] = mt_pkt(pool, q, tx[q] + b, size)) != NULL)
					b++;
				k = b ? tide_tx_burst(tide_port_txq(p, q), pk, (uint16_t)b) : 0;
				for (unsigned i = k; i < b; i++)
					tide_mbuf_free(pk[i]);
				tx[q] += k;
				k = tide_rx_burst(tide_port_rxq(p, q), pk, 32);
				for (unsigned i = 0; i < k; i++) {
					/* testpmd io forwarding keeps queue q's packets on queue q
					 * only with one queue; with several, RSS picks the queue. */
					uint32_t qq;

					if (pk[i]->pkt_len != size ||
					    tide_mbuf_read(pk[i], 0, 4, &qq) < 0 || qq >= nq)
						bad++;
					else {
						uint64_t seq = mt_check_pkt(pk[i], qq, size);

						first = seq < first ? seq : first;
					}
					rx[q]++;
				}
				if (k)
					last_rx = mt_now();
				tide_mbuf_free_bulk(pk, k);
				all_sent &= tx[q] == count;
			}
			ttx = trx = 0;
			for (unsigned q = 0; q < nq; q++)
				ttx += tx[q], trx += rx[q];
			all_back = trx >= ttx;
			if (all_sent && all_back && done + 1 == sessions)
				break;
			if (!started && ++iter % 1024 == 0) {
				char fn[512];

				snprintf(fn, sizeof(fn), "%s.%u", start, done + 1);
				started = access(fn, F_OK) == 0;
			}
			if (all_sent && !released && ++iter % 1024 == 0) {
				char fn[512];

				snprintf(fn, sizeof(fn), "%s.%u", stop, done + 1);
				released = access(fn, F_OK) == 0;
				if (released)
					last_rx = mt_now(); /* the quiet period starts now */
			}
			if (all_sent && released && quiet > 0 && mt_now() - last_rx > quiet)
				break;
		}
		done++;
		{
			struct tide_port_stats st = {.sz = sizeof(st)};
			struct tide_vhost_info vi = {.sz = sizeof(vi)};

			tide_port_stats_get(p, &st);
			tide_vhost_info_get(p, &vi);
			printf("session=%u link=1 tx=%llu rx=%llu bad=%llu txerr=%llu first=%lld packed=%d\n",
			       done, (unsigned long long)ttx, (unsigned long long)trx,
			       (unsigned long long)bad, (unsigned long long)st.oerrors,
			       first == UINT64_MAX ? -1 : (long long)first,
			       (int)((vi.features >> 34) & 1)); /* VIRTIO_F_RING_PACKED */
		}
		fflush(stdout);
		/* Wait for this connection to end before the next session (unless it was the last). */
		while (done < sessions && link_up(p) && mt_now() < end) {
			struct tide_mbuf *pk[32];

			tide_port_poll_ctl(p);
			for (unsigned q = 0; q < nq; q++)
				tide_mbuf_free_bulk(pk, tide_rx_burst(tide_port_rxq(p, q), pk, 32));
		}
	}
	{
		struct tide_vhost_info vi = {.sz = sizeof(vi)};

		tide_vhost_info_get(p, &vi);
		printf("connects=%llu disconnects=%llu violations=%llu reason=%s\n",
		       (unsigned long long)vi.connects, (unsigned long long)vi.disconnects,
		       (unsigned long long)vi.violations, vi.reason);
	}
	tide_port_close(p);
	if (tide_pool_in_use(pool) != 0) {
		fprintf(stderr, "vhost_peer: %u buffers not returned\n", tide_pool_in_use(pool));
		return 1;
	}
	tide_pool_free(pool);
	return 0;
}
