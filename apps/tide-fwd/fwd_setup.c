/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Building and tearing down what a tide-fwd configuration describes: ports, the lcore/queue
 * mapping, the packet pool, the queues and the engine. Every error path leaves nothing
 * behind: fwd_setup undoes its own work, fwd_stop joins whatever was launched, and
 * fwd_teardown closes whatever was opened.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fwd.h"
#include "stats.h"

static int __attribute__((format(printf, 4, 5)))
fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL && errlen != 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

void fwd_config_init(struct fwd_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->cpus[0] = 0;
	cfg->nlcores = 1;
	cfg->engine = "io";
	cfg->burst = FWD_BURST_DEF;
	cfg->cache = TIDE_POOL_CACHE_DEFAULT;
	/* The library defaults: rs=bucket, txfree=auto, rs_thresh 32, free_thresh the port's
	 * (0: 32, or nb_desc - rs_thresh on a port that reclaims eagerly). */
	cfg->txconf.sz = sizeof(cfg->txconf);
	cfg->txconf.rs = TIDE_RS_BUCKET;
	cfg->txconf.txfree = TIDE_TXFREE_AUTO;
	cfg->txconf.rs_thresh = 32;
	cfg->txconf.free_thresh = 0;
	cfg->offloads = true;
	cfg->txonly_size = FWD_TXONLY_DEF;
	cfg->flows = FWD_FLOWS_DEF;
	cfg->stats_period = 1.0;
}

const struct fwd_engine *const fwd_engines[] = {
    &fwd_engine_io,
    &fwd_engine_mac,
    &fwd_engine_macswap,
    &fwd_engine_l3fwd,
    &fwd_engine_txonly,
    &fwd_engine_rxonly,
    NULL,
};

const struct fwd_engine *fwd_engine_find(const char *name)
{
	for (unsigned i = 0; fwd_engines[i] != NULL; i++)
		if (strcmp(fwd_engines[i]->name, name) == 0)
			return fwd_engines[i];
	return NULL;
}

static int open_ports(struct fwd_ctx *ctx, char *err, size_t errlen)
{
	const struct fwd_config *cfg = ctx->cfg;

	if (cfg->nspecs == 0)
		return fail(err, errlen, -EINVAL, "no --port given");
	for (unsigned i = 0; i < cfg->nspecs; i++) {
		int n = tide_ports_open(cfg->specs[i], ctx->ports + ctx->nports,
					TIDE_MAX_PORTS - ctx->nports);

		/* A spec that names a missing file, a busy socket or a device that is not
		 * there is a bad option (exit 2) like a bad key; only running out of memory is
		 * a runtime failure. */
		if (n < 0)
			return fail(err, errlen, n == -ENOMEM ? n : -EINVAL,
				    "--port %s: cannot open: %s", cfg->specs[i], strerror(-n));
		ctx->nports += (unsigned)n;
	}
	for (unsigned p = 0; p < ctx->nports; p++) {
		ctx->info[p].sz = sizeof(ctx->info[p]);
		tide_port_info_get(ctx->ports[p], &ctx->info[p]);
		ctx->pair[p] = (uint16_t)((p ^ 1u) < ctx->nports ? p ^ 1u : p);
		ctx->nexthop_mac[p][0] = 0x02;
		ctx->nexthop_mac[p][4] = 0x01;
		ctx->nexthop_mac[p][5] = (uint8_t)p;
	}
	return 0;
}

/*
 * --rxd/--txd, or else FWD_DESC_DEF raised to the deepest any port's driver prefers
 * (afxdp: DPDK's 2048, which its kernel rings need at speed) and lowered to the least any
 * port's device takes (a virtio-net PCI function: its queue size, 256 in QEMU). One depth
 * for every port keeps the summary and the pool sizing simple; a driver that cannot take
 * a depth given with --rxd/--txd says so at queue setup.
 */
static void default_depths(struct fwd_ctx *ctx)
{
	const struct fwd_config *cfg = ctx->cfg;

	ctx->rxd = cfg->rxd ? cfg->rxd : FWD_DESC_DEF;
	ctx->txd = cfg->txd ? cfg->txd : FWD_DESC_DEF;
	for (unsigned p = 0; p < ctx->nports; p++) {
		if (!cfg->rxd && ctx->info[p].rx_desc_pref > ctx->rxd)
			ctx->rxd = ctx->info[p].rx_desc_pref;
		if (!cfg->txd && ctx->info[p].tx_desc_pref > ctx->txd)
			ctx->txd = ctx->info[p].tx_desc_pref;
	}
	for (unsigned p = 0; p < ctx->nports; p++) {
		if (!cfg->rxd && ctx->info[p].max_desc < ctx->rxd)
			ctx->rxd = ctx->info[p].max_desc;
		if (!cfg->txd && ctx->info[p].max_desc < ctx->txd)
			ctx->txd = ctx->info[p].max_desc;
	}
}

