/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Preloaded into dpdk-testpmd by bench/e1000e/run: gives the PMD's burst functions (which
 * the packaged, stripped PMD does not name) two named entry points, bench_em_rx and
 * bench_em_tx, for callgrind's --toggle-collect, and counts the calls and the empty Rx
 * polls, printed at exit ("em_count: ..."), so that the runner can take the empty polls'
 * cost out of the counts. Installed when rte_eth_dev_start() returns, in the port's fast-path
 * table (rte_eth_fp_ops), which rte_eth_rx_burst() and rte_eth_tx_burst() read each call.
 * The collected cost is the PMD's burst function inclusive (its mempool calls too) plus the
 * few instructions of one indirect call and return per burst.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

#include <rte_ethdev.h>

static eth_rx_burst_t pmd_rx;
static eth_tx_burst_t pmd_tx;
static unsigned long long rx_calls, rx_empty, rx_pkts, tx_calls, tx_pkts;

/* Not a tail call (the asm after the call): callgrind must see this frame around the PMD's. */
__attribute__((noinline)) uint16_t bench_em_rx(void *q, struct rte_mbuf **p, uint16_t n)
{
	uint16_t k = pmd_rx(q, p, n);

	__asm__ volatile("" ::: "memory");
	return k;
}

__attribute__((noinline)) uint16_t bench_em_tx(void *q, struct rte_mbuf **p, uint16_t n)
{
	uint16_t k = pmd_tx(q, p, n);

	__asm__ volatile("" ::: "memory");
	return k;
}

static uint16_t count_rx(void *q, struct rte_mbuf **p, uint16_t n)
{
	uint16_t k = bench_em_rx(q, p, n);

	rx_calls++;
	rx_empty += k == 0;
	rx_pkts += k;
	return k;
}

static uint16_t count_tx(void *q, struct rte_mbuf **p, uint16_t n)
{
	uint16_t k = bench_em_tx(q, p, n);

	tx_calls++;
	tx_pkts += k;
	return k;
}

int rte_eth_dev_start(uint16_t port)
{
	static int (*start)(uint16_t);
	int rc;

	if (start == NULL)
		start = (int (*)(uint16_t))dlsym(RTLD_NEXT, "rte_eth_dev_start");
	if (start == NULL)
		return -ENOSYS;
	rc = start(port);
	if (rc == 0 && port == 0) {
		pmd_rx = rte_eth_fp_ops[port].rx_pkt_burst;
		pmd_tx = rte_eth_fp_ops[port].tx_pkt_burst;
		rte_eth_fp_ops[port].rx_pkt_burst = count_rx;
		rte_eth_fp_ops[port].tx_pkt_burst = count_tx;
	}
	return rc;
}

__attribute__((destructor)) static void report(void)
{
	Dl_info rx, tx;

	if (pmd_rx == NULL)
		return;
	/* Where the PMD's functions are, as offsets in their object (it has no symbols). */
	dladdr((void *)pmd_rx, &rx);
	dladdr((void *)pmd_tx, &tx);
	fprintf(stderr,
		"em_count: rx_calls=%llu rx_empty=%llu rx_pkts=%llu tx_calls=%llu tx_pkts=%llu "
		"rx_fn=%s+%#lx tx_fn=%s+%#lx\n",
		rx_calls, rx_empty, rx_pkts, tx_calls, tx_pkts, rx.dli_fname ? rx.dli_fname : "?",
		(unsigned long)((char *)pmd_rx - (char *)rx.dli_fbase),
		tx.dli_fname ? tx.dli_fname : "?",
		(unsigned long)((char *)pmd_tx - (char *)tx.dli_fbase));
}
