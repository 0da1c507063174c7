/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memif_desc.h - checks on what a memif peer writes into shared memory: descriptors, chains
 * of descriptors, head/tail indices and ring cookies.
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

#include <stdint.h>

#include "memif_proto.h"

/* What we know about the peer's memory, owned by the caller and read-only here. */
struct memif_desc_limits {
	const uint64_t *region_size; /* bytes of each mapped region, [n_regions] */
	uint16_t n_regions;
	uint32_t buffer_size; /* longest buffer one descriptor may describe */
	uint16_t max_chain;   /* most descriptors one packet may span (>= 1) */
};

/*
 * Copy the descriptor at @shared to @local with one relaxed atomic load per field, so that
 * the compiler neither tears nor repeats a read. No checks.
 */
static inline void memif_desc_fetch(const struct memif_desc *shared, struct memif_desc *local)
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
int memif_desc_check(const struct memif_desc *d, const struct memif_desc_limits *lim,
		     const char **reason);

/* memif_desc_fetch() then memif_desc_check() on the copy in @out. Returns 0 or -EINVAL. */
int memif_desc_read(const struct memif_desc *shared, const struct memif_desc_limits *lim,
		    struct memif_desc *out, const char **reason);

/*
 * Read one packet's chain from the ring's descriptor array @desc (2^log2 slots, @mask =
 * slots - 1), starting at free-running index @index, with @avail slots published by the
 * peer (as validated by memif_ring_index_check()). Each descriptor is fetched into
 * @out[i] and checked; the chain ends at the first one without MEMIF_DESC_FLAG_NEXT.
 * @out must hold lim->max_chain entries.
 * Returns the number of descriptors of the packet (1..max_chain), 0 if @avail is 0, or -EINVAL
 * for a bad descriptor, a chain longer than max_chain, or a chain that still continues at the
 * last published slot.
 */
int memif_desc_chain_read(const struct memif_desc *desc, uint16_t mask, uint16_t index,
			  uint16_t avail, const struct memif_desc_limits *lim,
			  struct memif_desc *out, const char **reason);

/*
 * Check a peer-written free-running index. @cached is the last value we accepted, @seen the
 * value just loaded (with acquire), @window how far it may legally have moved since @cached:
 *   reading the producer's index as consumer: window = ring size - (cached - our index);
 *   reading the consumer's index as producer: window = our index - cached.
 * @window must not exceed the ring size (at most 2^14), which keeps "moved backwards" (a
 * distance of 2^15 or more modulo 2^16) apart from "moved too far".
 * Returns 0 with *moved = seen - cached, or -EINVAL (*moved untouched).
 */
int memif_ring_index_check(uint16_t cached, uint16_t seen, uint32_t window, uint16_t *moved,
			   const char **reason);

/* The ring header at @ring carries MEMIF_COOKIE. Returns 0 or -EINVAL. */
int memif_ring_check_cookie(const struct memif_ring *ring, const char **reason);

#endif /* TIDE_MEMIF_DESC_H */