static int add_stream(struct fwd_ctx *ctx, unsigned lcore, unsigned port, unsigned queue)
{
	struct fwd_lcore *lc = &ctx->lcores[lcore];

	lc->streams[lc->nstreams].port = (uint16_t)port;
	lc->streams[lc->nstreams].queue = (uint16_t)queue;
	lc->nstreams++;
	return 0;
}

/* Decide the Rx queue count of every port and which lcore polls each queue. */
static int map_streams(struct fwd_ctx *ctx, char *err, size_t errlen)
{
	const struct fwd_config *cfg = ctx->cfg;
	bool seen[TIDE_MAX_PORTS][TIDE_MAX_QUEUES];
	const bool no_rx = ctx->engine->flags & FWD_ENGINE_F_NO_RX;
	unsigned next = 0;

	ctx->nb_txq = ctx->nlcores;
	for (unsigned p = 0; p < ctx->nports; p++) {
		/* A port without Tx (a pcap port with rx= only) gets no Tx queues; what is
		 * routed to it is dropped and counted (no_txq). */
		ctx->port_txq[p] = ctx->info[p].max_txq == 0 ? 0 : ctx->nb_txq;
		if (ctx->info[p].max_txq != 0 && ctx->info[p].max_txq < ctx->nb_txq)
			return fail(err, errlen, -EINVAL,
				    "port %u (%s): %u lcores need %u Tx queues but the port has at "
				    "most %u (use fewer lcores or a port with more queues)",
				    p, ctx->info[p].name, ctx->nlcores, ctx->nb_txq,
				    ctx->info[p].max_txq);
	}
	if (cfg->nmap == 0) {
		for (unsigned p = 0; p < ctx->nports; p++) {
			unsigned max = ctx->info[p].max_rxq;
			unsigned n = cfg->nb_rxq ? cfg->nb_rxq : ctx->nlcores;

			if (max == 0) {
				/* No Rx (a pcap port with tx= only): never polled; txonly
				 * still sends on it, one stream per lcore. */
				ctx->nb_rxq[p] = 0;
				for (unsigned l = 0; no_rx && l < ctx->nlcores; l++)
					add_stream(ctx, l, p, 0);
				continue;
			}
			if (no_rx && ctx->port_txq[p] == 0) {
				ctx->nb_rxq[p] = 0; /* txonly has nothing to send on it */
				continue;
			}
			if (cfg->nb_rxq == 0 && n > max)
				n = max;
			if (n > max)
				return fail(err, errlen, -EINVAL,
					    "--rxq %u: port %u (%s) has at most %u Rx queues", n, p,
					    ctx->info[p].name, max);
			ctx->nb_rxq[p] = n;
			for (unsigned q = 0; q < n; q++)
				add_stream(ctx, next++ % ctx->nlcores, p, q);
		}
		return 0;
	}
	memset(seen, 0, sizeof(seen));
	for (unsigned p = 0; p < ctx->nports; p++)
		ctx->nb_rxq[p] = 0;
	for (unsigned i = 0; i < cfg->nmap; i++) {
		const struct fwd_map_entry *e = &cfg->map[i];

		if (e->lcore >= ctx->nlcores)
			return fail(err, errlen, -EINVAL, "--map: lcore #%u does not exist",
				    e->lcore);
		if (e->port >= ctx->nports)
			return fail(err, errlen, -EINVAL,
				    "--map: port %u does not exist (%u ports open)", e->port,
				    ctx->nports);
		if (ctx->info[e->port].max_rxq == 0)
			return fail(err, errlen, -EINVAL,
				    "--map: port %u (%s) has no Rx (a pcap port without rx=)",
				    e->port, ctx->info[e->port].name);
		if (e->queue >= ctx->info[e->port].max_rxq)
			return fail(err, errlen, -EINVAL,
				    "--map: port %u (%s) has no queue %u (at most %u)", e->port,
				    ctx->info[e->port].name, e->queue, ctx->info[e->port].max_rxq);
		if (seen[e->port][e->queue])
			return fail(err, errlen, -EINVAL, "--map: port %u queue %u is mapped twice",
				    e->port, e->queue);
		seen[e->port][e->queue] = true;
		if (ctx->nb_rxq[e->port] < e->queue + 1)
			ctx->nb_rxq[e->port] = e->queue + 1;
		add_stream(ctx, e->lcore, e->port, e->queue);
	}
	for (unsigned p = 0; p < ctx->nports; p++) {
		if (ctx->nb_rxq[p] == 0 && ctx->info[p].max_rxq == 0)
			continue; /* a port without Rx */
		if (ctx->nb_rxq[p] == 0) {
			if (!no_rx)
				return fail(err, errlen, -EINVAL,
					    "--map: port %u (%s) is not polled by any lcore", p,
					    ctx->info[p].name);
			ctx->nb_rxq[p] = 1; /* txonly: an Rx queue the port needs, never polled */
		}
		for (unsigned q = 0; q < ctx->nb_rxq[p] && !no_rx; q++)
			if (!seen[p][q])
				return fail(err, errlen, -EINVAL,
					    "--map: port %u queue %u is not polled by any lcore", p,
					    q);
	}
	return 0;
}

