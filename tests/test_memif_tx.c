/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memif Tx room and limits, tide server and tide client in one process (the control plane
 * never blocks, so the test drives both sides in turn):
 *  - a burst of chained packets into a ring the peer has drained is accepted whole, at
 *    random burst sizes and packet sizes 60..9000 (room is counted per descriptor), in
 *    both directions, copy and zero-copy;
 *  - a client whose ring_size is below its Tx descriptor count keeps sending;
 *  - empty packets are dropped and counted on Tx, chains above max_chain on Tx and Rx,
 *    and the link stays up;
 *  - a peer that goes silent in the handshake is dropped after handshake_timeout (both
 *    roles) and a good peer connects afterwards;
 *  - interrupt flags: a polling receiver is never kicked; one that asked for interrupts
 *    is kicked at most once per burst;
 *  - several interface ids served on one socket; unknown and busy ids refused;
 *  - a secret libmemif would truncate is refused at open;
 *  - client buffers smaller (1024) and larger (4096) than the 2048-byte mbufs: frames one
 *    descriptor holds and frames that need two, one segment or chained, both ways, every
 *    segment within its mbuf; a burst larger than the free ring is cut at the room.
 *  - tx_stores=stream, cache and auto: frames up to 2048 bytes and chains, both ways (the
 *    streaming stores' bytes checked as every other's);
 *  - the Tx loop with write prefetches of the slots ahead (copy_claim) and the one without
 *    are different functions, picked by copy_claims(), which TIDE_PREFETCHW=0|1 sets
 *    (the test memif_tx_no_prefetchw runs this file with 0: the other loop is the one
 *    every case here then runs); another value is reported once, and the CPU's answer
 *    stays (memif_tx_bad_prefetchw).
 * Every packet is checked (sequence and payload) and every pool is full at the end.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <tide/lcore.h>
#include <tide/log.h>

#include "copy.h"
#include "memif.h"
#include "memif_util.h"

static char dir[64];
static struct tide_pool *pool_s, *pool_c;
static uint32_t rng = 12345;

static uint32_t rnd(uint32_t n)
{
	rng = rng * 1103515245u + 12345u;
	return (rng >> 8) % n;
}

static struct tide_pool *make_pool(const char *name, bool shared)
{
	struct tide_pktpool_opts o = {.sz = sizeof(o),
				      .pool_flags = shared ? TIDE_POOL_F_SHARED : 0};
	struct tide_pool *p;

	MT_CHECK(tide_pktpool_create(name, 16384, 256, 0, &o, &p) == 0);
	return p;
}

static void pump_ctl(struct tide_port *a, struct tide_port *b)
{
	tide_port_poll_ctl(a);
	tide_port_poll_ctl(b);
}

/* Poll both until @p's link is @up; fails after 5 s with a message. */
static void wait_link(struct tide_port *a, struct tide_port *b, struct tide_port *p, int up)
{
	double end = mt_now() + 5;
	struct tide_link l;

	for (;;) {
		pump_ctl(a, b);
		tide_port_link_get(p, &l);
		if (l.up == up)
			return;
		if (mt_now() > end) {
			fprintf(stderr, "link of %s did not go %s\n", tide_port_name(p),
				up ? "up" : "down");
			exit(1);
		}
	}
}

static unsigned rxd = 1024;

static struct tide_port *open_port(const char *fmt, const char *extra, bool server,
				   unsigned txd)
{
	char spec[256];
	struct tide_port *p;

	snprintf(spec, sizeof(spec), fmt, dir, server ? "server" : "client", extra);
	MT_CHECK(tide_port_open(spec, &p) == 0);
	MT_CHECK(tide_port_configure(p, 1, 1) == 0);
	MT_CHECK(tide_rxq_setup(p, 0, server ? 1024 : rxd, server ? pool_s : pool_c, NULL) == 0);
	MT_CHECK(tide_txq_setup(p, 0, txd, NULL) == 0);
	MT_CHECK(tide_port_start(p) == 0);
	return p;
}

