/* SPDX-License-Identifier: BSD-3-Clause */
/* stats.h - live statistics, the final summary and its JSON form. */
#ifndef TIDE_FWD_STATS_H
#define TIDE_FWD_STATS_H

#include <stdio.h>

#include "fwd.h"

struct fwd_port_snap {
	uint64_t rx_pkts, rx_bytes, tx_pkts, tx_bytes, cycles;
	uint64_t idle_cycles; /* of cycles, in polls that moved no packet */
	uint64_t active_cycles, active_idle_cycles, active_polls, active_idle_polls; /* fwd_ctr */
	uint64_t drops[FWD_DROP_NR];
	uint64_t rx_missed, rx_nombuf, tx_hangs, ierrors, oerrors;
	uint64_t rx_polls, rx_idle_polls, tx_polls, tx_idle_polls;
	uint64_t dev_polls, dev_idle; /* simnic mode=thread: the device model's loop */
	uint64_t sw_cksum, sw_gso;    /* egress: offloads done in software (fwd_ol.c) */
};

/* Counters of every port at one moment: the lcores' (summed) and the ports' own. */
struct fwd_snap {
	double t; /* seconds, CLOCK_MONOTONIC */
	struct fwd_port_snap port[TIDE_MAX_PORTS];
	struct fwd_port_snap total;
};

double fwd_now(void);

/* Take a snapshot; safe while the lcores run (relaxed loads of their counters). */
void fwd_snap_take(const struct fwd_ctx *ctx, struct fwd_snap *s);

/* What the live columns mean: printed once before the first live block. */
void fwd_stats_print_legend(FILE *f);

/*
 * A time line (with "% done, ETA" when 0 < @progress, the done share of a bounded run),
 * a header, and one line per port: rates between @a and @b, totals since @start. Every
 * line fits 100 columns.
 */
void fwd_stats_print_live(FILE *f, const struct fwd_ctx *ctx, const struct fwd_snap *start,
			  const struct fwd_snap *a, const struct fwd_snap *b, double progress);

/* What the run did between @a and @b, and how it ended. */
struct fwd_result {
	const struct fwd_snap *start, *end;
	unsigned outstanding; /* pool buffers still in use after the ports stopped */
	const char *stopped_by;
};

void fwd_summary_print(FILE *f, const struct fwd_ctx *ctx, const struct fwd_result *r);

/* --xstats: every port's extended statistics (tide_xstats_*), a line each. */
void fwd_xstats_print(FILE *f, const struct fwd_ctx *ctx);

/* The "version" of the JSON document (docs/json.md): bumped when a field changes meaning or
 * goes away; new fields do not bump it. */
#define FWD_JSON_VERSION 1

/* Write the summary as JSON to @f (opened by the caller before the run) and flush it.
 * Returns 0 or -errno (the file could not be written). */
int fwd_summary_json(FILE *f, const struct fwd_ctx *ctx, const struct fwd_result *r);

#endif
