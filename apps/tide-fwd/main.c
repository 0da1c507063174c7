/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tide-fwd: forward packets between tide ports (see --help). The main thread builds the
 * configuration, starts one forwarding thread per lcore, then only prints statistics, drives
 * the ports' control planes and waits for the end (duration, packet count or a signal).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <tide/log.h>
#include <tide/pcap.h>
#include <tide/telemetry.h>

#include "cli.h"
#include "fwd.h"
#include "prom.h"
#include "stats.h"

#define TICK_NS (10 * 1000 * 1000) /* main loop period: stop checks, control planes */

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

/*
 * While the configuration is built, the library's last error is kept so that a failure is
 * reported on one line with its reason; afterwards messages go to stderr as usual. Only the
 * main thread's messages are kept: lcores (which may log from a driver's burst, e.g. a pcap
 * write error) always print, and never touch logst.last.
 */
static struct {
	bool capture; /* written by the main thread, read by every thread (atomic) */
	pthread_t main;
	char last[256];
} logst;

static void log_handler(enum tide_log_level level, const char *comp, const char *msg, void *u)
{
	(void)u;
	if (__atomic_load_n(&logst.capture, __ATOMIC_RELAXED) && level <= TIDE_LOG_ERR &&
	    pthread_equal(pthread_self(), logst.main)) {
		snprintf(logst.last, sizeof(logst.last), "%s: %s", comp, msg);
		return;
	}
	fprintf(stderr, "tide: %s %s: %s\n", tide_log_level_name(level), comp, msg);
}

static void report(const char *what, const char *err)
{
	if (logst.last[0] != '\0' && strstr(err, logst.last) == NULL)
		fprintf(stderr, "tide-fwd: %s: %s (%s)\n", what, err, logst.last);
	else
		fprintf(stderr, "tide-fwd: %s: %s\n", what, err);
}

static uint64_t handled_total(const struct fwd_ctx *ctx, const struct fwd_snap *s)
{
	return ctx->engine->flags & FWD_ENGINE_F_NO_RX ? s->total.tx_pkts : s->total.rx_pkts;
}

/*
 * The finite input of the run: when every port the lcores receive from is a pcap replay with
 * an end, how many records it reads in all and how many it has read. Returns false when some
 * input has no end (or the engine receives nothing).
 */
static bool replay_progress(const struct fwd_ctx *ctx, uint64_t *done, uint64_t *total,
			    bool *ended)
{
	bool any = false;

	*done = *total = 0;
	*ended = true;
	if (ctx->engine->flags & FWD_ENGINE_F_NO_RX)
		return false;
	for (unsigned p = 0; p < ctx->nports; p++) {
		struct tide_pcap_replay r = {.sz = sizeof(r)};

		if (ctx->nb_rxq[p] == 0)
			continue;
		if (tide_pcap_replay_get(ctx->ports[p], &r) < 0 || (r.total == 0 && !r.ended))
			return false;
		any = true;
		*done += r.records;
		*total += r.total;
		*ended = *ended && r.ended;
	}
	return any;
}

/* The done share of a bounded run (the bound closest to its end), or 0 when unbounded. */
static double progress(const struct fwd_ctx *ctx, const struct fwd_snap *start,
		       const struct fwd_snap *cur)
{
	const struct fwd_config *cfg = ctx->cfg;
	uint64_t done, total;
	double f = 0;
	bool ended;

	if (cfg->duration > 0)
		f = (cur->t - start->t) / cfg->duration;
	if (cfg->packets != 0) {
		double g = (double)(handled_total(ctx, cur) - handled_total(ctx, start)) /
			   (double)cfg->packets;

		f = g > f ? g : f;
	}
	if (replay_progress(ctx, &done, &total, &ended) && total != 0) {
		double g = (double)done / (double)total;

		f = g > f ? g : f;
	}
	return f;
}

