/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memif_desc.h - the one checker of what a memif peer writes into shared memory:
 * descriptors, chains of descriptors, head/tail indices and ring cookies. The data paths
 * (memif_copy.c, memif_zc.c) and the fuzzers (tests/fuzz/) call these same inline
 * functions; there is no second copy of any rule.
 *
 * The peer can rewrite shared memory at any moment, so a descriptor is first copied to a
 * local with single loads (memif_desc_fetch()), and only the copy is checked and used: a
 * check on the shared slot followed by a second read would let the peer change the value in
 * between (time of check to time of use, the vhost-user bug class). All arithmetic is 64-bit
 * so that offset + length cannot wrap.
 *
 * Errors: -EINVAL with *reason set to a short static string for the disconnect message
 * (@reason may be NULL). No function keeps state; all are safe to call from any thread on
 * memory that another process writes concurrently.
 */
#ifndef TIDE_MEMIF_DESC_H
#define TIDE_MEMIF_DESC_H

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "inline.h"
#include "memif_proto.h"

/* What we know about the peer's memory, owned by the caller and read-only here. */
struct memif_desc_limits {
	const uint64_t *region_size; /* bytes of each mapped region, [n_regions] */
	uint16_t n_regions;
	uint32_t buffer_size; /* longest buffer one descriptor may describe */
	uint16_t max_chain;   /* most descriptors one packet may span (>= 1) */
};

TIDE_ALWAYS_INLINE int memif_desc_fail(const char **reason, const char *why)
{
	if (reason)
		*reason = why;
	return -EINVAL;
}

/*
 * Copy the descriptor at @shared to @local with one relaxed atomic load per field, so that
 * the compiler neither tears nor repeats a read. No checks.
 */
TIDE_ALWAYS_INLINE void memif_desc_fetch(const struct memif_desc *shared, struct memif_desc *local)
{
	local->flags = __atomic_load_n(&shared->flags, __ATOMIC_RELAXED);
	local->region = __atomic_load_n(&shared->region, __ATOMIC_RELAXED);
	local->length = __atomic_load_n(&shared->length, __ATOMIC_RELAXED);
	local->offset = __atomic_load_n(&shared->offset, __ATOMIC_RELAXED);
	local->metadata = __atomic_load_n(&shared->metadata, __ATOMIC_RELAXED);
}

/*
 * Check a local copy @d: region < n_regions, length <= buffer_size, offset + length within
 * the region. Flags are not checked (memif_desc_chain_read() bounds chains).
 * Returns 0 or -EINVAL.
 */
TIDE_ALWAYS_INLINE int memif_desc_check(const struct memif_desc *d,
					const struct memif_desc_limits *lim, const char **reason)
{
	if (__builtin_expect(d->region >= lim->n_regions, 0))
		return memif_desc_fail(reason, "descriptor region out of range");
	if (__builtin_expect(d->length > lim->buffer_size, 0))
		return memif_desc_fail(reason, "descriptor length exceeds buffer size");
	/* Both operands are 32-bit: the 64-bit sum cannot wrap. */
	if (__builtin_expect((uint64_t)d->offset + d->length > lim->region_size[d->region], 0))
		return memif_desc_fail(reason, "descriptor beyond its region");
	return 0;
}

/*
 * Write flags, region and length of a descriptor we own (not published yet) in one 8-byte
 * store; the offset is left as it is (a server's Tx keeps the offset the client posted).
 * The layout is little-endian (memif_proto.h).
 */
TIDE_ALWAYS_INLINE void memif_desc_put_len(struct memif_desc *dd, uint16_t flags, uint16_t region,
					   uint32_t length)
{
	const uint64_t lo = (uint64_t)flags | (uint64_t)region << 16 | (uint64_t)length << 32;

	memcpy(dd, &lo, 8);
}

