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

#define MAX_BULK 512

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void report(const char *name, uint64_t objs, uint64_t ns)
{
	printf("%s ns_per_obj=%.3f mops=%.3f objs=%llu\n", name, (double)ns / (double)objs,
	       (double)objs * 1e3 / (double)ns, (unsigned long long)objs);
}

/* The timed loop on its own, so that callgrind can count it alone (--toggle-collect=pool_loop).
 * Returns the objects got and put, 0 when a get failed; *@ns: the time taken. */
static __attribute__((noinline)) uint64_t pool_loop(struct rte_mempool *mp, void **objs, unsigned bulk,
						     uint64_t budget, uint64_t *ns)
{
	uint64_t t0 = now_ns(), t1, n = 0;

	do {
		for (int i = 0; i < 1024; i++) {
			if (rte_mempool_get_bulk(mp, objs, bulk) != 0)
				return 0;
			rte_mempool_put_bulk(mp, objs, bulk);
		}
		n += 1024ull * bulk;
		t1 = now_ns();
	} while (t1 - t0 < budget);
	*ns = t1 - t0;
	return n;
}

static int bench_pool(unsigned bulk, unsigned ms)
{
	struct rte_mempool *mp = rte_mempool_create("peer_pool", 8191, 2176, 256, 0, NULL, NULL,
						    NULL, NULL, SOCKET_ID_ANY, 0);
	void *objs[MAX_BULK];
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
	report("pool cache=256", n, ns);
	rte_mempool_free(mp);
	return 0;
}

static int bench_ring(unsigned bulk, unsigned ms)
{
	static const struct {
		const char *name;
		unsigned flags;
	} kinds[] = {{"ring sp/sc", RING_F_SP_ENQ | RING_F_SC_DEQ}, {"ring mp/mc", 0}};
	void *objs[MAX_BULK], *out[MAX_BULK];

	for (unsigned i = 0; i < bulk; i++)
		objs[i] = (void *)(uintptr_t)(i + 1);
	for (unsigned k = 0; k < 2; k++) {
		char nm[32];
		struct rte_ring *r;
		uint64_t t0, t1, n = 0, budget = (uint64_t)ms * 1000000ull, sum = 0;

		snprintf(nm, sizeof(nm), "peer_ring%u", k);
		r = rte_ring_create(nm, 1024, SOCKET_ID_ANY, kinds[k].flags);
		if (r == NULL) {
			fprintf(stderr, "dpdk_peer: ring create failed: %s\n", rte_strerror(rte_errno));
			return 1;
		}
		t0 = now_ns();
		do {
			for (int i = 0; i < 1024; i++) {
				rte_ring_enqueue_bulk(r, objs, bulk, NULL);
				if (rte_ring_dequeue_bulk(r, out, bulk, NULL) != bulk) {
					fprintf(stderr, "dpdk_peer: dequeue_bulk failed\n");
					return 1;
				}
				sum += (uintptr_t)out[0];
			}
			n += 1024ull * bulk;
			t1 = now_ns();
		} while (t1 - t0 < budget);
		if (sum == 0)
			return 1;
		report(kinds[k].name, n, t1 - t0);
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
	if (argc != 4) {
		fprintf(stderr, "usage: dpdk_peer [EAL options] -- pool|ring BULK MS\n");
		return 2;
	}
	bulk = (unsigned)atoi(argv[2]);
	ms = (unsigned)atoi(argv[3]);
	if (bulk == 0 || bulk > MAX_BULK || ms == 0) {
		fprintf(stderr, "dpdk_peer: BULK 1..%d, MS > 0\n", MAX_BULK);
		return 2;
	}
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