/* --telemetry and --prom: served and written from the main loop (the control thread). */
struct monitor {
	int link_fd[TIDE_MAX_PORTS]; /* tide_port_link_event_fd() of each port, or -1 */
	struct tide_telemetry *tm;
	const char *prom;
	double prom_period, next_prom;
	unsigned prom_writes, prom_failures;
	int prom_err; /* the last failure's -errno */
};

static void monitor_prom(struct monitor *mon)
{
	int rc = fwd_prom_write(mon->prom);

	mon->prom_writes++;
	if (rc < 0) {
		if (mon->prom_failures++ == 0 || rc != mon->prom_err)
			fprintf(stderr, "tide-fwd: --prom %s: %s\n", mon->prom, strerror(-rc));
		mon->prom_err = rc;
	}
}

/* A port's link went up or down: one line with the time of day. */
static void monitor_links(struct monitor *mon, struct fwd_ctx *ctx)
{
	for (unsigned p = 0; p < ctx->nports; p++) {
		struct tide_link l;
		struct timespec ts;
		struct tm tm;
		uint64_t n;
		unsigned mtu;
		char when[32];

		if (mon->link_fd[p] < 0 || read(mon->link_fd[p], &n, sizeof(n)) != sizeof(n))
			continue;
		clock_gettime(CLOCK_REALTIME, &ts);
		localtime_r(&ts.tv_sec, &tm);
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
		if (tide_port_link_get(ctx->ports[p], &l) < 0)
			l.up = -1;
		if (tide_port_mtu_get(ctx->ports[p], &mtu) < 0)
			mtu = ctx->info[p].mtu;
		printf("tide-fwd: %s.%03ld port %u (%s): link %s, mtu %u\n", when,
		       ts.tv_nsec / 1000000, p, ctx->info[p].name,
		       l.up < 0 ? "changed" : l.up ? "up" : "down", mtu);
	}
}

static void monitor_tick(struct monitor *mon, struct fwd_ctx *ctx, double now)
{
	monitor_links(mon, ctx);
	if (mon->tm != NULL) {
		int rc = tide_telemetry_poll(mon->tm);

		if (rc < 0) {
			fprintf(stderr, "tide-fwd: --telemetry: %s; no longer served\n",
				strerror(-rc));
			tide_telemetry_close(mon->tm);
			mon->tm = NULL;
		}
	}
	if (mon->prom != NULL && now >= mon->next_prom) {
		monitor_prom(mon);
		mon->next_prom += mon->prom_period;
		if (mon->next_prom < now)
			mon->next_prom = now + mon->prom_period;
	}
}

/* Wait for the end, printing live statistics. Returns what stopped the run. */
static const char *run(struct fwd_ctx *ctx, const struct fwd_snap *start, struct monitor *mon)
{
	const struct fwd_config *cfg = ctx->cfg;
	bool live = !cfg->quiet && cfg->stats_period > 0;
	struct fwd_snap prev = *start, cur;
	double next_stats = start->t + cfg->stats_period;
	struct tide_port *ctl[TIDE_MAX_PORTS];
	unsigned nctl = 0;

	/* Only the ports whose control plane needs the call (memif); a vhost port's own
	 * thread serves its frontend. */
	for (unsigned p = 0; p < ctx->nports; p++) {
		struct tide_port_info pi = {.sz = sizeof(pi)};

		if (tide_port_info_get(ctx->ports[p], &pi) == 0 && pi.needs_poll_ctl)
			ctl[nctl++] = ctx->ports[p];
	}

	if (live)
		fwd_stats_print_legend(stdout);
	for (;;) {
		struct timespec tick = {.tv_nsec = TICK_NS};
		uint64_t done, total;
		bool ended;
		double now;

		nanosleep(&tick, NULL);
		if (got_signal)
			return got_signal == SIGINT ? "SIGINT" : "SIGTERM";
		for (unsigned p = 0; p < nctl; p++)
			tide_port_poll_ctl(ctl[p]);
		now = fwd_now();
		monitor_tick(mon, ctx, now);
		if (cfg->duration > 0 && now - start->t >= cfg->duration)
			return "duration";
		/* Every input is a replay that has ended: the lcores finish the burst in hand
		 * when fwd_stop() joins them, so nothing read is left unsent. */
		if (replay_progress(ctx, &done, &total, &ended) && ended)
			return "input end";
		if (cfg->packets != 0 || (live && now >= next_stats)) {
			fwd_snap_take(ctx, &cur);
			if (cfg->packets != 0 &&
			    handled_total(ctx, &cur) - handled_total(ctx, start) >= cfg->packets)
				return "packets";
			if (live && now >= next_stats) {
				cur.t = now;
				fwd_stats_print_live(stdout, ctx, start, &prev, &cur,
						     progress(ctx, start, &cur));
				prev = cur;
				next_stats += cfg->stats_period;
				if (next_stats < now)
					next_stats = now + cfg->stats_period;
			}
		}
	}
}

