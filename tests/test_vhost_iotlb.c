/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The vhost backend's device IOTLB (VIRTIO_F_ACCESS_PLATFORM) against a frontend of our own
 * (tests/vhost_front.h) whose vring and buffer addresses are IOVAs: IOVA = IOVA_BASE + the
 * offset in its memory, mapped only by the IOTLB_MSG updates it sends.
 *
 * The good frontend: rings without an entry wait (a miss on the backend's channel, the
 * vring not running) and start on the update; a guest buffer without an entry gives one
 * miss (not one per burst), the burst moves nothing and takes the same buffer once the
 * update came, both ways; a buffer over two entries whose memory follows on is copied
 * whole; an invalidation makes the next access miss again; an invalidation of a range never
 * mapped changes nothing; and an invalidation waits for a burst inside the queue (held
 * busy, as a burst holds it) before it is acknowledged.
 *
 * Then one broken rule per case: the frontend is disconnected with the reason, counted as a
 * violation, every buffer back in the pool, no fd of the connection left; and a good
 * frontend is served after each.
 */
#include <dirent.h>
#include <pthread.h>
#include <time.h>

#include <tide/lcore.h>
#include <tide/port.h>
#include <tide/vhost.h>

#include "vhost_util.h"
#include "../drivers/vhost/vhost.h"
#include "tmp_util.h"

#define IOVA_BASE 0x7f0000000000ull
#define RINGS	  0x8000u /* the vrings: [0, RINGS) of the memory */
/* Where the buffers of vring v are (fe_buf()): [BUFS(v), BUFS(v) + BUFS_LEN). */
#define BUFS(v)	  (FE_BUFS + (uint64_t)(v) * FE_NUM * FE_BUF)
#define BUFS_LEN  ((uint64_t)FE_NUM * FE_BUF)
#define RW	  VHOST_USER_ACCESS_RW
#define RO	  VHOST_USER_ACCESS_RO
#define WO	  VHOST_USER_ACCESS_WO

static struct tide_pool *pool;
static char path[108];
static int bch = -1; /* our end of the backend's channel */

static uint64_t iova(uint64_t off)
{
	return IOVA_BASE + off;
}

/* ---- the frontend's IOTLB side ---- */

/* One IOTLB_MSG, with NEED_REPLY as QEMU sends it (no wait for the reply). */
static void iotlb_send(struct fe *f, uint8_t type, uint64_t io, uint64_t size, uint64_t uaddr,
		       uint8_t perm)
{
	struct vhost_user_iotlb t = {
	    .iova = io, .size = size, .uaddr = uaddr, .perm = perm, .type = type};

	fe_send_raw(f, VHOST_USER_IOTLB_MSG, VHOST_USER_VERSION | VHOST_USER_NEED_REPLY,
		    sizeof(t), &t, sizeof(t), NULL, 0);
}

/* An IOTLB_MSG and its acknowledgement (0). */
static void iotlb_ok(struct fe *f, uint8_t type, uint64_t io, uint64_t size, uint64_t uaddr,
		     uint8_t perm)
{
	uint64_t r = 1;

	iotlb_send(f, type, io, size, uaddr, perm);
	poll_ctl();
	FE_CHECK(fe_reply(f, &r, 8) == 0);
	FE_CHECK(r == 0);
}

/* Map [off, off + len) of the memory at IOVA iova(off). */
static void map(struct fe *f, uint64_t off, uint64_t len, uint8_t perm)
{
	iotlb_ok(f, VHOST_USER_IOTLB_UPDATE, iova(off), len, fe_uva(f, off), perm);
}

/* The misses the backend sent so far: how many, the first one in *@t. */
static unsigned misses(struct vhost_user_iotlb *t)
{
	struct {
		struct vhost_user_msg_hdr h;
		struct vhost_user_iotlb t;
	} __attribute__((packed)) m;
	unsigned n = 0;

	while (recv(bch, &m, sizeof(m), MSG_DONTWAIT) == (ssize_t)sizeof(m)) {
		FE_CHECK(m.h.request == VHOST_USER_BACKEND_IOTLB_MSG &&
			 m.h.size == sizeof(m.t) && m.t.type == VHOST_USER_IOTLB_MISS);
		if (n++ == 0)
			*t = m.t;
	}
	return n;
}

