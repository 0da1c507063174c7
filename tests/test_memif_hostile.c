/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A hostile memif client against a tide server port, in one process (the control plane
 * never blocks, so the test drives both sides). It speaks the protocol, then breaks one rule
 * per case: wrong-size and out-of-order messages, missing and extra fds, a region index out
 * of order, a region smaller than its rings or than announced, a log2 size above the
 * maximum, a bad cookie, a wrong id or secret; and after a good handshake, in shared memory:
 * descriptors outside their region or longer than a buffer (also as the frame after a good
 * one, whose length Rx reads early to prefetch: it must cost no more), head moving by more than the
 * ring, endless "continues" chains. Each time tide stays up, disconnects with the right
 * reason, counts it, holds no buffer, and a good client connects and passes a packet after.
 * Then buffers posted at odd offsets, which the server (tx_stores=stream) fills with long
 * frames: streaming stores only where the target is aligned for them.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <tide/lcore.h>

#include "copy.h"
#include "memif_msg.h"
#include "memif_util.h"
#include "proc_util.h"

#define LOG2 10
#define SLOTS (1u << LOG2)
#define BUF 2048

static char dir[64], sock[96];
static struct tide_port *srv;
static struct tide_pool *pool;

struct hc {
	int fd, memfd, efd;
	uint8_t *mem;
	size_t len;
	struct memif_ring *c2s, *s2c;
	uint32_t boff;
};

static int hc_connect(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	MT_CHECK(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	return fd;
}

static void hc_send_raw(int fd, const void *buf, size_t len, const int *fds, unsigned nfds)
{
	MT_CHECK(mt_sendmsg(fd, buf, len, fds, nfds) == (ssize_t)len);
	tide_port_poll_ctl(srv);
}

static void hc_send(int fd, const struct memif_msg *m, const int *fds, unsigned nfds)
{
	uint8_t buf[MEMIF_MSG_SIZE];

	MT_CHECK(memif_msg_encode(m, buf) == 0);
	hc_send_raw(fd, buf, sizeof(buf), fds, nfds);
}

/* Next message from the server (polling it meanwhile); type 0 when the socket closed. */
static uint16_t hc_recv(int fd, struct memif_msg *m)
{
	uint8_t buf[MEMIF_MSG_SIZE];
	double end = mt_now() + 5;

	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n == MEMIF_MSG_SIZE) {
			MT_CHECK(memif_msg_decode(buf, (size_t)n, m, NULL) == 0);
			return m->type;
		}
		if (n == 0 || (n < 0 && errno != EAGAIN))
			return 0;
		MT_CHECK(mt_now() < end);
		tide_port_poll_ctl(srv);
	}
}

static void hc_region(struct hc *h, size_t len)
{
	h->len = len;
	h->memfd = memfd_create("hostile", MFD_ALLOW_SEALING);
	MT_CHECK(ftruncate(h->memfd, (off_t)len) == 0);
	h->mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, h->memfd, 0);
	MT_CHECK(h->mem != MAP_FAILED);
	h->c2s = (struct memif_ring *)h->mem;
	h->s2c = (struct memif_ring *)(h->mem + memif_ring_bytes(LOG2));
	h->boff = (uint32_t)(2 * memif_ring_bytes(LOG2));
	h->c2s->cookie = h->s2c->cookie = MEMIF_COOKIE;
	for (unsigned j = 0; j < SLOTS; j++) {
		h->c2s->desc[j] = (struct memif_desc){0, 0, BUF, h->boff + j * BUF, 0};
		h->s2c->desc[j] = (struct memif_desc){0, 0, BUF, h->boff + (SLOTS + j) * BUF, 0};
	}
	h->efd = eventfd(0, 0);
}

static void hc_close(struct hc *h)
{
	close(h->fd);
	if (h->mem) {
		munmap(h->mem, h->len);
		close(h->memfd);
		close(h->efd);
	}
	memset(h, 0, sizeof(*h));
}

