/* SPDX-License-Identifier: BSD-3-Clause */
/* Counter helpers for drivers and the engine (internal: not part of the public API). */
#ifndef TIDE_SRC_STAT_H
#define TIDE_SRC_STAT_H

#include <tide/port_core.h>

/* Add to a counter that only the calling thread adds to but others may read, and
 * tide_port_stats_reset() may zero from another thread: both the load and the store are
 * relaxed atomics (a plain mov each on x86 and arm64), so a reset racing with a count is
 * defined (the count may be lost), not a data race. */
static inline void tide_stat_add(uint64_t *c, uint64_t v)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
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
