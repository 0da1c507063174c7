/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Live statistics and the final summary of tide-fwd. Packets, bytes, polls, misses, buffer
 * shortages, errors and hangs are the ports' own counters (tide_port_stats_get()); drops by
 * reason and cycles are the lcores'. Rates are per second of wall time; Gbit/s counts frame
 * bytes (no preamble, gap or CRC); cycles per packet divide the TSC cycles the lcores spent
 * on a port's streams (idle polls included) by the packets they handled, and are shown only
 * from FWD_CYC_MIN_PKTS packets up: below that they measure the waiting, not the packets.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


#include "cli.h"
#include "stats.h"

double fwd_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t ld(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static void add_snap(struct fwd_port_snap *t, const struct fwd_port_snap *s)
{
	const uint64_t *a = (const uint64_t *)s;
	uint64_t *b = (uint64_t *)t;

	for (size_t i = 0; i < sizeof(*s) / sizeof(uint64_t); i++)
		b[i] += a[i];
}

static void sub_snap(struct fwd_port_snap *d, const struct fwd_port_snap *b,
		     const struct fwd_port_snap *a)
{
	const uint64_t *x = (const uint64_t *)b, *y = (const uint64_t *)a;
	uint64_t *o = (uint64_t *)d;

	for (size_t i = 0; i < sizeof(*d) / sizeof(uint64_t); i++)
		o[i] = x[i] - y[i];
}

void fwd_snap_take(const struct fwd_ctx *ctx, struct fwd_snap *s)
{
	memset(s, 0, sizeof(*s));
	s->t = fwd_now();
	for (unsigned p = 0; p < ctx->nports; p++) {
		struct fwd_port_snap *ps = &s->port[p];
		struct tide_port_stats st = {.sz = sizeof(st)};

		for (unsigned i = 0; i < ctx->nlcores; i++) {
			const struct fwd_ctr *c = &ctx->lcores[i].ctr[p];

			ps->cycles += ld(&c->cycles);
			ps->idle_cycles += ld(&c->idle_cycles);
			ps->active_cycles += ld(&c->active_cycles);
			ps->active_idle_cycles += ld(&c->active_idle_cycles);
			ps->active_polls += ld(&c->active_polls);
			ps->active_idle_polls += ld(&c->active_idle_polls);
			for (unsigned d = 0; d < FWD_DROP_NR; d++)
				ps->drops[d] += ld(&c->drops[d]);
			ps->sw_cksum += ld(&c->sw_cksum);
			ps->sw_gso += ld(&c->sw_gso);
		}
		if (tide_port_stats_get(ctx->ports[p], &st) == 0) {
			ps->rx_pkts = st.ipackets;
			ps->rx_bytes = st.ibytes;
			ps->tx_pkts = st.opackets;
			ps->tx_bytes = st.obytes;
			ps->rx_missed = st.rx_missed;
			ps->rx_nombuf = st.rx_nombuf;
			ps->tx_hangs = st.tx_hangs;
			ps->ierrors = st.ierrors;
			ps->oerrors = st.oerrors;
			ps->rx_polls = st.rx_polls;
			ps->rx_idle_polls = st.rx_idle_polls;
			ps->tx_polls = st.tx_polls;
			ps->tx_idle_polls = st.tx_idle_polls;
		}
		/* A simulated NIC's device thread: is it, or the forwarding core, the limit?
		 * (Other drivers have no such counters: both stay 0.) */
		tide_xstats_get_by_name(ctx->ports[p], "simnic_device_polls", &ps->dev_polls);
		tide_xstats_get_by_name(ctx->ports[p], "simnic_device_idle", &ps->dev_idle);
		add_snap(&s->total, ps);
	}
}

static uint64_t drops_sum(const struct fwd_port_snap *d)
{
	uint64_t n = d->rx_missed;

	for (unsigned i = 0; i < FWD_DROP_NR; i++)
		n += d->drops[i];
	return n;
}

static double ratio(double a, double b)
{
	return b > 0 ? a / b : 0;
}

#define FWD_CYC_MIN_PKTS 1000

/* Cycles per packet as text, or "-" when too few packets make it meaningless. */
static const char *cyc_text(char *buf, size_t len, uint64_t cycles, uint64_t pkts, int width)
{
	if (pkts < FWD_CYC_MIN_PKTS)
		snprintf(buf, len, "%*s", width, "-");
	else
		snprintf(buf, len, "%*.1f", width, (double)cycles / (double)pkts);
	return buf;
}

/* Packets a port's streams handled: received, or built (txonly). */
static uint64_t handled(const struct fwd_ctx *ctx, const struct fwd_port_snap *d)
{
	return ctx->engine->flags & FWD_ENGINE_F_NO_RX ? d->tx_pkts : d->rx_pkts;
}

static double idle_share(const struct fwd_ctx *ctx, const struct fwd_port_snap *d)
{
	if (ctx->engine->flags & FWD_ENGINE_F_NO_RX)
		return 100.0 * ratio((double)d->tx_idle_polls, (double)d->tx_polls);
	return 100.0 * ratio((double)d->rx_idle_polls, (double)d->rx_polls);
}

void fwd_stats_print_legend(FILE *f)
{
	fprintf(f, "live: Mpps and Gbit/s over the last period, totals since the start; drops and "
		   "errors:\n"
		   "      in the period; idle%%: share of Rx polls that found nothing (the forwarder\n"
		   "      waited for input; a CPU shared with busy neighbours shows as fewer packets, "
		   "not as idle)\n");
}

void fwd_stats_print_live(FILE *f, const struct fwd_ctx *ctx, const struct fwd_snap *start,
			  const struct fwd_snap *a, const struct fwd_snap *b, double progress)
{
	double dt = b->t - a->t, el = b->t - start->t;

	fprintf(f, "[%8.1f s]", el);
	if (progress > 0 && progress < 1)
		fprintf(f, " %5.1f%% done, ETA %.1f s", 100 * progress, el * (1 - progress) / progress);
	else if (progress >= 1)
		fprintf(f, " 100.0%% done");
	fprintf(f, "\n%4s %-10s %8s %8s %7s %11s %11s %8s %7s %6s %8s\n", "port", "name",
		"rx-Mpps", "tx-Mpps", "Gbit/s", "rx-total", "tx-total", "drops", "errors", "idle%",
		"cyc/pkt");
	for (unsigned p = 0; p < ctx->nports; p++) {
		struct fwd_port_snap d, t;
		char cyc[32];

		sub_snap(&d, &b->port[p], &a->port[p]);
		sub_snap(&t, &b->port[p], &start->port[p]);
		fprintf(f, "%4u %-10.10s %8.3f %8.3f %7.3f %11llu %11llu %8llu %7llu %6.1f %8s\n", p,
			ctx->info[p].name, ratio((double)d.rx_pkts, dt) / 1e6,
			ratio((double)d.tx_pkts, dt) / 1e6,
			ratio((double)(d.rx_bytes > d.tx_bytes ? d.rx_bytes : d.tx_bytes) * 8, dt) /
			    1e9,
			(unsigned long long)t.rx_pkts, (unsigned long long)t.tx_pkts,
			(unsigned long long)drops_sum(&d),
			(unsigned long long)(d.ierrors + d.oerrors), idle_share(ctx, &d),
			cyc_text(cyc, sizeof(cyc), d.cycles, handled(ctx, &d), 8));
	}
	fflush(f);
}

static void config_line(FILE *f, const struct fwd_ctx *ctx, const char *sep)
{
	const struct fwd_config *cfg = ctx->cfg;
	char lcores[256], map[1024], free_thresh[16];

	fwd_cli_format_lcores(cfg, lcores, sizeof(lcores));
	fwd_cli_format_map(ctx, map, sizeof(map));
	fprintf(f, "config: fwd %s%slcores %s%smap %s%sburst %u%srxd %u%stxd %u%spool %u%scache %u",
		ctx->engine->name, sep, lcores, sep, map, sep, cfg->burst, sep, ctx->rxd, sep,
		ctx->txd, sep, ctx->pool_n, sep, cfg->cache);
	fwd_cli_format_free_thresh(cfg, free_thresh, sizeof(free_thresh));
	fprintf(f, "%stxfree %s%srs %s%srs-thresh %u%sfree-thresh %s%sfast-free %s\n", sep,
		tide_txfree_name(cfg->txconf.txfree), sep, tide_rs_name(cfg->txconf.rs), sep,
		cfg->txconf.rs_thresh, sep, free_thresh, sep,
		cfg->txconf.flags & TIDE_TXQ_F_FAST_FREE ? "on" : "off");
	if (!strcmp(ctx->engine->name, "l3fwd"))
		fprintf(f, "        routes %s\n", cfg->routes ? cfg->routes : "default");
	if (!strcmp(ctx->engine->name, "txonly"))
		fprintf(f, "        txonly-size %u, flows %u\n", cfg->txonly_size, cfg->flows);
	for (unsigned i = 0; i < cfg->nspecs; i++)
		fprintf(f, "        port %s\n", cfg->specs[i]);
}

static void port_row(FILE *f, const struct fwd_ctx *ctx, const char *label, const char *name,
		     const struct fwd_port_snap *d, double dt)
{
	char cyc[32];

	fprintf(f,
		"%-5s %-12s %13llu %13llu %8.3f %8.3f %8.3f %9s %10llu %8llu %9llu %9llu %6llu\n",
		label, name, (unsigned long long)d->rx_pkts, (unsigned long long)d->tx_pkts,
		ratio((double)d->rx_pkts, dt) / 1e6, ratio((double)d->tx_pkts, dt) / 1e6,
		ratio((double)(d->rx_bytes > d->tx_bytes ? d->rx_bytes : d->tx_bytes) * 8, dt) /
		    1e9,
		cyc_text(cyc, sizeof(cyc), d->cycles, handled(ctx, d), 9),
		(unsigned long long)d->rx_missed, (unsigned long long)d->rx_nombuf,
		(unsigned long long)d->ierrors, (unsigned long long)d->oerrors,
		(unsigned long long)d->tx_hangs);
}

static void drop_row(FILE *f, const char *label, const struct fwd_port_snap *d)
{
	fprintf(f, "%-5s", label);
	for (unsigned i = 0; i < FWD_DROP_NR; i++)
		fprintf(f, " %12llu", (unsigned long long)d->drops[i]);
	fprintf(f, "\n");
}

void fwd_summary_print(FILE *f, const struct fwd_ctx *ctx, const struct fwd_result *r)
{
	double dt = r->end->t - r->start->t;
	struct fwd_port_snap d;

	fprintf(f, "\n==== tide-fwd summary: %.2f s, stopped by %s, TSC %.3f GHz ====\n", dt,
		r->stopped_by, fwd_tsc_hz() / 1e9);
	config_line(f, ctx, ", ");
	fprintf(f, "%-5s %-12s %13s %13s %8s %8s %8s %9s %10s %8s %9s %9s %6s\n", "port", "name",
		"rx-packets", "tx-packets", "rx-Mpps", "tx-Mpps", "Gbit/s", "cyc/pkt", "rx-missed",
		"nombuf", "rx-errors", "tx-errors", "hangs");
	for (unsigned p = 0; p < ctx->nports; p++) {
		char label[16];

		snprintf(label, sizeof(label), "%u", p);
		sub_snap(&d, &r->end->port[p], &r->start->port[p]);
		port_row(f, ctx, label, ctx->info[p].name, &d, dt);
	}
	sub_snap(&d, &r->end->total, &r->start->total);
	port_row(f, ctx, "total", "", &d, dt);
	fprintf(f,
		"drops by reason (engine drops on the ingress port, tx_full and no_txq on the egress "
		   "port)\n");
	fprintf(f, "%-5s", "port");
	for (unsigned i = 0; i < FWD_DROP_NR; i++)
		fprintf(f, " %12s", fwd_drop_name((enum fwd_drop)i));
	fprintf(f, "\n");
	for (unsigned p = 0; p < ctx->nports; p++) {
		char label[16];

		snprintf(label, sizeof(label), "%u", p);
		sub_snap(&d, &r->end->port[p], &r->start->port[p]);
		drop_row(f, label, &d);
	}
	sub_snap(&d, &r->end->total, &r->start->total);
	drop_row(f, "total", &d);
	fprintf(f, "tx hangs: %llu\n", (unsigned long long)d.tx_hangs);
	if (ctx->sw_ol)
		fprintf(f, "offloads in software (egress ports without them): sw_cksum %llu, "
			   "sw_gso %llu (packets segmented), refused %llu\n",
			(unsigned long long)d.sw_cksum, (unsigned long long)d.sw_gso,
			(unsigned long long)d.drops[FWD_DROP_OFFLOAD]);
	if (d.ierrors != 0)
		fprintf(f, "rx errors: %llu packets received in error and dropped (e.g. longer than "
			   "the %u-byte data room: --mbuf-size)\n",
			(unsigned long long)d.ierrors, tide_pktpool_data_room(ctx->pool));
	if (d.oerrors != 0)
		fprintf(f, "tx errors: %llu packets could not be sent (see the messages above)\n",
			(unsigned long long)d.oerrors);
	if (d.dev_polls != 0)
		fprintf(f, "simnic device model idle in %.1f%% of its loop iterations "
			   "(forwarding cores idle in %.1f%% of their polls)\n",
			100.0 * (double)d.dev_idle / (double)d.dev_polls, idle_share(ctx, &d));
	fprintf(f, "buffers outstanding after stop: %u of %u%s\n", r->outstanding, ctx->pool_n,
		r->outstanding ? "  <-- LEAK" : "");
	fflush(f);
}

/* A JSON string: quotes, backslashes and control characters escaped. */
static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void json_port(FILE *f, const struct fwd_ctx *ctx, const struct fwd_port_snap *d, double dt)
{
	fprintf(
	    f,
	    "\"rx_packets\": %llu, \"tx_packets\": %llu, \"rx_bytes\": %llu, \"tx_bytes\": %llu, "
	    "\"rx_mpps\": %.6f, \"tx_mpps\": %.6f, \"rx_gbps\": %.6f, \"tx_gbps\": %.6f, "
	    "\"cycles_per_packet\": %.2f, \"idle_poll_pct\": %.2f, \"idle_time_pct\": %.2f, "
	    "\"active_s\": %.6f, \"active_idle_poll_pct\": %.2f, \"active_idle_time_pct\": %.2f, "
	    "\"rx_missed\": %llu, "
	    "\"rx_nombuf\": %llu, \"rx_errors\": %llu, \"tx_errors\": %llu, \"tx_hangs\": %llu, "
	    "\"drops\": {",
	    (unsigned long long)d->rx_pkts, (unsigned long long)d->tx_pkts,
	    (unsigned long long)d->rx_bytes, (unsigned long long)d->tx_bytes,
	    ratio((double)d->rx_pkts, dt) / 1e6, ratio((double)d->tx_pkts, dt) / 1e6,
	    ratio((double)d->rx_bytes * 8, dt) / 1e9, ratio((double)d->tx_bytes * 8, dt) / 1e9,
	    ratio((double)d->cycles, (double)handled(ctx, d)), idle_share(ctx, d),
	    100.0 * ratio((double)d->idle_cycles, (double)d->cycles),
	    (double)d->active_cycles / fwd_tsc_hz(),
	    100.0 * ratio((double)d->active_idle_polls, (double)d->active_polls),
	    100.0 * ratio((double)d->active_idle_cycles, (double)d->active_cycles),
	    (unsigned long long)d->rx_missed, (unsigned long long)d->rx_nombuf,
	    (unsigned long long)d->ierrors, (unsigned long long)d->oerrors,
	    (unsigned long long)d->tx_hangs);
	for (unsigned i = 0; i < FWD_DROP_NR; i++)
		fprintf(f, "%s\"%s\": %llu", i ? ", " : "", fwd_drop_name((enum fwd_drop)i),
			(unsigned long long)d->drops[i]);
	fprintf(f, "}, \"sw_cksum\": %llu, \"sw_gso\": %llu, \"device_idle_pct\": ",
		(unsigned long long)d->sw_cksum, (unsigned long long)d->sw_gso);
	if (d->dev_polls != 0)
		fprintf(f, "%.2f", 100.0 * (double)d->dev_idle / (double)d->dev_polls);
	else
		fprintf(f, "null");
}

/* Every extended statistic of @p: arrays (free both) and their length, or -errno. */
static int xstats_read(struct tide_port *p, struct tide_xstat_name **names, uint64_t **vals)
{
	int n = tide_xstats_names_get(p, NULL, 0);

	if (n < 0)
		return n;
	*names = calloc((size_t)n + 1, sizeof(**names));
	*vals = calloc((size_t)n + 1, sizeof(**vals));
	if (*names == NULL || *vals == NULL) {
		free(*names);
		free(*vals);
		return -ENOMEM;
	}
	/* The count cannot change between the calls: the main thread owns the ports. */
	tide_xstats_names_get(p, *names, (unsigned)n);
	tide_xstats_get(p, *vals, (unsigned)n);
	return n;
}

void fwd_xstats_print(FILE *f, const struct fwd_ctx *ctx)
{
	for (unsigned p = 0; p < ctx->nports; p++) {
		struct tide_xstat_name *names;
		uint64_t *vals;
		int n = xstats_read(ctx->ports[p], &names, &vals);

		if (n < 0)
			continue;
		fprintf(f, "xstats of port %u (%s), since it was opened:\n", p, ctx->info[p].name);
		for (int i = 0; i < n; i++)
			fprintf(f, "  %-32s %20llu\n", names[i].name, (unsigned long long)vals[i]);
		free(names);
		free(vals);
	}
}

static void json_xstats(FILE *f, struct tide_port *p)
{
	struct tide_xstat_name *names;
	uint64_t *vals;
	int n = xstats_read(p, &names, &vals);

	fprintf(f, ", \"xstats\": {");
	for (int i = 0; i < n; i++) {
		fprintf(f, "%s", i ? ", " : "");
		json_str(f, names[i].name);
		fprintf(f, ": %llu", (unsigned long long)vals[i]);
	}
	fprintf(f, "}");
	if (n >= 0) {
		free(names);
		free(vals);
	}
}

int fwd_summary_json(FILE *f, const struct fwd_ctx *ctx, const struct fwd_result *r)
{
	const struct fwd_config *cfg = ctx->cfg;
	double dt = r->end->t - r->start->t;
	char lcores[256], map[1024];
	struct fwd_port_snap d;
	int rc;

	fwd_cli_format_lcores(cfg, lcores, sizeof(lcores));
	fwd_cli_format_map(ctx, map, sizeof(map));
	fprintf(f, "{\n  \"tool\": \"tide-fwd\",\n  \"version\": %d,\n  \"duration_s\": %.6f,\n"
		   "  \"stopped_by\": ", FWD_JSON_VERSION, dt);
	json_str(f, r->stopped_by);
	fprintf(f, ",\n  \"tsc_hz\": %.0f,\n  \"config\": {\"fwd\": ", fwd_tsc_hz());
	json_str(f, ctx->engine->name);
	fprintf(f, ", \"ports\": [");
	for (unsigned i = 0; i < cfg->nspecs; i++) {
		fprintf(f, "%s", i ? ", " : "");
		json_str(f, cfg->specs[i]);
	}
	fprintf(f, "], \"lcores\": ");
	json_str(f, lcores);
	fprintf(f, ", \"map\": ");
	json_str(f, map);
	fprintf(f,
		", \"burst\": %u, \"rxd\": %u, \"txd\": %u, \"pool\": %u, \"cache\": %u, "
		"\"txfree\": \"%s\", \"rs\": \"%s\", \"rs_thresh\": %u, \"free_thresh\": %u, "
		"\"fast_free\": %s, \"mbuf_size\": %u, \"packets\": %llu, \"duration\": %.6f, "
		"\"rate_pps\": %.3f, \"routes\": ",
		cfg->burst, ctx->rxd, ctx->txd, ctx->pool_n, cfg->cache,
		tide_txfree_name(cfg->txconf.txfree), tide_rs_name(cfg->txconf.rs),
		cfg->txconf.rs_thresh, cfg->txconf.free_thresh,
		cfg->txconf.flags & TIDE_TXQ_F_FAST_FREE ? "true" : "false",
		tide_pktpool_data_room(ctx->pool), (unsigned long long)cfg->packets, cfg->duration,
		cfg->rate_pps);
	if (cfg->routes)
		json_str(f, cfg->routes);
	else
		fprintf(f, "null");
	fprintf(f, ", \"txonly_size\": %u, \"flows\": %u},\n  \"ports\": [\n", cfg->txonly_size,
		cfg->flows);
	for (unsigned p = 0; p < ctx->nports; p++) {
		sub_snap(&d, &r->end->port[p], &r->start->port[p]);
		fprintf(f, "    {\"port\": %u, \"name\": ", p);
		json_str(f, ctx->info[p].name);
		fprintf(f, ", \"driver\": ");
		json_str(f, ctx->info[p].driver);
		fprintf(f, ", \"mac\": \"%02x:%02x:%02x:%02x:%02x:%02x\", ", ctx->info[p].mac[0],
			ctx->info[p].mac[1], ctx->info[p].mac[2], ctx->info[p].mac[3],
			ctx->info[p].mac[4], ctx->info[p].mac[5]);
		fprintf(f, "\"mtu\": %u, \"max_mtu\": %u, \"max_frame\": %u, ", ctx->info[p].mtu,
			ctx->info[p].max_mtu, ctx->info[p].max_frame);
		json_port(f, ctx, &d, dt);
		json_xstats(f, ctx->ports[p]);
		fprintf(f, "}%s\n", p + 1 < ctx->nports ? "," : "");
	}
	sub_snap(&d, &r->end->total, &r->start->total);
	fprintf(f, "  ],\n  \"total\": {");
	json_port(f, ctx, &d, dt);
	fprintf(f, "},\n  \"buffers_outstanding\": %u\n}\n", r->outstanding);
	rc = fflush(f) != 0 || ferror(f) ? -(errno ? errno : EIO) : 0;
	return rc;
}
