/* SPDX-License-Identifier: BSD-3-Clause */
/* The command line of tide-fwd: GNU long options into a struct fwd_config. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kvargs.h" /* tide_parse_u64: header-only, no library internals */

void fwd_cli_usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: tide-fwd --port SPEC [--port SPEC ...] [options]\n"
	    "\n"
	    "Forward packets between tide ports with one of the engines below, print live\n"
	    "statistics once per period and a summary at the end (on SIGINT/SIGTERM too).\n"
	    "\n"
	    "Ports and threads:\n"
	    "  -p, --port SPEC         open the port(s) SPEC describes, e.g. "
	    "simnic:ports=2,mode=thread\n"
	    "                          (repeatable; ports are numbered in order from 0)\n"
	    "  -l, --lcores LIST       CPUs of the forwarding lcores, e.g. 0 or 0,1 or 0-3\n"
	    "                          (default: the first CPU this process may run on)\n"
	    "  -m, --map LIST          which lcore polls which Rx queue: CPU:PORT[/QUEUE],...\n"
	    "                          (default: spread every port's queues round-robin over\n"
	    "                          the lcores). Every lcore owns Tx queue <its index in\n"
	    "                          --lcores> on every port.\n"
	    "      --rxq N             Rx queues per port without --map (default: one per\n"
	    "                          lcore, capped to the port's maximum)\n"
	    "\n"
	    "Forwarding:\n"
	    "  -f, --fwd ENGINE        io | mac | macswap | l3fwd | txonly | rxonly (default io)\n"
	    "  -b, --burst N           packets per burst, 1..%u (default %u)\n"
	    "      --rxd N, --txd N    descriptors per Rx / Tx queue, 1..65536 (default %u, or\n"
	    "                          deeper where a driver prefers it: afxdp 2048); the\n"
	    "                          driver checks its own range (simnic: a power of two in\n"
	    "                          64..4096)\n"
	    "      --pool N            packet buffers (default: every ring, cache and burst + "
	    "1024;\n"
	    "                          at least the Rx rings plus a burst per lcore)\n"
	    "      --cache N           per-lcore pool cache, 0 or 2..%u (default %u)\n"
	    "      --mbuf-size N       data room of each buffer in bytes, %u..%u (default %u);\n"
	    "                          longer frames are dropped as Rx errors\n"
	    "      --mtu N             set the MTU (L3 payload bytes) of every port, 68..65535;\n"
	    "                          a port that cannot take it stops the run (default: each\n"
	    "                          port's own, 1500 for most)\n"
	    "      --routes FILE       l3fwd routes, lines 'PREFIX/LEN PORT', '#' comments\n"
	    "                          (default: 10.<p>.0.0/16 -> port p for every port p)\n"
	    "      --txonly-size N     txonly packet size in bytes, %u..data room (default %u)\n"
	    "      --flows N           txonly flows (destination addresses), 1..65536 (default "
	    "%u)\n"
	    "      --rate R            txonly rate per port: packets/s (e.g. 1000000), or frame\n"
	    "                          bits/s with a unit: 500Mbit, 2.5Gbit (default: no limit)\n"
	    "\n"
	    "Tx completion engine (defaults are the library's):\n"
	    "      --txfree MODE       each | bulk | fast | recycle | auto (default auto)\n"
	    "      --rs MODE           every | bucket | burst (default bucket)\n"
	    "      --rs-thresh N       RS bucket size (default 32)\n"
	    "      --free-thresh N     reclaim below N free slots; 0: the port's default (default:\n"
	    "                          32, or txd - rs-thresh where the port reclaims eagerly)\n"
	    "      --fast-free         promise one pool and refcnt 1 (needed by --txfree fast)\n"
	    "\n"
	    "Run and report:\n"
	    "  -d, --duration S        stop after S seconds (default: run until SIGINT/SIGTERM)\n"
	    "  -n, --packets N         stop after exactly N packets received (txonly: sent)\n"
	    "                          A run also stops when every port it receives from is a\n"
	    "                          pcap replay that has ended (pcap loop=0: never).\n"
	    "      --stats-period S    live statistics every S seconds; 0 = none (default 1)\n"
	    "      --json FILE         also write the summary as JSON (docs/json.md); FILE is\n"
	    "                          created before the run, so a bad path fails at once\n"
	    "      --xstats            print every port's extended statistics after the summary\n"
	    "      --telemetry PATH    serve the ports' counters, info and link state on a UNIX\n"
	    "                          socket (JSON; scripts/tide-telemetry is a client)\n"
	    "      --prom FILE         rewrite FILE with every port's counters each stats\n"
	    "                          period (1 s when 0), in the Prometheus text format\n"
	    "                          (node_exporter's textfile collector)\n"
	    "  -q, --quiet             no live statistics\n"
	    "      --rx-mode MODE      poll (default) | interrupt: an idle lcore sleeps on its\n"
	    "                          Rx queues' interrupt fds (ports that have them)\n"
	    "      --offloads on|off   on (default): enable on every queue the checksum and TSO\n"
	    "                          offloads its port offers; a packet whose Tx requests its\n"
	    "                          egress queue lacks gets them in software (summary: sw_cksum,\n"
	    "                          sw_gso; refused: the offload drop); off: none enabled\n"
	    "  -h, --help              this text\n"
	    "\n"
	    "Exit status: 0 done; 1 runtime failure, packets that could not be sent (Tx errors,\n"
	    "e.g. a full disk under a pcap tx=) or buffers not returned; 2 bad options or a\n"
	    "port that cannot be opened.\n"
	    "\n"
	    "Examples:\n"
	    "  tide-fwd --port simnic:ports=2,mode=thread,wire=gen,size=64 --lcores 0 \\\n"
	    "           --fwd l3fwd --rxd 1024 --txd 1024 --duration 10\n"
	    "  tide-fwd --port simnic:ports=2,queues=2 --lcores 0,1 --map 0:0/0,0:1/0,1:0/1,1:1/1 "
	    "\\\n"
	    "           --fwd macswap --txfree fast --fast-free --packets 1000000\n"
	    "  tide-fwd --port pcap:rx=in.pcap,tx=out.pcap --fwd io --quiet --json run.json\n"
	    "  tide-fwd --port simnic:ports=1 --fwd txonly --txonly-size 1500 --flows 16 -d 5 \\\n"
	    "           --rate 1Gbit\n",
	    FWD_BURST_MAX, FWD_BURST_DEF, FWD_DESC_DEF, TIDE_POOL_CACHE_MAX,
	    TIDE_POOL_CACHE_DEFAULT, FWD_MBUF_MIN, FWD_MBUF_MAX, TIDE_MBUF_DATAROOM, FWD_TXONLY_MIN,
	    FWD_TXONLY_DEF, FWD_FLOWS_DEF);
}

