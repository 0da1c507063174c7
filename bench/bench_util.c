/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tide/common.h>

#include "bench_util.h"

/* Objects a timed loop moves between two clock reads (see bench_chunk_calls()). */
#define BENCH_CHUNK_OBJS 4096

uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

unsigned bench_chunk_calls(unsigned bulk)
{
	unsigned calls = BENCH_CHUNK_OBJS / (bulk ? bulk : 1);

	return calls > 16 ? calls : 16;
}

static int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void bench_stats(double *v, unsigned n, double *med, double *min, double *max)
{
	if (n == 0) {
		*med = *min = *max = NAN;
		return;
	}
	qsort(v, n, sizeof(*v), bench_cmp_double);
	*min = v[0];
	*max = v[n - 1];
	*med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int bench_measure(const struct bench_opts *o, bench_run_fn fn, void *arg, struct bench_result *r)
{
	double *ns = calloc(o->runs, sizeof(*ns));
	double *mops = calloc(o->runs, sizeof(*mops));
	struct bench_sample s;
	double dummy;
	unsigned warm = o->ms / 5 ? o->ms / 5 : 1;
	unsigned i;
	int rc = -ENOMEM;

	if (ns == NULL || mops == NULL)
		goto out;
	r->runs = o->runs;
	r->checksum = 0;
	/* Warm caches, page in the ring or pool and let the CPU clock settle. */
	rc = fn(arg, warm, &s);
	for (i = 0; rc == 0 && i < o->runs; i++) {
		rc = fn(arg, o->ms, &s);
		ns[i] = s.ns_per_obj;
		mops[i] = s.mops;
		r->checksum += s.checksum;
	}
	if (rc != 0)
		goto out;
	bench_stats(ns, o->runs, &r->ns_med, &r->ns_min, &r->ns_max);
	bench_stats(mops, o->runs, &r->mops_med, &dummy, &dummy);
	if (!o->quiet)
		fprintf(stderr,
			"%s %s threads=%u bulk=%u: %.2f ns/obj [%.2f .. %.2f], %.1f Mobj/s\n",
			r->bench, r->variant, r->threads, r->bulk, r->ns_med, r->ns_min, r->ns_max,
			r->mops_med);
out:
	free(ns);
	free(mops);
	return rc;
}

/* ---- two threads ---- */

static int bench_all_pinned = 1;

int bench_pinned(void)
{
	return bench_all_pinned;
}

const char *bench_pin_note(const struct bench_opts *o)
{
	static char buf[96];

	if (bench_all_pinned)
		snprintf(buf, sizeof(buf),
			 "threads=2: the two threads were pinned to CPUs %d and %d.", o->cpus[0],
			 o->cpus[1]);
	else
		snprintf(buf, sizeof(buf),
			 "threads=2: threads were NOT pinned (a CPU of --cpus "
			 "is not available).");
	return buf;
}

/* Checked here so that an unavailable CPU means a warning, not a library error message. */
static int bench_cpu_usable(int cpu)
{
	cpu_set_t set;

	if (cpu < 0 || cpu >= CPU_SETSIZE || sched_getaffinity(0, sizeof(set), &set) != 0)
		return 0;
	return CPU_ISSET(cpu, &set);
}

static int bench_launch(int cpu, tide_lcore_fn fn, void *arg, struct tide_lcore **lc)
{
	static int warned;

	if (cpu >= 0 && !bench_cpu_usable(cpu)) {
		if (!warned)
			fprintf(stderr, "tide-bench: CPU %d is not available, running unpinned\n",
				cpu);
		warned = 1;
		bench_all_pinned = 0;
		cpu = -1;
	}
	return tide_lcore_launch(cpu, fn, arg, lc);
}

int bench_run_pair(const struct bench_opts *o, tide_lcore_fn fa, void *a, tide_lcore_fn fb, void *b,
		   int *abort)
{
	struct tide_lcore *la, *lb;
	int rc, ret_a = 0, ret_b = 0;

	rc = bench_launch(o->cpus[0], fa, a, &la);
	if (rc < 0) {
		fprintf(stderr, "tide-bench: cannot start a thread: %s\n", strerror(-rc));
		return rc;
	}
	rc = bench_launch(o->cpus[1], fb, b, &lb);
	if (rc < 0) {
		fprintf(stderr, "tide-bench: cannot start a thread: %s\n", strerror(-rc));
		__atomic_store_n(abort, 1, __ATOMIC_RELEASE);
		tide_lcore_join(la, NULL);
		return rc;
	}
	tide_lcore_join(la, &ret_a);
	tide_lcore_join(lb, &ret_b);
	return ret_a ? ret_a : ret_b;
}

int bench_barrier(unsigned *count, unsigned n, const int *abort)
{
	__atomic_fetch_add(count, 1, __ATOMIC_ACQ_REL);
	/* Acquire pairs with the other threads' fetch_add: their setup is visible after this. */
	while (__atomic_load_n(count, __ATOMIC_ACQUIRE) < n) {
		/* Pairs with the release store in bench_run_pair(). */
		if (__atomic_load_n(abort, __ATOMIC_ACQUIRE))
			return -1;
		tide_pause();
	}
	return 0;
}

/* ---- report ---- */

int bench_report_add(struct bench_report *rep, const struct bench_result *r)
{
	if (rep->n == rep->cap) {
		unsigned cap = rep->cap ? 2 * rep->cap : 32;
		struct bench_result *res = realloc(rep->res, cap * sizeof(*res));

		if (res == NULL)
			return -ENOMEM;
		rep->res = res;
		rep->cap = cap;
	}
	rep->res[rep->n++] = *r;
	return 0;
}

void bench_report_free(struct bench_report *rep)
{
	free(rep->res);
	rep->res = NULL;
	rep->n = rep->cap = 0;
}

void bench_report_print(const struct bench_report *rep, const struct bench_opts *o, FILE *f)
{
	static const char *const head[] = {
	    "variant", "threads", "bulk", "ns/obj", "min", "max", "Mobj/s",
	};
	struct bench_table t;
	unsigned i;

	bench_table_init(&t, 7, head, "lrrrrrr");
	for (i = 0; i < rep->n; i++) {
		const struct bench_result *r = &rep->res[i];

		if (bench_table_row(&t) < 0)
			break;
		bench_table_cell(&t, "%s", r->variant);
		bench_table_cell(&t, "%u", r->threads);
		bench_table_cell(&t, "%u", r->bulk);
		bench_table_cell(&t, "%.2f", r->ns_med);
		bench_table_cell(&t, "%.2f", r->ns_min);
		bench_table_cell(&t, "%.2f", r->ns_max);
		bench_table_cell(&t, "%.1f", r->mops_med);
	}
	if (rep->title)
		fprintf(f, "%s\n", rep->title);
	fprintf(f, "median of %u runs of %u ms each; min and max over the same runs\n\n", o->runs,
		o->ms);
	bench_table_print(&t, f);
	bench_table_free(&t);
	if (rep->notes[0])
		fputc('\n', f);
	for (i = 0; i < BENCH_MAX_NOTES && rep->notes[i]; i++)
		fprintf(f, "%s\n", rep->notes[i]);
}

int bench_report_write_json(const struct bench_report *rep, const struct bench_opts *o,
			    const char *path)
{
	struct bench_json j;
	char hex[24];
	unsigned i;
	FILE *f = fopen(path, "w");

	if (f == NULL) {
		fprintf(stderr, "tide-bench: cannot write %s: %s\n", path, strerror(errno));
		return -errno;
	}
	bench_json_init(&j, f);
	bench_json_begin(&j, '[');
	for (i = 0; i < rep->n; i++) {
		const struct bench_result *r = &rep->res[i];

		bench_json_begin(&j, '{');
		bench_json_key(&j, "bench");
		bench_json_str(&j, r->bench);
		bench_json_key(&j, "variant");
		bench_json_str(&j, r->variant);
		bench_json_key(&j, "bulk");
		bench_json_uint(&j, r->bulk);
		bench_json_key(&j, "threads");
		bench_json_uint(&j, r->threads);
		bench_json_key(&j, "ns_per_obj_median");
		bench_json_double(&j, r->ns_med, 3);
		bench_json_key(&j, "ns_per_obj_min");
		bench_json_double(&j, r->ns_min, 3);
		bench_json_key(&j, "ns_per_obj_max");
		bench_json_double(&j, r->ns_max, 3);
		bench_json_key(&j, "mops_median");
		bench_json_double(&j, r->mops_med, 3);
		bench_json_key(&j, "runs");
		bench_json_uint(&j, r->runs);
		bench_json_key(&j, "ms");
		bench_json_uint(&j, o->ms);
		/* As a string: a 64-bit value does not survive a double-based JSON reader. */
		snprintf(hex, sizeof(hex), "0x%016llx", (unsigned long long)r->checksum);
		bench_json_key(&j, "checksum");
		bench_json_str(&j, hex);
		bench_json_end(&j);
	}
	bench_json_end(&j);
	fputc('\n', f);
	if (ferror(f) | fclose(f)) {
		fprintf(stderr, "tide-bench: error writing %s\n", path);
		return -EIO;
	}
	return 0;
}

/* ---- aligned text table ---- */

void bench_table_init(struct bench_table *t, unsigned ncols, const char *const *head,
		      const char *align)
{
	memset(t, 0, sizeof(*t));
	t->ncols = ncols;
	t->head = head;
	t->align = align;
}

int bench_table_row(struct bench_table *t)
{
	if (t->nrows == t->cap) {
		unsigned cap = t->cap ? 2 * t->cap : 16;
		char(*cells)[BENCH_CELL] = realloc(t->cells, (size_t)cap * t->ncols * BENCH_CELL);

		if (cells == NULL)
			return -ENOMEM;
		t->cells = cells;
		t->cap = cap;
	}
	memset(t->cells[t->nrows * t->ncols], 0, (size_t)t->ncols * BENCH_CELL);
	t->nrows++;
	t->col = 0;
	return 0;
}

void bench_table_cell(struct bench_table *t, const char *fmt, ...)
{
	va_list ap;

	if (t->nrows == 0 || t->col >= t->ncols)
		return;
	va_start(ap, fmt);
	vsnprintf(t->cells[(t->nrows - 1) * t->ncols + t->col], BENCH_CELL, fmt, ap);
	va_end(ap);
	t->col++;
}

static void bench_table_line(const struct bench_table *t, const unsigned *width,
			     const char *const *cells, FILE *f)
{
	unsigned c;

	for (c = 0; c < t->ncols; c++) {
		int w = (int)width[c];

		if (c + 1 == t->ncols && t->align[c] != 'r')
			fprintf(f, "%s", cells[c]); /* no trailing blanks */
		else if (t->align[c] == 'r')
			fprintf(f, "%*s", w, cells[c]);
		else
			fprintf(f, "%-*s", w, cells[c]);
		fputs(c + 1 < t->ncols ? "  " : "\n", f);
	}
}

void bench_table_print(const struct bench_table *t, FILE *f)
{
	unsigned width[16] = {0};
	const char *cells[16];
	char rule[16][BENCH_CELL];
	unsigned r, c;

	if (t->ncols > 16)
		return;
	for (c = 0; c < t->ncols; c++)
		width[c] = (unsigned)strlen(t->head[c]);
	for (r = 0; r < t->nrows; r++)
		for (c = 0; c < t->ncols; c++) {
			unsigned len = (unsigned)strlen(t->cells[r * t->ncols + c]);

			if (len > width[c])
				width[c] = len;
		}
	bench_table_line(t, width, t->head, f);
	for (c = 0; c < t->ncols; c++) {
		unsigned w = width[c] < BENCH_CELL ? width[c] : BENCH_CELL - 1;

		memset(rule[c], '-', w);
		rule[c][w] = '\0';
		cells[c] = rule[c];
	}
	bench_table_line(t, width, cells, f);
	for (r = 0; r < t->nrows; r++) {
		for (c = 0; c < t->ncols; c++)
			cells[c] = t->cells[r * t->ncols + c];
		bench_table_line(t, width, cells, f);
	}
}

void bench_table_free(struct bench_table *t)
{
	free(t->cells);
	t->cells = NULL;
	t->nrows = t->cap = 0;
}

/* ---- JSON writer ---- */

void bench_json_init(struct bench_json *j, FILE *f)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
}

