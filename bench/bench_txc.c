/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tide-bench txc: the Tx completion engine's release policies and RS placements, measured
 * on io forwarding between two simnic ports on one core (simnic mode=inline: the device
 * model runs inside the burst calls, so everything happens on this thread and instruction
 * counts are deterministic).
 *
 * Wall clock: Mpps and ns per forwarded packet, median of --runs runs of --ms each. The
 * figures include the device model's own work (generating and sinking 64-byte packets),
 * which is the same for every variant.
 *
 * --instr: instructions per forwarded packet from valgrind's callgrind. Each variant runs in
 * a child process under callgrind with collection switched on only around a fixed number of
 * forwarded packets (after a warm-up); the device model's share (simnic_hw_*) is reported
 * separately so that the driver + engine + pool cost stands on its own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tide/lcore.h>
#include <tide/port.h>

#ifdef HAVE_CALLGRIND_H
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_STOP_INSTRUMENTATION
#define CALLGRIND_TOGGLE_COLLECT
#endif

#include "bench_util.h"
#include "../tests/tmp_util.h"

#define TXC_BURST 32
#define TXC_RING 1024

struct txc_variant {
	const char *name;
	enum tide_rs rs;
	enum tide_txfree txfree;
	unsigned flags;
};

static const struct txc_variant variants[] = {
	{"each/bucket", TIDE_RS_BUCKET, TIDE_TXFREE_EACH, 0},
	{"bulk/bucket", TIDE_RS_BUCKET, TIDE_TXFREE_BULK, 0},
	{"fast/bucket", TIDE_RS_BUCKET, TIDE_TXFREE_FAST, TIDE_TXQ_F_FAST_FREE},
	{"recycle/bucket", TIDE_RS_BUCKET, TIDE_TXFREE_RECYCLE, 0},
	{"recycle+ff/bucket", TIDE_RS_BUCKET, TIDE_TXFREE_RECYCLE, TIDE_TXQ_F_FAST_FREE},
	{"auto/bucket", TIDE_RS_BUCKET, TIDE_TXFREE_AUTO, 0},
	{"auto+ff/bucket", TIDE_RS_BUCKET, TIDE_TXFREE_AUTO, TIDE_TXQ_F_FAST_FREE},
	{"fast/every", TIDE_RS_EVERY, TIDE_TXFREE_FAST, TIDE_TXQ_F_FAST_FREE},
	{"fast/burst", TIDE_RS_BURST, TIDE_TXFREE_FAST, TIDE_TXQ_F_FAST_FREE},
};

#define NB_VARIANTS (sizeof(variants) / sizeof(variants[0]))

struct txc_setup {
	struct tide_pool *pool;
	struct tide_port *ports[2];
};

static void txc_close(struct txc_setup *s)
{
	for (int i = 0; i < 2; i++)
		tide_port_close(s->ports[i]);
	tide_pool_cache_flush(s->pool);
	if (tide_pool_in_use(s->pool) != 0)
		fprintf(stderr, "tide-bench txc: %u buffers not returned\n",
			tide_pool_in_use(s->pool));
	tide_pool_free(s->pool);
}

static int txc_open(const struct txc_variant *v, struct txc_setup *s)
{
	struct tide_txq_conf tc = {.sz = sizeof(tc), .rs = v->rs, .txfree = v->txfree,
				   .flags = v->flags};
	int rc;

	/* The forwarding thread owns a pool cache, as an lcore does: without an index every get
	 * and put would go to the pool's shared ring and the table would measure that instead. */
	rc = tide_thread_register();
	if (rc < 0)
		return rc;

	memset(s, 0, sizeof(*s));
	rc = tide_pktpool_create("txc", 8192, 256, 0, NULL, &s->pool);
	if (rc < 0)
		return rc;
	rc = tide_ports_open("simnic:ports=2,mode=inline,wire=gen,size=64", s->ports, 2);
	if (rc != 2) {
		tide_pool_free(s->pool);
		return rc < 0 ? rc : -EINVAL;
	}
	for (int i = 0; i < 2 && rc >= 0; i++) {
		rc = tide_port_configure(s->ports[i], 1, 1);
		if (rc == 0)
			rc = tide_rxq_setup(s->ports[i], 0, TXC_RING, s->pool, NULL);
		if (rc == 0)
			rc = tide_txq_setup(s->ports[i], 0, TXC_RING, &tc);
	}
	for (int i = 0; i < 2 && rc >= 0; i++)
		rc = tide_port_start(s->ports[i]);
	if (rc < 0) {
		fprintf(stderr, "tide-bench txc: %s: setup failed: %s\n", v->name, strerror(-rc));
		txc_close(s);
	}
	return rc < 0 ? rc : 0;
}

