/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A hostile memif server against a tide client port, in one process (the control plane
 * never blocks, so the test drives both sides). It speaks the protocol, then breaks one
 * rule per case: a first message of the wrong size, not a hello, with an fd, or of an
 * incompatible version; an answer out of turn; a handshake that stalls (before hello and
 * before connected); and after a good handshake, in shared memory: C2S tail moving beyond
 * what was sent or backwards, S2C tail moving beyond the posted buffers, a descriptor longer
 * than the client's buffer (alone or as a chain's second segment), an endless or
 * unterminated chain, a region out of range or an offset beyond the region (the copy client
 * copies from its own buffer, but checks the descriptor first). Each time tide
 * disconnects with the right reason, counts it, holds no buffer, and a good handshake
 * afterwards passes a packet each way. Frames the client must drop without dropping the
 * link (empty, chain above max_chain) are counted in Rx errors.
 *
 * Then the same shared-memory cases against a zero-copy client (zero_copy=yes: its Rx pool
 * is region 1, and the server writes packets straight into the client's mbufs), whose
 * receive path has its own checks (drivers/memif/memif_zc.c): S2C tail beyond the posted
 * buffers, a length above the posted data room, endless and unterminated chains, a chain
 * cut short by a bad segment (its segments go back to the pool one by one, none twice),
 * empty and over-long chains dropped and counted. A descriptor whose region and offset the
 * server rewrote: the copy client refuses it (it checks them against its regions, a
 * violation); the zero-copy client receives the packet from its own mbuf and reads nothing
 * where the descriptor points. After each case the pool is whole (audit: nothing lost,
 * nothing freed twice).
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <tide/lcore.h>

#include "memif_fake_peer.h"

#define LOG2 10
#define SLOTS (1u << LOG2)
#define BUF 2048
#define NREG 4

static char dir[64], sock[96];
static struct tide_port *cli;
static struct tide_pool *pool;
static int lfd = -1;
static bool zc;           /* the client under attack is zero-copy */
static uint32_t rx_room;  /* the data room of a buffer the client posts */

struct hs {
	int fd;
	uint8_t *mem[NREG]; /* the client's regions, mapped */
	size_t len[NREG];
	int efd[2];
	struct memif_ring *c2s, *s2c;
};

/* Where a descriptor the client wrote points, in the server's mapping. */
static uint8_t *dbuf(const struct hs *h, const struct memif_desc *d)
{
	MT_CHECK(d->region < NREG && h->mem[d->region] != NULL);
	MT_CHECK((uint64_t)d->offset + d->length <= h->len[d->region]);
	return h->mem[d->region] + d->offset;
}

/* The pool is whole: every buffer back, none twice, no double free refused meanwhile. */
static void pool_whole(void)
{
	struct tide_pool_audit a;
	struct tide_pool_stats st = {.sz = sizeof(st)};

	tide_pool_cache_flush(pool);
	if (tide_pool_in_use(pool) != 0)
		fprintf(stderr, "pool: %u buffers still in use\n", tide_pool_in_use(pool));
	MT_CHECK(tide_pool_in_use(pool) == 0);
	MT_CHECK(tide_pool_audit(pool, &a) == 0);
	MT_CHECK(a.free == a.n && a.duplicates == 0 && a.foreign == 0 && a.state_mismatch == 0);
	tide_pool_stats_get(pool, &st);
	MT_CHECK(st.debug_errors == 0);
}

static void poll_cli(void)
{
	tide_port_poll_ctl(cli);
}

static void hs_send_raw(struct hs *h, const void *buf, size_t len, int fd)
{
	MT_CHECK(mt_sendmsg(h->fd, buf, len, &fd, fd >= 0) == (ssize_t)len);
	poll_cli();
}

static void hs_send(struct hs *h, const struct memif_msg *m, int fd)
{
	uint8_t buf[MEMIF_MSG_SIZE];

	MT_CHECK(memif_msg_encode(m, buf) == 0);
	hs_send_raw(h, buf, sizeof(buf), fd);
}

/* Next message from the client (polling it meanwhile); type 0 when the socket closed. */
static uint16_t hs_recv(struct hs *h, struct memif_msg *m, int *fd)
{
	double end = mt_now() + 5;
	int rc;

	while ((rc = mt_recv_msg(h->fd, m, fd)) == 0) {
		MT_CHECK(mt_now() < end);
		poll_cli();
	}
	return rc > 0 ? m->type : 0;
}

static void hs_accept(struct hs *h)
{
	double end = mt_now() + 5;

	memset(h, 0, sizeof(*h));
	h->efd[0] = h->efd[1] = -1;
	for (;;) {
		h->fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
		if (h->fd >= 0)
			return;
		MT_CHECK(mt_now() < end);
		poll_cli();
	}
}

static struct memif_msg msg_hello(void)
{
	struct memif_msg m;
	struct memif_limits lim = {.regions = 4, .c2s_rings = 1, .s2c_rings = 1,
				   .max_log2_ring_size = 14};

	memif_msg_hello_from_limits(&m, &lim, "hostile");
	return m;
}

enum stop { AT_HELLO, AT_INIT, AT_CONNECT, AT_DONE };

/* Play a correct server up to @stop (AT_HELLO: accepted, nothing sent). */
static void hs_until(struct hs *h, enum stop stop)
{
	struct memif_msg m, a = {.type = MEMIF_MSG_ACK};
	int fd;

	hs_accept(h);
	if (stop == AT_HELLO)
		return;
	m = msg_hello();
	hs_send(h, &m, -1);
	MT_CHECK(hs_recv(h, &m, &fd) == MEMIF_MSG_INIT);
	if (stop == AT_INIT)
		return;
	hs_send(h, &a, -1);
	for (;;) {
		uint16_t t = hs_recv(h, &m, &fd);

		MT_CHECK(t != 0);
		if (t == MEMIF_MSG_ADD_REGION) {
			unsigned i = m.add_region.index;

			/* Region 0: rings (and copy-mode buffers); zero-copy: 1 is the Rx pool. */
			MT_CHECK(i < NREG && h->mem[i] == NULL && fd >= 0);
			h->len[i] = m.add_region.size;
			h->mem[i] = mmap(NULL, h->len[i], PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			MT_CHECK(h->mem[i] != MAP_FAILED);
			close(fd);
		} else if (t == MEMIF_MSG_ADD_RING) {
			struct memif_ring *r;

			MT_CHECK(m.add_ring.region < NREG && h->mem[m.add_ring.region] != NULL);
			r = (struct memif_ring *)(h->mem[m.add_ring.region] + m.add_ring.offset);
			bool c2s = m.add_ring.flags & MEMIF_RING_FLAG_C2S;

			if (c2s)
				h->c2s = r;
			else
				h->s2c = r;
			h->efd[c2s] = fd;
		} else {
			MT_CHECK(t == MEMIF_MSG_CONNECT);
			break;
		}
		hs_send(h, &a, -1);
	}
	MT_CHECK(h->mem[0] != NULL && (h->mem[1] != NULL) == zc);
	if (stop == AT_CONNECT)
		return;
	a.type = MEMIF_MSG_CONNECTED;
	hs_send(h, &a, -1);
	MT_CHECK(mt_wait_link(cli, 1, 2));
}

static void hs_close(struct hs *h)
{
	close(h->fd);
	for (int i = 0; i < NREG; i++)
		if (h->mem[i])
			munmap(h->mem[i], h->len[i]);
	for (int i = 0; i < 2; i++)
		if (h->efd[i] >= 0)
			close(h->efd[i]);
	memset(h, 0, sizeof(*h));
}

static struct tide_memif_info info(void)
{
	struct tide_memif_info i = {.sz = sizeof(i)};

	MT_CHECK(tide_memif_info_get(cli, &i) == 0);
	return i;
}

/* A few bursts: the client posts its Rx buffers, sends, and finds what the case broke. */
static void bursts(void)
{
	for (int i = 0; i < 4; i++) {
		struct tide_mbuf *pk[32];
		unsigned k = tide_rx_burst(tide_port_rxq(cli, 0), pk, 32);

		tide_mbuf_free_bulk(pk, k);
		pk[0] = mt_pkt(pool, 0, 0, 60);
		if (tide_tx_burst(tide_port_txq(cli, 0), pk, 1) == 0)
			tide_mbuf_free(pk[0]);
		tide_txq_done_cleanup(tide_port_txq(cli, 0), 0);
		poll_cli();
	}
}

/* The client must answer with disconnect and reason @why, and be whole afterwards. */
static void expect(struct hs *h, const char *name, const char *why, uint64_t before,
		   bool violation)
{
	struct tide_memif_info in = {.sz = sizeof(in)};
	struct memif_msg r;
	uint16_t t;
	int fd;

	bursts();
	while ((t = hs_recv(h, &r, &fd)) != 0 && t != MEMIF_MSG_DISCONNECT)
		if (fd >= 0)
			close(fd);
	MT_CHECK(mt_wait_link(cli, 0, 2));
	in = info();
	if (t != MEMIF_MSG_DISCONNECT || strstr(in.reason, why) == NULL ||
	    in.violations != before + violation) {
		fprintf(stderr, "case %s: got '%s' (message %u, violations %llu), want '%s'\n",
			name, in.reason, t, (unsigned long long)in.violations, why);
		exit(1);
	}
	MT_CHECK(strstr(r.disconnect.reason, why) != NULL);
	{
		struct tide_mbuf *pk[32];

		MT_CHECK(tide_rx_burst(tide_port_rxq(cli, 0), pk, 32) == 0);
		MT_CHECK(tide_tx_burst(tide_port_txq(cli, 0), pk, 0) == 0);
	}
	/* Zero-copy: the server had the buffers; they wait for its close and the quarantine. */
	if (zc)
		hs_close(h);
	MT_CHECK(mt_wait_pool_back(cli, 1, pool, 3));
	pool_whole();
	if (!zc)
		hs_close(h);
	printf("ok %s%-34s -> disconnected: %s\n", zc ? "zero-copy " : "", name, in.reason);
}

/* The next packet the client receives (within 2 s). */
static struct tide_mbuf *rx_one(void)
{
	struct tide_mbuf *m = NULL;
	double end = mt_now() + 2;

	while (tide_rx_burst(tide_port_rxq(cli, 0), &m, 1) == 0)
		MT_CHECK(mt_now() < end);
	return m;
}

/* The server closed: the link goes down, and the queues give their buffers back at their
 * first burst after that (zero-copy: posted Rx buffers are the ring's packet memory, and
 * sent ones stay with the Tx queue until the server completes them, until then; both after
 * the quarantine). */
static void link_gone(void)
{
	struct tide_mbuf *m;

	MT_CHECK(mt_wait_link(cli, 0, 2));
	MT_CHECK(tide_rx_burst(tide_port_rxq(cli, 0), &m, 1) == 0);
	MT_CHECK(tide_tx_burst(tide_port_txq(cli, 0), &m, 0) == 0);
	MT_CHECK(mt_wait_pool_back(cli, 1, pool, 3));
	pool_whole();
}

/* A good server afterwards: handshake, one packet C2S, one S2C. */
static void good_server(void)
{
	struct hs h;
	struct tide_mbuf *m;
	double end = mt_now() + 2;
	uint16_t slot;

	hs_until(&h, AT_DONE);
	m = mt_pkt(pool, 0, 1, 100);
	MT_CHECK(tide_tx_burst(tide_port_txq(cli, 0), &m, 1) == 1);
	MT_CHECK(__atomic_load_n(&h.c2s->head, __ATOMIC_ACQUIRE) == 1);
	MT_CHECK(h.c2s->desc[0].length == 100);
	/* Echo it: copy into the first buffer the client posted on S2C. */
	while (__atomic_load_n(&h.s2c->head, __ATOMIC_ACQUIRE) == 0) {
		MT_CHECK(tide_rx_burst(tide_port_rxq(cli, 0), &m, 1) == 0);
		MT_CHECK(mt_now() < end);
	}
	slot = 0;
	MT_CHECK(h.s2c->desc[slot].length == rx_room);
	memcpy(dbuf(&h, &h.s2c->desc[slot]), dbuf(&h, &h.c2s->desc[0]), 100);
	h.s2c->desc[slot].length = 100;
	__atomic_store_n(&h.s2c->tail, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&h.c2s->tail, 1, __ATOMIC_RELEASE);
	m = rx_one();
	MT_CHECK(mt_check_pkt(m, 0, 100) == 1);
	tide_mbuf_free(m);
	hs_close(&h);
	link_gone();
}

/* Post the client's Rx buffers (its first Rx burst) and return how many it posted. */
static uint16_t posted(struct hs *h)
{
	struct tide_mbuf *pk[1];

	MT_CHECK(tide_rx_burst(tide_port_rxq(cli, 0), pk, 1) == 0);
	return __atomic_load_n(&h->s2c->head, __ATOMIC_ACQUIRE);
}

typedef void (*case_fn)(struct hs *h);

static void c_size(struct hs *h)
{
	uint8_t b[64] = {MEMIF_MSG_HELLO};

	hs_until(h, AT_HELLO);
	hs_send_raw(h, b, sizeof(b), -1);
}

static void c_not_hello(struct hs *h)
{
	struct memif_msg m = {.type = MEMIF_MSG_ACK};

	hs_until(h, AT_HELLO);
	hs_send(h, &m, -1);
}

static void c_hello_fd(struct hs *h)
{
	struct memif_msg m = msg_hello();

	hs_until(h, AT_HELLO);
	hs_send(h, &m, h->fd);
}

static void c_version(struct hs *h)
{
	struct memif_msg m = msg_hello();

	hs_until(h, AT_HELLO);
	m.hello.min_version = m.hello.max_version = 0x0100;
	hs_send(h, &m, -1);
}

static void c_out_of_turn(struct hs *h)
{
	struct memif_msg m = {.type = MEMIF_MSG_CONNECTED};

	hs_until(h, AT_INIT);
	hs_send(h, &m, -1); /* connected, where init's ack belongs */
}

static void c_stall_hello(struct hs *h)
{
	hs_until(h, AT_HELLO); /* accept, then nothing */
}

static void c_stall_connected(struct hs *h)
{
	hs_until(h, AT_CONNECT); /* every ack, then no connected */
}

static void c_c2s_tail_far(struct hs *h)
{
	hs_until(h, AT_DONE);
	__atomic_store_n(&h->c2s->tail, 5, __ATOMIC_RELEASE); /* nothing was sent */
}

static void c_c2s_tail_back(struct hs *h)
{
	hs_until(h, AT_DONE);
	__atomic_store_n(&h->c2s->tail, (uint16_t)-3, __ATOMIC_RELEASE);
}

static void c_s2c_tail_far(struct hs *h)
{
	hs_until(h, AT_DONE);
	__atomic_store_n(&h->s2c->tail, (uint16_t)(posted(h) + 1), __ATOMIC_RELEASE);
}

static void c_s2c_len(struct hs *h)
{
	hs_until(h, AT_DONE);
	posted(h);
	h->s2c->desc[0].length = rx_room + 1;
	__atomic_store_n(&h->s2c->tail, 1, __ATOMIC_RELEASE);
}

/* A chain of two (max_chain) whose second segment is too long: the first is already taken. */
static void c_s2c_chain_len(struct hs *h)
{
	hs_until(h, AT_DONE);
	posted(h);
	h->s2c->desc[0].flags = MEMIF_DESC_FLAG_NEXT;
	h->s2c->desc[0].length = 64;
	h->s2c->desc[1].flags = 0;
	h->s2c->desc[1].length = rx_room + 1;
	__atomic_store_n(&h->s2c->tail, 2, __ATOMIC_RELEASE);
}

static void c_s2c_endless(struct hs *h)
{
	uint16_t n;

	hs_until(h, AT_DONE);
	n = posted(h);
	for (unsigned j = 0; j < SLOTS; j++)
		h->s2c->desc[j].flags = MEMIF_DESC_FLAG_NEXT;
	__atomic_store_n(&h->s2c->tail, n, __ATOMIC_RELEASE);
}

static void c_s2c_open(struct hs *h)
{
	hs_until(h, AT_DONE);
	posted(h);
	for (unsigned j = 0; j < 3; j++) {
		h->s2c->desc[j].flags = MEMIF_DESC_FLAG_NEXT;
		h->s2c->desc[j].length = 64;
	}
	__atomic_store_n(&h->s2c->tail, 3, __ATOMIC_RELEASE);
}

/* Copy mode: the client checks S2C descriptors against its own regions before it copies
 * (from its own buffer: it never follows them), and a bad one is a violation. */
static void c_s2c_region(struct hs *h)
{
	hs_until(h, AT_DONE);
	posted(h);
	h->s2c->desc[0].region = 200;
	h->s2c->desc[0].length = 64;
	__atomic_store_n(&h->s2c->tail, 1, __ATOMIC_RELEASE);
}

static void c_s2c_offset(struct hs *h)
{
	hs_until(h, AT_DONE);
	posted(h);
	h->s2c->desc[0].offset = (uint32_t)h->len[0] - 32;
	h->s2c->desc[0].length = 64;
	__atomic_store_n(&h->s2c->tail, 1, __ATOMIC_RELEASE);
}

static const struct {
	const char *name;
	case_fn fn;
	const char *why;
	bool violation;
	bool copy_only; /* zero-copy: foreign_desc() (such a descriptor is not read back) */
} cases[] = {
	{"wrong-size first message", c_size, "bad message size", true},
	{"first message not hello", c_not_hello, "expected hello", true},
	{"hello with an fd", c_hello_fd, "unexpected file descriptor", true},
	{"incompatible version", c_version, "incompatible version", true},
	{"connected out of turn", c_out_of_turn, "unexpected connected", true},
	{"no hello (stalled handshake)", c_stall_hello, "handshake timed out", true},
	{"no connected (stalled handshake)", c_stall_connected, "handshake timed out", true},
	{"C2S tail beyond what was sent", c_c2s_tail_far, "ring index moved too far", true},
	{"C2S tail backwards", c_c2s_tail_back, "ring index moved backwards", true},
	{"S2C tail beyond posted buffers", c_s2c_tail_far, "ring index moved too far", true},
	{"S2C length above the buffer", c_s2c_len, "descriptor length exceeds buffer size", true},
	{"S2C chain with a segment too long", c_s2c_chain_len, "descriptor length exceeds buffer size",
	 true},
	{"S2C endless continues chain", c_s2c_endless, "descriptor chain not terminated", true},
	{"S2C unterminated chain", c_s2c_open, "descriptor chain not terminated", true},
	{"S2C descriptor region out of range", c_s2c_region, "descriptor region out of range", true,
	 true},
	{"S2C descriptor beyond its region", c_s2c_offset, "descriptor beyond its region", true,
	 true},
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))
#define FIRST_SHM_CASE 7 /* the C2S tail: before it the handshake, the same in both modes */

/* Write a packet (queue 0, sequence @seq, @len bytes, the mt_pkt pattern) at @p. */
static void put_pkt(uint8_t *p, uint64_t seq, uint32_t len)
{
	memcpy(p, (uint32_t[]){0}, 4);
	memcpy(p + 4, &seq, 8);
	for (uint32_t i = 12; i < len; i++)
		p[i] = mt_byte(0, seq, i);
}

/* Frames to drop, not links: an empty one and a chain of max_chain + 1, then a good one. */
static void drops(void)
{
	struct tide_port_stats st = {.sz = sizeof(st)};
	struct tide_mbuf *m = NULL;
	struct hs h;
	uint64_t before;

	tide_port_stats_get(cli, &st);
	before = st.rxq[0].errors; /* the violations above counted too */
	hs_until(&h, AT_DONE);
	posted(&h);
	h.s2c->desc[0].length = 0;
	for (unsigned j = 1; j <= 3; j++) { /* max_chain=2 below */
		h.s2c->desc[j].flags = j < 3 ? MEMIF_DESC_FLAG_NEXT : 0;
		h.s2c->desc[j].length = 64;
	}
	put_pkt(dbuf(&h, &h.s2c->desc[4]), 0, 70);
	h.s2c->desc[4].length = 70;
	__atomic_store_n(&h.s2c->tail, 5, __ATOMIC_RELEASE);
	m = rx_one();
	MT_CHECK(mt_check_pkt(m, 0, 70) == 0);
	tide_mbuf_free(m);
	tide_port_stats_get(cli, &st);
	MT_CHECK(st.rxq[0].errors == before + 2);
	MT_CHECK(info().connected);
	hs_close(&h);
	link_gone();
	printf("ok %sempty frame and chain above max_chain dropped, counted, link kept\n",
	       zc ? "zero-copy " : "");
}

/*
 * The server rewrites a posted descriptor's region and offset (a region that does not
 * exist, an offset far outside any) before it publishes the packet: the client receives
 * the packet from its own buffer, reads nothing where the descriptor points, and keeps
 * the link (region and offset of S2C descriptors are the client's, never the server's).
 */
static void foreign_desc(void)
{
	struct tide_mbuf *m = NULL;
	struct hs h;
	uint64_t before = info().violations;

	hs_until(&h, AT_DONE);
	posted(&h);
	put_pkt(dbuf(&h, &h.s2c->desc[0]), 5, 90);
	h.s2c->desc[0].region = 200;
	h.s2c->desc[0].offset = 0xfffffff0u;
	h.s2c->desc[0].length = 90;
	__atomic_store_n(&h.s2c->tail, 1, __ATOMIC_RELEASE);
	m = rx_one();
	MT_CHECK(mt_check_pkt(m, 0, 90) == 5);
	tide_mbuf_free(m);
	MT_CHECK(info().connected && info().violations == before);
	hs_close(&h);
	link_gone();
	printf("ok %sS2C descriptor region/offset rewritten: not followed, link kept\n",
	       zc ? "zero-copy " : "");
}

/* Every case against one client: copy mode, or zero-copy (the shared-memory cases). */
static void run(bool zero_copy)
{
	struct tide_pktpool_opts o = {.sz = sizeof(o),
				      .pool_flags = zero_copy ? TIDE_POOL_F_SHARED : 0};
	char spec[256];

	zc = zero_copy;
	MT_CHECK(tide_pktpool_create(zc ? "hostile-zc" : "hostile-c", 4096, 64, 0, &o, &pool) ==
		 0);
	rx_room = zc ? tide_pktpool_data_room(pool) : BUF;
	snprintf(spec, sizeof(spec),
		 "memif:socket=%s,role=client,id=1,handshake_timeout=100,max_chain=2%s", sock,
		 zc ? ",zero_copy=yes" : "");
	cli = mt_port(spec, 1, 1024, pool);
	MT_CHECK(info().zero_copy == zc);
	for (size_t i = zc ? FIRST_SHM_CASE : 0; i < NCASES; i++) {
		struct hs h;
		uint64_t before = info().violations;

		if (zc && cases[i].copy_only)
			continue;
		cases[i].fn(&h);
		expect(&h, cases[i].name, cases[i].why, before, cases[i].violation);
		good_server();
	}
	drops();
	if (zc)
		foreign_desc();
	good_server();
	tide_port_close(cli);
	pool_whole();
	tide_pool_free(pool);
}

int main(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	signal(SIGPIPE, SIG_IGN);
	alarm(100);
	mt_tmpdir(dir, sizeof(dir), "memif-hc");
	snprintf(sock, sizeof(sock), "%s/h.sock", dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0);
	MT_CHECK(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(lfd, 8) == 0);
	tide_thread_register();
	MT_CHECK(strcmp(cases[FIRST_SHM_CASE].name, "C2S tail beyond what was sent") == 0);
	run(false);
	run(true);
	close(lfd);
	unlink(sock);
	printf("all hostile server cases passed\n");
	return 0;
}
