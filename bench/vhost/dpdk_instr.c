/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk_vhost_instr: DPDK's net_vhost backend, the counterpart of vhost_instr for
 * callgrind. One EAL process holds a net_vhost port (the backend, socket server) and a
 * net_virtio_user port (the frontend, the same PMD bench/vhost/run's testpmd frontend
 * uses) on one socket, each with one queue pair of 1024 descriptors and the PMDs' default
 * features. Every iteration moves one 32-packet burst, in lock step, in the direction asked:
 *
 *   rx (guest -> backend):  bench_fe_tx  rte_eth_tx_burst on virtio-user (its Tx vring)
 *                           bench_be_rx  rte_eth_rx_burst on net_vhost (copies them out)
 *   tx (backend -> guest):  bench_be_tx  rte_eth_tx_burst on net_vhost (copies them in)
 *                           bench_fe_rx  rte_eth_rx_burst on virtio-user
 *
 * bench_be_* are the backend's bursts, what vhost_instr's bench_burst counts for tide;
 * bench_fe_* are the frontend's own cost per packet, the same program for both backends.
 * Packets are built and checked (length, a sequence number) outside them. The vhost-user
 * messages are served by DPDK's vhost thread; the lock step starts once both links are up.
 *
 * usage: dpdk_vhost_instr rx|tx[-packed] PACKETS SIZE EAL-ARGS...  (e.g. --no-pci --huge-dir D --file-prefix P)
 * (-packed: virtio-user with packed_vq=1, which net_vhost negotiates: packed virtqueues; both
 * PMDs' other defaults stay, in_order included)
 * Prints "dir=.. packets=N size=S in_order=0|1" (VIRTIO_F_IN_ORDER negotiated). Exit 1 when a burst moves less than asked or a payload
 * arrives changed.
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

#include "../dpdk_instr.h"



static uint16_t B, F; /* backend (net_vhost), frontend (net_virtio_user) */

__attribute__((noinline)) uint16_t bench_fe_tx(struct rte_mbuf **pk, uint16_t n);
__attribute__((noinline)) uint16_t bench_fe_tx(struct rte_mbuf **pk, uint16_t n)
{
	return rte_eth_tx_burst(F, 0, pk, n);
}

__attribute__((noinline)) uint16_t bench_be_rx(struct rte_mbuf **pk, uint16_t n);
__attribute__((noinline)) uint16_t bench_be_rx(struct rte_mbuf **pk, uint16_t n)
{
	return rte_eth_rx_burst(B, 0, pk, n);
}

__attribute__((noinline)) uint16_t bench_be_tx(struct rte_mbuf **pk, uint16_t n);
__attribute__((noinline)) uint16_t bench_be_tx(struct rte_mbuf **pk, uint16_t n)
{
	return rte_eth_tx_burst(B, 0, pk, n);
}

__attribute__((noinline)) uint16_t bench_fe_rx(struct rte_mbuf **pk, uint16_t n);
__attribute__((noinline)) uint16_t bench_fe_rx(struct rte_mbuf **pk, uint16_t n)
{
	return rte_eth_rx_burst(F, 0, pk, n);
}

int main(int argc, char **argv)
{
	char sock[108], vb[200], vf[200];
	char *eal[64];
	int ne = 0, tx, packed;
	struct rte_mempool *mp;
	uint64_t total, done = 0;
	unsigned size;
	struct rte_eth_link lb, lf;
	uint64_t feat;
	int vid;

	if (argc < 4 || argc > 56 ||
	    (strcmp(argv[1], "rx") != 0 && strcmp(argv[1], "tx") != 0 &&
	     strcmp(argv[1], "rx-packed") != 0 && strcmp(argv[1], "tx-packed") != 0)) {
		fprintf(stderr, "usage: %s rx|tx[-packed] PACKETS SIZE EAL-ARGS...\n", argv[0]);
		return 2;
	}
	tx = argv[1][0] == 't';
	packed = strstr(argv[1], "-packed") != NULL;
	total = strtoull(argv[2], NULL, 0);
	size = (unsigned)atoi(argv[3]);
	SU_CHECK(size >= 60 && size <= 2048);
	snprintf(sock, sizeof(sock), "/tmp/tide-dpdk-vhost-instr-%d.sock", (int)getpid());
	unlink(sock);
	/* The backend listens (net_vhost's default, as in bench/vhost/run). It opens its socket
	 * in its configure, so the frontend is probed (hot-plugged) after that. */
	snprintf(vb, sizeof(vb), "--vdev=net_vhost0,iface=%s,queues=1", sock);
	snprintf(vf, sizeof(vf), "net_virtio_user0,path=%s,queues=1,queue_size=1024%s", sock,
		 packed ? ",packed_vq=1" : "");
	eal[ne++] = argv[0];
	for (int i = 4; i < argc; i++)
		eal[ne++] = argv[i];
	eal[ne++] = vb;
	eal[ne] = NULL;
	SU_CHECK(rte_eal_init(ne, eal) >= 0);
	SU_CHECK(rte_eth_dev_get_port_by_name("net_vhost0", &B) == 0);
	mp = rte_pktmbuf_pool_create("instr", 8191, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				     rte_socket_id());
	SU_CHECK(mp != NULL);
	di_port_up(B, mp);
	SU_CHECK(rte_dev_probe(vf) == 0);
	SU_CHECK(rte_eth_dev_get_port_by_name("net_virtio_user0", &F) == 0);
	di_port_up(F, mp);
	for (int i = 0;; i++) {
		SU_CHECK(i < 30000); /* 30 s */
		SU_CHECK(rte_eth_link_get_nowait(B, &lb) == 0 && rte_eth_link_get_nowait(F, &lf) == 0);
		if (lb.link_status && lf.link_status)
			break;
		usleep(1000);
	}
	/* What net_vhost negotiated: the layout asked for, and whether in order (the only
	 * vhost-user device of this process has vid 0; librte_vhost checks the vid). */
	vid = 0;
	SU_CHECK(rte_vhost_get_negotiated_features(vid, &feat) == 0);
	SU_CHECK(!!(feat & (1ull << 34)) == packed); /* VIRTIO_F_RING_PACKED */
	while (done < total) {
		struct rte_mbuf *pk[BURST];
		unsigned k, got = 0;

		di_fill(mp, pk, size, done);
		k = tx ? bench_be_tx(pk, BURST) : bench_fe_tx(pk, BURST);
		SU_CHECK(k == BURST);
		/* The vring is filled before the first lock-step burst is taken (the vhost
		 * queue may be enabled a moment after the link): retry an empty first poll. */
		for (int i = 0; got == 0; i++) {
			SU_CHECK(i < 30000);
			got = tx ? bench_fe_rx(pk, BURST) : bench_be_rx(pk, BURST);
			if (got == 0)
				usleep(1000);
		}
		SU_CHECK(got == BURST);
		di_take(pk, got, size, done, 0);
		done += BURST;
	}
	printf("dir=%s packets=%llu size=%u in_order=%d\n", argv[1], (unsigned long long)done,
	       size, !!(feat & (1ull << 35)));
	rte_eth_dev_stop(F);
	rte_eth_dev_stop(B);
	rte_eth_dev_close(F);
	rte_eth_dev_close(B);
	rte_eal_cleanup();
	unlink(sock);
	return 0;
}
