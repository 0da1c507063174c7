/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers of the memif tests: ports, packets with sequence numbers and checked payloads. */
#ifndef TIDE_TEST_MEMIF_UTIL_H
#define TIDE_TEST_MEMIF_UTIL_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <tide/memif.h>
#include <tide/port.h>

#include "sock_util.h"
#include "tmp_util.h"

#define MT_CHECK(c) SU_CHECK(c)

/* Send @len bytes on the control socket @sock with @nfds (0..4) fds as SCM_RIGHTS. */
static inline ssize_t mt_sendmsg(int sock, const void *buf, size_t len, const int *fds,
				 unsigned nfds)
{
	MT_CHECK(nfds <= 4);
	return su_sendmsg(sock, buf, len, fds, nfds);
}

static char mt_dir_[64];

static inline int mt_rm_(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	return remove(p);
}

static inline void mt_dir_cleanup_(void)
{
	if (mt_dir_[0])
		nftw(mt_dir_, mt_rm_, 8, FTW_DEPTH | FTW_PHYS);
}

/* A private directory $TMPDIR/tide-TAG-XXXXXX (tmp_util.h) in @dir, removed with what is
 * in it at exit (after a failed check too). */
static inline void mt_tmpdir(char *dir, size_t len, const char *tag)
{
	snprintf(dir, len, "%s/tide-%s-XXXXXX", test_tmp(), tag);
	MT_CHECK(mkdtemp(dir) != NULL);
	snprintf(mt_dir_, sizeof(mt_dir_), "%s", dir);
	atexit(mt_dir_cleanup_);
}

static inline double mt_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline struct tide_port *mt_port(const char *spec, unsigned nq, unsigned desc,
					struct tide_pool *pool)
{
	struct tide_port *p;

	MT_CHECK(tide_port_open(spec, &p) == 0);
	MT_CHECK(tide_port_configure(p, nq, nq) == 0);
	for (unsigned q = 0; q < nq; q++) {
		MT_CHECK(tide_rxq_setup(p, q, desc, pool, NULL) == 0);
		MT_CHECK(tide_txq_setup(p, q, desc, NULL) == 0);
	}
	MT_CHECK(tide_port_start(p) == 0);
	return p;
}

/* Poll the control planes of @a and @b until both links are up; fails after 5 s. */
static inline void mt_wait_up(struct tide_port *a, struct tide_port *b)
{
	double end = mt_now() + 5;
	struct tide_link la, lb;

	for (;;) {
		tide_port_poll_ctl(a);
		tide_port_poll_ctl(b);
		tide_port_link_get(a, &la);
		tide_port_link_get(b, &lb);
		if (la.up && lb.up)
			return;
		MT_CHECK(mt_now() < end);
	}
}

/* Poll the control plane until the link is @up or @secs pass. Returns 1 on success. */
static inline int mt_wait_link(struct tide_port *p, int up, double secs)
{
	double end = mt_now() + secs;
	struct tide_link l;

	for (;;) {
		tide_port_poll_ctl(p);
		tide_port_link_get(p, &l);
		if (l.up == up)
			return 1;
		if (mt_now() > end)
			return 0;
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
}

/*
 * After the link went down: poll @p's control plane and burst its @nq queue pairs until
 * @pool has no buffer in use, @secs at most (returns 1 on success). Copy mode: the first
 * bursts give everything back. Zero-copy: the buffers the peer had wait until it closed
 * its control socket and zc_quarantine ms more have passed.
 */
static inline int mt_wait_pool_back(struct tide_port *p, unsigned nq, struct tide_pool *pool,
				    double secs)
{
	double end = mt_now() + secs;

	for (;;) {
		struct timespec ts = {0, 1000000};

		for (unsigned q = 0; q < nq; q++) {
			struct tide_mbuf *pk[32];
			unsigned k = tide_rx_burst(tide_port_rxq(p, q), pk, 32);

			tide_mbuf_free_bulk(pk, k);
			tide_tx_burst(tide_port_txq(p, q), pk, 0);
		}
		tide_pool_cache_flush(pool);
		if (tide_pool_in_use(pool) == 0)
			return 1;
		if (mt_now() > end)
			return 0;
		nanosleep(&ts, NULL);
		tide_port_poll_ctl(p);
	}
}

static inline uint8_t mt_byte(uint32_t q, uint64_t seq, uint32_t off)
{
	return (uint8_t)(seq * 7 + off + q * 13);
}

/* A packet of @len bytes (chained when above the data room): queue, seq, pattern. */
static inline struct tide_mbuf *mt_pkt(struct tide_pool *pool, uint32_t q, uint64_t seq,
				       uint32_t len)
{
	struct tide_mbuf *head = NULL, *last = NULL;
	uint32_t off = 0;
	unsigned room = tide_pktpool_data_room(pool);

	while (off < len || head == NULL) {
		struct tide_mbuf *m = tide_mbuf_alloc(pool);
		uint32_t k = len - off < room ? len - off : room;
		uint8_t *d;

		if (m == NULL) {
			tide_mbuf_free(head);
			return NULL;
		}
		d = (uint8_t *)tide_mbuf_append(m, (uint16_t)k);
		for (uint32_t i = 0; i < k; i++)
			d[i] = mt_byte(q, seq, off + i);
		if (head == NULL) {
			head = m;
			memcpy(d, &q, 4);
			memcpy(d + 4, &seq, 8);
		} else {
			MT_CHECK(tide_mbuf_chain(head, m) == 0);
		}
		last = m;
		off += k;
	}
	(void)last;
	return head;
}

/* Check a received packet; returns its sequence number. */
static inline uint64_t mt_check_pkt(const struct tide_mbuf *m, uint32_t q, uint32_t len)
{
	static uint8_t buf[16384];
	uint32_t qq;
	uint64_t seq;

	MT_CHECK(m->pkt_len == len);
	MT_CHECK(tide_mbuf_read(m, 0, len, buf) == 0);
	memcpy(&qq, buf, 4);
	memcpy(&seq, buf + 4, 8);
	MT_CHECK(qq == q);
	for (uint32_t i = 12; i < len; i++)
		if (buf[i] != mt_byte(q, seq, i)) {
			fprintf(stderr, "payload mismatch q %u seq %llu off %u\n", q,
				(unsigned long long)seq, i);
			exit(1);
		}
	return seq;
}

#endif
