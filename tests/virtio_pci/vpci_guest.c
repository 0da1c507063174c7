/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The guest side of the virtio-pci suite: tide's virtio driver over the PCI transport on
 * QEMU's virtio-net-pci (modern, iommu_platform=on) behind the emulated IOMMU, against the
 * host's wire (tests/pci/wire.c), which it commands over a serial port. Each check prints
 * "PCITEST <name> ok" or "PCITEST <name> FAIL <why>"; the host script fails on any FAIL and
 * on a missing ok.
 *
 * usage: vpci_guest BDF TTY COUNT [MQ_BDF]
 *   configuration refused (two queue pairs on a one-pair device among it), the control
 *   queue's command acked at each start, MAC and queue limit from the device, exact counts and payloads
 *   both ways at 60, 1514 and 8996 bytes, statistics, a Tx from a pool the device does not
 *   reach (copied), Rx interrupts, link down/up through the config-change vector and the
 *   link event, a queue fault (as the frontend's checks raise it) taking the device down
 *   until a restart, stop/start while another thread polls, pools whole; with MQ_BDF (a
 *   device on a two-queue tap, mqpeer.py at the other end) two queue pairs: Tx on both,
 *   exact counts at the tap, and 16 flows spread over both Rx queues, exact, each flow on one
 *   queue and in order
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <tide/log.h>
#include <tide/pci.h>
#include <tide/pool.h>
#include <tide/port.h>

#include "virtio.h"
#include "virtio_pci.h"
#include "wire_frame.h"

#define QSIZE 256 /* QEMU's virtio-net queue size: the most the device takes */

static int tty = -1;
static int failures;
static char bdf[32];
static unsigned count;

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

/* ---- the serial line to the wire: one command, one reply line ---- */

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
		printf("vpci_guest: serial write: %s\n", strerror(errno));
}

