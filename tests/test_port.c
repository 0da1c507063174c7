/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Port conformance: the same life cycle and accounting checks against every driver, plus
 * the configuration checks every port must make.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tide/lcore.h>
#include <tide/log.h>
#include <tide/port.h>

#include "driver.h"
#include "testutil.h"
#include "proc_util.h"
#include "tmp_util.h"

static int setup_thread(void **state)
{
	(void)state;
	return tide_thread_register() < 0;
}

/*
 * The conformance table: one row per driver (and per simnic mode). A row is a port under
 * test and, for drivers that need a partner (ring, memif, AF_XDP), a peer port in this
 * process that sends back whatever it receives. Each row runs as its own Meson test
 * (port_ROW: `test_port conformance ROW`), so a driver that is not built, or a row that needs
 * root, is a reported skip (exit 77 with the reason), never a silent pass.
 */
struct conf_row {
	const char *name;
	const char *driver;
	const char *spec; /* %1$s: scratch directory, %2$s/%3$s: veth ends, %4$d: pid,
			     %5$s: the PCI device (TIDE_TEST_PCI_BDF) */
	const char *peer; /* NULL: the port alone */
	bool root;        /* needs root (veth pairs) */
	bool shared;      /* the port's pool is TIDE_POOL_F_SHARED (memif zero-copy) */
};

static const struct conf_row conf_rows[] = {
	{"simnic_inline", "simnic", "simnic:mode=inline,wire=gen", NULL, false},
	{"simnic_thread", "simnic", "simnic:mode=thread,wire=gen,rate=2000000", NULL, false},
	{"simnic_loop", "simnic", "simnic:mode=inline,wire=loop", NULL, false},
	{"simnic_head_wb", "simnic", "simnic:mode=inline,wire=gen,wb=head", NULL, false},
	{"null", "null", "null:size=64", NULL, false},
	{"ring", "ring", "ring:name=conf%4$d", "ring:name=conf%4$d,peer=1", false},
	{"pcap", "pcap", "pcap:rx=%1$s/in.pcap,tx=%1$s/out.pcap,loop=0", NULL, false},
	{"memif_server", "memif", "memif:socket=%1$s/m.sock,role=server,id=3",
	 "memif:socket=%1$s/m.sock,role=client,id=3", false},
	{"memif_client", "memif", "memif:socket=%1$s/m.sock,role=client,id=3",
	 "memif:socket=%1$s/m.sock,role=server,id=3", false},
	{"memif_zero_copy", "memif", "memif:socket=%1$s/m.sock,role=client,id=3,zero_copy=yes,ring_size=512",
	 "memif:socket=%1$s/m.sock,role=server,id=3", false, true},
	{"afxdp", "afxdp", "afxdp:dev=%2$s,mode=native", "afxdp:dev=%3$s,mode=native", true},
	/* In the PCI suite's guest (tests/pci), whose wire sends every frame back. */
	{"e1000e", "e1000e", "pci:%5$s", NULL, false},
	/* In the virtio-pci suite's guest (tests/virtio_pci): a private pool, as any PCI port. */
	{"virtio_pci", "virtio", "virtio:pci=%5$s", NULL, false},
	{"virtio_pci_packed", "virtio", "virtio:pci=%5$s,packed=yes", NULL, false},
	{"virtio", "virtio", "virtio:path=%1$s/v.sock,role=client",
	 "vhost:socket=%1$s/v.sock,role=server", false, true},
	/* In the vhost_kernel suite's guest (tests/vhost_kernel), whose tap tvkc sends every
	 * frame back (tc mirred from its ingress to its egress). */
	{"virtio_kernel", "virtio", "virtio:path=/dev/vhost-net,iface=tvkc", NULL, false},
};

#define CONF_TARGET 3000      /* packets the port under test must receive per round */
#define CONF_DEADLINE_S 30.0  /* a hung row fails here, with its counts */

static char scratch[64];
static char veth_a[16], veth_b[16];

static bool driver_built(const char *name)
{
	return tide_driver_find(name) != NULL;
}

static void quiet(enum tide_log_level l, const char *c, const char *m, void *u)
{
	(void)l;
	(void)c;
	(void)m;
	(void)u;
}

static void row_spec(char *out, size_t len, const char *fmt)
{
	const char *bdf = getenv("TIDE_TEST_PCI_BDF");

	snprintf(out, len, fmt, scratch, veth_a, veth_b, (int)getpid(), bdf ? bdf : "");
}

static void cleanup_scratch(void)
{
	char cmd[160];

	if (veth_a[0]) {
		snprintf(cmd, sizeof(cmd), "ip link del %s 2>/dev/null", veth_a);
		if (system(cmd) != 0)
			veth_a[0] = 0; /* already gone */
	}
	if (scratch[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", scratch);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", scratch);
	}
}