/* Drain the misses sent so far: was one of them for @io with access @perm? */
static bool saw_miss(uint64_t io, uint8_t perm)
{
	struct {
		struct vhost_user_msg_hdr h;
		struct vhost_user_iotlb t;
	} __attribute__((packed)) m;
	bool seen = false;

	while (recv(bch, &m, sizeof(m), MSG_DONTWAIT) == (ssize_t)sizeof(m))
		seen |= m.t.iova == io && m.t.perm == perm && m.t.type == VHOST_USER_IOTLB_MISS;
	return seen;
}

/* Drain the misses sent so far: how many were in [@lo, @hi)? */
static unsigned misses_in(uint64_t lo, uint64_t hi)
{
	struct {
		struct vhost_user_msg_hdr h;
		struct vhost_user_iotlb t;
	} __attribute__((packed)) m;
	unsigned n = 0;

	while (recv(bch, &m, sizeof(m), MSG_DONTWAIT) == (ssize_t)sizeof(m))
		n += m.t.iova >= lo && m.t.iova < hi;
	return n;
}

/* How the handshake goes. */
struct hs {
	uint64_t feats;	  /* on top of VERSION_1 and PROTOCOL_FEATURES */
	uint64_t proto;	  /* protocol features */
	int bfd_kind;	  /* 0: a socket, 1: an eventfd, 2: no SET_BACKEND_REQ_FD, 3: no fd */
	bool no_vrings;
};

static const struct hs hs_good = {
    .feats = VIRTIO_BIT(VIRTIO_F_ACCESS_PLATFORM) | VIRTIO_BIT(VIRTIO_F_INDIRECT_DESC),
    .proto = VIRTIO_BIT(VHOST_USER_PROTOCOL_F_MQ) | VIRTIO_BIT(VHOST_USER_PROTOCOL_F_REPLY_ACK) |
	     VIRTIO_BIT(VHOST_USER_PROTOCOL_F_BACKEND_REQ)};

/* The vrings at IOVAs (the layout of tests/vhost_front.h). */
static void vring_iova(struct fe *f, unsigned v)
{
	struct fe_vq *q = &f->vq[v];
	struct vhost_user_vring_addr a = {.index = v, .desc = iova(q->desc_off),
				    .used = iova(q->used_off), .avail = iova(q->avail_off)};
	uint64_t u = v;

	fe_send_state(f, VHOST_USER_SET_VRING_NUM, v, q->num);
	fe_send_state(f, VHOST_USER_SET_VRING_BASE, v, 0);
	fe_send(f, VHOST_USER_SET_VRING_ADDR, &a, sizeof(a), NULL, 0);
	fe_send(f, VHOST_USER_SET_VRING_KICK, &u, 8, &q->kick, 1);
	fe_send(f, VHOST_USER_SET_VRING_CALL, &u, 8, &q->call, 1);
	fe_send_state(f, VHOST_USER_SET_VRING_ENABLE, v, 1);
}

static void handshake(struct fe *f, const struct hs *h)
{
	struct tide_vhost_info vi;
	struct vhost_user_mem_region r;
	uint64_t c0, u;
	int sv[2];

	vinfo(&vi);
	c0 = vi.connects;
	fe_connect(f, path);
	WAIT_FOR((vinfo(&vi), vi.connects > c0), "accept");
	fe_send(f, VHOST_USER_GET_FEATURES, NULL, 0, NULL, 0);
	poll_ctl();
	FE_CHECK(fe_reply(f, &u, 8) == 0);
	FE_CHECK(u & VIRTIO_BIT(VIRTIO_F_ACCESS_PLATFORM));
	fe_send(f, VHOST_USER_GET_PROTOCOL_FEATURES, NULL, 0, NULL, 0);
	poll_ctl();
	FE_CHECK(fe_reply(f, &u, 8) == 0);
	FE_CHECK(u & VIRTIO_BIT(VHOST_USER_PROTOCOL_F_BACKEND_REQ));
	fe_send_u64(f, VHOST_USER_SET_PROTOCOL_FEATURES, h->proto);
	FE_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	if (h->bfd_kind == 0) {
		fe_send(f, VHOST_USER_SET_BACKEND_REQ_FD, NULL, 0, &sv[1], 1);
	} else if (h->bfd_kind == 1) {
		int e = eventfd(0, EFD_CLOEXEC);

		fe_send(f, VHOST_USER_SET_BACKEND_REQ_FD, NULL, 0, &e, 1);
		close(e);
	} else if (h->bfd_kind == 3) {
		fe_send(f, VHOST_USER_SET_BACKEND_REQ_FD, NULL, 0, NULL, 0);
	}
	close(sv[1]);
	if (bch >= 0)
		close(bch);
	bch = sv[0];
	fe_send(f, VHOST_USER_SET_OWNER, NULL, 0, NULL, 0);
	f->features = VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VHOST_USER_F_PROTOCOL_FEATURES) |
		      h->feats;
	fe_send_u64(f, VHOST_USER_SET_FEATURES, f->features);
	r = fe_region(f);
	fe_mem_table(f, &r, 1, &f->memfd, 1);
	if (h->no_vrings)
		return;
	vring_iova(f, 0);
	vring_iova(f, 1);
	poll_ctl();
}

