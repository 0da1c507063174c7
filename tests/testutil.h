/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared helpers for the cmocka unit tests. */
#ifndef TIDE_TESTUTIL_H
#define TIDE_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <tide/pool.h>

/* Deterministic PRNG (xorshift64*), so failures reproduce. */
static inline uint64_t test_rand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/* The pool is whole: every element free, nothing twice, nothing foreign. */
static inline void assert_pool_full(struct tide_pool *p)
{
	struct tide_pool_audit a;

	assert_int_equal(tide_pool_audit(p, &a), 0);
	assert_int_equal(a.free, a.n);
	assert_int_equal(a.duplicates, 0);
	assert_int_equal(tide_pool_avail(p), tide_pool_size(p));
}

#endif