static struct memif_msg msg_init(uint32_t id, const char *secret)
{
	struct memif_msg m = {.type = MEMIF_MSG_INIT};

	m.init.version = MEMIF_VERSION;
	m.init.id = id;
	snprintf(m.init.secret, sizeof(m.init.secret), "%s", secret);
	snprintf(m.init.name, sizeof(m.init.name), "hostile");
	return m;
}

static struct memif_msg msg_region(uint16_t idx, uint64_t size)
{
	struct memif_msg m = {.type = MEMIF_MSG_ADD_REGION};

	m.add_region.index = idx;
	m.add_region.size = size;
	return m;
}

static struct memif_msg msg_ring(bool c2s, uint32_t off, uint8_t log2)
{
	struct memif_msg m = {.type = MEMIF_MSG_ADD_RING};

	m.add_ring.flags = c2s ? MEMIF_RING_FLAG_C2S : 0;
	m.add_ring.offset = off;
	m.add_ring.log2_ring_size = log2;
	return m;
}

/* Handshake step by step; stops at the message a case replaces (returns its position). */
enum step { ST_INIT, ST_REGION, ST_RING_C2S, ST_RING_S2C, ST_CONNECT, ST_DONE };

static void hc_until(struct hc *h, enum step stop, size_t region_len)
{
	struct memif_msg m, r;

	h->fd = hc_connect();
	MT_CHECK(hc_recv(h->fd, &r) == MEMIF_MSG_HELLO);
	if (stop == ST_INIT)
		return;
	m = msg_init(1, "pw");
	hc_send(h->fd, &m, NULL, 0);
	MT_CHECK(hc_recv(h->fd, &r) == MEMIF_MSG_ACK);
	hc_region(h, region_len);
	if (stop == ST_REGION)
		return;
	m = msg_region(0, h->len);
	hc_send(h->fd, &m, &h->memfd, 1);
	MT_CHECK(hc_recv(h->fd, &r) == MEMIF_MSG_ACK);
	if (stop == ST_RING_C2S)
		return;
	m = msg_ring(true, 0, LOG2);
	hc_send(h->fd, &m, &h->efd, 1);
	MT_CHECK(hc_recv(h->fd, &r) == MEMIF_MSG_ACK);
	if (stop == ST_RING_S2C)
		return;
	m = msg_ring(false, (uint32_t)memif_ring_bytes(LOG2), LOG2);
	hc_send(h->fd, &m, &h->efd, 1);
	MT_CHECK(hc_recv(h->fd, &r) == MEMIF_MSG_ACK);
	if (stop == ST_CONNECT)
		return;
	m = (struct memif_msg){.type = MEMIF_MSG_CONNECT};
	hc_send(h->fd, &m, NULL, 0);
	MT_CHECK(hc_recv(h->fd, &r) == MEMIF_MSG_CONNECTED);
	MT_CHECK(mt_wait_link(srv, 1, 2));
}

static size_t full_len(void)
{
	return 2 * memif_ring_bytes(LOG2) + 2 * SLOTS * BUF;
}

static uint64_t violations(void)
{
	struct tide_memif_info i = {.sz = sizeof(i)};

	MT_CHECK(tide_memif_info_get(srv, &i) == 0);
	return i.violations;
}