/* Receive everything @rx has; check order and payload. Returns how many. */
static unsigned drain(struct tide_port *rx, uint64_t *next, uint32_t fixed)
{
	struct tide_mbuf *pk[64];
	unsigned k, total = 0;

	while ((k = tide_rx_burst(tide_port_rxq(rx, 0), pk, 64)) > 0) {
		for (unsigned i = 0; i < k; i++) {
			uint64_t seq = mt_check_pkt(pk[i], 0, pk[i]->pkt_len);

			MT_CHECK(seq == *next);
			MT_CHECK(fixed == 0 || pk[i]->pkt_len == fixed);
			(*next)++;
		}
		tide_mbuf_free_bulk(pk, k);
		total += k;
	}
	return total;
}

/*
 * @bursts bursts from @tx to @rx, each of 1..32 packets of random sizes (60..@maxlen),
 * drained by @rx after each: every burst must be accepted whole, since the ring is empty
 * before it and can hold it.
 */
static void bursts_whole(struct tide_port *tx, struct tide_port *rx, struct tide_pool *pool,
			 unsigned bursts, uint32_t maxlen, unsigned slots)
{
	uint64_t seq = 0, next = 0;

	for (unsigned b = 0; b < bursts; b++) {
		struct tide_mbuf *pk[32];
		unsigned want = 1 + rnd(32), n = 0, used = 0, k;

		/* As many as the ring holds: 2048-byte buffers and segments, one descriptor each. */
		while (n < want) {
			uint32_t len = 60 + rnd(maxlen - 59);
			unsigned nd = (len + 2047) / 2048;

			if (used + nd > slots)
				break;
			used += nd;
			pk[n] = mt_pkt(pool, 0, seq + n, len);
			MT_CHECK(pk[n] != NULL);
			n++;
		}
		k = tide_tx_burst(tide_port_txq(tx, 0), pk, (uint16_t)n);
		if (k != n) {
			fprintf(stderr, "burst %u: %u of %u packets accepted into a drained ring\n",
				b, k, n);
			exit(1);
		}
		seq += n;
		drain(rx, &next, 0);
		MT_CHECK(next == seq);
	}
}

static void check_clean(struct tide_port *a, struct tide_port *b)
{
	struct tide_port_stats st = {.sz = sizeof(st)};

	tide_port_stats_get(a, &st);
	MT_CHECK(st.ierrors == 0 && st.oerrors == 0);
	tide_port_stats_get(b, &st);
	MT_CHECK(st.ierrors == 0 && st.oerrors == 0);
}

static void close_pair(struct tide_port *s, struct tide_port *c)
{
	tide_port_close(c);
	tide_port_close(s);
	MT_CHECK(tide_pool_in_use(pool_s) == 0);
	MT_CHECK(tide_pool_in_use(pool_c) == 0);
}

static const char *FMT = "memif:socket=%s/a.sock,role=%s,id=5%s";

static void t_room(const char *extra, unsigned txd, unsigned slots, const char *what)
{
	struct tide_port *s = open_port(FMT, "", true, txd);
	struct tide_port *c = open_port(FMT, extra, false, txd);

	uint64_t none = 0;

	wait_link(s, c, c, 1);
	/* The client posts its Rx buffers at its first Rx burst. */
	MT_CHECK(drain(c, &none, 0) == 0);
	bursts_whole(c, s, pool_c, 300, 9000, slots); /* client -> server */
	bursts_whole(s, c, pool_s, 300, 9000, slots); /* server -> client */
	check_clean(s, c);
	close_pair(s, c);
	printf("ok %s: every burst accepted whole, both ways\n", what);
}

/* tx_stores=@mode on both sides: frames of 60..2048 bytes (one descriptor; from 256 bytes
 * on, streamed under "stream") and 60..9000 (chains too), both ways, every byte checked. */
