/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The guest side of the virtio-pci suite: tide's virtio driver over the PCI transport on
 * QEMU's virtio-net-pci (modern, iommu_platform=on) behind the emulated IOMMU, against the
 * host's wire (tests/pci/wire.c), which it commands over a serial port. Each check prints
 * "PCITEST <name> ok" or "PCITEST <name> FAIL <why>"; the host script fails on any FAIL and
 * on a missing ok.
 *
 * usage: vpci_guest [-p] BDF TTY COUNT [MQ_BDF]
 *   -p: every port with packed=yes, on a device that offers VIRTIO_F_RING_PACKED (QEMU:
 *   packed=on; the suite virtio_pci_packed): the same checks over packed virtqueues, the
 *   control queue's included, and the layout checked (packed_rings).
 *   Without MQ_BDF: configuration refused (two queue pairs on a one-pair device among
 *   it), the control queue's command acked at each start, MAC and queue limit from the
 *   device, exact counts and payloads both ways at 60, 1514 and 8996 bytes, statistics, a
 *   Tx from a pool the device does not reach (copied), Rx interrupts, link down/up through
 *   the config-change vector and the link event, a reset and a control command that
 *   complete late (waited for) or never (-ETIMEDOUT, and the port starts again), a queue
 *   fault (as the frontend's checks raise it) taking the device down until a restart,
 *   stop/start while another thread polls, pools whole. With MQ_BDF (a device on a
 *   two-queue tap, mqpeer.py at the other end), only two queue pairs on that device: Tx on
 *   both, exact counts at the tap, and 16 flows spread over both Rx queues,
 *   exact, each flow on one queue and in order (the suite virtio_pci_mq), with split and
 *   then packed virtqueues (mq_pairs, mq_pairs_packed: the device offers both)
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

#define GUEST_NAME "vpci_guest"
#define GUEST_PACE 128 /* half the device's queue */
#include "guest_lib.h"

static char bdf[32];
static unsigned count;
static bool packed; /* -p */

/* The port runs packed virtqueues: the features took VIRTIO_F_RING_PACKED and every
 * queue (the control queue too) has the packed layout. */
static bool rings_packed(struct tide_port *p)
{
	struct virtio_port *vp = virtio_vport(p);
	bool all = (vp->features & VIRTIO_BIT(VIRTIO_F_RING_PACKED)) &&
		   (vp->vpci->ctrl.mem == NULL || vp->vpci->ctrl.packed);

	for (unsigned i = 0; i < p->nb_rxq; i++)
		all = all && ((struct virtio_rxq *)p->rxq[i])->vq.packed;
	for (unsigned i = 0; i < p->nb_txq; i++)
		all = all && ((struct virtio_txq *)p->txq[i])->vq.packed;
	return all;
}

/* What every port spec of the run ends with. */
static const char *spec_tail(void)
{
	return packed ? ",packed=yes" : "";
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
	virtio_fault(&q->fault, &q->pub.stats.errors, "a fault raised by the test");
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

/* Stop and start three times while frames arrive and another thread polls: the device is
 * reset at each stop, every buffer comes home, and traffic resumes. */
static void test_lifecycle(struct ctx *c)
{
	struct poller w = {0};
	unsigned n = count / 2;
	unsigned long before;
	const char *r;
	bool whole, restarted;

	poller_start(&w, c);
	restarted = stop_start_cycles(c, n, &whole, &r);
	before = w.got;
	ctl_send("RX 61 10 60");
	(void)ctl_reply(10000);
	usleep(500000);
	poller_stop(&w);
	/* The frames of tag 61 count as bad for the poller's check (tag 60): exactly 10. */
	result("stop_start_polling", r != NULL && whole && restarted && w.got >= before + 10 &&
					     w.bad == 10 && before <= n,
	       "pool whole at every stop %d, restarts %d, received %lu of %u while stopping 3 "
	       "times, %lu after", whole, restarted, before, n, w.got - before);
	stop_pool_whole(c);
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

/*
 * The waits of the transport, against a device that is slow or never answers. The
 * register window is moved, not the device: with the common configuration read 16 bytes
 * lower, the status register the driver writes and reads is device_feature (read-only,
 * its low byte non-zero under DFSELECT 0, zero under DFSELECT 2): a reset that does not
 * complete until the test selects dword 2. With the notify area moved to memory of the
 * test's own, the device is never told of the control command until the test tells it.
 */
#define SLOW_S 0.1 /* how late the slow device answers */

struct slow {
	struct virtio_pci *v;
	volatile uint8_t *real;
	uint8_t *fake;
	uint32_t fake_len;
	bool done;
};

static void sleep_s(double s)
{
	struct timespec ts = {.tv_sec = (time_t)s,
			      .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};

	nanosleep(&ts, NULL);
}

/* The reset completes SLOW_S after the start began: the common window back in place, then
 * device_feature dword 2 (zero) in the status register's place. */
static void *reset_later(void *arg)
{
	struct slow *sl = arg;

	sleep_s(SLOW_S);
	__atomic_store_n(&sl->v->common, sl->real, __ATOMIC_RELEASE);
	*(volatile uint32_t *)(volatile void *)(sl->real + VPCI_DFSELECT) = 2;
	return NULL;
}

static void test_reset_waits(struct ctx *c)
{
	struct virtio_pci *v = virtio_vport(c->p)->vpci;
	volatile uint8_t *real = v->common;
	struct slow sl = {.v = v, .real = real};
	uint8_t busy;
	pthread_t th;
	double t0, stuck_s, slow_s;
	int rc_stuck, rc_after, rc_slow;

	/* Never: the start fails with -ETIMEDOUT; with the window back, it starts again. */
	tide_port_stop(c->p);
	*(volatile uint32_t *)(volatile void *)(real + VPCI_DFSELECT) = 0;
	busy = real[VPCI_DF];
	v->common = real + VPCI_DF - VPCI_STATUS;
	t0 = now();
	rc_stuck = tide_port_start(c->p);
	stuck_s = now() - t0;
	v->common = real;
	rc_after = tide_port_start(c->p);
	result(
	    "reset_stuck", busy != 0 && rc_stuck == -ETIMEDOUT && stuck_s >= 0.5 && rc_after == 0,
	    "status byte %#x; start %d after %.2f s, then %d", busy, rc_stuck, stuck_s, rc_after);
	/* Late: the start waits for it and succeeds. */
	tide_port_stop(c->p);
	*(volatile uint32_t *)(volatile void *)(real + VPCI_DFSELECT) = 0;
	v->common = real + VPCI_DF - VPCI_STATUS;
	pthread_create(&th, NULL, reset_later, &sl);
	t0 = now();
	rc_slow = tide_port_start(c->p);
	slow_s = now() - t0;
	pthread_join(th, NULL);
	v->common = real;
	result("reset_wait", rc_slow == 0 && slow_s >= SLOW_S && link_wait(c->p, 1, 5),
	       "start %d after %.2f s (the reset done at %.2f s)", rc_slow, slow_s, SLOW_S);
}

/* The control command reaches the device SLOW_S after the driver posted it. */
static void *notify_later(void *arg)
{
	struct slow *sl = arg;
	double end = now() + 5;
	volatile uint16_t *at;

	for (;;) {
		at = __atomic_load_n(&sl->v->ctrl_notify, __ATOMIC_ACQUIRE);
		if ((const volatile uint8_t *)at >= sl->fake &&
		    (const volatile uint8_t *)at < sl->fake + sl->fake_len && *at != 0)
			break;
		if (now() > end)
			return NULL;
		usleep(1000);
	}
	sleep_s(SLOW_S);
	*(volatile uint16_t *)(volatile void *)(sl->real +
						((const volatile uint8_t *)at - sl->fake)) = *at;
	__atomic_store_n(&sl->done, true, __ATOMIC_RELEASE);
	return NULL;
}

static void test_ctrl_waits(struct ctx *c)
{
	struct virtio_pci *v = virtio_vport(c->p)->vpci;
	struct slow sl = {.v = v, .real = v->notify, .fake_len = v->notify_len};
	pthread_t th;
	double t0, stuck_s, slow_s;
	int rc_stuck, rc_after, rc_slow, rc_back;

	sl.fake = calloc(1, sl.fake_len);
	if (sl.fake == NULL) {
		result("ctrl_stuck", false, "no memory");
		return;
	}
	/* Never answered: the start fails with -ETIMEDOUT; told again, it starts. */
	tide_port_stop(c->p);
	v->notify = sl.fake;
	t0 = now();
	rc_stuck = tide_port_start(c->p);
	stuck_s = now() - t0;
	v->notify = sl.real;
	rc_after = tide_port_start(c->p);
	result("ctrl_stuck",
	       rc_stuck == -ETIMEDOUT && stuck_s >= VPCI_CTRL_WAIT_MS / 1000.0 && rc_after == 0,
	       "start %d after %.2f s, then %d", rc_stuck, stuck_s, rc_after);
	/* Answered late: the start waits and succeeds (its queues' notify in the test's memory,
	 * so it restarts with the device's). */
	tide_port_stop(c->p);
	memset(sl.fake, 0, sl.fake_len);
	v->notify = sl.fake;
	pthread_create(&th, NULL, notify_later, &sl);
	t0 = now();
	rc_slow = tide_port_start(c->p);
	slow_s = now() - t0;
	pthread_join(th, NULL);
	tide_port_stop(c->p);
	v->notify = sl.real;
	rc_back = tide_port_start(c->p);
	result("ctrl_wait",
	       sl.done && rc_slow == 0 && slow_s >= SLOW_S && rc_back == 0 && link_wait(c->p, 1, 5),
	       "told the device %d; start %d after %.2f s (told at %.2f s), then %d", sl.done,
	       rc_slow, slow_s, SLOW_S, rc_back);
	free(sl.fake);
}

static void test_bad_config(struct tide_pool *pool)
{
	struct tide_port *p;
	char spec[96];
	int rc1, rc2, rc3 = -1, rc4 = -1;

	snprintf(spec, sizeof(spec), "virtio:pci=%s,queues=2%s", bdf, spec_tail());
	rc1 = tide_port_open(spec, &p);
	snprintf(spec, sizeof(spec), "pci:%s,colour=blue%s", bdf, spec_tail());
	rc2 = tide_port_open(spec, &p);
	snprintf(spec, sizeof(spec), "pci:%s%s", bdf, spec_tail());
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

/* @prior: the frames of each Tx queue the peer counted in runs before (its counts go on). */
static void test_mq(struct tide_pool *pool, const char *mqbdf, bool mq_packed, unsigned prior)
{
	const char *name = mq_packed ? "mq_pairs_packed" : "mq_pairs";
	unsigned long long features;
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

	snprintf(spec, sizeof(spec), "virtio:pci=%s,queues=2%s", mqbdf,
		 mq_packed ? ",packed=yes" : "");
	rc = tide_port_open(spec, &p);
	if (rc == 0 && ((rc = tide_port_configure(p, 2, 2)) < 0 ||
			(rc = tide_rxq_setup(p, 0, QSIZE, pool, NULL)) < 0 ||
			(rc = tide_rxq_setup(p, 1, QSIZE, pool, NULL)) < 0 ||
			(rc = tide_txq_setup(p, 0, QSIZE, NULL)) < 0 ||
			(rc = tide_txq_setup(p, 1, QSIZE, NULL)) < 0 || (rc = tide_port_start(p)) < 0))
		tide_port_close(p);
	if (rc == 0 && mq_packed && !rings_packed(p)) {
		result(name, false, "%s: features 0x%llx, not packed rings", spec,
		       (unsigned long long)virtio_vport(p)->features);
		tide_port_stop(p);
		tide_port_close(p);
		return;
	}
	if (rc < 0) {
		result(name, false, "%s: %d", spec, rc);
		return;
	}
	features = virtio_vport(p)->features;
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
	while (now() < end &&
	       (per_q[0] + per_q[1] < MQ_FLOWS * MQ_K || q0 < prior + MQ_TX || q1 < prior + MQ_TX)) {
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
		if ((q0 < prior + MQ_TX || q1 < prior + MQ_TX) && now() >= ask_at &&
		    mq_ask(pool, txq[0], 44, 0))
			ask_at = now() + 0.2;
	}
	tide_port_stop(p);
	tide_port_close(p);
	result(name,
	       sent[0] == MQ_TX && sent[1] == MQ_TX && q0 == prior + MQ_TX && q1 == prior + MQ_TX &&
		       pbad == 0 &&
		       per_q[0] + per_q[1] == MQ_FLOWS * MQ_K && per_q[0] > 0 && per_q[1] > 0 &&
		       bad == 0 && split == 0 && order == 0 && pool_whole(pool),
	       "features 0x%llx; sent %u+%u, the peer has %u+%u in all (bad %u); received %u on Rx 0 + %u on Rx 1 of %u (%u flows), other %u, flows split %u, out of order %u, pool whole %d",
	       features, sent[0], sent[1], q0, q1, pbad, per_q[0], per_q[1], MQ_FLOWS * MQ_K, MQ_FLOWS,
	       bad, split, order, pool_whole(pool));
}

static void run(void)
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
	snprintf(spec, sizeof(spec), "pci:%s%s", bdf, spec_tail());
	rc = port_up(&c, spec, QSIZE, QSIZE);
	result("open", rc == 0, "%s: %d", spec, rc);
	if (rc < 0)
		return;
	if (packed)
		result("packed_rings", rings_packed(c.p), "features 0x%llx, control queue packed %d",
		       (unsigned long long)virtio_vport(c.p)->features,
		       virtio_vport(c.p)->vpci->ctrl.packed);
	tide_port_info_get(c.p, &info);
	result("mac", memcmp(info.mac, wire_guest_mac, 6) == 0 && strcmp(info.driver, "virtio") == 0 &&
			      info.max_desc == QSIZE,
	       "%02x:%02x:%02x:%02x:%02x:%02x driver %s max_desc %u", info.mac[0], info.mac[1],
	       info.mac[2], info.mac[3], info.mac[4], info.mac[5], info.driver, info.max_desc);
	result("link_up", link_wait(c.p, 1, 5), "");
	test_ctrl(&c);
	test_reset_waits(&c);
	test_ctrl_waits(&c);
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
	tide_pool_free(c.pool);
}

static void run_mq(const char *mqbdf)
{
	struct tide_pool *pool;

	if (tide_pktpool_create("guest", 4096, 256, 2048, NULL, &pool) < 0) {
		result("pool", false, "");
		return;
	}
	test_mq(pool, mqbdf, false, 0);
	test_mq(pool, mqbdf, true, MQ_TX);
	tide_pool_free(pool);
}

int main(int argc, char **argv)
{
	struct termios t;

	if (argc > 1 && strcmp(argv[1], "-p") == 0) {
		packed = true;
		argc--;
		argv++;
	}
	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: vpci_guest [-p] BDF TTY COUNT [MQ_BDF]\n");
		return 2;
	}
	snprintf(bdf, sizeof(bdf), "%s", argv[1]);
	count = (unsigned)atoi(argv[3]);
	tty = tty_open(argv[2]);
	if (tty < 0 || tcgetattr(tty, &t) < 0) {
		printf("PCITEST tty FAIL %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	cfmakeraw(&t);
	tcsetattr(tty, TCSANOW, &t);
	tide_log_set_level(TIDE_LOG_INFO);
	tide_thread_register();
	if (argc == 5)
		run_mq(argv[4]);
	else
		run();
	tide_thread_unregister();
	printf("PCITEST main-done failures=%d\n", failures);
	return failures ? 1 : 0;
}