/* io forwarding 0 -> 1 and 1 -> 0 until @want packets were forwarded. */
static uint64_t txc_forward(struct txc_setup *s, uint64_t want)
{
	struct tide_rxq *rx[2] = {tide_port_rxq(s->ports[0], 0), tide_port_rxq(s->ports[1], 0)};
	struct tide_txq *tx[2] = {tide_port_txq(s->ports[1], 0), tide_port_txq(s->ports[0], 0)};
	struct tide_mbuf *pkts[TXC_BURST];
	uint64_t done = 0;

	while (done < want) {
		for (int i = 0; i < 2; i++) {
			uint16_t n = tide_rx_burst(rx[i], pkts, TXC_BURST);
			uint16_t k = tide_tx_burst(tx[i], pkts, n);

			if (k < n)
				tide_mbuf_free_bulk(pkts + k, n - k);
			done += k;
		}
	}
	return done;
}

struct txc_run_arg {
	const struct txc_variant *v;
};

static int txc_run(void *arg, unsigned ms, struct bench_sample *smp)
{
	const struct txc_variant *v = ((struct txc_run_arg *)arg)->v;
	uint64_t budget = (uint64_t)ms * 1000000ull, pkts = 0, t0, t1;
	struct txc_setup s;
	int rc = txc_open(v, &s);

	if (rc < 0)
		return rc;
	txc_forward(&s, 100000); /* warm caches and rings */
	t0 = bench_now_ns();
	do {
		pkts += txc_forward(&s, 32768);
		t1 = bench_now_ns();
	} while (t1 - t0 < budget);
	smp->ns_per_obj = (double)(t1 - t0) / (double)pkts;
	smp->mops = (double)pkts * 1e3 / (double)(t1 - t0);
	smp->checksum = pkts;
	txc_close(&s);
	return 0;
}

/* The child side of --instr: forward a fixed count with callgrind collecting. */
static int txc_instr_child(const struct txc_variant *v, uint64_t packets)
{
	struct txc_setup s;
	uint64_t done;
	int rc = txc_open(v, &s);

	if (rc < 0)
		return rc;
	txc_forward(&s, 50000);
	CALLGRIND_TOGGLE_COLLECT;
	done = txc_forward(&s, packets);
	CALLGRIND_TOGGLE_COLLECT;
	printf("forwarded %llu\n", (unsigned long long)done);
	txc_close(&s);
	return 0;
}

/* Parse a number with thousands separators. */
static double parse_commas(const char *s)
{
	char buf[64];
	unsigned n = 0;

	while (*s == ' ')
		s++;
	for (; *s && n + 1 < sizeof(buf); s++) {
		if (*s == ',')
			continue;
		if (*s < '0' || *s > '9')
			break;
		buf[n++] = *s;
	}
	buf[n] = '\0';
	return n ? strtod(buf, NULL) : -1;
}

/*
 * Run one variant under callgrind; return total and device-model instructions collected
 * and the forwarded packet count.
 */
static int txc_instr_variant(const struct txc_variant *v, uint64_t packets, double *total,
			     double *device, uint64_t *fwd)
{
	char out[256], cmd[1024], line[512], self[512];
	ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	FILE *f;
	int fd;

	snprintf(out, sizeof(out), "%s/tide-bench-cg.XXXXXX", test_tmp());
	fd = mkstemp(out);

	if (fd < 0 || sl <= 0)
		return -errno;
	close(fd);
	self[sl] = '\0';
	snprintf(cmd, sizeof(cmd),
		 "valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file=%s "
		 "'%s' txc --variant '%s' --packets %llu 2>/dev/null",
		 out, self, v->name, (unsigned long long)packets);
	f = popen(cmd, "r");
	*fwd = 0;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "forwarded %lu", (unsigned long *)fwd) == 1)
			break;
	if (f == NULL || pclose(f) != 0 || *fwd == 0) {
		fprintf(stderr, "tide-bench txc: callgrind run of %s failed (is valgrind installed?)\n",
			v->name);
		unlink(out);
		return -EIO;
	}
	*total = *device = 0;
	snprintf(cmd, sizeof(cmd), "callgrind_annotate --inclusive=yes '%s' 2>/dev/null", out);
	f = popen(cmd, "r");
	/* Inclusive cost of the two device-model entry points, first line of each only (later
	 * lines are pieces inlined elsewhere). */
	int seen_tx = 0, seen_rx = 0;
	while (f && fgets(line, sizeof(line), f)) {
		if (strstr(line, "PROGRAM TOTALS")) {
			*total = parse_commas(line);
		} else if (!seen_tx && strstr(line, ":simnic_hw_tx_step ")) {
			*device += parse_commas(line);
			seen_tx = 1;
		} else if (!seen_rx && strstr(line, ":simnic_hw_rx_step ")) {
			*device += parse_commas(line);
			seen_rx = 1;
		}
	}
	if (f)
		pclose(f);
	unlink(out);
	return *total > 0 ? 0 : -EIO;
}

