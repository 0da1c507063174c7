/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * AF_XDP driver on veth pairs (run through tests/afxdp/netns-env, which makes and removes the
 * namespace and the veths). The far ends live in the namespace; this test reaches them with
 * AF_PACKET sockets opened by a thread that entered the namespace. Rates are low and bounded:
 * counts and payloads are checked, never throughput.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <tide/afxdp.h>
#include <tide/log.h>
#include <tide/port.h>

#include "testutil.h"

#define ETHERTYPE_TDX 0x88b5
#define MAGIC 0x74647801u
#define NPKT 2000

static const char *ns, *dev_a, *peer_a, *dev_b, *peer_b;

/* ---- a kernel that refuses Tx kicks ----
 * With kick_refuse > 0, that many Tx kicks (sendto with no data: the driver's only sendto)
 * fail with EAGAIN without reaching the kernel and send nothing, as when the device's queue
 * is stopped (NETDEV_TX_BUSY); kick_calls counts every kick. */

static int kick_refuse;
static unsigned kick_calls;

ssize_t sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to,
	       socklen_t tolen)
{
	if (buf == NULL && len == 0) {
		kick_calls++;
		if (kick_refuse > 0) {
			kick_refuse--;
			errno = EAGAIN;
			return -1;
		}
	}
	return (ssize_t)syscall(SYS_sendto, fd, buf, len, flags, to, tolen);
}

/* ---- a kernel that refuses busy polling ----
 * The driver is linked into this program, so its setsockopt() calls land here. With
 * refuse_budget_after >= 0, SO_BUSY_POLL_BUDGET succeeds that many times and then fails
 * with ENOPROTOOPT, as on a kernel before 5.11; everything else goes to the kernel. */

static int refuse_budget_after = -1;
static int budget_fd = -1, budget_val = -1; /* the last SO_BUSY_POLL_BUDGET set (the kernel
					     * does not report it) */

int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	if (level == SOL_SOCKET && name == SO_BUSY_POLL_BUDGET && refuse_budget_after >= 0 &&
	    refuse_budget_after-- == 0) {
		refuse_budget_after = 0; /* and every later one */
		errno = ENOPROTOOPT;
		return -1;
	}
	if (level == SOL_SOCKET && name == SO_BUSY_POLL_BUDGET && len == sizeof(int)) {
		budget_fd = fd;
		budget_val = *(const int *)val;
	}
	return (int)syscall(SYS_setsockopt, fd, level, name, val, len);
}

/* recvfrom() calls the driver makes on one socket (recv_watch_fd): the busy-poll calls of
 * empty Rx polls. Everything goes on to the kernel. */
static int recv_watch_fd = -1;
static unsigned recv_calls;

ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *from,
		 socklen_t *fromlen)
{
	if (fd == recv_watch_fd)
		recv_calls++;
	return (ssize_t)syscall(SYS_recvfrom, fd, buf, len, flags, from, fromlen);
}

static int sockopt_int(int fd, int name)
{
	int v = -1;
	socklen_t len = sizeof(v);

	assert_int_equal(getsockopt(fd, SOL_SOCKET, name, &v, &len), 0);
	return v;
}

/* Log lines of the port under test, counted by level. */
static unsigned log_lines[8];
static char log_last[256];

static void log_count(enum tide_log_level level, const char *component, const char *msg,
		      void *user)
{
	(void)user;
	if (strncmp(component, "afxdp", 5) != 0 || (unsigned)level >= 8)
		return;
	log_lines[level]++;
	snprintf(log_last, sizeof(log_last), "%s", msg);
}

static void log_capture(void)
{
	memset(log_lines, 0, sizeof(log_lines));
	log_last[0] = '\0';
	tide_log_set_level(TIDE_LOG_DEBUG);
	tide_log_set_handler(log_count, NULL);
}

static void log_release(void)
{
	tide_log_set_handler(NULL, NULL);
	tide_log_set_level(TIDE_LOG_ERR);
}

/* ---- the namespace side ---- */

struct ns_sock {
	const char *ifname;
	int fd, ifindex;
};

static void *ns_sock_thread(void *arg)
{
	struct ns_sock *s = arg;
	char path[128];
	struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_protocol = htons(ETHERTYPE_TDX)};
	int nfd;

	s->fd = -1;
	snprintf(path, sizeof(path), "/run/netns/%s", ns);
	nfd = open(path, O_RDONLY | O_CLOEXEC);
	/* setns changes only this thread's network namespace. */
	if (nfd < 0 || setns(nfd, CLONE_NEWNET) < 0)
		return NULL;
	close(nfd);
	s->ifindex = (int)if_nametoindex(s->ifname);
	s->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETHERTYPE_TDX));
	sll.sll_ifindex = s->ifindex;
	if (s->fd >= 0 && bind(s->fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		close(s->fd);
		s->fd = -1;
	}
	return NULL;
}

/* An AF_PACKET socket on interface @ifname of the namespace, for our ethertype only. */
static struct ns_sock ns_open(const char *ifname)
{
	struct ns_sock s = {.ifname = ifname, .fd = -1};
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, ns_sock_thread, &s), 0);
	pthread_join(t, NULL);
	assert_true(s.fd >= 0);
	return s;
}

static unsigned pkt_len(uint32_t seq)
{
	return 60 + (seq * 37) % 1400;
}

static unsigned pkt_make(uint8_t *buf, const uint8_t *dst, uint32_t seq)
{
	unsigned len = pkt_len(seq);
	uint32_t v;

	memcpy(buf, dst, 6);
	memcpy(buf + 6, "\x02\x00\x00\x74\x64\x78", 6);
	buf[12] = ETHERTYPE_TDX >> 8;
	buf[13] = ETHERTYPE_TDX & 0xff;
	v = htonl(MAGIC);
	memcpy(buf + 14, &v, 4);
	v = htonl(seq);
	memcpy(buf + 18, &v, 4);
	for (unsigned i = 22; i < len; i++)
		buf[i] = (uint8_t)(seq + i);
	return len;
}

