/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * LPM (apps/tide-fwd/lpm.c): edge cases, resource exhaustion, and random route sets checked
 * against a linear-scan reference after adds, replaces and deletes in random order.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../apps/tide-fwd/lpm.h"
#include "testutil.h"

/* ---- reference: the route list, searched linearly for the longest match ---- */

struct ref_route {
	uint32_t ip;
	uint8_t depth;
	uint16_t hop;
	uint32_t mask; /* of depth; kept to make the scan cheap in unoptimised builds */
};

struct ref {
	struct ref_route *v;
	unsigned n, cap;
};

static uint32_t mask_of(unsigned depth)
{
	return depth ? ~0u << (32 - depth) : 0;
}

static int ref_find(const struct ref *r, uint32_t ip, uint8_t depth)
{
	ip &= mask_of(depth);
	for (unsigned i = 0; i < r->n; i++)
		if (r->v[i].ip == ip && r->v[i].depth == depth)
			return (int)i;
	return -1;
}

static void ref_add(struct ref *r, uint32_t ip, uint8_t depth, uint16_t hop)
{
	int i = ref_find(r, ip, depth);

	if (i >= 0) {
		r->v[i].hop = hop;
		return;
	}
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 64;
		r->v = realloc(r->v, r->cap * sizeof(*r->v));
		assert_non_null(r->v);
	}
	r->v[r->n++] = (struct ref_route){ip & mask_of(depth), depth, hop, mask_of(depth)};
}

static void ref_del_at(struct ref *r, unsigned i)
{
	r->v[i] = r->v[--r->n];
}

static int ref_lookup(const struct ref *r, uint32_t ip, uint16_t *hop)
{
	const struct ref_route *x = r->v, *end = r->v + r->n;
	int best = -1;

	for (; x < end; x++) {
		if ((ip & x->mask) == x->ip && x->depth > best) {
			best = x->depth;
			*hop = x->hop;
		}
	}
	return best < 0 ? -ENOENT : 0;
}

/* ---- checking ---- */

/* An address worth probing: random, or inside / at the edges of a route in the reference. */
static uint32_t probe_addr(const struct ref *r, uint64_t *s)
{
	uint64_t x = test_rand(s);
	const struct ref_route *rt;
	uint32_t size;

	if (r->n == 0 || (x & 3) == 0)
		return (uint32_t)(x >> 32);
	rt = &r->v[(x >> 8) % r->n];
	size = rt->depth ? 1u << (32 - rt->depth) : 0; /* 0 stands for 2^32 */
	switch ((x >> 2) & 3) {
	case 0:
		return rt->ip - 1;
	case 1:
		return rt->ip + size; /* first address after it */
	case 2:
		return rt->ip + size - 1;
	default:
		return rt->ip | ((uint32_t)(x >> 32) & ~mask_of(rt->depth));
	}
}

/* @n probe addresses, each looked up singly and in bursts, must agree with the reference. */
static void check(const struct lpm *lpm, const struct ref *r, uint64_t *s, unsigned n)
{
	uint32_t ips[64];
	uint16_t hops[64];

	assert_int_equal(lpm_route_count(lpm), r->n);
	for (unsigned done = 0; done < n; done += 64) {
		unsigned hits = 0;

		for (unsigned i = 0; i < 64; i++)
			ips[i] = probe_addr(r, s);
		for (unsigned i = 0; i < 64; i++) {
			uint16_t want = 0xdead, got = 0xbeef;
			int rw = ref_lookup(r, ips[i], &want);
			int rg = lpm_lookup(lpm, ips[i], &got);

			if (rw != rg || (rw == 0 && want != got))
				fail_msg("ip %08x: want %d/%u, got %d/%u (%u routes)", ips[i], rw,
					 want, rg, got, r->n);
			hits += rw == 0;
		}
		assert_int_equal(lpm_lookup_bulk(lpm, ips, hops, 64), hits);
		for (unsigned i = 0; i < 64; i++) {
			uint16_t h;

			if (lpm_lookup(lpm, ips[i], &h) == 0)
				assert_int_equal(hops[i], h);
			else
				assert_int_equal(hops[i], LPM_NO_ROUTE);
		}
	}
}

