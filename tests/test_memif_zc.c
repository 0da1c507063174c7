/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memif zero-copy client, what it does with the caller's buffers:
 *  - a chain other holders share (every segment with refcnt 2: a flooded or mirrored
 *    packet) is sent intact and the other holder's chain is left as it was (nb_segs, every
 *    link, length, payload); a shared one-segment packet and a chain of our own go out as
 *    they are. Nothing leaks: the pools are whole after the last holder frees.
 *  - a packet from a pool the server cannot see is copied; a copy that would need more
 *    descriptors than max_chain is dropped and counted, and the link stays;
 *  - quarantine: a server of the test's own sends disconnect but keeps its socket open and
 *    the client's pool mapped, and writes into the buffers the client had posted. None of
 *    them (nor the Tx buffers it was given) goes back to the pool meanwhile: the pool's
 *    count stays, every mbuf the application can allocate lies outside them and keeps its
 *    contents. They come back zc_quarantine ms after the server closes its socket, not
 *    before; the client reconnects only then. A port stop while a server keeps its socket
 *    open returns (after the bounded wait) with the pool whole.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <tide/lcore.h>

#include "memif_fake_peer.h"

#define QMS 300 /* zc_quarantine of the quarantine test */

static char dir[64];
static struct tide_pool *pool_s, *pool_c;

static struct tide_pool *make_pool(const char *name, bool shared)
{
	struct tide_pktpool_opts o = {.sz = sizeof(o),
				      .pool_flags = shared ? TIDE_POOL_F_SHARED : 0};
	struct tide_pool *p;

	MT_CHECK(tide_pktpool_create(name, 4096, 256, 0, &o, &p) == 0);
	return p;
}

/* The pool is whole: every buffer back, none twice. */
static void pool_whole(struct tide_pool *p)
{
	struct tide_pool_audit a;

	tide_pool_cache_flush(p);
	if (tide_pool_in_use(p) != 0)
		fprintf(stderr, "pool %s: %u buffers still in use\n", tide_pool_name(p),
			tide_pool_in_use(p));
	MT_CHECK(tide_pool_in_use(p) == 0);
	MT_CHECK(tide_pool_audit(p, &a) == 0);
	MT_CHECK(a.free == a.n && a.duplicates == 0 && a.foreign == 0);
}

static struct tide_port *open_port(const char *role, const char *extra, struct tide_pool *pool)
{
	char spec[256];
	struct tide_port *p;

	snprintf(spec, sizeof(spec), "memif:socket=%s/z.sock,role=%s,id=3,ring_size=256%s", dir,
		 role, extra);
	MT_CHECK(tide_port_open(spec, &p) == 0);
	MT_CHECK(tide_port_configure(p, 1, 1) == 0);
	MT_CHECK(tide_rxq_setup(p, 0, 256, pool, NULL) == 0);
	MT_CHECK(tide_txq_setup(p, 0, 256, NULL) == 0);
	MT_CHECK(tide_port_start(p) == 0);
	return p;
}

/* One packet from the server's Rx queue (5 s at most). */
static struct tide_mbuf *rx_one(struct tide_port *srv, struct tide_port *cli)
{
	double end = mt_now() + 5;
	struct tide_mbuf *m;

	while (tide_rx_burst(tide_port_rxq(srv, 0), &m, 1) == 0) {
		tide_port_poll_ctl(srv);
		tide_port_poll_ctl(cli);
		MT_CHECK(mt_now() < end);
	}
	return m;
}

/* Packet @seq of @len bytes from the client's pool, every segment held @refs times. */
static struct tide_mbuf *shared_pkt(uint64_t seq, uint32_t len, unsigned refs)
{
	struct tide_mbuf *m = mt_pkt(pool_c, 0, seq, len);

	MT_CHECK(m != NULL);
	for (struct tide_mbuf *s = m; s != NULL; s = s->next)
		tide_mbuf_refcnt_update(s, (int16_t)(refs - 1));
	return m;
}

/* The other holder's view of @m: @segs segments linked, @len bytes, payload @seq. */
static void chain_intact(const struct tide_mbuf *m, uint64_t seq, uint32_t len, unsigned segs)
{
	unsigned n = 0;
	uint32_t bytes = 0;

	for (const struct tide_mbuf *s = m; s != NULL; s = s->next) {
		n++;
		bytes += s->data_len;
	}
	if (m->nb_segs != segs || n != segs || bytes != len || m->pkt_len != len) {
		fprintf(stderr, "the other holder's chain was changed: nb_segs %u, %u linked, %u bytes (pkt_len %u); expected %u segments of %u bytes\n",
			m->nb_segs, n, bytes, m->pkt_len, segs, len);
		exit(1);
	}
	MT_CHECK(mt_check_pkt(m, 0, len) == seq);
}

