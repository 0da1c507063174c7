/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tide/pool.h>

#include "log.h"
#include "mem.h"
#include "sized.h"

/* The public struct first, then what only this file needs. */
struct pool_full {
	struct tide_pool p;
	struct tide_mem mem;
};

enum { ELT_FREE = 0, ELT_TAKEN = 1, ELT_PUTTING = 2 };

static struct pool_full *full(const struct tide_pool *p)
{
	return (struct pool_full *)(uintptr_t)p;
}

static unsigned round_pow2(unsigned v)
{
	unsigned r = 1;

	while (r < v)
		r <<= 1;
	return r;
}

/* Debug tracking: on for TIDE_POOL_F_DEBUG and in debug builds; TIDE_POOL_DEBUG=1 or 0 in the
 * environment forces it on or off (another value: a warning, then the flags decide). */
static bool debug_wanted(unsigned flags)
{
	bool on;

	if (env_flag("TIDE_POOL_DEBUG", &on) > 0)
		return on;
#ifdef TIDE_DEBUG_BUILD
	flags |= TIDE_POOL_F_DEBUG;
#endif
	return flags & TIDE_POOL_F_DEBUG;
}

int tide_pool_create(const char *name, unsigned n, unsigned elt_size, unsigned cache_size,
		     const struct tide_pool_opts *opts, struct tide_pool **out)
{
	struct tide_pool_opts o = {0};
	struct pool_full *pf;
	struct tide_pool *p;
	unsigned mem_flags = 0, align;
	size_t area;
	int rc;

	if (name == NULL)
		name = "pool";
	if (opts != NULL) {
		if (opts->sz < offsetof(struct tide_pool_opts, flags) + sizeof(unsigned) ||
		    opts->sz > sizeof(o)) {
			TIDE_LOG_ERR_("pool", "%s: opts.sz %zu is not a known size", name, opts->sz);
			return -EINVAL;
		}
		memcpy(&o, opts, opts->sz);
	}
	if (out == NULL)
		return -EINVAL;
	if (n == 0 || n > TIDE_RING_SIZE_MAX) {
		TIDE_LOG_ERR_("pool", "%s: element count %u must be in 1..%u", name, n,
			      TIDE_RING_SIZE_MAX);
		return -EINVAL;
	}
	if (elt_size == 0 || elt_size > (1u << 20)) {
		TIDE_LOG_ERR_("pool", "%s: element size %u must be in 1..1048576", name, elt_size);
		return -EINVAL;
	}
	if (cache_size > TIDE_POOL_CACHE_MAX || cache_size == 1) {
		TIDE_LOG_ERR_("pool", "%s: cache size %u must be 0 or 2..%u", name, cache_size,
			      TIDE_POOL_CACHE_MAX);
		return -EINVAL;
	}
	align = o.elt_align ? o.elt_align : TIDE_CACHE_LINE;
	if (!tide_is_pow2(align) || align > 4096) {
		TIDE_LOG_ERR_("pool", "%s: element alignment %u must be a power of two <= 4096",
			      name, align);
		return -EINVAL;
	}
	if (o.flags & ~(TIDE_POOL_F_SHARED | TIDE_POOL_F_NO_HUGE | TIDE_POOL_F_DEBUG)) {
		TIDE_LOG_ERR_("pool", "%s: unknown flags 0x%x", name, o.flags);
		return -EINVAL;
	}
	elt_size = (elt_size + align - 1) & ~(align - 1);
	if (o.align_pow2)
		elt_size = round_pow2(elt_size);

	if (posix_memalign((void **)&pf, TIDE_CACHE_LINE, sizeof(*pf)) != 0)
		return -ENOMEM;
	memset(pf, 0, sizeof(*pf));
	p = &pf->p;
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->elt_size = elt_size;
	p->n = n;
	p->cache_size = cache_size;
	p->flags = o.flags;
	for (unsigned i = 0; i < TIDE_MAX_THREADS; i++)
		p->cache[i].size = cache_size;

	rc = tide_ring_create(name, round_pow2(n < 2 ? 2 : n), 0, &p->ring);
	if (rc < 0)
		goto fail_pf;
	if (o.flags & TIDE_POOL_F_SHARED)
		mem_flags |= TIDE_MEM_SHARED;
	if (o.flags & TIDE_POOL_F_NO_HUGE)
		mem_flags |= TIDE_MEM_NO_HUGE;
	area = (size_t)n * elt_size;
	rc = tide_mem_alloc(&pf->mem, area, mem_flags, name);
	if (rc < 0)
		goto fail_ring;
	p->elt_base = pf->mem.base;

	if (debug_wanted(o.flags)) {
		p->flags |= TIDE_POOL_F_DEBUG;
		p->debug_state = calloc(n, 1);
		if (p->debug_state == NULL) {
			rc = -ENOMEM;
			goto fail_mem;
		}
	}
	for (unsigned i = 0; i < n; i++) {
		void *obj = tide_pool_elt(p, i);

		if (o.obj_init)
			o.obj_init(p, obj, i, o.obj_init_arg);
		tide_ring_enqueue_bulk(p->ring, &obj, 1, NULL);
	}
	p->fast_max = p->debug_state ? 0 : cache_size;
	TIDE_LOG_DEBUG_("pool", "%s: %u x %u bytes, cache %u%s", name, n, elt_size, cache_size,
			p->debug_state ? ", debug tracking" : "");
	*out = p;
	return 0;

fail_mem:
	tide_mem_free(&pf->mem);
fail_ring:
	tide_ring_free(p->ring);
fail_pf:
	free(pf);
	return rc;
}