static void t_stores(const char *mode)
{
	char extra[64];
	struct tide_port *s, *c;
	uint64_t none = 0;

	snprintf(extra, sizeof(extra), ",tx_stores=%s", mode);
	s = open_port(FMT, extra, true, 1024);
	c = open_port(FMT, extra, false, 1024);
	wait_link(s, c, c, 1);
	MT_CHECK(drain(c, &none, 0) == 0);
	bursts_whole(c, s, pool_c, 300, 2048, 1024);
	bursts_whole(s, c, pool_s, 300, 2048, 1024);
	bursts_whole(c, s, pool_c, 100, 9000, 1024);
	bursts_whole(s, c, pool_s, 100, 9000, 1024);
	/* The key took: a queue under "stream" says it streams, one under "cache" that it
	 * does not (where there is no streaming path, none does). Under "auto" the way
	 * depends on the machine; only the bytes are checked. */
	for (int side = 0; side < 2 && strcmp(mode, "auto") != 0; side++) {
		uint64_t v = 99;

		MT_CHECK(tide_xstats_get_by_name(side ? c : s, "memif_tx_stream_queues", &v) == 0);
		MT_CHECK(v == (strcmp(mode, "stream") == 0 && COPY_HAVE_STREAM ? 1u : 0u));
	}
	check_clean(s, c);
	close_pair(s, c);
	printf("ok tx_stores=%s: every frame whole, both ways\n", mode);
}

static uint64_t errors(struct tide_port *p, bool rx)
{
	struct tide_port_stats st = {.sz = sizeof(st)};

	tide_port_stats_get(p, &st);
	return rx ? st.rxq[0].errors : st.txq[0].errors;
}

/* Empty packets and chains above max_chain: dropped and counted, never sent; link stays. */
static void t_drops(void)
{
	struct tide_port *s = open_port(FMT, ",max_chain=2", true, 1024);
	struct tide_port *c = open_port(FMT, ",max_chain=3", false, 1024);
	struct tide_memif_info info = {.sz = sizeof(info)};
	struct tide_mbuf *pk[3];
	uint64_t next = 0;

	wait_link(s, c, c, 1);
	MT_CHECK(drain(c, &next, 0) == 0); /* the client posts its Rx buffers */
	/* Client Tx: empty (dropped), 5000 bytes = 3 descriptors (sent), 9000 = 5 (dropped). */
	pk[0] = tide_mbuf_alloc(pool_c);
	pk[1] = mt_pkt(pool_c, 0, 0, 5000);
	pk[2] = mt_pkt(pool_c, 0, 1, 9000);
	MT_CHECK(tide_tx_burst(tide_port_txq(c, 0), pk, 3) == 3);
	MT_CHECK(errors(c, false) == 2);
	/* Server Rx: the 3-descriptor chain is above its max_chain=2: dropped, counted. */
	MT_CHECK(drain(s, &next, 0) == 0);
	MT_CHECK(errors(s, true) == 1);
	/* A packet that fits passes; the link never went down. */
	pk[0] = mt_pkt(pool_c, 0, 0, 3000);
	MT_CHECK(tide_tx_burst(tide_port_txq(c, 0), pk, 1) == 1);
	MT_CHECK(drain(s, &next, 3000) == 1);
	/* Server Tx: an empty packet is never sent. */
	pk[0] = tide_mbuf_alloc(pool_s);
	pk[1] = mt_pkt(pool_s, 0, 0, 100);
	MT_CHECK(tide_tx_burst(tide_port_txq(s, 0), pk, 2) == 2);
	MT_CHECK(errors(s, false) == 1);
	next = 0;
	MT_CHECK(drain(c, &next, 100) == 1);
	pump_ctl(s, c);
	MT_CHECK(tide_memif_info_get(c, &info) == 0 && info.connected && info.disconnects == 0);
	MT_CHECK(tide_memif_info_get(s, &info) == 0 && info.connected && info.disconnects == 0);
	close_pair(s, c);
	printf("ok empty packets and chains above max_chain dropped and counted, link up\n");
}

static int eventfd_ready(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, 0) == 1;
}