static void t_shared_chain(void)
{
	static const struct {
		uint32_t len;
		unsigned refs;
	} cases[] = {
		{5000, 2}, /* 3 segments, shared: copied */
		{9000, 2}, /* 5 segments, shared: copied into a chain */
		{1000, 2}, /* one segment, shared: sent as it is */
		{5000, 1}, /* 3 segments, ours alone: sent as it is */
	};
	struct tide_port *srv = open_port("server", "", pool_s);
	struct tide_port *cli = open_port("client", ",zero_copy=yes", pool_c);
	unsigned room = tide_pktpool_data_room(pool_c);

	mt_wait_up(srv, cli);
	for (unsigned c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		uint32_t len = cases[c].len;
		unsigned segs = (len + room - 1) / room;
		struct tide_mbuf *m = shared_pkt(c, len, cases[c].refs), *r;
		struct tide_mbuf *keep = m;

		MT_CHECK(tide_tx_burst(tide_port_txq(cli, 0), &m, 1) == 1);
		r = rx_one(srv, cli);
		MT_CHECK(mt_check_pkt(r, 0, len) == c);
		tide_mbuf_free(r);
		/* The Tx completion (the server's tail) releases the client's reference. */
		tide_txq_done_cleanup(tide_port_txq(cli, 0), 0);
		if (cases[c].refs > 1) {
			chain_intact(keep, c, len, segs);
			tide_mbuf_free(keep);
		}
	}
	tide_port_close(srv); /* first: the client's stop then finds the server gone */
	tide_port_close(cli);
	pool_whole(pool_c);
	pool_whole(pool_s);
	printf("ok shared chains through zero-copy Tx: the other holder's chain intact, pools whole\n");
}

/* A 9000-byte one-segment packet from a pool that is no region: its copy needs 5 of the
 * client's 2048-byte mbufs, more than max_chain=3 allows. */
static void t_copy_over_max_chain(void)
{
	struct tide_port *srv = open_port("server", ",max_chain=3", pool_s);
	struct tide_port *cli = open_port("client", ",zero_copy=yes,max_chain=3", pool_c);
	struct tide_pool *big;
	struct tide_port_stats st = {.sz = sizeof(st)};
	struct tide_mbuf *m, *r;

	MT_CHECK(tide_pktpool_create("zbig", 64, 0, 9216, NULL, &big) == 0);
	mt_wait_up(srv, cli);
	m = mt_pkt(big, 0, 1, 9000);
	MT_CHECK(m != NULL && m->nb_segs == 1);
	MT_CHECK(tide_tx_burst(tide_port_txq(cli, 0), &m, 1) == 1);
	tide_port_stats_get(cli, &st);
	MT_CHECK(st.oerrors == 1 && st.opackets == 0);
	/* A copy that fits goes through. */
	m = mt_pkt(big, 0, 2, 4000);
	MT_CHECK(tide_tx_burst(tide_port_txq(cli, 0), &m, 1) == 1);
	r = rx_one(srv, cli);
	MT_CHECK(mt_check_pkt(r, 0, 4000) == 2);
	tide_mbuf_free(r);
	tide_port_stats_get(srv, &st);
	MT_CHECK(st.ierrors == 0 && st.ipackets == 1);
	tide_port_close(srv);
	tide_port_close(cli);
	pool_whole(pool_c);
	pool_whole(pool_s);
	pool_whole(big);
	tide_pool_free(big);
	printf("ok a copy longer than max_chain dropped and counted, one that fits sent\n");
}

/* ---- the quarantine test's server ---- */

struct fsrv {
	int lfd, fd;
	uint8_t *mem[4];
	size_t len[4];
	int efd[2];
	struct memif_ring *c2s, *s2c;
};

static void fs_send(struct fsrv *f, uint16_t type)
{
	struct memif_msg m = {.type = type};
	uint8_t buf[MEMIF_MSG_SIZE];

	if (type == MEMIF_MSG_HELLO) {
		struct memif_limits lim = {.regions = 4, .c2s_rings = 1, .s2c_rings = 1,
					   .max_log2_ring_size = 14};

		memif_msg_hello_from_limits(&m, &lim, "keeper");
	} else if (type == MEMIF_MSG_DISCONNECT) {
		snprintf(m.disconnect.reason, sizeof(m.disconnect.reason), "going, not gone");
	}
	MT_CHECK(memif_msg_encode(&m, buf) == 0);
	MT_CHECK(send(f->fd, buf, sizeof(buf), MSG_NOSIGNAL) == (ssize_t)sizeof(buf));
}