void tide_pool_free(struct tide_pool *p)
{
	struct pool_full *pf;
	unsigned in_use;

	if (p == NULL)
		return;
	pf = full(p);
	in_use = tide_pool_in_use(p);
	if (in_use)
		TIDE_LOG_WARN_("pool", "%s: freed with %u of %u elements still in use", p->name,
			       in_use, p->n);
	tide_ring_free(p->ring);
	free(p->debug_state);
	tide_mem_free(&pf->mem);
	free(pf);
}

int tide_pool__cache_refill(struct tide_pool *p, struct tide_pool_cache *c, unsigned n)
{
	unsigned short_by = n - c->len;
	unsigned want = c->size / 2 + short_by;

	c->ring_ops++;
	if (tide_ring_dequeue_bulk(p->ring, &c->objs[c->len], want, NULL) == want) {
		c->len += want;
		return 0;
	}
	/* Not enough for a full refill: take exactly what this call needs, or nothing. */
	if (tide_ring_dequeue_bulk(p->ring, &c->objs[c->len], short_by, NULL) == short_by) {
		c->len += short_by;
		return 0;
	}
	return -ENOENT;
}

void tide_pool__cache_flush(struct tide_pool *p, struct tide_pool_cache *c)
{
	unsigned keep = c->size / 2;

	c->ring_ops++;
	tide_ring_enqueue_bulk(p->ring, &c->objs[keep], c->len - keep, NULL);
	c->len = keep;
}

static int elt_index(const struct tide_pool *p, const void *obj, unsigned *idx)
{
	uintptr_t off = (uintptr_t)obj - (uintptr_t)p->elt_base;

	if ((uintptr_t)obj < (uintptr_t)p->elt_base || off % p->elt_size != 0 ||
	    off / p->elt_size >= p->n)
		return -1;
	*idx = (unsigned)(off / p->elt_size);
	return 0;
}