/* ---- the good frontend ---- */

static uint8_t pat(unsigned seq, unsigned i)
{
	return (uint8_t)(seq * 7 + i);
}

/* Guest Tx: frame @seq of @len bytes in the buffer at offset @off of the memory. */
static void tx_post_at(struct fe *f, uint64_t off, unsigned seq, unsigned len)
{
	struct fe_vq *q = &f->vq[1];
	unsigned j = q->avail_idx % FE_NUM;
	uint8_t *b = f->mem + off;

	memset(b, 0, 12);
	for (unsigned i = 0; i < len; i++)
		b[12 + i] = pat(seq, i);
	q->desc[j] = (struct vring_desc){.addr = iova(off), .len = 12 + len};
	q->avail->ring[j] = (uint16_t)j;
	__atomic_store_n(&q->avail->idx, ++q->avail_idx, __ATOMIC_RELEASE);
}

static void check_frame(const struct tide_mbuf *m, unsigned seq, unsigned len)
{
	uint8_t b[FE_BUF];

	FE_CHECK(m->pkt_len == len && len <= sizeof(b));
	FE_CHECK(tide_mbuf_read(m, 0, len, b) == 0);
	for (unsigned i = 0; i < len; i++)
		FE_CHECK(b[i] == pat(seq, i));
}

/* Guest Rx: @n empty buffers of vring 0 (slot j at its IOVA). */
static void rx_post(struct fe *f, unsigned n)
{
	struct fe_vq *q = &f->vq[0];

	for (unsigned k = 0; k < n; k++) {
		unsigned j = q->avail_idx % FE_NUM;

		q->desc[j] = (struct vring_desc){.addr = iova(BUFS(0) + (uint64_t)j * FE_BUF),
						 .len = FE_BUF, .flags = VRING_DESC_F_WRITE};
		q->avail->ring[j] = (uint16_t)j;
		q->avail_idx++;
	}
	__atomic_store_n(&q->avail->idx, q->avail_idx, __ATOMIC_RELEASE);
}

static struct tide_mbuf *mkpkt(unsigned seq, unsigned len)
{
	struct tide_mbuf *m = tide_mbuf_alloc(pool);
	uint8_t *d;

	FE_CHECK(m != NULL);
	d = (uint8_t *)tide_mbuf_append(m, (uint16_t)len);
	for (unsigned i = 0; i < len; i++)
		d[i] = pat(seq, i);
	return m;
}

static uint64_t xstat_misses(void)
{
	uint64_t v = 0;

	FE_CHECK(tide_xstats_get_by_name(P, "vhost_iotlb_misses", &v) == 0);
	return v;
}

/* A thread that holds the Rx queue's busy word (a burst inside the queue) until told. */
static uint32_t *held_busy;

