/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * skeleton.c - the smallest complete tide forwarder: open the ports a spec describes, give
 * each one Rx and one Tx queue, forward every packet to the paired port (0<->1, 2<->3, a lone
 * port to itself) until Ctrl-C or a time limit, then stop and check that every buffer came
 * back to the pool.
 *
 *     skeleton [SPEC] [SECONDS]      default: simnic:ports=2,mode=inline  5
 *
 * Build in the tree (Meson) or against an installed tide:
 *     cc skeleton.c $(pkg-config --cflags --libs libtide)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <tide/mbuf.h>
#include <tide/pool.h>
#include <tide/port.h>

#define RING  1024
#define BURST 32

static volatile sig_atomic_t quit;

static void on_signal(int sig)
{
	(void)sig;
	quit = 1;
}

int main(int argc, char **argv)
{
	const char *spec = argc > 1 ? argv[1] : "simnic:ports=2,mode=inline";
	double seconds = argc > 2 ? atof(argv[2]) : 5;
	struct tide_port *ports[TIDE_MAX_PORTS];
	struct tide_pool *pool = NULL;
	unsigned long long fwd = 0, dropped = 0;
	struct timespec t0, t;
	int n, rc = 1;

	/* Every port needs RING buffers on Rx, up to RING on Tx, plus the thread's cache. */
	n = tide_ports_open(spec, ports, TIDE_MAX_PORTS);
	if (n < 0) {
		fprintf(stderr, "skeleton: cannot open '%s'\n", spec);
		return 1;
	}
	if (tide_pktpool_create("skeleton", (unsigned)n * 2 * RING + 1024, 256, 0, NULL, &pool) <
	    0) {
		fprintf(stderr, "skeleton: no memory for the pool\n");
		goto close;
	}
	for (int i = 0; i < n; i++) {
		if (tide_port_configure(ports[i], 1, 1) < 0 ||
		    tide_rxq_setup(ports[i], 0, RING, pool, NULL) < 0 ||
		    tide_txq_setup(ports[i], 0, RING, NULL) < 0 || tide_port_start(ports[i]) < 0) {
			fprintf(stderr, "skeleton: cannot set up port %d\n", i);
			goto close;
		}
	}
	/* This thread polls the queues: an index gives it a pool cache (faster, not needed). */
	tide_thread_register();
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	printf("skeleton: forwarding on %d port(s) for %.1f s\n", n, seconds);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned long iter = 0; !quit; iter++) {
		for (int i = 0; i < n; i++) {
			struct tide_mbuf *pkts[BURST];
			int out = (i ^ 1) < n ? i ^ 1 : i;
			uint16_t got = tide_rx_burst(tide_port_rxq(ports[i], 0), pkts, BURST);
			uint16_t sent = tide_tx_burst(tide_port_txq(ports[out], 0), pkts, got);

			/* What the Tx queue did not take is still ours: free it. */
			tide_mbuf_free_bulk(pkts + sent, (unsigned)(got - sent));
			fwd += sent;
			dropped += (unsigned)(got - sent);
		}
		if ((iter & 0xfff) == 0) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			if ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) * 1e-9 >=
			    seconds)
				break;
		}
	}
	/* Stopping a port hands every buffer it holds back to the pool. */
	for (int i = 0; i < n; i++)
		tide_port_stop(ports[i]);
	tide_pool_cache_flush(pool);
	printf("skeleton: forwarded %llu packets, dropped %llu, buffers outstanding %u\n", fwd,
	       dropped, tide_pool_in_use(pool));
	rc = tide_pool_in_use(pool) == 0 ? 0 : 1;
	tide_thread_unregister();
close:
	for (int i = 0; i < n; i++)
		tide_port_close(ports[i]);
	tide_pool_free(pool);
	return rc;
}