/* Random route, clustered so that prefixes overlap and many exceed /24 in a few /24s. */
static void rand_route(uint64_t *s, uint32_t *ip, uint8_t *depth)
{
	static const uint32_t hot[] = {0x0a010000, 0x0a01ff00, 0xc0a80000, 0x0a000000};
	uint64_t x = test_rand(s);
	unsigned pick = (unsigned)(x % 100);

	*ip = (uint32_t)(x >> 32);
	if (pick < 3)
		*depth = 8 + (uint8_t)((x >> 8) % 4); /* wide; wider ones are added by the caller */
	else if (pick < 45)
		*depth = 9 + (uint8_t)((x >> 8) % 16); /* 9..24 */
	else
		*depth = 25 + (uint8_t)((x >> 8) % 8); /* 25..32 */
	if ((x >> 16) % 4 != 0)
		*ip = hot[(x >> 20) % 4] | (*ip & 0x3ff); /* land in four /22s */
}

static uint16_t rand_hop(uint64_t *s)
{
	return (uint16_t)(test_rand(s) % (LPM_NEXT_HOP_MAX + 1));
}

static void shuffle(struct ref *r, uint64_t *s)
{
	for (unsigned i = r->n; i > 1; i--) {
		unsigned j = (unsigned)(test_rand(s) % i);
		struct ref_route t = r->v[i - 1];

		r->v[i - 1] = r->v[j];
		r->v[j] = t;
	}
}

/* Add to both; with few tbl8 groups an add may fail with -ENOSPC, and then neither changes. */
static int add_both(struct lpm *lpm, struct ref *r, uint32_t ip, uint8_t depth, uint16_t hop)
{
	unsigned used = lpm_tbl8_used(lpm), count = lpm_route_count(lpm);
	int ret = lpm_add(lpm, ip, depth, hop);

	if (ret == -ENOSPC) {
		assert_true(depth > 24);
		assert_int_equal(ref_find(r, ip, depth), -1);
		assert_int_equal(lpm_tbl8_used(lpm), used);
		assert_int_equal(lpm_route_count(lpm), count);
		return ret;
	}
	assert_int_equal(ret, 0);
	ref_add(r, ip, depth, hop);
	return 0;
}

/* ---- tests ---- */

static void test_create_errors(void **state)
{
	struct lpm *lpm = NULL;
	uint16_t h;

	(void)state;
	assert_int_equal(lpm_create(0, 16, &lpm), -EINVAL);
	assert_int_equal(lpm_create(LPM_ROUTES_MAX + 1, 16, &lpm), -EINVAL);
	assert_int_equal(lpm_create(16, LPM_TBL8_GROUPS_MAX + 1, &lpm), -EINVAL);
	assert_null(lpm);
	lpm_free(NULL);

	/* Without tbl8 groups only routes up to /24 fit. */
	assert_int_equal(lpm_create(4, 0, &lpm), 0);
	assert_int_equal(lpm_lookup(lpm, 0x01020304, &h), -ENOENT);
	assert_int_equal(lpm_add(lpm, 0x01020304, 25, 1), -ENOSPC);
	assert_int_equal(lpm_add(lpm, 0x01020304, 24, 1), 0);
	assert_int_equal(lpm_lookup(lpm, 0x010203ff, &h), 0);
	assert_int_equal(h, 1);
	lpm_free(lpm);
}

