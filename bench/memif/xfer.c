/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * xfer - the floor of a cross-CPU copy pair: what memif's data movement costs with no
 * driver, no mbufs, no checks.
 *
 *   xfer SIZE [SECONDS [CPU_P CPU_C]]     (default 2 s, CPUs 0 and 1)
 *
 * A producer thread copies SIZE-byte frames from its own buffers (1024 x 2176 bytes, like a
 * pool's mbufs) into a ring of 1024 slots of 2048 bytes, 32 per burst, and publishes a head
 * index once per burst (release); a consumer thread on the other CPU waits for head
 * (acquire), copies each frame out into its own buffers, checks one byte, and publishes a
 * tail index once per burst. The same geometry and the same lines cross from CPU to CPU as
 * in a memif copy-mode pair (frame data, one index line each way per burst; memif adds 16
 * bytes of descriptor per frame). Printed: frames per second and the consumer's and
 * producer's share of polls that found nothing to do (empty / full ring). One JSON line.
 * A benchmark aid, never a test.
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLOTS 1024
#define SLOT_BYTES 2048
#define BUF_BYTES 2176
#define BURST 32

static struct {
	_Alignas(64) uint32_t head;
	_Alignas(64) uint32_t tail;
	_Alignas(64) int stop;
} ix;

static uint8_t *ring;
static unsigned size;

struct side {
	int cpu, err;
	uint64_t frames, polls, idle, bad;
	uint8_t *bufs;
};

static void pin(struct side *s)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(s->cpu, &set);
	s->err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0;
}

static void *producer(void *arg)
{
	struct side *s = arg;
	uint32_t head = 0;

	pin(s);
	while (!__atomic_load_n(&ix.stop, __ATOMIC_RELAXED)) {
		uint32_t tail = __atomic_load_n(&ix.tail, __ATOMIC_ACQUIRE);

		s->polls++;
		if (SLOTS - (head - tail) < BURST) {
			s->idle++;
			continue;
		}
		for (unsigned i = 0; i < BURST; i++, head++) {
			uint8_t *src = s->bufs + (size_t)(head % SLOTS) * BUF_BYTES + 128;

			src[0] = (uint8_t)head;
			memcpy(ring + (size_t)(head % SLOTS) * SLOT_BYTES, src, size);
		}
		__atomic_store_n(&ix.head, head, __ATOMIC_RELEASE);
		s->frames += BURST;
	}
	return NULL;
}

static void *consumer(void *arg)
{
	struct side *s = arg;
	uint32_t tail = 0;

	pin(s);
	while (!__atomic_load_n(&ix.stop, __ATOMIC_RELAXED)) {
		uint32_t head = __atomic_load_n(&ix.head, __ATOMIC_ACQUIRE);

		s->polls++;
		if (head == tail) {
			s->idle++;
			continue;
		}
		for (unsigned i = 0; i < BURST && tail != head; i++, tail++) {
			uint8_t *dst = s->bufs + (size_t)(tail % SLOTS) * BUF_BYTES + 128;

			memcpy(dst, ring + (size_t)(tail % SLOTS) * SLOT_BYTES, size);
			s->bad += dst[0] != (uint8_t)tail;
			s->frames++;
		}
		__atomic_store_n(&ix.tail, tail, __ATOMIC_RELEASE);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double secs = argc > 2 ? atof(argv[2]) : 2.0;
	struct side p = {.cpu = argc > 4 ? atoi(argv[3]) : 0};
	struct side c = {.cpu = argc > 4 ? atoi(argv[4]) : 1};
	struct timespec ts = {.tv_sec = (time_t)secs,
			      .tv_nsec = (long)((secs - (double)(time_t)secs) * 1e9)};
	pthread_t tp, tc;

	size = argc > 1 ? (unsigned)atoi(argv[1]) : 0;
	if (size < 1 || size > SLOT_BYTES || secs <= 0 || secs > 600) {
		fprintf(stderr, "usage: xfer SIZE(1..%d) [SECONDS(0..600] [CPU_P CPU_C]]\n",
			SLOT_BYTES);
		return 2;
	}
	ring = aligned_alloc(64, (size_t)SLOTS * SLOT_BYTES);
	p.bufs = aligned_alloc(64, (size_t)SLOTS * BUF_BYTES);
	c.bufs = aligned_alloc(64, (size_t)SLOTS * BUF_BYTES);
	if (ring == NULL || p.bufs == NULL || c.bufs == NULL) {
		fprintf(stderr, "xfer: out of memory\n");
		return 1;
	}
	memset(ring, 0, (size_t)SLOTS * SLOT_BYTES);
	memset(p.bufs, 0x5a, (size_t)SLOTS * BUF_BYTES);
	memset(c.bufs, 0, (size_t)SLOTS * BUF_BYTES);
	if (pthread_create(&tc, NULL, consumer, &c) || pthread_create(&tp, NULL, producer, &p)) {
		fprintf(stderr, "xfer: pthread_create failed\n");
		return 1;
	}
	nanosleep(&ts, NULL);
	__atomic_store_n(&ix.stop, 1, __ATOMIC_RELAXED);
	pthread_join(tp, NULL);
	pthread_join(tc, NULL);
	if (p.err || c.err || c.bad) {
		fprintf(stderr, "xfer: %s\n", c.bad ? "a frame arrived changed" : "cannot pin");
		return 1;
	}
	printf("{\"size\": %u, \"secs\": %.2f, \"mpps\": %.3f, \"idle_pct_p_c\": [%.1f, %.1f]}\n",
	       size, secs, c.frames / secs / 1e6, p.polls ? 100.0 * p.idle / p.polls : 0,
	       c.polls ? 100.0 * c.idle / c.polls : 0);
	free(ring);
	free(p.bufs);
	free(c.bufs);
	return 0;
}
