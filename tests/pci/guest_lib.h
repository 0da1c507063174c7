/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the PCI guest programs share (tests/pci/pci_guest.c, tests/virtio_pci/vpci_guest.c):
 * PCITEST result lines, the serial line to the host's wire (tests/pci/wire.c: one command,
 * one reply line), the test frames (wire_frame.h) in and out of mbuf chains, one queue pair
 * brought up, the Rx and Tx exchanges with the wire, the link event, and stop/start while
 * another thread polls (poller_start, stop_start_cycles, poller_stop, stop_pool_whole).
 * Static functions: include once,
 * after defining GUEST_NAME (the program's name in its messages) and GUEST_PACE (frames
 * sent before the wire is asked to have them all).
 */
#ifndef TIDE_TESTS_PCI_GUEST_LIB_H
#define TIDE_TESTS_PCI_GUEST_LIB_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <tide/pool.h>
#include <tide/port.h>

#include "wire_frame.h"

static int tty = -1;
static int failures;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void result(const char *name, bool ok, const char *fmt, ...)
{
	char why[512] = "";
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	printf("PCITEST %s %s%s%s\n", name, ok ? "ok" : "FAIL", why[0] ? " " : "", why);
	fflush(stdout);
	failures += !ok;
}

/* ---- the serial line to the wire ---- */

static void ctl_send(const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	line[n++] = '\n';
	if (write(tty, line, (size_t)n) != n)
		printf(GUEST_NAME ": serial write: %s\n", strerror(errno));
}

static char rbuf[1024];
static size_t rused;

/* A reply line if one is complete (within @ms), else NULL. */
static const char *ctl_reply(int ms)
{
	static char line[512];
	double end = now() + ms / 1000.0;

	for (;;) {
		char *nl = memchr(rbuf, '\n', rused);
		struct pollfd p = {.fd = tty, .events = POLLIN};
		ssize_t n;

		if (nl != NULL) {
			size_t k = (size_t)(nl - rbuf);

			memcpy(line, rbuf, k);
			line[k] = '\0';
			if (k && line[k - 1] == '\r')
				line[k - 1] = '\0';
			memmove(rbuf, nl + 1, rused - k - 1);
			rused -= k + 1;
			if (line[0] == '\0')
				continue;
			return line;
		}
		if (now() >= end)
			return NULL;
		if (poll(&p, 1, ms > 0 ? 1 : 0) <= 0)
			continue;
		n = read(tty, rbuf + rused, sizeof(rbuf) - rused - 1);
		if (n > 0)
			rused += (size_t)n;
	}
}

static int tty_open(const char *path)
{
	struct termios t;
	int fd = open(path, O_RDWR | O_NOCTTY);

	if (fd < 0 || tcgetattr(fd, &t) < 0)
		return -1;
	cfmakeraw(&t);
	tcsetattr(fd, TCSANOW, &t);
	return fd;
}

/* STAT/WAIT reply of the wire: frames, bad, out of order, bytes (rx = 0 when none came). */
static void stat_parse(const char *r, unsigned *rx, unsigned *bad, unsigned *order,
		       unsigned long long *bytes)
{
	if (r == NULL || sscanf(r, "STAT %*u rx=%u bad=%u order=%u bytes=%llu", rx, bad, order,
				bytes) != 4)
		*rx = 0, *bad = *order = 1, *bytes = 0;
}

/* ---- frames ---- */

static struct tide_mbuf *frame_alloc(struct tide_pool *pool, uint32_t len, uint8_t tag,
				     uint32_t seq)
{
	static uint8_t b[WIRE_MAX];
	struct tide_mbuf *head = NULL;
	uint32_t off = 0;
	unsigned room = tide_pktpool_data_room(pool);

	wire_fill(b, len, tag, seq, wire_host_mac, wire_guest_mac);
	while (off < len) {
		struct tide_mbuf *m = tide_mbuf_alloc(pool);
		uint32_t k = len - off < room ? len - off : room;

		if (m == NULL) {
			tide_mbuf_free(head);
			return NULL;
		}
		memcpy(tide_mbuf_append(m, (uint16_t)k), b + off, k);
		if (head == NULL)
			head = m;
		else
			tide_mbuf_chain(head, m);
		off += k;
	}
	return head;
}

