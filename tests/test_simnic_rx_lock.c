/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * simnic inline, wire=cross: two threads send on two Tx queues of port 0, and both Tx steps
 * (run inside their bursts) store into port 1's one Rx queue. A NIC serialises its DMA
 * writes into a ring; here the steps take turns on the queue's device lock. The test forces
 * the interleaving instead of hoping for it: the page of the Rx buffer that the next packet
 * goes to is made read-only, so the first thread's step faults in the middle of its store
 * (it has taken the descriptor, not yet moved the head) and its SIGSEGV handler holds it
 * there. The second thread's step must then wait: it may not reach the same buffer (a
 * second fault on the page) nor finish its burst. Then the page is made writable again,
 * both steps finish, and port 1 receives both packets intact.
 *
 * No check depends on timing: the negative check ("nothing more happens for 200 ms while
 * the first step is held") cannot trip on a correct tide, which waits however long.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <tide/lcore.h>
#include <tide/port.h>

#include "testutil.h"
#include "../drivers/simnic/simnic.h"

#define RING 64
#define LEN 64
#define WAIT_MS 10000 /* a step that should happen at once: fail after this long */
#define NEG_MS 200    /* the negative check: nothing may happen while the store is held */

static struct tide_pool *pool_tx, *pool_rx;
static struct tide_port *ports[2];
static struct tide_mbuf *pkt[2];

static uintptr_t prot_page; /* the read-only page; 0: none */
static size_t page_size;
static unsigned faults;     /* stores held on it */
static int go;              /* release them */
static bool done[2];
static uint16_t sent[2];
static struct sigaction old_segv;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	uintptr_t pg = __atomic_load_n(&prot_page, __ATOMIC_ACQUIRE);

	(void)sig, (void)uc;
	if (pg == 0 || a < pg || a >= pg + page_size) {
		/* Not ours: the default action, when the access is retried. */
		sigaction(SIGSEGV, &old_segv, NULL);
		return;
	}
	__atomic_add_fetch(&faults, 1, __ATOMIC_SEQ_CST);
	/* The page is writable again before go is set: the store then goes through. */
	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		sched_yield();
}