/* The server must answer with disconnect and reason @why, and be whole afterwards. */
static void expect(struct hc *h, const char *name, const char *why, uint64_t before)
{
	struct tide_memif_info info = {.sz = sizeof(info)};
	struct memif_msg r;
	uint16_t t;

	/* Data-path cases: the bursts find the violation; the control plane reports it. */
	for (int i = 0; i < 4; i++) {
		struct tide_mbuf *pk[32];
		unsigned k = tide_rx_burst(tide_port_rxq(srv, 0), pk, 32);

		tide_mbuf_free_bulk(pk, k);
		pk[0] = tide_mbuf_alloc(pool);
		tide_mbuf_append(pk[0], 60);
		if (tide_tx_burst(tide_port_txq(srv, 0), pk, 1) == 0)
			tide_mbuf_free(pk[0]);
		tide_port_poll_ctl(srv);
	}
	while ((t = hc_recv(h->fd, &r)) != 0 && t != MEMIF_MSG_DISCONNECT)
		;
	MT_CHECK(mt_wait_link(srv, 0, 2));
	MT_CHECK(tide_memif_info_get(srv, &info) == 0);
	if (t != MEMIF_MSG_DISCONNECT || strstr(info.reason, why) == NULL ||
	    info.violations != before + 1) {
		fprintf(stderr, "case %s: got '%s' (message %u, violations %llu), want '%s'\n",
			name, info.reason, t, (unsigned long long)info.violations, why);
		exit(1);
	}
	MT_CHECK(strstr(r.disconnect.reason, why) != NULL);
	/* One more burst each: the queues drop what the connection left. */
	{
		struct tide_mbuf *pk[32];

		MT_CHECK(tide_rx_burst(tide_port_rxq(srv, 0), pk, 32) == 0);
	}
	MT_CHECK(tide_pool_in_use(pool) == 0);
	hc_close(h);
	printf("ok %-28s -> disconnected: %s\n", name, info.reason);
}

/* A good client afterwards: handshake, one packet C2S, one S2C. */
static void good_client(void)
{
	struct hc h = {0};
	struct tide_mbuf *m;
	double end = mt_now() + 2;
	unsigned k = 0;

	hc_until(&h, ST_DONE, full_len());
	memcpy(h.mem + h.boff, "hello memif", 11);
	h.c2s->desc[0].length = 64;
	__atomic_store_n(&h.c2s->head, 1, __ATOMIC_RELEASE);
	while (k == 0) {
		MT_CHECK(mt_now() < end);
		k = tide_rx_burst(tide_port_rxq(srv, 0), &m, 1);
	}
	MT_CHECK(m->pkt_len == 64 && memcmp(tide_mbuf_mtod(m, char *), "hello memif", 11) == 0);
	/* Echo it back on S2C: post one buffer, the server fills it. */
	__atomic_store_n(&h.s2c->head, 1, __ATOMIC_RELEASE);
	MT_CHECK(tide_tx_burst(tide_port_txq(srv, 0), &m, 1) == 1);
	MT_CHECK(__atomic_load_n(&h.s2c->tail, __ATOMIC_ACQUIRE) == 1);
	MT_CHECK(h.s2c->desc[0].length == 64);
	MT_CHECK(memcmp(h.mem + h.boff + SLOTS * BUF, "hello memif", 11) == 0);
	hc_close(&h);
	MT_CHECK(mt_wait_link(srv, 0, 2));
	MT_CHECK(tide_pool_in_use(pool) == 0);
}

/*
 * Buffers posted at odd offsets: the server (tx_stores=stream) writes long frames into them
 * with streaming stores only where the target is 16-byte aligned, through the cache
 * elsewhere; every frame arrives whole at the offset posted, nothing faults.
 */