/* Check a received packet (any chain) against the pattern; 0 and its seq when intact. */
static int frame_verify(const struct tide_mbuf *m, uint8_t tag, uint32_t len, uint32_t *seq)
{
	uint8_t hdr[WIRE_HDR];
	uint32_t i = 0;

	if (m->pkt_len != len || m->data_len < WIRE_HDR)
		return -1;
	memcpy(hdr, tide_mbuf_mtod(m, const uint8_t *), WIRE_HDR);
	if (hdr[12] != 0x88 || hdr[13] != 0xb5 || hdr[18] != tag)
		return -2;
	*seq = hdr[22] | hdr[23] << 8 | hdr[24] << 16 | (uint32_t)hdr[25] << 24;
	for (const struct tide_mbuf *s = m; s != NULL; s = s->next) {
		const uint8_t *d = tide_mbuf_mtod(s, const uint8_t *);

		for (uint32_t k = 0; k < s->data_len; k++, i++)
			if (i >= WIRE_HDR && !wire_check_byte(hdr, i, d[k]))
				return -3;
	}
	return i == len ? 0 : -4;
}

/* ---- the port ---- */

struct ctx {
	struct tide_port *p;
	struct tide_pool *pool;
	struct tide_rxq *rxq;
	struct tide_txq *txq;
	struct tide_pool *other; /* a pool mapped after setup: freed after close */
};

/* One queue pair of @rxd and @txd descriptors, started. */
static int port_up(struct ctx *c, const char *spec, unsigned rxd, unsigned txd)
{
	int rc = tide_port_open(spec, &c->p);

	if (rc < 0)
		return rc;
	if ((rc = tide_port_configure(c->p, 1, 1)) < 0 ||
	    (rc = tide_rxq_setup(c->p, 0, rxd, c->pool, NULL)) < 0 ||
	    (rc = tide_txq_setup(c->p, 0, txd, NULL)) < 0 || (rc = tide_port_start(c->p)) < 0) {
		tide_port_close(c->p);
		c->p = NULL;
		return rc;
	}
	c->rxq = tide_port_rxq(c->p, 0);
	c->txq = tide_port_txq(c->p, 0);
	return 0;
}

static bool link_wait(struct tide_port *p, int up, double secs)
{
	double end = now() + secs;
	struct tide_link l;

	do {
		tide_port_poll_ctl(p);
		if (tide_port_link_get(p, &l) == 0 && l.up == up)
			return true;
		usleep(20000);
	} while (now() < end);
	return false;
}

static bool pool_whole(struct tide_pool *pool)
{
	return tide_pool_avail(pool) == tide_pool_size(pool);
}

/* Receive @n frames of test @tag while the wire sends them. */
static void test_rx(struct ctx *c, uint8_t tag, uint32_t len, unsigned n)
{
	struct tide_mbuf *pkts[32];
	unsigned got = 0, bad = 0, order = 0;
	uint32_t next = 0;
	bool sent = false;
	double end = now() + 60;
	char name[32];

	snprintf(name, sizeof(name), "rx_%u", len);
	ctl_send("RX %u %u %u", tag, n, len);
	while (got < n && now() < end) {
		uint16_t k = tide_rx_burst(c->rxq, pkts, 32);

		for (uint16_t i = 0; i < k; i++) {
			uint32_t seq = 0;
			int rc = frame_verify(pkts[i], tag, len, &seq);

			if (rc != 0 && bad++ < 3)
				printf(GUEST_NAME ": rx %u: frame %u bad (%d, len %u, %u segs)\n", len,
				       got, rc, pkts[i]->pkt_len, pkts[i]->nb_segs);
			if (rc == 0 && seq != next)
				order++;
			next = seq + 1;
			got++;
		}
		tide_mbuf_free_bulk(pkts, k);
		if (!sent && k == 0 && ctl_reply(0) != NULL)
			sent = true;
	}
	if (!sent)
		sent = ctl_reply(5000) != NULL;
	result(name, got == n && bad == 0 && order == 0 && sent,
	       "received %u of %u, bad %u, out of order %u", got, n, bad, order);
}

