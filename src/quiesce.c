/* SPDX-License-Identifier: BSD-3-Clause */
/* The control thread's half of quiesce (see quiesce.h). */
#include <errno.h>
#include <linux/membarrier.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "qs.h"
#include "quiesce.h"

int quiesce_kind(void)
{
	/* Found once; control threads of several ports may ask at the same time and find
	 * the same answer, hence relaxed atomics and no lock. */
	static int kind_found = -1;
	int kind = __atomic_load_n(&kind_found, __ATOMIC_RELAXED);

	if (kind < 0) {
		if (syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0)
			kind = 1;
		else if (syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0) > 0 &&
			 syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0)
			kind = 2;
		else
			kind = 0;
		__atomic_store_n(&kind_found, kind, __ATOMIC_RELAXED);
	}
	return kind;
}

int quiesce_barrier(bool fence)
{
	int kind;

	if (fence) {
		/* The workers fence themselves (quiesce_enter); this is our half of the pair. */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		return 0;
	}
	kind = quiesce_kind();
	if (kind == 1 && syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
		return 0;
	/* The caller chose !fence because the kind is not 0: the global command worked at the
	 * probe (kind 2) or may serve when the private one failed (kind 1). */
	if (kind != 0 && syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0)
		return 0;
	return kind != 0 && errno > 0 ? -errno : -ENOSYS;
}

void quiesce_fallback(const char *who, int err)
{
	TIDE_LOG_WARN_(who, "membarrier() failed (%s): waiting for every thread to reach a burst call instead",
		       strerror(-err));
	qs_synchronize();
}

static void wait_idle(const uint32_t *busy)
{
	/* Acquire: pairs with quiesce_leave(); the burst's shared-memory accesses are over. */
	while (__atomic_load_n(busy, __ATOMIC_ACQUIRE))
		tide_pause();
}

void quiesce_take(const char *who, bool fence, const struct quiesce_slot *slot, unsigned n)
{
	int rc;

	for (unsigned i = 0; i < n; i++)
		__atomic_store_n(slot[i].live, 0, __ATOMIC_RELAXED);
	rc = quiesce_barrier(fence);
	if (rc < 0) /* busy proves nothing: wait for a grace period */
		quiesce_fallback(who, rc);
	for (unsigned i = 0; i < n; i++) {
		wait_idle(slot[i].busy);
		if (slot[i].fault != NULL)
			*slot[i].fault = NULL;
	}
}
