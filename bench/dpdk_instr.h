/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the DPDK instruction harnesses (bench/memif/dpdk_instr.c, bench/vhost/lockstep.c)
 * share: a port brought up with one 1024-descriptor queue pair, a burst of BURST packets
 * built with a sequence number, and a received burst checked and freed. The counted burst
 * calls stay in each harness; this is the work done outside them.
 */
#ifndef TIDE_BENCH_DPDK_INSTR_H
#define TIDE_BENCH_DPDK_INSTR_H

#include <stdint.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "../tests/sock_util.h"

#define BURST 32

static inline void di_port_up(uint16_t p, struct rte_mempool *mp)
{
	struct rte_eth_conf conf;

	memset(&conf, 0, sizeof(conf));
	SU_CHECK(rte_eth_dev_configure(p, 1, 1, &conf) == 0);
	SU_CHECK(rte_eth_rx_queue_setup(p, 0, 1024, rte_socket_id(), NULL, mp) == 0);
	SU_CHECK(rte_eth_tx_queue_setup(p, 0, 1024, rte_socket_id(), NULL) == 0);
	SU_CHECK(rte_eth_dev_start(p) == 0);
}

/* BURST packets of @size bytes, each starting with its sequence number from @seq. */
static inline void di_fill(struct rte_mempool *mp, struct rte_mbuf **pk, unsigned size,
			   uint64_t seq)
{
	for (unsigned j = 0; j < BURST; j++) {
		char *d;

		pk[j] = rte_pktmbuf_alloc(mp);
		SU_CHECK(pk[j] != NULL);
		d = rte_pktmbuf_append(pk[j], (uint16_t)size);
		SU_CHECK(d != NULL);
		memset(d, 0x5a, size);
		memcpy(d, &seq, sizeof(seq));
		seq++;
	}
}

/* @k packets arrived whole and in order from @seq (one segment each when @one_seg). */
static inline void di_take(struct rte_mbuf **pk, unsigned k, unsigned size, uint64_t seq,
			   int one_seg)
{
	for (unsigned j = 0; j < k; j++) {
		uint64_t s;

		SU_CHECK(pk[j]->pkt_len == size && (!one_seg || pk[j]->nb_segs == 1));
		memcpy(&s, rte_pktmbuf_mtod(pk[j], const char *), sizeof(s));
		SU_CHECK(s == seq + j);
	}
	rte_pktmbuf_free_bulk(pk, k);
}

#endif