/* Separator and indentation before a value (or before a key inside an object). */
static void bench_json_sep(struct bench_json *j)
{
	unsigned d;

	if (j->after_key) {
		j->after_key = 0;
		return;
	}
	if (j->depth == 0)
		return;
	d = j->depth - 1;
	if (j->count[d]++)
		fputc(',', j->f);
	/* Arrays get one element per line; objects stay on one line. */
	if (j->kind[d] == '[')
		fprintf(j->f, "\n%*s", 2 * (int)j->depth, "");
	else if (j->count[d] > 1)
		fputc(' ', j->f);
}

void bench_json_begin(struct bench_json *j, char kind)
{
	bench_json_sep(j);
	fputc(kind, j->f);
	if (j->depth < BENCH_JSON_DEPTH) {
		j->kind[j->depth] = kind;
		j->count[j->depth] = 0;
	}
	j->depth++;
}

void bench_json_end(struct bench_json *j)
{
	char kind;

	if (j->depth == 0)
		return;
	j->depth--;
	kind = j->depth < BENCH_JSON_DEPTH ? j->kind[j->depth] : '{';
	if (kind == '[') {
		if (j->count[j->depth])
			fprintf(j->f, "\n%*s", 2 * (int)j->depth, "");
		fputc(']', j->f);
	} else {
		fputc('}', j->f);
	}
}

void bench_json_key(struct bench_json *j, const char *key)
{
	bench_json_str(j, key);
	fputs(": ", j->f);
	j->after_key = 1;
}

void bench_json_str(struct bench_json *j, const char *s)
{
	const unsigned char *p;

	bench_json_sep(j);
	fputc('"', j->f);
	for (p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(j->f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(j->f, "\\u%04x", *p);
		else
			fputc(*p, j->f);
	}
	fputc('"', j->f);
}

void bench_json_uint(struct bench_json *j, uint64_t v)
{
	bench_json_sep(j);
	fprintf(j->f, "%llu", (unsigned long long)v);
}

void bench_json_double(struct bench_json *j, double v, int decimals)
{
	bench_json_sep(j);
	if (isfinite(v))
		fprintf(j->f, "%.*f", decimals, v);
	else
		fputs("null", j->f);
}
