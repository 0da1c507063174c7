/* SPDX-License-Identifier: BSD-3-Clause */
/* Counter helpers for drivers and the engine (internal: not part of the public API). */
#ifndef TIDE_SRC_STAT_H
#define TIDE_SRC_STAT_H

#include <tide/port_core.h>

/* Add to a counter that only the calling thread writes but others may read. */
static inline void tide_stat_add(uint64_t *c, uint64_t v)
{
	__atomic_store_n(c, *c + v, __ATOMIC_RELAXED);
}

/* Count a burst of @packets packets, @bytes bytes, on a queue (drivers' bursts). */
static inline void tide_stat_burst(struct tide_queue_stats *s, uint64_t packets, uint64_t bytes)
{
	if (packets != 0) {
		tide_stat_add(&s->packets, packets);
		tide_stat_add(&s->bytes, bytes);
	}
}

/* Zero @n counters others may be counting into (port.c). */
void tide_stat_zero(uint64_t *c, size_t n);

#endif
