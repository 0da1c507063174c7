/* SPDX-License-Identifier: BSD-3-Clause */
/* Checks on peer-written memif descriptors, chains and ring indices. */
#include <errno.h>

#include "memif_desc.h"

static int fail(const char **reason, const char *why)
{
	if (reason)
		*reason = why;
	return -EINVAL;
}

int memif_desc_check(const struct memif_desc *d, const struct memif_desc_limits *lim,
		     const char **reason)
{
	if (d->region >= lim->n_regions)
		return fail(reason, "descriptor region out of range");
	if (d->length > lim->buffer_size)
		return fail(reason, "descriptor length exceeds buffer size");
	/* Both operands are 32-bit: the 64-bit sum cannot wrap. */
	if ((uint64_t)d->offset + d->length > lim->region_size[d->region])
		return fail(reason, "descriptor beyond its region");
	return 0;
}

int memif_desc_read(const struct memif_desc *shared, const struct memif_desc_limits *lim,
		    struct memif_desc *out, const char **reason)
{
	memif_desc_fetch(shared, out);
	return memif_desc_check(out, lim, reason);
}

int memif_desc_chain_read(const struct memif_desc *desc, uint16_t mask, uint16_t index,
			  uint16_t avail, const struct memif_desc_limits *lim,
			  struct memif_desc *out, const char **reason)
{
	unsigned int n = 0;

	if (avail == 0)
		return 0;
	for (;;) {
		int ret =
		    memif_desc_read(&desc[(uint16_t)(index + n) & mask], lim, &out[n], reason);

		if (ret)
			return ret;
		if (!(out[n++].flags & MEMIF_DESC_FLAG_NEXT))
			return (int)n;
		if (n >= lim->max_chain)
			return fail(reason, "descriptor chain too long");
		if (n >= avail)
			return fail(reason, "descriptor chain not terminated");
	}
}

int memif_ring_index_check(uint16_t cached, uint16_t seen, uint32_t window, uint16_t *moved,
			   const char **reason)
{
	uint16_t d = (uint16_t)(seen - cached);

	if (d >= 0x8000)
		return fail(reason, "ring index moved backwards");
	if (d > window)
		return fail(reason, "ring index moved too far");
	*moved = d;
	return 0;
}

int memif_ring_check_cookie(const struct memif_ring *ring, const char **reason)
{
	if (__atomic_load_n(&ring->cookie, __ATOMIC_RELAXED) != MEMIF_COOKIE)
		return fail(reason, "bad ring cookie");
	return 0;
}
