/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost_lockstep: one vhost-user backend and DPDK's net_virtio_user frontend (the PMD
 * bench/vhost/run's testpmd frontend uses) in one EAL process, one 32-packet burst at a time
 * in lock step, on one CPU. The backend is tide's vhost driver or DPDK's net_vhost; the
 * frontend is the same program for both, so the two runs differ in the backend alone.
 * Each port has one queue pair of 1024 descriptors; both PMDs' and tide's features are their
 * defaults (virtio-user: mrg_rxbuf and in_order on). The frontend and the backend each have
 * a pool of their own, as a guest and a switch do: a pool shared in one process would hand
 * the buffer the frontend's Tx just freed straight to net_vhost's Rx, hot in the cache. The backend listens on the socket
 * (tide: role=server; net_vhost: its default); vhost-user messages are served by the
 * backend's own control thread (tide's <port>-ctl, DPDK's vhost thread) while the frontend's
 * probe waits for the replies.
 *
 *   rx (guest -> backend):  bench_fe_tx  rte_eth_tx_burst on virtio-user (its Tx vring)
 *                           bench_be_rx  the backend's Rx burst (copies them out)
 *   tx (backend -> guest):  bench_be_tx  the backend's Tx burst (copies them in)
 *                           bench_fe_rx  rte_eth_rx_burst on virtio-user
 *
 * Two readings of the same run:
 *  - instructions: `valgrind --tool=callgrind --toggle-collect=bench_be_rx ...` counts one
 *    burst function alone (inclusive); packets are built and checked outside them;
 *  - wall clock: each burst call is timed (bench/lockstep_time.h) and printed per packet.
 *    One CPU, hot caches, no second process: the time the backend's and the frontend's work
 *    takes without the cross-CPU cache-line traffic and the scheduler that set the rate of a
 *    two-process pair on this machine (docs/vhost.md).
 *
 * usage: vhost_lockstep tide|dpdk rx|tx[-packed] PACKETS SIZE EAL-ARGS...
 *        (e.g. --no-pci -l 0 --huge-dir D --file-prefix P --single-file-segments)
 * -packed: virtio-user with packed_vq=1 (both backends offer packed virtqueues).
 * Prints "backend=.. dir=.. packets=N size=S in_order=0|1 packed=0|1 tide_pool_huge=0|1|-"
 * (what the backend negotiated; whether tide's pool is on 2 MiB pages) and "ns_per_pkt=FE,BE" (the frontend's and the backend's burst, wall clock).
 * Exit 1 when a burst moves less than asked, a payload arrives changed, the layout asked for
 * was not negotiated, or (tide) the pool is not full at the end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_vhost.h>

#include <tide/lcore.h>
#include <tide/mbuf.h>
#include <tide/port.h>
#include <tide/vhost.h>

#include "../dpdk_instr.h"
#include "../lockstep_time.h"

#define F_RING_PACKED (1ull << 34) /* VIRTIO_F_RING_PACKED */
#define F_IN_ORDER (1ull << 35)    /* VIRTIO_F_IN_ORDER */

static int TIDE;        /* the backend: tide's vhost port, else DPDK's net_vhost */
static uint16_t B, F;   /* DPDK ports: backend (net_vhost), frontend (net_virtio_user) */
static struct tide_port *TP; /* tide's backend port */

/* The four measured calls. The backend's take void ** (rte_mbuf or tide_mbuf pointers). */
__attribute__((noinline)) uint16_t bench_fe_tx(struct rte_mbuf **pk, uint16_t n);
__attribute__((noinline)) uint16_t bench_fe_tx(struct rte_mbuf **pk, uint16_t n)
{
	return rte_eth_tx_burst(F, 0, pk, n);
}

__attribute__((noinline)) uint16_t bench_fe_rx(struct rte_mbuf **pk, uint16_t n);
__attribute__((noinline)) uint16_t bench_fe_rx(struct rte_mbuf **pk, uint16_t n)
{
	return rte_eth_rx_burst(F, 0, pk, n);
}

__attribute__((noinline)) uint16_t bench_be_rx(void **pk, uint16_t n);
__attribute__((noinline)) uint16_t bench_be_rx(void **pk, uint16_t n)
{
	return TIDE ? tide_rx_burst(tide_port_rxq(TP, 0), (struct tide_mbuf **)pk, n)
		    : rte_eth_rx_burst(B, 0, (struct rte_mbuf **)pk, n);
}

__attribute__((noinline)) uint16_t bench_be_tx(void **pk, uint16_t n);
__attribute__((noinline)) uint16_t bench_be_tx(void **pk, uint16_t n)
{
	return TIDE ? tide_tx_burst(tide_port_txq(TP, 0), (struct tide_mbuf **)pk, n)
		    : rte_eth_tx_burst(B, 0, (struct rte_mbuf **)pk, n);
}

/* di_fill()/di_take() for tide's mbufs: BURST packets numbered from @seq; @k arrived whole. */
static void tide_fill(struct tide_pool *pool, void **pk, unsigned size, uint64_t seq)
{
	for (unsigned j = 0; j < BURST; j++) {
		struct tide_mbuf *m = tide_mbuf_alloc(pool);
		char *d;

		SU_CHECK(m != NULL);
		d = tide_mbuf_append(m, (uint16_t)size);
		SU_CHECK(d != NULL);
		memset(d, 0x5a, size);
		memcpy(d, &seq, sizeof(seq));
		seq++;
		pk[j] = m;
	}
}

static void tide_take(void **pk, unsigned k, unsigned size, uint64_t seq)
{
	for (unsigned j = 0; j < k; j++) {
		struct tide_mbuf *m = pk[j];
		uint64_t s;

		SU_CHECK(m->pkt_len == size && m->nb_segs == 1);
		memcpy(&s, tide_mbuf_mtod(m, const char *), sizeof(s));
		SU_CHECK(s == seq + j);
	}
	tide_mbuf_free_bulk((struct tide_mbuf **)pk, k);
}

static int links_up(void)
{
	struct rte_eth_link lf, lb;
	struct tide_link lt;

	SU_CHECK(rte_eth_link_get_nowait(F, &lf) == 0);
	if (TIDE)
		SU_CHECK(tide_port_link_get(TP, &lt) == 0);
	else
		SU_CHECK(rte_eth_link_get_nowait(B, &lb) == 0);
	return lf.link_status && (TIDE ? lt.up : lb.link_status);
}

static uint64_t backend_features(void)
{
	struct tide_vhost_info vi;
	uint64_t feat;

	if (TIDE) {
		SU_CHECK(tide_vhost_info_get(TP, &vi) == 0);
		return vi.features;
	}
	/* The only vhost-user device of this process has vid 0 (librte_vhost checks it). */
	SU_CHECK(rte_vhost_get_negotiated_features(0, &feat) == 0);
	return feat;
}

int main(int argc, char **argv)
{
	char sock[108], vb[200], vf[200], spec[160];
	char *eal[64];
	int ne = 0, tx, packed;
	struct rte_mempool *mp_fe, *mp_be = NULL;
	struct tide_pool *tpool = NULL;
	struct tide_pool_mem pm;
	uint64_t total, done = 0, feat, ns[2] = {0};
	unsigned size;

	if (argc < 5 || argc > 56 || (strcmp(argv[1], "tide") != 0 && strcmp(argv[1], "dpdk") != 0) ||
	    (strcmp(argv[2], "rx") != 0 && strcmp(argv[2], "tx") != 0 &&
	     strcmp(argv[2], "rx-packed") != 0 && strcmp(argv[2], "tx-packed") != 0)) {
		fprintf(stderr, "usage: %s tide|dpdk rx|tx[-packed] PACKETS SIZE EAL-ARGS...\n",
			argv[0]);
		return 2;
	}
	TIDE = argv[1][0] == 't';
	tx = argv[2][0] == 't';
	packed = strstr(argv[2], "-packed") != NULL;
	total = strtoull(argv[3], NULL, 0);
	size = (unsigned)atoi(argv[4]);
	SU_CHECK(size >= 60 && size <= 2048);
	snprintf(sock, sizeof(sock), "/tmp/tide-vhost-lockstep-%d.sock", (int)getpid());
	unlink(sock);
	snprintf(vb, sizeof(vb), "--vdev=net_vhost0,iface=%s,queues=1", sock);
	snprintf(vf, sizeof(vf), "net_virtio_user0,path=%s,queues=1,queue_size=1024%s", sock,
		 packed ? ",packed_vq=1" : "");
	eal[ne++] = argv[0];
	for (int i = 5; i < argc; i++)
		eal[ne++] = argv[i];
	if (!TIDE)
		eal[ne++] = vb;
	eal[ne] = NULL;
	SU_CHECK(rte_eal_init(ne, eal) >= 0);
	mp_fe = rte_pktmbuf_pool_create("frontend", 8191, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
					rte_socket_id());
	SU_CHECK(mp_fe != NULL);
	/* The backend listens first; the frontend is probed (hot-plugged) after that. */
	if (TIDE) {
		SU_CHECK(tide_thread_register() >= 0);
		SU_CHECK(tide_pktpool_create("lockstep", 8192, 256, 0, NULL, &tpool) == 0);
		snprintf(spec, sizeof(spec), "vhost:socket=%s,role=server", sock);
		SU_CHECK(tide_port_open(spec, &TP) == 0);
		SU_CHECK(tide_port_configure(TP, 1, 1) == 0);
		SU_CHECK(tide_rxq_setup(TP, 0, 1024, tpool, NULL) == 0);
		SU_CHECK(tide_txq_setup(TP, 0, 1024, NULL) == 0);
		SU_CHECK(tide_port_start(TP) == 0);
	} else {
		mp_be = rte_pktmbuf_pool_create("backend", 8191, 256, 0,
						RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
		SU_CHECK(mp_be != NULL);
		SU_CHECK(rte_eth_dev_get_port_by_name("net_vhost0", &B) == 0);
		di_port_up(B, mp_be);
	}
	SU_CHECK(rte_dev_probe(vf) == 0);
	SU_CHECK(rte_eth_dev_get_port_by_name("net_virtio_user0", &F) == 0);
	di_port_up(F, mp_fe);
	for (int i = 0; !links_up(); i++) {
		SU_CHECK(i < 30000); /* 30 s */
		usleep(1000);
	}
	feat = backend_features();
	SU_CHECK(!!(feat & F_RING_PACKED) == packed);
	while (done < total) {
		void *pk[BURST];
		unsigned k, got = 0;

		if (TIDE && tx)
			tide_fill(tpool, pk, size, done);
		else
			di_fill(tx ? mp_be : mp_fe, (struct rte_mbuf **)pk, size, done);
		k = tx ? LS_TIMED(ns, 1, bench_be_tx(pk, BURST))
		       : LS_TIMED(ns, 0, bench_fe_tx((struct rte_mbuf **)pk, BURST));
		SU_CHECK(k == BURST);
		/* The vring is filled before the first lock-step burst is taken (a queue may be
		 * enabled a moment after the link): retry an empty first poll (untimed). */
		for (int i = 0; got == 0; i++) {
			SU_CHECK(i < 30000);
			got = tx ? LS_TIMED(ns, 0, bench_fe_rx((struct rte_mbuf **)pk, BURST))
				 : LS_TIMED(ns, 1, bench_be_rx(pk, BURST));
			if (got == 0) {
				SU_CHECK(done == 0);
				ns[0] = ns[1] = 0;
				usleep(1000);
			}
		}
		SU_CHECK(got == BURST);
		if (TIDE && !tx)
			tide_take(pk, got, size, done);
		else
			di_take((struct rte_mbuf **)pk, got, size, done, 0);
		done += BURST;
	}
	if (TIDE)
		tide_pool_mem_info(tpool, &pm);
	printf("backend=%s dir=%s packets=%llu size=%u in_order=%d packed=%d tide_pool_huge=%s\n",
	       argv[1], argv[2], (unsigned long long)done, size, !!(feat & F_IN_ORDER),
	       !!(feat & F_RING_PACKED), TIDE ? (pm.hugepages ? "1" : "0") : "-");
	ls_print(ns, 2, done);
	rte_eth_dev_stop(F);
	rte_eth_dev_close(F);
	if (TIDE) {
		tide_port_close(TP);
		SU_CHECK(tide_pool_in_use(tpool) == 0);
		tide_pool_free(tpool);
	} else {
		rte_eth_dev_stop(B);
		rte_eth_dev_close(B);
	}
	rte_eal_cleanup();
	unlink(sock);
	return 0;
}