int tide_pool__debug_check(struct tide_pool *p, void *const *objs, unsigned n, int getting)
{
	unsigned bad = 0, idx;

	/* Pass 1: claim each element's transition (FREE->TAKEN on get, TAKEN->PUTTING on put);
	 * an element whose state is not the expected one is a double get or double put. */
	for (unsigned i = 0; i < n; i++) {
		uint8_t expect = getting ? ELT_FREE : ELT_TAKEN;

		if (elt_index(p, objs[i], &idx) < 0) {
			TIDE_LOG_ERR_("pool", "%s: %p is not an element of this pool", p->name, objs[i]);
			bad++;
			continue;
		}
		if (!__atomic_compare_exchange_n(&p->debug_state[idx], &expect,
						 getting ? ELT_TAKEN : ELT_PUTTING, 0,
						 __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
			TIDE_LOG_ERR_("pool", "%s: element %u %s", p->name, idx,
				      getting ? "handed out while in use" : "freed twice");
			bad++;
		}
	}
	if (bad)
		__atomic_fetch_add(&p->debug_errors, bad, __ATOMIC_RELAXED);
	if (getting)
		return 0; /* the objects were in the free list; nothing to undo, error counted */
	/* Pass 2: the claimed elements become free; when some entries were bad, the good ones
	 * go straight to the ring and the caller skips its normal put. */
	for (unsigned i = 0; i < n; i++) {
		if (elt_index(p, objs[i], &idx) < 0 || p->debug_state[idx] != ELT_PUTTING)
			continue;
		__atomic_store_n(&p->debug_state[idx], ELT_FREE, __ATOMIC_RELAXED);
		if (bad)
			tide_ring_enqueue_bulk(p->ring, &objs[i], 1, NULL);
	}
	return bad ? -EFAULT : 0;
}

unsigned tide_pool_avail(const struct tide_pool *p)
{
	unsigned avail = tide_ring_count(p->ring);

	for (unsigned i = 0; i < TIDE_MAX_THREADS; i++)
		avail += __atomic_load_n(&p->cache[i].len, __ATOMIC_RELAXED);
	return avail;
}

unsigned tide_pool_in_use(const struct tide_pool *p)
{
	unsigned avail = tide_pool_avail(p);

	return avail >= p->n ? 0 : p->n - avail;
}

void tide_pool_cache_flush(struct tide_pool *p)
{
	unsigned idx = tide_thread_index();
	struct tide_pool_cache *c;

	if (idx >= TIDE_MAX_THREADS)
		return;
	c = &p->cache[idx];
	if (c->len) {
		c->ring_ops++;
		tide_ring_enqueue_bulk(p->ring, c->objs, c->len, NULL);
		c->len = 0;
	}
}

int tide_pool_stats_get(const struct tide_pool *p, struct tide_pool_stats *out)
{
	struct tide_pool_stats full = {.sz = sizeof(full)}, *st = &full;

	if (tide_sized_check(out, TIDE_SIZE_UPTO(struct tide_pool_stats, debug_errors)) < 0)
		return -EINVAL;
	st->gets = __atomic_load_n(&p->nc_gets, __ATOMIC_RELAXED);
	st->puts = __atomic_load_n(&p->nc_puts, __ATOMIC_RELAXED);
	st->ring_ops = __atomic_load_n(&p->nc_ring_ops, __ATOMIC_RELAXED);
	st->debug_errors = __atomic_load_n(&p->debug_errors, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < TIDE_MAX_THREADS; i++) {
		const struct tide_pool_cache *c = &p->cache[i];

		st->gets += c->gets;
		st->puts += c->puts;
		st->cache_hits += c->hits;
		st->ring_ops += c->ring_ops;
	}
	return tide_sized_put(out, st, sizeof(*st));
}

static void audit_one(const struct tide_pool *p, const void *obj, uint8_t *seen,
		      struct tide_pool_audit *a)
{
	unsigned idx;

	if (elt_index(p, obj, &idx) < 0) {
		a->foreign++;
		return;
	}
	if (seen[idx]++) {
		a->duplicates++;
		return;
	}
	a->free++;
}

int tide_pool_audit(const struct tide_pool *p, struct tide_pool_audit *out)
{
	const struct tide_ring *r = p->ring;
	struct tide_pool_audit a = {.n = p->n};
	uint8_t *seen = calloc(p->n, 1);

	if (seen == NULL)
		return -ENOMEM;
	for (uint32_t i = r->cons.tail; i != r->prod.tail; i++)
		audit_one(p, r->slots[i & r->mask], seen, &a);
	for (unsigned t = 0; t < TIDE_MAX_THREADS; t++)
		for (unsigned i = 0; i < p->cache[t].len; i++)
			audit_one(p, p->cache[t].objs[i], seen, &a);
	if (p->debug_state)
		for (unsigned i = 0; i < p->n; i++)
			if ((seen[i] != 0) != (p->debug_state[i] == ELT_FREE))
				a.state_mismatch++;
	a.in_use = p->n - a.free;
	free(seen);
	*out = a;
	if (a.duplicates || a.foreign || a.state_mismatch) {
		TIDE_LOG_ERR_("pool", "%s: audit: %u freed twice, %u foreign, %u state mismatches",
			      p->name, a.duplicates, a.foreign, a.state_mismatch);
		return -EUCLEAN;
	}
	return 0;
}

void tide_pool_mem_info(const struct tide_pool *p, struct tide_pool_mem *out)
{
	const struct pool_full *pf = full(p);

	out->base = pf->mem.base;
	out->len = pf->mem.len;
	out->fd = pf->mem.fd;
	out->hugepages = pf->mem.huge;
	out->elt_size = p->elt_size;
	out->n = p->n;
}

const char *tide_pool_name(const struct tide_pool *p)
{
	return p->name;
}

unsigned tide_pool_size(const struct tide_pool *p)
{
	return p->n;
}
