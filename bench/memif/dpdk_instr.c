/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk_instr: DPDK's net_memif in copy mode, the counterpart of memif_instr for callgrind.
 * One EAL process with two net_memif ports on one socket, a server and a client, each with
 * one queue pair of 1024 descriptors (both PMDs' defaults: 1024-slot rings, 2048-byte
 * buffers). Every iteration sends one full burst each way and receives it on the other end,
 * in lock step, with the same four measured functions as memif_instr:
 *
 *   bench_client_tx   rte_eth_tx_burst on the client (copy into the C2S ring's buffers)
 *   bench_server_rx   rte_eth_rx_burst on the server
 *   bench_server_tx   rte_eth_tx_burst on the server
 *   bench_client_rx   rte_eth_rx_burst on the client
 *
 * Packets are built and freed outside them. net_memif's control channel runs on the EAL
 * interrupt thread; the lock step starts once both links are up.
 *
 * usage: dpdk_instr PACKETS SIZE EAL-ARGS...   (e.g. --no-pci --huge-dir DIR --file-prefix P)
 * Prints "packets=N size=S" and "ns_per_pkt=CTX,SRX,STX,CRX" (as memif_instr). Exit 1 when
 * a burst moves less than asked or a payload arrives changed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "../dpdk_instr.h"
#include "../lockstep_time.h"
#include "../../tests/tmp_util.h"

static uint16_t S, C;

__attribute__((noinline)) uint16_t bench_client_tx(struct rte_mbuf **pk, uint16_t n);
__attribute__((noinline)) uint16_t bench_client_tx(struct rte_mbuf **pk, uint16_t n)
{
	return rte_eth_tx_burst(C, 0, pk, n);
}

__attribute__((noinline)) uint16_t bench_server_rx(struct rte_mbuf **pk, uint16_t n);
__attribute__((noinline)) uint16_t bench_server_rx(struct rte_mbuf **pk, uint16_t n)
{
	return rte_eth_rx_burst(S, 0, pk, n);
}

__attribute__((noinline)) uint16_t bench_server_tx(struct rte_mbuf **pk, uint16_t n);
__attribute__((noinline)) uint16_t bench_server_tx(struct rte_mbuf **pk, uint16_t n)
{
	return rte_eth_tx_burst(S, 0, pk, n);
}

__attribute__((noinline)) uint16_t bench_client_rx(struct rte_mbuf **pk, uint16_t n);
__attribute__((noinline)) uint16_t bench_client_rx(struct rte_mbuf **pk, uint16_t n)
{
	return rte_eth_rx_burst(C, 0, pk, n);
}

int main(int argc, char **argv)
{
	char sock[108], vs[200], vc[200];
	char *eal[64];
	int ne = 0;
	struct rte_mempool *mp;
	uint64_t total, done = 0;
	uint64_t ns[4] = {0};
	unsigned size;
	struct rte_eth_link ls, lc;

	if (argc < 3 || argc > 56) {
		fprintf(stderr, "usage: %s PACKETS SIZE EAL-ARGS...\n", argv[0]);
		return 2;
	}
	total = strtoull(argv[1], NULL, 0);
	size = (unsigned)atoi(argv[2]);
	SU_CHECK(size >= 16 && size <= 2048);
	snprintf(sock, sizeof(sock), "%s/tide-dpdk-instr-%d.sock", test_tmp(), (int)getpid());
	snprintf(vs, sizeof(vs), "--vdev=net_memif0,role=server,socket=%s,socket-abstract=no,id=0",
		 sock);
	snprintf(vc, sizeof(vc), "--vdev=net_memif1,role=client,socket=%s,socket-abstract=no,id=0",
		 sock);
	eal[ne++] = argv[0];
	for (int i = 3; i < argc; i++)
		eal[ne++] = argv[i];
	eal[ne++] = vs;
	eal[ne++] = vc;
	eal[ne] = NULL;
	SU_CHECK(rte_eal_init(ne, eal) >= 0);
	SU_CHECK(rte_eth_dev_get_port_by_name("net_memif0", &S) == 0);
	SU_CHECK(rte_eth_dev_get_port_by_name("net_memif1", &C) == 0);
	mp = rte_pktmbuf_pool_create("instr", 8191, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				     rte_socket_id());
	SU_CHECK(mp != NULL);
	di_port_up(S, mp);
	di_port_up(C, mp);
	for (int i = 0;; i++) {
		SU_CHECK(i < 30000); /* 30 s */
		SU_CHECK(rte_eth_link_get_nowait(S, &ls) == 0 && rte_eth_link_get_nowait(C, &lc) == 0);
		if (ls.link_status && lc.link_status)
			break;
		usleep(1000);
	}
	/* DPDK's client posts its S2C buffers in an Rx burst: one, unmeasured, before the lock
	 * step (tide's client posts them at link up). */
	{
		struct rte_mbuf *pk[BURST];

		SU_CHECK(rte_eth_rx_burst(C, 0, pk, BURST) == 0);
	}
	while (done < total) {
		struct rte_mbuf *pk[BURST];
		unsigned k;

		di_fill(mp, pk, size, done);
		k = LS_TIMED(ns, 0, bench_client_tx(pk, BURST));
		SU_CHECK(k == BURST);
		k = LS_TIMED(ns, 1, bench_server_rx(pk, BURST));
		SU_CHECK(k == BURST);
		di_take(pk, k, size, done, 1);
		di_fill(mp, pk, size, done);
		k = LS_TIMED(ns, 2, bench_server_tx(pk, BURST));
		SU_CHECK(k == BURST);
		k = LS_TIMED(ns, 3, bench_client_rx(pk, BURST));
		SU_CHECK(k == BURST);
		di_take(pk, k, size, done, 1);
		done += BURST;
	}
	printf("packets=%llu size=%u\n", (unsigned long long)done, size);
	ls_print(ns, 4, done);
	rte_eth_dev_stop(C);
	rte_eth_dev_stop(S);
	rte_eth_dev_close(C);
	rte_eth_dev_close(S);
	rte_eal_cleanup();
	unlink(sock);
	return 0;
}
