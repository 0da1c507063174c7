/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * corun - does this machine run two CPUs at the same time, and for what share of the time?
 *
 *   corun [SECONDS [CPU_A CPU_B]]      (default 1 s, CPUs 0 and 1)
 *
 * Two threads, one pinned to each CPU, spin for SECONDS. Each stores its own counter on
 * every round and loads the other's. A thread that sees the other's counter stand still for
 * longer than GAP_NS (far longer than a cache-line transfer or an interrupt) counts that
 * stretch as time when the other CPU was not running while it was (the other thread was
 * descheduled by the guest, or its vCPU by the host). Printed per thread: the share of its
 * own running time during which the other ran too, the number of such gaps and the longest;
 * and the steal time of both CPUs from /proc/stat over the run (host time not given to the
 * guest). Then the two threads bounce one cache line (PP_TRIPS round trips, PP_REPS times)
 * and the fastest repetition gives the line's round trip between the two CPUs: on a VM
 * whose host moves its vCPUs, the same two CPUs share a last-level cache at one time and
 * sit on different dies (or sockets) at another, and every line a memif pair moves costs
 * that much more. One JSON line on stdout; a benchmark aid, never a test.
 *
 * A memif pair on two CPUs moves packets only while both run: when one side is off its CPU
 * the other finds an empty (or full) ring, so the pair's rate is at most the co-run share
 * times the rate the two reach together.
 */

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define GAP_NS 20000 /* 20 us: no cache line takes that long; a descheduled thread does */
#define PP_TRIPS 20000 /* round trips per repetition of the line bounce */
#define PP_REPS 5

