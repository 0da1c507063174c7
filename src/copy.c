/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What copy.h's helpers may use of this CPU, found once when the library loads.
 */
#include <pthread.h>

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