/* Returns the sequence number, or -1 when the frame is not one of ours or is damaged. */
static long pkt_check(const uint8_t *buf, unsigned len)
{
	uint32_t v, seq;

	if (len < 22 || buf[12] != (ETHERTYPE_TDX >> 8) || buf[13] != (ETHERTYPE_TDX & 0xff))
		return -1;
	memcpy(&v, buf + 14, 4);
	if (ntohl(v) != MAGIC)
		return -1;
	memcpy(&v, buf + 18, 4);
	seq = ntohl(v);
	if (len != pkt_len(seq))
		return -1;
	for (unsigned i = 22; i < len; i++)
		if (buf[i] != (uint8_t)(seq + i))
			return -1;
	return seq;
}

static void ns_send(struct ns_sock *s, const uint8_t *dst, uint32_t seq)
{
	uint8_t buf[1600];
	unsigned len = pkt_make(buf, dst, seq);

	assert_int_equal(send(s->fd, buf, len, 0), (ssize_t)len);
}

/* Receive on the namespace side until @want frames of ours arrived or @ms of silence. */
static unsigned ns_recv_for(struct ns_sock *s, unsigned want, uint8_t *seen, int ms)
{
	uint8_t buf[2048];
	unsigned got = 0;
	struct pollfd pfd = {.fd = s->fd, .events = POLLIN};

	while (got < want && poll(&pfd, 1, ms) > 0) {
		struct sockaddr_ll from;
		socklen_t fl = sizeof(from);
		ssize_t r = recvfrom(s->fd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&from,
				     &fl);
		long seq;

		if (r <= 0 || from.sll_pkttype == PACKET_OUTGOING)
			continue;
		seq = pkt_check(buf, (unsigned)r);
		assert_true(seq >= 0 && seq < NPKT);
		assert_int_equal(seen[seq], 0);
		seen[seq] = 1;
		got++;
	}
	return got;
}

/* The same with 2 s of silence. */
static unsigned ns_recv(struct ns_sock *s, unsigned want, uint8_t *seen)
{
	return ns_recv_for(s, want, seen, 2000);
}

/* ---- the tide side ---- */

static struct tide_pool *umem_pool(void)
{
	struct tide_pool *p;

	assert_int_equal(tide_afxdp_pool_create("tdx", 4096, 64, 2048, &p), 0);
	return p;
}

static struct tide_port *port_up(const char *spec, struct tide_pool *pool, unsigned nq)
{
	struct tide_port *p;

	assert_int_equal(tide_port_open(spec, &p), 0);
	assert_int_equal(tide_port_configure(p, pool ? nq : 0, nq), 0);
	for (unsigned q = 0; q < nq; q++) {
		if (pool)
			assert_int_equal(tide_rxq_setup(p, q, 512, pool, NULL), 0);
		assert_int_equal(tide_txq_setup(p, q, 512, NULL), 0);
	}
	assert_int_equal(tide_port_start(p), 0);
	return p;
}

static int xdp_attached(const char *dev)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, qo);
	int ifindex = (int)if_nametoindex(dev);

	if (ifindex == 0 || bpf_xdp_query(ifindex, 0, &qo) < 0)
		return 0;
	return qo.attach_mode != XDP_ATTACHED_NONE;
}

static void sleep_us(long us)
{
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};

	nanosleep(&ts, NULL);
}

/* Send NPKT frames from the namespace into @in (bursts of 16), poll @rxq, check them all. */
static void rx_case(const char *mode)
{
	char spec[128];
	struct tide_pool *pool = umem_pool();
	struct tide_port *p;
	struct tide_port_info info = {.sz = sizeof(info)};
	struct ns_sock s = ns_open(peer_a);
	static uint8_t seen[NPKT];
	unsigned got = 0, other = 0;

	memset(seen, 0, sizeof(seen));
	snprintf(spec, sizeof(spec), "afxdp:dev=%s,mode=%s", dev_a, mode);
	p = port_up(spec, pool, 1);
	assert_true(xdp_attached(dev_a));
	tide_port_info_get(p, &info);
	for (uint32_t seq = 0; seq < NPKT; seq++) {
		ns_send(&s, info.mac, seq);
		if (seq % 16 == 15 || seq == NPKT - 1) {
			for (int spin = 0; spin < 20000 && got < seq + 1; spin++) {
				struct tide_mbuf *m[32];
				uint16_t n = tide_rx_burst(tide_port_rxq(p, 0), m, 32);

				for (uint16_t i = 0; i < n; i++) {
					long sq = pkt_check(tide_mbuf_mtod(m[i], uint8_t *),
							    m[i]->data_len);

					if (sq < 0) {
						other++;
					} else {
						assert_int_equal(seen[sq], 0);
						assert_int_equal(m[i]->pkt_len, pkt_len((uint32_t)sq));
						seen[sq] = 1;
						got++;
					}
				}
				tide_mbuf_free_bulk(m, n);
				if (n == 0)
					sleep_us(20);
			}
		}
	}
	assert_int_equal(got, NPKT);
	assert_int_equal(other, 0);
	tide_port_close(p);
	assert_false(xdp_attached(dev_a));
	close(s.fd);
	assert_pool_full(pool);
	tide_pool_free(pool);
}

static void test_rx_native(void **state)
{
	(void)state;
	rx_case("native");
}

static void test_rx_generic(void **state)
{
	(void)state;
	rx_case("generic");
}

/* Send from tide: half the packets from the UMEM pool (in place), half from a plain pool
 * (copied into frames); the namespace side checks every one. */
