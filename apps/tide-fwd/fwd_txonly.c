/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * txonly: build and send IPv4/UDP packets of --txonly-size bytes over --flows flows on every
 * stream's port. Flow f goes to 198.19.<f / 256>.<f % 256> from 198.18.<port>.1; the checksum
 * of each packet is the template's, updated for the flow's address word (RFC 1624).
 * Per packet the generator writes the port's header template and stamps the flow's address
 * word and checksum from a table made at init (no arithmetic, no division per packet):
 * when the Tx path is bound by the generator (memif into a faster sink), its instructions
 * per packet are the rate.
 * --rate R: each port sends R packets per second, shared evenly by the streams on it; each
 * stream runs a token bucket on the TSC that holds at most one burst (no catch-up bursts
 * after a stall).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fwd.h"
#include "pkt.h"

#define TMPL_LEN (ETH_HDR_LEN + IPV4_HDR_MIN + 8) /* what each packet gets written */

/* What one flow's packets carry beyond the template, in network order. */
struct flow_stamp {
	uint8_t dst_lo[2]; /* the destination address's last word (the flow number) */
	uint8_t csum[2];   /* the IPv4 header checksum with that word */
};

struct txonly {
	unsigned size, flows;
	double per_tsc[TIDE_MAX_PORTS]; /* --rate: packets per TSC tick per stream of the port */
	uint8_t tmpl[TIDE_MAX_PORTS][TMPL_LEN];
	struct flow_stamp *stamp[TIDE_MAX_PORTS]; /* [flows] per port */
};

static void build_template(const struct fwd_ctx *ctx, unsigned port, uint8_t *t, unsigned size)
{
	uint8_t *ip = t + ETH_HDR_LEN, *udp = ip + IPV4_HDR_MIN;

	memset(t, 0, TMPL_LEN);
	memcpy(t, ctx->nexthop_mac[port], 6);
	memcpy(t + 6, ctx->info[port].mac, 6);
	pkt_wr16(t + 12, ETH_TYPE_IPV4);
	ip[0] = 0x45;
	pkt_wr16(ip + 2, (uint16_t)(size - ETH_HDR_LEN));
	ip[IPV4_OFF_TTL] = 64;
	ip[9] = 17; /* UDP */
	ip[12] = 198;
	ip[13] = 18;
	ip[14] = (uint8_t)port;
	ip[15] = 1;
	ip[16] = 198;
	ip[17] = 19; /* ip[18..19]: the flow, zero in the template */
	pkt_wr16(ip + IPV4_OFF_CSUM, pkt_ipv4_csum(ip, IPV4_HDR_MIN));
	pkt_wr16(udp, 1024);
	pkt_wr16(udp + 2, 1024);
	pkt_wr16(udp + 4, (uint16_t)(size - ETH_HDR_LEN - IPV4_HDR_MIN));
	/* UDP checksum 0: none (allowed for UDP over IPv4). */
}

static void txonly_burst(struct fwd_lcore *lc, const struct fwd_stream *s, struct tide_mbuf **pkts,
			 uint16_t n)
{
	const struct fwd_ctx *ctx = lc->ctx;
	const struct txonly *t = ctx->engine_data;
	const uint8_t *tmpl = t->tmpl[s->port];
	const struct flow_stamp *stamp = t->stamp[s->port];
	const uint16_t size = (uint16_t)t->size, port = s->port;
	const unsigned flows = t->flows;
	unsigned flow;

	if (t->per_tsc[s->port] > 0) {
		struct fwd_pace *pc = &lc->pace[s - lc->streams];
		uint64_t now = fwd_tsc();
		double c = pc->credit + (double)(now - pc->last) * t->per_tsc[s->port];

		pc->last = now;
		if (c > ctx->cfg->burst)
			c = ctx->cfg->burst;
		if (c < n)
			n = (uint16_t)c;
		pc->credit = c - n;
		if (n == 0)
			return;
	}
	if (tide_mbuf_alloc_bulk(ctx->pool, pkts, n) < 0) {
		/* Every buffer may be in flight, held by the Tx queue until it reclaims them,
		 * which it does only when sent to: reclaim what the device has completed, then
		 * try once more; otherwise again on the next round. */
		struct tide_txq *q = lc->txq[s->port];

		if (q == NULL || tide_txq_done_cleanup(q, 0) == 0 ||
		    tide_mbuf_alloc_bulk(ctx->pool, pkts, n) < 0)
			return;
	}
	/* The lcore's packet sequence number modulo flows: the flow of its next packet. */
	flow = lc->flow;
	for (uint16_t i = 0; i < n; i++) {
		struct tide_mbuf *m = pkts[i];
		/* Fresh from the pool: one empty segment whose data room txonly_init checked. */
		uint8_t *d = tide_mbuf_mtod(m, uint8_t *);

		m->data_len = size;
		m->pkt_len = size;
		m->port = port;
		/* Headers only: the payload is whatever the buffer last carried (zeros at
		 * first), as a traffic generator's is; a full copy would make large-packet
		 * rates measure this memcpy. */
		memcpy(d, tmpl, TMPL_LEN);
		memcpy(d + ETH_HDR_LEN + 18, stamp[flow].dst_lo, 2);
		memcpy(d + ETH_HDR_LEN + IPV4_OFF_CSUM, stamp[flow].csum, 2);
		if (++flow == flows)
			flow = 0;
	}
	lc->flow = flow;
	lc->seq += n;
	fwd_tx_add_bulk(lc, port, pkts, n);
}