static void test_add_delete_errors(void **state)
{
	struct lpm *lpm;
	uint16_t h;

	(void)state;
	assert_int_equal(lpm_create(8, 8, &lpm), 0);
	assert_int_equal(lpm_add(lpm, 0, 33, 1), -EINVAL);
	assert_int_equal(lpm_add(lpm, 0, 8, LPM_NEXT_HOP_MAX + 1), -EINVAL);
	assert_int_equal(lpm_add(lpm, 0, 8, LPM_NO_ROUTE), -EINVAL);
	assert_int_equal(lpm_route_count(lpm), 0);
	assert_int_equal(lpm_delete(lpm, 0, 33), -ENOENT);
	assert_int_equal(lpm_delete(lpm, 0, 0), -ENOENT);
	assert_int_equal(lpm_add(lpm, 0x0a000000, 8, LPM_NEXT_HOP_MAX), 0);
	assert_int_equal(lpm_lookup(lpm, 0x0a123456, &h), 0);
	assert_int_equal(h, LPM_NEXT_HOP_MAX);
	assert_int_equal(lpm_delete(lpm, 0x0a000000, 9), -ENOENT);
	assert_int_equal(lpm_delete(lpm, 0x0b000000, 8), -ENOENT);
	assert_int_equal(lpm_delete(lpm, 0x0a000000, 8), 0);
	assert_int_equal(lpm_delete(lpm, 0x0a000000, 8), -ENOENT);
	assert_int_equal(lpm_lookup(lpm, 0x0a123456, &h), -ENOENT);
	lpm_free(lpm);
}

/* Default route, /32, masking of host bits, replace, and covering routes coming back. */
static void test_edges(void **state)
{
	struct lpm *lpm;
	uint16_t h;

	(void)state;
	assert_int_equal(lpm_create(64, 8, &lpm), 0);
	assert_int_equal(lpm_add(lpm, 0xdeadbeef, 0, 7), 0); /* host bits ignored: 0.0.0.0/0 */
	assert_int_equal(lpm_lookup(lpm, 0, &h), 0);
	assert_int_equal(h, 7);
	assert_int_equal(lpm_lookup(lpm, 0xffffffff, &h), 0);
	assert_int_equal(h, 7);

	assert_int_equal(lpm_add(lpm, 0x0a01ffff, 16, 1), 0); /* 10.1.0.0/16 */
	assert_int_equal(lpm_add(lpm, 0x0a010203, 32, 2), 0);
	assert_int_equal(lpm_tbl8_used(lpm), 1);
	assert_int_equal(lpm_lookup(lpm, 0x0a010203, &h), 0);
	assert_int_equal(h, 2);
	assert_int_equal(lpm_lookup(lpm, 0x0a010202, &h), 0);
	assert_int_equal(h, 1);
	assert_int_equal(lpm_lookup(lpm, 0x0a020000, &h), 0);
	assert_int_equal(h, 7);

	/* Replace: same prefix (given with other host bits), no new slot. */
	assert_int_equal(lpm_add(lpm, 0x0a010000, 16, 3), 0);
	assert_int_equal(lpm_route_count(lpm), 3);
	assert_int_equal(lpm_lookup(lpm, 0x0a01ff00, &h), 0);
	assert_int_equal(h, 3);
	assert_int_equal(lpm_lookup(lpm, 0x0a010202, &h), 0); /* inside the tbl8 group too */
	assert_int_equal(h, 3);
	assert_int_equal(lpm_add(lpm, 0x0a010203, 32, 4), 0);
	assert_int_equal(lpm_tbl8_used(lpm), 1);
	assert_int_equal(lpm_lookup(lpm, 0x0a010203, &h), 0);
	assert_int_equal(h, 4);

	/* Deleting the /32 releases the group; the /16 answers again. */
	assert_int_equal(lpm_delete(lpm, 0x0a010203, 32), 0);
	assert_int_equal(lpm_tbl8_used(lpm), 0);
	assert_int_equal(lpm_lookup(lpm, 0x0a010203, &h), 0);
	assert_int_equal(h, 3);
	/* Deleting the /16 (named with host bits) falls back to the default route. */
	assert_int_equal(lpm_delete(lpm, 0x0a01abcd, 16), 0);
	assert_int_equal(lpm_lookup(lpm, 0x0a010203, &h), 0);
	assert_int_equal(h, 7);
	assert_int_equal(lpm_delete(lpm, 0, 0), 0);
	assert_int_equal(lpm_lookup(lpm, 0x0a010203, &h), -ENOENT);
	assert_int_equal(lpm_route_count(lpm), 0);
	lpm_free(lpm);
}