static void odd_buffers(void)
{
	static const uint32_t skew[] = {1, 8, 16, 0, 3};
	const unsigned n = sizeof(skew) / sizeof(skew[0]);
	struct tide_mbuf *pk[sizeof(skew) / sizeof(skew[0])];
	struct hc h = {0};
	uint64_t streaming = 0;

	hc_until(&h, ST_DONE, full_len());
	MT_CHECK(tide_xstats_get_by_name(srv, "memif_tx_stream_queues", &streaming) == 0);
	MT_CHECK(streaming == COPY_HAVE_STREAM); /* tx_stores=stream took (where it can) */
	for (unsigned j = 0; j < n; j++) {
		h.s2c->desc[j].offset += skew[j];
		h.s2c->desc[j].length = BUF - 16;
		pk[j] = mt_pkt(pool, 0, j, 1000 + 37 * j);
	}
	__atomic_store_n(&h.s2c->head, n, __ATOMIC_RELEASE);
	MT_CHECK(tide_tx_burst(tide_port_txq(srv, 0), pk, (uint16_t)n) == n);
	MT_CHECK(__atomic_load_n(&h.s2c->tail, __ATOMIC_ACQUIRE) == n);
	for (unsigned j = 0; j < n; j++) {
		const struct memif_desc *d = &h.s2c->desc[j];

		MT_CHECK(d->length == 1000 + 37 * j);
		const uint8_t *b = h.mem + d->offset;
		uint64_t seq;

		memcpy(&seq, b + 4, 8);
		MT_CHECK(seq == j);
		for (uint32_t i = 12; i < d->length; i++)
			MT_CHECK(b[i] == mt_byte(0, j, i));
	}
	hc_close(&h);
	MT_CHECK(mt_wait_link(srv, 0, 2));
	MT_CHECK(tide_pool_in_use(pool) == 0);
	printf("ok long frames into buffers at odd offsets, streaming stores: every one whole\n");
}

typedef void (*case_fn)(struct hc *h);

static void c_size(struct hc *h)
{
	uint8_t b[64] = {MEMIF_MSG_INIT};

	hc_until(h, ST_INIT, 0);
	hc_send_raw(h->fd, b, sizeof(b), NULL, 0);
}

static void c_order(struct hc *h)
{
	struct memif_msg m = msg_region(0, 4096);

	hc_until(h, ST_INIT, 0);
	hc_send(h->fd, &m, &h->fd, 1);
}

static void c_extra_fd(struct hc *h)
{
	struct memif_msg m = msg_init(1, "pw");

	hc_until(h, ST_INIT, 0);
	hc_send(h->fd, &m, &h->fd, 1);
}

static void c_missing_fd(struct hc *h)
{
	struct memif_msg m;

	hc_until(h, ST_REGION, full_len());
	m = msg_region(0, h->len);
	hc_send(h->fd, &m, NULL, 0);
}

static void c_two_fds(struct hc *h)
{
	struct memif_msg m;
	int fds[2];

	hc_until(h, ST_REGION, full_len());
	fds[0] = fds[1] = h->memfd;
	m = msg_region(0, h->len);
	hc_send(h->fd, &m, fds, 2);
}

static void c_region_idx(struct hc *h)
{
	struct memif_msg m;

	hc_until(h, ST_REGION, full_len());
	m = msg_region(3, h->len);
	hc_send(h->fd, &m, &h->memfd, 1);
}

static void c_region_small(struct hc *h)
{
	struct memif_msg m;

	hc_until(h, ST_REGION, full_len());
	m = msg_region(0, 4096); /* smaller than the ring placed at its start */
	hc_send(h->fd, &m, &h->memfd, 1);
	hc_recv(h->fd, &m);
	m = msg_ring(true, 0, LOG2);
	hc_send(h->fd, &m, &h->efd, 1);
}

static void c_region_file(struct hc *h)
{
	struct memif_msg m;

	hc_until(h, ST_REGION, full_len());
	m = msg_region(0, h->len * 4); /* announces more than the file holds */
	hc_send(h->fd, &m, &h->memfd, 1);
}

static void c_log2(struct hc *h)
{
	struct memif_msg m;

	hc_until(h, ST_RING_C2S, full_len());
	m = msg_ring(true, 0, MEMIF_LOG2_RING_SIZE_MAX + 1);
	hc_send(h->fd, &m, &h->efd, 1);
}

static void c_cookie(struct hc *h)
{
	struct memif_msg m = {.type = MEMIF_MSG_CONNECT};

	hc_until(h, ST_CONNECT, full_len());
	h->s2c->cookie = 0xbad;
	hc_send(h->fd, &m, NULL, 0);
}