/* --json FILE is created before anything runs, so that a bad path costs no run; removed
 * again when the run never happened (and it did not exist before). */
static FILE *json_open(const char *path, bool *created)
{
	struct stat st;
	FILE *f;

	*created = stat(path, &st) != 0;
	f = fopen(path, "w");
	if (f == NULL)
		fprintf(stderr, "tide-fwd: --json %s: cannot write: %s\n", path, strerror(errno));
	return f;
}

static void json_abandon(FILE *f, const char *path, bool created)
{
	if (f == NULL)
		return;
	fclose(f);
	if (created)
		unlink(path);
}

int main(int argc, char **argv)
{
	static struct fwd_config cfg;
	static struct fwd_ctx ctx;
	static struct fwd_snap start, end;
	struct monitor mon = {0};
	struct fwd_result res;
	struct sigaction sa;
	sigset_t sigs, old;
	char err[512];
	bool json_created = false;
	FILE *json = NULL;
	uint64_t oerrors;
	int rc, status = 0;

	fwd_config_init(&cfg);
	rc = fwd_cli_parse(argc, argv, &cfg, err, sizeof(err));
	if (rc == 1) {
		fwd_cli_usage(stdout);
		return 0;
	}
	if (rc < 0) {
		fprintf(stderr, "tide-fwd: %s\n", err);
		return 2;
	}
	if (cfg.json != NULL) {
		json = json_open(cfg.json, &json_created);
		if (json == NULL)
			return 2;
	}
	/* A pcap tx= into a pipe whose reader went away must be a reported write error
	 * (EPIPE), not a silent death by SIGPIPE. */
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	tide_log_set_handler(log_handler, NULL);
	logst.main = pthread_self();
	__atomic_store_n(&logst.capture, true, __ATOMIC_RELAXED);
	rc = fwd_setup(&ctx, &cfg, err, sizeof(err));
	if (rc < 0) {
		report("setup", err);
		tide_log_set_handler(NULL, NULL);
		json_abandon(json, cfg.json, json_created);
		return rc == -EINVAL ? 2 : 1;
	}
	/* Monitoring is checked before anything runs: a path in use or a file that cannot be
	 * written is a bad option. */
	if (cfg.telemetry != NULL) {
		rc = tide_telemetry_open(cfg.telemetry, &mon.tm);
		if (rc < 0) {
			snprintf(err, sizeof(err), "--telemetry %s: %s", cfg.telemetry,
				 strerror(-rc));
			report("setup", err);
			fwd_teardown(&ctx);
			tide_log_set_handler(NULL, NULL);
			json_abandon(json, cfg.json, json_created);
			return 2;
		}
	}
	if (cfg.prom != NULL) {
		mon.prom = cfg.prom;
		mon.prom_period = cfg.stats_period > 0 ? cfg.stats_period : 1.0;
		rc = fwd_prom_write(cfg.prom);
		if (rc < 0) {
			snprintf(err, sizeof(err), "--prom %s: %s", cfg.prom, strerror(-rc));
			report("setup", err);
			tide_telemetry_close(mon.tm);
			fwd_teardown(&ctx);
			tide_log_set_handler(NULL, NULL);
			json_abandon(json, cfg.json, json_created);
			return 2;
		}
	}
	/* Link changes from now on, the ones during start included. */
	for (unsigned p = 0; p < ctx.nports; p++)
		mon.link_fd[p] = tide_port_link_event_fd(ctx.ports[p]);
	/* The lcores inherit a mask with the stop signals blocked: only this thread sees them. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, &old);
	/* Counters before anything moves: a short run (a small capture) may be over before
	 * this thread gets to look, and every packet must count. */
	fwd_snap_take(&ctx, &start);
	rc = fwd_start(&ctx, err, sizeof(err));
	if (rc < 0) {
		report("start", err);
		tide_telemetry_close(mon.tm);
		fwd_teardown(&ctx);
		tide_log_set_handler(NULL, NULL);
		json_abandon(json, cfg.json, json_created);
		return rc == -EINVAL ? 2 : 1;
	}
	__atomic_store_n(&logst.capture, false, __ATOMIC_RELAXED);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = (int)SA_RESETHAND; /* a second signal ends a stuck run the hard way */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);

	if (!cfg.quiet)
		printf("tide-fwd: %s on %u port%s, %u lcore%s; Ctrl-C stops\n", ctx.engine->name,
		       ctx.nports, ctx.nports == 1 ? "" : "s", ctx.nlcores,
		       ctx.nlcores == 1 ? "" : "s");
	for (unsigned p = 0; p < ctx.nports && !cfg.quiet; p++)
		printf("tide-fwd: port %u (%s): %s, mtu %u (max %u, frames up to %u bytes)\n", p,
		       ctx.info[p].name, ctx.info[p].driver, ctx.info[p].mtu, ctx.info[p].max_mtu,
		       ctx.info[p].max_frame);
	start.t = ctx.t_launch; /* rates count from the start of forwarding */
	mon.next_prom = start.t + mon.prom_period;
	res.stopped_by = run(&ctx, &start, &mon);
	fwd_stop(&ctx);
	fwd_snap_take(&ctx, &end);
	end.t = ctx.t_stopped; /* rates over the forwarding time, not the port shutdown */
	res.start = &start;
	res.end = &end;
	res.outstanding = tide_pool_in_use(ctx.pool);
	fwd_summary_print(stdout, &ctx, &res);
	fwd_memif_print(&ctx);
	if (cfg.xstats)
		fwd_xstats_print(stdout, &ctx);
	if (json != NULL) {
		rc = fwd_summary_json(json, &ctx, &res);
		if (fclose(json) != 0 && rc == 0)
			rc = -errno;
		if (rc < 0) {
			fprintf(stderr, "tide-fwd: --json %s: %s\n", cfg.json, strerror(-rc));
			status = 1;
		}
	}
	oerrors = end.total.oerrors - start.total.oerrors;
	if (oerrors != 0) {
		fprintf(stderr, "tide-fwd: %llu packets could not be sent (Tx errors)\n",
			(unsigned long long)oerrors);
		status = 1;
	}
	if (res.outstanding != 0) {
		fprintf(stderr, "tide-fwd: %u buffers were not returned to the pool\n",
			res.outstanding);
		status = 1;
	}
	if (mon.prom != NULL) {
		monitor_prom(&mon); /* the final counters */
		if (mon.prom_failures != 0) {
			fprintf(stderr, "tide-fwd: --prom %s: %u of %u writes failed (last: %s)\n",
				mon.prom, mon.prom_failures, mon.prom_writes,
				strerror(-mon.prom_err));
			status = 1;
		}
	}
	tide_telemetry_close(mon.tm);
	fwd_teardown(&ctx);
	return status;
}
