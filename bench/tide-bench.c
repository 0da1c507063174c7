/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tide-bench - micro-benchmarks of tide's public API.
 *
 *     tide-bench COMMAND [OPTIONS]
 *
 * Each command lives in its own bench_<name>.c and is listed in bench_cmds[] below; the
 * options every command shares are parsed here. Exit status: 0, 1 when a benchmark failed
 * a check (e.g. a pool not full at the end), 2 for bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tide/pool.h>

#include "bench_util.h"

#define BENCH_EXIT_FAIL	 1
#define BENCH_EXIT_USAGE 2

/* Command-specific options; a command lists those it accepts in bench_cmd.extra. */
#define BENCH_OPT_CACHE 0x1u
#define BENCH_OPT_TXC 0x2u

struct bench_cmd {
	const char *name;
	const char *help; /* one line for the command list */
	int (*fn)(const struct bench_opts *o, struct bench_report *rep);
	unsigned extra;	     /* BENCH_OPT_* */
	const char *details; /* what "tide-bench NAME --help" adds */
};

static const struct bench_cmd bench_cmds[] = {
    {"ring", "enqueue/dequeue bulk on SP/SC and MP/MC rings, 1 and 2 threads", bench_ring, 0,
     "Single thread: enqueue_bulk then dequeue_bulk of n objects in a loop.\n"
     "Two threads: a producer and a consumer lcore (pinned with --cpus) move objects\n"
     "through the ring; the figure is wall time per object transferred.\n"},
    {"pool", "get/put bulk with and without per-thread caches, 1 and 2 threads", bench_pool,
     BENCH_OPT_CACHE,
     "Single thread: the main thread (registered) does get_bulk then put_bulk of n.\n"
     "Two threads: two lcores (pinned with --cpus) each do the same on one pool.\n"
     "Each bulk size runs once with per-thread caches (--cache) and once without.\n"
     "Fails (exit 1) if the pool is not full at the end.\n"
     "\n"
     "  --cache N      cache size of the cached variant (default 256, max 512;\n"
     "                 0 runs only the uncached variant)\n"},
    {"txc", "Tx completion engine: every txfree and rs mode on io forwarding (simnic inline)",
     bench_txc, BENCH_OPT_TXC,
     "io forwarding between two simnic ports on one core, 64-byte packets, burst 32,\n"
     "1024 descriptors, rs_thresh = free_thresh = 32; simnic runs inline (deterministic).\n"
     "Variants: every txfree mode with rs=bucket, every rs mode with txfree=fast.\n"
     "\n"
     "  --instr        instructions per packet from valgrind --tool=callgrind instead\n"
     "                 of wall-clock rates (needs valgrind; about 10 s per variant)\n"
     "  --variant V    run only variant V (e.g. fast/bucket)\n"
     "  --packets N    with --instr: packets counted per variant (default 200000)\n"},
};

#define BENCH_NB_CMDS (sizeof(bench_cmds) / sizeof(bench_cmds[0]))

static const char bench_common_help[] =
    "  --runs N       measured runs per figure; the median is reported (default 5)\n"
    "  --ms M         length of one run in milliseconds (default 200)\n"
    "  --bulk LIST    comma-separated bulk sizes, 1..512 (default 1,8,32,64,128)\n"
    "  --cpus A,B     CPUs of the two threads of two-thread runs (default 0,1)\n"
    "  --json FILE    also write the results to FILE as a JSON array\n"
    "  -q, --quiet    no progress lines on stderr\n"
    "  -h, --help     this help\n";

static void bench_usage(FILE *f)
{
	unsigned i;

	fprintf(f, "usage: tide-bench COMMAND [OPTIONS]\n"
		   "Micro-benchmarks of the tide public API. Figures are medians of several\n"
		   "runs with min and max; timing is CLOCK_MONOTONIC.\n\n"
		   "commands:\n");
	for (i = 0; i < BENCH_NB_CMDS; i++)
		fprintf(f, "  %-12s %s\n", bench_cmds[i].name, bench_cmds[i].help);
	fprintf(f,
		"\noptions (every command):\n%s\n"
		"'tide-bench COMMAND --help' describes one command.\n",
		bench_common_help);
}

static void bench_cmd_usage(const struct bench_cmd *cmd, FILE *f)
{
	fprintf(f, "usage: tide-bench %s [OPTIONS]\n%s.\n\n%s\noptions:\n%s", cmd->name, cmd->help,
		cmd->details, bench_common_help);
}

/* Parse a whole decimal number in [lo, hi]. Returns 0 or -1. */
static int bench_parse_uint(const char *s, unsigned long lo, unsigned long hi, unsigned *out)
{
	unsigned long v;
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < lo || v > hi)
		return -1;
	*out = (unsigned)v;
	return 0;
}

/* Parse "a,b,c" into @out (at most @max values, each in [lo, hi]). Returns the count or -1. */
static int bench_parse_list(const char *s, unsigned long lo, unsigned long hi, unsigned *out,
			    unsigned max)
{
	char buf[256], *tok, *save = NULL;
	unsigned n = 0;

	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	if (buf[0] == ',' || (buf[0] && buf[strlen(buf) - 1] == ',') || strstr(buf, ",,"))
		return -1;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == max || bench_parse_uint(tok, lo, hi, &out[n]) < 0)
			return -1;
		n++;
	}
	return n ? (int)n : -1;
}

static int bench_bad(const char *cmd, const char *what, const char *arg)
{
	fprintf(stderr, "tide-bench %s: %s '%s' (see 'tide-bench %s --help')\n", cmd, what, arg,
		cmd);
	return -1;
}