static int __attribute__((format(printf, 3, 4))) bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* A decimal number in [min, max], nothing else: the library's spec-string syntax. */
static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	return tide_parse_u64(s, min, max, out);
}

static int opt_uint(const char *name, const char *s, unsigned min, unsigned max, unsigned *out,
		    char *err, size_t errlen)
{
	uint64_t v;

	if (parse_u64(s, min, max, &v) < 0)
		return bad(err, errlen, "--%s '%s': expected a number in %u..%u", name, s, min,
			   max);
	*out = (unsigned)v;
	return 0;
}

static int opt_seconds(const char *name, const char *s, bool zero_ok, double *out, char *err,
		       size_t errlen)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !isfinite(v) || v < 0 ||
	    (v == 0 && !zero_ok) || v > 1e7)
		return bad(err, errlen, "--%s '%s': expected a number of seconds%s", name, s,
			   zero_ok ? " (0 or more)" : " above 0");
	*out = v;
	return 0;
}

/* --rate: "N" packets per second, or "X<unit>" bits per second (Kbit, Mbit, Gbit). */
static int parse_rate(const char *s, unsigned size, double *pps, char *err, size_t errlen)
{
	static const struct {
		const char *unit;
		double mult;
	} units[] = {{"Kbit", 1e3}, {"Mbit", 1e6}, {"Gbit", 1e9}};
	uint64_t n;
	char *end;
	double v;

	if (parse_u64(s, 1, UINT32_MAX, &n) == 0) {
		*pps = (double)n;
		return 0;
	}
	errno = 0;
	v = (*s >= '0' && *s <= '9') ? strtod(s, &end) : 0;
	for (unsigned i = 0; v > 0 && errno == 0 && i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(end, units[i].unit) == 0 && isfinite(v) && v * units[i].mult <= 1e12) {
			*pps = v * units[i].mult / (8.0 * size);
			if (*pps < 1)
				break;
			return 0;
		}
	return bad(err, errlen,
		   "--rate '%s': expected packets per second (1..%u) or bits per second with a "
		   "unit, e.g. 500Mbit or 2.5Gbit (at least one packet per second, at most 1000Gbit)",
		   s, UINT32_MAX);
}