static void good_connection(void)
{
	struct tide_rxq *rq = tide_port_rxq(P, 0);
	struct tide_txq *tq = tide_port_txq(P, 0);
	struct tide_vhost_info vi;
	struct vhost_user_iotlb t;
	struct tide_mbuf *pk[8];
	struct fe f;
	uint64_t m0, d0, r;
	unsigned n;

	fe_init(&f);
	handshake(&f, &hs_good);
	/* The rings have no entry: the vrings wait, a miss asked for the first one. */
	vinfo(&vi);
	FE_CHECK(vi.vrings_running == 0 && !vi.connected);
	FE_CHECK(misses(&t) >= 1 && t.iova >= iova(0) && t.iova < iova(RINGS));
	/* Receive buffers the guest made available before the vring starts are asked for at
	 * its start, before a packet needs them (left unanswered here). */
	rx_post(&f, 4);
	map(&f, 0, RINGS, RW);
	WAIT_FOR((vinfo(&vi), vi.connected), "link up after the ring update");
	FE_CHECK(vi.vrings_running == 2);
	FE_CHECK(saw_miss(iova(BUFS(0)), WO));

	/* guest -> tide: the buffer has no entry: one miss, nothing taken, however many bursts */
	m0 = xstat_misses();
	tx_post_at(&f, BUFS(1), 1, 100);
	for (unsigned i = 0; i < 10; i++) {
		FE_CHECK(tide_rx_burst(rq, pk, 8) == 0);
		poll_ctl();
	}
	FE_CHECK(misses(&t) == 1 && t.iova == iova(BUFS(1)) && t.perm == RO);
	FE_CHECK(xstat_misses() - m0 == 1);
	FE_CHECK(f.vq[1].used->idx == 0);
	map(&f, BUFS(1), BUFS_LEN, RO);
	FE_CHECK(tide_rx_burst(rq, pk, 8) == 1);
	check_frame(pk[0], 1, 100);
	tide_mbuf_free(pk[0]);
	FE_CHECK(f.vq[1].used->idx == 1);

	/* tide -> guest: the same for a write, the packets stay with the caller */
	rx_post(&f, 4);
	misses(&t); /* the vring starts of the updates above asked ahead again */
	for (unsigned s = 0; s < 3; s++)
		pk[s] = mkpkt(10 + s, 60 + s);
	FE_CHECK(tide_tx_burst(tq, pk, 3) == 0);
	poll_ctl();
	/* The burst's miss, then the other available buffers asked for ahead (one a page,
	 * at most 8), once: */
	n = misses(&t);
	FE_CHECK(n >= 2 && n <= 9 && t.iova == iova(BUFS(0)) && t.perm == WO);
	FE_CHECK(tide_tx_burst(tq, pk, 3) == 0);
	poll_ctl();
	FE_CHECK(misses(&t) == 0);
	map(&f, BUFS(0), BUFS_LEN, WO);
	FE_CHECK(tide_tx_burst(tq, pk, 3) == 3);
	FE_CHECK(f.vq[0].used->idx == 3);
	for (unsigned s = 0; s < 3; s++) {
		const struct vring_used_elem *u = &f.vq[0].used->ring[s];
		const uint8_t *b = fe_buf(&f, 0, u->id) + 12;

		FE_CHECK(u->len == 12 + 60 + s);
		for (unsigned i = 0; i < 60 + s; i++)
			FE_CHECK(b[i] == pat(10 + s, i));
	}

	/* A buffer over two entries whose memory follows on: copied whole. */
	{
		uint64_t at = BUFS(1) + BUFS_LEN; /* past what is mapped */

		map(&f, at, 4096, RO);
		map(&f, at + 4096, 4096, RO);
		tx_post_at(&f, at + 4096 - 40, 2, 300);
		FE_CHECK(tide_rx_burst(rq, pk, 8) == 1);
		check_frame(pk[0], 2, 300);
		tide_mbuf_free(pk[0]);
	}

	/* An invalidation: the next access to the range misses again. */
	iotlb_ok(&f, VHOST_USER_IOTLB_INVALIDATE, iova(BUFS(1)), BUFS_LEN, 0, 0);
	misses(&t);
	tx_post_at(&f, BUFS(1) + FE_BUF, 3, 80);
	FE_CHECK(tide_rx_burst(rq, pk, 8) == 0);
	poll_ctl();
	FE_CHECK(misses(&t) == 1 && t.iova == iova(BUFS(1) + FE_BUF));
	map(&f, BUFS(1), BUFS_LEN, RO);
	FE_CHECK(tide_rx_burst(rq, pk, 8) == 1);
	check_frame(pk[0], 3, 80);
	tide_mbuf_free(pk[0]);

	/* An indirect table without an entry: a miss at the table, then the packet. */
	{
		uint64_t tbl = 3u << 20, buf = tbl + 4096;
		struct fe_vq *q = &f.vq[1];
		struct vring_desc *ind = (struct vring_desc *)(f.mem + tbl);
		unsigned j = q->avail_idx % FE_NUM;

		tx_post_at(&f, buf, 4, 90); /* then made indirect, before any burst sees it */
		ind[0] = q->desc[j];
		q->desc[j] = (struct vring_desc){
		    .addr = iova(tbl), .len = sizeof(*ind), .flags = VRING_DESC_F_INDIRECT};
		misses(&t);
		FE_CHECK(tide_rx_burst(rq, pk, 8) == 0);
		poll_ctl();
		FE_CHECK(misses(&t) == 1 && t.iova == iova(tbl) && t.perm == RO);
		map(&f, tbl, 8192, RO);
		FE_CHECK(tide_rx_burst(rq, pk, 8) == 1);
		check_frame(pk[0], 4, 90);
		tide_mbuf_free(pk[0]);
		/* An invalidation that starts in a hole and ends inside that entry removes it. */
		iotlb_ok(&f, VHOST_USER_IOTLB_INVALIDATE, iova(tbl) - 4096, 8192, 0, 0);
		tx_post_at(&f, buf, 5, 70);
		FE_CHECK(tide_rx_burst(rq, pk, 8) == 0);
		poll_ctl();
		FE_CHECK(misses(&t) == 1 && t.iova == iova(buf));
		map(&f, tbl, 8192, RO);
		FE_CHECK(tide_rx_burst(rq, pk, 8) == 1);
		check_frame(pk[0], 5, 70);
		tide_mbuf_free(pk[0]);
	}

	/* An invalidation of a range never mapped: acknowledged, nothing changes. */
	d0 = vi.disconnects;
	iotlb_ok(&f, VHOST_USER_IOTLB_INVALIDATE, iova(3u << 20), 4096, 0, 0);
	vinfo(&vi);
	FE_CHECK(vi.connected && vi.vrings_running == 2 && vi.disconnects == d0);

	/* An invalidation waits for the burst inside the queue: no acknowledgement while the
	 * Rx queue is busy, the acknowledgement once it is not. The control thread does it
	 * (this thread holds the busy word and waits). */
	held_busy = &((struct vhost_rxq *)rq)->busy;
	__atomic_store_n(held_busy, 1, __ATOMIC_RELEASE);
	iotlb_send(&f, VHOST_USER_IOTLB_INVALIDATE, iova(BUFS(1)), BUFS_LEN, 0, 0);
	{
		struct timeval tv = {.tv_sec = 0, .tv_usec = 300000};
		fd_set rd;

		FD_ZERO(&rd);
		FD_SET(f.sock, &rd);
		FE_CHECK(select(f.sock + 1, &rd, NULL, NULL, &tv) == 0); /* no ack in 300 ms */
	}
	__atomic_store_n(held_busy, 0, __ATOMIC_RELEASE);
	FE_CHECK(fe_reply(&f, &r, 8) == 0 && r == 0);
	printf("ok   invalidation acknowledged only after the burst inside the queue left\n");

	/* The cache is bounded: VHOST_IOTLB_MAX + 2 more pages and the oldest entries went,
	 * the rings' among them (their vrings wait for the frontend again). */
	for (unsigned k = 0; k < VHOST_IOTLB_MAX + 2; k++)
		map(&f, (2u << 20) + (uint64_t)k * 4096, 4096, RO);
	vinfo(&vi);
	FE_CHECK(vi.vrings_running == 0 && !vi.connected);
	FE_CHECK(misses_in(iova(0), iova(RINGS)) >= 1);
	map(&f, 0, RINGS, RW);
	WAIT_FOR((vinfo(&vi), vi.connected), "link up after the rings came back");
	misses(&t);
	tx_post_at(&f, (2u << 20) + (VHOST_IOTLB_MAX + 1) * 4096u, 6, 64); /* the newest */
	FE_CHECK(tide_rx_burst(rq, pk, 8) == 1);
	check_frame(pk[0], 6, 64);
	tide_mbuf_free(pk[0]);
	tx_post_at(&f, (2u << 20) + 4096, 7, 64); /* evicted */
	FE_CHECK(tide_rx_burst(rq, pk, 8) == 0);
	poll_ctl();
	FE_CHECK(misses(&t) == 1 && t.iova == iova((2u << 20) + 4096));
	map(&f, (2u << 20) + 4096, 4096, RO);
	FE_CHECK(tide_rx_burst(rq, pk, 8) == 1);
	check_frame(pk[0], 7, 64);
	tide_mbuf_free(pk[0]);

	/* RESET_OWNER (a device reset) forgets every entry: set up again, the rings wait for
	 * their update as at first. */
	fe_send(&f, VHOST_USER_RESET_OWNER, NULL, 0, NULL, 0);
	fe_send(&f, VHOST_USER_SET_OWNER, NULL, 0, NULL, 0);
	fe_send_u64(&f, VHOST_USER_SET_FEATURES, f.features);
	vring_iova(&f, 0);
	vring_iova(&f, 1);
	poll_ctl();
	FE_CHECK(misses_in(iova(0), iova(RINGS)) >= 1);
	vinfo(&vi);
	FE_CHECK(vi.connected == 0 && vi.vrings_running == 0);
	map(&f, 0, RINGS, RW);
	WAIT_FOR((vinfo(&vi), vi.connected), "link up after the reset");
	misses(&t);
	vinfo(&vi);
	d0 = vi.disconnects;
	fe_fini(&f);
	WAIT_FOR((vinfo(&vi), vi.disconnects > d0), "disconnect of the good frontend");
	FE_CHECK(tide_pool_in_use(pool) == 0);
	printf("ok   good frontend: rings and buffers through the IOTLB, misses once, updates, invalidations\n");
}