/*
 * The pool is always memfd-backed (shareable): a memif client in zero-copy mode exposes it to
 * its peer as a region. AF_XDP receives into the pool's memory itself (the pool is the UMEM):
 * its buffers must be 2 KiB frames with the data at frame + 256. That layout suits every
 * driver, but it trims the data room to 1792 bytes, so it is used only when an afxdp port is
 * open.
 */
static const struct tide_pktpool_opts *pool_layout(const struct fwd_config *cfg,
						    unsigned *data_room, char *err, size_t errlen)
{
	static const struct tide_pktpool_opts afxdp = {
		.sz = sizeof(afxdp),
		.pool_flags = TIDE_POOL_F_SHARED,
		.headroom = 192,
		.elt_pow2 = 1,
	};

	static const struct tide_pktpool_opts shared = {
		.sz = sizeof(shared),
		.pool_flags = TIDE_POOL_F_SHARED,
	};

	*data_room = cfg->mbuf_size; /* 0: the default */
	for (unsigned i = 0; i < cfg->nspecs; i++)
		if (strncmp(cfg->specs[i], "afxdp:", 6) == 0) {
			if (cfg->mbuf_size != 0 && cfg->mbuf_size != 2048 - 64 - 192) {
				fail(err, errlen, 0,
				     "--mbuf-size %u: an afxdp port needs 2 KiB frames, whose data "
				     "room is %u bytes",
				     cfg->mbuf_size, 2048 - 64 - 192);
				return NULL;
			}
			*data_room = 2048 - 64 - 192;
			return &afxdp;
		}
	return &shared;
}

/* Room for every Rx and Tx ring, every lcore's cache and bursts in hand, plus a margin. */

static unsigned pool_size(const struct fwd_ctx *ctx)
{
	const struct fwd_config *cfg = ctx->cfg;
	uint64_t n = 1024;

	for (unsigned p = 0; p < ctx->nports; p++)
		n += (uint64_t)ctx->nb_rxq[p] * ctx->rxd + (uint64_t)ctx->port_txq[p] * ctx->txd;
	n += (uint64_t)ctx->nlcores * (cfg->cache + 2u * cfg->burst);
	return n > (1u << 24) ? 1u << 24 : (unsigned)n;
}

/* The least --pool that can forward at all: every Rx ring filled, and a burst in the hand
 * of each lcore. Below it Rx finds the pool empty forever. */
static uint64_t pool_min(const struct fwd_ctx *ctx)
{
	uint64_t n = (uint64_t)ctx->nlcores * ctx->cfg->burst;

	for (unsigned p = 0; p < ctx->nports; p++)
		n += (uint64_t)ctx->nb_rxq[p] * ctx->rxd;
	return n;
}

