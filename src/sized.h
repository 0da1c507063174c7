/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef TIDE_SIZED_H
#define TIDE_SIZED_H

#include <errno.h>
#include <stddef.h>
#include <string.h>

/*
 * Public structs the library fills carry their size as the first member (size_t sz), set
 * by the caller, so that they can grow without breaking older callers. A getter checks it
 * first with tide_sized_check(): below @min_sz (the struct's size in its first version:
 * TIDE_SIZE_UPTO(type, its last member then)) it is -EINVAL; it fills a whole struct of
 * its own and hands out the first min(sz, sizeof) bytes with tide_sized_put(), keeping the
 * caller's sz. An older caller gets what it knows of; a newer one's tail stays as it was.
 */
#define TIDE_SIZE_UPTO(type, member) (offsetof(type, member) + sizeof(((type *)0)->member))

static inline int tide_sized_check(const void *out, size_t min_sz)
{
	return out != NULL && *(const size_t *)out >= min_sz ? 0 : -EINVAL;
}

static inline int tide_sized_put(void *out, const void *full, size_t full_sz)
{
	size_t sz = *(const size_t *)out;

	memcpy(out, full, sz < full_sz ? sz : full_sz);
	*(size_t *)out = sz;
	return 0;
}

#endif