/* ---- one broken rule per case ---- */

struct hcase {
	const char *name;
	const char *reason;
	void (*run)(struct fe *f);
};

static void up(struct fe *f)
{
	struct tide_vhost_info vi;

	handshake(f, &hs_good);
	map(f, 0, RINGS, RW);
	WAIT_FOR((vinfo(&vi), vi.connected), "link up");
}

static void c_size0(struct fe *f)
{
	up(f);
	iotlb_send(f, VHOST_USER_IOTLB_UPDATE, iova(BUFS(0)), 0, fe_uva(f, BUFS(0)), RW);
}

static void c_wrap(struct fe *f)
{
	up(f);
	iotlb_send(f, VHOST_USER_IOTLB_UPDATE, UINT64_MAX - 4095, 8192, fe_uva(f, BUFS(0)), RW);
}

static void c_uaddr_wrap(struct fe *f)
{
	up(f);
	iotlb_send(f, VHOST_USER_IOTLB_UPDATE, iova(BUFS(0)), 8192, UINT64_MAX - 4095, RW);
}

static void c_uaddr_outside(struct fe *f)
{
	up(f);
	iotlb_send(f, VHOST_USER_IOTLB_UPDATE, iova(BUFS(0)), 8192, fe_uva(f, FE_MEM - 4096), RW);
}

