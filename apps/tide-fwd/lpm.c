/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DIR-24-8 longest-prefix match: control plane (create, add, delete) and the bulk lookup.
 *
 * Every table entry carries, in a parallel byte array the lookup never reads, the depth of the
 * route that wrote it (0 for "no route" and for the default route, which are told apart by
 * the entry value). With that:
 *  - adding a route of depth d overwrites the entries in its range whose depth is <= d, so
 *    longer routes already there keep their entries;
 *  - deleting it rewrites exactly the entries whose depth is d (within its range only this
 *    route can have written them) with the longest remaining shorter route that covers the
 *    prefix, found by probing the route store once per shorter depth in use.
 * A tbl8 group exists exactly while some route longer than /24 lies in its /24; it is released
 * when the last one is deleted, since its entries are then all equal.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "lpm.h"

#define TBL24_ENTRIES (1u << 24)
#define TBL8_GROUP    256u

/* One route in the store: an open-addressing hash table keyed by (prefix, depth). */
struct lpm_rule {
	uint32_t ip; /* masked to depth */
	uint8_t depth;
	uint8_t used;
	uint16_t hop;
};

struct lpm_ctl {
	uint16_t *tbl24; /* writable views of struct lpm's tables */
	uint16_t *tbl8;
	uint8_t *depth24; /* depth of the route behind each entry */
	uint8_t *depth8;
	size_t tbl8_bytes;

	struct lpm_rule *rules;
	uint32_t rules_mask;  /* slots - 1; slots is a power of two >= 2 * max_routes */
	unsigned rules_shift; /* 64 - log2(slots), for the multiplicative hash */
	unsigned max_routes;
	unsigned nroutes;
	unsigned depth_count[33]; /* routes per depth, to skip empty depths on delete */

	uint16_t *free_groups; /* stack of unused tbl8 group indexes */
	unsigned nfree;
	unsigned max_groups;
};

static uint32_t depth_mask(unsigned depth)
{
	return depth ? ~0u << (32 - depth) : 0;
}

static uint32_t rule_home(const struct lpm_ctl *c, uint32_t ip, unsigned depth)
{
	uint64_t k = ((uint64_t)ip << 6 | depth) * 0x9e3779b97f4a7c15ull;

	return (uint32_t)(k >> c->rules_shift) & c->rules_mask;
}

/* The route @ip/@depth (@ip already masked), or NULL. */
static struct lpm_rule *rule_find(struct lpm_ctl *c, uint32_t ip, unsigned depth)
{
	for (uint32_t i = rule_home(c, ip, depth);; i = (i + 1) & c->rules_mask) {
		struct lpm_rule *r = &c->rules[i];

		if (!r->used)
			return NULL;
		if (r->ip == ip && r->depth == depth)
			return r;
	}
}

/* Caller checked that the route is absent and a slot is free (load factor <= 1/2). */
static void rule_insert(struct lpm_ctl *c, uint32_t ip, unsigned depth, uint16_t hop)
{
	uint32_t i = rule_home(c, ip, depth);

	while (c->rules[i].used)
		i = (i + 1) & c->rules_mask;
	c->rules[i] = (struct lpm_rule){.ip = ip, .depth = (uint8_t)depth, .used = 1, .hop = hop};
	c->nroutes++;
	c->depth_count[depth]++;
}

/*
 * Remove by backward shift rather than tombstones, so that probe chains never grow with
 * churn: later members of the cluster move up unless their home lies cyclically in (hole, j].
 */
static void rule_remove(struct lpm_ctl *c, struct lpm_rule *r)
{
	uint32_t hole = (uint32_t)(r - c->rules);

	c->nroutes--;
	c->depth_count[r->depth]--;
	for (uint32_t j = (hole + 1) & c->rules_mask; c->rules[j].used;
	     j = (j + 1) & c->rules_mask) {
		uint32_t home = rule_home(c, c->rules[j].ip, c->rules[j].depth);
		bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);

		if (stays)
			continue;
		c->rules[hole] = c->rules[j];
		hole = j;
	}
	c->rules[hole].used = 0;
}

static void lpm_ctl_free(struct lpm_ctl *c)
{
	if (c->tbl24)
		munmap(c->tbl24, TBL24_ENTRIES * sizeof(uint16_t));
	if (c->tbl8)
		munmap(c->tbl8, c->tbl8_bytes);
	free(c->depth24);
	free(c->depth8);
	free(c->rules);
	free(c->free_groups);
	free(c);
}