static void txonly_fini(struct fwd_ctx *ctx)
{
	struct txonly *t = ctx->engine_data;

	if (t != NULL)
		for (unsigned p = 0; p < TIDE_MAX_PORTS; p++)
			free(t->stamp[p]);
	free(t);
	ctx->engine_data = NULL;
}

static int txonly_init(struct fwd_ctx *ctx, char *err, size_t errlen)
{
	const struct fwd_config *cfg = ctx->cfg;
	unsigned room = tide_pktpool_data_room(ctx->pool);
	struct txonly *t;

	if (cfg->txonly_size < FWD_TXONLY_MIN || cfg->txonly_size > room) {
		snprintf(err, errlen,
			 "--txonly-size %u: must be %u..%u (the buffers' data room; --mbuf-size "
			 "raises it)",
			 cfg->txonly_size, FWD_TXONLY_MIN, room);
		return -EINVAL;
	}
	if (cfg->flows == 0 || cfg->flows > 65536) {
		snprintf(err, errlen, "--flows %u: must be 1..65536", cfg->flows);
		return -EINVAL;
	}
	t = calloc(1, sizeof(*t));
	if (t == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	t->size = cfg->txonly_size;
	t->flows = cfg->flows;
	for (unsigned p = 0; p < ctx->nports; p++) {
		unsigned streams = 0;
		uint16_t csum;

		build_template(ctx, p, t->tmpl[p], t->size);
		t->stamp[p] = calloc(t->flows, sizeof(*t->stamp[p]));
		if (t->stamp[p] == NULL) {
			ctx->engine_data = t;
			txonly_fini(ctx);
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		csum = pkt_rd16(t->tmpl[p] + ETH_HDR_LEN + IPV4_OFF_CSUM);
		for (unsigned f = 0; f < t->flows; f++) {
			pkt_wr16(t->stamp[p][f].dst_lo, (uint16_t)f);
			pkt_wr16(t->stamp[p][f].csum, pkt_csum_update16(csum, 0, (uint16_t)f));
		}
		for (unsigned i = 0; i < ctx->nlcores; i++)
			for (unsigned k = 0; k < ctx->lcores[i].nstreams; k++)
				streams += ctx->lcores[i].streams[k].port == p;
		if (cfg->rate_pps > 0 && streams != 0)
			t->per_tsc[p] = cfg->rate_pps / streams / fwd_tsc_hz();
	}
	for (unsigned i = 0; i < ctx->nlcores; i++) {
		ctx->lcores[i].flow = 0;
		for (unsigned k = 0; k < ctx->lcores[i].nstreams; k++)
			ctx->lcores[i].pace[k] = (struct fwd_pace){.last = 0, .credit = 0};
	}
	ctx->engine_data = t;
	return 0;
}

const struct fwd_engine fwd_engine_txonly = {
    .name = "txonly",
    .help = "build and send IPv4/UDP packets (--txonly-size, --flows, --rate)",
    .flags = FWD_ENGINE_F_NO_RX,
    .init = txonly_init,
    .fini = txonly_fini,
    .burst = txonly_burst,
};