static void c_perm0(struct fe *f)
{
	up(f);
	iotlb_send(f, VHOST_USER_IOTLB_UPDATE, iova(BUFS(0)), 4096, fe_uva(f, BUFS(0)), 0);
}

static void c_perm4(struct fe *f)
{
	up(f);
	iotlb_send(f, VHOST_USER_IOTLB_UPDATE, iova(BUFS(0)), 4096, fe_uva(f, BUFS(0)), 4);
}

static void c_type(struct fe *f)
{
	up(f);
	iotlb_send(f, VHOST_USER_IOTLB_MISS, iova(BUFS(0)), 4096, fe_uva(f, BUFS(0)), RW);
}

static void c_inval_size0(struct fe *f)
{
	up(f);
	iotlb_send(f, VHOST_USER_IOTLB_INVALIDATE, iova(0), 0, 0, 0);
}

static void c_inval_wrap(struct fe *f)
{
	up(f);
	iotlb_send(f, VHOST_USER_IOTLB_INVALIDATE, UINT64_MAX, 2, 0, 0);
}

static void c_short(struct fe *f)
{
	struct vhost_user_iotlb t = {.iova = iova(0), .size = 4096, .uaddr = fe_uva(f, 0),
				     .perm = RW, .type = VHOST_USER_IOTLB_UPDATE};

	up(f);
	fe_send_raw(f, VHOST_USER_IOTLB_MSG, VHOST_USER_VERSION, 24, &t, 24, NULL, 0);
}

static void c_no_platform(struct fe *f)
{
	struct hs h = hs_good;

	h.feats = 0;
	h.no_vrings = true;
	handshake(f, &h);
	iotlb_send(f, VHOST_USER_IOTLB_UPDATE, 0, 4096, fe_uva(f, 0), RW);
}

static void c_no_backend_req(struct fe *f)
{
	struct hs h = hs_good;

	h.proto &= ~VIRTIO_BIT(VHOST_USER_PROTOCOL_F_BACKEND_REQ);
	h.bfd_kind = 2;
	h.no_vrings = true;
	handshake(f, &h);
}