/*
 * Send @n frames of test @tag; the wire must have them all, intact and in order. In
 * windows of GUEST_PACE frames, each sent once the wire has the one before: QEMU holds at most
 * a bounded queue of frames the host has not read yet and drops beyond it, so an unpaced
 * sender measures the host's reading, not the driver. GUEST_PACE: the includer's window
 * (at most its Tx ring).
 */

static void test_tx(struct ctx *c, uint8_t tag, uint32_t len, unsigned n)
{
	unsigned sent = 0, rx, bad, order;
	unsigned long long bytes;
	double end = now() + 60;
	char name[32];

	snprintf(name, sizeof(name), "tx_%u", len);
	while (sent < n && now() < end) {
		struct tide_mbuf *m = frame_alloc(c->pool, len, tag, sent);

		if (m == NULL) {
			tide_txq_done_cleanup(c->txq, 0);
			continue;
		}
		while (tide_tx_burst(c->txq, &m, 1) == 0 && now() < end)
			;
		sent++;
		if (sent % GUEST_PACE == 0 || sent == n) {
			tide_txq_done_cleanup(c->txq, 0);
			ctl_send("WAIT %u %u 10000", tag, sent - (sent % GUEST_PACE == 0 ? GUEST_PACE : 0));
			(void)ctl_reply(15000);
		}
	}
	tide_txq_done_cleanup(c->txq, 0);
	ctl_send("WAIT %u %u 10000", tag, n);
	stat_parse(ctl_reply(15000), &rx, &bad, &order, &bytes);
	result(name, sent == n && rx == n && bad == 0 && order == 0 &&
			     bytes == (unsigned long long)n * len,
	       "sent %u, the wire has %u, bad %u, out of order %u, bytes %llu", sent, rx, bad, order,
	       bytes);
}

/* 1 when the port's link event fd @fd has an event (and clears it). */
static int link_event(int fd)
{
	uint64_t n;

	return read(fd, &n, sizeof(n)) == (ssize_t)sizeof(n);
}

/* ---- stop/start while another thread polls ---- */

/* A thread receiving on c's queue pair: frames counted, those not 60-byte frames of tag 60
 * counted bad; a Tx burst of none each round (its completions). */
struct poller {
	struct ctx *c;
	pthread_t th;
	volatile bool stop;
	unsigned long got, bad;
};

static void *poll_thread(void *arg)
{
	struct poller *w = arg;
	struct tide_mbuf *pkts[32];

	tide_thread_register();
	while (!w->stop) {
		uint16_t k = tide_rx_burst(w->c->rxq, pkts, 32);

		for (uint16_t i = 0; i < k; i++) {
			uint32_t seq;

			w->bad += frame_verify(pkts[i], 60, 60, &seq) != 0;
		}
		w->got += k;
		tide_mbuf_free_bulk(pkts, k);
		tide_tx_burst(w->c->txq, pkts, 0);
	}
	tide_thread_unregister();
	return NULL;
}

static void poller_start(struct poller *w, struct ctx *c)
{
	w->c = c;
	pthread_create(&w->th, NULL, poll_thread, w);
}

static void poller_stop(struct poller *w)
{
	w->stop = true;
	pthread_join(w->th, NULL);
}

/*
 * The wire sends @n frames of tag 60 while the port stops and starts three times, 200 ms
 * apart (a poller running). True when every stop found the pool whole and every stop and
 * start returned 0; the wire's reply in *@reply (NULL: none within 60 s).
 */
static bool stop_start_cycles(struct ctx *c, unsigned n, bool *whole, const char **reply)
{
	bool restarted = true;

	*whole = true;
	ctl_send("RX 60 %u 60", n);
	for (int i = 0; i < 3; i++) {
		usleep(200000);
		if (tide_port_stop(c->p) != 0)
			restarted = false;
		*whole &= pool_whole(c->pool);
		if (tide_port_start(c->p) != 0)
			restarted = false;
	}
	*reply = ctl_reply(60000);
	usleep(500000);
	return restarted;
}

/* The port stopped: every buffer is home. */
static void stop_pool_whole(struct ctx *c)
{
	tide_port_stop(c->p);
	result("stop_pool_whole", pool_whole(c->pool), "avail %u of %u", tide_pool_avail(c->pool),
	       tide_pool_size(c->pool));
}

#endif /* TIDE_TESTS_PCI_GUEST_LIB_H */