static void on_signal(int sig)
{
	cleanup_scratch();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* 64 packets of 64 bytes in DIR/in.pcap, written through a pcap port. */
static int write_input_capture(void)
{
	struct tide_mbuf *pkts[64];
	struct tide_pool *pool;
	struct tide_port *p;
	char spec[128];
	int rc = -1;

	snprintf(spec, sizeof(spec), "pcap:tx=%s/in.pcap", scratch);
	if (tide_pktpool_create("cap", 128, 0, 0, NULL, &pool) < 0)
		return -1;
	if (tide_port_open(spec, &p) == 0) {
		if (tide_port_configure(p, 0, 1) == 0 && tide_txq_setup(p, 0, 64, NULL) == 0 &&
		    tide_port_start(p) == 0 && tide_mbuf_alloc_bulk(pool, pkts, 64) == 0) {
			for (unsigned j = 0; j < 64; j++)
				memset(tide_mbuf_append(pkts[j], 64), (int)j, 64);
			rc = tide_tx_burst(tide_port_txq(p, 0), pkts, 64) == 64 ? 0 : -1;
		}
		tide_port_close(p);
	}
	tide_pool_free(pool);
	return rc;
}

/* Make what a row needs; a reason string when it cannot run here (exit 77). */
static const char *row_prepare(const struct conf_row *r)
{
	char cmd[512];

	if (!driver_built(r->driver))
		return "driver not in this build";
	snprintf(scratch, sizeof(scratch), "%s/tide-port-XXXXXX", test_tmp());
	if (mkdtemp(scratch) == NULL) {
		scratch[0] = 0;
		return "cannot make a scratch directory";
	}
	atexit(cleanup_scratch);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	if (strcmp(r->driver, "e1000e") == 0 && getenv("TIDE_TEST_PCI_BDF") == NULL)
		return "needs an 82574L bound to vfio-pci and a wire that echoes (TIDE_TEST_PCI_BDF; "
		       "the pci suite runs this row in its guest)";
	if (strncmp(r->name, "virtio_pci", 10) == 0 && getenv("TIDE_TEST_PCI_BDF") == NULL)
		return "needs a virtio-net-pci (1af4:1041) bound to vfio-pci and a wire that echoes "
		       "(TIDE_TEST_PCI_BDF; the virtio_pci suite runs this row in its guest)";
	if (strcmp(r->name, "virtio_kernel") == 0 && getenv("TIDE_TEST_VKERN_TAP") == NULL)
		return "needs /dev/vhost-net and a tap tvkc that sends every frame back "
		       "(TIDE_TEST_VKERN_TAP; the vhost_kernel suite runs this row in its guest)";
	if (strcmp(r->driver, "pcap") == 0 && write_input_capture() < 0)
		return NULL; /* the row then fails at open, with the driver's message */
	if (!r->root)
		return NULL;
	if (geteuid() != 0)
		return "needs root (a veth pair)";
	snprintf(veth_a, sizeof(veth_a), "tdpa%d", (int)getpid() % 1000000);
	snprintf(veth_b, sizeof(veth_b), "tdpb%d", (int)getpid() % 1000000);
	snprintf(cmd, sizeof(cmd),
		 "ip link add %s type veth peer name %s 2>/dev/null && "
		 "sysctl -qw net.ipv6.conf.%s.disable_ipv6=1 net.ipv6.conf.%s.disable_ipv6=1 && "
		 "ethtool -K %s tso off >/dev/null 2>&1; ethtool -K %s tso off >/dev/null 2>&1; "
		 "ip link set %s up && ip link set %s up",
		 veth_a, veth_b, veth_a, veth_b, veth_a, veth_b, veth_a, veth_b);
	if (system(cmd) != 0) {
		veth_a[0] = 0;
		return "cannot create a veth pair (ip link add ... type veth)";
	}
	return NULL;
}

static const struct conf_row *row;

struct end {
	struct tide_port *p;
	struct tide_pool *pool;
	struct tide_rxq *rxq;
	struct tide_txq *txq;
};

static void end_open(struct end *e, const char *fmt, const char *pool_name, bool shared)
{
	char spec[256];

	/* AF_XDP needs power-of-two frames: 2 KiB elements, data at frame + 256. */
	struct tide_pktpool_opts umem = {.sz = sizeof(umem), .headroom = 192, .elt_pow2 = 1};
	struct tide_pktpool_opts shm = {.sz = sizeof(shm), .pool_flags = TIDE_POOL_F_SHARED};
	bool xdp = strcmp(row->driver, "afxdp") == 0;
	struct tide_port_info info = {.sz = sizeof(info)};
	unsigned nb;

	row_spec(spec, sizeof(spec), fmt);
	assert_int_equal(tide_pktpool_create(pool_name, 4096, 64, xdp ? 2048 - 64 - 192 : 0,
					     xdp ? &umem : shared ? &shm : NULL, &e->pool), 0);
	if (tide_port_open(spec, &e->p) != 0)
		fail_msg("%s: cannot open %s", row->name, spec);
	assert_int_equal(tide_port_configure(e->p, 1, 1), 0);
	/* 512 descriptors, or as many as the device takes (a virtio-net-pci queue: 256). */
	assert_int_equal(tide_port_info_get(e->p, &info), 0);
	nb = info.max_desc < 512 ? info.max_desc : 512;
	assert_int_equal(tide_rxq_setup(e->p, 0, nb, e->pool, NULL), 0);
	assert_int_equal(tide_txq_setup(e->p, 0, nb, NULL), 0);
	e->rxq = tide_port_rxq(e->p, 0);
	e->txq = tide_port_txq(e->p, 0);
}

/* Run the control planes until both ends report link up (memif handshake, veth carrier). */
static void wait_link(struct end *a, struct end *b)
{
	double end = now_s() + CONF_DEADLINE_S;
	struct tide_link la, lb = {.up = true};

	for (;;) {
		tide_port_poll_ctl(a->p);
		assert_int_equal(tide_port_link_get(a->p, &la), 0);
		if (b->p) {
			tide_port_poll_ctl(b->p);
			assert_int_equal(tide_port_link_get(b->p, &lb), 0);
		}
		if (la.up && lb.up)
			return;
		if (now_s() > end)
			fail_msg("%s: link not up after %.0f s (port %s, peer %s)", row->name,
				 CONF_DEADLINE_S, la.up ? "up" : "down", lb.up ? "up" : "down");
	}
}

/* Receive and send back what arrives on @e (the peer's echo). Drops are freed. */
static void echo(struct end *e)
{
	struct tide_mbuf *pkts[32];
	uint16_t n = tide_rx_burst(e->rxq, pkts, 32), k;

	k = tide_tx_burst(e->txq, pkts, n);
	tide_mbuf_free_bulk(pkts + k, (unsigned)(n - k));
}

/*
 * Extended statistics of a stopped port: names and values agree in number, names are
 * unique and non-empty, the generic ones equal the port's stats (received @rx, sent @tx),
 * and a name can be looked up.
 */
static void check_xstats(const char *what, struct tide_port *p, uint64_t rx, uint64_t tx)
{
	struct tide_xstat_name names[256];
	uint64_t vals[256], v;
	int n = tide_xstats_names_get(p, names, 256);

	if (n < 20 || n > 256 || tide_xstats_get(p, vals, 256) != n)
		fail_msg("%s: %d xstat names, %d values", what, n, tide_xstats_get(p, vals, 256));
	for (int i = 0; i < n; i++) {
		if (names[i].name[0] == '\0')
			fail_msg("%s: xstat %d has no name", what, i);
		for (int j = 0; j < i; j++)
			if (strcmp(names[i].name, names[j].name) == 0)
				fail_msg("%s: xstat %s twice", what, names[i].name);
		assert_int_equal(tide_xstats_get_by_name(p, names[i].name, &v), 0);
		if (v != vals[i])
			fail_msg("%s: %s by name %llu, by index %llu", what, names[i].name,
				 (unsigned long long)v, (unsigned long long)vals[i]);
	}
	if (strcmp(names[0].name, "rx_good_packets") != 0 || vals[0] != rx ||
	    strcmp(names[5].name, "tx_good_packets") != 0 || vals[5] != tx)
		fail_msg("%s: xstats %s=%llu %s=%llu, want %llu and %llu", what, names[0].name,
			 (unsigned long long)vals[0], names[5].name, (unsigned long long)vals[5],
			 (unsigned long long)rx, (unsigned long long)tx);
	assert_int_equal(tide_xstats_get_by_name(p, "rx_q0_packets", &v), 0);
	assert_int_equal(v, rx);
	assert_int_equal(tide_xstats_get_by_name(p, "no_such_counter", &v), -ENOENT);
	/* AF_XDP: the kernel's drops, by cause, add up to rx_missed. */
	if (tide_xstats_get_by_name(p, "afxdp_rx_dropped", &v) == 0) {
		uint64_t full, missed;

		assert_int_equal(tide_xstats_get_by_name(p, "afxdp_rx_ring_full", &full), 0);
		assert_int_equal(tide_xstats_get_by_name(p, "rx_missed", &missed), 0);
		if (v + full != missed)
			fail_msg("%s: afxdp_rx_dropped %llu + afxdp_rx_ring_full %llu != rx_missed %llu",
				 what, (unsigned long long)v, (unsigned long long)full,
				 (unsigned long long)missed);
	}
	assert_int_equal(tide_xstats_names_get(NULL, names, 256), -EINVAL);
}

/* open -> configure -> setup -> start -> bursts -> stop -> start again -> close. */
static void test_conformance(void **state)
{
	struct end a = {0}, b = {0};
	struct tide_port_stats st = {.sz = sizeof(st)};
	struct tide_mbuf *pkts[32];
	uint64_t rx = 0, tx = 0, tx_bytes = 0;

	(void)state;
	end_open(&a, row->spec, "conf", row->shared);
	if (row->peer)
		end_open(&b, row->peer, "peer", false);
	/* Before start: bursts are no-ops on queues that exist. */
	assert_int_equal(tide_rx_burst(a.rxq, pkts, 32), 0);
	for (int round = 0; round < 2; round++) {
		double end;

		assert_int_equal(tide_port_start(a.p), 0);
		if (b.p)
			assert_int_equal(tide_port_start(b.p), 0);
		wait_link(&a, &b);
		end = now_s() + CONF_DEADLINE_S;
		for (unsigned it = 0; rx < CONF_TARGET; it++) {
			uint16_t n, k;

			if (now_s() > end)
				fail_msg("%s round %d: %llu of %u packets received after %.0f s (sent "
					 "%llu)", row->name, round, (unsigned long long)rx, CONF_TARGET,
					 CONF_DEADLINE_S, (unsigned long long)tx);
			if ((it & 255) == 0) {
				tide_port_poll_ctl(a.p);
				if (b.p)
					tide_port_poll_ctl(b.p);
			}
			/* Inject a few fresh packets (the only source on loops and pairs), then
			 * send back whatever arrives. */
			assert_int_equal(tide_mbuf_alloc_bulk(a.pool, pkts, 4), 0);
			for (unsigned j = 0; j < 4; j++)
				memset(tide_mbuf_append(pkts[j], 64), (int)j, 64);
			k = tide_tx_burst(a.txq, pkts, 4);
			tide_mbuf_free_bulk(pkts + k, 4u - k);
			tx += k;
			tx_bytes += 64u * k;
			if (b.p)
				echo(&b);
			n = tide_rx_burst(a.rxq, pkts, 32);
			rx += n;
			for (unsigned j = 0; j < n; j++) {
				tx_bytes += pkts[j]->pkt_len;
				/* Every driver marks what it receives with its port's id. */
				if (tide_port_by_id(pkts[j]->port) != a.p)
					fail_msg("%s: received mbuf port %u, the port's id is %d",
						 row->name, pkts[j]->port, tide_port_id(a.p));
			}
			k = tide_tx_burst(a.txq, pkts, n);
			for (unsigned j = k; j < n; j++) {
				tx_bytes -= pkts[j]->pkt_len;
				tide_mbuf_free(pkts[j]);
			}
			tx += k;
		}
		assert_int_equal(tide_port_stats_get(a.p, &st), 0);
		assert_int_equal(st.ipackets, rx);
		assert_int_equal(st.opackets, tx);
		assert_int_equal(st.obytes, tx_bytes);
		assert_int_equal(st.tx_hangs, 0);
		/* Stop: bursts become no-ops, every buffer is back. */
		assert_int_equal(tide_port_stop(a.p), 0);
		assert_int_equal(tide_rx_burst(a.rxq, pkts, 32), 0);
		assert_int_equal(tide_tx_burst(a.txq, pkts, 0), 0);
		if (b.p) {
			assert_int_equal(tide_port_stop(b.p), 0);
			assert_pool_full(b.pool);
		}
		assert_pool_full(a.pool);
		/* tx_released (tide/port.h): every buffer the Tx bursts took, now let go of,
		 * whichever way (completion, copy, recycling, stop); tx_recycled a part of it. */
		assert_int_equal(tide_port_stats_get(a.p, &st), 0);
		if (st.tx_released != tx || st.tx_recycled > st.tx_released)
			fail_msg("%s round %d: after stop, tx_released %llu and tx_recycled %llu for %llu packets taken by the Tx bursts",
				 row->name, round, (unsigned long long)st.tx_released,
				 (unsigned long long)st.tx_recycled, (unsigned long long)tx);
		check_xstats(row->name, a.p, rx, tx);
		tide_xstats_reset(a.p);
		assert_int_equal(tide_port_stats_get(a.p, &st), 0);
		assert_int_equal(st.ipackets + st.opackets + st.obytes + st.ibytes, 0);
		check_xstats(row->name, a.p, 0, 0);
		rx = tx = tx_bytes = 0;
	}
	/* Close while started gives everything back too. */
	assert_int_equal(tide_port_start(a.p), 0);
	if (b.p) {
		assert_int_equal(tide_port_start(b.p), 0);
		wait_link(&a, &b);
		assert_int_equal(tide_mbuf_alloc_bulk(a.pool, pkts, 8), 0);
		for (unsigned j = 0; j < 8; j++)
			memset(tide_mbuf_append(pkts[j], 64), (int)j, 64);
		tide_mbuf_free_bulk(pkts, tide_tx_burst(a.txq, pkts, 8) ? 0 : 8);
		echo(&b);
	}
	tide_mbuf_free_bulk(pkts, tide_rx_burst(a.rxq, pkts, 8));
	tide_port_close(a.p);
	if (b.p)
		tide_port_close(b.p);
	tide_pool_cache_flush(a.pool);
	assert_pool_full(a.pool);
	tide_pool_free(a.pool);
	if (b.p) {
		tide_pool_cache_flush(b.pool);
		assert_pool_full(b.pool);
		tide_pool_free(b.pool);
	}
}

/* The configuration checks every driver gets from the port layer, refused with -EINVAL. */
static void test_conformance_bad_config(void **state)
{
	struct tide_pool *pool;
	struct tide_port *p;
	char spec[256], bad[300];

	(void)state;
	tide_log_set_handler(quiet, NULL);
	assert_int_equal(tide_pktpool_create("cbad", 1024, 0, 0, NULL, &pool), 0);
	row_spec(spec, sizeof(spec), row->spec);
	snprintf(bad, sizeof(bad), "%s,no_such_key=1", spec);
	p = NULL;
	assert_int_equal(tide_port_open(bad, &p), -EINVAL);
	assert_null(p);
	if (tide_port_open(spec, &p) != 0)
		fail_msg("%s: cannot open %s", row->name, spec);
	assert_int_equal(tide_port_start(p), -EINVAL); /* not configured */
	assert_int_equal(tide_port_configure(p, 0, 0), -EINVAL);
	assert_int_equal(tide_port_configure(p, 1000, 1000), -EINVAL);
	assert_int_equal(tide_port_configure(p, 1, 1), 0);
	assert_int_equal(tide_port_start(p), -EINVAL); /* queues not set up */
	assert_int_equal(tide_rxq_setup(p, 1, 512, pool, NULL), -EINVAL);  /* queue id */
	assert_int_equal(tide_rxq_setup(p, 0, 512, NULL, NULL), -EINVAL);  /* no pool */
	assert_int_equal(tide_rxq_setup(p, 0, 500, pool, NULL), -EINVAL);  /* not a power of 2 */
	assert_int_equal(tide_rxq_setup(p, 0, 1u << 20, pool, NULL), -EINVAL); /* too many */
	assert_int_equal(tide_txq_setup(p, 1, 512, NULL), -EINVAL);
	assert_int_equal(tide_txq_setup(p, 0, 500, NULL), -EINVAL);
	assert_null(tide_port_rxq(p, 1));
	tide_port_close(p);
	tide_log_set_handler(NULL, NULL);
	assert_pool_full(pool);
	tide_pool_free(pool);
}

/* Every bad configuration is refused with -EINVAL and changes nothing. */
static void test_bad_config(void **state)
{
	struct tide_pool *pool;
	struct tide_port *p, *ports[4];
	struct tide_txq_conf c = {.sz = sizeof(c)};

	(void)state;
	tide_log_set_handler(quiet, NULL);
	assert_int_equal(tide_pktpool_create("bad", 1024, 0, 0, NULL, &pool), 0);
	assert_int_equal(tide_port_open("nosuch:x=1", &p), -EINVAL);
	assert_int_equal(tide_port_open("simnic:bogus=1", &p), -EINVAL);
	assert_int_equal(tide_port_open("simnic:mode=fast", &p), -EINVAL);
	assert_int_equal(tide_port_open("simnic:size=10", &p), -EINVAL);
	assert_int_equal(tide_port_open("simnic:size=64,size=65", &p), -EINVAL);
	assert_int_equal(tide_port_open(":x", &p), -EINVAL);
	assert_int_equal(tide_port_open("simnic:ports=2", &p), -EINVAL); /* two ports */
	assert_int_equal(tide_ports_open("simnic:ports=2", ports, 1), -ENOSPC);
	assert_int_equal(tide_port_open("simnic:ondie=40", &p), 0);
	assert_int_equal(tide_port_configure(p, 2, 1), -EINVAL);
	assert_int_equal(tide_port_configure(p, 0, 0), -EINVAL);
	assert_int_equal(tide_port_configure(p, 1, 1), 0);
	assert_int_equal(tide_rxq_setup(p, 0, 100, pool, NULL), -EINVAL);  /* not a power of 2 */
	assert_int_equal(tide_rxq_setup(p, 0, 32, pool, NULL), -EINVAL);   /* below the range */
	assert_int_equal(tide_rxq_setup(p, 0, 8192, pool, NULL), -EINVAL); /* above the range */
	assert_int_equal(tide_rxq_setup(p, 1, 256, pool, NULL), -EINVAL);  /* queue id */
	assert_int_equal(tide_rxq_setup(p, 0, 256, NULL, NULL), -EINVAL);  /* no pool */
	c.rs_thresh = 24; /* does not divide 256 */
	assert_int_equal(tide_txq_setup(p, 0, 256, &c), -EINVAL);
	c.rs_thresh = 64;
	c.free_thresh = 32; /* rs_thresh > free_thresh */
	assert_int_equal(tide_txq_setup(p, 0, 256, &c), -EINVAL);
	c.rs_thresh = 64;
	c.free_thresh = 64; /* above ondie=40: the queue would hang */
	assert_int_equal(tide_txq_setup(p, 0, 256, &c), -EINVAL);
	c.rs_thresh = 32;
	c.free_thresh = 64; /* 32 + 64 > 64 descriptors */
	assert_int_equal(tide_txq_setup(p, 0, 64, &c), -EINVAL);
	c = (struct tide_txq_conf){.sz = sizeof(c), .txfree = TIDE_TXFREE_FAST};
	assert_int_equal(tide_txq_setup(p, 0, 256, &c), -EINVAL); /* fast without contract */
	c.rs = (enum tide_rs)7;
	c.txfree = TIDE_TXFREE_AUTO;
	assert_int_equal(tide_txq_setup(p, 0, 256, &c), -EINVAL);
	/* Nothing set up: start refuses. */
	assert_int_equal(tide_port_start(p), -EINVAL);
	assert_null(tide_port_txq(p, 0));
	tide_port_close(p);
	tide_log_set_handler(NULL, NULL);
	assert_pool_full(pool);
	tide_pool_free(pool);
}

static void test_knob_names(void **state)
{
	enum tide_rs rs;
	enum tide_txfree f;

	(void)state;
	for (int i = 0; i <= TIDE_RS_BURST; i++) {
		assert_int_equal(tide_rs_parse(tide_rs_name((enum tide_rs)i), &rs), 0);
		assert_int_equal(rs, i);
	}
	for (int i = 0; i <= TIDE_TXFREE_RECYCLE; i++) {
		assert_int_equal(tide_txfree_parse(tide_txfree_name((enum tide_txfree)i), &f), 0);
		assert_int_equal(f, i);
	}
	assert_int_equal(tide_rs_parse("sometimes", &rs), -EINVAL);
	assert_int_equal(tide_txfree_parse("never", &f), -EINVAL);
}

/*
 * A driver whose control thread runs from its start (vhost) may publish a queue's burst
 * itself before tide_port_start() returns (a frontend that negotiates packed rings at once).
 * Port start must keep that call: here the wrapped start publishes a marker call, as the
 * control thread would, while the queue's burst still holds the driver's default.
 */
static const struct tide_driver *orig_drv;
static uint16_t marker_rx(struct tide_rxq *q, struct tide_mbuf **pk, uint16_t n)
{
	(void)q, (void)pk, (void)n;
	return 0;
}
static uint16_t marker_tx(struct tide_txq *q, struct tide_mbuf **pk, uint16_t n)
{
	(void)q, (void)pk, (void)n;
	return 0;
}
static int start_publishing(struct tide_port *p)
{
	int rc = orig_drv->start(p);

	__atomic_store_n(&p->rxq[0]->call, marker_rx, __ATOMIC_RELEASE);
	__atomic_store_n(&p->txq[0]->call, marker_tx, __ATOMIC_RELEASE);
	return rc;
}

static void test_start_keeps_published_call(void **state)
{
	struct tide_driver wrap;
	struct tide_pool *pool;
	struct tide_port *p;

	(void)state;
	assert_int_equal(tide_pktpool_create("pub", 1024, 0, 0, NULL, &pool), 0);
	assert_int_equal(tide_port_open("simnic:mode=inline", &p), 0);
	assert_int_equal(tide_port_configure(p, 1, 1), 0);
	assert_int_equal(tide_rxq_setup(p, 0, 256, pool, NULL), 0);
	assert_int_equal(tide_txq_setup(p, 0, 256, NULL), 0);
	orig_drv = p->drv;
	wrap = *orig_drv;
	wrap.start = start_publishing;
	p->drv = &wrap;
	assert_int_equal(tide_port_start(p), 0);
	if (p->rxq[0]->call != marker_rx || p->txq[0]->call != marker_tx)
		fail_msg("port start replaced the bursts the driver published during its start");
	assert_int_equal(tide_port_stop(p), 0);
	assert_ptr_equal(p->rxq[0]->call, tide_rx_burst_noop); /* stopped: no-ops again */
	/* A start whose driver publishes nothing gets the driver's bursts. */
	p->drv = orig_drv;
	assert_int_equal(tide_port_start(p), 0);
	assert_ptr_equal(p->rxq[0]->call, p->rxq[0]->burst);
	assert_ptr_equal(p->txq[0]->call, p->txq[0]->burst);
	assert_int_equal(tide_port_stop(p), 0);
	tide_port_close(p);
	assert_pool_full(pool);
	tide_pool_free(pool);
}

/* Port identity: ids, lookup by id and name, iteration; a closed port's id is free again. */
static void test_identity(void **state)
{
	struct tide_port *a, *b, *n, *seen[TIDE_MAX_PORTS];
	unsigned count = 0;
	int prev = -1, id_b;

	(void)state;
	assert_null(tide_port_next(NULL)); /* nothing open between tests */
	assert_int_equal(tide_port_open("ring:name=ident", &a), 0);
	assert_int_equal(tide_port_open("ring:name=ident,peer=1", &b), 0);
	assert_int_equal(tide_port_open("null:size=64", &n), 0);
	assert_int_not_equal(tide_port_id(a), tide_port_id(b));
	for (struct tide_port *p = tide_port_next(NULL); p != NULL; p = tide_port_next(p)) {
		assert_true(tide_port_id(p) > prev); /* id order */
		assert_ptr_equal(tide_port_by_id((unsigned)tide_port_id(p)), p);
		assert_ptr_equal(tide_port_by_name(tide_port_name(p)), p);
		prev = tide_port_id(p);
		seen[count++] = p;
	}
	assert_int_equal(count, 3);
	assert_true((seen[0] == a || seen[1] == a || seen[2] == a) &&
		    (seen[0] == n || seen[1] == n || seen[2] == n));
	assert_null(tide_port_by_name("no-such-port"));
	assert_null(tide_port_by_name(NULL));
	assert_null(tide_port_by_id(TIDE_MAX_PORTS));
	id_b = tide_port_id(b);
	tide_port_close(b);
	assert_null(tide_port_by_id((unsigned)id_b));
	assert_null(tide_port_by_name("ring_ident.1"));
	assert_ptr_equal(tide_port_by_name("ring_ident.0"), a);
	count = 0;
	for (struct tide_port *p = tide_port_next(NULL); p != NULL; p = tide_port_next(p))
		count++;
	assert_int_equal(count, 2);
	tide_port_close(a);
	tide_port_close(n);
	assert_null(tide_port_next(NULL));
}

/* Link events: nothing until a change, one readable event for changes close together, the
 * same fd on every call, and a change before anybody asked is no error. */
static void test_link_events(void **state)
{
	struct tide_port *p;
	uint64_t v;
	int fd;

	(void)state;
	assert_int_equal(tide_port_open("null:size=64", &p), 0);
	tide_port_link_changed(p); /* no fd yet: nothing to signal, nothing breaks */
	fd = tide_port_link_event_fd(p);
	assert_true(fd >= 0);
	assert_int_equal(tide_port_link_event_fd(p), fd);
	assert_int_equal(read(fd, &v, sizeof(v)), -1); /* nothing happened since */
	assert_int_equal(errno, EAGAIN);
	tide_port_link_changed(p);
	tide_port_link_changed(p);
	assert_int_equal(read(fd, &v, sizeof(v)), sizeof(v));
	assert_int_equal(v, 2);
	assert_int_equal(read(fd, &v, sizeof(v)), -1);
	tide_port_close(p); /* closes the fd */
	assert_int_equal(fcntl(fd, F_GETFD), -1);
}

/* ---- tx_released over the paths that release outside the engine's slots ---- */

struct rel_end {
	struct tide_port *p;
	uint64_t taken, dropped; /* what its Tx bursts took; of those, dropped (errors) */
};

static void rel_open(struct rel_end *e, const char *spec, struct tide_pool *pool)
{
	memset(e, 0, sizeof(*e));
	if (tide_port_open(spec, &e->p) != 0)
		fail_msg("cannot open %s", spec);
	assert_int_equal(tide_port_configure(e->p, 1, 1), 0);
	assert_int_equal(tide_rxq_setup(e->p, 0, 256, pool, NULL), 0);
	assert_int_equal(tide_txq_setup(e->p, 0, 256, NULL), 0);
	assert_int_equal(tide_port_start(e->p), 0);
}

/* Send 8 packets of 64 bytes and @bad (dropped by the driver: counted in errors); drain Rx. */
static void rel_send(struct rel_end *e, struct tide_pool *pool, struct tide_mbuf *bad)
{
	struct tide_mbuf *pkts[32];
	struct tide_port_stats st = {.sz = sizeof(st)};
	uint16_t n = 8, k;

	assert_int_equal(tide_mbuf_alloc_bulk(pool, pkts, 8), 0);
	for (unsigned j = 0; j < 8; j++)
		memset(tide_mbuf_append(pkts[j], 64), (int)j, 64);
	pkts[n++] = bad;
	assert_int_equal(tide_port_stats_get(e->p, &st), 0);
	e->dropped = st.oerrors;
	k = tide_tx_burst(tide_port_txq(e->p, 0), pkts, n);
	tide_mbuf_free_bulk(pkts + k, (unsigned)(n - k));
	e->taken += k;
	assert_int_equal(tide_port_stats_get(e->p, &st), 0);
	e->dropped = st.oerrors - e->dropped;
	tide_mbuf_free_bulk(pkts, tide_rx_burst(tide_port_rxq(e->p, 0), pkts, 32));
}

/* Stopped: every buffer its Tx bursts took is counted released, the dropped one included. */
static void rel_check(struct rel_end *e, const char *what)
{
	struct tide_port_stats st = {.sz = sizeof(st)};

	assert_int_equal(tide_port_stop(e->p), 0);
	assert_int_equal(tide_port_stats_get(e->p, &st), 0);
	if (e->dropped == 0)
		fail_msg("%s: no packet was dropped (the case tests nothing)", what);
	if (st.tx_released != e->taken)
		fail_msg("%s: tx_released %llu after stop for %llu packets taken (%llu dropped)", what,
			 (unsigned long long)st.tx_released, (unsigned long long)e->taken,
			 (unsigned long long)e->dropped);
	tide_port_close(e->p);
}

static void rel_link(struct rel_end *a, struct rel_end *b)
{
	double end = now_s() + CONF_DEADLINE_S;
	struct tide_link la, lb;

	do {
		tide_port_poll_ctl(a->p);
		tide_port_poll_ctl(b->p);
		assert_int_equal(tide_port_link_get(a->p, &la), 0);
		assert_int_equal(tide_port_link_get(b->p, &lb), 0);
		if (now_s() > end)
			fail_msg("memif link not up after %.0f s", CONF_DEADLINE_S);
	} while (!la.up || !lb.up);
}

static char rel_dir[64]; /* the memif sockets' directory, removed after the test */

static int rel_teardown(void **state)
{
	char cmd[96];

	(void)state;
	if (rel_dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", rel_dir);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", rel_dir);
		rel_dir[0] = '\0';
	}
	return 0;
}

