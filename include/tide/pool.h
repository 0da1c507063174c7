/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tide/pool.h - pools of fixed-size objects with per-thread caches.
 *
 * A pool is N elements of one size in one memory area (see struct tide_pool_opts for
 * hugepages and memfd sharing). Free elements live in a shared multi-producer/multi-consumer
 * ring; each thread with a thread index (tide/lcore.h) also has a LIFO cache in front of it.
 * Get and put touch only the cache until it under- or overflows: a put that takes the cache
 * above its size flushes everything above size/2 to the ring; a get that finds too few
 * refills to size/2 plus what it needs. Threads without an index use the ring directly.
 *
 * Every element has a stable byte offset in the area (tide_pool_offset()): the "iova" that
 * drivers write into descriptors or share with peers.
 *
 * The whole area is resident once the pool exists: 2 MiB pages are mapped populated, and
 * every 4 KiB page is written once at creation, so that no packet pays a page fault (a
 * pool's memory counts in full towards the process's resident size from the start).
 *
 * Debugging: with TIDE_POOL_F_DEBUG, in a debug build (-Dbuildtype=debug), or with
 * TIDE_POOL_DEBUG=1 in the environment (TIDE_POOL_DEBUG=0 turns it off) the pool tracks each element's state; a put of a free element or a get of a taken
 * one is refused, counted and logged instead of corrupting the pool.
 */
#ifndef TIDE_POOL_H
#define TIDE_POOL_H

#include <errno.h>
#include <tide/common.h>
#include <tide/lcore.h>
#include <tide/pool_core.h>
#include <tide/ring.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TIDE_POOL_CACHE_DEFAULT 256

/* Flags of struct tide_pool_opts. */
#define TIDE_POOL_F_SHARED 0x1u  /* memfd-backed area: can be shared or registered */
#define TIDE_POOL_F_NO_HUGE 0x2u /* do not try hugepages */
#define TIDE_POOL_F_DEBUG 0x4u   /* per-element state tracking */

struct tide_pool;

/* Called once per element at creation, in element order. */
typedef void (*tide_pool_obj_init_fn)(struct tide_pool *p, void *obj, unsigned idx, void *arg);

/* Optional settings; set sz = sizeof(struct tide_pool_opts). Zeroed fields mean defaults. */
struct tide_pool_opts {
	size_t sz;
	unsigned flags;
	unsigned elt_align; /* element size rounded up to this power of two (default 64) */
	unsigned align_pow2; /* non-zero: round element size up to a power of two and align */
	tide_pool_obj_init_fn obj_init;
	void *obj_init_arg;
};

/*
 * Create a pool of @n elements of @elt_size bytes with caches of @cache_size objects
 * (0 = no caches, at most TIDE_POOL_CACHE_MAX). All elements start free.
 * Returns 0 and the pool in *@out; -EINVAL (bad size, count, cache or opts, logged),
 * -ENOMEM.
 */
TIDE_EXPORT int tide_pool_create(const char *name, unsigned n, unsigned elt_size,
				 unsigned cache_size, const struct tide_pool_opts *opts,
				 struct tide_pool **out);

/*
 * Free a pool and its memory (NULL is allowed). Logs a warning when elements are still out:
 * freeing a pool whose elements are in use is a bug in the caller.
 */
TIDE_EXPORT void tide_pool_free(struct tide_pool *p);

/* Slow paths of the inline calls; not for direct use. */
TIDE_EXPORT int tide_pool__cache_refill(struct tide_pool *p, struct tide_pool_cache *c,
					unsigned n);
TIDE_EXPORT void tide_pool__cache_flush(struct tide_pool *p, struct tide_pool_cache *c);
TIDE_EXPORT int tide_pool__debug_check(struct tide_pool *p, void *const *objs, unsigned n,
				       int getting);

static inline int tide_pool__ring_get(struct tide_pool *p, void **objs, unsigned n)
{
	__atomic_fetch_add(&p->nc_ring_ops, 1, __ATOMIC_RELAXED);
	if (tide_ring_dequeue_bulk(p->ring, objs, n, NULL) != n)
		return -ENOENT;
	__atomic_fetch_add(&p->nc_gets, n, __ATOMIC_RELAXED);
	return 0;
}

/*
 * The inline fast path is one test: a thread with a cache and a call of at most
 * p->fast_max objects (0 when the pool has no caches or tracks element states); everything
 * else goes the careful way below. The cache length is held in a local: with
 * -fno-strict-aliasing every pointer the copy stores could otherwise force a reload.
 */
static inline int tide_pool__cache_get(struct tide_pool *p, struct tide_pool_cache *c,
				       void **objs, unsigned n)
{
	uint32_t len = c->len;

	if (tide_unlikely(len < n)) {
		int rc = tide_pool__cache_refill(p, c, n);

		if (rc < 0)
			return rc;
		len = c->len;
	} else {
		c->hits++;
	}
	/* LIFO: hand out the most recently freed (cache-warm) objects: the top n. */
	len -= n;
	c->len = len;
	c->gets += n;
	tide_copy_ptrs(objs, &c->objs[len], n);
	return 0;
}

static inline void tide_pool__cache_put(struct tide_pool *p, struct tide_pool_cache *c,
					void *const *objs, unsigned n)
{
	uint32_t len = c->len;

	tide_copy_ptrs(&c->objs[len], objs, n);
	c->len = len + n;
	c->puts += n;
	if (c->len > c->size)
		tide_pool__cache_flush(p, c); /* down to size / 2 */
	else
		c->hits++;
}

