/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tide/pool_core.h - pool layout, public only because the inline get/put of tide/pool.h
 * read it. Use tide/pool.h.
 */
#ifndef TIDE_POOL_CORE_H
#define TIDE_POOL_CORE_H

#include <tide/common.h>
#include <tide/ring.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TIDE_POOL_CACHE_MAX 512

/*
 * One thread's cache: a LIFO stack of objects. Only its owner thread touches it, so no
 * field needs atomics. objs[] has room for a full cache plus one maximal put before the
 * flush (puts larger than the cache bypass it).
 */
struct tide_pool_cache {
	uint32_t len;  /* objects in objs[] */
	uint32_t size; /* flush above this many; refill target is size / 2 */
	uint64_t gets; /* objects handed out through this cache */
	uint64_t puts; /* objects taken back through this cache */
	uint64_t hits; /* get/put calls served without touching the ring */
	uint64_t ring_ops; /* calls that had to touch the shared ring */
	void *objs[2 * TIDE_POOL_CACHE_MAX];
} TIDE_CACHE_ALIGNED;

struct tide_pool {
	struct tide_ring *ring;   /* the shared free list (MP/MC) */
	uint8_t *elt_base;        /* first element */
	uint32_t elt_size;        /* bytes between elements */
	uint32_t n;               /* number of elements */
	uint32_t cache_size;      /* 0: no caches */
	uint32_t fast_max;        /* largest get/put the inline cache path takes: cache_size,
				     0 without caches or with debug tracking */
	uint32_t flags;
	uint32_t mbuf_headroom;   /* packet pools: headroom of a fresh mbuf (tide/mbuf.h) */
	uint8_t *debug_state;     /* one byte per element when debugging, else NULL */
	/* Counters for threads without a cache (relaxed atomics). */
	uint64_t nc_gets, nc_puts, nc_ring_ops;
	uint64_t debug_errors;    /* double frees / double gets caught by debug_state */
	char name[32];
	struct tide_pool_cache cache[TIDE_MAX_THREADS];
};

#ifdef __cplusplus
}
#endif

#endif /* TIDE_POOL_CORE_H */