/*
 * Lookup tables come from mmap so they are page aligned and can use transparent huge pages
 * (random lookups over 32 MiB otherwise miss the TLB on almost every packet). They are touched
 * now so that the first packets do not pay for page faults.
 */
static void *table_alloc(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
#ifdef MADV_HUGEPAGE
	(void)madvise(p, bytes, MADV_HUGEPAGE); /* a hint; fine if refused */
#endif
	memset(p, 0, bytes);
	return p;
}

int lpm_create(unsigned max_routes, unsigned max_tbl8_groups, struct lpm **out)
{
	struct lpm_ctl *c;
	struct lpm *lpm;
	unsigned bits = 1;

	if (max_routes == 0 || max_routes > LPM_ROUTES_MAX || max_tbl8_groups > LPM_TBL8_GROUPS_MAX)
		return -EINVAL;
	while ((1u << bits) < 2 * max_routes)
		bits++;

	c = calloc(1, sizeof(*c));
	lpm = calloc(1, sizeof(*lpm));
	if (!c || !lpm)
		goto nomem;
	c->max_routes = max_routes;
	c->max_groups = max_tbl8_groups;
	c->rules_mask = (1u << bits) - 1;
	c->rules_shift = 64 - bits;
	c->rules = calloc((size_t)1 << bits, sizeof(*c->rules));
	c->depth24 = calloc(TBL24_ENTRIES, 1);
	c->tbl24 = table_alloc(TBL24_ENTRIES * sizeof(uint16_t));
	if (!c->rules || !c->depth24 || !c->tbl24)
		goto nomem;
	if (max_tbl8_groups) {
		c->tbl8_bytes = (size_t)max_tbl8_groups * TBL8_GROUP * sizeof(uint16_t);
		c->tbl8 = table_alloc(c->tbl8_bytes);
		c->depth8 = calloc((size_t)max_tbl8_groups * TBL8_GROUP, 1);
		c->free_groups = malloc(max_tbl8_groups * sizeof(*c->free_groups));
		if (!c->tbl8 || !c->depth8 || !c->free_groups)
			goto nomem;
		/* Hand out low indexes first: they sit together in memory. */
		for (unsigned i = 0; i < max_tbl8_groups; i++)
			c->free_groups[i] = (uint16_t)(max_tbl8_groups - 1 - i);
		c->nfree = max_tbl8_groups;
	}
	lpm->tbl24 = c->tbl24;
	lpm->tbl8 = c->tbl8;
	lpm->ctl = c;
	*out = lpm;
	return 0;

nomem:
	if (c)
		lpm_ctl_free(c);
	free(lpm);
	return -ENOMEM;
}

void lpm_free(struct lpm *lpm)
{
	if (!lpm)
		return;
	lpm_ctl_free(lpm->ctl);
	free(lpm);
}

unsigned lpm_route_count(const struct lpm *lpm)
{
	return lpm->ctl->nroutes;
}

unsigned lpm_tbl8_used(const struct lpm *lpm)
{
	return lpm->ctl->max_groups - lpm->ctl->nfree;
}

/*
 * Give (@e, @depth) to the tbl8 entries in [@first, @first + @n) whose depth is <= @match_depth
 * (an add: shorter or equal routes yield) or, with @only_equal, == @match_depth (a delete).
 */
static void tbl8_write(struct lpm_ctl *c, size_t first, size_t n, bool only_equal,
		       uint8_t match_depth, uint16_t e, uint8_t depth)
{
	for (size_t j = first; j < first + n; j++) {
		uint8_t d = c->depth8[j];

		if (only_equal ? d == match_depth : d <= match_depth) {
			c->tbl8[j] = e;
			c->depth8[j] = depth;
		}
	}
}

