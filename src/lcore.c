/* SPDX-License-Identifier: BSD-3-Clause */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include <tide/lcore.h>

#include "log.h"

__thread unsigned tide_thread_index_ __attribute__((tls_model("initial-exec"))) = TIDE_THREAD_NONE;

/* One bit per thread index; set while some thread holds it. */
static uint64_t index_used;

static_assert(TIDE_MAX_THREADS <= 64, "index_used is one 64-bit word");

int tide_thread_register(void)
{
	uint64_t used, want;
	unsigned i;

	if (tide_thread_index_ != TIDE_THREAD_NONE)
		return (int)tide_thread_index_;
	used = __atomic_load_n(&index_used, __ATOMIC_RELAXED);
	do {
		if (used == UINT64_MAX)
			return -ENOSPC;
		i = (unsigned)__builtin_ctzll(~used);
		want = used | (1ull << i);
	} while (!__atomic_compare_exchange_n(&index_used, &used, want, 0, __ATOMIC_ACQ_REL,
					      __ATOMIC_RELAXED));
	tide_thread_index_ = i;
	return (int)i;
}

void tide_thread_unregister(void)
{
	unsigned i = tide_thread_index_;

	if (i == TIDE_THREAD_NONE)
		return;
	tide_thread_offline(); /* no more bursts from this thread (quiescent states, qs.h) */
	tide_thread_index_ = TIDE_THREAD_NONE;
	__atomic_fetch_and(&index_used, ~(1ull << i), __ATOMIC_ACQ_REL);
}

struct tide_lcore {
	pthread_t thread;
	tide_lcore_fn fn;
	void *arg;
	int ret;
};

static void *lcore_main(void *p)
{
	struct tide_lcore *lc = p;

	if (tide_thread_register() < 0) {
		lc->ret = -ENOSPC;
		return NULL;
	}
	lc->ret = lc->fn(lc->arg);
	tide_thread_unregister();
	return NULL;
}

int tide_lcore_count(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return 1;
	return CPU_COUNT(&set);
}

int tide_lcore_launch(int cpu, tide_lcore_fn fn, void *arg, struct tide_lcore **out)
{
	struct tide_lcore *lc;
	pthread_attr_t attr;
	cpu_set_t allowed, set;
	int rc;

	if (fn == NULL || out == NULL)
		return -EINVAL;
	if (cpu >= 0) {
		if (cpu >= CPU_SETSIZE || sched_getaffinity(0, sizeof(allowed), &allowed) != 0 ||
		    !CPU_ISSET(cpu, &allowed)) {
			TIDE_LOG_ERR_("lcore", "cpu %d is not available to this process", cpu);
			return -EINVAL;
		}
	}
	lc = calloc(1, sizeof(*lc));
	if (lc == NULL)
		return -ENOMEM;
	lc->fn = fn;
	lc->arg = arg;
	pthread_attr_init(&attr);
	if (cpu >= 0) {
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	}
	rc = pthread_create(&lc->thread, &attr, lcore_main, lc);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		free(lc);
		return -rc;
	}
	*out = lc;
	return 0;
}

int tide_lcore_join(struct tide_lcore *lc, int *ret)
{
	int rc = pthread_join(lc->thread, NULL);

	if (rc != 0)
		return -rc;
	if (ret)
		*ret = lc->ret;
	free(lc);
	return 0;
}
