/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memif_peer: a tide memif port for interoperability tests. Waits for the link, sends
 * COUNT packets of SIZE bytes on each of NQ queues (sequence numbers and a payload pattern,
 * tests/memif_util.h), receives, and prints "link=1 tx=N rx=M bad=B": what was sent, what
 * came back, and how many received packets failed the check (length, queue, order:
 * sequence numbers only go up, every payload byte). Without EXPECT it runs for SECONDS; with EXPECT it stops as soon as
 * everything is sent and EXPECT packets came back (or after SECONDS).
 *
 * usage: memif_peer SPEC SECONDS COUNT SIZE [EXPECT [NQ]]
 */
#include <stdio.h>
#include <stdlib.h>

#include <tide/lcore.h>

#include "memif_util.h"

#define MAXQ 8

/* A frame as sent, queue @q, sequence at least @*next (a peer may drop, never reorder). */
static int pkt_ok(const struct tide_mbuf *m, uint32_t q, uint64_t *next, uint32_t size)
{
	static uint8_t buf[65536];
	uint32_t qq;
	uint64_t seq;

	if (m->pkt_len != size || size < 12 || tide_mbuf_read(m, 0, size, buf) < 0)
		return 0;
	memcpy(&qq, buf, 4);
	memcpy(&seq, buf + 4, 8);
	if (qq != q || seq < *next)
		return 0;
	*next = seq + 1;
	for (uint32_t i = 12; i < size; i++)
		if (buf[i] != mt_byte(q, seq, i))
			return 0;
	return 1;
}

int main(int argc, char **argv)
{
	struct tide_pool *pool;
	struct tide_port *p;
	double secs, end;
	uint64_t count, expect = 0, tx = 0, rx = 0, bad = 0;
	uint64_t sent[MAXQ] = {0}, got[MAXQ] = {0};
	unsigned nq = 1;
	uint32_t size;
	int up;

	if (argc < 5 || argc > 7) {
		fprintf(stderr, "usage: %s SPEC SECONDS COUNT SIZE [EXPECT [NQ]]\n", argv[0]);
		return 2;
	}
	secs = atof(argv[2]);
	count = strtoull(argv[3], NULL, 0);
	size = (uint32_t)strtoul(argv[4], NULL, 0);
	if (argc > 5)
		expect = strtoull(argv[5], NULL, 0);
	if (argc > 6)
		nq = (unsigned)atoi(argv[6]);
	if (nq < 1 || nq > MAXQ || size < 12 || size > 65536) {
		fprintf(stderr, "memif_peer: bad NQ or SIZE\n");
		return 2;
	}
	tide_thread_register();
	{
		/* Zero-copy: the Rx pool's memory is what the peer maps. */
		struct tide_pktpool_opts o = {
		    .sz = sizeof(o),
		    .pool_flags = strstr(argv[1], "zero_copy=yes") ? TIDE_POOL_F_SHARED : 0};

		MT_CHECK(tide_pktpool_create("peer", 16384, 256, 0, &o, &pool) == 0);
	}
	p = mt_port(argv[1], nq, 1024, pool);
	up = mt_wait_link(p, 1, secs);
	end = mt_now() + secs;
	while (up && mt_now() < end && !(expect && rx >= expect && tx >= count * nq)) {
		tide_port_poll_ctl(p);
		for (unsigned q = 0; q < nq; q++) {
			struct tide_mbuf *pk[32];
			unsigned b = 0, k;

			while (b < 32 && sent[q] + b < count)
				pk[b] = mt_pkt(pool, q, sent[q] + b, size), b++;
			k = b ? tide_tx_burst(tide_port_txq(p, q), pk, (uint16_t)b) : 0;
			for (unsigned i = k; i < b; i++)
				tide_mbuf_free(pk[i]);
			sent[q] += k;
			tx += k;
			k = tide_rx_burst(tide_port_rxq(p, q), pk, 32);
			for (unsigned i = 0; i < k; i++) {
				/* io forwarding and echo peers return our packets unchanged. */
				if (!pkt_ok(pk[i], q, &got[q], size))
					bad++;
				rx++;
			}
			tide_mbuf_free_bulk(pk, k);
		}
	}
	printf("link=%d tx=%llu rx=%llu bad=%llu\n", up, (unsigned long long)tx,
	       (unsigned long long)rx, (unsigned long long)bad);
	fflush(stdout);
	tide_port_close(p);
	MT_CHECK(tide_pool_in_use(pool) == 0);
	tide_pool_free(pool);
	return 0;
}