/* Parse a command's options into *@o. Returns 0, 1 when help was printed, or -1 (reported). */
static int bench_parse(const struct bench_cmd *cmd, int argc, char **argv, struct bench_opts *o)
{
	enum { OPT_RUNS = 256, OPT_MS, OPT_BULK, OPT_CPUS, OPT_JSON, OPT_CACHE, OPT_VARIANT,
	       OPT_PACKETS, OPT_INSTR };
	static const struct option longopts[] = {
	    {"runs", required_argument, NULL, OPT_RUNS},
	    {"ms", required_argument, NULL, OPT_MS},
	    {"bulk", required_argument, NULL, OPT_BULK},
	    {"cpus", required_argument, NULL, OPT_CPUS},
	    {"json", required_argument, NULL, OPT_JSON},
	    {"cache", required_argument, NULL, OPT_CACHE},
	    {"variant", required_argument, NULL, OPT_VARIANT},
	    {"packets", required_argument, NULL, OPT_PACKETS},
	    {"instr", no_argument, NULL, OPT_INSTR},
	    {"quiet", no_argument, NULL, 'q'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	unsigned cpus[2];
	int c, n;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":hq", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			bench_cmd_usage(cmd, stdout);
			return 1;
		case 'q':
			o->quiet = 1;
			break;
		case OPT_RUNS:
			if (bench_parse_uint(optarg, 1, 1000, &o->runs) < 0)
				return bench_bad(cmd->name, "--runs wants 1..1000, not", optarg);
			break;
		case OPT_MS:
			if (bench_parse_uint(optarg, 1, 600000, &o->ms) < 0)
				return bench_bad(cmd->name, "--ms wants 1..600000, not", optarg);
			break;
		case OPT_BULK:
			n = bench_parse_list(optarg, 1, BENCH_BULK_MAX, o->bulks, BENCH_MAX_BULKS);
			if (n < 0)
				return bench_bad(cmd->name,
						 "--bulk wants up to 16 comma-separated sizes "
						 "1..512, not",
						 optarg);
			o->nb_bulks = (unsigned)n;
			break;
		case OPT_CPUS:
			if (bench_parse_list(optarg, 0, 4095, cpus, 3) != 2)
				return bench_bad(cmd->name, "--cpus wants two CPU numbers A,B, not",
						 optarg);
			o->cpus[0] = (int)cpus[0];
			o->cpus[1] = (int)cpus[1];
			break;
		case OPT_JSON:
			if (optarg[0] == '\0')
				return bench_bad(cmd->name, "--json wants a file name, not",
						 optarg);
			o->json_path = optarg;
			break;
		case OPT_CACHE:
			if (!(cmd->extra & BENCH_OPT_CACHE))
				return bench_bad(cmd->name, "this command has no option",
						 "--cache");
			if (bench_parse_uint(optarg, 0, TIDE_POOL_CACHE_MAX, &o->cache) < 0)
				return bench_bad(cmd->name, "--cache wants 0..512, not", optarg);
			break;
		case OPT_VARIANT:
		case OPT_PACKETS:
		case OPT_INSTR:
			if (!(cmd->extra & BENCH_OPT_TXC))
				return bench_bad(cmd->name, "this command has no option",
						 argv[optind - 1]);
			if (c == OPT_VARIANT) {
				o->variant = optarg;
			} else if (c == OPT_INSTR) {
				o->instr = 1;
			} else {
				unsigned pk;

				if (bench_parse_uint(optarg, 1, 100000000, &pk) < 0)
					return bench_bad(cmd->name,
							 "--packets wants 1..100000000, not", optarg);
				o->packets = pk;
			}
			break;
		case ':':
			return bench_bad(cmd->name, "missing value for option", argv[optind - 1]);
		default:
			return bench_bad(cmd->name, "unknown option", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return bench_bad(cmd->name, "unexpected argument", argv[optind]);
	return 0;
}

int main(int argc, char **argv)
{
	static const unsigned default_bulks[] = {1, 8, 32, 64, 128};
	struct bench_opts o = {
	    .runs = 5,
	    .ms = 200,
	    .cpus = {0, 1},
	    .cache = TIDE_POOL_CACHE_DEFAULT,
	};
	struct bench_report rep;
	const struct bench_cmd *cmd = NULL;
	unsigned i;
	int rc;

	if (argc < 2) {
		fprintf(stderr, "tide-bench: missing command (see 'tide-bench --help')\n");
		return BENCH_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		bench_usage(stdout);
		return 0;
	}
	for (i = 0; i < BENCH_NB_CMDS; i++)
		if (!strcmp(argv[1], bench_cmds[i].name))
			cmd = &bench_cmds[i];
	if (cmd == NULL) {
		fprintf(stderr, "tide-bench: unknown command '%s' (see 'tide-bench --help')\n",
			argv[1]);
		return BENCH_EXIT_USAGE;
	}
	for (i = 0; i < sizeof(default_bulks) / sizeof(default_bulks[0]); i++)
		o.bulks[i] = default_bulks[i];
	o.nb_bulks = i;
	/* The command's options start after its name: parse them as if it were argv[0]. */
	rc = bench_parse(cmd, argc - 1, argv + 1, &o);
	if (rc != 0)
		return rc > 0 ? 0 : BENCH_EXIT_USAGE;

	memset(&rep, 0, sizeof(rep));
	rc = cmd->fn(&o, &rep);
	if (rep.n > 0)
		bench_report_print(&rep, &o, stdout);
	if (rc == 0 && o.json_path != NULL && bench_report_write_json(&rep, &o, o.json_path) < 0)
		rc = BENCH_EXIT_FAIL;
	bench_report_free(&rep);
	if (rc != 0) {
		fprintf(stderr, "tide-bench %s: failed\n", cmd->name);
		return BENCH_EXIT_FAIL;
	}
	return 0;
}
