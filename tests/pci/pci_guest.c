/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The guest side of the PCI suite: tide's e1000e driver on a QEMU e1000e behind the
 * emulated IOMMU, against the host's wire (tests/pci/wire.c), which it commands over a
 * serial port. Each check prints "PCITEST <name> ok" or "PCITEST <name> FAIL <why>";
 * the host script fails on any FAIL and on a missing ok.
 *
 * usage: pci_guest BDF TTY COUNT main|badmap
 *   main    open errors, exact counts and payloads both ways at 60, 1514 and 8996 bytes
 *           (64, 1518 and 9000 with the CRC), statistics, a Tx from unmapped memory
 *           refused, Rx interrupts, link down/up, stop/start/close while another thread
 *           polls, pools whole
 *   badmap  a descriptor pointing at memory the IOMMU does not map, written past the
 *           driver's check: the fault the host must see once
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
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

#include "driver.h"
#include "e1000e.h"
#include "wire_frame.h"

#define GUEST_NAME "pci_guest"
#define GUEST_PACE 256
#include "guest_lib.h"

static char bdf[32];
static unsigned count;

/*
 * One burst as long as the Tx ring, on an empty ring (rs=every, so that every slot comes
 * back): a tail equal to the head reads as an empty ring to the device, so one slot must
 * stay free; the rest of the packets go with the next burst. Nothing may be lost.
 */
static void test_tx_ring_full(struct ctx *c)
{
	struct tide_txq_conf conf = {.sz = sizeof(conf), .rs = TIDE_RS_EVERY};
	struct tide_mbuf *m[64];
	unsigned rx = 0, bad = 1, order = 1, k1 = 0, k2 = 0;
	unsigned long long bytes;
	const char *r;
	int rc;

	rc = tide_port_stop(c->p);
	if (rc == 0)
		rc = tide_txq_setup(c->p, 0, 64, &conf);
	if (rc == 0)
		rc = tide_port_start(c->p);
	c->txq = tide_port_txq(c->p, 0);
	for (unsigned i = 0; i < 64; i++)
		m[i] = frame_alloc(c->pool, 60, 15, i);
	if (rc == 0) {
		k1 = tide_tx_burst(c->txq, m, 64);
		usleep(100000);
		tide_txq_done_cleanup(c->txq, 0);
		k2 = tide_tx_burst(c->txq, m + k1, (uint16_t)(64 - k1));
	}
	tide_mbuf_free_bulk(m + k1 + k2, 64 - k1 - k2);
	ctl_send("WAIT 15 64 5000");
	r = ctl_reply(8000);
	if (r == NULL || sscanf(r, "STAT %*u rx=%u bad=%u order=%u bytes=%llu", &rx, &bad, &order,
				&bytes) != 4)
		rx = 0;
	result("tx_ring_full", rc == 0 && k1 == 63 && k2 == 1 && rx == 64 && bad == 0 && order == 0,
	       "setup %d; a burst of 64 on 64 descriptors took %u, the next %u; the wire has %u",
	       rc, k1, k2, rx);
}

/* A Tx from a pool the device has not mapped is refused and counted, never sent. */
static void test_unmapped(struct ctx *c)
{
	struct tide_pool *other;
	struct tide_port_stats st0 = {.sz = sizeof(st0)}, st1 = {.sz = sizeof(st1)};
	struct tide_mbuf *m;
	unsigned rx = 1, bad = 1, order = 1;
	unsigned long long bytes;
	const char *r;
	uint16_t k;

	if (tide_pktpool_create("unmapped", 64, 0, 2048, NULL, &other) < 0) {
		result("tx_unmapped", false, "no pool");
		return;
	}
	tide_port_stats_get(c->p, &st0);
	m = frame_alloc(other, 60, 40, 0);
	k = tide_tx_burst(c->txq, &m, 1);
	tide_txq_done_cleanup(c->txq, 0);
	tide_port_stats_get(c->p, &st1);
	ctl_send("STAT 40");
	r = ctl_reply(5000);
	if (r == NULL || sscanf(r, "STAT %*u rx=%u bad=%u order=%u bytes=%llu", &rx, &bad, &order,
				&bytes) != 4)
		rx = 1;
	result("tx_unmapped", k == 1 && st1.oerrors == st0.oerrors + 1 &&
				      st1.opackets == st0.opackets && rx == 0 && pool_whole(other),
	       "taken %u, oerrors +%llu, opackets +%llu, the wire has %u", k,
	       (unsigned long long)(st1.oerrors - st0.oerrors),
	       (unsigned long long)(st1.opackets - st0.opackets), rx);
	/* Once mapped, the same pool goes out. */
	tide_pci_dma_map(c->p, other);
	m = frame_alloc(other, 60, 41, 0);
	k = tide_tx_burst(c->txq, &m, 1);
	tide_txq_done_cleanup(c->txq, 0);
	ctl_send("STAT 41");
	r = ctl_reply(5000);
	if (r == NULL || sscanf(r, "STAT %*u rx=%u bad=%u order=%u bytes=%llu", &rx, &bad, &order,
				&bytes) != 4)
		rx = 0;
	result("tx_mapped_later", k == 1 && rx == 1 && bad == 0, "the wire has %u", rx);
	c->other = other; /* the queue may hold its buffer until close */
}

