/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memif zero-copy client, what it does with the caller's buffers:
 *  - a chain other holders share (every segment with refcnt 2: a flooded or mirrored
 *    packet) is sent intact and the other holder's chain is left as it was (nb_segs, every
 *    link, length, payload); a shared one-segment packet and a chain of our own go out as
 *    they are. Nothing leaks: the pools are whole after the last holder frees.
 *  - a packet from a pool the server cannot see is copied; a copy that would need more
 *    descriptors than max_chain is dropped and counted, and the link stays.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <unistd.h>

#include <tide/lcore.h>

#include "memif_util.h"

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

static void wait_up(struct tide_port *a, struct tide_port *b)
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

	wait_up(srv, cli);
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
	tide_port_close(cli);
	tide_port_close(srv);
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
	struct tide_port_stats st;
	struct tide_mbuf *m, *r;

	MT_CHECK(tide_pktpool_create("zbig", 64, 0, 9216, NULL, &big) == 0);
	wait_up(srv, cli);
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
	tide_port_close(cli);
	tide_port_close(srv);
	pool_whole(pool_c);
	pool_whole(pool_s);
	pool_whole(big);
	tide_pool_free(big);
	printf("ok a copy longer than max_chain dropped and counted, one that fits sent\n");
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	alarm(60);
	mt_tmpdir(dir, sizeof(dir), "memif-zc");
	tide_thread_register();
	pool_s = make_pool("zsrv", false);
	pool_c = make_pool("zcli", true);
	t_shared_chain();
	t_copy_over_max_chain();
	tide_pool_free(pool_s);
	tide_pool_free(pool_c);
	return 0;
}