static void c_id(struct hc *h)
{
	struct memif_msg m = msg_init(2, "pw");

	hc_until(h, ST_INIT, 0);
	hc_send(h->fd, &m, NULL, 0);
}

static void c_secret(struct hc *h)
{
	struct memif_msg m = msg_init(1, "wrong");

	hc_until(h, ST_INIT, 0);
	hc_send(h->fd, &m, NULL, 0);
}

static void c_desc_region(struct hc *h)
{
	hc_until(h, ST_DONE, full_len());
	h->c2s->desc[0].region = 1;
	__atomic_store_n(&h->c2s->head, 1, __ATOMIC_RELEASE);
}

static void c_desc_offset(struct hc *h)
{
	hc_until(h, ST_DONE, full_len());
	h->c2s->desc[0].offset = (uint32_t)h->len - 100;
	h->c2s->desc[0].length = 200;
	__atomic_store_n(&h->c2s->head, 1, __ATOMIC_RELEASE);
}

static void c_desc_len(struct hc *h)
{
	hc_until(h, ST_DONE, full_len());
	h->c2s->desc[0].length = UINT16_MAX + 1; /* above any peer's buffer size */
	__atomic_store_n(&h->c2s->head, 1, __ATOMIC_RELEASE);
}

/*
 * @good frames of 1000 bytes, then a descriptor of length 4 GiB - 1. The Rx burst takes the
 * first and, while copying it, prefetches the lines of the published frames one and two
 * ahead by their (still unchecked) lengths: the work must not follow that length (the walk
 * stops at COPY_HINT_MAX lines, 64 KiB; a walk over 4 GiB was 64 M prefetches, 22 ms of
 * this thread's CPU time against microseconds); CPU time, so that being descheduled does
 * not count. The bad descriptor is refused when taken.
 */
static void desc_len_ahead(struct hc *h, unsigned good)
{
	struct tide_mbuf *m;
	double t0, spent;
	unsigned k;

	hc_until(h, ST_DONE, full_len());
	for (k = 0; k < good; k++)
		h->c2s->desc[k].length = 1000;
	h->c2s->desc[good].length = UINT32_MAX;
	__atomic_store_n(&h->c2s->head, (uint16_t)(good + 1), __ATOMIC_RELEASE);
	t0 = thread_cpu_s();
	k = tide_rx_burst(tide_port_rxq(srv, 0), &m, 1);
	spent = thread_cpu_s() - t0;
	MT_CHECK(k == 1 && m->pkt_len == 1000);
	tide_mbuf_free(m);
	if (spent > 0.004) {
		fprintf(stderr,
			"Rx of the first of %u frames before a 4 GiB descriptor took %.1f ms of CPU\n",
			good, spent * 1e3);
		exit(1);
	}
}

static void c_desc_len_ahead(struct hc *h)
{
	desc_len_ahead(h, 1);
}

static void c_desc_len_ahead2(struct hc *h)
{
	desc_len_ahead(h, 2);
}

static void c_head_far(struct hc *h)
{
	hc_until(h, ST_DONE, full_len());
	__atomic_store_n(&h->c2s->head, SLOTS + 1, __ATOMIC_RELEASE);
}

static void c_head_back(struct hc *h)
{
	hc_until(h, ST_DONE, full_len());
	__atomic_store_n(&h->c2s->head, (uint16_t)-5, __ATOMIC_RELEASE);
}

static void c_chain_long(struct hc *h)
{
	hc_until(h, ST_DONE, full_len());
	for (unsigned j = 0; j < SLOTS; j++)
		h->c2s->desc[j].flags = MEMIF_DESC_FLAG_NEXT;
	__atomic_store_n(&h->c2s->head, SLOTS, __ATOMIC_RELEASE);
}