static void test_intr(struct ctx *c)
{
	int fd = tide_rxq_intr_fd(c->p, 0);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	struct tide_mbuf *m[4];
	int idle, woke;
	uint16_t k = 0;
	double t0, waited;

	if (fd < 0) {
		result("intr", false, "no fd: %d", fd);
		return;
	}
	tide_rxq_intr_enable(c->p, 0);
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
	result("intr", idle == 0 && k >= 1 && k == 1 && woke == 1 && waited < 4.0,
	       "idle poll %d (0: slept 500 ms), woke %d after %.3f s, then received %u", idle,
	       woke, waited, k);
}

static void test_link(struct ctx *c)
{
	int fd = tide_pci_link_fd(c->p), ev = tide_port_link_event_fd(c->p);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int irq_down, irq_up, intr_down, ev_down, ev_up;
	uint64_t changes0 = 0, changes1 = 0;
	bool down, up;

	tide_xstats_get_by_name(c->p, "e1000e_link_changes", &changes0);
	(void)link_event(ev); /* what came before */
	ctl_send("LINK off");
	(void)ctl_reply(5000);
	irq_down = poll(&p, 1, 3000);
	down = link_wait(c->p, 0, 3);
	ev_down = link_event(ev);
	intr_down = tide_rxq_intr_fd(c->p, 0); /* no Rx interrupt while the link is down */
	ctl_send("LINK on");
	(void)ctl_reply(5000);
	irq_up = poll(&p, 1, 5000);
	up = link_wait(c->p, 1, 5);
	ev_up = link_event(ev);
	tide_xstats_get_by_name(c->p, "e1000e_link_changes", &changes1);
	result("link", fd >= 0 && irq_down == 1 && down && intr_down == -ENOTCONN && irq_up == 1 &&
			       up && tide_rxq_intr_fd(c->p, 0) >= 0 && ev >= 0 && ev_down &&
			       ev_up && changes1 == changes0 + 2,
	       "fd %d; off: interrupt %d, down %d, Rx interrupt fd %d, link event %d; on: "
	       "interrupt %d, up %d, link event %d; link changes %llu -> %llu", fd, irq_down,
	       down, intr_down, ev_down, irq_up, up, ev_up, (unsigned long long)changes0,
	       (unsigned long long)changes1);
}

/* ---- stop/start/close while another thread polls ---- */

static void test_lifecycle(struct ctx *c)
{
	struct poller w = {0};
	unsigned n = count / 2;
	const char *r;
	bool whole, restarted;

	poller_start(&w, c);
	restarted = stop_start_cycles(c, n, &whole, &r);
	poller_stop(&w);
	/* Frames the device had written but nobody had read when a stop came are dropped
	 * with their buffers; every frame received is intact, and traffic flows after. */
	result("stop_start_polling", r != NULL && whole && restarted && w.bad == 0 && w.got > 0 &&
					     w.got <= n,
	       "pool whole at every stop %d, restarts %d, received %lu of %u while stopping "
	       "3 times, bad %lu", whole, restarted, w.got, n, w.bad);
	stop_pool_whole(c);
}

/* ---- configuration refused ---- */

