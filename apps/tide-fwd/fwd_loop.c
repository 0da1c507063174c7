/* SPDX-License-Identifier: BSD-3-Clause */
/* The lcore loop of tide-fwd, its Tx buffers, and the TSC clock used for cycle counts. */
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define FWD_HAVE_TSC 1
#endif

#include "fwd.h"

static const char *const drop_names[FWD_DROP_NR] = {
    [FWD_DROP_NOT_IPV4] = "not_ipv4",	      [FWD_DROP_BAD_HEADER] = "bad_header",
    [FWD_DROP_BAD_CHECKSUM] = "bad_checksum", [FWD_DROP_TTL_EXPIRED] = "ttl_expired",
    [FWD_DROP_NO_ROUTE] = "no_route",	      [FWD_DROP_SAME_PORT] = "same_port",
    [FWD_DROP_TX_FULL] = "tx_full",
};

const char *fwd_drop_name(enum fwd_drop d)
{
	return (unsigned)d < FWD_DROP_NR ? drop_names[d] : "?";
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t fwd_tsc(void)
{
#ifdef FWD_HAVE_TSC
	return __rdtsc();
#else
	return mono_ns();
#endif
}

/*
 * Calibrated once against CLOCK_MONOTONIC over 50 ms; the first call (made by the main
 * thread before the lcores start) pays for it. Invariant TSC assumed, as on any x86 of the
 * last decade.
 */
double fwd_tsc_hz(void)
{
	static double hz;

	if (hz == 0) {
#ifdef FWD_HAVE_TSC
		uint64_t n0 = mono_ns(), t0 = fwd_tsc(), n1, t1;
		struct timespec d = {.tv_nsec = 50 * 1000 * 1000};

		nanosleep(&d, NULL);
		n1 = mono_ns();
		t1 = fwd_tsc();
		hz = (double)(t1 - t0) * 1e9 / (double)(n1 - n0);
#else
		hz = 1e9;
#endif
	}
	return hz;
}

void fwd_tx_flush(struct fwd_lcore *lc)
{
	for (unsigned i = 0; i < lc->ndirty; i++) {
		uint16_t port = lc->dirty[i];
		struct fwd_txbuf *b = &lc->txb[port];
		uint16_t k = tide_tx_burst(lc->txq[port], b->pkts, b->n);

		/* Packets and bytes sent are the port's own counters (tide_port_stats_get);
		 * only what the queue refused is this program's to count. */
		if (k < b->n) {
			tide_mbuf_free_bulk(b->pkts + k, (unsigned)(b->n - k));
			fwd_stat_add(&lc->ctr[port].drops[FWD_DROP_TX_FULL], (uint64_t)(b->n - k));
		}
		b->n = 0;
	}
	lc->ndirty = 0;
}

int fwd_lcore_main(void *arg)
{
	struct fwd_lcore *lc = arg;
	struct fwd_ctx *ctx = lc->ctx;
	const struct fwd_engine *eng = ctx->engine;
	const bool no_rx = eng->flags & FWD_ENGINE_F_NO_RX;
	const uint16_t burst = (uint16_t)ctx->cfg->burst;
	struct tide_mbuf *pkts[FWD_BURST_MAX];
	uint64_t t0 = fwd_tsc(), t1;
	const bool intr = ctx->cfg->rx_intr && !no_rx;
	unsigned idle = 0, got = 0;

	while (!__atomic_load_n(&ctx->stop, __ATOMIC_RELAXED)) {
		if (intr) {
			idle = got ? 0 : idle + 1;
			got = 0;
			if (idle >= FWD_IDLE_ROUNDS) {
				fwd_rx_sleep(lc, pkts);
				idle = 0;
			}
		}
		if (lc->nstreams == 0)
			tide_pause(); /* an lcore left without streams by the mapping */
		for (unsigned i = 0; i < lc->nstreams; i++) {
			const struct fwd_stream *s = &lc->streams[i];
			struct fwd_ctr *c = &lc->ctr[s->port];

			if (no_rx) {
				eng->burst(lc, s, pkts, 0);
			} else {
				uint16_t n = tide_rx_burst(s->rxq, pkts, burst);

				if (n != 0)
					eng->burst(lc, s, pkts, n);
				got |= n;
			}
			if (lc->ndirty != 0)
				fwd_tx_flush(lc);
			t1 = fwd_tsc();
			fwd_stat_add(&c->cycles, t1 - t0);
			t0 = t1;
		}
	}
	/* Leave nothing in this thread's cache: the pool must look whole once ports stop. */
	tide_pool_cache_flush(ctx->pool);
	return 0;
}