/* A polling receiver is not kicked; one that asked for interrupts is, once per burst. */
static void t_intr(void)
{
	struct tide_port *s = open_port(FMT, "", true, 1024);
	struct tide_port *c = open_port(FMT, "", false, 1024);
	struct tide_mbuf *pk[4];
	uint64_t next = 0, v;
	int fd;

	wait_link(s, c, c, 1);
	wait_link(s, c, s, 1);
	MT_CHECK(drain(c, &next, 0) == 0); /* the client posts its Rx buffers */
	fd = tide_memif_rxq_eventfd(s, 0);
	MT_CHECK(fd >= 0);
	for (int i = 0; i < 4; i++)
		pk[i] = mt_pkt(pool_c, 0, next + (uint64_t)i, 64);
	MT_CHECK(tide_tx_burst(tide_port_txq(c, 0), pk, 4) == 4);
	MT_CHECK(!eventfd_ready(fd)); /* the server polls: no kick */
	MT_CHECK(drain(s, &next, 64) == 4);
	MT_CHECK(tide_memif_rxq_intr(s, 0, 1) == 0);
	for (int i = 0; i < 4; i++)
		pk[i] = mt_pkt(pool_c, 0, next + (uint64_t)i, 64);
	MT_CHECK(tide_tx_burst(tide_port_txq(c, 0), pk, 4) == 4);
	MT_CHECK(eventfd_ready(fd));
	MT_CHECK(read(fd, &v, sizeof(v)) == sizeof(v) && v == 1); /* one kick per burst */
	MT_CHECK(drain(s, &next, 64) == 4);
	/* The other way, through the generic port API: the client enables its Rx interrupt. */
	fd = tide_rxq_intr_fd(c, 0);
	MT_CHECK(fd >= 0 && fd == tide_memif_rxq_eventfd(c, 0));
	MT_CHECK(tide_rxq_intr_fd(c, 1) == -EINVAL);
	MT_CHECK(tide_rxq_intr_enable(c, 0) == 0);
	for (int i = 0; i < 4; i++)
		pk[i] = mt_pkt(pool_s, 0, (uint64_t)i, 64);
	MT_CHECK(tide_tx_burst(tide_port_txq(s, 0), pk, 4) == 4);
	MT_CHECK(eventfd_ready(fd) && read(fd, &v, sizeof(v)) == sizeof(v) && v == 1);
	next = 0;
	MT_CHECK(drain(c, &next, 64) == 4);
	/* Disabled again: no kick. */
	MT_CHECK(tide_rxq_intr_disable(c, 0) == 0);
	for (int i = 0; i < 4; i++)
		pk[i] = mt_pkt(pool_s, 0, 4 + (uint64_t)i, 64);
	MT_CHECK(tide_tx_burst(tide_port_txq(s, 0), pk, 4) == 4);
	MT_CHECK(!eventfd_ready(fd));
	MT_CHECK(drain(c, &next, 64) == 4);
	close_pair(s, c);
	/* A driver without Rx interrupts says so. */
	{
		struct tide_port *np;

		MT_CHECK(tide_port_open("null:size=64", &np) == 0);
		MT_CHECK(tide_port_configure(np, 1, 1) == 0);
		MT_CHECK(tide_rxq_setup(np, 0, 1024, pool_s, NULL) == 0);
		MT_CHECK(tide_rxq_intr_fd(np, 0) == -ENOTSUP);
		MT_CHECK(tide_rxq_intr_enable(np, 0) == -ENOTSUP);
		tide_port_close(np);
	}
	printf("ok interrupts: none to a polling receiver, one per burst when asked\n");
}

static struct tide_port *also_poll[2]; /* servers to drive while waiting */

static void wait_reason(struct tide_port *p, const char *why)
{
	struct tide_memif_info info = {.sz = sizeof(info)};
	double end = mt_now() + 5;

	for (;;) {
		tide_port_poll_ctl(p);
		for (int i = 0; i < 2; i++)
			if (also_poll[i])
				tide_port_poll_ctl(also_poll[i]);
		MT_CHECK(tide_memif_info_get(p, &info) == 0);
		if (info.disconnects > 0)
			break;
		if (mt_now() > end) {
			fprintf(stderr, "%s: no disconnect (want '%s')\n", tide_port_name(p), why);
			exit(1);
		}
	}
	if (strcmp(info.reason, why) != 0) {
		fprintf(stderr, "%s: reason '%s', want '%s'\n", tide_port_name(p), info.reason, why);
		exit(1);
	}
}