static struct tide_mbuf *rel_empty(struct tide_pool *pool)
{
	struct tide_mbuf *m;

	assert_int_equal(tide_mbuf_alloc_bulk(pool, &m, 1), 0);
	return m; /* no data: memif refuses to send it */
}

struct bench_log {
	char text[1024];
};

static void bench_log_fn(enum tide_log_level level, const char *comp, const char *msg, void *u)
{
	struct bench_log *l = u;
	size_t n = strlen(l->text);

	(void)level;
	snprintf(l->text + n, sizeof(l->text) - n, "%s: %s\n", comp, msg);
}

/*
 * The benchmark-only keys (meson option bench_variants). With the option: a bad value is
 * refused naming it. Without: any value, even a valid one, is refused naming the option. The
 * spec is refused before its socket is touched (the directory does not exist).
 */
static void test_bench_keys(void **state)
{
	static const char *const specs[][2] = {
		{"memif:socket=/nonexistent/m.sock,role=server,txfree_loop=", "txfree_loop"},
		{"vhost:socket=/nonexistent/v.sock,txfree_loop=", "txfree_loop"},
		{"vhost:socket=/nonexistent/v.sock,used_per_pkt=", "used_per_pkt"},
	};
	struct bench_log log;
	struct tide_port *p;
	char spec[160], want[160];

	(void)state;
	tide_log_set_handler(bench_log_fn, &log);
	for (unsigned i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		for (unsigned v = 0; v < 2; v++) {
			const char *val = v ? "2" : "yes";

			if (TIDE_BENCH_VARIANTS && !v)
				continue; /* valid: the tests of each driver run it */
			snprintf(spec, sizeof(spec), "%s%s", specs[i][0], val);
			if (TIDE_BENCH_VARIANTS)
				snprintf(want, sizeof(want), "%s=%s: must be one of", specs[i][1], val);
			else
				snprintf(want, sizeof(want),
					 "%s: a benchmark key, only in builds with -Dbench_variants=true",
					 specs[i][1]);
			log.text[0] = '\0';
			p = NULL;
			assert_int_equal(tide_port_open(spec, &p), -EINVAL);
			assert_null(p);
			if (strstr(log.text, want) == NULL)
				fail_msg("%s: the log does not say \"%s\":\n%s", spec, want, log.text);
		}
	}
	tide_log_set_handler(NULL, NULL);
}