/* Nested routes inside one /24, deleted in every order of a few permutations. */
static void test_nested_tbl8(void **state)
{
	static const struct ref_route routes[] = {
	    {0xc0a80100, 24, 1}, {0xc0a80100, 25, 2}, {0xc0a80140, 26, 3},
	    {0xc0a80142, 31, 4}, {0xc0a80142, 32, 5}, {0xc0a80000, 23, 6},
	};
	static const unsigned orders[][6] = {
	    {0, 1, 2, 3, 4, 5},
	    {5, 4, 3, 2, 1, 0},
	    {2, 0, 4, 1, 5, 3},
	    {3, 5, 1, 4, 0, 2},
	};
	uint64_t s = 42;

	(void)state;
	for (unsigned o = 0; o < 4; o++) {
		struct ref r = {0};
		struct lpm *lpm;

		assert_int_equal(lpm_create(16, 4, &lpm), 0);
		for (unsigned i = 0; i < 6; i++)
			add_both(lpm, &r, routes[i].ip, routes[i].depth, routes[i].hop);
		assert_int_equal(lpm_tbl8_used(lpm), 1);
		check(lpm, &r, &s, 2048);
		for (unsigned k = 0; k < 6; k++) {
			const struct ref_route *x = &routes[orders[o][k]];

			assert_int_equal(lpm_delete(lpm, x->ip, x->depth), 0);
			ref_del_at(&r, (unsigned)ref_find(&r, x->ip, x->depth));
			check(lpm, &r, &s, 2048);
		}
		assert_int_equal(lpm_tbl8_used(lpm), 0);
		free(r.v);
		lpm_free(lpm);
	}
}

/* Out of groups or slots: -ENOSPC, nothing changes, and space comes back after deletes. */
static void test_exhaustion(void **state)
{
	struct ref r = {0};
	struct lpm *lpm;
	uint64_t s = 7;
	uint16_t h;

	(void)state;
	assert_int_equal(lpm_create(8, 2, &lpm), 0);
	add_both(lpm, &r, 0x0a000000, 8, 1);
	add_both(lpm, &r, 0x0a010180, 25, 2);			    /* group 1 */
	add_both(lpm, &r, 0x0a020204, 30, 3);			    /* group 2 */
	assert_int_equal(lpm_add(lpm, 0x0a030303, 32, 4), -ENOSPC); /* a third /24 */
	assert_int_equal(lpm_lookup(lpm, 0x0a030303, &h), 0);
	assert_int_equal(h, 1);
	assert_int_equal(lpm_route_count(lpm), 3);
	assert_int_equal(lpm_tbl8_used(lpm), 2);
	check(lpm, &r, &s, 4096);
	add_both(lpm, &r, 0x0a010101, 32, 5); /* existing group: fine */
	add_both(lpm, &r, 0x0a030300, 24, 6); /* no group needed */
	assert_int_equal(lpm_tbl8_used(lpm), 2);
	check(lpm, &r, &s, 4096);

	assert_int_equal(lpm_delete(lpm, 0x0a020204, 30), 0);
	ref_del_at(&r, (unsigned)ref_find(&r, 0x0a020204, 30));
	assert_int_equal(lpm_tbl8_used(lpm), 1);
	add_both(lpm, &r, 0x0a030303, 32, 4);
	assert_int_equal(lpm_tbl8_used(lpm), 2);
	check(lpm, &r, &s, 4096);

	/* Route slots: 5 used of 8. */
	add_both(lpm, &r, 0x0b000000, 8, 7);
	add_both(lpm, &r, 0x0c000000, 8, 8);
	add_both(lpm, &r, 0x0d000000, 8, 9);
	assert_int_equal(lpm_add(lpm, 0x0e000000, 8, 10), -ENOSPC);
	assert_int_equal(lpm_add(lpm, 0x0a030303, 32, 11), 0); /* a replace needs no slot */
	ref_add(&r, 0x0a030303, 32, 11);
	assert_int_equal(lpm_lookup(lpm, 0x0e000000, &h), -ENOENT);
	check(lpm, &r, &s, 4096);
	free(r.v);
	lpm_free(lpm);
}