static int add_cpu(struct fwd_config *cfg, const cpu_set_t *allowed, uint64_t cpu, char *err,
		   size_t errlen)
{
	if (cpu >= CPU_SETSIZE || !CPU_ISSET((int)cpu, allowed))
		return bad(err, errlen, "--lcores: CPU %llu is not available to this process",
			   (unsigned long long)cpu);
	for (unsigned i = 0; i < cfg->nlcores; i++)
		if (cfg->cpus[i] == (int)cpu)
			return bad(err, errlen, "--lcores: CPU %llu listed twice",
				   (unsigned long long)cpu);
	if (cfg->nlcores == FWD_MAX_LCORES)
		return bad(err, errlen, "--lcores: at most %u lcores", FWD_MAX_LCORES);
	cfg->cpus[cfg->nlcores++] = (int)cpu;
	return 0;
}

/* "0,1,4-6" */
static int parse_lcores(const char *arg, struct fwd_config *cfg, char *err, size_t errlen)
{
	char buf[256], *save = NULL, *tok;
	cpu_set_t allowed;
	int rc;

	if (strlen(arg) >= sizeof(buf))
		return bad(err, errlen, "--lcores: list too long");
	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
		return bad(err, errlen, "--lcores: cannot read the CPU affinity: %s",
			   strerror(errno));
	strcpy(buf, arg);
	cfg->nlcores = 0;
	for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		char *dash = strchr(tok, '-');
		uint64_t lo, hi;

		if (dash != NULL)
			*dash = '\0';
		if (parse_u64(tok, 0, CPU_SETSIZE - 1, &lo) < 0 ||
		    (dash != NULL && (parse_u64(dash + 1, lo, CPU_SETSIZE - 1, &hi) < 0)))
			return bad(err, errlen, "--lcores '%s': expected CPUs like 0,1 or 0-3",
				   arg);
		if (dash == NULL)
			hi = lo;
		for (uint64_t c = lo; c <= hi; c++) {
			rc = add_cpu(cfg, &allowed, c, err, errlen);
			if (rc < 0)
				return rc;
		}
	}
	if (cfg->nlcores == 0)
		return bad(err, errlen, "--lcores '%s': no CPU given", arg);
	return 0;
}

/* "CPU:PORT[/QUEUE],..." against the final --lcores. */
static int parse_map(const char *arg, struct fwd_config *cfg, char *err, size_t errlen)
{
	char buf[4096], *save = NULL, *tok;

	if (strlen(arg) >= sizeof(buf))
		return bad(err, errlen, "--map: list too long");
	strcpy(buf, arg);
	cfg->nmap = 0;
	for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(tok, ':'), *slash;
		uint64_t cpu, port, queue = 0;
		unsigned idx;

		if (colon == NULL)
			goto syntax;
		*colon = '\0';
		slash = strchr(colon + 1, '/');
		if (slash != NULL)
			*slash = '\0';
		if (parse_u64(tok, 0, CPU_SETSIZE - 1, &cpu) < 0 ||
		    parse_u64(colon + 1, 0, TIDE_MAX_PORTS - 1, &port) < 0 ||
		    (slash != NULL && parse_u64(slash + 1, 0, TIDE_MAX_QUEUES - 1, &queue) < 0))
			goto syntax;
		for (idx = 0; idx < cfg->nlcores; idx++)
			if (cfg->cpus[idx] == (int)cpu)
				break;
		if (idx == cfg->nlcores)
			return bad(err, errlen, "--map: CPU %llu is not in --lcores",
				   (unsigned long long)cpu);
		if (cfg->nmap == FWD_MAX_STREAMS)
			return bad(err, errlen, "--map: too many entries");
		cfg->map[cfg->nmap].lcore = idx;
		cfg->map[cfg->nmap].port = (unsigned)port;
		cfg->map[cfg->nmap].queue = (unsigned)queue;
		cfg->nmap++;
	}
	if (cfg->nmap == 0)
		goto syntax;
	return 0;
