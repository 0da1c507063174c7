/* SPDX-License-Identifier: BSD-3-Clause */
/* Quiescent states: see qs.h. */
#include <sched.h>
#include <time.h>

#include "log.h"
#include "qs.h"

struct tide_qs_ tide_qs_ = {.token = 1};
uint64_t qs_synchronize_calls;

void tide_qs_report_(unsigned idx)
{
	struct tide_qs_thread_ *s = &tide_qs_.thread[idx];
	uint64_t was = s->seen;

	/* Release: every access of the bursts before this point happens before the writer's
	 * acquire load of seen (qs_passed) and so before what it frees. */
	__atomic_store_n(&s->seen, __atomic_load_n(&tide_qs_.token, __ATOMIC_ACQUIRE),
			 __ATOMIC_RELEASE);
	/* Coming online: the store of seen must be visible before this thread reads any queue
	 * state, or a writer scanning now could miss it (store-load; pairs with the fence in
	 * qs_start). */
	if (was == 0)
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

void tide_thread_offline(void)
{
	unsigned i = tide_thread_index_;

	if (i < TIDE_MAX_THREADS)
		/* Release: the bursts before this are over for any writer that reads 0. */
		__atomic_store_n(&tide_qs_.thread[i].seen, 0, __ATOMIC_RELEASE);
}

void tide_thread_online(void)
{
	unsigned i = tide_thread_index_;

	/* A quiescent point, as a burst call's: stores seen (with the fence of coming online)
	 * before the caller reads any queue state. */
	if (i < TIDE_MAX_THREADS)
		tide_qs_report_(i);
}

uint64_t qs_start(void)
{
	/* Release (part of the seq_cst RMW): pairs with the acquire load of the token in
	 * tide_qs_tick_() / tide_qs_report_(). */
	uint64_t e = __atomic_add_fetch(&tide_qs_.token, 1, __ATOMIC_SEQ_CST);

	/* Store-load against a thread coming online (tide_qs_report_). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return e;
}

static bool thread_passed(unsigned i, uint64_t e)
{
	/* Acquire: pairs with the release store in tide_qs_report_ / tide_thread_offline. */
	uint64_t s = __atomic_load_n(&tide_qs_.thread[i].seen, __ATOMIC_ACQUIRE);

	return s == 0 || s >= e;
}

bool qs_passed(uint64_t e)
{
	unsigned me = tide_thread_index_;

	for (unsigned i = 0; i < TIDE_MAX_THREADS; i++)
		if (i != me && !thread_passed(i, e))
			return false;
	return true;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void qs_synchronize(void)
{
	uint64_t e = qs_start(), warn_at = 0;
	unsigned me = tide_thread_index_;

	__atomic_add_fetch(&qs_synchronize_calls, 1, __ATOMIC_RELAXED);

	/* The caller is at a quiescent point itself. */
	if (me < TIDE_MAX_THREADS && __atomic_load_n(&tide_qs_.thread[me].seen, __ATOMIC_RELAXED))
		tide_qs_report_(me);
	for (unsigned i = 0; i < TIDE_MAX_THREADS; i++) {
		unsigned spins = 0;

		if (i == me)
			continue;
		while (!thread_passed(i, e)) {
			if (++spins < 64) {
				tide_pause();
				continue;
			}
			sched_yield();
			/* A second without the thread reaching a burst call: say who we wait for
			 * (once a second; the clock is read only while waiting that long). */
			if ((spins & 1023) != 0)
				continue;
			if (warn_at == 0) {
				warn_at = now_ms() + 1000;
			} else if (now_ms() >= warn_at) {
				TIDE_LOG_WARN_("lcore", "waiting for thread %u to reach a burst call (a thread that blocks should call tide_thread_offline() first)",
					       i);
				warn_at = now_ms() + 1000;
			}
		}
	}
}