static void c_chain_open(struct hc *h)
{
	hc_until(h, ST_DONE, full_len());
	for (unsigned j = 0; j < 3; j++)
		h->c2s->desc[j].flags = MEMIF_DESC_FLAG_NEXT;
	__atomic_store_n(&h->c2s->head, 3, __ATOMIC_RELEASE);
}

static void c_s2c_head(struct hc *h)
{
	hc_until(h, ST_DONE, full_len());
	__atomic_store_n(&h->s2c->head, 3 * SLOTS, __ATOMIC_RELEASE);
}

static void c_s2c_desc(struct hc *h)
{
	hc_until(h, ST_DONE, full_len());
	h->s2c->desc[0].offset = (uint32_t)h->len;
	__atomic_store_n(&h->s2c->head, 1, __ATOMIC_RELEASE);
}

static void c_s2c_empty(struct hc *h)
{
	hc_until(h, ST_DONE, full_len());
	h->s2c->desc[0].length = 0;
	__atomic_store_n(&h->s2c->head, 1, __ATOMIC_RELEASE);
}

static const struct {
	const char *name;
	case_fn fn;
	const char *why;
} cases[] = {
	{"wrong-size message", c_size, "bad message size"},
	{"out-of-order message", c_order, "expected init"},
	{"extra fd", c_extra_fd, "unexpected file descriptor"},
	{"missing fd", c_missing_fd, "missing file descriptor"},
	{"two fds", c_two_fds, "unexpected file descriptor"},
	{"region index beyond added", c_region_idx, "region index out of order"},
	{"region smaller than rings", c_region_small, "ring beyond its region"},
	{"region file too small", c_region_file, "region file smaller than announced"},
	{"log2 above the maximum", c_log2, "ring size too big"},
	{"bad cookie", c_cookie, "bad ring cookie"},
	{"unknown id", c_id, "ID not found"},
	{"wrong secret", c_secret, "incorrect secret"},
	{"descriptor region", c_desc_region, "descriptor region out of range"},
	{"offset+length beyond region", c_desc_offset, "descriptor beyond its region"},
	{"length beyond buffer size", c_desc_len, "descriptor length exceeds buffer size"},
	{"4 GiB length after a good one", c_desc_len_ahead, "descriptor length exceeds buffer size"},
	{"4 GiB length after two good ones", c_desc_len_ahead2,
	 "descriptor length exceeds buffer size"},
	{"head moved > ring size", c_head_far, "ring index moved too far"},
	{"head moved backwards", c_head_back, "ring index moved backwards"},
	{"endless continues chain", c_chain_long, "descriptor chain not terminated"},
	{"unterminated chain", c_chain_open, "descriptor chain not terminated"},
	{"S2C head moved too far", c_s2c_head, "ring index moved too far"},
	{"S2C buffer beyond region", c_s2c_desc, "descriptor beyond its region"},
	{"S2C empty buffer posted", c_s2c_empty, "empty buffer posted"},
};

int main(void)
{
	char spec[256];

	signal(SIGPIPE, SIG_IGN);
	alarm(100);
	mt_tmpdir(dir, sizeof(dir), "memif-h");
	snprintf(sock, sizeof(sock), "%s/h.sock", dir);
	tide_thread_register();
	MT_CHECK(tide_pktpool_create("hostile", 4096, 64, 0, NULL, &pool) == 0);
	/* Streaming stores for long frames (odd_buffers); the cases send short ones. */
	snprintf(spec, sizeof(spec), "memif:socket=%s,role=server,id=1,secret=pw,tx_stores=stream",
		 sock);
	srv = mt_port(spec, 1, 1024, pool);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hc h = {0};
		uint64_t before = violations();

		cases[i].fn(&h);
		expect(&h, cases[i].name, cases[i].why, before);
		good_client();
	}
	odd_buffers();
	good_client();
	tide_port_close(srv);
	MT_CHECK(tide_pool_in_use(pool) == 0);
	tide_pool_free(pool);
	printf("all hostile peer cases passed\n");
	return 0;
}
