/* SPDX-License-Identifier: BSD-3-Clause */
/* Rx refill: configuration, setup and teardown. See rxr.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "rxr.h"

int rxr_conf_check(const char *who, unsigned nb_desc, struct tide_rxq_conf *conf)
{
	if (conf->free_thresh == 0)
		conf->free_thresh = RXR_DEFAULT_BATCH < nb_desc ? RXR_DEFAULT_BATCH : nb_desc / 2;
	if (!tide_is_pow2(conf->free_thresh) || conf->free_thresh > nb_desc / 2) {
		TIDE_LOG_ERR_(who, "rx free_thresh %u must be a power of two dividing the ring and at most half of it (%u descriptors)",
			      conf->free_thresh, nb_desc);
		return -EINVAL;
	}
	return 0;
}

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
