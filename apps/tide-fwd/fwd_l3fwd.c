/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * l3fwd: IPv4 routing. Longest-prefix match on the destination (DIR-24-8, lpm.h) over the
 * routes of --routes FILE or the demo table (10.<p>.0.0/16 -> port p); TTL decrement with
 * an incremental checksum update (RFC 1624); Ethernet rewrite for the egress port
 * (destination: its next-hop MAC 02:00:00:00:01:<port>, source: its own MAC).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fwd.h"
#include "l3fwd.h"
#include "lpm.h"
#include "pkt.h"
#include "routes.h"

enum fwd_drop l3fwd_check(const uint8_t *frame, unsigned seg_len, unsigned pkt_len)
{
	const uint8_t *ip = frame + ETH_HDR_LEN;
	unsigned hlen, tot;

	if (seg_len < ETH_HDR_LEN)
		return FWD_DROP_BAD_HEADER;
	if (pkt_rd16(frame + 12) != ETH_TYPE_IPV4)
		return FWD_DROP_NOT_IPV4;
	if (seg_len < ETH_HDR_LEN + IPV4_HDR_MIN || (ip[0] >> 4) != 4)
		return FWD_DROP_BAD_HEADER;
	hlen = (ip[0] & 0xfu) * 4u;
	tot = pkt_rd16(ip + 2);
	if (hlen < IPV4_HDR_MIN || ETH_HDR_LEN + hlen > seg_len || tot < hlen ||
	    ETH_HDR_LEN + tot > pkt_len)
		return FWD_DROP_BAD_HEADER;
	/* A header with a correct checksum sums to 0xffff (ones' complement zero). */
	if (pkt_csum_sum(ip, hlen) != 0xffff)
		return FWD_DROP_BAD_CHECKSUM;
	if (ip[IPV4_OFF_TTL] <= 1)
		return FWD_DROP_TTL_EXPIRED;
	return FWD_DROP_NR;
}

static void l3fwd_burst(struct fwd_lcore *lc, const struct fwd_stream *s, struct tide_mbuf **pkts,
			uint16_t n)
{
	const struct fwd_ctx *ctx = lc->ctx;
	const struct lpm *lpm = ctx->engine_data;

	for (uint16_t i = 0; i < n; i++) {
		struct tide_mbuf *m = pkts[i];
		uint8_t *eth = tide_mbuf_mtod(m, uint8_t *);
		uint8_t *ip = eth + ETH_HDR_LEN;
		enum fwd_drop why = l3fwd_check(eth, m->data_len, m->pkt_len);
		uint16_t hop, old, new_word;

		if (why == FWD_DROP_NR) {
			if (lpm_lookup(lpm, pkt_rd32(ip + IPV4_OFF_DST), &hop) < 0)
				why = FWD_DROP_NO_ROUTE;
			else if (hop == s->port)
				why = FWD_DROP_SAME_PORT;
		}
		if (why != FWD_DROP_NR) {
			fwd_drop(lc, s->port, why, m);
			continue;
		}
		/* TTL shares a 16-bit word with the protocol: update the checksum for that word. */
		old = pkt_rd16(ip + IPV4_OFF_TTL);
		new_word = (uint16_t)(old - 0x100);
		ip[IPV4_OFF_TTL]--;
		pkt_wr16(ip + IPV4_OFF_CSUM,
			 pkt_csum_update16(pkt_rd16(ip + IPV4_OFF_CSUM), old, new_word));
		memcpy(eth, ctx->nexthop_mac[hop], 6);
		memcpy(eth + 6, ctx->info[hop].mac, 6);
		fwd_tx_add(lc, hop, m);
	}
}

static int l3fwd_init(struct fwd_ctx *ctx, char *err, size_t errlen)
{
	struct route *routes = NULL;
	unsigned n = 0, long_routes = 0;
	struct lpm *lpm;
	int rc;

	if (ctx->cfg->routes != NULL) {
		char warn[256];

		rc = routes_load(ctx->cfg->routes, ctx->nports - 1, &routes, &n, err, errlen, warn,
				 sizeof(warn));
		if (rc == 0 && warn[0] != '\0')
			fprintf(stderr, "tide-fwd: warning: --routes: %s\n", warn);
	} else
		rc = routes_default(ctx->nports, &routes, &n);
	if (rc < 0) {
		if (ctx->cfg->routes == NULL) {
			snprintf(err, errlen, "default routes: %s", strerror(-rc));
			return rc;
		}
		/* A route file that is missing or wrong is a bad option (exit 2). */
		if (err != NULL && errlen > 10) {
			char why[512];

			snprintf(why, sizeof(why), "%s", err);
			snprintf(err, errlen, "--routes: %s", why);
		}
		return rc == -ENOMEM ? rc : -EINVAL;
	}
	if (n == 0) {
		snprintf(err, errlen, "--routes %s: no routes in the file (lines 'PREFIX/LEN PORT')",
			 ctx->cfg->routes);
		free(routes);
		return -EINVAL;
	}
	for (unsigned i = 0; i < n; i++)
		long_routes += routes[i].depth > 24;
	if (long_routes > LPM_TBL8_GROUPS_MAX)
		long_routes = LPM_TBL8_GROUPS_MAX;
	rc = lpm_create(n ? n : 1, long_routes, &lpm);
	if (rc < 0) {
		snprintf(err, errlen, "route table for %u routes: %s", n, strerror(-rc));
		free(routes);
		return rc;
	}
	for (unsigned i = 0; i < n && rc == 0; i++) {
		rc = lpm_add(lpm, routes[i].ip, routes[i].depth, routes[i].port);
		if (rc == -ENOSPC && routes[i].depth > 24)
			snprintf(err, errlen,
				 "route %u of %u (a /%u): routes longer than /24 lie in more than "
				 "%u distinct /24s, the limit of the LPM table (tbl8 groups)",
				 i + 1, n, routes[i].depth, LPM_TBL8_GROUPS_MAX);
		else if (rc < 0)
			snprintf(err, errlen, "route %u of %u: %s", i + 1, n, strerror(-rc));
	}
	free(routes);
	if (rc < 0) {
		lpm_free(lpm);
		return rc == -ENOSPC ? -EINVAL : rc; /* a table too big: a bad --routes (exit 2) */
	}
	ctx->engine_data = lpm;
	return 0;
}

static void l3fwd_fini(struct fwd_ctx *ctx)
{
	lpm_free(ctx->engine_data);
	ctx->engine_data = NULL;
}

const struct fwd_engine fwd_engine_l3fwd = {
    .name = "l3fwd",
    .help = "IPv4 LPM routing, TTL and checksum update, MAC rewrite (--routes)",
    .init = l3fwd_init,
    .fini = l3fwd_fini,
    .burst = l3fwd_burst,
};