/*
 * tx_released (tide/port.h) counts a buffer the Tx queue took and let go of whichever way:
 * here, packets the driver drops (simnic: a chain too long to linearize; memif: an empty
 * packet) and packets freed in a copy loop (memif txfree_loop=yes). After stop it equals
 * what the Tx bursts took. (tests/test_port.c's conformance rows check the other paths.)
 */
static void test_tx_released_paths(void **state)
{
	struct tide_pktpool_opts shm = {.sz = sizeof(shm), .pool_flags = TIDE_POOL_F_SHARED};
	struct tide_pool *pool, *zpool;
	struct tide_mbuf *a, *b;
	struct rel_end e, f;
	char spec[200], peer[200];
	uint16_t room;

	(void)state;
	assert_int_equal(tide_pktpool_create("rel", 2048, 0, 0, NULL, &pool), 0);
	/* simnic: two segments that together do not fit one buffer cannot be linearized. */
	rel_open(&e, "simnic:mode=inline,wire=gen", pool);
	assert_int_equal(tide_mbuf_alloc_bulk(pool, &a, 1), 0);
	assert_int_equal(tide_mbuf_alloc_bulk(pool, &b, 1), 0);
	room = (uint16_t)tide_pktpool_data_room(pool);
	assert_non_null(tide_mbuf_append(a, room));
	assert_non_null(tide_mbuf_append(b, room));
	assert_int_equal(tide_mbuf_chain(a, b), 0);
	rel_send(&e, pool, a);
	rel_check(&e, "simnic, a chain dropped");

	snprintf(rel_dir, sizeof(rel_dir), "%s/tide-rel-XXXXXX", test_tmp());
	if (mkdtemp(rel_dir) == NULL) {
		rel_dir[0] = '\0';
		fail_msg("cannot make a directory for the memif sockets");
	}
	/* memif copy mode: the server frees in its copy loop, the client after it. */
	snprintf(spec, sizeof(spec), "memif:socket=%s/m.sock,role=server,id=5%s", rel_dir,
		 TIDE_BENCH_VARIANTS ? ",txfree_loop=yes" : "");
	snprintf(peer, sizeof(peer), "memif:socket=%s/m.sock,role=client,id=5", rel_dir);
	rel_open(&e, spec, pool);
	rel_open(&f, peer, pool);
	rel_link(&e, &f);
	rel_send(&e, pool, rel_empty(pool));
	rel_send(&f, pool, rel_empty(pool));
	rel_check(&e, TIDE_BENCH_VARIANTS ? "memif server, txfree_loop=yes, an empty packet dropped"
					  : "memif server, an empty packet dropped");
	rel_check(&f, "memif client, an empty packet dropped");
	/* memif zero-copy client. */
	assert_int_equal(tide_pktpool_create("relz", 2048, 0, 0, &shm, &zpool), 0);
	snprintf(spec, sizeof(spec), "memif:socket=%s/m.sock,role=client,id=6,zero_copy=yes,ring_size=256", rel_dir);
	snprintf(peer, sizeof(peer), "memif:socket=%s/m.sock,role=server,id=6", rel_dir);
	rel_open(&e, spec, zpool);
	rel_open(&f, peer, pool);
	rel_link(&e, &f);
	rel_send(&e, zpool, rel_empty(zpool));
	tide_port_close(f.p);
	rel_check(&e, "memif zero-copy client, an empty packet dropped");
	tide_pool_cache_flush(pool);
	assert_pool_full(pool);
	assert_pool_full(zpool);
	tide_pool_free(zpool);
	tide_pool_free(pool);
}