/* No cache for this thread or call, or debug tracking. */
static inline int tide_pool__get_careful(struct tide_pool *p, void **objs, unsigned n)
{
	unsigned idx = tide_thread_index();
	int rc;

	if (idx >= TIDE_MAX_THREADS || n > p->cache_size)
		rc = tide_pool__ring_get(p, objs, n);
	else
		rc = tide_pool__cache_get(p, &p->cache[idx], objs, n);
	if (tide_unlikely(p->debug_state != NULL) && rc == 0)
		rc = tide_pool__debug_check(p, objs, n, 1);
	return rc;
}

static inline void tide_pool__put_careful(struct tide_pool *p, void *const *objs, unsigned n)
{
	unsigned idx = tide_thread_index();

	if (tide_unlikely(p->debug_state != NULL) && tide_pool__debug_check(p, objs, n, 0) < 0)
		return;
	if (idx >= TIDE_MAX_THREADS || n > p->cache_size) {
		__atomic_fetch_add(&p->nc_ring_ops, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&p->nc_puts, n, __ATOMIC_RELAXED);
		tide_ring_enqueue_bulk(p->ring, objs, n, NULL);
		return;
	}
	tide_pool__cache_put(p, &p->cache[idx], objs, n);
}

/*
 * Take @n objects (all or none). Returns 0, or -ENOENT when the pool cannot supply @n now
 * (objects in other threads' caches are not reachable). Inline, no argument checks; @n > 0.
 */
static inline int tide_pool_get_bulk(struct tide_pool *p, void **objs, unsigned n)
{
	unsigned idx = tide_thread_index();

	if (tide_unlikely(idx >= TIDE_MAX_THREADS || n > p->fast_max))
		return tide_pool__get_careful(p, objs, n);
	return tide_pool__cache_get(p, &p->cache[idx], objs, n);
}

/*
 * Return @n objects that came from this pool. Never fails (the pool has room for every
 * element). Inline, no argument checks.
 */
static inline void tide_pool_put_bulk(struct tide_pool *p, void *const *objs, unsigned n)
{
	unsigned idx = tide_thread_index();

	if (tide_unlikely(idx >= TIDE_MAX_THREADS || n > p->fast_max)) {
		tide_pool__put_careful(p, objs, n);
		return;
	}
	tide_pool__cache_put(p, &p->cache[idx], objs, n);
}

static inline int tide_pool_get(struct tide_pool *p, void **obj)
{
	return tide_pool_get_bulk(p, obj, 1);
}

static inline void tide_pool_put(struct tide_pool *p, void *obj)
{
	tide_pool_put_bulk(p, &obj, 1);
}

/* Byte offset of @obj in the pool's area (elements start at the area's base). */
static inline uint64_t tide_pool_offset(const struct tide_pool *p, const void *obj)
{
	return (uint64_t)((const uint8_t *)obj - p->elt_base);
}

/*
 * Free elements, counting the shared ring and every thread's cache. Exact only while no
 * other thread uses the pool.
 */
TIDE_EXPORT unsigned tide_pool_avail(const struct tide_pool *p);

/* Elements handed out and not returned (n - avail); same caveat. */
TIDE_EXPORT unsigned tide_pool_in_use(const struct tide_pool *p);

/* Return the calling thread's cached objects to the shared ring. */
TIDE_EXPORT void tide_pool_cache_flush(struct tide_pool *p);

struct tide_pool_stats {
	size_t sz;           /* sizeof(struct tide_pool_stats), set by the caller */
	uint64_t gets;       /* objects handed out */
	uint64_t puts;       /* objects taken back */
	uint64_t cache_hits; /* calls served by a cache alone */
	uint64_t ring_ops;   /* calls that touched the shared ring */
	uint64_t debug_errors; /* double frees/gets refused (debug tracking only) */
};

/* Sum of all threads' counters (a snapshot), as far as @st->sz goes. -EINVAL when @st is
 * NULL or its sz is below the struct's first version (up to debug_errors). */
TIDE_EXPORT int tide_pool_stats_get(const struct tide_pool *p, struct tide_pool_stats *st);

struct tide_pool_audit {
	unsigned n;            /* elements in the pool */
	unsigned free;         /* distinct free elements found (ring + caches) */
	unsigned in_use;       /* n - free */
	unsigned duplicates;   /* elements found free more than once (freed twice) */
	unsigned foreign;      /* free-list entries that are not an element of this pool */
	unsigned state_mismatch; /* debug tracking disagrees with the free lists */
};

/*
 * Walk the ring and every cache and account for each element. The pool must be quiescent
 * (no concurrent get/put). Returns 0 when the pool is consistent (no duplicates, no foreign
 * entries, no mismatches; elements in use are not an error), -EUCLEAN when it is not,
 * -ENOMEM. The report is filled in both cases.
 */
TIDE_EXPORT int tide_pool_audit(const struct tide_pool *p, struct tide_pool_audit *out);

struct tide_pool_mem {
	void *base;      /* start of the area */
	size_t len;      /* mapped length */
	int fd;          /* memfd (TIDE_POOL_F_SHARED), else -1; owned by the pool */
	int hugepages;   /* 1 when backed by 2 MiB pages */
	unsigned elt_size;
	unsigned n;
};

/* Describe the pool's memory (for sharing it or registering it with the kernel). */
TIDE_EXPORT void tide_pool_mem_info(const struct tide_pool *p, struct tide_pool_mem *out);

/* Element @idx (0..n-1), and the index of an element. No checks. */
static inline void *tide_pool_elt(const struct tide_pool *p, unsigned idx)
{
	return p->elt_base + (size_t)idx * p->elt_size;
}

TIDE_EXPORT const char *tide_pool_name(const struct tide_pool *p);
TIDE_EXPORT unsigned tide_pool_size(const struct tide_pool *p);

#ifdef __cplusplus
}
#endif

#endif /* TIDE_POOL_H */
