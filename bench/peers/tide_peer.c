/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tide_peer - the tide side of bench/peers/run: exactly the loops of dpdk_peer.c, on
 * tide's pool and ring (public API only), so both sides are timed the same way.
 *
 *     tide_peer pool|ring BULK MS
 *
 * pool: tide_pool_get_bulk + tide_pool_put_bulk of BULK objects in a loop, per-thread
 *       cache of 256 (the calling thread is registered), 8191 objects of 2176 bytes.
 * ring: for "sp/sc" and "mp/mc" rings of 1024 slots, enqueue_bulk then dequeue_bulk of
 *       BULK pointers in a loop.
 * Output lines as dpdk_peer's: "<name> ns_per_obj=<x> mops=<y> objs=<n>", and for pool
 * "hugepages=0|1": whether the pool's memory is on 2 MiB pages.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tide/lcore.h>
#include <tide/pool.h>
#include <tide/ring.h>

#include "peer_loop.h"

PEER_POOL_LOOP(struct tide_pool, tide_pool_get_bulk, tide_pool_put_bulk)
PEER_RING_LOOP(struct tide_ring, tide_ring_enqueue_bulk, tide_ring_dequeue_bulk)

static int bench_pool(unsigned bulk, unsigned ms)
{
	struct tide_pool_mem mi;
	struct tide_pool *p;
	void *objs[PEER_MAX_BULK];
	uint64_t n, ns = 0, budget = (uint64_t)ms * 1000000ull;

	if (tide_thread_register() < 0 || tide_pool_create("peer_pool", 8191, 2176, 256, NULL, &p) < 0) {
		fprintf(stderr, "tide_peer: pool create failed\n");
		return 1;
	}
	tide_pool_mem_info(p, &mi);
	printf("hugepages=%d\n", mi.hugepages);
	for (int i = 0; i < 10000; i++) { /* warm the cache */
		if (tide_pool_get_bulk(p, objs, bulk) == 0)
			tide_pool_put_bulk(p, objs, bulk);
	}
	n = pool_loop(p, objs, bulk, budget, &ns);
	if (n == 0) {
		fprintf(stderr, "tide_peer: get_bulk failed\n");
		return 1;
	}
	peer_report("pool cache=256", n, ns);
	tide_pool_cache_flush(p);
	tide_pool_free(p);
	return 0;
}

static int bench_ring(unsigned bulk, unsigned ms)
{
	static const struct {
		const char *name;
		unsigned flags;
	} kinds[] = {{"ring sp/sc", TIDE_RING_SP_ENQ | TIDE_RING_SC_DEQ}, {"ring mp/mc", 0}};
	void *objs[PEER_MAX_BULK], *out[PEER_MAX_BULK];

	for (unsigned i = 0; i < bulk; i++)
		objs[i] = (void *)(uintptr_t)(i + 1);
	for (unsigned k = 0; k < 2; k++) {
		struct tide_ring *r;
		uint64_t n, ns = 0, budget = (uint64_t)ms * 1000000ull;

		if (tide_ring_create("peer_ring", 1024, kinds[k].flags, &r) < 0) {
			fprintf(stderr, "tide_peer: ring create failed\n");
			return 1;
		}
		n = ring_loop(r, objs, out, bulk, budget, &ns);
		if (n == 0) {
			fprintf(stderr, "tide_peer: dequeue_bulk failed\n");
			return 1;
		}
		peer_report(kinds[k].name, n, ns);
		tide_ring_free(r);
	}
	return 0;
}

int main(int argc, char **argv)
{
	unsigned bulk, ms;

	if (peer_args("tide_peer", "pool|ring BULK MS", argc, argv, &bulk, &ms) != 0)
		return 2;
	if (strcmp(argv[1], "pool") == 0)
		return bench_pool(bulk, ms);
	if (strcmp(argv[1], "ring") == 0)
		return bench_ring(bulk, ms);
	return 2;
}