static void test_bulk(void **state)
{
	uint32_t ips[100];
	uint16_t hops[100];
	struct lpm *lpm;
	uint64_t s = 99;

	(void)state;
	assert_int_equal(lpm_create(16, 4, &lpm), 0);
	assert_int_equal(lpm_add(lpm, 0x0a000000, 8, 0), 0);
	assert_int_equal(lpm_add(lpm, 0x0a000080, 25, 1), 0);
	for (unsigned n = 0; n <= 100; n++) {
		unsigned hits = 0;

		for (unsigned i = 0; i < n; i++) {
			uint32_t x = (uint32_t)test_rand(&s);

			/* Random (mostly misses), inside the /25's /24, anywhere in the /8. */
			if (i % 3 == 0)
				ips[i] = x;
			else
				ips[i] = 0x0a000000 | (x & (i % 3 == 1 ? 0xff : 0xffffff));
		}
		memset(hops, 0xab, sizeof(hops));
		for (unsigned i = 0; i < n; i++) {
			uint16_t h;

			hits += lpm_lookup(lpm, ips[i], &h) == 0;
		}
		assert_int_equal(lpm_lookup_bulk(lpm, ips, hops, n), hits);
		for (unsigned i = 0; i < n; i++) {
			uint16_t h = LPM_NO_ROUTE;

			(void)lpm_lookup(lpm, ips[i], &h);
			assert_int_equal(hops[i], h);
		}
		if (n < 100)
			assert_int_equal(hops[n], 0xabab); /* nothing written past n */
	}
	lpm_free(lpm);
}

/*
 * Random route sets against the reference: build, replace next hops, delete half in random
 * order, add more, then delete everything; checked after every phase (and every few deletes).
 * With few tbl8 groups, adds beyond them must fail cleanly.
 */
static void random_round(uint64_t seed, unsigned groups, bool wide)
{
	const unsigned nroutes = 500, lookups = 8192;
	struct ref r = {0};
	struct lpm *lpm;
	uint64_t s = seed;
	unsigned nospace = 0;
	uint32_t ip;
	uint8_t depth;

	assert_int_equal(lpm_create(2 * nroutes, groups, &lpm), 0);
	for (unsigned i = 0; i < nroutes; i++) {
		rand_route(&s, &ip, &depth);
		nospace += add_both(lpm, &r, ip, depth, rand_hop(&s)) == -ENOSPC;
	}
	/* The random set spans more /24s than a few groups can hold, and fewer than 1024. */
	assert_true(groups < 16 ? nospace > 0 : nospace == 0);
	/*
	 * Very short prefixes each rewrite millions of entries, which is slow in sanitizer
	 * builds: only some rounds have them.
	 */
	if (wide) {
		add_both(lpm, &r, 0, 0, rand_hop(&s));
		add_both(lpm, &r, 0x0a000000, 3, rand_hop(&s));
	}
	check(lpm, &r, &s, lookups);

	for (unsigned i = 0; i < nroutes / 4; i++) {
		struct ref_route *x = &r.v[test_rand(&s) % r.n];

		add_both(lpm, &r, x->ip | ((uint32_t)test_rand(&s) & ~mask_of(x->depth)), x->depth,
			 rand_hop(&s));
	}
	check(lpm, &r, &s, lookups);

	shuffle(&r, &s);
	for (unsigned i = 0, half = r.n / 2; i < half; i++) {
		struct ref_route x = r.v[r.n - 1];

		assert_int_equal(lpm_delete(lpm, x.ip, x.depth), 0);
		assert_int_equal(lpm_delete(lpm, x.ip, x.depth), -ENOENT);
		r.n--;
	}
	check(lpm, &r, &s, lookups);

	for (unsigned i = 0; i < nroutes / 2; i++) {
		rand_route(&s, &ip, &depth);
		add_both(lpm, &r, ip, depth, rand_hop(&s));
	}
	check(lpm, &r, &s, lookups);

	shuffle(&r, &s);
	for (unsigned k = 0; r.n; k++) {
		struct ref_route x = r.v[r.n - 1];

		assert_int_equal(lpm_delete(lpm, x.ip, x.depth), 0);
		r.n--;
		if (k % 128 == 0)
			check(lpm, &r, &s, 1024);
	}
	assert_int_equal(lpm_route_count(lpm), 0);
	assert_int_equal(lpm_tbl8_used(lpm), 0);
	check(lpm, &r, &s, 4096);
	free(r.v);
	lpm_free(lpm);
}