/* A silent peer in the handshake is dropped after handshake_timeout, in both roles. */
static void t_handshake_timeout(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct tide_port *s, *c;
	int fd, l;

	/* Server: a client that connects and never sends init. */
	s = open_port(FMT, ",handshake_timeout=50", true, 1024);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/a.sock", dir);
	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	MT_CHECK(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	wait_reason(s, "handshake timed out");
	close(fd);
	c = open_port(FMT, "", false, 1024);
	wait_link(s, c, c, 1);
	close_pair(s, c);

	/* Client: a server that accepts and never says hello. */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/b.sock", dir);
	l = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	MT_CHECK(bind(l, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(l, 4) == 0);
	c = open_port("memif:socket=%s/b.sock,role=%s,id=5%s", ",handshake_timeout=50", false,
		      1024);
	wait_reason(c, "handshake timed out");
	tide_port_close(c);
	close(l);
	unlink(sa.sun_path);
	MT_CHECK(tide_pool_in_use(pool_c) == 0);
	printf("ok silent peer dropped after handshake_timeout, both roles\n");
}

/* Several interface ids on one server socket, as libmemif and VPP serve them. */
static void t_ids(void)
{
	const char *f = "memif:socket=%s/ids.sock,role=%s%s";
	struct tide_port *s1 = open_port(f, ",id=1", true, 1024);
	struct tide_port *s2 = open_port(f, ",id=2", true, 1024);
	struct tide_port *c1 = open_port(f, ",id=1", false, 1024);
	struct tide_port *c2 = open_port(f, ",id=2", false, 1024);
	struct tide_port *c3, *dup;
	struct tide_memif_info info = {.sz = sizeof(info)};
	char spec[256];

	wait_link(s1, c1, c1, 1);
	wait_link(s2, c2, c2, 1);
	pump_ctl(s1, s2);
	/* Each client reaches the port of its own id, both at once, counts exact. */
	for (int round = 0; round < 2; round++) {
		struct tide_port *c = round ? c2 : c1, *s = round ? s2 : s1, *o = round ? s1 : s2;
		struct tide_mbuf *pk[8];
		uint64_t next = 0, none = 0;

		for (int i = 0; i < 8; i++)
			pk[i] = mt_pkt(pool_c, 0, (uint64_t)i, 200 + (uint32_t)round);
		MT_CHECK(tide_tx_burst(tide_port_txq(c, 0), pk, 8) == 8);
		MT_CHECK(drain(s, &next, 200 + (uint32_t)round) == 8);
		MT_CHECK(drain(o, &none, 0) == 0);
	}
	/* An id nobody serves, and an id that is connected already: refused with the reason. */
	also_poll[0] = s1;
	also_poll[1] = s2;
	c3 = open_port(f, ",id=3", false, 1024);
	wait_reason(c3, "ID not found");
	tide_port_close(c3);
	dup = open_port(f, ",id=2", false, 1024);
	wait_reason(dup, "already connected");
	tide_port_close(dup);
	also_poll[0] = also_poll[1] = NULL;
	/* A second server for an id the socket serves already cannot start. */
	snprintf(spec, sizeof(spec), f, dir, "server", ",id=2");
	MT_CHECK(tide_port_open(spec, &dup) == 0);
	MT_CHECK(tide_port_configure(dup, 1, 1) == 0);
	MT_CHECK(tide_rxq_setup(dup, 0, 1024, pool_s, NULL) == 0);
	MT_CHECK(tide_txq_setup(dup, 0, 1024, NULL) == 0);
	MT_CHECK(tide_port_start(dup) == -EADDRINUSE);
	tide_port_close(dup);
	/* One id going away leaves the other connected. */
	tide_port_close(s1);
	wait_link(c1, c2, c1, 0);
	pump_ctl(s2, c2);
	MT_CHECK(tide_memif_info_get(c2, &info) == 0 && info.connected && info.disconnects == 0);
	tide_port_close(c1);
	tide_port_close(c2);
	tide_port_close(s2);
	MT_CHECK(tide_pool_in_use(pool_s) == 0 && tide_pool_in_use(pool_c) == 0);
	printf("ok two interface ids on one socket; unknown and busy ids refused\n");
}

static void t_secret(void)
{
	char spec[256];
	struct tide_port *p;

	snprintf(spec, sizeof(spec), "memif:socket=%s/c.sock,secret=%s", dir,
		 "abcdefghijklmnopqrstuvwx"); /* 24: libmemif keeps 23 */
	MT_CHECK(tide_port_open(spec, &p) == -EINVAL);
	snprintf(spec, sizeof(spec), "memif:socket=%s/c.sock,secret=%s", dir,
		 "abcdefghijklmnopqrstuvw");
	MT_CHECK(tide_port_open(spec, &p) == 0);
	tide_port_close(p);
	printf("ok secret: 23 characters accepted, 24 refused\n");
}

/* Every segment of @m within its buffer (a copy that ran past the data room would not be). */
static void check_segs(const struct tide_mbuf *m)
{
	for (; m != NULL; m = m->next)
		MT_CHECK((unsigned)m->data_off + m->data_len <= m->buf_len);
}

/* A one-segment packet of @len bytes (up to the data room), payload as mt_pkt(). */
static struct tide_mbuf *flat_pkt(struct tide_pool *pool, uint64_t seq, uint32_t len)
{
	struct tide_mbuf *m = tide_mbuf_alloc(pool);
	uint8_t *d;
	uint32_t q = 0;

	MT_CHECK(m != NULL && len <= tide_pktpool_data_room(pool));
	d = (uint8_t *)tide_mbuf_append(m, (uint16_t)len);
	for (uint32_t i = 0; i < len; i++)
		d[i] = mt_byte(0, seq, i);
	memcpy(d, &q, 4);
	memcpy(d + 4, &seq, 8);
	return m;
}

/* One burst of @n packets of @lens (cycled; negative: chained, else one segment) from @tx,
 * all accepted, all received by @rx in order with their payload and within their mbufs. */
static void sized_burst(struct tide_port *tx, struct tide_port *rx, struct tide_pool *pool,
			const int *lens, unsigned nl, unsigned n, uint64_t *seq)
{
	struct tide_mbuf *pk[32];
	unsigned got = 0;
	double end = mt_now() + 5;

	MT_CHECK(n <= 32);
	for (unsigned i = 0; i < n; i++) {
		int l = lens[(*seq + i) % nl];

		pk[i] = l < 0 ? mt_pkt(pool, 0, *seq + i, (uint32_t)-l)
			      : flat_pkt(pool, *seq + i, (uint32_t)l);
		MT_CHECK(pk[i] != NULL);
	}
	MT_CHECK(tide_tx_burst(tide_port_txq(tx, 0), pk, (uint16_t)n) == n);
	while (got < n) {
		struct tide_mbuf *r[32];
		unsigned k = tide_rx_burst(tide_port_rxq(rx, 0), r, 32);

		MT_CHECK(mt_now() < end);
		for (unsigned i = 0; i < k; i++) {
			int l = lens[(*seq + got + i) % nl];
			uint32_t len = (uint32_t)(l < 0 ? -l : l);

			check_segs(r[i]);
			MT_CHECK(mt_check_pkt(r[i], 0, len) == *seq + got + i);
		}
		tide_mbuf_free_bulk(r, k);
		got += k;
	}
	*seq += n;
}

/* Client buffers apart from the mbuf data room (2048): both ways, every size class. */
static void t_bufsize(unsigned buf)
{
	static const int lens[] = {64, 1000, 1024, 1025, 1500, 2048, -3000, 60, 128, -4096, 129};
	const unsigned nl = sizeof(lens) / sizeof(lens[0]);
	char extra[32];
	struct tide_port *s, *c;
	uint64_t none = 0, seq = 0;

	snprintf(extra, sizeof(extra), ",buffer=%u", buf);
	s = open_port(FMT, "", true, 1024);
	c = open_port(FMT, extra, false, 1024);
	wait_link(s, c, c, 1);
	MT_CHECK(drain(c, &none, 0) == 0);
	for (unsigned b = 0; b < 40; b++) {
		sized_burst(c, s, pool_c, lens, nl, 1 + b % 32, &seq); /* client -> server */
		seq -= 1 + b % 32;
		sized_burst(s, c, pool_s, lens, nl, 1 + b % 32, &seq); /* server -> client */
	}
	check_clean(s, c);
	close_pair(s, c);
	printf("ok client buffer=%u: frames of 60..4096 bytes, one segment or chained, both "
	       "ways\n", buf);
}

/* A burst larger than the free ring: accepted up to the room, the rest left to the caller;
 * after a drain the rest goes through, in order. */
static void t_burst_over_room(void)
{
	struct tide_port *s = open_port(FMT, "", true, 1024);
	struct tide_port *c = open_port(FMT, ",ring_size=16", false, 1024);
	struct tide_mbuf *pk[32];
	uint64_t none = 0, next = 0;
	unsigned k;

	wait_link(s, c, c, 1);
	MT_CHECK(drain(c, &none, 0) == 0);
	for (unsigned i = 0; i < 32; i++)
		pk[i] = flat_pkt(pool_c, i, 100);
	k = tide_tx_burst(tide_port_txq(c, 0), pk, 32);
	MT_CHECK(k == 16);
	MT_CHECK(tide_tx_burst(tide_port_txq(c, 0), pk + k, (uint16_t)(32 - k)) == 0);
	MT_CHECK(drain(s, &next, 100) == 16);
	MT_CHECK(tide_tx_burst(tide_port_txq(c, 0), pk + k, (uint16_t)(32 - k)) == 16);
	MT_CHECK(drain(s, &next, 100) == 16 && next == 32);
	check_clean(s, c);
	close_pair(s, c);
	printf("ok a 32-packet burst into a 16-slot ring: 16 taken, the rest after a drain\n");
}

static unsigned claim_warnings;

static void claim_log(enum tide_log_level level, const char *component, const char *msg,
		      void *user)
{
	(void)user;
	if (level == TIDE_LOG_WARNING && strstr(msg, "TIDE_PREFETCHW=") != NULL)
		claim_warnings++;
	fprintf(stderr, "tide: %s: %s\n", component, msg);
}

static void t_claim_select(void)
{
	const char *e = getenv("TIDE_PREFETCHW");
	const bool cpu = copy_prefetchw; /* the CPU's answer: no queue has started yet */
	bool on, saved;
	struct memif_port mp = {0};

	enum tide_log_level level = tide_log_get_level();

	tide_log_set_level(TIDE_LOG_WARNING); /* the tests' environment says err */
	tide_log_set_handler(claim_log, NULL);
	on = copy_claims();
	MT_CHECK(copy_claims() == on); /* the environment is read once */
	tide_log_set_handler(NULL, NULL);
	tide_log_set_level(level);
	if (e != NULL && strcmp(e, "0") == 0)
		MT_CHECK(!on && claim_warnings == 0);
	else if (e != NULL && strcmp(e, "1") == 0)
		MT_CHECK(on && claim_warnings == 0);
	else if (e == NULL || *e == '\0')
		MT_CHECK(on == cpu && claim_warnings == 0);
	else /* not understood: said once, and the CPU's answer stays */
		MT_CHECK(on == cpu && claim_warnings == 1);
	saved = copy_prefetchw;
	for (int role = 0; role < 2; role++) {
		tide_tx_burst_fn with, without;

		mp.role = role ? MEMIF_ROLE_SERVER : MEMIF_ROLE_CLIENT;
		copy_prefetchw = true;
		with = memif_copy_tx_fn(&mp, MEMIF_FREE_AFTER);
		copy_prefetchw = false;
		without = memif_copy_tx_fn(&mp, MEMIF_FREE_AFTER);
		MT_CHECK(with != NULL && without != NULL && with != without);
	}
	copy_prefetchw = saved;
	printf("ok Tx loop with claims %s (TIDE_PREFETCHW=%s%s), a different function without\n",
	       on ? "on" : "off", e ? e : "unset", claim_warnings ? ", reported as not understood" : "");
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	alarm(100);
	mt_tmpdir(dir, sizeof(dir), "memif-tx");
	tide_thread_register();
	t_claim_select();
	pool_s = make_pool("srv", false);
	pool_c = make_pool("cli", true);
	t_room("", 1024, 1024, "copy, ring 1024");
	t_room(",ring_size=64", 1024, 64, "copy, ring_size=64 below 1024 Tx descriptors");
	rxd = 256; /* zero-copy: the Rx queue posts exactly one ring */
	t_room(",ring_size=256,zero_copy=yes", 1024, 256,
	       "zero-copy client, ring_size=256 below 1024 Tx descriptors");
	rxd = 1024;
	t_stores("stream");
	t_stores("cache");
	t_stores("auto");
	t_drops();
	t_intr();
	t_handshake_timeout();
	t_ids();
	t_secret();
	t_bufsize(1024);
	t_bufsize(4096);
	t_burst_over_room();
	tide_pool_free(pool_s);
	tide_pool_free(pool_c);
	return 0;
}