struct side {
	_Alignas(64) uint64_t count;
	_Alignas(64) const uint64_t *other;
	int cpu;
	uint64_t run_ns, alone_ns, gaps, max_gap_ns, rounds;
	int err;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static int go;
static uint64_t end_ns;

/* The stretch since the other's counter last moved ends at @t: longer than GAP_NS (less
 * the time this thread was off its own CPU) is time the other did not run while we did. */
static void close_stretch(struct side *s, uint64_t t, uint64_t *from, uint64_t *off)
{
	uint64_t len = t - *from - *off;

	if (len > GAP_NS) {
		s->alone_ns += len;
		s->gaps++;
		if (len > s->max_gap_ns)
			s->max_gap_ns = len;
	}
	*from = t;
	*off = 0;
}

static void *spin(void *arg)
{
	struct side *s = arg;
	uint64_t seen, from, off = 0, t_prev, t;

	if (pin(s->cpu) != 0) {
		s->err = 1;
		return NULL;
	}
	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		;
	from = t_prev = now_ns();
	seen = __atomic_load_n(s->other, __ATOMIC_RELAXED);
	for (;;) {
		uint64_t v, dt;

		__atomic_store_n(&s->count, s->count + 1, __ATOMIC_RELAXED);
		v = __atomic_load_n(s->other, __ATOMIC_RELAXED);
		t = now_ns();
		dt = t - t_prev;
		t_prev = t;
		s->rounds++;
		if (dt > GAP_NS)
			off += dt; /* this thread was off its CPU: not time alone */
		else
			s->run_ns += dt;
		if (v != seen) {
			seen = v;
			close_stretch(s, t, &from, &off);
		}
		if (t >= end_ns) {
			close_stretch(s, t, &from, &off);
			break;
		}
	}
	return NULL;
}

/* The bounced line: CPU A writes odd values, CPU B answers each with the next even one. */
static _Alignas(64) uint64_t pp_line;
#define PP_STOP UINT64_MAX

static void *pp_answer(void *arg)
{
	struct side *s = arg;

	if (pin(s->cpu) != 0) {
		s->err = 1;
		__atomic_store_n(&pp_line, PP_STOP, __ATOMIC_RELEASE);
		return NULL;
	}
	for (;;) {
		uint64_t v = __atomic_load_n(&pp_line, __ATOMIC_ACQUIRE);

		if (v == PP_STOP)
			return NULL;
		if (v & 1)
			__atomic_store_n(&pp_line, v + 1, __ATOMIC_RELEASE);
	}
}

/* The fastest of PP_REPS repetitions, ns per round trip (a preemption only adds time);
 * -1 when the answering thread could not be pinned. */
static double pp_round_trip(struct side *a, struct side *b)
{
	pthread_t t;
	double best = -1;
	uint64_t v = 0;

	if (pin(a->cpu) != 0 || pthread_create(&t, NULL, pp_answer, b) != 0)
		return -1;
	for (int r = 0; r < PP_REPS && !b->err; r++) {
		uint64_t t0 = now_ns();
		double ns;

		for (int i = 0; i < PP_TRIPS; i++) {
			__atomic_store_n(&pp_line, v + 1, __ATOMIC_RELEASE);
			while (__atomic_load_n(&pp_line, __ATOMIC_ACQUIRE) != v + 2)
				if (__atomic_load_n(&b->err, __ATOMIC_RELAXED))
					goto out;
			v += 2;
		}
		ns = (double)(now_ns() - t0) / PP_TRIPS;
		if (best < 0 || ns < best)
			best = ns;
	}
out:
	__atomic_store_n(&pp_line, PP_STOP, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	return b->err ? -1 : best;
}

/* Steal ticks of @cpu from /proc/stat (the 8th value of its "cpuN" line), or -1. */
static long long steal_ticks(int cpu)
{
	char name[16], line[512];
	long long v[8], r = -1;
	FILE *f = fopen("/proc/stat", "r");

	if (f == NULL)
		return -1;
	snprintf(name, sizeof(name), "cpu%d ", cpu);
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, name, strlen(name)) == 0 &&
		    sscanf(line + strlen(name), "%lld %lld %lld %lld %lld %lld %lld %lld", &v[0],
			   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8) {
			r = v[7];
			break;
		}
	fclose(f);
	return r;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	static struct side a, b;
	pthread_t ta, tb;
	long long st0[2], st1[2];
	long hz = sysconf(_SC_CLK_TCK);
	double rt;

	a.cpu = argc > 3 ? atoi(argv[2]) : 0;
	b.cpu = argc > 3 ? atoi(argv[3]) : 1;
	if (secs <= 0 || secs > 600) {
		fprintf(stderr, "corun: SECONDS must be in (0, 600]\n");
		return 2;
	}
	a.other = &b.count;
	b.other = &a.count;
	st0[0] = steal_ticks(a.cpu);
	st0[1] = steal_ticks(b.cpu);
	if (pthread_create(&ta, NULL, spin, &a) || pthread_create(&tb, NULL, spin, &b)) {
		fprintf(stderr, "corun: pthread_create failed\n");
		return 1;
	}
	end_ns = now_ns() + (uint64_t)(secs * 1e9);
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	if (a.err || b.err) {
		fprintf(stderr, "corun: cannot pin to CPUs %d and %d\n", a.cpu, b.cpu);
		return 1;
	}
	st1[0] = steal_ticks(a.cpu);
	st1[1] = steal_ticks(b.cpu);
	rt = pp_round_trip(&a, &b);
	printf("{\"secs\": %.3f, \"cpus\": [%d, %d], \"corun_pct\": [%.1f, %.1f], "
	       "\"gaps\": [%llu, %llu], \"max_gap_ms\": [%.2f, %.2f], \"ran_pct\": [%.1f, %.1f], "
	       "\"steal_pct\": [%.1f, %.1f], \"rounds\": [%llu, %llu], \"line_rt_ns\": %.1f}\n",
	       secs, a.cpu, b.cpu, a.run_ns ? 100.0 * (double)(a.run_ns - a.alone_ns) / a.run_ns : 0,
	       b.run_ns ? 100.0 * (double)(b.run_ns - b.alone_ns) / b.run_ns : 0,
	       (unsigned long long)a.gaps, (unsigned long long)b.gaps, a.max_gap_ns / 1e6,
	       b.max_gap_ns / 1e6, 100.0 * a.run_ns / (secs * 1e9), 100.0 * b.run_ns / (secs * 1e9),
	       st0[0] >= 0 && st1[0] >= 0 ? 100.0 * (st1[0] - st0[0]) / hz / secs : -1,
	       st0[1] >= 0 && st1[1] >= 0 ? 100.0 * (st1[1] - st0[1]) / hz / secs : -1,
	       (unsigned long long)a.rounds, (unsigned long long)b.rounds, rt);
	return 0;
}
