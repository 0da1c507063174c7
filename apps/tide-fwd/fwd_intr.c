/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --rx-mode interrupt: an lcore whose streams found nothing for FWD_IDLE_ROUNDS rounds
 * enables their Rx interrupts, checks each queue once more (packets that arrived before the
 * enable do not signal), and sleeps in poll() until one signals or 10 ms pass (so that a
 * stop request, a reconnection or a queue without an fd yet is seen). Then it disables
 * them again and goes back to polling, so the peer need not signal while traffic flows.
 * The lcore is offline while it sleeps (tide/lcore.h).
 * A stream whose driver has no Rx interrupt keeps the lcore polling.
 */
#include <errno.h>
#include <poll.h>

#include "fwd.h"

void fwd_rx_sleep(struct fwd_lcore *lc, struct tide_mbuf **pkts)
{
	const struct fwd_engine *eng = lc->ctx->engine;
	struct pollfd pfd[FWD_MAX_STREAMS];
	unsigned n = 0, got = 0;

	for (unsigned i = 0; i < lc->nstreams; i++) {
		struct tide_rxq *q = lc->streams[i].rxq;
		int fd = tide_rxq_intr_fd(q->port, q->qid);

		if (fd == -ENOTCONN)
			continue; /* link down: nothing can arrive until it is back */
		if (fd < 0 || tide_rxq_intr_enable(q->port, q->qid) < 0)
			goto out; /* this queue can only be polled */
		pfd[n].fd = fd;
		pfd[n].events = POLLIN;
		n++;
	}
	for (unsigned i = 0; i < lc->nstreams; i++) {
		const struct fwd_stream *s = &lc->streams[i];
		uint16_t k = tide_rx_burst(s->rxq, pkts, (uint16_t)lc->ctx->cfg->burst);

		if (k != 0) {
			eng->burst(lc, s, pkts, k);
			got += k;
		}
	}
	if (lc->ndirty != 0)
		fwd_tx_flush(lc);
	if (got == 0) {
		/* Offline while asleep: a control call in another thread (a port's stop, a
		 * grace period of its control plane) does not wait for the timeout. Online
		 * again before the interrupts are disabled: those calls touch the queues. */
		tide_thread_offline();
		poll(pfd, n, 10);
		tide_thread_online();
	}
out:
	for (unsigned i = 0; i < lc->nstreams; i++) {
		struct tide_rxq *q = lc->streams[i].rxq;

		tide_rxq_intr_disable(q->port, q->qid);
	}
}