static void tx_case(const char *extra, bool with_rx)
{
	char spec[160];
	struct tide_pool *pool = umem_pool(), *plain;
	struct tide_port *p;
	struct ns_sock s = ns_open(peer_a);
	static uint8_t seen[NPKT];
	uint8_t dst[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	struct tide_port_stats st = {.sz = sizeof(st)};
	unsigned got = 0;

	memset(seen, 0, sizeof(seen));
	assert_int_equal(tide_pktpool_create("tdx-plain", 1024, 64, 0, NULL, &plain), 0);
	snprintf(spec, sizeof(spec), "afxdp:dev=%s%s", dev_a, extra);
	p = port_up(spec, with_rx ? pool : NULL, 1);
	for (uint32_t seq = 0; seq < NPKT; seq += 16) {
		struct tide_mbuf *m[16];
		uint16_t k = 0;

		for (uint32_t i = 0; i < 16; i++) {
			struct tide_pool *from = ((seq + i) & 1) && with_rx ? pool : plain;

			m[i] = tide_mbuf_alloc(from);
			assert_non_null(m[i]);
			uint8_t *d = (uint8_t *)tide_mbuf_append(m[i], (uint16_t)pkt_len(seq + i));

			assert_non_null(d);
			pkt_make(d, dst, seq + i);
		}
		for (int spin = 0; k < 16 && spin < 100000; spin++) {
			k += tide_tx_burst(tide_port_txq(p, 0), m + k, (uint16_t)(16 - k));
			if (k < 16)
				sleep_us(10);
		}
		assert_int_equal(k, 16);
		got += ns_recv(&s, 16, seen);
	}
	got += ns_recv(&s, NPKT - got, seen);
	assert_int_equal(got, NPKT);
	tide_txq_done_cleanup(tide_port_txq(p, 0), 0);
	assert_int_equal(tide_port_stats_get(p, &st), 0);
	assert_int_equal(st.opackets, NPKT);
	assert_int_equal(st.oerrors, 0);
	tide_port_close(p);
	close(s.fd);
	assert_pool_full(plain);
	assert_pool_full(pool);
	tide_pool_free(plain);
	tide_pool_free(pool);
}

/* A packet longer than a UMEM frame can hold (a chain from a plain pool) is dropped and
 * counted, never copied past the frame; the good packet beside it goes out. */
static void test_tx_too_long(void **state)
{
	char spec[160];
	struct tide_pool *pool = umem_pool(), *plain;
	struct tide_mbuf *m[2], *tail;
	struct tide_port_stats st = {.sz = sizeof(st)};
	struct tide_port *p;

	(void)state;
	assert_int_equal(tide_pktpool_create("tdx-long", 64, 0, 0, NULL, &plain), 0);
	snprintf(spec, sizeof(spec), "afxdp:dev=%s", dev_a);
	p = port_up(spec, pool, 1);
	m[0] = tide_mbuf_alloc(plain);
	tail = tide_mbuf_alloc(plain);
	m[1] = tide_mbuf_alloc(plain);
	assert_non_null(m[0]);
	assert_non_null(tail);
	assert_non_null(m[1]);
	memset(tide_mbuf_append(m[0], 2000), 0xab, 2000);
	memset(tide_mbuf_append(tail, 2000), 0xcd, 2000);
	assert_int_equal(tide_mbuf_chain(m[0], tail), 0);
	pkt_make((uint8_t *)tide_mbuf_append(m[1], 64), (const uint8_t[6]){0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 1);
	/* Both are taken: the long one is dropped (the queue frees it), the short one sent. */
	assert_int_equal(tide_tx_burst(tide_port_txq(p, 0), m, 2), 2);
	assert_int_equal(tide_port_stats_get(p, &st), 0);
	assert_int_equal(st.oerrors, 1);
	assert_int_equal(st.opackets, 1);
	tide_port_close(p);
	assert_pool_full(plain);
	assert_pool_full(pool);
	tide_pool_free(plain);
	tide_pool_free(pool);
}

static void test_tx(void **state)
{
	(void)state;
	tx_case("", true);
}

static void test_tx_only_port(void **state)
{
	(void)state;
	tx_case(",mode=generic,need_wakeup=no", false);
}

static void test_tx_walk(void **state)
{
	(void)state;
	tx_case(",txc_walk=yes", true);
}

/* Fill @m with @n frames of the UMEM pool, sequence numbers from @seq. */
static void umem_frames(struct tide_pool *pool, struct tide_mbuf **m, unsigned n, uint32_t seq)
{
	static const uint8_t dst[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

	for (unsigned i = 0; i < n; i++) {
		uint8_t *d;

		m[i] = tide_mbuf_alloc(pool);
		assert_non_null(m[i]);
		d = (uint8_t *)tide_mbuf_append(m[i], (uint16_t)pkt_len(seq + i));
		assert_non_null(d);
		pkt_make(d, dst, seq + i);
	}
}

/*
 * One burst of more frames than the kernel sends per kick (copy mode: 32, then EAGAIN with
 * the rest still in the Tx ring), then no other call on the queue: the burst itself must
 * have handed every frame over. Then kicks the kernel refuses outright: nothing leaves
 * with the burst, the refusal is counted, and tide_txq_done_cleanup() alone sends the
 * frames (no more bursts).
 */
static void test_tx_kick_refused(void **state)
{
	char spec[160];
	struct tide_pool *pool = umem_pool();
	struct tide_port *p;
	struct tide_txq *tq;
	struct ns_sock s = ns_open(peer_a);
	static uint8_t seen[NPKT];
	struct tide_mbuf *m[64];
	uint64_t refused = 0;
	unsigned got, calls;

	(void)state;
	memset(seen, 0, sizeof(seen));
	snprintf(spec, sizeof(spec), "afxdp:dev=%s,zero_copy=no", dev_a);
	p = port_up(spec, pool, 1);
	tq = tide_port_txq(p, 0);
	umem_frames(pool, m, 64, 0);
	assert_int_equal(tide_tx_burst(tq, m, 64), 64);
	got = ns_recv(&s, 64, seen);
	if (got != 64)
		fail_msg("one burst of 64 frames: %u reached the peer without another call", got);
	assert_int_equal(tide_xstats_get_by_name(p, "afxdp_tx_kick_refused", &refused), 0);
	assert_int_equal(refused, 0);

	/* The kernel refuses the burst's kicks: the frames wait in the Tx ring. */
	kick_refuse = 1000;
	kick_calls = 0;
	umem_frames(pool, m, 16, 64);
	assert_int_equal(tide_tx_burst(tq, m, 16), 16);
	calls = kick_calls;
	assert_true(calls >= 1);
	assert_int_equal(ns_recv_for(&s, 16, seen, 200), 0);
	assert_int_equal(tide_xstats_get_by_name(p, "afxdp_tx_kick_refused", &refused), 0);
	assert_int_equal(refused, calls);
	/* A refused kick without frames moving is not retried at once: one per call. */
	assert_int_equal(calls, 1);
	/* Accepted again: idle-time cleanup alone drains the ring. */
	kick_refuse = 0;
	got = 0;
	for (int i = 0; i < 200 && got < 16; i++) {
		tide_txq_done_cleanup(tq, 0);
		got += ns_recv_for(&s, 16 - got, seen, 10);
	}
	if (got != 16)
		fail_msg("refused kick: %u of 16 frames reached the peer with only done_cleanup",
			 got);
	/* Nothing pending: no kick. */
	calls = kick_calls;
	for (int i = 0; i < 100; i++)
		tide_txq_done_cleanup(tq, 0);
	assert_int_equal(kick_calls, calls);
	tide_port_close(p);
	close(s.fd);
	assert_pool_full(pool);
	tide_pool_free(pool);
}

/* l2fwd through tide: namespace -> a -> tide -> b -> namespace. */
static void fwd_case(const char *extra)
{
	char spec[160];
	struct tide_pool *pool = umem_pool();
	struct tide_port *pa, *pb;
	struct ns_sock sa = ns_open(peer_a), sb = ns_open(peer_b);
	static uint8_t seen[NPKT];
	struct tide_port_info info = {.sz = sizeof(info)};
	struct tide_port_stats st = {.sz = sizeof(st)};
	unsigned got = 0, fwd = 0;

	memset(seen, 0, sizeof(seen));
	snprintf(spec, sizeof(spec), "afxdp:dev=%s%s", dev_a, extra);
	pa = port_up(spec, pool, 1);
	snprintf(spec, sizeof(spec), "afxdp:dev=%s%s", dev_b, extra);
	pb = port_up(spec, pool, 1);
	tide_port_info_get(pa, &info);
	for (uint32_t seq = 0; seq < NPKT; seq++) {
		ns_send(&sa, info.mac, seq);
		if (seq % 16 != 15 && seq != NPKT - 1)
			continue;
		for (int spin = 0; spin < 20000 && fwd < seq + 1; spin++) {
			struct tide_mbuf *m[32];
			uint16_t n = tide_rx_burst(tide_port_rxq(pa, 0), m, 32), k = 0;

			for (int t = 0; k < n && t < 10000; t++)
				k += tide_tx_burst(tide_port_txq(pb, 0), m + k, (uint16_t)(n - k));
			assert_int_equal(k, n);
			fwd += n;
			/* Keep b's Rx polled: its fill ring takes b's completed frames. */
			tide_rx_burst(tide_port_rxq(pb, 0), m, 32);
			if (n == 0)
				sleep_us(20);
		}
		got += ns_recv(&sb, fwd - got, seen);
	}
	assert_int_equal(fwd, NPKT);
	assert_int_equal(got, NPKT);
	tide_txq_done_cleanup(tide_port_txq(pb, 0), 0);
	tide_port_stats_get(pb, &st);
	assert_int_equal(st.opackets, NPKT);
	assert_int_equal(st.tx_released, NPKT);
	assert_true(st.tx_recycled > 0); /* b's completed frames went to a's fill ring */
	tide_port_close(pa);
	tide_port_close(pb);
	assert_false(xdp_attached(dev_a));
	assert_false(xdp_attached(dev_b));
	close(sa.fd);
	close(sb.fd);
	assert_pool_full(pool);
	tide_pool_free(pool);
}

static void test_fwd_native(void **state)
{
	(void)state;
	fwd_case(",mode=native");
}

static void test_fwd_generic_walk(void **state)
{
	(void)state;
	fwd_case(",mode=generic,txc_walk=yes");
}

/* Two queues on the two-queue veth: both sockets come up, and go. */
static void test_two_queues(void **state)
{
	char spec[128];
	struct tide_pool *pool = umem_pool();
	struct tide_port *p;

	(void)state;
	snprintf(spec, sizeof(spec), "afxdp:dev=%s,queues=2", dev_b);
	p = port_up(spec, pool, 2);
	tide_port_stop(p);
	assert_pool_full(pool);
	assert_int_equal(tide_port_start(p), 0); /* sockets on the same queues again */
	tide_port_close(p);
	assert_false(xdp_attached(dev_b));
	assert_pool_full(pool);
	tide_pool_free(pool);
}

static void test_bad_specs(void **state)
{
	char spec[128];
	struct tide_port *p, *p2;
	struct tide_pool *pool = umem_pool(), *bad;

	(void)state;
	assert_int_equal(tide_port_open("afxdp:dev=tdx-no-such-if", &p), -ENODEV);
	assert_int_equal(tide_port_open("afxdp:queue=0", &p), -EINVAL);
	snprintf(spec, sizeof(spec), "afxdp:dev=%s,queue=5", dev_a);
	assert_int_equal(tide_port_open(spec, &p), -EINVAL);
	snprintf(spec, sizeof(spec), "afxdp:dev=%s,queue=1,queues=2", dev_b);
	assert_int_equal(tide_port_open(spec, &p), -EINVAL);
	snprintf(spec, sizeof(spec), "afxdp:dev=%s,mode=fast", dev_a);
	assert_int_equal(tide_port_open(spec, &p), -EINVAL);
	assert_false(xdp_attached(dev_a));

	/* A pool that cannot be a UMEM is refused at setup, with a message saying how. */
	snprintf(spec, sizeof(spec), "afxdp:dev=%s", dev_a);
	assert_int_equal(tide_port_open(spec, &p), 0);
	assert_int_equal(tide_port_configure(p, 1, 1), 0);
	assert_int_equal(tide_pktpool_create("tdx-bad", 256, 0, 0, NULL, &bad), 0);
	assert_int_equal(tide_rxq_setup(p, 0, 512, bad, NULL), -EINVAL);
	tide_pool_free(bad);

	/* The interface already runs an XDP program: the second port fails to start and
	 * leaves the first one's program alone. */
	assert_int_equal(tide_rxq_setup(p, 0, 512, pool, NULL), 0);
	assert_int_equal(tide_txq_setup(p, 0, 512, NULL), 0);
	assert_int_equal(tide_port_start(p), 0);
	assert_int_equal(tide_port_open(spec, &p2), 0);
	assert_int_equal(tide_port_configure(p2, 0, 1), 0);
	assert_int_equal(tide_txq_setup(p2, 0, 512, NULL), 0);
	assert_int_equal(tide_port_start(p2), -EBUSY);
	tide_port_close(p2);
	assert_true(xdp_attached(dev_a));
	tide_port_close(p);
	assert_false(xdp_attached(dev_a));
	assert_pool_full(pool);
	tide_pool_free(pool);
}

/* The interface disappears under a running port: link down, no crash, nothing leaks. */
static void test_dev_removed(void **state)
{
	char cmd[160], dev[IF_NAMESIZE], spec[96];
	struct tide_pool *pool = umem_pool(), *plain;
	struct tide_port *p;
	struct tide_link link;

	(void)state;
	snprintf(dev, sizeof(dev), "tdxr%s", getenv("TDX_ID"));
	snprintf(cmd, sizeof(cmd), "ip link add %s type veth peer name tdxR%s && ip link set %s up && ip link set tdxR%s up",
		 dev, getenv("TDX_ID"), dev, getenv("TDX_ID"));
	assert_int_equal(system(cmd), 0);
	assert_int_equal(tide_pktpool_create("tdx-plain", 256, 0, 0, NULL, &plain), 0);
	snprintf(spec, sizeof(spec), "afxdp:dev=%s", dev);
	p = port_up(spec, pool, 1);
	/* The kernel sets the operational state (IFF_RUNNING) from its link-watch work, a
	 * moment after the link comes up: wait for it, 10 s at most. */
	for (int spin = 0; spin < 10000; spin++) {
		assert_int_equal(tide_port_link_get(p, &link), 0);
		if (link.up)
			break;
		sleep_us(1000);
	}
	assert_int_equal(link.up, 1);
	snprintf(cmd, sizeof(cmd), "ip link del %s", dev);
	assert_int_equal(system(cmd), 0);
	for (int i = 0; i < 100; i++) {
		struct tide_mbuf *m[8];
		uint16_t n = tide_rx_burst(tide_port_rxq(p, 0), m, 8), k;

		tide_mbuf_free_bulk(m, n);
		for (unsigned j = 0; j < 8; j++) {
			m[j] = tide_mbuf_alloc(j & 1 ? pool : plain);
			tide_mbuf_append(m[j], 60);
		}
		k = tide_tx_burst(tide_port_txq(p, 0), m, 8);
		tide_mbuf_free_bulk(m + k, 8u - k);
	}
	assert_int_equal(tide_port_link_get(p, &link), 0);
	assert_int_equal(link.up, 0);
	tide_port_close(p);
	assert_pool_full(plain);
	assert_pool_full(pool);
	tide_pool_free(plain);
	tide_pool_free(pool);
}

/* kill -9 leaves nothing attached: the program hangs on a BPF link owned by the process. */
static void test_kill9(void **state)
{
	char spec[96];
	int st;
	pid_t pid;

	(void)state;
	snprintf(spec, sizeof(spec), "afxdp:dev=%s", dev_b);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct tide_pool *pool;
		struct tide_port *p;

		if (tide_afxdp_pool_create("tdx-child", 1024, 0, 2048, &pool) < 0 ||
		    tide_port_open(spec, &p) < 0 || tide_port_configure(p, 1, 1) < 0 ||
		    tide_rxq_setup(p, 0, 256, pool, NULL) < 0 || tide_txq_setup(p, 0, 256, NULL) < 0 ||
		    tide_port_start(p) < 0)
			_exit(1);
		raise(SIGKILL);
		_exit(2);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	for (int i = 0; i < 100 && xdp_attached(dev_b); i++)
		sleep_us(10000);
	assert_false(xdp_attached(dev_b));
}

/* busy_poll= and busy_budget= are validated, each bad value named. */
static void test_busy_poll_specs(void **state)
{
	static const char *const bad[] = {"busy_budget=0", "busy_budget=65536", "busy_poll=1000001",
					  "busy_poll=-1", "busy_poll=on", "busy_budget="};
	static const char *const good[] = {"busy_poll=0", "busy_poll=1000000", "busy_budget=1",
					   "busy_budget=65535"};
	char spec[128];
	struct tide_port *p;

	(void)state;
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(spec, sizeof(spec), "afxdp:dev=%s,%s", dev_a, bad[i]);
		log_capture();
		assert_int_equal(tide_port_open(spec, &p), -EINVAL);
		log_release();
		/* one error line, naming the key */
		assert_int_equal(log_lines[TIDE_LOG_ERR], 1);
		assert_non_null(strstr(log_last, "busy_"));
	}
	for (unsigned i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(spec, sizeof(spec), "afxdp:dev=%s,%s", dev_a, good[i]);
		assert_int_equal(tide_port_open(spec, &p), 0);
		tide_port_close(p);
	}
}

/* Preferred busy polling by default (20 us, budget 64), the values given, or none. */
static void test_busy_poll_on(void **state)
{
	static const struct {
		const char *extra;
		int prefer, us, budget;
	} c[] = {
		{"", 1, 20, 64},
		{",busy_poll=50,busy_budget=16", 1, 50, 16},
		{",busy_poll=0", 0, 0, -1},
	};
	char spec[128];
	struct tide_pool *pool = umem_pool();

	(void)state;
	for (unsigned i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct tide_port *p;
		int fd;

		snprintf(spec, sizeof(spec), "afxdp:dev=%s%s", dev_a, c[i].extra);
		budget_fd = budget_val = -1;
		p = port_up(spec, pool, 1);
		fd = tide_rxq_intr_fd(p, 0);
		assert_true(fd >= 0);
		assert_int_equal(sockopt_int(fd, SO_PREFER_BUSY_POLL), c[i].prefer);
		assert_int_equal(sockopt_int(fd, SO_BUSY_POLL), c[i].us);
		assert_int_equal(budget_val, c[i].budget);
		if (c[i].budget >= 0)
			assert_int_equal(budget_fd, fd);
		tide_port_close(p);
	}
	assert_pool_full(pool);
	tide_pool_free(pool);
}

/* The kernel refuses busy polling (here: SO_BUSY_POLL_BUDGET on the second socket of a
 * two-queue port): the port starts without it, every socket as it was, one notice line. */
static void test_busy_poll_refused(void **state)
{
	char spec[128];
	struct tide_pool *pool = umem_pool();
	struct tide_port *p;
	static const char *const extra[] = {"", ",busy_poll=30"};

	(void)state;
	for (unsigned i = 0; i < 2; i++) {
		snprintf(spec, sizeof(spec), "afxdp:dev=%s,queues=2%s", dev_b, extra[i]);
		refuse_budget_after = 1;
		log_capture();
		p = port_up(spec, pool, 2);
		log_release();
		refuse_budget_after = -1;
		for (unsigned q = 0; q < 2; q++) {
			int fd = tide_rxq_intr_fd(p, q);

			assert_true(fd >= 0);
			assert_int_equal(sockopt_int(fd, SO_PREFER_BUSY_POLL), 0);
			assert_int_equal(sockopt_int(fd, SO_BUSY_POLL), 0);
		}
		/* a notice by default, a warning when busy_poll= was asked for; no error */
		assert_int_equal(log_lines[TIDE_LOG_ERR], 0);
		assert_int_equal(log_lines[i ? TIDE_LOG_WARNING : TIDE_LOG_NOTICE], 1);
		assert_int_equal(log_lines[i ? TIDE_LOG_NOTICE : TIDE_LOG_WARNING], 0);
		tide_port_close(p);
	}
	assert_pool_full(pool);
	tide_pool_free(pool);
}

/* Busy polling drives a copy-mode socket only once it has a NAPI id to poll, which it learns
 * from its first frame: before that an empty poll makes no syscall, after it every empty poll
 * calls recvfrom; with busy_poll=0 none does. */
static void test_busy_poll_armed(void **state)
{
	char spec[128];
	struct tide_pool *pool = umem_pool();
	struct ns_sock s = ns_open(peer_a);
	static const char *const extra[] = {"", ",busy_poll=0"};

	(void)state;
	for (unsigned c = 0; c < 2; c++) {
		struct tide_port *p;
		struct tide_port_info info = {.sz = sizeof(info)};
		struct tide_mbuf *m[32];
		unsigned got = 0, empty = 0;
		uint16_t n;

		snprintf(spec, sizeof(spec), "afxdp:dev=%s,mode=native%s", dev_a, extra[c]);
		p = port_up(spec, pool, 1);
		tide_port_info_get(p, &info);
		recv_watch_fd = tide_rxq_intr_fd(p, 0);
		assert_true(recv_watch_fd >= 0);
		recv_calls = 0;
		/* nothing received yet: empty polls, no recvfrom */
		for (int i = 0; i < 64 && got == 0; i++) {
			n = tide_rx_burst(tide_port_rxq(p, 0), m, 32);
			tide_mbuf_free_bulk(m, n);
			got += n;
		}
		assert_int_equal(recv_calls, 0);
		/* the first frame */
		ns_send(&s, info.mac, 0);
		for (int spin = 0; spin < 20000 && got == 0; spin++) {
			n = tide_rx_burst(tide_port_rxq(p, 0), m, 32);
			tide_mbuf_free_bulk(m, n);
			got += n;
			if (n == 0)
				sleep_us(20);
		}
		assert_true(got > 0);
		assert_int_equal(recv_calls, 0);
		/* now every empty poll busy-polls (or, with busy_poll=0, none) */
		for (int i = 0; i < 16; i++) {
			n = tide_rx_burst(tide_port_rxq(p, 0), m, 32);
			tide_mbuf_free_bulk(m, n);
			empty += n == 0;
		}
		assert_int_equal(recv_calls, c == 0 ? empty : 0);
		assert_true(c != 0 || empty > 0);
		recv_watch_fd = -1;
		tide_port_close(p);
	}
	close(s.fd);
	assert_pool_full(pool);
	tide_pool_free(pool);
}

/* Started, an Rx queue of N descriptors has N frames posted (its whole budget; the fill ring
 * is 2N deep), and still N, never more, after traffic and bursts. */
static void test_fill_posted(void **state)
{
	char spec[128];
	struct tide_pool *pool = umem_pool();
	struct tide_port *p;
	struct tide_port_info info = {.sz = sizeof(info)};
	struct ns_sock s = ns_open(peer_a);
	uint32_t seq = 0;

	(void)state;
	snprintf(spec, sizeof(spec), "afxdp:dev=%s", dev_a);
	p = port_up(spec, pool, 1); /* 512 descriptors */
	tide_port_info_get(p, &info);
	tide_pool_cache_flush(pool);
	assert_int_equal(tide_pool_in_use(pool), 512);
	/* 768 frames (more than the queue holds) in rounds of 64, each received and freed */
	for (int round = 0; round < 12; round++) {
		unsigned got = 0;

		for (unsigned i = 0; i < 64; i++)
			ns_send(&s, info.mac, seq + i);
		for (int spin = 0; spin < 20000 && got < 64; spin++) {
			struct tide_mbuf *m[32];
			uint16_t n = tide_rx_burst(tide_port_rxq(p, 0), m, 32);

			tide_mbuf_free_bulk(m, n);
			got += n;
			if (n == 0)
				sleep_us(20);
		}
		assert_int_equal(got, 64);
		seq += 64;
	}
	/* one more (empty) burst refills for the last ones taken */
	{
		struct tide_mbuf *m[1];

		assert_int_equal(tide_rx_burst(tide_port_rxq(p, 0), m, 1), 0);
	}
	tide_pool_cache_flush(pool);
	assert_int_equal(tide_pool_in_use(pool), 512);
	close(s.fd);
	tide_port_close(p);
	assert_pool_full(pool);
	tide_pool_free(pool);
}

/* Wait up to 5 s for POLLIN on @fd; returns the poll() result. */
static int wait_readable(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	int r = poll(&pfd, 1, 5000);

	return r > 0 && (pfd.revents & POLLIN) ? 1 : r;
}

/* Rx interrupts: an idle queue's fd is not readable (a poller would sleep); a frame makes it
 * readable; after the burst it is quiet again. Not connected while the port is stopped. */
static void test_rx_intr(void **state)
{
	char spec[128];
	struct tide_pool *pool = umem_pool();
	struct tide_port *p;
	struct tide_port_info info = {.sz = sizeof(info)};
	struct ns_sock s = ns_open(peer_a);
	struct pollfd pfd;
	uint32_t seq = 0;
	int fd;

	(void)state;
	snprintf(spec, sizeof(spec), "afxdp:dev=%s,mode=native", dev_a);
	assert_int_equal(tide_port_open(spec, &p), 0);
	assert_int_equal(tide_port_configure(p, 1, 1), 0);
	assert_int_equal(tide_rxq_setup(p, 0, 512, pool, NULL), 0);
	assert_int_equal(tide_txq_setup(p, 0, 512, NULL), 0);
	assert_int_equal(tide_rxq_intr_fd(p, 0), -ENOTCONN);
	assert_int_equal(tide_rxq_intr_enable(p, 0), -ENOTCONN);
	assert_int_equal(tide_rxq_intr_fd(p, 1), -EINVAL);
	assert_int_equal(tide_port_start(p), 0);
	tide_port_info_get(p, &info);
	fd = tide_rxq_intr_fd(p, 0);
	assert_true(fd >= 0);
	for (int round = 0; round < 3; round++) {
		struct tide_mbuf *m[32];
		unsigned got = 0;

		assert_int_equal(tide_rxq_intr_enable(p, 0), 0);
		assert_int_equal(tide_rx_burst(tide_port_rxq(p, 0), m, 32), 0);
		pfd = (struct pollfd){.fd = fd, .events = POLLIN};
		assert_int_equal(poll(&pfd, 1, 0), 0); /* idle: nothing to wake for */
		/* round 1: the frames come while the interrupt is off, before the enable */
		if (round == 1)
			assert_int_equal(tide_rxq_intr_disable(p, 0), 0);
		for (unsigned i = 0; i < 4; i++)
			ns_send(&s, info.mac, seq + i);
		if (round == 1)
			assert_int_equal(tide_rxq_intr_enable(p, 0), 0);
		assert_int_equal(wait_readable(fd), 1);
		assert_int_equal(tide_rxq_intr_disable(p, 0), 0);
		for (int spin = 0; spin < 1000 && got < 4; spin++) {
			uint16_t n = tide_rx_burst(tide_port_rxq(p, 0), m, 32);

			for (uint16_t i = 0; i < n; i++)
				assert_int_equal(pkt_check(tide_mbuf_mtod(m[i], uint8_t *),
							   m[i]->data_len), (long)(seq + got + i));
			tide_mbuf_free_bulk(m, n);
			got += n;
			if (got < 4 && wait_readable(fd) != 1)
				break;
		}
		assert_int_equal(got, 4);
		seq += 4;
		pfd = (struct pollfd){.fd = fd, .events = POLLIN};
		assert_int_equal(poll(&pfd, 1, 0), 0); /* all taken: quiet again */
	}
	tide_port_stop(p);
	assert_int_equal(tide_rxq_intr_fd(p, 0), -ENOTCONN);
	assert_int_equal(tide_rxq_intr_disable(p, 0), -ENOTCONN);
	tide_port_close(p);
	close(s.fd);
	assert_pool_full(pool);
	tide_pool_free(pool);
}

/* Run the port's control plane until its link event fd is readable (at most 10 s); return
 * the event counter read from it. */
static uint64_t link_event_wait(struct tide_port *p, int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	uint64_t v = 0;

	for (int spin = 0; spin < 10000; spin++) {
		assert_int_equal(tide_port_poll_ctl(p), 0);
		if (poll(&pfd, 1, 0) == 1)
			break;
		sleep_us(1000);
	}
	if (read(fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
		fail_msg("no link event within 10 s");
	return v;
}

/* No further event within 200 ms of control-plane polling. */
static void link_event_none(struct tide_port *p, int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};

	for (int spin = 0; spin < 200; spin++) {
		assert_int_equal(tide_port_poll_ctl(p), 0);
		sleep_us(1000);
	}
	assert_int_equal(poll(&pfd, 1, 0), 0);
}

static void peer_set(const char *state)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "nsenter --net=/run/netns/%s ip link set dev %s %s", ns, peer_a,
		 state);
	assert_int_equal(system(cmd), 0);
}

/* The link follows the interface's operational state through netlink: the peer going down
 * takes our veth's carrier, one event each way, and tide_port_link_get() agrees. */
static void test_link_events(void **state)
{
	char spec[96];
	struct tide_port *p;
	struct tide_port_info info = {.sz = sizeof(info)};
	struct tide_link link;
	int fd;

	(void)state;
	snprintf(spec, sizeof(spec), "afxdp:dev=%s", dev_a);
	assert_int_equal(tide_port_open(spec, &p), 0);
	assert_int_equal(tide_port_info_get(p, &info), 0);
	assert_int_equal(info.needs_poll_ctl, 1);
	fd = tide_port_link_event_fd(p);
	assert_true(fd >= 0);
	/* The set-up's carrier may still be coming up: wait for it, then start from quiet. */
	for (int spin = 0; spin < 10000; spin++) {
		assert_int_equal(tide_port_poll_ctl(p), 0);
		assert_int_equal(tide_port_link_get(p, &link), 0);
		if (link.up)
			break;
		sleep_us(1000);
	}
	assert_int_equal(link.up, 1);
	{
		uint64_t v;

		assert_int_equal(tide_port_poll_ctl(p), 0);
		if (read(fd, &v, sizeof(v)) < 0)
			assert_int_equal(errno, EAGAIN);
	}
	for (int round = 0; round < 2; round++) {
		char cmd[160];

		peer_set("down");
		assert_int_equal(link_event_wait(p, fd), 1);
		assert_int_equal(tide_port_link_get(p, &link), 0);
		assert_int_equal(link.up, 0);
		/* Link messages that change nothing for this port: another interface (up while
		 * ours is down), and ours without a state change. */
		snprintf(cmd, sizeof(cmd),
			 "ip link set dev %s alias tide-%d && ip link set dev %s alias tide-%d", dev_b,
			 round, dev_a, round);
		assert_int_equal(system(cmd), 0);
		link_event_none(p, fd);
		peer_set("up");
		assert_int_equal(link_event_wait(p, fd), 1);
		assert_int_equal(tide_port_link_get(p, &link), 0);
		assert_int_equal(link.up, 1);
		snprintf(cmd, sizeof(cmd), "ip link set dev %s alias tide-up-%d", dev_a, round);
		assert_int_equal(system(cmd), 0);
		link_event_none(p, fd);
	}
	tide_port_close(p);
}

/* The MTU is the interface's: read and set through it, limited by the UMEM frame. */
static void test_mtu(void **state)
{
	char spec[96], cmd[160];
	struct tide_port *p;
	struct tide_port_info info = {.sz = sizeof(info)};
	unsigned mtu;

	(void)state;
	snprintf(spec, sizeof(spec), "afxdp:dev=%s", dev_a);
	assert_int_equal(tide_port_open(spec, &p), 0);
	assert_int_equal(tide_port_info_get(p, &info), 0);
	assert_int_equal(info.max_frame, 2048 - 256);
	assert_int_equal(info.max_mtu, 2048 - 256 - TIDE_FRAME_OVERHEAD);
	assert_int_equal(info.mtu, 1500);
	assert_int_equal(tide_port_mtu_set(p, 1400), 0);
	/* Someone else changes it: the port reports the interface's. */
	snprintf(cmd, sizeof(cmd), "ip link show dev %s | grep -q 'mtu 1400 '", dev_a);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "ip link set dev %s mtu 1300", dev_a);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(tide_port_mtu_get(p, &mtu), 0);
	assert_int_equal(mtu, 1300);
	assert_int_equal(tide_port_mtu_set(p, info.max_mtu + 1), -EINVAL);
	assert_int_equal(tide_port_mtu_set(p, 1500), 0);
	assert_int_equal(tide_port_mtu_get(p, &mtu), 0);
	assert_int_equal(mtu, 1500);
	tide_port_close(p);
}

