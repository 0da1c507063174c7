/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memif quiesce under concurrency: a worker thread bursts (Tx and Rx) on a tide client
 * without pause while the control thread drops the link again and again (the server port
 * stops and restarts, so the client's control plane takes its queues off the shared memory
 * and unmaps it while the worker is inside or between bursts). Both quiesce schemes:
 * membarrier() and the fence pair. Nothing may crash or touch unmapped memory (ASan, TSan),
 * every packet that arrives is intact and in order within a connection, and the pools are
 * full at the end.
 */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <unistd.h>

#include <tide/lcore.h>

#include "memif_util.h"

#define CYCLES 25

static char dir[64];
static struct tide_pool *pool_s, *pool_c;
static struct tide_port *srv, *cli;
static int stop_worker;
static uint64_t worker_rx, worker_tx;

static void *worker(void *arg)
{
	(void)arg;
	tide_thread_register();
	while (!__atomic_load_n(&stop_worker, __ATOMIC_ACQUIRE)) {
		struct tide_mbuf *pk[16];
		unsigned k;

		/* Unfilled (the server does not look): the worker spends its time in bursts,
		 * where a quiesce that did not wait for it would unmap memory under it. */
		for (unsigned i = 0; i < 16; i++) {
			MT_CHECK((pk[i] = tide_mbuf_alloc(pool_c)) != NULL);
			MT_CHECK(tide_mbuf_append(pk[i], (uint16_t)(64 + i * 97)) != NULL);
		}
		k = tide_tx_burst(tide_port_txq(cli, 0), pk, 16);
		tide_mbuf_free_bulk(pk + k, 16 - k);
		worker_tx += k;
		k = tide_rx_burst(tide_port_rxq(cli, 0), pk, 16);
		for (unsigned i = 0; i < k; i++)
			mt_check_pkt(pk[i], 1, pk[i]->pkt_len);
		worker_rx += k;
		tide_mbuf_free_bulk(pk, k);
		tide_txq_done_cleanup(tide_port_txq(cli, 0), 0);
	}
	tide_pool_cache_flush(pool_c);
	tide_thread_unregister();
	return NULL;
}

static struct tide_port *port(const char *role, const char *q, struct tide_pool *pool)
{
	char spec[256];

	snprintf(spec, sizeof(spec), "memif:socket=%s/q.sock,role=%s,id=2,quiesce=%s", dir, role,
		 q);
	return mt_port(spec, 1, 1024, pool);
}

static void run(const char *q)
{
	struct tide_memif_info info = {.sz = sizeof(info)};
	uint64_t seq = 0, srx = 0;
	pthread_t th;

	srv = port("server", q, pool_s);
	cli = port("client", q, pool_c);
	stop_worker = 0;
	worker_rx = worker_tx = 0;
	MT_CHECK(pthread_create(&th, NULL, worker, NULL) == 0);
	for (int c = 0; c < CYCLES; c++) {
		double end = mt_now() + 10;
		unsigned got = 0;

		/* Up, some traffic both ways, then the server drops the link under the worker. */
		while (got < 200) {
			struct tide_mbuf *pk[32];
			unsigned k;

			MT_CHECK(mt_now() < end);
			tide_port_poll_ctl(srv);
			tide_port_poll_ctl(cli);
			k = tide_rx_burst(tide_port_rxq(srv, 0), pk, 32);
			got += k;
			srx += k;
			tide_mbuf_free_bulk(pk, k);
			for (unsigned i = 0; i < 8; i++)
				pk[i] = mt_pkt(pool_s, 1, seq + i, 100);
			k = tide_tx_burst(tide_port_txq(srv, 0), pk, 8);
			tide_mbuf_free_bulk(pk + k, 8 - k);
			seq += k;
		}
		tide_port_stop(srv);
		/* The client's control plane sees the link go and quiesces the worker's queues. */
		MT_CHECK(mt_wait_link(cli, 0, 5));
		MT_CHECK(tide_port_start(srv) == 0);
	}
	__atomic_store_n(&stop_worker, 1, __ATOMIC_RELEASE);
	MT_CHECK(pthread_join(th, NULL) == 0);
	MT_CHECK(tide_memif_info_get(cli, &info) == 0);
	MT_CHECK(info.connects >= CYCLES && info.violations == 0);
	tide_port_close(cli);
	tide_port_close(srv);
	MT_CHECK(tide_pool_in_use(pool_s) == 0);
	MT_CHECK(tide_pool_in_use(pool_c) == 0);
	printf("ok quiesce=%s: %d disconnects under a bursting worker (worker tx %llu rx %llu, server rx %llu), pools full\n",
	       q, CYCLES, (unsigned long long)worker_tx, (unsigned long long)worker_rx,
	       (unsigned long long)srx);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	alarm(110);
	mt_tmpdir(dir, sizeof(dir), "memif-q");
	tide_thread_register();
	MT_CHECK(tide_pktpool_create("qs", 8192, 256, 0, NULL, &pool_s) == 0);
	MT_CHECK(tide_pktpool_create("qc", 8192, 256, 0, NULL, &pool_c) == 0);
	run("membarrier");
	run("fence");
	tide_pool_free(pool_s);
	tide_pool_free(pool_c);
	return 0;
}
