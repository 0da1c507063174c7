/* SPDX-License-Identifier: BSD-3-Clause */
/* The recycle link: see link.h. */
#include "driver.h"
#include "link.h"

__thread struct link_rx *link_hint_ __attribute__((tls_model("initial-exec")));
__thread uint64_t link_hint_tok_ __attribute__((tls_model("initial-exec")));

void link_rx_init(struct link_rx *l, struct tide_rxq *q, enum link_kind kind)
{
	l->pair = 0;
	l->kind = (uint8_t)kind;
	l->q = q;
	q->refill = l;
}

void link_rx_set(struct link_rx *l, uintptr_t src)
{
	__atomic_store_n(&l->pair, src ? src | LINK_MANUAL : 0, __ATOMIC_RELAXED);
}

static void unpair_from(struct tide_rxq *q, void *arg)
{
	struct link_rx *l = q->refill;
	uintptr_t src = (uintptr_t)arg;

	/* Only the control thread clears; a worker's link_tx_sent cannot write @src again:
	 * its Tx burst is a no-op (stopped) before this runs. */
	if (l != NULL && link_rx_pair(l) == src)
		__atomic_store_n(&l->pair, 0, __ATOMIC_RELAXED);
}

void link_unpair(uintptr_t src)
{
	tide_port_foreach_rxq(unpair_from, (void *)src);
}
