/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memif_instr: the memif copy-mode bursts of a server and a client port in one process,
 * for instruction counts under callgrind. Every iteration sends one full burst each way
 * and receives it on the other end, in lock step: no other process, no timing, no empty
 * poll, so the counts are the same on every run. Each of the four burst calls has its own
 * noinline function (bench/common/pair_instr.c; A the client, B the server):
 *
 *   bench_client_tx   client Tx burst (copy into the C2S ring's buffers, completions)
 *   bench_server_rx   server Rx burst (C2S descriptors checked, copied into mbufs)
 *   bench_server_tx   server Tx burst (into the buffers the client posted on S2C)
 *   bench_client_rx   client Rx burst (S2C copied out, the slots re-posted)
 *
 * `valgrind --tool=callgrind --toggle-collect='bench_*'` and callgrind_annotate
 * --inclusive=yes give each one's cost (driver, Tx engine and pool operations of the
 * burst); divide by the packets printed. The packets handed to Tx are built outside those
 * functions; the packets received are freed outside them.
 *
 * usage: memif_instr PACKETS SIZE [SPEC_EXTRA]      e.g. memif_instr 200000 64 ,txfree_loop=yes
 * Prints "packets=N size=S" (per direction) and "ns_per_pkt=CTX,SRX,STX,CRX" (each burst
 * call's wall-clock time per packet: client Tx, server Rx, server Tx, client Rx). Exit 1
 * when a burst moves less than asked or a payload arrives changed, or the pool is not full
 * at the end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tide/lcore.h>
#include <tide/port.h>

#include "../../tests/memif_util.h"
#include "../common/pair_instr.h"
#include "../lockstep_time.h"

#define BURST 32

static void fill(struct tide_pool *pool, struct tide_mbuf **pk, unsigned size, uint64_t seq)
{
	for (unsigned j = 0; j < BURST; j++) {
		uint8_t *d;

		pk[j] = tide_mbuf_alloc(pool);
		MT_CHECK(pk[j] != NULL);
		d = (uint8_t *)tide_mbuf_append(pk[j], (uint16_t)size);
		memset(d, 0x5a, size);
		memcpy(d, &seq, sizeof(seq));
		seq++;
	}
}

static void take(struct tide_mbuf **pk, unsigned k, unsigned size, uint64_t seq)
{
	for (unsigned j = 0; j < k; j++) {
		uint64_t s;

		MT_CHECK(pk[j]->pkt_len == size && pk[j]->nb_segs == 1);
		memcpy(&s, tide_mbuf_mtod(pk[j], const uint8_t *), sizeof(s));
		MT_CHECK(s == seq + j);
		MT_CHECK(tide_mbuf_mtod(pk[j], const uint8_t *)[size - 1] == 0x5a);
	}
	tide_mbuf_free_bulk(pk, k);
}

int main(int argc, char **argv)
{
	struct tide_pool *pool;
	char dir[64], spec[256];
	uint64_t total, done = 0;
	uint64_t ns[4] = {0};
	unsigned size;

	if (argc < 3) {
		fprintf(stderr, "usage: %s PACKETS SIZE [SPEC_EXTRA]\n", argv[0]);
		return 2;
	}
	total = strtoull(argv[1], NULL, 0);
	size = (unsigned)atoi(argv[2]);
	MT_CHECK(size >= 16 && size <= 2048);
	tide_thread_register();
	mt_tmpdir(dir, sizeof(dir), "memif-instr");
	MT_CHECK(tide_pktpool_create("instr", 8192, 256, 0, NULL, &pool) == 0);
	snprintf(spec, sizeof(spec), "memif:socket=%s/s.sock,role=server%s", dir,
		 argc > 3 ? argv[3] : "");
	pair_b = pair_port(spec, 1024, pool);
	snprintf(spec, sizeof(spec), "memif:socket=%s/s.sock,role=client%s", dir,
		 argc > 3 ? argv[3] : "");
	pair_a = pair_port(spec, 1024, pool);
	while (!pair_up())
		usleep(1000);
	while (done < total) {
		struct tide_mbuf *pk[BURST];
		unsigned k;

		fill(pool, pk, size, done);
		k = LS_TIMED(ns, 0, PAIR_A_TX(pk, BURST));
		MT_CHECK(k == BURST);
		k = LS_TIMED(ns, 1, PAIR_B_RX(pk, BURST));
		MT_CHECK(k == BURST);
		take(pk, k, size, done);
		fill(pool, pk, size, done);
		k = LS_TIMED(ns, 2, PAIR_B_TX(pk, BURST));
		MT_CHECK(k == BURST);
		k = LS_TIMED(ns, 3, PAIR_A_RX(pk, BURST));
		MT_CHECK(k == BURST);
		take(pk, k, size, done);
		done += BURST;
	}
	printf("packets=%llu size=%u\n", (unsigned long long)done, size);
	ls_print(ns, 4, done);
	tide_port_stop(pair_a);
	tide_port_stop(pair_b);
	tide_port_close(pair_a);
	tide_port_close(pair_b);
	MT_CHECK(tide_pool_in_use(pool) == 0);
	tide_pool_free(pool);
	return 0;
}
