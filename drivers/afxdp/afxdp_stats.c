/* SPDX-License-Identifier: BSD-3-Clause */
/* AF_XDP driver: the kernel's statistics of the sockets (XDP_STATISTICS), kept across
 * stop/start, as port stats and xstats. Control thread. */
#include <linux/if_xdp.h>
#include <string.h>
#include <sys/socket.h>

#include "afxdp.h"

/* The kernel's counters of the open sockets, summed (AFXDP_XS_* order). */
void afxdp_xs_live(const struct afxdp_port *ap, uint64_t out[AFXDP_XS_N])
{
	memset(out, 0, AFXDP_XS_N * sizeof(out[0]));
	for (unsigned i = 0; i < ap->nb_rxq; i++) {
		struct xdp_statistics xs;
		socklen_t len = sizeof(xs);

		if (ap->sk[i].xsk == NULL || getsockopt(xsk_socket__fd(ap->sk[i].xsk), SOL_XDP,
							XDP_STATISTICS, &xs, &len) != 0)
			continue;
		out[AFXDP_XS_RX_DROPPED] += xs.rx_dropped;
		out[AFXDP_XS_RX_INVALID] += xs.rx_invalid_descs;
		out[AFXDP_XS_TX_INVALID] += xs.tx_invalid_descs;
		out[AFXDP_XS_RX_RING_FULL] += xs.rx_ring_full;
		out[AFXDP_XS_FILL_RING_EMPTY] += xs.rx_fill_ring_empty_descs;
		out[AFXDP_XS_TX_RING_EMPTY] += xs.tx_ring_empty_descs;
	}
}

/* The kernel's counters since open (or the last reset), the stopped sockets' included. */
static void port_xs(const struct afxdp_port *ap, uint64_t out[AFXDP_XS_N])
{
	afxdp_xs_live(ap, out);
	for (unsigned k = 0; k < AFXDP_XS_N; k++)
		out[k] += ap->xs_saved[k] - ap->xs_base[k];
}

void afxdp_stats_add(const struct tide_port *p, struct tide_port_stats *st)
{
	const struct afxdp_port *ap = p->priv;

	for (unsigned i = 0; i < ap->nb_txq; i++) {
		const struct afxdp_txq *q = (const struct afxdp_txq *)p->txq[i];

		if (q)
			st->oerrors += __atomic_load_n(&q->kick_errors, __ATOMIC_RELAXED);
	}
	uint64_t xs[AFXDP_XS_N];

	port_xs(ap, xs);
	/* Frames the kernel could not deliver: no fill frame posted, or the Rx ring full. */
	st->rx_missed += xs[AFXDP_XS_RX_DROPPED] + xs[AFXDP_XS_RX_RING_FULL];
}

void afxdp_stats_reset(struct tide_port *p)
{
	struct afxdp_port *ap = p->priv;

	for (unsigned i = 0; i < ap->nb_txq; i++) {
		struct afxdp_txq *q = (struct afxdp_txq *)p->txq[i];

		if (q) {
			tide_stat_zero(&q->kick_refused, 1);
			tide_stat_zero(&q->kick_errors, 1);
		}
	}

	memset(ap->xs_saved, 0, sizeof(ap->xs_saved));
	afxdp_xs_live(ap, ap->xs_base);
}

/* The driver's own counters after the kernel's, in afxdp_xstats(). */
enum { AFXDP_X_KICK_REFUSED = AFXDP_XS_N, AFXDP_X_N };

/* The kernel's XDP_STATISTICS for tide_xstats_*(), each summed over the port's sockets,
 * then the Tx kicks the kernel refused, summed over the Tx queues. */
unsigned afxdp_xstats(struct tide_port *p, const char **xnames, uint64_t *values, unsigned max)
{
	static const char *const n[AFXDP_X_N] = {
	    [AFXDP_XS_RX_DROPPED] = "rx_dropped",
	    [AFXDP_XS_RX_INVALID] = "rx_invalid_descs",
	    [AFXDP_XS_TX_INVALID] = "tx_invalid_descs",
	    [AFXDP_XS_RX_RING_FULL] = "rx_ring_full",
	    [AFXDP_XS_FILL_RING_EMPTY] = "rx_fill_ring_empty_descs",
	    [AFXDP_XS_TX_RING_EMPTY] = "tx_ring_empty_descs",
	    [AFXDP_X_KICK_REFUSED] = "tx_kick_refused",
	};
	const struct afxdp_port *ap = p->priv;
	uint64_t xs[AFXDP_X_N] = {0};

	port_xs(ap, xs);
	for (unsigned i = 0; i < ap->nb_txq; i++) {
		const struct afxdp_txq *q = (const struct afxdp_txq *)p->txq[i];

		if (q)
			xs[AFXDP_X_KICK_REFUSED] +=
				__atomic_load_n(&q->kick_refused, __ATOMIC_RELAXED);
	}
	return tide_xstats_put(n, xs, AFXDP_X_N, xnames, values, max);
}

/* The sockets are about to close: keep what they counted. */
void afxdp_xs_save(struct afxdp_port *ap)
{
	uint64_t live[AFXDP_XS_N];

	afxdp_xs_live(ap, live);
	for (unsigned k = 0; k < AFXDP_XS_N; k++) {
		ap->xs_saved[k] += live[k] - ap->xs_base[k];
		ap->xs_base[k] = 0;
	}
}
