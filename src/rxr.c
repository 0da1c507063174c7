/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rxr.h"

int rxr_init(struct rxr *r, struct tide_rxq *q, unsigned size, struct tide_pool *pool,
	     const struct tide_rxq_conf *conf,
	     void (*post)(struct rxr *r, uint32_t first, unsigned n, bool doorbell), void *drv)
{
	memset(r, 0, sizeof(*r));
	r->sw = calloc(size, sizeof(*r->sw));
	if (r->sw == NULL)
		return -ENOMEM;
	r->size = size;
	r->mask = size - 1;
	r->batch = conf->free_thresh;
	r->pool = pool;
	r->q = q;
	r->post = post;
	r->drv = drv;
	link_rx_init(&r->link, q, LINK_SLOTS);
	return 0;
}

void rxr_fini(struct rxr *r)
{
	free(r->sw);
	r->sw = NULL;
}

unsigned rxr_release_all(struct rxr *r)
{
	unsigned n = r->refill - r->next;

	for (uint32_t i = r->next; i != r->refill; i++) {
		tide_mbuf_free(r->sw[i & r->mask]);
		r->sw[i & r->mask] = NULL;
	}
	/* Start the next run from slot 0 with an empty ring. */
	r->next = r->refill = 0;
	return n;
}
