/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The virtio frontend's connection changes under a bursting worker: a worker thread sends
 * and receives on the virtio port without pause while the main thread serves the backend
 * (a tide vhost port) and stops and restarts it, CYCLES times. Each time the frontend's
 * control thread takes the queues off their vrings, and on the reconnect resets the rings
 * and posts the receive buffers while the worker may be inside a burst: the quiesce scheme
 * must keep them apart (this test runs under ThreadSanitizer in the TSan build). Every
 * packet the worker receives is checked, and both pools are whole at the end.
 *
 * With the argument "packed" the frontend asks for packed rings (packed=yes) and the
 * backend is reopened at each cycle, offering them (packed=yes) and not (packed=no) in
 * turn: the layout changes from one connection to the next under the worker, and each
 * connection's layout is checked in what the backend negotiated.
 */
#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tide/lcore.h>
#include <tide/port.h>
#include <tide/vhost.h>

#include "memif_util.h"

#define CYCLES 10

static char dir[64];
static struct tide_pool *pool_v, *pool_h;
static struct tide_port *v, *h;
static uint32_t stop_worker;
static uint64_t worker_tx, worker_rx;

/* mt_check_pkt() with a buffer of the caller's (both threads check what they receive). */
static void check_pkt(const struct tide_mbuf *m, uint32_t q)
{
	uint8_t buf[2048];
	uint32_t len = m->pkt_len, qq;
	uint64_t seq;

	MT_CHECK(len >= 12 && len <= sizeof(buf));
	MT_CHECK(tide_mbuf_read(m, 0, len, buf) == 0);
	memcpy(&qq, buf, 4);
	memcpy(&seq, buf + 4, 8);
	MT_CHECK(qq == q);
	for (uint32_t i = 12; i < len; i++)
		MT_CHECK(buf[i] == mt_byte(q, seq, i));
}

static void *worker(void *arg)
{
	(void)arg;
	tide_thread_register();
	while (!__atomic_load_n(&stop_worker, __ATOMIC_ACQUIRE)) {
		struct tide_mbuf *pk[16];
		unsigned k;

		for (unsigned i = 0; i < 16; i++)
			MT_CHECK((pk[i] = mt_pkt(pool_v, 2, worker_tx + i, 64 + i * 61)) != NULL);
		k = tide_tx_burst(tide_port_txq(v, 0), pk, 16);
		tide_mbuf_free_bulk(pk + k, 16 - k);
		worker_tx += k;
		k = tide_rx_burst(tide_port_rxq(v, 0), pk, 16);
		for (unsigned i = 0; i < k; i++)
			check_pkt(pk[i], 1);
		worker_rx += k;
		tide_mbuf_free_bulk(pk, k);
		tide_txq_done_cleanup(tide_port_txq(v, 0), 0);
	}
	tide_pool_cache_flush(pool_v);
	tide_thread_unregister();
	return NULL;
}

/* The backend, offering packed rings or not. */
static struct tide_port *backend(bool packed)
{
	char spec[256];

	snprintf(spec, sizeof(spec), "vhost:socket=%s/q.sock,role=server,packed=%s", dir,
		 packed ? "yes" : "no");
	return mt_port(spec, 1, 256, pool_h);
}

int main(int argc, char **argv)
{
	struct tide_pktpool_opts o = {.sz = sizeof(o), .pool_flags = TIDE_POOL_F_SHARED};
	char spec[256];
	uint64_t seq = 0, hrx = 0, connects = 0, faults = 1, on_packed = 0;
	bool packed = argc > 1 && strcmp(argv[1], "packed") == 0;
	pthread_t th;

	signal(SIGPIPE, SIG_IGN);
	alarm(110);
	mt_tmpdir(dir, sizeof(dir), "virtio-q");
	tide_thread_register();
	MT_CHECK(tide_pktpool_create("qv", 4096, 256, 0, &o, &pool_v) == 0);
	MT_CHECK(tide_pktpool_create("qh", 4096, 256, 0, NULL, &pool_h) == 0);
	h = backend(packed);
	snprintf(spec, sizeof(spec), "virtio:path=%s/q.sock,role=client%s", dir,
		 packed ? ",packed=yes" : "");
	v = mt_port(spec, 1, 256, pool_v);
	MT_CHECK(pthread_create(&th, NULL, worker, NULL) == 0);
	for (int c = 0; c < CYCLES; c++) {
		double end = mt_now() + 10;
		unsigned got = 0;

		MT_CHECK(mt_wait_link(v, 1, 10));
		if (packed) {
			struct tide_vhost_info vi = {.sz = sizeof(vi)};

			/* Offered on even cycles only: the frontend follows. */
			MT_CHECK(tide_vhost_info_get(h, &vi) == 0);
			MT_CHECK(!!(vi.features & (1ull << 34)) == (c % 2 == 0));
			on_packed += c % 2 == 0;
		}
		/* Traffic both ways, then the backend leaves under the worker. */
		while (got < 200) {
			struct tide_mbuf *pk[32];
			unsigned k;

			MT_CHECK(mt_now() < end);
			k = tide_rx_burst(tide_port_rxq(h, 0), pk, 32);
			for (unsigned i = 0; i < k; i++)
				check_pkt(pk[i], 2);
			got += k;
			hrx += k;
			tide_mbuf_free_bulk(pk, k);
			for (unsigned i = 0; i < 8; i++)
				MT_CHECK((pk[i] = mt_pkt(pool_h, 1, seq + i, 100 + i * 3)) != NULL);
			k = tide_tx_burst(tide_port_txq(h, 0), pk, 8);
			tide_mbuf_free_bulk(pk + k, 8 - k);
			seq += k;
		}
		MT_CHECK(tide_port_stop(h) == 0);
		MT_CHECK(mt_wait_link(v, 0, 5));
		if (packed) {
			tide_port_close(h);
			h = backend(c % 2 == 1);
		} else {
			MT_CHECK(tide_port_start(h) == 0);
		}
	}
	MT_CHECK(mt_wait_link(v, 1, 10));
	__atomic_store_n(&stop_worker, 1, __ATOMIC_RELEASE);
	MT_CHECK(pthread_join(th, NULL) == 0);
	MT_CHECK(tide_xstats_get_by_name(v, "virtio_connects", &connects) == 0);
	MT_CHECK(tide_xstats_get_by_name(v, "virtio_faults", &faults) == 0);
	MT_CHECK(connects == CYCLES + 1 && faults == 0);
	tide_port_close(v);
	tide_port_close(h);
	tide_pool_cache_flush(pool_v);
	tide_pool_cache_flush(pool_h);
	MT_CHECK(tide_pool_in_use(pool_v) == 0);
	MT_CHECK(tide_pool_in_use(pool_h) == 0);
	printf("ok: %d disconnects under a bursting worker (worker tx %llu rx %llu, backend rx %llu, %llu connections on packed rings), pools whole\n",
	       CYCLES, (unsigned long long)worker_tx, (unsigned long long)worker_rx,
	       (unsigned long long)hrx, (unsigned long long)on_packed);
	tide_pool_free(pool_v);
	tide_pool_free(pool_h);
	return 0;
}