static void c_bfd_unoffered(struct fe *f)
{
	struct hs h = hs_good;

	h.proto &= ~VIRTIO_BIT(VHOST_USER_PROTOCOL_F_BACKEND_REQ);
	h.feats = 0;
	h.no_vrings = true;
	handshake(f, &h);
}

static void c_bfd_eventfd(struct fe *f)
{
	struct hs h = hs_good;

	h.bfd_kind = 1;
	h.no_vrings = true;
	handshake(f, &h);
}

static void c_bfd_nofd(struct fe *f)
{
	struct hs h = hs_good;

	h.bfd_kind = 3;
	h.no_vrings = true;
	handshake(f, &h);
}

static void c_ring_readonly(struct fe *f)
{
	handshake(f, &hs_good);
	/* the used rings need write access */
	iotlb_send(f, VHOST_USER_IOTLB_UPDATE, iova(0), RINGS, fe_uva(f, 0), RO);
}

static void c_ring_noncontig(struct fe *f)
{
	/* Vring 0's descriptor table (4 KiB at offset 0) over two entries whose memory does
	 * not follow on. */
	handshake(f, &hs_good);
	map(f, 4096, RINGS - 4096, RW);
	iotlb_ok(f, VHOST_USER_IOTLB_UPDATE, iova(0), 2048, fe_uva(f, 0), RW);
	iotlb_send(f, VHOST_USER_IOTLB_UPDATE, iova(2048), 2048, fe_uva(f, 3u << 20), RW);
}

static void c_buf_perm(struct fe *f)
{
	struct tide_mbuf *m;

	up(f);
	map(f, BUFS(0), BUFS_LEN, RO); /* guest Rx buffers the device may only read */
	rx_post(f, 1);
	m = mkpkt(1, 60);
	FE_CHECK(tide_tx_burst(tide_port_txq(P, 0), &m, 1) == 0);
	tide_mbuf_free(m);
}

static void c_ring_wrap(struct fe *f)
{
	struct vhost_user_vring_addr a = {.index = 1, .desc = UINT64_MAX - 100,
				    .used = iova(f->vq[1].used_off), .avail = iova(f->vq[1].avail_off)};

	up(f);
	fe_send(f, VHOST_USER_SET_VRING_ADDR, &a, sizeof(a), NULL, 0);
}

/* A new memory table without the memory of the rings' entries. */
static void c_mem_ring_gone(struct fe *f)
{
	struct vhost_user_mem_region r = fe_region(f);

	up(f);
	r.uva += 1ull << 30;
	fe_mem_table(f, &r, 1, &f->memfd, 1);
}

/* A new memory table without the memory of a buffer's entry: the miss finds it held. */
static void c_mem_buf_gone(struct fe *f)
{
	struct vhost_user_mem_region r = fe_region(f);

	up(f);
	map(f, 3u << 20, 4096, RO);
	r.size = 2u << 20;
	fe_mem_table(f, &r, 1, &f->memfd, 1);
	poll_ctl(); /* the new table is in use when this returns */
	tx_post_at(f, 3u << 20, 1, 60);
	{
		struct tide_mbuf *pk[4];

		FE_CHECK(tide_rx_burst(tide_port_rxq(P, 0), pk, 4) == 0);
	}
}

/* A new memory table that holds the rings but cuts their entry short: the entry leaves the
 * queues' tables, and a buffer in it is a fault. The table's guest physical addresses are
 * the very numbers of the IOVAs: a queue must never translate an IOVA as one. */
static void c_mem_cut_entry(struct fe *f)
{
	struct vhost_user_mem_region r = fe_region(f);
	struct tide_vhost_info vi;
	struct tide_mbuf *pk[4];

	handshake(f, &hs_good);
	map(f, 0, 0x10000, RW);
	WAIT_FOR((vinfo(&vi), vi.connected), "link up");
	r.size = RINGS;
	r.gpa = iova(0);
	fe_mem_table(f, &r, 1, &f->memfd, 1);
	poll_ctl();
	tx_post_at(f, 0x7000, 1, 60); /* past vring 1's used ring */
	FE_CHECK(tide_rx_burst(tide_port_rxq(P, 0), pk, 4) == 0);
}

