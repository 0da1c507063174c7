/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk_peer - the DPDK side of bench/peers/run: the same single-thread loops tide-bench
 * times, on DPDK's mempool and ring, so that both run on one core with one method.
 *
 *     dpdk_peer [EAL options] -- pool|ring BULK MS
 *
 * pool: rte_mempool_get_bulk + rte_mempool_put_bulk of BULK objects in a loop, per-lcore
 *       cache of 256 (the main lcore's), 8191 objects of 2176 bytes.
 * ring: for "sp/sc" and "mp/mc" rings of 1024 slots, rte_ring_enqueue_bulk then
 *       rte_ring_dequeue_bulk of BULK pointers in a loop.
 * Prints one line per figure: "<name> ns_per_obj=<x> mops=<y> objs=<n>", where ns_per_obj is
 * the time of one get+put (enqueue+dequeue) pair divided by BULK, as tide-bench reports it
 * (objs: how many, for instructions per object under callgrind), and "hugepages=0|1": whether
 * the EAL runs on hugepages.
 * Built by bench/peers/run from the installed DPDK headers (pkg-config libdpdk).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "peer_loop.h"

PEER_POOL_LOOP(struct rte_mempool, rte_mempool_get_bulk, rte_mempool_put_bulk)
PEER_RING_LOOP(struct rte_ring, rte_ring_enqueue_bulk, rte_ring_dequeue_bulk)

static int bench_pool(unsigned bulk, unsigned ms)
{
	struct rte_mempool *mp = rte_mempool_create("peer_pool", 8191, 2176, 256, 0, NULL, NULL,
						    NULL, NULL, SOCKET_ID_ANY, 0);
	void *objs[PEER_MAX_BULK];
	uint64_t n, ns = 0, budget = (uint64_t)ms * 1000000ull;

	if (mp == NULL) {
		fprintf(stderr, "dpdk_peer: mempool create failed: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	for (int i = 0; i < 10000; i++) { /* warm the cache */
		if (rte_mempool_get_bulk(mp, objs, bulk) == 0)
			rte_mempool_put_bulk(mp, objs, bulk);
	}
	n = pool_loop(mp, objs, bulk, budget, &ns);
	if (n == 0) {
		fprintf(stderr, "dpdk_peer: get_bulk failed\n");
		return 1;
	}
	peer_report("pool cache=256", n, ns);
	rte_mempool_free(mp);
	return 0;
}

static int bench_ring(unsigned bulk, unsigned ms)
{
	static const struct {
		const char *name;
		unsigned flags;
	} kinds[] = {{"ring sp/sc", RING_F_SP_ENQ | RING_F_SC_DEQ}, {"ring mp/mc", 0}};
	void *objs[PEER_MAX_BULK], *out[PEER_MAX_BULK];

	for (unsigned i = 0; i < bulk; i++)
		objs[i] = (void *)(uintptr_t)(i + 1);
	for (unsigned k = 0; k < 2; k++) {
		char nm[32];
		struct rte_ring *r;
		uint64_t n, ns = 0, budget = (uint64_t)ms * 1000000ull;

		snprintf(nm, sizeof(nm), "peer_ring%u", k);
		r = rte_ring_create(nm, 1024, SOCKET_ID_ANY, kinds[k].flags);
		if (r == NULL) {
			fprintf(stderr, "dpdk_peer: ring create failed: %s\n", rte_strerror(rte_errno));
			return 1;
		}
		n = ring_loop(r, objs, out, bulk, budget, &ns);
		if (n == 0) {
			fprintf(stderr, "dpdk_peer: dequeue_bulk failed\n");
			return 1;
		}
		peer_report(kinds[k].name, n, ns);
		rte_ring_free(r);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int n = rte_eal_init(argc, argv), rc;
	unsigned bulk, ms;

	if (n < 0) {
		fprintf(stderr, "dpdk_peer: EAL init failed\n");
		return 1;
	}
	argc -= n;
	argv += n;
	if (peer_args("dpdk_peer", "[EAL options] -- pool|ring BULK MS", argc, argv, &bulk, &ms) != 0)
		return 2;
	/* bench/peers/run refuses a ratio against DPDK without hugepages (--no-huge). */
	printf("hugepages=%d\n", rte_eal_has_hugepages());
	if (strcmp(argv[1], "pool") == 0)
		rc = bench_pool(bulk, ms);
	else if (strcmp(argv[1], "ring") == 0)
		rc = bench_ring(bulk, ms);
	else
		rc = 2;
	rte_eal_cleanup();
	return rc;
}