static void test_bad_config(struct tide_pool *pool)
{
	struct tide_pool *tiny;
	struct tide_port *p;
	char spec[96];
	int rc1, rc2, rc3, rc4;

	snprintf(spec, sizeof(spec), "pci:%s,promisc=maybe", bdf);
	rc1 = tide_port_open(spec, &p);
	snprintf(spec, sizeof(spec), "e1000e:pci=%s,colour=blue", bdf);
	rc2 = tide_port_open(spec, &p);
	snprintf(spec, sizeof(spec), "pci:%s", bdf);
	rc3 = rc4 = -1;
	if (tide_port_open(spec, &p) == 0) {
		tide_port_configure(p, 1, 1);
		rc3 = tide_pktpool_create("tiny", 256, 0, 128, NULL, &tiny) == 0
			      ? tide_rxq_setup(p, 0, 1024, tiny, NULL)
			      : 0;
		rc4 = tide_port_configure(p, 2, 1);
		tide_port_close(p);
		tide_pool_free(tiny);
	}
	result("bad_config", rc1 == -EINVAL && rc2 == -EINVAL && rc3 == -EINVAL && rc4 == -EINVAL &&
				     pool_whole(pool),
	       "promisc=maybe %d, unknown key %d, 128-byte buffers %d, 2 Rx queues %d", rc1, rc2,
	       rc3, rc4);
}

/*
 * rx_chain=no: a frame longer than one buffer is dropped and counted (ierrors), the frames
 * that fit still arrive, and every buffer of the dropped chains is back.
 */
static void test_rx_no_chain(struct tide_pool *pool)
{
	struct ctx c = {.pool = pool};
	struct tide_mbuf *pkts[32];
	struct tide_port_stats st = {.sz = sizeof(st)};
	char spec[96];
	unsigned got_long = 0, got_short = 0;
	double end;
	int rc;

	snprintf(spec, sizeof(spec), "pci:%s,rx_chain=no", bdf);
	rc = port_up(&c, spec, 1024, 512);
	if (rc == 0 && !link_wait(c.p, 1, 5))
		rc = -ENOLINK;
	if (rc < 0) {
		result("rx_no_chain", false, "%s: %d", spec, rc);
		return;
	}
	ctl_send("RX 16 20 8996");
	(void)ctl_reply(10000);
	ctl_send("RX 17 20 1514");
	(void)ctl_reply(10000);
	end = now() + 5;
	while (got_short < 20 && now() < end) {
		uint16_t k = tide_rx_burst(c.rxq, pkts, 32);

		for (uint16_t i = 0; i < k; i++) {
			if (pkts[i]->pkt_len == 8996)
				got_long++;
			else if (pkts[i]->pkt_len == 1514)
				got_short++;
		}
		tide_mbuf_free_bulk(pkts, k);
	}
	tide_port_stats_get(c.p, &st);
	tide_port_close(c.p);
	result("rx_no_chain", got_long == 0 && got_short == 20 && st.ierrors == 20 &&
				      pool_whole(pool),
	       "8996-byte frames received %u (0 expected), 1514-byte %u of 20, ierrors %llu, "
	       "pool whole %d", got_long, got_short, (unsigned long long)st.ierrors,
	       pool_whole(pool));
}

static void run_main(void)
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
	rc = port_up(&c, spec, 1024, 512);
	result("open", rc == 0, "%s: %d", spec, rc);
	if (rc < 0)
		return;
	tide_port_info_get(c.p, &info);
	result("mac", memcmp(info.mac, wire_guest_mac, 6) == 0 && strcmp(info.driver, "e1000e") == 0,
	       "%02x:%02x:%02x:%02x:%02x:%02x driver %s", info.mac[0], info.mac[1], info.mac[2],
	       info.mac[3], info.mac[4], info.mac[5], info.driver);
	/* The 82574's largest jumbo; the MTU changes no register (LPE is always on): the
	 * 8996-byte frames below arrive at the default MTU, delivered whole. */
	result("mtu", info.max_frame == 9230 && info.max_mtu == 9212 && info.mtu == 1500 &&
			      tide_port_mtu_set(c.p, 9212) == 0 &&
			      tide_port_mtu_set(c.p, 9213) == -EINVAL &&
			      tide_port_mtu_set(c.p, 1500) == 0,
	       "max_frame %u max_mtu %u mtu %u", info.max_frame, info.max_mtu, info.mtu);
	result("link_up", link_wait(c.p, 1, 5), "");
	for (unsigned i = 0; i < 3; i++)
		test_rx(&c, (uint8_t)(1 + i), sizes[i], count);
	for (unsigned i = 0; i < 3; i++)
		test_tx(&c, (uint8_t)(11 + i), sizes[i], count);
	tide_port_stats_get(c.p, &st);
	result("stats", st.ipackets == 3ull * count && st.opackets == 3ull * count &&
				st.ierrors == 0 && st.rx_missed == 0 && st.oerrors == 0,
	       "ipackets %llu opackets %llu ierrors %llu rx_missed %llu oerrors %llu",
	       (unsigned long long)st.ipackets, (unsigned long long)st.opackets,
	       (unsigned long long)st.ierrors, (unsigned long long)st.rx_missed,
	       (unsigned long long)st.oerrors);
	{
		uint64_t gprc = 0, gptc = 0;

		tide_xstats_get_by_name(c.p, "e1000e_good_rx_packets", &gprc);
		tide_xstats_get_by_name(c.p, "e1000e_good_tx_packets", &gptc);
		result("xstats", gprc == st.ipackets && gptc == st.opackets,
		       "device counters: good rx %llu, good tx %llu", (unsigned long long)gprc,
		       (unsigned long long)gptc);
	}
	test_unmapped(&c);
	test_tx_ring_full(&c);
	test_intr(&c);
	test_link(&c);
	test_lifecycle(&c);
	rc = tide_port_start(c.p);
	tide_port_close(c.p);
	result("close_pool_whole", rc == 0 && pool_whole(c.pool) && c.other && pool_whole(c.other),
	       "avail %u of %u", tide_pool_avail(c.pool), tide_pool_size(c.pool));
	test_rx_no_chain(c.pool);
	tide_pool_free(c.pool);
	tide_pool_free(c.other);
}