/* ---- stats reset while a thread polls ---- */

#define RACE_POLLS 20000

static bool race_done;

static unsigned race_resets; /* resets the control thread has done */

static int race_poller(void *arg)
{
	struct tide_port *p = arg;
	struct tide_mbuf *pkts[4];

	/* Poll until both sides have done their share, however the threads are scheduled (an
	 * emulated CPU may run this whole loop before the control thread's first reset). */
	for (unsigned i = 0; i < RACE_POLLS || __atomic_load_n(&race_resets, __ATOMIC_RELAXED) < 100;
	     i++) {
		tide_rx_burst(tide_port_rxq(p, 0), pkts, 4);
		tide_tx_burst(tide_port_txq(p, 0), pkts, 0);
	}
	tide_thread_offline();
	__atomic_store_n(&race_done, true, __ATOMIC_RELEASE);
	return 0;
}

/*
 * tide_port_stats_reset() on the control thread while another thread polls the port: the
 * poll counters of the inline burst calls and the reset are both atomic, so the race is
 * defined (counts made at that moment may be lost). The TSan build runs this and fails on
 * a plain access; every build checks that the counters still count from zero after it.
 */
static void test_stats_reset_race(void **state)
{
	struct tide_port_stats st = {.sz = sizeof(st)};
	struct tide_lcore *lc;
	struct tide_mbuf *pkts[4];
	struct tide_pool *pool;
	struct tide_port *p;
	unsigned resets = 0;
	int ret = -1;

	(void)state;
	assert_int_equal(tide_pktpool_create("race", 1024, 0, 0, NULL, &pool), 0);
	assert_int_equal(tide_port_open("ring:name=statsrace", &p), 0);
	assert_int_equal(tide_port_configure(p, 1, 1), 0);
	assert_int_equal(tide_rxq_setup(p, 0, 256, pool, NULL), 0);
	assert_int_equal(tide_txq_setup(p, 0, 256, NULL), 0);
	assert_int_equal(tide_port_start(p), 0);
	__atomic_store_n(&race_done, false, __ATOMIC_RELAXED);
	__atomic_store_n(&race_resets, 0, __ATOMIC_RELAXED);
	assert_int_equal(tide_lcore_launch(-1, race_poller, p, &lc), 0);
	while (!__atomic_load_n(&race_done, __ATOMIC_ACQUIRE)) {
		tide_port_stats_reset(p);
		__atomic_store_n(&race_resets, ++resets, __ATOMIC_RELAXED);
	}
	assert_int_equal(tide_lcore_join(lc, &ret), 0);
	assert_int_equal(ret, 0);
	assert_true(resets >= 100);
	/* The queues are this thread's now: 3 polls each from a reset. */
	tide_port_stats_reset(p);
	for (int i = 0; i < 3; i++) {
		tide_rx_burst(tide_port_rxq(p, 0), pkts, 4);
		tide_tx_burst(tide_port_txq(p, 0), pkts, 0);
	}
	assert_int_equal(tide_port_stats_get(p, &st), 0);
	assert_int_equal(st.rx_polls, 3);
	assert_int_equal(st.rx_idle_polls, 3);
	assert_int_equal(st.tx_polls, 3);
	assert_int_equal(st.tx_idle_polls, 3);
	tide_port_close(p);
	assert_pool_full(pool);
	tide_pool_free(pool);
}