/* --instr: a table of its own (the generic one speaks of ns and Mobj/s). */
static int txc_instr_all(const struct bench_opts *o)
{
	static const char *const head[] = {"variant", "instr/pkt", "device", "driver+engine"};
	struct bench_table t;
	struct bench_json j;
	FILE *jf = NULL;
	int rc = 0;

	bench_table_init(&t, 4, head, "lrrr");
	if (o->json_path) {
		jf = fopen(o->json_path, "w");
		if (jf == NULL) {
			fprintf(stderr, "tide-bench txc: %s: %s\n", o->json_path, strerror(errno));
			return -errno;
		}
		bench_json_init(&j, jf);
		bench_json_begin(&j, '[');
	}
	for (unsigned i = 0; i < NB_VARIANTS && rc == 0; i++) {
		const struct txc_variant *v = &variants[i];
		double total, device;
		uint64_t fwd;

		if (o->variant && strcmp(o->variant, v->name) != 0)
			continue;
		if (!o->quiet)
			fprintf(stderr, "tide-bench txc: callgrind %s ...\n", v->name);
		rc = txc_instr_variant(v, o->packets ? o->packets : 200000, &total, &device, &fwd);
		if (rc < 0 || bench_table_row(&t) < 0)
			break;
		bench_table_cell(&t, "%s", v->name);
		bench_table_cell(&t, "%.1f", total / (double)fwd);
		bench_table_cell(&t, "%.1f", device / (double)fwd);
		bench_table_cell(&t, "%.1f", (total - device) / (double)fwd);
		if (jf) {
			bench_json_begin(&j, '{');
			bench_json_key(&j, "variant");
			bench_json_str(&j, v->name);
			bench_json_key(&j, "packets");
			bench_json_uint(&j, fwd);
			bench_json_key(&j, "instr_per_pkt");
			bench_json_double(&j, total / (double)fwd, 1);
			bench_json_key(&j, "device_instr_per_pkt");
			bench_json_double(&j, device / (double)fwd, 1);
			bench_json_end(&j);
		}
	}
	printf("txc: io forwarding, 2 simnic ports, 1 core (inline), 64 B, burst 32, 1024 descriptors\n"
	       "instructions per forwarded packet (valgrind --tool=callgrind), deterministic\n\n");
	bench_table_print(&t, stdout);
	printf("\ndevice = the simnic model generating and sinking packets (simnic_hw_*);\n"
	       "driver+engine = everything else: bursts, Tx completion, refill, pool\n");
	bench_table_free(&t);
	if (jf) {
		bench_json_end(&j);
		fputc('\n', jf);
		fclose(jf);
	}
	return rc;
}

int bench_txc(const struct bench_opts *o, struct bench_report *rep)
{
	int found = 0, rc = 0;

	if (o->instr)
		return txc_instr_all(o);

	rep->title = "txc: io forwarding, 2 simnic ports, 1 core (inline), 64 B, burst 32, 1024 descriptors";
	rep->notes[0] = "variant = txfree/rs; +ff = fast-free contract asserted (TIDE_TXQ_F_FAST_FREE)";
	rep->notes[1] = "ns/obj = ns per forwarded packet; Mobj/s = Mpps; both include the simnic";
	rep->notes[2] = "device model's own work (the same for every variant): see --instr";
	for (unsigned i = 0; i < NB_VARIANTS && rc == 0; i++) {
		const struct txc_variant *v = &variants[i];
		struct bench_result r = {.bulk = TXC_BURST, .threads = 1};

		if (o->variant && strcmp(o->variant, v->name) != 0)
			continue;
		found = 1;
		if (o->packets)
			return txc_instr_child(v, o->packets);
		snprintf(r.bench, sizeof(r.bench), "txc");
		snprintf(r.variant, sizeof(r.variant), "%s", v->name);
		struct txc_run_arg a = {.v = v};

		rc = bench_measure(o, txc_run, &a, &r);
		if (rc == 0)
			rc = bench_report_add(rep, &r);
	}
	if (!found) {
		fprintf(stderr, "tide-bench txc: no variant named '%s'\n", o->variant);
		return -EINVAL;
	}
	return rc;
}
