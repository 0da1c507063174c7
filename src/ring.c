/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tide/ring.h>

#include "log.h"

size_t tide_ring_memsize(unsigned size)
{
	return sizeof(struct tide_ring) + (size_t)size * sizeof(void *);
}

static int check_params(const char *name, unsigned size, unsigned flags)
{
	if (size < 2 || size > TIDE_RING_SIZE_MAX || !tide_is_pow2(size)) {
		TIDE_LOG_ERR_("ring", "%s: size %u must be a power of two in 2..%u",
			      name ? name : "?", size, TIDE_RING_SIZE_MAX);
		return -EINVAL;
	}
	if (flags & ~(TIDE_RING_SP_ENQ | TIDE_RING_SC_DEQ)) {
		TIDE_LOG_ERR_("ring", "%s: unknown flags 0x%x", name ? name : "?", flags);
		return -EINVAL;
	}
	return 0;
}

int tide_ring_init(struct tide_ring *r, const char *name, unsigned size, unsigned flags)
{
	int rc = check_params(name, size, flags);

	if (rc < 0)
		return rc;
	memset(r, 0, sizeof(*r));
	r->size = size;
	r->mask = size - 1;
	r->flags = flags;
	r->prod.single = !!(flags & TIDE_RING_SP_ENQ);
	r->cons.single = !!(flags & TIDE_RING_SC_DEQ);
	snprintf(r->name, sizeof(r->name), "%s", name ? name : "");
	return 0;
}

int tide_ring_create(const char *name, unsigned size, unsigned flags, struct tide_ring **out)
{
	struct tide_ring *r;
	int rc;

	if (out == NULL)
		return -EINVAL;
	rc = check_params(name, size, flags);
	if (rc < 0)
		return rc;
	if (posix_memalign((void **)&r, TIDE_CACHE_LINE, tide_ring_memsize(size)) != 0)
		return -ENOMEM;
	rc = tide_ring_init(r, name, size, flags);
	if (rc < 0) {
		free(r);
		return rc;
	}
	*out = r;
	return 0;
}

void tide_ring_free(struct tide_ring *r)
{
	free(r);
}