/*
 * Two tests in one executable: "afxdp", and "afxdp_txc_walk" (argument "txc_walk": the
 * benchmark-only key txc_walk=yes), which exits 77, a skip, in a build without
 * -Dbench_variants=true, where that key does not exist.
 */
int main(int argc, char **argv)
{
	const struct CMUnitTest walk_tests[] = {
		cmocka_unit_test(test_tx_walk),
		cmocka_unit_test(test_fwd_generic_walk),
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_specs),
		cmocka_unit_test(test_rx_native),
		cmocka_unit_test(test_rx_generic),
		cmocka_unit_test(test_tx),
		cmocka_unit_test(test_tx_too_long),
		cmocka_unit_test(test_tx_only_port),
		cmocka_unit_test(test_tx_kick_refused),
		cmocka_unit_test(test_fwd_native),
		cmocka_unit_test(test_two_queues),
		cmocka_unit_test(test_dev_removed),
		cmocka_unit_test(test_kill9),
		cmocka_unit_test(test_busy_poll_specs),
		cmocka_unit_test(test_busy_poll_on),
		cmocka_unit_test(test_busy_poll_refused),
		cmocka_unit_test(test_busy_poll_armed),
		cmocka_unit_test(test_fill_posted),
		cmocka_unit_test(test_rx_intr),
		cmocka_unit_test(test_link_events),
		cmocka_unit_test(test_mtu),
	};
	bool walk = argc > 1 && strcmp(argv[1], "txc_walk") == 0;
	int fd;

	if (walk && !TIDE_BENCH_VARIANTS) {
		printf("skip: txc_walk=yes exists only in a build with -Dbench_variants=true\n");
		return 77;
	}
	ns = getenv("TDX_NS");
	dev_a = getenv("TDX_A");
	peer_a = getenv("TDX_A_PEER");
	dev_b = getenv("TDX_B");
	peer_b = getenv("TDX_B_PEER");
	if (!ns || !dev_a || !peer_a || !dev_b || !peer_b || !getenv("TDX_ID")) {
		printf("skip: run through tests/afxdp/netns-env\n");
		return 77;
	}
	fd = socket(AF_XDP, SOCK_RAW, 0);
	if (fd < 0) {
		printf("skip: no AF_XDP sockets in this kernel (%s)\n", strerror(errno));
		return 77;
	}
	close(fd);
	if (getenv("TDX_FILTER"))
		cmocka_set_test_filter(getenv("TDX_FILTER"));
	if (walk)
		return cmocka_run_group_tests(walk_tests, NULL, NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
