/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The guest side of the vhost IOMMU suite (tests/vhost_iommu/run.sh): tide's virtio driver
 * over its PCI transport, through VFIO and the guest's IOMMU, on a virtio-net-pci device
 * whose backend is tide's vhost port on the host (tide-fwd macswap: every frame comes back,
 * the MAC addresses swapped). For each size, COUNT frames of the PCI suite's pattern
 * (tests/pci/wire_frame.h) go out with at most WINDOW in flight, and every one must come
 * back intact, in order, addressed to us, after a warm-up (warm_up()). Results are
 * "VIOTLB ..." lines on the console.
 *
 * usage: iotlb_guest BDF COUNT
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tide/pool.h>
#include <tide/port.h>

#include "wire_frame.h"

#define WINDOW 32

static const uint8_t peer_mac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static struct tide_mbuf *frame(struct tide_pool *pool, const uint8_t *mac, uint32_t len,
			       uint8_t tag, uint32_t seq)
{
	static uint8_t b[WIRE_MAX];
	struct tide_mbuf *m = tide_mbuf_alloc(pool);

	if (m == NULL)
		return NULL;
	wire_fill(b, len, tag, seq, peer_mac, mac);
	memcpy(tide_mbuf_append(m, (uint16_t)len), b, len);
	return m;
}

/* 0 and its seq when @m is frame @tag of @len bytes, intact, sent back to @mac. */
static int verify(const struct tide_mbuf *m, const uint8_t *mac, uint8_t tag, uint32_t len,
		  uint32_t *seq)
{
	const uint8_t *d = tide_mbuf_mtod(m, const uint8_t *);
	uint8_t t;

	if (m->next != NULL || m->pkt_len != len || memcmp(d, mac, 6) != 0 ||
	    memcmp(d + 6, peer_mac, 6) != 0)
		return -1;
	if (wire_check(d, len, &t, seq) != 0 || t != tag)
		return -2;
	return 0;
}

static void echo(struct tide_port *p, struct tide_pool *pool, const uint8_t *mac, uint8_t tag,
		 uint32_t len, unsigned count)
{
	struct tide_rxq *rq = tide_port_rxq(p, 0);
	struct tide_txq *tq = tide_port_txq(p, 0);
	unsigned sent = 0, back = 0, bad = 0, order = 0;
	double end = now() + 60;

	while (back + bad < count && now() < end) {
		struct tide_mbuf *pk[WINDOW];
		uint16_t n;

		while (sent < count && sent - back - bad < WINDOW) {
			struct tide_mbuf *m = frame(pool, mac, len, tag, sent);

			if (m == NULL)
				break;
			if (tide_tx_burst(tq, &m, 1) != 1) {
				tide_mbuf_free(m);
				break;
			}
			sent++;
		}
		n = tide_rx_burst(rq, pk, WINDOW);
		for (uint16_t i = 0; i < n; i++) {
			uint32_t seq;

			if (verify(pk[i], mac, tag, len, &seq) != 0) {
				bad++;
			} else {
				order += seq != back;
				back++;
			}
		}
		tide_mbuf_free_bulk(pk, n);
		if (n == 0)
			usleep(100);
	}
	printf("VIOTLB echo_%u sent=%u back=%u bad=%u order=%u\n", len, sent, back, bad, order);
	fflush(stdout);
}

/*
 * Before the counted rounds: the receive buffers posted (the first Rx burst posts them), then
 * one frame at a time until one comes back. A frame the host cannot deliver yet (the host's
 * Tx burst misses in its IOTLB for our receive buffers: tide-fwd then drops that burst, as
 * testpmd would) is lost here, not in a counted round. Returns the frames it took.
 */
static unsigned warm_up(struct tide_port *p, struct tide_pool *pool, const uint8_t *mac)
{
	struct tide_rxq *rq = tide_port_rxq(p, 0);
	struct tide_txq *tq = tide_port_txq(p, 0);
	double end = now() + 20;
	unsigned tries = 0;
	bool back = false;

	while (!back && now() < end) {
		struct tide_mbuf *pk[WINDOW], *m = frame(pool, mac, 60, 9, tries);
		double t = now() + 0.2;

		if (m != NULL && tide_tx_burst(tq, &m, 1) == 1)
			tries++;
		else
			tide_mbuf_free(m);
		while (!back && now() < t) {
			uint16_t n = tide_rx_burst(rq, pk, WINDOW);

			back = n > 0;
			tide_mbuf_free_bulk(pk, n);
			usleep(1000);
		}
	}
	/* Late copies of earlier tries. */
	for (double t = now() + 0.5; now() < t; usleep(1000)) {
		struct tide_mbuf *pk[WINDOW];
		uint16_t n = tide_rx_burst(rq, pk, WINDOW);

		tide_mbuf_free_bulk(pk, n);
	}
	printf("VIOTLB warm_up %s tries=%u\n", back ? "ok" : "FAIL", tries);
	return tries;
}

int main(int argc, char **argv)
{
	struct tide_pool *pool;
	struct tide_port *p;
	struct tide_link l = {0};
	struct tide_port_info pi = {.sz = sizeof(pi)};
	const uint8_t *mac;
	char spec[64];
	unsigned count;
	double end;
	int rc;

	if (argc < 3) {
		fprintf(stderr, "usage: iotlb_guest BDF COUNT\n");
		return 2;
	}
	count = (unsigned)atoi(argv[2]);
	snprintf(spec, sizeof(spec), "virtio:pci=%s", argv[1]);
	if ((rc = tide_pktpool_create("guest", 4096, 256, 2048, NULL, &pool)) < 0 ||
	    (rc = tide_port_open(spec, &p)) < 0) {
		printf("VIOTLB open FAIL rc=%d\n", rc);
		return 1;
	}
	if ((rc = tide_port_configure(p, 1, 1)) < 0 ||
	    (rc = tide_rxq_setup(p, 0, 256, pool, NULL)) < 0 ||
	    (rc = tide_txq_setup(p, 0, 256, NULL)) < 0 || (rc = tide_port_start(p)) < 0) {
		printf("VIOTLB start FAIL rc=%d\n", rc);
		return 1;
	}
	end = now() + 20;
	while (now() < end && !(tide_port_link_get(p, &l) == 0 && l.up)) {
		tide_port_poll_ctl(p);
		usleep(20000);
	}
	printf("VIOTLB link %s\n", l.up ? "ok" : "FAIL");
	tide_port_info_get(p, &pi);
	mac = pi.mac;
	{
		struct tide_mbuf *pk[WINDOW];

		tide_mbuf_free_bulk(pk, tide_rx_burst(tide_port_rxq(p, 0), pk, WINDOW));
	}
	warm_up(p, pool, mac);
	echo(p, pool, mac, 1, 60, count);
	echo(p, pool, mac, 2, 1514, count);
	tide_port_stop(p);
	tide_port_close(p);
	printf("VIOTLB pool %s in_use=%u\n", tide_pool_in_use(pool) == 0 ? "ok" : "FAIL",
	       tide_pool_in_use(pool));
	tide_pool_free(pool);
	return 0;
}
