/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared helpers for the cmocka unit tests. */
#ifndef TIDE_TESTUTIL_H
#define TIDE_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <tide/mbuf.h>
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

/* Whether the test runs under an emulator: qemu-user, the aarch64 cross build
 * (tests/meson.build sets TIDE_TEST_EMULATED there). */
static inline bool test_emulated(void)
{
	return getenv("TIDE_TEST_EMULATED") != NULL;
}

/*
 * A test of threads spinning on shared memory (ring_threads, pool_threads) calls this first:
 * 77 (a skip, with the reason on stderr) under qemu-user, else 0. qemu-user runs the threads
 * with the host's x86 memory order, so such a test could not show an aarch64 reordering,
 * and it can hold a spinning thread off its CPU for tens of seconds.
 */
static inline int skip_threads_when_emulated(void)
{
	if (!test_emulated())
		return 0;
	fprintf(stderr, "skip: runs under qemu-user, which can starve a spinning thread and "
			"cannot show aarch64 reorderings\n");
	return 77;
}

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

/*
 * @len bytes at @buf as an mbuf chain from @p: the first segment holds up to @first bytes,
 * each later one 1..@piece bytes at random (@rnd), or with @rnd NULL as many as fit; no
 * segment holds more than its tailroom.
 */
static inline struct tide_mbuf *test_chain(struct tide_pool *p, const uint8_t *buf, uint32_t len,
					   uint32_t first, uint32_t piece, uint64_t *rnd)
{
	struct tide_mbuf *head = NULL;
	uint32_t off = 0;

	while (off < len) {
		uint32_t n = len - off;
		struct tide_mbuf *m = tide_mbuf_alloc(p);

		require_non_null(m);
		if (head == NULL)
			n = first;
		else if (rnd != NULL)
			n = 1 + (uint32_t)(test_rand(rnd) % piece);
		if (n > len - off)
			n = len - off;
		if (n > tide_mbuf_tailroom(m))
			n = tide_mbuf_tailroom(m);
		memcpy(tide_mbuf_append(m, (uint16_t)n), buf + off, n);
		if (head == NULL)
			head = m;
		else
			assert_int_equal(tide_mbuf_chain(head, m), 0);
		off += n;
	}
	return head;
}

#endif