/*
 * A full route store (load 1/2 in lpm.c's hash) churned by deletes in random order: every
 * route must stay findable. Distinct /24s keep the answers obvious without the reference.
 */
static void test_full_store_churn(void **state)
{
	enum { N = 4096 };
	static uint32_t net[N];
	struct lpm *lpm;
	uint64_t s = 3;
	uint16_t h;

	(void)state;
	assert_int_equal(lpm_create(N, 0, &lpm), 0);
	for (unsigned i = 0; i < N; i++) {
		net[i] = (i * 0x9e3779u & 0xffffffu) << 8; /* odd multiplier: distinct /24s */
		assert_int_equal(lpm_add(lpm, net[i], 24, (uint16_t)(i & 0x7fff)), 0);
	}
	assert_int_equal(lpm_add(lpm, 0x01020300, 23, 1), -ENOSPC);
	for (unsigned round = 0; round < 4; round++) {
		/* Delete a random half, check all, add them back. */
		for (unsigned i = N; i > 1; i--) {
			unsigned j = (unsigned)(test_rand(&s) % i);
			uint32_t t = net[i - 1];

			net[i - 1] = net[j];
			net[j] = t;
		}
		for (unsigned i = 0; i < N / 2; i++)
			assert_int_equal(lpm_delete(lpm, net[i], 24), 0);
		assert_int_equal(lpm_route_count(lpm), N / 2);
		for (unsigned i = 0; i < N; i++) {
			int want = i < N / 2 ? -ENOENT : 0;

			assert_int_equal(lpm_lookup(lpm, net[i] | 0x7f, &h), want);
			assert_int_equal(lpm_delete(lpm, net[i], 24), want);
			assert_int_equal(lpm_add(lpm, net[i], 24, (uint16_t)(i & 0x7fff)), 0);
		}
		for (unsigned i = 0; i < N; i++) {
			assert_int_equal(lpm_lookup(lpm, net[i], &h), 0);
			assert_int_equal(h, i & 0x7fff);
		}
	}
	lpm_free(lpm);
}

static const uint64_t seeds[] = {1, 2, 0x5eed, 0xc0ffee, 20240601};

static void test_random(void **state)
{
	(void)state;
	for (unsigned i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++)
		random_round(seeds[i], 1024, i == 0);
}

static void test_random_few_groups(void **state)
{
	(void)state;
	for (unsigned i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++)
		random_round(seeds[i] * 31, 6, i == 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_create_errors),
	    cmocka_unit_test(test_add_delete_errors),
	    cmocka_unit_test(test_edges),
	    cmocka_unit_test(test_nested_tbl8),
	    cmocka_unit_test(test_exhaustion),
	    cmocka_unit_test(test_bulk),
	    cmocka_unit_test(test_random),
	    cmocka_unit_test(test_random_few_groups),
	    cmocka_unit_test(test_full_store_churn),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