static void *sender(void *arg)
{
	unsigned i = (unsigned)(uintptr_t)arg;

	tide_thread_register();
	sent[i] = tide_tx_burst(tide_port_txq(ports[0], (uint16_t)i), &pkt[i], 1);
	tide_pool_cache_flush(pool_tx);
	tide_thread_unregister();
	__atomic_store_n(&done[i], true, __ATOMIC_RELEASE);
	return NULL;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Wait (at most @ms) until @n stores are held or sender @i is done. */
static bool wait_fault_or_done(unsigned n, unsigned i, unsigned ms)
{
	uint64_t end = now_ms() + ms;

	while (now_ms() < end) {
		if (__atomic_load_n(&faults, __ATOMIC_SEQ_CST) >= n ||
		    __atomic_load_n(&done[i], __ATOMIC_ACQUIRE))
			return true;
		sched_yield();
	}
	return false;
}

static bool wait_done(unsigned i)
{
	uint64_t end = now_ms() + WAIT_MS;

	while (!__atomic_load_n(&done[i], __ATOMIC_ACQUIRE))
		if (now_ms() >= end)
			return false;
		else
			sched_yield();
	return true;
}

static void test_two_steps_one_rxq(void **state)
{
	struct tide_pktpool_opts po = {.sz = sizeof(po), .pool_flags = TIDE_POOL_F_NO_HUGE};
	struct sigaction sa;
	struct simnic_rxq *rq;
	struct tide_mbuf *rx[8];
	pthread_t th[2];
	bool second = false;
	char failure[200] = "";
	unsigned got = 0, seen = 0;
	uintptr_t addr;

	(void)state;
	page_size = (size_t)sysconf(_SC_PAGESIZE);
	assert_int_equal(tide_pktpool_create("rl_tx", 256, 0, 0, NULL, &pool_tx), 0);
	/* Port 1's Rx buffers on small pages, so one page can be made read-only. */
	assert_int_equal(tide_pktpool_create("rl_rx", 256, 0, 0, &po, &pool_rx), 0);
	assert_int_equal(tide_ports_open("simnic:ports=2,mode=inline,wire=cross,queues=2", ports, 2),
			 2);
	assert_int_equal(tide_port_configure(ports[0], 1, 2), 0);
	assert_int_equal(tide_rxq_setup(ports[0], 0, RING, pool_tx, NULL), 0);
	assert_int_equal(tide_txq_setup(ports[0], 0, RING, NULL), 0);
	assert_int_equal(tide_txq_setup(ports[0], 1, RING, NULL), 0);
	assert_int_equal(tide_port_configure(ports[1], 1, 1), 0);
	assert_int_equal(tide_rxq_setup(ports[1], 0, RING, pool_rx, NULL), 0);
	assert_int_equal(tide_txq_setup(ports[1], 0, RING, NULL), 0);
	assert_int_equal(tide_port_start(ports[0]), 0);
	assert_int_equal(tide_port_start(ports[1]), 0);
	for (unsigned i = 0; i < 2; i++) {
		pkt[i] = tide_mbuf_alloc(pool_tx);
		require_non_null(pkt[i]);
		memset(tide_mbuf_append(pkt[i], LEN), 0xa0 + (int)i, LEN);
	}

	/* The buffer of the descriptor port 1's device fills next. */
	rq = (struct simnic_rxq *)tide_port_rxq(ports[1], 0);
	addr = (uintptr_t)rq->ring[rq->hw.head & rq->mask].addr;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGSEGV, &sa, &old_segv), 0);
	__atomic_store_n(&prot_page, addr & ~(uintptr_t)(page_size - 1), __ATOMIC_RELEASE);
	assert_int_equal(mprotect((void *)prot_page, page_size, PROT_READ), 0);

	assert_int_equal(pthread_create(&th[0], NULL, sender, (void *)0), 0);
	if (!wait_fault_or_done(1, 0, WAIT_MS) || __atomic_load_n(&faults, __ATOMIC_SEQ_CST) != 1)
		snprintf(failure, sizeof(failure),
			 "the first Tx step never stored into port 1's Rx buffer (the case tests nothing)");
	else {
		assert_int_equal(pthread_create(&th[1], NULL, sender, (void *)1), 0);
		second = true;
		if (wait_fault_or_done(2, 1, NEG_MS))
			snprintf(failure, sizeof(failure), "%s",
				 __atomic_load_n(&faults, __ATOMIC_SEQ_CST) >= 2
					 ? "two Tx steps were storing into the same Rx descriptor at once"
					 : "a Tx step into an Rx queue finished while another one was inside its store");
	}
	assert_int_equal(mprotect((void *)prot_page, page_size, PROT_READ | PROT_WRITE), 0);
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	if (!wait_done(0))
		fail_msg("the first sender did not finish within %d ms of its store's release",
			 WAIT_MS);
	pthread_join(th[0], NULL);
	if (second) {
		if (!wait_done(1))
			fail_msg("the second sender did not finish within %d ms", WAIT_MS);
		pthread_join(th[1], NULL);
	}
	__atomic_store_n(&prot_page, 0, __ATOMIC_RELEASE);
	assert_int_equal(sigaction(SIGSEGV, &old_segv, NULL), 0);

	/* Both packets arrive, each intact, and none was missed. */
	for (int tries = 0; tries < 4 && got < 2; tries++) {
		uint16_t k = tide_rx_burst(tide_port_rxq(ports[1], 0), rx, 8);

		for (unsigned j = 0; j < k; j++) {
			const uint8_t *d = tide_mbuf_mtod(rx[j], const uint8_t *);
			unsigned which = d[0] - 0xa0u;
			bool same = rx[j]->pkt_len == LEN && which < 2;

			for (unsigned b = 0; same && b < LEN; b++)
				same = d[b] == d[0];
			if (same)
				seen |= 1u << which;
		}
		got += k;
		tide_mbuf_free_bulk(rx, k);
	}
	if (failure[0] == '\0' && (sent[0] != 1 || sent[1] != 1))
		snprintf(failure, sizeof(failure), "a sender's packet was not taken");
	if (failure[0] == '\0' && (got != 2 || seen != 3 || rq->hw.missed != 0))
		snprintf(failure, sizeof(failure),
			 "port 1 received %u packets (%s both intact), %llu missed", got,
			 seen == 3 ? "" : "not", (unsigned long long)rq->hw.missed);
	tide_thread_offline();
	tide_port_close(ports[0]);
	tide_port_close(ports[1]);
	tide_pool_cache_flush(pool_tx);
	tide_pool_cache_flush(pool_rx);
	assert_pool_full(pool_tx);
	assert_pool_full(pool_rx);
	tide_pool_free(pool_tx);
	tide_pool_free(pool_rx);
	if (failure[0])
		fail_msg("%s", failure);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_steps_one_rxq),
	};

	tide_thread_register();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