syntax:
	return bad(err, errlen, "--map '%s': expected CPU:PORT[/QUEUE],... (PORT < %u, QUEUE < %u)",
		   arg, TIDE_MAX_PORTS, TIDE_MAX_QUEUES);
}

enum {
	OPT_RXD = 256,
	OPT_TXD,
	OPT_RXQ,
	OPT_POOL,
	OPT_CACHE,
	OPT_TXFREE,
	OPT_RS,
	OPT_RS_THRESH,
	OPT_FREE_THRESH,
	OPT_FAST_FREE,
	OPT_ROUTES,
	OPT_TXONLY_SIZE,
	OPT_FLOWS,
	OPT_STATS_PERIOD,
	OPT_JSON,
	OPT_TELEMETRY,
	OPT_XSTATS,
	OPT_PROM,
	OPT_RX_MODE,
	OPT_OFFLOADS,
	OPT_MBUF_SIZE,
	OPT_RATE,
	OPT_MTU,
};

static const struct option long_opts[] = {
    {"port", required_argument, NULL, 'p'},
    {"lcores", required_argument, NULL, 'l'},
    {"map", required_argument, NULL, 'm'},
    {"rxq", required_argument, NULL, OPT_RXQ},
    {"fwd", required_argument, NULL, 'f'},
    {"burst", required_argument, NULL, 'b'},
    {"rxd", required_argument, NULL, OPT_RXD},
    {"txd", required_argument, NULL, OPT_TXD},
    {"pool", required_argument, NULL, OPT_POOL},
    {"cache", required_argument, NULL, OPT_CACHE},
    {"txfree", required_argument, NULL, OPT_TXFREE},
    {"rs", required_argument, NULL, OPT_RS},
    {"rs-thresh", required_argument, NULL, OPT_RS_THRESH},
    {"free-thresh", required_argument, NULL, OPT_FREE_THRESH},
    {"fast-free", no_argument, NULL, OPT_FAST_FREE},
    {"routes", required_argument, NULL, OPT_ROUTES},
    {"txonly-size", required_argument, NULL, OPT_TXONLY_SIZE},
    {"flows", required_argument, NULL, OPT_FLOWS},
    {"rate", required_argument, NULL, OPT_RATE},
    {"mbuf-size", required_argument, NULL, OPT_MBUF_SIZE},
    {"mtu", required_argument, NULL, OPT_MTU},
    {"duration", required_argument, NULL, 'd'},
    {"packets", required_argument, NULL, 'n'},
    {"stats-period", required_argument, NULL, OPT_STATS_PERIOD},
    {"json", required_argument, NULL, OPT_JSON},
    {"telemetry", required_argument, NULL, OPT_TELEMETRY},
    {"xstats", no_argument, NULL, OPT_XSTATS},
    {"prom", required_argument, NULL, OPT_PROM},
    {"rx-mode", required_argument, NULL, OPT_RX_MODE},
    {"offloads", required_argument, NULL, OPT_OFFLOADS},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* The name of the option argv[optind - 1] was, for messages about a missing argument. */
static const char *opt_text(char **argv, int idx)
{
	return idx > 0 ? argv[idx - 1] : "?";
}

int fwd_cli_parse(int argc, char **argv, struct fwd_config *cfg, char *err, size_t errlen)
{
	const char *map = NULL, *rate = NULL;
	unsigned v = 0;
	uint64_t n;
	int c, rc = 0;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":p:l:m:f:b:d:n:qh", long_opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (cfg->nspecs == FWD_MAX_SPECS)
				return bad(err, errlen, "--port: at most %u specs", FWD_MAX_SPECS);
			cfg->specs[cfg->nspecs++] = optarg;
			break;
		case 'l':
			rc = parse_lcores(optarg, cfg, err, errlen);
			cfg->lcores_given = true;
			break;
		case 'm':
			map = optarg;
			break;
		case OPT_RXQ:
			rc = opt_uint("rxq", optarg, 1, TIDE_MAX_QUEUES, &cfg->nb_rxq, err, errlen);
			break;
		case 'f':
			if (fwd_engine_find(optarg) == NULL)
				return bad(err, errlen,
					   "--fwd '%s': unknown engine (io, mac, macswap, l3fwd, "
					   "txonly, rxonly)",
					   optarg);
			cfg->engine = optarg;
			break;
		case 'b':
			rc = opt_uint("burst", optarg, 1, FWD_BURST_MAX, &cfg->burst, err, errlen);
			break;
		case OPT_RXD:
			rc = opt_uint("rxd", optarg, 1, 65536, &cfg->rxd, err, errlen);
			break;
		case OPT_TXD:
			rc = opt_uint("txd", optarg, 1, 65536, &cfg->txd, err, errlen);
			break;
		case OPT_POOL:
			rc = opt_uint("pool", optarg, 1, 1u << 24, &cfg->pool_n, err, errlen);
			break;
		case OPT_CACHE:
			rc = opt_uint("cache", optarg, 0, TIDE_POOL_CACHE_MAX, &cfg->cache, err,
				      errlen);
			if (rc == 0 && cfg->cache == 1)
				return bad(err, errlen,
					   "--cache '1': a cache holds 0 or 2..%u buffers (it "
					   "flushes half of itself)",
					   TIDE_POOL_CACHE_MAX);
			break;
		case OPT_MBUF_SIZE:
			rc = opt_uint("mbuf-size", optarg, FWD_MBUF_MIN, FWD_MBUF_MAX,
				      &cfg->mbuf_size, err, errlen);
			break;
		case OPT_RATE:
			rate = optarg;
			break;
		case OPT_MTU:
			rc = opt_uint("mtu", optarg, TIDE_MIN_MTU, 65535, &cfg->mtu, err, errlen);
			break;
		case OPT_TXFREE:
			if (tide_txfree_parse(optarg, &cfg->txconf.txfree) < 0)
				return bad(
				    err, errlen,
				    "--txfree '%s': expected each, bulk, fast, recycle or auto",
				    optarg);
			break;
		case OPT_RS:
			if (tide_rs_parse(optarg, &cfg->txconf.rs) < 0)
				return bad(err, errlen,
					   "--rs '%s': expected every, bucket or burst", optarg);
			break;
		case OPT_RS_THRESH:
			rc = opt_uint("rs-thresh", optarg, 1, 65535, &v, err, errlen);
			cfg->txconf.rs_thresh = (uint16_t)v;
			break;
		case OPT_FREE_THRESH:
			rc = opt_uint("free-thresh", optarg, 0, 65535, &v, err, errlen);
			cfg->txconf.free_thresh = (uint16_t)v;
			break;
		case OPT_FAST_FREE:
			cfg->txconf.flags |= TIDE_TXQ_F_FAST_FREE;
			break;
		case OPT_ROUTES:
			cfg->routes = optarg;
			break;
		case OPT_TXONLY_SIZE:
			rc = opt_uint("txonly-size", optarg, FWD_TXONLY_MIN, FWD_MBUF_MAX,
				      &cfg->txonly_size, err, errlen);
			break;
		case OPT_FLOWS:
			rc = opt_uint("flows", optarg, 1, 65536, &cfg->flows, err, errlen);
			break;
		case 'd':
			rc = opt_seconds("duration", optarg, false, &cfg->duration, err, errlen);
			break;
		case 'n':
			if (parse_u64(optarg, 1, UINT64_MAX, &n) < 0)
				return bad(err, errlen, "--packets '%s': expected a number above 0",
					   optarg);
			cfg->packets = n;
			break;
		case OPT_STATS_PERIOD:
			rc = opt_seconds("stats-period", optarg, true, &cfg->stats_period, err,
					 errlen);
			break;
		case OPT_JSON:
			cfg->json = optarg;
			break;
		case OPT_XSTATS:
			cfg->xstats = true;
			break;
		case OPT_TELEMETRY:
			cfg->telemetry = optarg;
			break;
		case OPT_PROM:
			cfg->prom = optarg;
			break;
		case OPT_RX_MODE:
			if (strcmp(optarg, "poll") != 0 && strcmp(optarg, "interrupt") != 0)
				return bad(err, errlen, "--rx-mode %s: poll or interrupt", optarg);
			cfg->rx_intr = strcmp(optarg, "interrupt") == 0;
			break;
		case OPT_OFFLOADS:
			if (strcmp(optarg, "on") != 0 && strcmp(optarg, "off") != 0)
				return bad(err, errlen, "--offloads %s: on or off", optarg);
			cfg->offloads = strcmp(optarg, "on") == 0;
			break;
		case 'q':
			cfg->quiet = true;
			break;
		case 'h':
			return 1;
		case ':':
			return bad(err, errlen, "%s: needs a value (see --help)",
				   opt_text(argv, optind));
		default:
			return bad(err, errlen, "unknown option '%s' (see --help)",
				   opt_text(argv, optind));
		}
		if (rc < 0)
			return rc;
	}
	if (optind < argc)
		return bad(err, errlen, "unexpected argument '%s' (see --help)", argv[optind]);
	if (cfg->nspecs == 0)
		return bad(err, errlen, "no --port given (see --help)");
	if (cfg->routes != NULL && strcmp(cfg->engine, "l3fwd") != 0)
		return bad(err, errlen, "--routes %s: only --fwd l3fwd uses routes (--fwd is %s)",
			   cfg->routes, cfg->engine);
	if (rate != NULL) {
		if (strcmp(cfg->engine, "txonly") != 0)
			return bad(err, errlen, "--rate %s: only --fwd txonly has a rate (--fwd is %s)",
				   rate, cfg->engine);
		rc = parse_rate(rate, cfg->txonly_size, &cfg->rate_pps, err, errlen);
		if (rc < 0)
			return rc;
	}
	if (!cfg->lcores_given) {
		cpu_set_t allowed;

		/* Default: the first CPU this process may run on (taskset -c 1 => CPU 1). */
		if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0)
			for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
				if (CPU_ISSET(cpu, &allowed)) {
					cfg->cpus[0] = cpu;
					break;
				}
	}
	if (map != NULL) {
		if (cfg->nb_rxq != 0)
			return bad(err, errlen, "--rxq and --map cannot be combined");
		rc = parse_map(map, cfg, err, errlen);
	}
	return rc;
}

void fwd_cli_format_free_thresh(const struct fwd_config *cfg, char *buf, size_t len)
{
	if (cfg->txconf.free_thresh == 0)
		snprintf(buf, len, "auto");
	else
		snprintf(buf, len, "%u", cfg->txconf.free_thresh);
}

void fwd_cli_format_lcores(const struct fwd_config *cfg, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < cfg->nlcores && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%d", i ? "," : "", cfg->cpus[i]);
}

void fwd_cli_format_map(const struct fwd_ctx *ctx, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < ctx->nlcores; i++) {
		const struct fwd_lcore *lc = &ctx->lcores[i];

		for (unsigned s = 0; s < lc->nstreams && off < len; s++)
			off += (size_t)snprintf(buf + off, len - off, "%s%d:%u/%u", off ? "," : "",
						lc->cpu, lc->streams[s].port, lc->streams[s].queue);
	}
}