static int setup_queues(struct fwd_ctx *ctx, char *err, size_t errlen)
{
	const struct fwd_config *cfg = ctx->cfg;
	int rc;

	for (unsigned p = 0; p < ctx->nports; p++) {
		struct tide_port *port = ctx->ports[p];

		if (cfg->mtu) {
			rc = tide_port_mtu_set(port, cfg->mtu);
			if (rc < 0)
				return fail(err, errlen, rc == -ENOMEM ? rc : -EINVAL,
					    "port %u (%s): --mtu %u: %s (the port takes %u..%u%s)", p,
					    ctx->info[p].name, cfg->mtu, strerror(-rc),
					    ctx->info[p].min_mtu, ctx->info[p].max_mtu,
					    rc == -ENOTSUP ? ", but its driver cannot change it" : "");
		}
		rc = tide_port_configure(port, ctx->nb_rxq[p], ctx->port_txq[p]);
		if (rc < 0)
			return fail(err, errlen, rc,
				    "port %u (%s): configure %u Rx / %u Tx queues: %s", p,
				    ctx->info[p].name, ctx->nb_rxq[p], ctx->port_txq[p],
				    strerror(-rc));
		/* Offloads: what the port offers and forwarding uses (fwd_ol.c). */
		ctx->rx_ol[p] = ctx->nb_rxq[p] ? fwd_rx_offloads(ctx, p) : 0;
		ctx->tx_ol[p] = ctx->port_txq[p] ? fwd_tx_offloads(ctx, p) : 0;
		ctx->sw_ol |= ctx->rx_ol[p] != 0;
		for (unsigned q = 0; q < ctx->nb_rxq[p]; q++) {
			struct tide_rxq_conf rc_conf = {.sz = sizeof(rc_conf), .offloads = ctx->rx_ol[p]};

			rc = tide_rxq_setup(port, q, ctx->rxd, ctx->pool, &rc_conf);
			if (rc < 0)
				return fail(err, errlen, rc,
					    "port %u (%s): Rx queue %u (--rxd %u): %s", p,
					    ctx->info[p].name, q, ctx->rxd, strerror(-rc));
		}
		for (unsigned q = 0; q < ctx->port_txq[p]; q++) {
			struct tide_txq_conf tc = cfg->txconf;
			char ft[16];

			tc.offloads = ctx->tx_ol[p];
			rc = tide_txq_setup(port, q, ctx->txd, &tc);
			fwd_cli_format_free_thresh(cfg, ft, sizeof(ft));
			if (rc < 0)
				return fail(err, errlen, rc,
					    "port %u (%s): Tx queue %u (--txd %u --rs %s "
					    "--rs-thresh %u --free-thresh %s --txfree %s): %s",
					    p, ctx->info[p].name, q, ctx->txd,
					    tide_rs_name(cfg->txconf.rs), cfg->txconf.rs_thresh, ft,
					    tide_txfree_name(cfg->txconf.txfree), strerror(-rc));
		}
		tide_port_info_get(port, &ctx->info[p]);
	}
	return 0;
}

static int setup_lcores(struct fwd_ctx *ctx)
{
	for (unsigned i = 0; i < ctx->nlcores; i++) {
		struct fwd_lcore *lc = &ctx->lcores[i];

		for (unsigned p = 0; p < ctx->nports; p++) {
			lc->txq[p] = ctx->port_txq[p] ? tide_port_txq(ctx->ports[p], i) : NULL;
			lc->txb[p].pkts = calloc(FWD_BURST_MAX, sizeof(struct tide_mbuf *));
			if (lc->txb[p].pkts == NULL)
				return -ENOMEM;
		}
		for (unsigned s = 0; s < lc->nstreams; s++)
			lc->streams[s].rxq = ctx->nb_rxq[lc->streams[s].port] == 0
						 ? NULL
						 : tide_port_rxq(ctx->ports[lc->streams[s].port],
								 lc->streams[s].queue);
	}
	return 0;
}

int fwd_setup(struct fwd_ctx *ctx, const struct fwd_config *cfg, char *err, size_t errlen)
{
	const struct tide_pktpool_opts *layout;
	unsigned data_room;
	int rc;

	memset(ctx, 0, sizeof(*ctx));
	ctx->cfg = cfg;
	ctx->engine = fwd_engine_find(cfg->engine);
	if (ctx->engine == NULL)
		return fail(err, errlen, -EINVAL, "--fwd %s: unknown engine", cfg->engine);
	if (cfg->nlcores == 0 || cfg->nlcores > FWD_MAX_LCORES)
		return fail(err, errlen, -EINVAL, "--lcores: 1..%u lcores", FWD_MAX_LCORES);
	ctx->nlcores = cfg->nlcores;
	ctx->lcores = calloc(ctx->nlcores, sizeof(*ctx->lcores));
	if (ctx->lcores == NULL)
		return fail(err, errlen, -ENOMEM, "out of memory");
	for (unsigned i = 0; i < ctx->nlcores; i++) {
		ctx->lcores[i].ctx = ctx;
		ctx->lcores[i].idx = i;
		ctx->lcores[i].cpu = cfg->cpus[i];
	}
	rc = open_ports(ctx, err, errlen);
	if (rc == 0) {
		default_depths(ctx);
		rc = map_streams(ctx, err, errlen);
	}
	if (rc < 0)
		goto out;
	if (cfg->pool_n != 0 && cfg->pool_n < pool_min(ctx)) {
		rc = fail(err, errlen, -EINVAL,
			  "--pool %u: too few buffers to forward: the Rx rings hold %llu (--rxd) "
			  "and each lcore needs a burst (%u); at least %llu (default %u)",
			  cfg->pool_n, (unsigned long long)(pool_min(ctx) - ctx->nlcores * cfg->burst),
			  cfg->burst, (unsigned long long)pool_min(ctx), pool_size(ctx));
		goto out;
	}
	ctx->pool_n = cfg->pool_n ? cfg->pool_n : pool_size(ctx);
	layout = pool_layout(cfg, &data_room, err, errlen);
	if (layout == NULL) {
		rc = -EINVAL;
		goto out;
	}
	rc = tide_pktpool_create("tide-fwd", ctx->pool_n, cfg->cache, data_room, layout, &ctx->pool);
	if (rc < 0) {
		rc = fail(err, errlen, rc, "packet pool of %u buffers, cache %u%s: %s", ctx->pool_n,
			  cfg->cache, cfg->mbuf_size ? ", --mbuf-size" : "", strerror(-rc));
		goto out;
	}
	rc = setup_queues(ctx, err, errlen);
	if (rc < 0)
		goto out;
	rc = setup_lcores(ctx);
	if (rc < 0) {
		rc = fail(err, errlen, rc, "out of memory");
		goto out;
	}
	if (ctx->engine->init != NULL) {
		rc = ctx->engine->init(ctx, err, errlen);
		if (rc < 0)
			goto out;
	}
	ctx->engine_ready = true;
	return 0;
out:
	fwd_teardown(ctx);
	return rc;
}

