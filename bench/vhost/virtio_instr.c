/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * virtio_instr: tide's virtio-net frontend (a virtio: port, vhost-user client) and tide's
 * vhost backend (a vhost: port, server) in one process, in lock step, for instruction counts
 * under callgrind: every iteration one frontend burst of 32, then one backend burst, each
 * behind a noinline function of its own (bench/common/pair_instr.c; A the frontend, B the
 * backend):
 *
 *   rx (guest -> backend):  bench_fe_tx  tide_tx_burst on the virtio port
 *                           bench_be_rx  tide_rx_burst on the vhost port
 *   tx (backend -> guest):  bench_be_tx  tide_tx_burst on the vhost port
 *                           bench_fe_rx  tide_rx_burst on the virtio port
 *
 * `valgrind --tool=callgrind --toggle-collect=bench_*` counts the two drivers' burst calls
 * alone (the packets are allocated, filled and freed outside them; the control threads'
 * handshake is not counted). Both ports at their defaults apart from the vring depth, 1024
 * as bench/vhost/run's wall-clock cells use: split rings, mrg_rxbuf and in_order on; with
 * LAYOUT packed the frontend asks for packed rings (packed=yes), which the backend offers.
 *
 * usage: virtio_instr rx|tx PACKETS SIZE [split|packed]
 * Prints "dir=.. packets=N size=S": divide each function's inclusive Ir by N. Exits 1 when a
 * packet arrives with another length, the link does not come up, the pair stalls, or a pool
 * is not whole after both ports are closed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tide/lcore.h>
#include <tide/port.h>

#include "../common/pair_instr.h"
#include "../../tests/tmp_util.h"

#define BURST 32
#define DESC 1024

#define CHECK(c)                                                                  \
	do {                                                                      \
		if (!(c)) {                                                       \
			fprintf(stderr, "virtio_instr: %s:%d: %s\n", __FILE__,    \
				__LINE__, #c);                                    \
			exit(1);                                                  \
		}                                                                 \
	} while (0)

/* @n packets of @size bytes from @pool, or fewer when it runs dry. */
static unsigned fill(struct tide_pool *pool, struct tide_mbuf **pk, unsigned n, unsigned size)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		pk[i] = tide_mbuf_alloc(pool);
		if (pk[i] == NULL)
			break;
		memset(tide_mbuf_append(pk[i], (uint16_t)size), 0x5a, size);
	}
	return i;
}

int main(int argc, char **argv)
{
	struct tide_pktpool_opts so = {.sz = sizeof(so), .pool_flags = TIDE_POOL_F_SHARED};
	struct tide_pool *fpool, *bpool;
	char path[108], spec[256];
	uint64_t total, done = 0, stalls = 0;
	unsigned size;
	int tx, packed;

	if (argc < 4 || argc > 5 || (strcmp(argv[1], "rx") != 0 && strcmp(argv[1], "tx") != 0) ||
	    (argc == 5 && strcmp(argv[4], "split") != 0 && strcmp(argv[4], "packed") != 0)) {
		fprintf(stderr, "usage: %s rx|tx PACKETS SIZE [split|packed]\n", argv[0]);
		return 2;
	}
	packed = argc == 5 && strcmp(argv[4], "packed") == 0;
	tx = strcmp(argv[1], "tx") == 0;
	total = strtoull(argv[2], NULL, 0);
	size = (unsigned)atoi(argv[3]);
	CHECK(size >= 60 && size <= 1518);
	tide_thread_register();
	snprintf(path, sizeof(path), "%s/tide-virtio-instr-%d.sock", test_tmp(), (int)getpid());
	/* A guest's pool (shared: the backend maps it) and a switch's. */
	CHECK(tide_pktpool_create("guest", 8192, 256, 0, &so, &fpool) == 0);
	CHECK(tide_pktpool_create("switch", 8192, 256, 0, NULL, &bpool) == 0);
	snprintf(spec, sizeof(spec), "vhost:socket=%s,role=server", path);
	pair_b = pair_port(spec, DESC, bpool);
	snprintf(spec, sizeof(spec), "virtio:path=%s,role=client,queue_size=%d%s", path, DESC,
		 packed ? ",packed=yes" : "");
	pair_a = pair_port(spec, DESC, fpool);
	for (unsigned i = 0; !pair_up(); i++) {
		struct timespec ts = {0, 1000000};

		CHECK(i < 60000); /* a minute (callgrind is slow) */
		nanosleep(&ts, NULL);
	}
	while (done < total) {
		struct tide_mbuf *pk[BURST], *in[BURST];
		unsigned n, k, r;

		if (tx) {
			n = fill(bpool, pk, BURST, size);
			k = PAIR_B_TX(pk, (uint16_t)n);
			tide_mbuf_free_bulk(pk + k, n - k);
			r = PAIR_A_RX(in, BURST);
		} else {
			n = fill(fpool, pk, BURST, size);
			k = PAIR_A_TX(pk, (uint16_t)n);
			tide_mbuf_free_bulk(pk + k, n - k);
			r = PAIR_B_RX(in, BURST);
		}
		for (unsigned i = 0; i < r; i++)
			CHECK(in[i]->pkt_len == size);
		tide_mbuf_free_bulk(in, r);
		if (r == 0)
			CHECK(++stalls < 1000000);
		done += r;
	}
	printf("dir=%s packets=%llu size=%u layout=%s\n", tx ? "tx" : "rx", (unsigned long long)done,
	       size, packed ? "packed" : "split");
	tide_port_close(pair_a);
	tide_port_close(pair_b);
	CHECK(tide_pool_in_use(fpool) == 0 && tide_pool_in_use(bpool) == 0);
	tide_pool_free(fpool);
	tide_pool_free(bpool);
	return 0;
}
