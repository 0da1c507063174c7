/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_util.h - the pieces every tide-bench subcommand shares: options, timing, repeated
 * runs summarised as median/min/max, a two-thread launcher, an aligned text table and a small
 * JSON writer.
 *
 * A subcommand fills a struct bench_report (one struct bench_result per variant); tide-bench.c
 * prints it as a table and, with --json, writes it as a JSON array.
 */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <stdint.h>
#include <stdio.h>

#include <tide/lcore.h>

#define BENCH_MAX_BULKS 16
#define BENCH_BULK_MAX	512 /* largest --bulk value */

/* Options common to every subcommand (filled in by tide-bench.c). */
struct bench_opts {
	unsigned runs;	       /* measured runs per variant */
	unsigned ms;	       /* length of one run in milliseconds */
	const char *json_path; /* NULL: no JSON output */
	int quiet;	       /* no progress lines on stderr */
	unsigned bulks[BENCH_MAX_BULKS];
	unsigned nb_bulks;
	int cpus[2];	/* CPUs of the two threads of two-thread variants */
	unsigned cache; /* pool: cache size of the cached variant */
	const char *variant; /* txc: run only this variant */
	uint64_t packets;    /* txc: forward this many packets (callgrind child) */
	int instr;           /* txc: instructions per packet through callgrind */
};

/* What one run measured. */
struct bench_sample {
	double ns_per_obj;
	double mops; /* million objects per second */
	uint64_t checksum;
};

/* One variant: the summary of opts->runs samples. */
struct bench_result {
	char bench[16];
	char variant[24];
	unsigned bulk;
	unsigned threads;
	unsigned runs;
	double ns_med, ns_min, ns_max;
	double mops_med;
	uint64_t checksum; /* sum of the runs' checksums */
};

#define BENCH_MAX_NOTES 6

struct bench_report {
	const char *title;
	const char *notes[BENCH_MAX_NOTES]; /* printed under the table; NULL ends the list */
	struct bench_result *res;
	unsigned n, cap;
};

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t bench_now_ns(void);

/*
 * How many calls of @bulk objects a timed loop makes between two clock reads: enough that
 * reading the clock costs well under 1% of the loop.
 */
unsigned bench_chunk_calls(unsigned bulk);

/*
 * One run of a variant: do the work for about @ms milliseconds and fill *@s. Returns 0, or
 * a negative errno after printing what went wrong.
 */
typedef int (*bench_run_fn)(void *arg, unsigned ms, struct bench_sample *s);

/*
 * Run @fn once to warm up (discarded), then o->runs times; fill the figures of *@r (whose
 * bench, variant, bulk and threads the caller has set) and print a progress line unless
 * o->quiet. Returns 0 or the first error of @fn.
 */
int bench_measure(const struct bench_opts *o, bench_run_fn fn, void *arg, struct bench_result *r);

/* Median, minimum and maximum of @n values (@v is reordered). */
void bench_stats(double *v, unsigned n, double *med, double *min, double *max);

/*
 * Run @fa(@a) and @fb(@b) on two tide lcores pinned to o->cpus[0] and o->cpus[1] (unpinned,
 * with one warning, when a CPU is not available), wait for both and return the first
 * non-zero return value or launch error. When the second thread cannot start, *@abort is
 * set to 1 so that the first one can leave its start barrier.
 */
int bench_run_pair(const struct bench_opts *o, tide_lcore_fn fa, void *a, tide_lcore_fn fb, void *b,
		   int *abort);

/* Non-zero when every two-thread run so far was pinned as asked. */
int bench_pinned(void);

/* A line for a report's notes saying where the two-thread runs ran (static storage). */
const char *bench_pin_note(const struct bench_opts *o);

/*
 * Start barrier for @n threads: count in, then spin until all @n have. Returns 0, or -1 when
 * *@abort becomes non-zero first.
 */
int bench_barrier(unsigned *count, unsigned n, const int *abort);

/* Append a copy of *@r. Returns 0 or -ENOMEM. */
int bench_report_add(struct bench_report *rep, const struct bench_result *r);
void bench_report_free(struct bench_report *rep);

/* The report as an aligned table: title, header, one row per result, notes. */
void bench_report_print(const struct bench_report *rep, const struct bench_opts *o, FILE *f);

/* The report as a JSON array of objects. Returns 0 or -errno (message printed). */
int bench_report_write_json(const struct bench_report *rep, const struct bench_opts *o,
			    const char *path);

/* ---- aligned text table ---- */

#define BENCH_CELL 32

struct bench_table {
	unsigned ncols;
	const char *const *head; /* ncols column titles */
	const char *align;	 /* ncols characters: 'l' or 'r' */
	char (*cells)[BENCH_CELL];
	unsigned nrows, cap; /* rows of ncols cells */
	unsigned col;	     /* next cell of the last row */
};

void bench_table_init(struct bench_table *t, unsigned ncols, const char *const *head,
		      const char *align);
/* Start a row. Returns 0 or -ENOMEM. */
int bench_table_row(struct bench_table *t);
/* Fill the next cell of the current row (truncated to BENCH_CELL - 1 characters). */
void bench_table_cell(struct bench_table *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void bench_table_print(const struct bench_table *t, FILE *f);
void bench_table_free(struct bench_table *t);

/* ---- JSON writer ---- */

#define BENCH_JSON_DEPTH 8

/*
 * Writes one JSON value to a stream. Commas and indentation are handled here: call key()
 * before each member of an object. Nesting deeper than BENCH_JSON_DEPTH is not supported.
 */
struct bench_json {
	FILE *f;
	unsigned depth;
	int count[BENCH_JSON_DEPTH]; /* values written at each level */
	char kind[BENCH_JSON_DEPTH]; /* '[' or '{' */
	int after_key;
};

void bench_json_init(struct bench_json *j, FILE *f);
void bench_json_begin(struct bench_json *j, char kind);
void bench_json_end(struct bench_json *j);
void bench_json_key(struct bench_json *j, const char *key);
void bench_json_str(struct bench_json *j, const char *s);
void bench_json_uint(struct bench_json *j, uint64_t v);
/* Non-finite values are written as null. */
void bench_json_double(struct bench_json *j, double v, int decimals);

/* ---- subcommands (one file each); each returns 0, 1 on a failed check, or -errno ---- */

int bench_ring(const struct bench_opts *o, struct bench_report *rep);
int bench_pool(const struct bench_opts *o, struct bench_report *rep);
int bench_txc(const struct bench_opts *o, struct bench_report *rep);

#endif /* BENCH_UTIL_H */