int fwd_start(struct fwd_ctx *ctx, char *err, size_t errlen)
{
	int rc;

	__atomic_store_n(&ctx->stop, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&ctx->budget, (int64_t)(ctx->cfg->packets > INT64_MAX / 2
						     ? INT64_MAX / 2
						     : ctx->cfg->packets),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&ctx->budget_done, 0, __ATOMIC_RELAXED);
	fwd_tsc_hz(); /* calibrate before any lcore runs */
	ctx->ports_started = true;
	for (unsigned p = 0; p < ctx->nports; p++) {
		rc = tide_port_start(ctx->ports[p]);
		if (rc < 0) {
			fwd_stop(ctx);
			return fail(err, errlen, rc, "port %u (%s): start: %s", p,
				    ctx->info[p].name, strerror(-rc));
		}
	}
	/* The time forwarding starts: after the ports' start (not part of any rate), before
	 * the first lcore can move a packet. */
	ctx->t_launch = fwd_now();
	for (unsigned i = 0; i < ctx->nlcores; i++) {
		struct fwd_lcore *lc = &ctx->lcores[i];

		rc = tide_lcore_launch(lc->cpu, fwd_lcore_main, lc, &lc->thread);
		if (rc < 0) {
			fwd_stop(ctx);
			return fail(err, errlen, rc == -EINVAL ? -EINVAL : rc,
				    "lcore %d: cannot launch: %s", lc->cpu, strerror(-rc));
		}
		lc->launched = true;
	}
	return 0;
}

void fwd_stop(struct fwd_ctx *ctx)
{
	/* The lcores poll the flag with relaxed loads; the joins below order everything else. */
	__atomic_store_n(&ctx->stop, 1, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < ctx->nlcores && ctx->lcores != NULL; i++) {
		struct fwd_lcore *lc = &ctx->lcores[i];

		if (lc->launched) {
			tide_lcore_join(lc->thread, NULL);
			lc->launched = false;
		}
	}
	if (ctx->ports_started) {
		/* Every lcore has ended: nothing moves from here on; the ports' shutdown is
		 * not part of any rate. */
		ctx->t_stopped = fwd_now();
		for (unsigned p = 0; p < ctx->nports; p++)
			tide_port_stop(ctx->ports[p]);
		ctx->ports_started = false;
	}
}

void fwd_teardown(struct fwd_ctx *ctx)
{
	fwd_stop(ctx);
	if (ctx->engine_ready && ctx->engine->fini != NULL)
		ctx->engine->fini(ctx);
	ctx->engine_ready = false;
	for (unsigned p = 0; p < ctx->nports; p++)
		tide_port_close(ctx->ports[p]);
	ctx->nports = 0;
	if (ctx->lcores != NULL) {
		for (unsigned i = 0; i < ctx->nlcores; i++)
			for (unsigned p = 0; p < TIDE_MAX_PORTS; p++)
				free(ctx->lcores[i].txb[p].pkts);
		free(ctx->lcores);
		ctx->lcores = NULL;
	}
	tide_pool_free(ctx->pool);
	ctx->pool = NULL;
}
