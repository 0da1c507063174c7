/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What copy.h's helpers may use of this CPU, found once when the library loads.
 */
#include <pthread.h>
#include <string.h>

#include "copy.h"
#include "log.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

bool copy_prefetchw;

__attribute__((constructor)) static void copy_cpu_init(void)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;

	/* PRFCHW (AMD: 3DNowPrefetch): CPUID 0x80000001, ECX bit 8. */
	copy_prefetchw = __get_cpuid(0x80000001, &a, &b, &c, &d) && (c & (1u << 8));
#else
	/* Off: the gain was measured on x86-64 only (TIDE_PREFETCHW=1 turns on the
	 * compiler's write prefetch here). */
	copy_prefetchw = false;
#endif
}

/* TIDE_PREFETCHW=0|1 overrides the CPU's answer: A/B runs, and instruction counts under
 * valgrind, whose CPU does not offer PREFETCHW (it executes it). Read at the first queue
 * start, not at load: a value not understood is reported through the log handler the
 * application has set by then. */
static void copy_env_init(void)
{
	env_flag("TIDE_PREFETCHW", &copy_prefetchw);
}

bool copy_claims(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, copy_env_init);
	return copy_prefetchw;
}

void copy_adapt_init(struct copy_adapt *a, enum copy_stores stores)
{
	memset(a, 0, sizeof(*a));
	if (!COPY_HAVE_STREAM)
		stores = COPY_STORES_CACHE;
	a->stores = (uint8_t)stores;
	a->stream = stores == COPY_STORES_STREAM;
	a->settled = a->stream;
	a->interval = COPY_PROBE_MIN;
}

void copy_adapt_epoch(struct copy_adapt *a, uint64_t ticks)
{
	/* Ticks per KiB sent; an epoch that sent nothing (cannot happen: a measured burst
	 * sent something) counts as free. */
	uint64_t cost = a->bytes ? (ticks << 10) / a->bytes : 0;

	a->bursts = 0;
	a->bytes = 0;
	if (a->stores != COPY_STORES_AUTO)
		return;
	if (a->probing) {
		bool won = cost * COPY_SWITCH_DEN < a->cost * COPY_SWITCH_NUM;

		a->probing = false;
		if (won && a->confirming) {
			/* The other way was faster twice running: it is the settled way now
			 * (a->stream is already it), measured by this probe. */
			a->confirming = false;
			a->cost = cost;
			a->epochs = 1;
			a->interval = COPY_PROBE_MIN;
			__atomic_store_n(&a->settled, a->stream, __ATOMIC_RELAXED);
			__atomic_store_n(&a->switches, a->switches + 1, __ATOMIC_RELAXED);
			return;
		}
		a->stream = !a->stream; /* back to the settled way */
		a->warm = COPY_WARM_BURSTS;
		a->epochs = 0;
		/* A first win is checked by another probe after one settled epoch: a single
		 * epoch may have been lucky (the peer idle, a quiet moment of the host). */
		a->confirming = won && !a->confirming;
		if (!won && a->interval < COPY_PROBE_MAX)
			a->interval <<= 1;
		return;
	}
	/* The best settled epoch since the last probe: one that a preemption, an interrupt or
	 * a pause of the application made long must not make the other way look better. */
	if (a->epochs == 0 || cost < a->cost)
		a->cost = cost;
	if (++a->epochs >= (a->confirming ? 1u : a->interval)) {
		a->probing = true;
		a->stream = !a->stream;
		a->warm = COPY_WARM_BURSTS;
	}
}