/*
 * A Tx descriptor whose buffer the IOMMU does not map, written straight into the ring
 * (the driver would refuse it): the device's read must fault, nothing may be sent.
 */
static void run_badmap(void)
{
	struct ctx c = {0};
	char spec[64];
	struct e1000e_txq *q;
	static uint8_t stray[4096] __attribute__((aligned(4096)));
	unsigned rx = 1;
	const char *r;

	snprintf(spec, sizeof(spec), "pci:%s", bdf);
	if (tide_pktpool_create("badmap", 1024, 0, 2048, NULL, &c.pool) < 0 ||
	    port_up(&c, spec, 1024, 512) < 0) {
		result("badmap", false, "cannot open");
		return;
	}
	q = (struct e1000e_txq *)c.txq;
	wire_fill(stray, 60, 70, 0, wire_host_mac, wire_guest_mac);
	q->ring[0].addr = (uintptr_t)stray;
	q->ring[0].lower = 60 | E1000E_TXD_CMD_EOP | E1000E_TXD_CMD_IFCS | E1000E_TXD_CMD_RS;
	q->ring[0].upper = 0;
	/* What the IOMMU reported before this: the host counts QEMU's fault lines now. */
	ctl_send("FAULTS");
	r = ctl_reply(5000);
	printf("PCITEST iommu_quiet_before_badmap %s %s\n",
	       r && strcmp(r, "FAULTS 0") == 0 ? "ok" : "FAIL", r ? r : "no reply");
	printf("PCITEST badmap-begin\n");
	fflush(stdout);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	*q->tdt = 1;
	usleep(300000);
	ctl_send("STAT 70");
	r = ctl_reply(5000);
	if (r == NULL || sscanf(r, "STAT %*u rx=%u", &rx) != 1)
		rx = 1;
	ctl_send("FAULTS");
	r = ctl_reply(5000);
	result("badmap_fault_seen", r && strcmp(r, "FAULTS 0") != 0 && strncmp(r, "FAULTS ", 7) == 0,
	       "QEMU: %s", r ? r : "no reply");
	printf("PCITEST badmap-end\n");
	result("badmap_nothing_sent", rx == 0, "the wire has %u", rx);
	/* The engine never saw that slot: reset the doorbell view before closing. */
	q->ring[0].addr = 0;
	tide_port_close(c.p);
	result("badmap_pool_whole", pool_whole(c.pool), "");
	tide_pool_free(c.pool);
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: pci_guest BDF TTY COUNT main|badmap\n");
		return 2;
	}
	snprintf(bdf, sizeof(bdf), "%s", argv[1]);
	count = (unsigned)atoi(argv[3]);
	tty = tty_open(argv[2]);
	if (tty < 0) {
		printf("PCITEST tty FAIL %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	tide_log_set_level(TIDE_LOG_INFO);
	tide_thread_register();
	if (strcmp(argv[4], "badmap") == 0)
		run_badmap();
	else
		run_main();
	tide_thread_unregister();
	printf("PCITEST %s-done failures=%d\n", argv[4], failures);
	return failures ? 1 : 0;
}
