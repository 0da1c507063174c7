/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tide/common.h - small definitions shared by every public header.
 *
 * Fast-path helpers here are inline and do no argument checks.
 */
#ifndef TIDE_COMMON_H
#define TIDE_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every symbol of the library's ABI carries this mark; everything else is hidden. */
#define TIDE_EXPORT __attribute__((visibility("default")))

#define TIDE_CACHE_LINE 64
#define TIDE_CACHE_ALIGNED __attribute__((aligned(TIDE_CACHE_LINE)))

#define tide_likely(x) __builtin_expect(!!(x), 1)
#define tide_unlikely(x) __builtin_expect(!!(x), 0)

/* Upper bound on threads that own a per-thread pool cache (see tide/lcore.h). */
#define TIDE_MAX_THREADS 64

static inline int tide_is_pow2(uint64_t v)
{
	return v != 0 && (v & (v - 1)) == 0;
}

/*
 * Copy @n pointers between arrays that do not overlap, eight at a time, then four, then one
 * by one: all loads of a group before its stores lets the compiler use vector moves (it
 * cannot prove the arrays apart), and a group of eight pays the loop test once (a burst of
 * 32 is four iterations).
 */
static inline void tide_copy_ptrs(void **dst, void *const *src, size_t n)
{
	for (size_t q = n / 8; q > 0; q--, dst += 8, src += 8) {
		void *a = src[0], *b = src[1], *c = src[2], *d = src[3];
		void *e = src[4], *f = src[5], *g = src[6], *h = src[7];

		dst[0] = a;
		dst[1] = b;
		dst[2] = c;
		dst[3] = d;
		dst[4] = e;
		dst[5] = f;
		dst[6] = g;
		dst[7] = h;
	}
	if (n & 4) {
		void *a = src[0], *b = src[1], *c = src[2], *d = src[3];

		dst[0] = a;
		dst[1] = b;
		dst[2] = c;
		dst[3] = d;
		dst += 4;
		src += 4;
	}
	for (size_t r = n % 4; r > 0; r--)
		*dst++ = *src++;
}

/* Busy-wait hint for spin loops. */
static inline void tide_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

/*
 * Memory ordering: public headers use the GCC/Clang __atomic builtins, which implement the
 * C11 memory model but also compile as C++ (where _Atomic is not available before C++23).
 * Every acquire names the release it pairs with in a comment.
 */

#ifdef __cplusplus
}
#endif

#endif /* TIDE_COMMON_H */