/* The next message from the client (polling it meanwhile). */
static uint16_t fs_recv(struct fsrv *f, struct tide_port *cli, struct memif_msg *m, int *fd)
{
	double end = mt_now() + 5;
	int rc;

	while ((rc = mt_recv_msg(f->fd, m, fd)) == 0) {
		MT_CHECK(mt_now() < end);
		tide_port_poll_ctl(cli);
	}
	MT_CHECK(rc > 0);
	return m->type;
}

/* Accept the client and play a correct server until the link is up. */
static void fs_connect(struct fsrv *f, struct tide_port *cli)
{
	double end = mt_now() + 5;
	struct memif_msg m;
	int fd;

	memset(f->mem, 0, sizeof(f->mem));
	f->efd[0] = f->efd[1] = -1;
	while ((f->fd = accept4(f->lfd, NULL, NULL, SOCK_NONBLOCK)) < 0) {
		MT_CHECK(mt_now() < end);
		tide_port_poll_ctl(cli);
	}
	fs_send(f, MEMIF_MSG_HELLO);
	MT_CHECK(fs_recv(f, cli, &m, &fd) == MEMIF_MSG_INIT);
	fs_send(f, MEMIF_MSG_ACK);
	for (;;) {
		uint16_t t = fs_recv(f, cli, &m, &fd);

		if (t == MEMIF_MSG_ADD_REGION) {
			unsigned i = m.add_region.index;

			MT_CHECK(i < 4 && fd >= 0);
			f->len[i] = m.add_region.size;
			f->mem[i] = mmap(NULL, f->len[i], PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			MT_CHECK(f->mem[i] != MAP_FAILED);
			close(fd);
		} else if (t == MEMIF_MSG_ADD_RING) {
			bool c2s = m.add_ring.flags & MEMIF_RING_FLAG_C2S;
			struct memif_ring *r = (struct memif_ring *)(f->mem[m.add_ring.region] +
								     m.add_ring.offset);

			*(c2s ? &f->c2s : &f->s2c) = r;
			f->efd[c2s] = fd;
		} else {
			MT_CHECK(t == MEMIF_MSG_CONNECT);
			break;
		}
		fs_send(f, MEMIF_MSG_ACK);
	}
	MT_CHECK(f->mem[1] != NULL); /* zero-copy: region 1 is the client's pool */
	fs_send(f, MEMIF_MSG_CONNECTED);
	MT_CHECK(mt_wait_link(cli, 1, 2));
}

static void fs_unmap(struct fsrv *f)
{
	for (int i = 0; i < 4; i++)
		if (f->mem[i] != NULL)
			munmap(f->mem[i], f->len[i]);
	for (int i = 0; i < 2; i++)
		if (f->efd[i] >= 0)
			close(f->efd[i]);
	memset(f->mem, 0, sizeof(f->mem));
}

/* The client's bursts while its link is down: nothing moves. */
static void idle_bursts(struct tide_port *cli)
{
	struct tide_mbuf *pk[32];

	tide_port_poll_ctl(cli);
	MT_CHECK(tide_rx_burst(tide_port_rxq(cli, 0), pk, 32) == 0);
	MT_CHECK(tide_tx_burst(tide_port_txq(cli, 0), pk, 0) == 0);
}

static unsigned in_use(struct tide_pool *p)
{
	tide_pool_cache_flush(p);
	return tide_pool_in_use(p);
}

/* What the server does with the buffers it was given: writes into every posted one. */
static void scribble(struct fsrv *f, unsigned posted)
{
	for (unsigned j = 0; j < posted; j++) {
		const struct memif_desc *d = &f->s2c->desc[j];

		MT_CHECK(d->region == 1 && (uint64_t)d->offset + d->length <= f->len[1]);
		memset(f->mem[1] + d->offset, 0xee, d->length);
	}
}

/*
 * While quarantined: allocate every free mbuf; none may be one the server was given, and
 * a pattern written into all of them survives the server writing into its buffers.
 */
static void none_reused(struct fsrv *f, unsigned posted)
{
	static struct tide_mbuf *got[4096];
	unsigned n = 0;

	while (n < 4096 && (got[n] = tide_mbuf_alloc(pool_c)) != NULL) {
		uint64_t a = got[n]->iova, b = a + got[n]->buf_len;

		for (unsigned j = 0; j < posted; j++) {
			uint64_t o = f->s2c->desc[j].offset;

			if (o >= a && o < b) {
				fprintf(stderr, "an mbuf the server was given (posted slot %u) was handed out again during the quarantine\n",
					j);
				exit(1);
			}
		}
		memset(tide_mbuf_mtod(got[n], void *), 0x5a, 256);
		n++;
	}
	scribble(f, posted);
	for (unsigned i = 0; i < n; i++) {
		const uint8_t *d = tide_mbuf_mtod(got[i], const uint8_t *);

		for (unsigned k = 0; k < 256; k++)
			MT_CHECK(d[k] == 0x5a);
	}
	tide_mbuf_free_bulk(got, n);
}

static void t_quarantine(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct tide_port *cli;
	struct fsrv f;
	char spec[256];
	unsigned posted, held, now_used;
	double t_close, t0;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/k.sock", dir);
	f.lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	MT_CHECK(f.lfd >= 0 && bind(f.lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
		 listen(f.lfd, 4) == 0);
	snprintf(spec, sizeof(spec),
		 "memif:socket=%s,role=client,id=0,ring_size=256,zero_copy=yes,zc_quarantine=%d",
		 sa.sun_path, QMS);
	cli = mt_port(spec, 1, 256, pool_c);
	fs_connect(&f, cli);

	/* The client posts its Rx buffers and sends 8 packets the server never completes. */
	{
		struct tide_mbuf *pk[8];

		MT_CHECK(tide_rx_burst(tide_port_rxq(cli, 0), pk, 8) == 0);
		for (unsigned i = 0; i < 8; i++)
			MT_CHECK((pk[i] = mt_pkt(pool_c, 0, i, 100)) != NULL);
		MT_CHECK(tide_tx_burst(tide_port_txq(cli, 0), pk, 8) == 8);
	}
	posted = __atomic_load_n(&f.s2c->head, __ATOMIC_ACQUIRE);
	MT_CHECK(posted > 0 && __atomic_load_n(&f.c2s->head, __ATOMIC_ACQUIRE) == 8);
	held = in_use(pool_c);
	MT_CHECK(held == posted + 8);

	/* Disconnect from the server's side; it keeps its socket and the mapping. */
	fs_send(&f, MEMIF_MSG_DISCONNECT);
	MT_CHECK(mt_wait_link(cli, 0, 2));
	for (int i = 0; i < 20; i++)
		idle_bursts(cli);
	now_used = in_use(pool_c);
	if (now_used != held) {
		fprintf(stderr, "buffers the server still had went back to the pool at the disconnect: %u in use, %u held by the server\n",
			now_used, held);
		exit(1);
	}
	none_reused(&f, posted);
	/* Held as long as the server keeps its socket (the bound is MEMIF_ZQ_CLOSE_MS), longer
	 * than zc_quarantine; and no new connection meanwhile. */
	t0 = mt_now();
	while (mt_now() < t0 + 2 * QMS / 1000.0) {
		struct pollfd pl = {.fd = f.lfd, .events = POLLIN};

		idle_bursts(cli);
		MT_CHECK(in_use(pool_c) == held);
		if (poll(&pl, 1, 0) != 0) {
			fprintf(stderr, "the client reconnected during the quarantine\n");
			exit(1);
		}
	}

	/* The server closes (the mapping stays): QMS ms more, then they come back. */
	close(f.fd);
	t_close = mt_now();
	idle_bursts(cli);
	now_used = in_use(pool_c);
	if (mt_now() - t_close < QMS / 1000.0) {
		MT_CHECK(now_used == held);
		none_reused(&f, posted);
	}
	MT_CHECK(mt_wait_pool_back(cli, 1, pool_c, 3));
	if (mt_now() - t_close < QMS / 1000.0) {
		fprintf(stderr, "the buffers came back %.0f ms after the server closed; zc_quarantine=%d\n",
			(mt_now() - t_close) * 1000, QMS);
		exit(1);
	}
	fs_unmap(&f);
	pool_whole(pool_c);

	/* Then the client reconnects; a stop while the server keeps its socket returns. */
	fs_connect(&f, cli);
	{
		struct tide_mbuf *pk[8];

		MT_CHECK(tide_rx_burst(tide_port_rxq(cli, 0), pk, 8) == 0);
	}
	MT_CHECK(in_use(pool_c) > 0);
	t0 = mt_now();
	tide_port_close(cli);
	MT_CHECK(mt_now() - t0 >= QMS / 1000.0);
	pool_whole(pool_c);
	close(f.fd);
	fs_unmap(&f);
	close(f.lfd);
	unlink(sa.sun_path);
	printf("ok quarantine: %u posted and 8 sent buffers held while the server kept them, back %d ms after it closed\n",
	       posted, QMS);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	alarm(100);
	mt_tmpdir(dir, sizeof(dir), "memif-zc");
	tide_thread_register();
	pool_s = make_pool("zsrv", false);
	pool_c = make_pool("zcli", true);
	t_shared_chain();
	t_copy_over_max_chain();
	t_quarantine();
	tide_pool_free(pool_s);
	tide_pool_free(pool_c);
	return 0;
}