/*
 *   test_port                      the port layer's own checks
 *   test_port conformance ROW      one row of the conformance table (exit 77: cannot run)
 */
int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_config),
		cmocka_unit_test(test_knob_names),
		cmocka_unit_test(test_start_keeps_published_call),
		cmocka_unit_test(test_identity),
		cmocka_unit_test(test_link_events),
		cmocka_unit_test(test_stats_reset_race),
		cmocka_unit_test_teardown(test_tx_released_paths, rel_teardown),
		cmocka_unit_test(test_bench_keys),
	};
	const struct CMUnitTest row_tests[] = {
		cmocka_unit_test(test_conformance_bad_config),
		cmocka_unit_test(test_conformance),
	};
	const char *why;

	if (argc < 3 || strcmp(argv[1], "conformance") != 0)
		return cmocka_run_group_tests(tests, setup_thread, NULL);
	for (unsigned i = 0; i < sizeof(conf_rows) / sizeof(conf_rows[0]); i++)
		if (strcmp(conf_rows[i].name, argv[2]) == 0)
			row = &conf_rows[i];
	if (row == NULL) {
		fprintf(stderr, "test_port: no conformance row %s\n", argv[2]);
		return 1;
	}
	if (tide_thread_register() < 0)
		return 1;
	why = row_prepare(row);
	if (why != NULL) {
		fprintf(stderr, "skip: %s: %s\n", row->name, why);
		return 77;
	}
	return cmocka_run_group_tests(row_tests, NULL, NULL);
}