int lpm_add(struct lpm *lpm, uint32_t ip, uint8_t depth, uint16_t next_hop)
{
	struct lpm_ctl *c = lpm->ctl;
	uint16_t e = (uint16_t)(next_hop + 1);
	struct lpm_rule *r;

	if (depth > 32 || next_hop > LPM_NEXT_HOP_MAX)
		return -EINVAL;
	ip &= depth_mask(depth);
	r = rule_find(c, ip, depth);
	if (r) {
		r->hop = next_hop;
	} else {
		/* Check every resource before changing anything. */
		if (c->nroutes == c->max_routes)
			return -ENOSPC;
		if (depth > 24 && !(c->tbl24[ip >> 8] & LPM_ENTRY_EXT) && c->nfree == 0)
			return -ENOSPC;
		rule_insert(c, ip, depth, next_hop);
	}

	if (depth <= 24) {
		uint32_t first = ip >> 8, n = 1u << (24 - depth);

		for (uint32_t i = first; i < first + n; i++) {
			uint16_t t = c->tbl24[i];

			if (t & LPM_ENTRY_EXT)
				tbl8_write(c, (size_t)(t & ~LPM_ENTRY_EXT) * TBL8_GROUP, TBL8_GROUP,
					   false, depth, e, depth);
			else if (c->depth24[i] <= depth) {
				c->tbl24[i] = e;
				c->depth24[i] = depth;
			}
		}
	} else {
		uint32_t i = ip >> 8;
		uint16_t t = c->tbl24[i];
		size_t base;

		if (!(t & LPM_ENTRY_EXT)) {
			uint16_t g = c->free_groups[--c->nfree];

			base = (size_t)g * TBL8_GROUP;
			/* The group starts as a copy of the /24 entry it replaces. */
			for (unsigned j = 0; j < TBL8_GROUP; j++) {
				c->tbl8[base + j] = t;
				c->depth8[base + j] = c->depth24[i];
			}
			c->tbl24[i] = (uint16_t)(LPM_ENTRY_EXT | g);
		} else {
			base = (size_t)(t & ~LPM_ENTRY_EXT) * TBL8_GROUP;
		}
		tbl8_write(c, base + (ip & 0xff), 1u << (32 - depth), false, depth, e, depth);
	}
	return 0;
}

/* True if no entry of the group at @base comes from a route longer than /24. */
static bool group_uniform(const struct lpm_ctl *c, size_t base)
{
	for (unsigned j = 0; j < TBL8_GROUP; j++)
		if (c->depth8[base + j] > 24)
			return false;
	return true;
}

int lpm_delete(struct lpm *lpm, uint32_t ip, uint8_t depth)
{
	struct lpm_ctl *c = lpm->ctl;
	struct lpm_rule *r;
	uint16_t e = 0; /* what the freed entries fall back to: no route ... */
	uint8_t cover = 0;

	if (depth > 32)
		return -ENOENT;
	ip &= depth_mask(depth);
	r = rule_find(c, ip, depth);
	if (!r)
		return -ENOENT;
	rule_remove(c, r);

	/* ... or the longest shorter route containing the prefix. */
	for (int d = depth - 1; d >= 0; d--) {
		if (!c->depth_count[d])
			continue;
		r = rule_find(c, ip & depth_mask((unsigned)d), (unsigned)d);
		if (r) {
			e = (uint16_t)(r->hop + 1);
			cover = (uint8_t)d;
			break;
		}
	}

	if (depth <= 24) {
		uint32_t first = ip >> 8, n = 1u << (24 - depth);

		/* Groups here keep their longer routes, so none becomes releasable. */
		for (uint32_t i = first; i < first + n; i++) {
			uint16_t t = c->tbl24[i];

			if (t & LPM_ENTRY_EXT)
				tbl8_write(c, (size_t)(t & ~LPM_ENTRY_EXT) * TBL8_GROUP, TBL8_GROUP,
					   true, depth, e, cover);
			else if (c->depth24[i] == depth) {
				c->tbl24[i] = e;
				c->depth24[i] = cover;
			}
		}
	} else {
		uint32_t i = ip >> 8;
		uint16_t g = (uint16_t)(c->tbl24[i] & ~LPM_ENTRY_EXT);
		size_t base = (size_t)g * TBL8_GROUP;

		tbl8_write(c, base + (ip & 0xff), 1u << (32 - depth), true, depth, e, cover);
		if (group_uniform(c, base)) {
			/* Publish the /24 entry before the group can be reused. */
			c->tbl24[i] = c->tbl8[base];
			c->depth24[i] = c->depth8[base];
			c->free_groups[c->nfree++] = g;
		}
	}
	return 0;
}

unsigned lpm_lookup_bulk(const struct lpm *lpm, const uint32_t *ips, uint16_t *hops, unsigned n)
{
	unsigned hits = 0;

	/* Branch-light: entry 0 ("no route") minus one is LPM_NO_ROUTE. */
	for (unsigned i = 0; i < n; i++) {
		uint32_t ip = ips[i];
		uint16_t e = lpm->tbl24[ip >> 8];

		if (e & LPM_ENTRY_EXT)
			e = lpm->tbl8[((uint32_t)(e & ~LPM_ENTRY_EXT) << 8) | (ip & 0xff)];
		hops[i] = (uint16_t)(e - 1);
		hits += e != 0;
	}
	return hits;
}