static const char *ctl_reply(int ms)
{
	static char buf[1024], line[512];
	static size_t used;
	double end = now() + ms / 1000.0;

	for (;;) {
		char *nl = memchr(buf, '\n', used);
		struct pollfd p = {.fd = tty, .events = POLLIN};
		ssize_t n;

		if (nl != NULL) {
			size_t k = (size_t)(nl - buf);

			memcpy(line, buf, k);
			line[k] = '\0';
			if (k && line[k - 1] == '\r')
				line[k - 1] = '\0';
			memmove(buf, nl + 1, used - k - 1);
			used -= k + 1;
			if (line[0] == '\0')
				continue;
			return line;
		}
		if (now() >= end)
			return NULL;
		if (poll(&p, 1, ms > 0 ? 1 : 0) <= 0)
			continue;
		n = read(tty, buf + used, sizeof(buf) - used - 1);
		if (n > 0)
			used += (size_t)n;
	}
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
	unsigned room = tide_pktpool_data_room(pool);

	wire_fill(b, len, tag, seq, wire_host_mac, wire_guest_mac);
	for (uint32_t off = 0; off < len;) {
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

/* 0 and the frame's seq when @m is an intact frame of test @tag, @len bytes. */
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
};

static int port_up(struct ctx *c, const char *spec)
{
	int rc = tide_port_open(spec, &c->p);

	if (rc < 0)
		return rc;
	if ((rc = tide_port_configure(c->p, 1, 1)) < 0 ||
	    (rc = tide_rxq_setup(c->p, 0, QSIZE, c->pool, NULL)) < 0 ||
	    (rc = tide_txq_setup(c->p, 0, QSIZE, NULL)) < 0 || (rc = tide_port_start(c->p)) < 0) {
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
				printf("vpci_guest: rx %u: frame %u bad (%d, len %u, %u segs)\n", len,
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

/* Send @n frames of test @tag, in windows the wire acknowledges (QEMU queues only a few
 * frames the host has not read). */
#define PACE 128

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
		if (sent % PACE == 0 || sent == n) {
			tide_txq_done_cleanup(c->txq, 0);
			ctl_send("WAIT %u %u 10000", tag, sent - (sent % PACE == 0 ? PACE : 0));
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

/* A pool the device has not mapped: its packet is copied into the Rx pool, never handed
 * over as it is; it arrives intact. */
static void test_tx_bounced(struct ctx *c)
{
	struct tide_pool *other;
	struct tide_mbuf *m;
	uint64_t b0 = 0, b1 = 0;
	unsigned rx, bad, order;
	unsigned long long bytes;
	uint16_t k;

	if (tide_pktpool_create("unmapped", 64, 0, 2048, NULL, &other) < 0) {
		result("tx_bounced", false, "no pool");
		return;
	}
	tide_xstats_get_by_name(c->p, "virtio_tx_bounced", &b0);
	m = frame_alloc(other, 60, 40, 0);
	k = tide_tx_burst(c->txq, &m, 1);
	tide_txq_done_cleanup(c->txq, 0);
	tide_xstats_get_by_name(c->p, "virtio_tx_bounced", &b1);
	ctl_send("WAIT 40 1 5000");
	stat_parse(ctl_reply(8000), &rx, &bad, &order, &bytes);
	result("tx_bounced", k == 1 && b1 == b0 + 1 && rx == 1 && bad == 0 && pool_whole(other),
	       "taken %u, bounced +%llu, the wire has %u (bad %u), other pool whole %d", k,
	       (unsigned long long)(b1 - b0), rx, bad, pool_whole(other));
	tide_pool_free(other);
}

/* An idle poll sleeps; one frame wakes it. */
static void test_intr(struct ctx *c)
{
	int fd = tide_rxq_intr_fd(c->p, 0);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	struct tide_mbuf *m[4];
	int idle, woke, en;
	uint16_t k;
	double t0, waited;

	if (fd < 0) {
		result("intr", false, "no fd: %d", fd);
		return;
	}
	en = tide_rxq_intr_enable(c->p, 0);
	k = tide_rx_burst(c->rxq, m, 4); /* the burst after enable, before sleeping */
	tide_mbuf_free_bulk(m, k);
	idle = poll(&p, 1, 500);
	ctl_send("RX 50 1 60");
	t0 = now();
	woke = poll(&p, 1, 5000);
	waited = now() - t0;
	tide_rxq_intr_disable(c->p, 0);
	k = 0;
	for (int i = 0; i < 100 && k == 0; i++)
		k = tide_rx_burst(c->rxq, m, 4);
	tide_mbuf_free_bulk(m, k);
	(void)ctl_reply(5000);
	/* Disabled: a frame raises nothing. */
	ctl_send("RX 51 1 60");
	(void)ctl_reply(5000);
	usleep(300000);
	idle += poll(&p, 1, 0);
	for (int i = 0; i < 100 && k < 2; i++) {
		uint16_t j = tide_rx_burst(c->rxq, m, 4);

		tide_mbuf_free_bulk(m, j);
		k += j;
	}
	result("intr", en == 0 && idle == 0 && k == 2 && woke == 1 && waited < 4.0,
	       "enable %d; idle polls %d (0: slept 500 ms, and nothing while disabled), woke %d "
	       "after %.3f s, received %u of 2", en, idle, woke, waited, k);
}

static int link_event(int fd)
{
	uint64_t n;

	return read(fd, &n, sizeof(n)) == (ssize_t)sizeof(n);
}

/* QEMU's set_link: the config-change vector fires, the link reads down, the link event
 * comes; and back up. */
static void test_link(struct ctx *c)
{
	int fd = tide_pci_link_fd(c->p), ev = tide_port_link_event_fd(c->p);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int irq_down, irq_up, intr_down, ev_down, ev_up;
	bool down, up;

	(void)link_event(ev);
	ctl_send("LINK off");
	(void)ctl_reply(5000);
	irq_down = poll(&p, 1, 3000);
	down = link_wait(c->p, 0, 3);
	ev_down = link_event(ev);
	intr_down = tide_rxq_intr_fd(c->p, 0);
	ctl_send("LINK on");
	(void)ctl_reply(5000);
	irq_up = poll(&p, 1, 5000);
	up = link_wait(c->p, 1, 5);
	ev_up = link_event(ev);
	result("link", fd >= 0 && irq_down == 1 && down && intr_down == -ENOTCONN && irq_up == 1 &&
			       up && tide_rxq_intr_fd(c->p, 0) >= 0 && ev >= 0 && ev_down && ev_up,
	       "fd %d; off: interrupt %d, down %d, Rx interrupt fd %d, link event %d; on: "
	       "interrupt %d, up %d, link event %d", fd, irq_down, down, intr_down, ev_down,
	       irq_up, up, ev_up);
}

/*
 * A fault of the Rx queue, raised as the frontend's checks raise it when the device writes
 * something it may not (QEMU's device never does): the next poll_ctl logs and counts it,
 * resets the device and reports the link down; nothing moves until the port restarts,
 * then frames flow again.
 */
static void test_fault(struct ctx *c)
{
	struct virtio_rxq *q = (struct virtio_rxq *)c->rxq;
	uint64_t f0 = 0, f1 = 0;
	struct tide_mbuf *m[4];
	struct tide_link l = {0};
	bool down, up;
	unsigned k = 0;
	int rc;

	tide_xstats_get_by_name(c->p, "virtio_faults", &f0);
	virtio_fault(&q->fs, &q->pub.stats.errors, "a fault raised by the test");
	tide_port_poll_ctl(c->p);
	tide_port_link_get(c->p, &l);
	down = l.up == 0 && tide_rx_burst(c->rxq, m, 4) == 0;
	tide_xstats_get_by_name(c->p, "virtio_faults", &f1);
	rc = tide_port_stop(c->p);
	rc = rc ? rc : tide_port_start(c->p);
	up = link_wait(c->p, 1, 5);
	ctl_send("RX 52 1 60");
	(void)ctl_reply(5000);
	for (int i = 0; i < 1000 && k == 0; i++) {
		k = tide_rx_burst(c->rxq, m, 4);
		usleep(1000);
	}
	tide_mbuf_free_bulk(m, k);
	result("fault", down && f1 == f0 + 1 && rc == 0 && up && k == 1,
	       "link down and nothing received %d, faults +%llu, restart %d, up %d, then received "
	       "%u", down, (unsigned long long)(f1 - f0), rc, up, k);
}

struct poller {
	struct ctx *c;
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

/* Stop and start three times while frames arrive and another thread polls: the device is
 * reset at each stop, every buffer comes home, and traffic resumes. */
static void test_lifecycle(struct ctx *c)
{
	struct poller w = {.c = c};
	pthread_t th;
	bool whole = true, restarted = true;
	unsigned n = count / 2;
	unsigned long before;
	const char *r;

	pthread_create(&th, NULL, poll_thread, &w);
	ctl_send("RX 60 %u 60", n);
	for (int i = 0; i < 3; i++) {
		usleep(200000);
		if (tide_port_stop(c->p) != 0)
			restarted = false;
		whole &= pool_whole(c->pool);
		if (tide_port_start(c->p) != 0)
			restarted = false;
	}
	r = ctl_reply(60000);
	usleep(500000);
	before = w.got;
	ctl_send("RX 61 10 60");
	(void)ctl_reply(10000);
	usleep(500000);
	w.stop = true;
	pthread_join(th, NULL);
	/* The frames of tag 61 count as bad for the poller's check (tag 60): exactly 10. */
	result("stop_start_polling", r != NULL && whole && restarted && w.got >= before + 10 &&
					     w.bad == 10 && before <= n,
	       "pool whole at every stop %d, restarts %d, received %lu of %u while stopping 3 "
	       "times, %lu after", whole, restarted, before, n, w.got - before);
	tide_port_stop(c->p);
	result("stop_pool_whole", pool_whole(c->pool), "avail %u of %u", tide_pool_avail(c->pool),
	       tide_pool_size(c->pool));
}

/* QEMU's mq=on on a single-queue netdev: VIRTIO_NET_F_MQ with one pair. The transport takes
 * it and its control queue; the start sent VQ_PAIRS_SET 1 and the device acked it. */
static void test_ctrl(struct ctx *c)
{
	struct virtio_port *vp = virtio_vport(c->p);
	struct virtio_pci *v = vp->vpci;
	uint64_t acked = v->ctrl.acked;
	int rc;

	tide_port_stop(c->p);
	rc = tide_port_start(c->p);
	result("mq_ctrl", rc == 0 && (vp->features & VIRTIO_BIT(VIRTIO_NET_F_MQ)) &&
				  (vp->features & VIRTIO_BIT(VIRTIO_NET_F_CTRL_VQ)) && v->max_qp == 1 &&
				  acked == 1 && v->ctrl.acked == 2 && link_wait(c->p, 1, 5),
	       "restart %d, features 0x%llx, max pairs %u, acked %llu then %llu", rc,
	       (unsigned long long)vp->features, v->max_qp, (unsigned long long)acked,
	       (unsigned long long)v->ctrl.acked);
}

static void test_bad_config(struct tide_pool *pool)
{
	struct tide_port *p;
	char spec[96];
	int rc1, rc2, rc3 = -1, rc4 = -1;

	snprintf(spec, sizeof(spec), "virtio:pci=%s,queues=2", bdf);
	rc1 = tide_port_open(spec, &p);
	snprintf(spec, sizeof(spec), "pci:%s,colour=blue", bdf);
	rc2 = tide_port_open(spec, &p);
	snprintf(spec, sizeof(spec), "pci:%s", bdf);
	if (tide_port_open(spec, &p) == 0) {
		tide_port_configure(p, 1, 1);
		rc3 = tide_rxq_setup(p, 0, 2 * QSIZE, pool, NULL); /* beyond the device's queue */
		rc4 = tide_port_configure(p, 2, 1);
		tide_port_close(p);
	}
	result("bad_config", rc1 == -EINVAL && rc2 == -EINVAL && rc3 == -EINVAL && rc4 == -EINVAL &&
				     pool_whole(pool),
	       "queues=2 %d, unknown key %d, %u descriptors %d, 2 Rx queues %d", rc1, rc2,
	       2 * QSIZE, rc3, rc4);
}

/* ---- two queue pairs: the second device, a multi-queue tap behind it (mqpeer.py) ---- */

#define MQ_TX	 200 /* frames sent on each Tx queue */
#define MQ_FLOWS 16  /* mqpeer.py's FLOWS */
#define MQ_K	 16  /* datagrams per flow: 256 in all, within each tap queue's 500 */

/* One request frame to the peer (tag 40: send the flows; 44: report), on Tx queue 0. */
static bool mq_ask(struct tide_pool *pool, struct tide_txq *txq, uint8_t tag, uint32_t seq)
{
	struct tide_mbuf *m = frame_alloc(pool, 60, tag, seq);

	if (m != NULL && tide_tx_burst(txq, &m, 1) == 1)
		return true;
	tide_mbuf_free(m);
	return false;
}

/* A datagram of mqpeer.py's flows: its flow and seq, or -1. */
static int mq_udp(const struct tide_mbuf *m, uint32_t *flow, uint32_t *seq)
{
	const uint8_t *d = tide_mbuf_mtod(m, const uint8_t *);

	if (m->data_len < 50 || d[12] != 0x08 || d[13] != 0x00 || d[23] != 17 ||
	    (d[36] << 8 | d[37]) != 2000)
		return -1;
	*flow = (uint32_t)(d[34] << 8 | d[35]) - 1000;
	memcpy(seq, d + 46, 4); /* le32 after the flow's */
	return *flow < MQ_FLOWS ? 0 : -1;
}

static void test_mq(struct tide_pool *pool, const char *mqbdf)
{
	struct tide_port *p;
	struct tide_rxq *rxq[2];
	struct tide_txq *txq[2];
	struct tide_mbuf *pkts[32];
	unsigned per_q[2] = {0, 0}, bad = 0, split = 0, order = 0, sent[2] = {0, 0};
	int flow_q[MQ_FLOWS];
	uint32_t next[MQ_FLOWS] = {0};
	unsigned q0 = 0, q1 = 0, pbad = 1;
	char spec[96], report[64] = "";
	double end, ask_at = 0;
	int rc;

	snprintf(spec, sizeof(spec), "virtio:pci=%s,queues=2", mqbdf);
	rc = tide_port_open(spec, &p);
	if (rc == 0 && ((rc = tide_port_configure(p, 2, 2)) < 0 ||
			(rc = tide_rxq_setup(p, 0, QSIZE, pool, NULL)) < 0 ||
			(rc = tide_rxq_setup(p, 1, QSIZE, pool, NULL)) < 0 ||
			(rc = tide_txq_setup(p, 0, QSIZE, NULL)) < 0 ||
			(rc = tide_txq_setup(p, 1, QSIZE, NULL)) < 0 || (rc = tide_port_start(p)) < 0))
		tide_port_close(p);
	if (rc < 0) {
		result("mq_pairs", false, "%s: %d", spec, rc);
		return;
	}
	for (unsigned q = 0; q < 2; q++) {
		rxq[q] = tide_port_rxq(p, q);
		txq[q] = tide_port_txq(p, q);
	}
	for (unsigned f = 0; f < MQ_FLOWS; f++)
		flow_q[f] = -1;
	/* Tx on both queues, in turn; the peer counts each queue's tag. */
	end = now() + 30;
	while ((sent[0] < MQ_TX || sent[1] < MQ_TX) && now() < end)
		for (unsigned q = 0; q < 2; q++) {
			struct tide_mbuf *m;

			if (sent[q] == MQ_TX)
				continue;
			m = frame_alloc(pool, 60 + 8 * (sent[q] % 16), (uint8_t)(41 + q), sent[q]);
			if (m == NULL || tide_tx_burst(txq[q], &m, 1) == 0) {
				tide_mbuf_free(m);
				tide_txq_done_cleanup(txq[q], 0);
				continue;
			}
			sent[q]++;
		}
	/* Then the flows towards us; then reports until the peer has every Tx frame. */
	(void)mq_ask(pool, txq[0], 40, MQ_K);
	end = now() + 30;
	while (now() < end && (per_q[0] + per_q[1] < MQ_FLOWS * MQ_K || q0 < MQ_TX || q1 < MQ_TX)) {
		for (unsigned q = 0; q < 2; q++) {
			uint16_t k = tide_rx_burst(rxq[q], pkts, 32);

			for (uint16_t i = 0; i < k; i++) {
				const uint8_t *d = tide_mbuf_mtod(pkts[i], const uint8_t *);
				uint32_t f, seq;

				if (pkts[i]->data_len >= 40 && d[12] == 0x88 && d[13] == 0xb5 &&
				    memcmp(d + 14, "TPCI", 4) == 0 && d[18] == 43) {
					unsigned n = pkts[i]->data_len - 30u;

					memset(report, 0, sizeof(report));
					memcpy(report, d + 30, n < sizeof(report) - 1 ? n : sizeof(report) - 1);
					if (sscanf(report, "q0=%u q1=%u bad=%u", &q0, &q1, &pbad) != 3)
						bad++;
				} else if (mq_udp(pkts[i], &f, &seq) == 0) {
					per_q[q]++;
					if (flow_q[f] < 0)
						flow_q[f] = (int)q;
					split += flow_q[f] != (int)q;
					order += seq != next[f];
					next[f] = seq + 1;
				} else {
					bad++;
				}
			}
			tide_mbuf_free_bulk(pkts, k);
			tide_txq_done_cleanup(txq[q], 0);
		}
		if ((q0 < MQ_TX || q1 < MQ_TX) && now() >= ask_at && mq_ask(pool, txq[0], 44, 0))
			ask_at = now() + 0.2;
	}
	tide_port_stop(p);
	tide_port_close(p);
	result("mq_pairs",
	       sent[0] == MQ_TX && sent[1] == MQ_TX && q0 == MQ_TX && q1 == MQ_TX && pbad == 0 &&
		       per_q[0] + per_q[1] == MQ_FLOWS * MQ_K && per_q[0] > 0 && per_q[1] > 0 &&
		       bad == 0 && split == 0 && order == 0 && pool_whole(pool),
	       "sent %u+%u, the peer has %u+%u (bad %u); received %u on Rx 0 + %u on Rx 1 of %u (%u flows), other %u, flows split %u, out of order %u, pool whole %d",
	       sent[0], sent[1], q0, q1, pbad, per_q[0], per_q[1], MQ_FLOWS * MQ_K, MQ_FLOWS,
	       bad, split, order, pool_whole(pool));
}

static void run(const char *mqbdf)
{
	static const uint32_t sizes[] = {60, 1514, 8996};
	struct ctx c = {0};
	struct tide_port_stats st = {.sz = sizeof(st)};
	struct tide_port_info info = {.sz = sizeof(info)};
	char spec[64];
	int rc;

	if (tide_pktpool_create("guest", 4096, 256, 2048, NULL, &c.pool) < 0) {
		result("pool", false, "");
		return;
	}
	test_bad_config(c.pool);
	snprintf(spec, sizeof(spec), "pci:%s", bdf);
	rc = port_up(&c, spec);
	result("open", rc == 0, "%s: %d", spec, rc);
	if (rc < 0)
		return;
	tide_port_info_get(c.p, &info);
	result("mac", memcmp(info.mac, wire_guest_mac, 6) == 0 && strcmp(info.driver, "virtio") == 0 &&
			      info.max_desc == QSIZE,
	       "%02x:%02x:%02x:%02x:%02x:%02x driver %s max_desc %u", info.mac[0], info.mac[1],
	       info.mac[2], info.mac[3], info.mac[4], info.mac[5], info.driver, info.max_desc);
	result("link_up", link_wait(c.p, 1, 5), "");
	test_ctrl(&c);
	for (unsigned i = 0; i < 3; i++)
		test_rx(&c, (uint8_t)(1 + i), sizes[i], count);
	for (unsigned i = 0; i < 3; i++)
		test_tx(&c, (uint8_t)(11 + i), sizes[i], count);
	tide_port_stats_get(c.p, &st);
	result("stats", st.ipackets == 3ull * count && st.opackets == 3ull * count &&
				st.ierrors == 0 && st.oerrors == 0,
	       "ipackets %llu opackets %llu ierrors %llu oerrors %llu",
	       (unsigned long long)st.ipackets, (unsigned long long)st.opackets,
	       (unsigned long long)st.ierrors, (unsigned long long)st.oerrors);
	test_tx_bounced(&c);
	test_intr(&c);
	test_link(&c);
	test_fault(&c);
	test_lifecycle(&c);
	rc = tide_port_start(c.p);
	tide_port_close(c.p);
	result("close_pool_whole", rc == 0 && pool_whole(c.pool), "avail %u of %u",
	       tide_pool_avail(c.pool), tide_pool_size(c.pool));
	if (mqbdf != NULL)
		test_mq(c.pool, mqbdf);
	tide_pool_free(c.pool);
}

int main(int argc, char **argv)
{
	struct termios t;

	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: vpci_guest BDF TTY COUNT [MQ_BDF]\n");
		return 2;
	}
	snprintf(bdf, sizeof(bdf), "%s", argv[1]);
	count = (unsigned)atoi(argv[3]);
	tty = open(argv[2], O_RDWR | O_NOCTTY);
	if (tty < 0 || tcgetattr(tty, &t) < 0) {
		printf("PCITEST tty FAIL %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	cfmakeraw(&t);
	tcsetattr(tty, TCSANOW, &t);
	tide_log_set_level(TIDE_LOG_INFO);
	tide_thread_register();
	run(argc == 5 ? argv[4] : NULL);
	tide_thread_unregister();
	printf("PCITEST main-done failures=%d\n", failures);
	return failures ? 1 : 0;
}