/* memif_desc_fetch() then memif_desc_check() on the copy in @out. Returns 0 or -EINVAL. */
TIDE_ALWAYS_INLINE int memif_desc_read(const struct memif_desc *shared,
				       const struct memif_desc_limits *lim, struct memif_desc *out,
				       const char **reason)
{
	memif_desc_fetch(shared, out);
	return memif_desc_check(out, lim, reason);
}

/*
 * Read one packet's chain from the ring's descriptor array @desc (2^log2 slots, @mask =
 * slots - 1), starting at free-running index @index, with @avail slots published by the
 * peer (as validated by memif_ring_index_check()). Each descriptor is fetched into
 * @out[i] and checked; the chain ends at the first one without MEMIF_DESC_FLAG_NEXT.
 * @out must hold lim->max_chain entries.
 * Returns the number of descriptors of the packet (1..max_chain), 0 if @avail is 0,
 * -E2BIG for a well-formed chain longer than max_chain (*skip = its length: the caller drops
 * the packet and counts it; only flags are read beyond max_chain), or -EINVAL for a bad
 * descriptor or a chain that still continues at the last published slot (a violation).
 */
TIDE_ALWAYS_INLINE int memif_desc_chain_read(const struct memif_desc *desc, uint16_t mask,
					     uint16_t index, uint16_t avail,
					     const struct memif_desc_limits *lim,
					     struct memif_desc *out, uint16_t *skip,
					     const char **reason)
{
	unsigned int n = 0;

	if (avail == 0)
		return 0;
	for (;;) {
		int ret = memif_desc_read(&desc[(uint16_t)(index + n) & mask], lim, &out[n],
					  reason);

		if (ret)
			return ret;
		if (!(out[n++].flags & MEMIF_DESC_FLAG_NEXT))
			return (int)n;
		if (n >= avail)
			return memif_desc_fail(reason, "descriptor chain not terminated");
		if (n >= lim->max_chain)
			break;
	}
	/* Too long to receive: find its end, so that it can be dropped as one packet. */
	for (; n < avail; n++)
		if (!(__atomic_load_n(&desc[(uint16_t)(index + n) & mask].flags,
				      __ATOMIC_RELAXED) &
		      MEMIF_DESC_FLAG_NEXT)) {
			*skip = (uint16_t)(n + 1);
			if (reason)
				*reason = "descriptor chain too long";
			return -E2BIG;
		}
	return memif_desc_fail(reason, "descriptor chain not terminated");
}

/*
 * Check a peer-written free-running index. @cached is the last value we accepted, @seen the
 * value just loaded (with acquire), @window how far it may legally have moved since @cached:
 *   reading the producer's index as consumer: window = ring size - (cached - our index);
 *   reading the consumer's index as producer: window = our index - cached.
 * @window must not exceed the ring size (at most 2^14), which keeps "moved backwards" (a
 * distance of 2^15 or more modulo 2^16) apart from "moved too far".
 * Returns 0 with *moved = seen - cached, or -EINVAL (*moved untouched).
 */
TIDE_ALWAYS_INLINE int memif_ring_index_check(uint16_t cached, uint16_t seen, uint32_t window,
					      uint16_t *moved, const char **reason)
{
	uint16_t d = (uint16_t)(seen - cached);

	if (__builtin_expect(d > window, 0))
		return memif_desc_fail(reason, d >= 0x8000 ? "ring index moved backwards"
							   : "ring index moved too far");
	*moved = d;
	return 0;
}

/* The ring header at @ring carries MEMIF_COOKIE. Returns 0 or -EINVAL. */
TIDE_ALWAYS_INLINE int memif_ring_check_cookie(const struct memif_ring *ring, const char **reason)
{
	if (__atomic_load_n(&ring->cookie, __ATOMIC_RELAXED) != MEMIF_COOKIE)
		return memif_desc_fail(reason, "bad ring cookie");
	return 0;
}

#endif /* TIDE_MEMIF_DESC_H */