static const struct hcase cases[] = {
    {"memory table that cuts an entry short",
     "vring 1: IOVA 0x7f0000007000 maps memory outside the memory table", c_mem_cut_entry},
    {"ring address that wraps", "ring wraps around the IOVA space", c_ring_wrap},
    {"memory table without the rings' memory", "ring IOVA maps memory outside the memory table",
     c_mem_ring_gone},
    {"memory table without a buffer's memory",
     "vring 1: IOVA 0x7f0000300000 maps memory outside the memory table", c_mem_buf_gone},
    {"update of size 0", "size 0", c_size0},
    {"update whose IOVA range wraps", "IOVA range wraps around", c_wrap},
    {"update whose frontend range wraps", "frontend address range wraps around", c_uaddr_wrap},
    {"update outside the memory table", "not inside one region of the memory table",
     c_uaddr_outside},
    {"update with access 0", "access is not read-only", c_perm0},
    {"update with access 4", "access is not read-only", c_perm4},
    {"IOTLB_MSG of type miss", "IOTLB_MSG type 1 0x7f0000010000+0x1000: type is neither", c_type},
    {"invalidate of size 0", "invalidate 0x7f0000000000+0x0: size 0", c_inval_size0},
    {"invalidate that wraps", "IOVA range wraps around", c_inval_wrap},
    {"IOTLB_MSG of 24 bytes", "IOTLB_MSG: payload of 24 bytes", c_short},
    {"IOTLB_MSG without ACCESS_PLATFORM", "without VIRTIO_F_ACCESS_PLATFORM", c_no_platform},
    {"ACCESS_PLATFORM without BACKEND_REQ", "without the BACKEND_REQ and REPLY_ACK",
     c_no_backend_req},
    {"SET_BACKEND_REQ_FD not negotiated", "without the BACKEND_REQ protocol feature",
     c_bfd_unoffered},
    {"SET_BACKEND_REQ_FD with an eventfd", "not a socket", c_bfd_eventfd},
    {"SET_BACKEND_REQ_FD without an fd", "0 file descriptors, expected 1", c_bfd_nofd},
    {"used ring mapped read-only", "ring IOVA mapped without write access", c_ring_readonly},
    {"ring over entries not contiguous", "not contiguous in memory", c_ring_noncontig},
    {"device write to a read-only entry", "device write at IOVA 0x7f0000010000 mapped read-only",
     c_buf_perm},
};

static void remove_socket(void)
{
	unlink(path);
}

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;
	unsigned failed = 0, fds0;
	char spec[200];

	tide_thread_register();
	snprintf(path, sizeof(path), "%s/tide-vhost-iotlb-%d.sock", test_tmp(), (int)getpid());
	atexit(remove_socket);
	snprintf(spec, sizeof(spec), "vhost:socket=%s,role=server", path);
	FE_CHECK(tide_pktpool_create("iotlb", 4096, 64, 0, NULL, &pool) == 0);
	FE_CHECK(tide_port_open(spec, &P) == 0);
	FE_CHECK(tide_port_configure(P, 1, 1) == 0);
	FE_CHECK(tide_rxq_setup(P, 0, 256, pool, NULL) == 0);
	FE_CHECK(tide_txq_setup(P, 0, 256, NULL) == 0);
	FE_CHECK(tide_port_start(P) == 0);
	if (!only)
		good_connection();
	close(bch);
	bch = -1;
	fds0 = count_fds();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct hcase *c = &cases[i];
		struct tide_vhost_info a, b;
		struct fe f;

		if (only && strcmp(only, c->name) != 0)
			continue;
		vinfo(&a);
		fe_init(&f);
		c->run(&f);
		WAIT_FOR((vinfo(&b), b.disconnects > a.disconnects), c->name);
		fe_fini(&f);
		close(bch);
		bch = -1;
		if (strstr(b.reason, c->reason) == NULL || b.violations - a.violations != 1 ||
		    b.connected || tide_pool_in_use(pool) != 0 || count_fds() != fds0) {
			fprintf(stderr, "FAIL %s: reason '%s' (want '%s'), violations +%llu, connected %d, pool in use %u, fds %u (was %u)\n",
				c->name, b.reason, c->reason,
				(unsigned long long)(b.violations - a.violations), b.connected,
				tide_pool_in_use(pool), count_fds(), fds0);
			failed++;
		} else {
			printf("ok   %-40s -> %s\n", c->name, b.reason);
		}
	}
	if (!only)
		good_connection();
	tide_port_close(P);
	FE_CHECK(tide_pool_in_use(pool) == 0);
	tide_pool_free(pool);
	if (bch >= 0)
		close(bch);
	if (failed)
		fprintf(stderr, "%u case(s) failed\n", failed);
	return failed ? 1 : 0;
}
