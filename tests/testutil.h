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

/*
 * cmocka's failure calls are not declared noreturn, so after assert_non_null() the compiler
 * still follows the NULL path (GCC 12 at -O3 then warns about writes through it). A failed
 * check never returns (cmocka jumps back to its runner), and this says so.
 */
#define require_non_null(p)                                                                  \
	do {                                                                                 \
		if ((p) == NULL) {                                                           \
			fail_msg("%s is NULL", #p);                                          \
			__builtin_unreachable();                                             \
		}                                                                            \
	} while (0)

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
