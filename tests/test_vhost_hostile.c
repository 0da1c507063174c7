/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The vhost backend against a frontend that breaks one rule per case (tests/vhost_front.h):
 * in the messages (sizes, versions, fds, indices, regions, features) and in guest memory
 * (avail index, ring entries, descriptor chains, indirect tables, buffer addresses, write
 * flags), and frontends that vanish mid-handshake, mid-message and mid-traffic.
 *
 * For every case tide must disconnect with the expected reason (counted as a violation
 * when a rule was broken), keep every buffer (pool full), keep no fd of the connection,
 * and then serve a good frontend: link up, packets both ways intact, mergeable buffers.
 * Everything runs in this one process, so ASan/LSan see every allocation.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <time.h>

#include <tide/lcore.h>
#include <tide/log.h>
#include <tide/port.h>
#include <tide/vhost.h>

#include "vhost_util.h"
#include "tmp_util.h"

static uint64_t extra_feats; /* negotiated on top of feats (the event index, for some runs) */
static struct tide_pool *pool;
static char path[108];
static unsigned mfd_flags = MFD_CLOEXEC | MFD_ALLOW_SEALING; /* of good_connection()'s memory */
static const uint64_t feats = VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VIRTIO_NET_F_MRG_RXBUF) |
			      VIRTIO_BIT(VIRTIO_F_INDIRECT_DESC) |
			      VIRTIO_BIT(VHOST_USER_F_PROTOCOL_FEATURES);

/* ---- handshake steps ---- */

enum step { S_CONNECT = FE_TO_CONNECT, S_FEATURES = FE_TO_FEATURES, S_MEM = FE_TO_MEM, S_ALL };

/* Connect and go through the handshake up to @upto (S_ALL: until the link is up). */
static void handshake(struct fe *f, enum step upto)
{
	struct tide_vhost_info vi = {.sz = sizeof(vi)};
	uint64_t c0;

	vinfo(&vi);
	c0 = vi.connects;
	fe_connect(f, path);
	WAIT_FOR((vinfo(&vi), vi.connects > c0), "accept");
	fe_handshake(f, upto == S_ALL ? FE_TO_VRINGS : (enum fe_step)upto, feats | extra_feats,
		     poll_ctl);
	if (upto != S_ALL) {
		poll_ctl();
		return;
	}
	WAIT_FOR((vinfo(&vi), vi.connected), "link up");
}

/* ---- packets ---- */

static uint8_t pat(unsigned seq, unsigned i)
{
	return (uint8_t)(seq * 31 + i);
}

/* @m is frame @seq (pat()) of @len bytes. */
static void check_frame(const struct tide_mbuf *m, unsigned seq, unsigned len)
{
	uint8_t b[300];

	FE_CHECK(m->pkt_len == len && len <= sizeof(b));
	FE_CHECK(tide_mbuf_read(m, 0, len, b) == 0);
	for (unsigned j = 0; j < len; j++)
		FE_CHECK(b[j] == pat(seq, j));
}

static struct tide_mbuf *mkpkt(unsigned seq, unsigned len)
{
	struct tide_mbuf *head = NULL;
	unsigned off = 0, room = tide_pktpool_data_room(pool);

	while (off < len) {
		struct tide_mbuf *m = tide_mbuf_alloc(pool);
		unsigned k = len - off < room ? len - off : room;
		uint8_t *d;

		FE_CHECK(m != NULL);
		d = (uint8_t *)tide_mbuf_append(m, (uint16_t)k);
		for (unsigned i = 0; i < k; i++)
			d[i] = pat(seq, off + i);
		if (head == NULL)
			head = m;
		else
			FE_CHECK(tide_mbuf_chain(head, m) == 0);
		off += k;
	}
	return head;
}

/* Good traffic both ways, mergeable buffers included. */
static void traffic(struct fe *f)
{
	struct tide_rxq *rq = tide_port_rxq(P, 0);
	struct tide_txq *tq = tide_port_txq(P, 0);
	struct fe_vq *gtx = &f->vq[1], *grx = &f->vq[0];
	struct tide_mbuf *pk[16];
	struct tide_port_stats st0 = {.sz = sizeof(st0)}, st1 = {.sz = sizeof(st1)};
	uint8_t frame[1600];
	unsigned k, got = 0;
	uint16_t used0 = gtx->used->idx, rused0 = grx->used->idx;

	/* guest -> tide */
	for (unsigned s = 0; s < 8; s++) {
		for (unsigned i = 0; i < 100 + s; i++)
			frame[i] = pat(s, i);
		fe_tx_post(f, s, frame, 100 + s, 12);
	}
	while (got < 8) {
		k = tide_rx_burst(rq, pk, 16);
		FE_CHECK(k > 0);
		for (unsigned i = 0; i < k; i++, got++)
			check_frame(pk[i], got, 100 + got);
		tide_mbuf_free_bulk(pk, k);
	}
	FE_CHECK((uint16_t)(gtx->used->idx - used0) == 8);
	/* tide -> guest: 4 small packets and one of 5000 bytes over 3 mergeable buffers */
	grx->avail_idx = grx->avail->idx;
	fe_rx_post(f, 16);
	for (unsigned s = 0; s < 4; s++)
		pk[s] = mkpkt(s, 60 + s);
	pk[4] = mkpkt(9, 5000);
	FE_CHECK(tide_port_stats_get(P, &st0) == 0);
	FE_CHECK(tide_tx_burst(tq, pk, 5) == 5);
	/* Copied out and freed (after the loop, or in it with txfree_loop=yes): released. */
	FE_CHECK(tide_port_stats_get(P, &st1) == 0);
	FE_CHECK(st1.tx_released - st0.tx_released == 5);
	FE_CHECK((uint16_t)(grx->used->idx - rused0) == 7);
	for (unsigned s = 0, e = rused0; s < 5; s++) {
		struct vring_used_elem *u = &grx->used->ring[e % FE_NUM];
		const uint8_t *b = fe_buf(f, 0, u->id);
		struct virtio_net_hdr_mrg h;
		unsigned len = s < 4 ? 60 + s : 5000, seq = s < 4 ? s : 9, off = 0;

		memcpy(&h, b, sizeof(h));
		FE_CHECK(h.num_buffers == (s < 4 ? 1 : 3));
		for (unsigned n = 0; n < h.num_buffers; n++, e++) {
			u = &grx->used->ring[e % FE_NUM];
			b = fe_buf(f, 0, u->id) + (n == 0 ? 12 : 0);
			for (unsigned i = 0; i < u->len - (n == 0 ? 12 : 0); i++, off++)
				FE_CHECK(b[i] == pat(seq, off));
		}
		FE_CHECK(off == len);
	}
}

/* ---- the cases ---- */

struct hcase {
	const char *name;
	const char *reason; /* substring of the disconnect reason */
	bool violation;
	void (*run)(struct fe *f);
};

static void c_overlap(struct fe *f)
{
	struct vhost_user_mem_region r[2] = {fe_region(f), fe_region(f)};
	int fds[2] = {f->memfd, f->memfd};

	handshake(f, S_FEATURES);
	r[1].gpa += FE_MEM / 2;
	r[1].uva += FE_MEM;
	fe_mem_table(f, r, 2, fds, 2);
}

static void c_overlap_uva(struct fe *f)
{
	struct vhost_user_mem_region r[2] = {fe_region(f), fe_region(f)};
	int fds[2] = {f->memfd, f->memfd};

	handshake(f, S_FEATURES);
	r[1].gpa += FE_MEM;
	r[1].uva += FE_MEM / 2;
	fe_mem_table(f, r, 2, fds, 2);
}

static void c_beyond_file(struct fe *f)
{
	struct vhost_user_mem_region r = fe_region(f);

	handshake(f, S_FEATURES);
	r.size = 2 * FE_MEM;
	fe_mem_table(f, &r, 1, &f->memfd, 1);
}

static void c_wrap(struct fe *f)
{
	struct vhost_user_mem_region r = fe_region(f);

	handshake(f, S_FEATURES);
	r.gpa = ~0ull - 4095;
	fe_mem_table(f, &r, 1, &f->memfd, 1);
}

static void c_mem_nofd(struct fe *f)
{
	struct vhost_user_mem_region r = fe_region(f);

	handshake(f, S_FEATURES);
	fe_mem_table(f, &r, 1, NULL, 0);
}

static void c_mem_twofds(struct fe *f)
{
	struct vhost_user_mem_region r = fe_region(f);
	int fds[2] = {f->memfd, f->memfd};

	handshake(f, S_FEATURES);
	fe_mem_table(f, &r, 1, fds, 2);
}

static void c_fd_on_owner(struct fe *f)
{
	handshake(f, S_CONNECT);
	fe_send(f, VHOST_USER_SET_OWNER, NULL, 0, &f->memfd, 1);
}

static void c_short_payload(struct fe *f)
{
	uint32_t x = 0;

	handshake(f, S_MEM);
	fe_send(f, VHOST_USER_SET_VRING_NUM, &x, 4, NULL, 0);
}

static void c_oversized(struct fe *f)
{
	handshake(f, S_CONNECT);
	fe_send_raw(f, VHOST_USER_SET_VRING_ADDR, VHOST_USER_VERSION, 4096, NULL, 0, NULL, 0);
}

static void c_version(struct fe *f)
{
	handshake(f, S_CONNECT);
	fe_send_raw(f, VHOST_USER_GET_FEATURES, 2, 0, NULL, 0, NULL, 0);
}

static void c_vring_index(struct fe *f)
{
	handshake(f, S_MEM);
	fe_send_state(f, VHOST_USER_SET_VRING_NUM, 5, FE_NUM);
}

static void c_vring_num(struct fe *f)
{
	handshake(f, S_MEM);
	fe_send_state(f, VHOST_USER_SET_VRING_NUM, 0, 100);
}

static void c_vring_addr(struct fe *f)
{
	struct vhost_user_vring_addr a = {.index = 1, .desc = fe_uva(f, FE_MEM - 100),
				    .used = fe_uva(f, f->vq[1].used_off),
				    .avail = fe_uva(f, f->vq[1].avail_off)};
	uint64_t u = 1;

	handshake(f, S_MEM);
	fe_send_state(f, VHOST_USER_SET_VRING_NUM, 1, FE_NUM);
	fe_send(f, VHOST_USER_SET_VRING_ADDR, &a, sizeof(a), NULL, 0);
	fe_send(f, VHOST_USER_SET_VRING_KICK, &u, 8, &f->vq[1].kick, 1);
	fe_send_state(f, VHOST_USER_SET_VRING_ENABLE, 1, 1);
}

static void c_features(struct fe *f)
{
	handshake(f, S_CONNECT);
	fe_send_u64(f, VHOST_USER_SET_FEATURES, feats | (1ull << 40));
}

static void c_unknown(struct fe *f)
{
	handshake(f, S_CONNECT);
	fe_send(f, 77, NULL, 0, NULL, 0);
}

static void c_kick_nofd(struct fe *f)
{
	handshake(f, S_MEM);
	fe_send_u64(f, VHOST_USER_SET_VRING_KICK, 1);
}

static void c_gone_handshake(struct fe *f)
{
	handshake(f, S_MEM);
	close(f->sock);
	f->sock = -1;
}

static void c_gone_mid_message(struct fe *f)
{
	uint32_t x = 1;

	handshake(f, S_FEATURES);
	fe_send_raw(f, VHOST_USER_SET_VRING_NUM, VHOST_USER_VERSION, 8, &x, 4, NULL, 0);
	poll_ctl();
	close(f->sock);
	f->sock = -1;
}

/* Data path: a good handshake, then one bad thing in the guest Tx vring (tide's Rx). */
static void rx_poll(void)
{
	struct tide_mbuf *pk[32];
	unsigned k = tide_rx_burst(tide_port_rxq(P, 0), pk, 32);

	tide_mbuf_free_bulk(pk, k);
}

static struct fe_vq *tx_one(struct fe *f, uint16_t flags, uint64_t addr, uint32_t len,
			    uint16_t next)
{
	struct fe_vq *q = &f->vq[1];

	handshake(f, S_ALL);
	q->desc[0] = (struct vring_desc){addr, len, flags, next};
	q->avail->ring[0] = 0;
	__atomic_store_n(&q->avail->idx, 1, __ATOMIC_RELEASE);
	return q;
}

#define IN_ORDER VIRTIO_BIT(VIRTIO_F_IN_ORDER)
#define NO_ID	 0xbeefu /* a used ring entry tide never wrote */

/* In order, the burst's first chain is bad: it completes nothing (no used entry written). */
static void c_inorder_bad_first(struct fe *f)
{
	struct fe_vq *q;

	extra_feats |= IN_ORDER;
	q = tx_one(f, 0, FE_GPA + FE_BUFS, 64, 0);
	q->used->ring[0].id = NO_ID;
	q->avail->ring[0] = FE_NUM + 3;
	rx_poll();
	FE_CHECK(q->used->ring[0].id == NO_ID && q->used->idx == 0);
}

static void c_avail_jump(struct fe *f)
{
	handshake(f, S_ALL);
	__atomic_store_n(&f->vq[1].avail->idx, FE_NUM + 1, __ATOMIC_RELEASE);
	rx_poll();
}

static void c_head_range(struct fe *f)
{
	struct fe_vq *q = tx_one(f, 0, FE_GPA + FE_BUFS, 64, 0);

	q->avail->ring[0] = FE_NUM + 3;
	rx_poll();
}

static void c_loop(struct fe *f)
{
	struct fe_vq *q = tx_one(f, VRING_DESC_F_NEXT, FE_GPA + FE_BUFS, 64, 1);

	q->desc[1] = (struct vring_desc){FE_GPA + FE_BUFS, 64, VRING_DESC_F_NEXT, 0};
	rx_poll();
}

static void c_next_range(struct fe *f)
{
	tx_one(f, VRING_DESC_F_NEXT, FE_GPA + FE_BUFS, 64, 999);
	rx_poll();
}

static void c_addr_outside(struct fe *f)
{
	tx_one(f, 0, FE_GPA + FE_MEM + 64, 64, 0);
	rx_poll();
}

static void c_addr_crossing(struct fe *f)
{
	tx_one(f, 0, FE_GPA + FE_MEM - 10, 100, 0);
	rx_poll();
}

static void c_ind_outside(struct fe *f)
{
	tx_one(f, VRING_DESC_F_INDIRECT, FE_GPA + FE_MEM - 16, 32, 0);
	rx_poll();
}

static void c_ind_next(struct fe *f)
{
	struct vring_desc *t = (struct vring_desc *)fe_buf(f, 1, 10);

	t[0] = (struct vring_desc){FE_GPA + FE_BUFS, 32, 0, 0};
	tx_one(f, VRING_DESC_F_INDIRECT | VRING_DESC_F_NEXT, fe_gpa(f, t), 16, 1);
	rx_poll();
}

static void c_ind_size(struct fe *f)
{
	tx_one(f, VRING_DESC_F_INDIRECT, FE_GPA + FE_BUFS, 24, 0);
	rx_poll();
}

static void c_ind_nested(struct fe *f)
{
	struct vring_desc *t = (struct vring_desc *)fe_buf(f, 1, 10);

	t[0] = (struct vring_desc){FE_GPA + FE_BUFS, 32, VRING_DESC_F_INDIRECT, 0};
	tx_one(f, VRING_DESC_F_INDIRECT, fe_gpa(f, t), 32, 0);
	rx_poll();
}

static void c_ind_loop(struct fe *f)
{
	struct vring_desc *t = (struct vring_desc *)fe_buf(f, 1, 10);

	t[0] = (struct vring_desc){FE_GPA + FE_BUFS, 32, VRING_DESC_F_NEXT, 1};
	t[1] = (struct vring_desc){FE_GPA + FE_BUFS, 32, VRING_DESC_F_NEXT, 0};
	tx_one(f, VRING_DESC_F_INDIRECT, fe_gpa(f, t), 32, 0);
	rx_poll();
}

static void c_ind_no_feature(struct fe *f)
{
	struct fe_vq *q = &f->vq[1];
	struct vring_desc *t = (struct vring_desc *)fe_buf(f, 1, 10);

	/* Renegotiate without INDIRECT_DESC, then use an indirect table. */
	handshake(f, S_ALL);
	fe_send_u64(f, VHOST_USER_SET_FEATURES, feats & ~VIRTIO_BIT(VIRTIO_F_INDIRECT_DESC));
	poll_ctl();
	t[0] = (struct vring_desc){FE_GPA + FE_BUFS, 32, 0, 0};
	q->desc[0] = (struct vring_desc){fe_gpa(f, t), 16, VRING_DESC_F_INDIRECT, 0};
	q->avail->ring[0] = 0;
	__atomic_store_n(&q->avail->idx, 1, __ATOMIC_RELEASE);
	rx_poll();
}

static void c_tx_writable(struct fe *f)
{
	tx_one(f, VRING_DESC_F_WRITE, FE_GPA + FE_BUFS, 64, 0);
	rx_poll();
}

/* tide's Tx into the guest Rx vring, one buffer at @addr. */
static void tx_into_at(struct fe *f, uint16_t flags, uint64_t addr, uint32_t len)
{
	struct fe_vq *q = &f->vq[0];
	struct tide_mbuf *m;

	handshake(f, S_ALL);
	q->desc[0] = (struct vring_desc){addr, len, flags, 0};
	q->avail->ring[0] = 0;
	__atomic_store_n(&q->avail->idx, 1, __ATOMIC_RELEASE);
	m = mkpkt(1, 60);
	if (tide_tx_burst(tide_port_txq(P, 0), &m, 1) == 0)
		tide_mbuf_free(m);
}

static void tx_into(struct fe *f, uint16_t flags, uint32_t len)
{
	tx_into_at(f, flags, FE_GPA + FE_BUFS, len);
}

/* Room for the header and part of the frame before the region ends. */
static void c_rx_crossing(struct fe *f)
{
	tx_into_at(f, VRING_DESC_F_WRITE, FE_GPA + FE_MEM - 40, 100);
}

static void c_rx_readable(struct fe *f)
{
	tx_into(f, 0, FE_BUF);
}

static void c_rx_short(struct fe *f)
{
	tx_into(f, VRING_DESC_F_WRITE, 4);
}

static void c_rx_avail_jump(struct fe *f)
{
	struct tide_mbuf *m;

	handshake(f, S_ALL);
	__atomic_store_n(&f->vq[0].avail->idx, 40000, __ATOMIC_RELEASE);
	m = mkpkt(1, 60);
	if (tide_tx_burst(tide_port_txq(P, 0), &m, 1) == 0)
		tide_mbuf_free(m);
}

static void c_gone_traffic(struct fe *f)
{
	uint8_t frame[64] = {0};

	handshake(f, S_ALL);
	for (unsigned s = 0; s < 4; s++)
		fe_tx_post(f, s, frame, sizeof(frame), 12);
	close(f->sock);
	f->sock = -1;
	rx_poll(); /* the bursts may or may not run before the control plane sees it */
}

/*
 * Guest memory tide cannot seal against shrinking (a memfd without MFD_ALLOW_SEALING),
 * shrunk by the frontend under a running vring: mapped, the next burst would die of SIGBUS.
 * Refused at SET_MEM_TABLE (unsealed_mem=no, the default); the rest of the handshake and
 * the shrink then touch nothing of tide's.
 */
static void c_unsealed(struct fe *f)
{
	uint8_t frame[64] = {0};

	fe_fini(f);
	fe_init_flags(f, MFD_CLOEXEC);
	handshake(f, S_MEM);
	fe_vring(f, 0);
	fe_vring(f, 1);
	poll_ctl();
	fe_tx_post(f, 0, frame, sizeof(frame), 12);
	FE_CHECK(ftruncate(f->memfd, 0) == 0);
	rx_poll();
}

static void on_alarm(int sig)
{
	static const char msg[] = "FAIL: timed out: a burst blocked on the guest's call fd, or a vring stop waits for a burst\n";

	(void)sig;
	(void)!write(2, msg, sizeof(msg) - 1);
	unlink(path);
	_exit(1);
}

/*
 * The guest's call fds are blocking eventfds whose counter is one below its maximum: a
 * blocking write of 1 would wait until the guest reads it, which it never does. Both
 * directions notify (the guest asks: no NO_INTERRUPT flag, no event index) and must go on:
 * the writes fail (counted in call_errors), and the fds were made non-blocking.
 */
static void call_saturated(struct fe *f, bool packed)
{
	uint64_t full = UINT64_MAX - 1;
	struct tide_vhost_info a = {.sz = sizeof(a)}, b = {.sz = sizeof(b)};
	struct tide_mbuf *pk[8];
	uint8_t frame[64] = {0};
	unsigned k;

	for (unsigned v = 0; v < 2; v++) {
		int e = eventfd(0, EFD_CLOEXEC);

		FE_CHECK(e >= 0 && write(e, &full, sizeof(full)) == sizeof(full));
		close(f->vq[v].call);
		f->vq[v].call = e;
	}
	handshake(f, S_ALL);
	vinfo(&a);
	signal(SIGALRM, on_alarm);
	alarm(10);
	for (unsigned s = 0; s < 4; s++)
		if (packed)
			fe_pk_tx_post(f, s, frame, sizeof(frame), 12);
		else
			fe_tx_post(f, s, frame, sizeof(frame), 12);
	k = tide_rx_burst(tide_port_rxq(P, 0), pk, 8);
	FE_CHECK(k == 4);
	tide_mbuf_free_bulk(pk, k);
	if (packed) {
		for (unsigned j = 0; j < 2; j++) {
			uint64_t ad = fe_gpa(f, fe_buf(f, 0, j));
			uint32_t l = FE_BUF;

			fe_pk_post(f, 0, &ad, &l, 1, (uint16_t)j, VRING_DESC_F_WRITE);
		}
	} else {
		fe_rx_post(f, 2);
	}
	pk[0] = mkpkt(1, 60);
	pk[1] = mkpkt(2, 60);
	FE_CHECK(tide_tx_burst(tide_port_txq(P, 0), pk, 2) == 2);
	alarm(0);
	vinfo(&b);
	FE_CHECK(b.call_errors == a.call_errors + 2);
	FE_CHECK(fcntl(f->vq[0].call, F_GETFL) & O_NONBLOCK);
	FE_CHECK(fcntl(f->vq[1].call, F_GETFL) & O_NONBLOCK);
	close(f->sock);
	f->sock = -1;
}

static void c_call_saturated(struct fe *f)
{
	call_saturated(f, false);
}

static void pc_call_saturated(struct fe *f)
{
	call_saturated(f, true);
}

/* A call fd that is not an eventfd (@fd: replaces the guest Tx vring's). */
static void call_not_eventfd(struct fe *f, int fd)
{
	FE_CHECK(fd >= 0);
	close(f->vq[1].call);
	f->vq[1].call = fd;
	handshake(f, S_MEM);
	fe_vring(f, 0);
	fe_vring(f, 1);
}

/* A pipe whose reader is gone: a write would block once full, or raise SIGPIPE at once. */
static void c_call_pipe(struct fe *f)
{
	int p[2];

	FE_CHECK(pipe2(p, O_CLOEXEC) == 0);
	close(p[0]);
	call_not_eventfd(f, p[1]);
}

/* A regular file: writes succeed and notify nobody. */
static void c_call_file(struct fe *f)
{
	call_not_eventfd(f, memfd_create("fe-callfile", MFD_CLOEXEC));
}

static const struct hcase cases[] = {
	{"regions overlap", "overlap", true, c_overlap},
	{"regions overlap in frontend addresses", "overlap", true, c_overlap_uva},
	{"region beyond its file", "beyond the end of its file", true, c_beyond_file},
	{"region wraps", "wraps", true, c_wrap},
	{"memory table without fds", "file descriptors for 1 regions", true, c_mem_nofd},
	{"memory table with an extra fd", "2 file descriptors for 1 regions", true, c_mem_twofds},
	{"fd on SET_OWNER", "unexpected file descriptors", true, c_fd_on_owner},
	{"short payload", "SET_VRING_NUM: payload of 4 bytes", true, c_short_payload},
	{"oversized message", "payload of 4096 bytes", true, c_oversized},
	{"bad version", "protocol version", true, c_version},
	{"vring index beyond offered", "vring 5 beyond", true, c_vring_index},
	{"vring size not a power of two", "power of two", true, c_vring_num},
	{"vring address outside memory", "descriptor table not in guest memory", true, c_vring_addr},
	{"features not offered", "not offered", true, c_features},
	{"unknown request", "request 77 not supported", true, c_unknown},
	{"kick without fd or no-fd flag", "file descriptors, expected 1", true, c_kick_nofd},
	{"gone mid-handshake", "frontend closed the connection", false, c_gone_handshake},
	{"gone mid-message", "mid-message", false, c_gone_mid_message},
	{"avail index jump", "avail index moved", true, c_avail_jump},
	{"avail entry beyond the queue", "beyond the queue size", true, c_head_range},
	{"in order: bad first chain", "beyond the queue size", true, c_inorder_bad_first},
	{"descriptor loop", "loops", true, c_loop},
	{"next beyond the table", "next index beyond", true, c_next_range},
	{"buffer outside memory", "outside guest memory", true, c_addr_outside},
	{"buffer crossing the region end", "outside guest memory", true, c_addr_crossing},
	{"indirect table outside memory", "indirect table outside", true, c_ind_outside},
	{"indirect descriptor with next", "indirect descriptor with the next flag", true, c_ind_next},
	{"indirect table size", "multiple of 16", true, c_ind_size},
	{"nested indirect table", "nested indirect", true, c_ind_nested},
	{"indirect chain loop", "loops", true, c_ind_loop},
	{"indirect without the feature", "without VIRTIO_F_INDIRECT_DESC", true, c_ind_no_feature},
	{"writable descriptor in a Tx chain", "device-writable", true, c_tx_writable},
	{"readable descriptor in an Rx chain", "device-readable", true, c_rx_readable},
	{"Rx buffer shorter than the header", "shorter than the virtio-net header", true, c_rx_short},
	{"Rx buffer crossing the region end", "outside guest memory", true, c_rx_crossing},
	{"Rx avail index jump", "avail index moved", true, c_rx_avail_jump},
	{"gone mid-traffic", "frontend closed the connection", false, c_gone_traffic},
	{"memory that cannot be sealed, shrunk", "cannot be sealed against shrinking", true, c_unsealed},
	{"call fd: blocking eventfd, counter full", "frontend closed the connection", false, c_call_saturated},
	{"call fd: a pipe", "call fd is not an eventfd", true, c_call_pipe},
	{"call fd: a regular file", "call fd is not an eventfd", true, c_call_file},
};

static int readable(int efd)
{
	uint64_t v;

	return read(efd, &v, sizeof(v)) == sizeof(v);
}

/*
 * Notifications: the guest is told about completions only when it asked (no event index:
 * unless avail->flags has NO_INTERRUPT; event index: when used->idx passes used_event).
 */
static void notify_check(struct fe *f)
{
	struct fe_vq *q = &f->vq[1];
	uint8_t frame[64] = {1};
	struct tide_mbuf *m;

	(void)readable(q->call);
	if (!(f->features & VIRTIO_BIT(VIRTIO_F_EVENT_IDX))) {
		q->avail->flags = VRING_AVAIL_F_NO_INTERRUPT;
		fe_tx_post(f, 20, frame, sizeof(frame), 12);
		FE_CHECK(tide_rx_burst(tide_port_rxq(P, 0), &m, 1) == 1);
		tide_mbuf_free(m);
		FE_CHECK(!readable(q->call));
		q->avail->flags = 0;
		fe_tx_post(f, 21, frame, sizeof(frame), 12);
		FE_CHECK(tide_rx_burst(tide_port_rxq(P, 0), &m, 1) == 1);
		tide_mbuf_free(m);
		FE_CHECK(readable(q->call));
	} else {
		/* used_event: wake me when used->idx passes used + 1 (the second packet). */
		uint16_t *used_event = &q->avail->ring[FE_NUM];

		*used_event = (uint16_t)(q->used->idx + 1);
		fe_tx_post(f, 20, frame, sizeof(frame), 12);
		FE_CHECK(tide_rx_burst(tide_port_rxq(P, 0), &m, 1) == 1);
		tide_mbuf_free(m);
		FE_CHECK(!readable(q->call));
		fe_tx_post(f, 21, frame, sizeof(frame), 12);
		FE_CHECK(tide_rx_burst(tide_port_rxq(P, 0), &m, 1) == 1);
		tide_mbuf_free(m);
		FE_CHECK(readable(q->call));
	}
}

/*
 * A burst that finds its vring stopped leaves the queue as it was: the vring stops
 * (GET_VRING_BASE), a burst runs, the vring restarts (kick) and stops again at once (a
 * queue left busy would keep the second stop waiting for good: the alarm fails the test).
 */
static void restart_check(struct fe *f)
{
	struct vhost_user_vring_state st;
	uint64_t u = 1;

	signal(SIGALRM, on_alarm);
	alarm(10);
	for (unsigned i = 0; i < 2; i++) {
		fe_send_state(f, VHOST_USER_GET_VRING_BASE, 1, 0);
		poll_ctl();
		FE_CHECK(fe_reply(f, &st, sizeof(st)) == 0 && st.num == f->vq[1].avail_idx);
		rx_poll();
		fe_send(f, VHOST_USER_SET_VRING_KICK, &u, 8, &f->vq[1].kick, 1);
		poll_ctl();
	}
	alarm(0);
}

/* A frame in one descriptor, longer than one mbuf's data room: a chain, intact. */
static void big_frame_check(struct fe *f)
{
	struct tide_mbuf *m;
	uint8_t frame[5000], b[5000];

	for (unsigned i = 0; i < sizeof(frame); i++)
		frame[i] = pat(77, i);
	fe_tx_post(f, 50, frame, sizeof(frame), 12);
	FE_CHECK(tide_rx_burst(tide_port_rxq(P, 0), &m, 1) == 1);
	FE_CHECK(m->pkt_len == sizeof(frame) && m->nb_segs > 1);
	FE_CHECK(tide_mbuf_read(m, 0, sizeof(b), b) == 0);
	FE_CHECK(memcmp(b, frame, sizeof(b)) == 0);
	tide_mbuf_free(m);
}

/*
 * A one-segment packet longer than the guest's receive buffers: spread over three of them
 * (mergeable buffers), each used entry no longer than its buffer.
 */
static void small_bufs_check(struct fe *f)
{
	struct fe_vq *q = &f->vq[0];
	struct tide_mbuf *m = mkpkt(33, 200);
	uint16_t u0 = q->used->idx;
	unsigned off = 0;

	FE_CHECK(m->next == NULL);
	/* In place of the buffers still posted: tide takes these three next. */
	q->avail_idx = u0;
	for (unsigned j = 0; j < 3; j++) {
		q->desc[60 + j] = (struct vring_desc){fe_gpa(f, fe_buf(f, 0, 60 + j)), 100,
						      VRING_DESC_F_WRITE, 0};
		q->avail->ring[q->avail_idx++ % FE_NUM] = (uint16_t)(60 + j);
	}
	__atomic_store_n(&q->avail->idx, q->avail_idx, __ATOMIC_RELEASE);
	FE_CHECK(tide_tx_burst(tide_port_txq(P, 0), &m, 1) == 1);
	FE_CHECK((uint16_t)(q->used->idx - u0) == 3);
	for (unsigned n = 0; n < 3; n++) {
		struct vring_used_elem *u = &q->used->ring[(u0 + n) % FE_NUM];
		const uint8_t *b = fe_buf(f, 0, u->id) + (n == 0 ? 12 : 0);

		FE_CHECK(u->id == 60 + n && u->len <= 100);
		if (n == 0) {
			struct virtio_net_hdr_mrg h;

			memcpy(&h, fe_buf(f, 0, u->id), sizeof(h));
			FE_CHECK(h.num_buffers == 3);
		}
		for (unsigned i = 0; i < u->len - (n == 0 ? 12 : 0); i++, off++)
			FE_CHECK(b[i] == pat(33, off));
	}
	FE_CHECK(off == 200);
}

/* A frame longer than tide takes (16 KiB) is dropped and counted; the link stays up. */
static void oversize_check(struct fe *f)
{
	struct fe_vq *q = &f->vq[1];
	struct tide_port_stats st0 = {.sz = sizeof(st0)}, st1 = {.sz = sizeof(st1)};
	struct tide_mbuf *m;
	uint16_t u0 = q->used->idx;

	FE_CHECK(tide_port_stats_get(P, &st0) == 0);
	for (unsigned j = 0; j < 10; j++)
		q->desc[30 + j] = (struct vring_desc){fe_gpa(f, fe_buf(f, 1, 30 + j)), FE_BUF,
						      j < 9 ? VRING_DESC_F_NEXT : 0, (uint16_t)(31 + j)};
	q->avail->ring[q->avail_idx % FE_NUM] = 30;
	__atomic_store_n(&q->avail->idx, ++q->avail_idx, __ATOMIC_RELEASE);
	FE_CHECK(tide_rx_burst(tide_port_rxq(P, 0), &m, 1) == 0);
	FE_CHECK(tide_port_stats_get(P, &st1) == 0);
	FE_CHECK(st1.rxq[0].errors == st0.rxq[0].errors + 1);
	FE_CHECK((uint16_t)(q->used->idx - u0) == 1);
	FE_CHECK(tide_pool_in_use(pool) == 0);
}

/* ---- packed virtqueues ---- */

#define PACKED VIRTIO_BIT(VIRTIO_F_RING_PACKED)

/* The guest takes the next used element of vring @v and checks its id. */
static uint32_t pk_take_used(struct fe *f, unsigned v, uint16_t want_id)
{
	uint16_t id;
	uint32_t len;

	FE_CHECK(fe_pk_used(f, v, &id, &len) == 1);
	FE_CHECK(id == want_id);
	return len;
}

/*
 * Good packed traffic both ways over more than one pass of the ring (both wrap counters
 * flip, on both vrings): guest -> tide 8 packets a round, tide -> guest 4 small packets and
 * one of 5000 bytes over 3 mergeable buffers; contents, ids, lengths and num_buffers exact.
 */
static void pk_traffic(struct fe *f)
{
	struct tide_rxq *rq = tide_port_rxq(P, 0);
	struct tide_txq *tq = tide_port_txq(P, 0);
	struct tide_mbuf *pk[16];
	uint8_t frame[200];

	/* We poll: the device event areas tell the driver not to kick. */
	FE_CHECK(fe_pk_dev_event(f, 0)->flags == VRING_PACKED_EVENT_F_DISABLE);
	FE_CHECK(fe_pk_dev_event(f, 1)->flags == VRING_PACKED_EVENT_F_DISABLE);
	for (unsigned round = 0; round < 40; round++) {
		unsigned got = 0, k;

		for (unsigned s = 0; s < 8; s++) {
			unsigned seq = round * 8 + s, len = 60 + seq % 100;

			for (unsigned i = 0; i < len; i++)
				frame[i] = pat(seq, i);
			fe_pk_tx_post(f, s, frame, len, 12);
		}
		while (got < 8) {
			k = tide_rx_burst(rq, pk, 16);
			FE_CHECK(k > 0);
			for (unsigned i = 0; i < k; i++, got++) {
				unsigned seq = round * 8 + got;

				check_frame(pk[i], seq, 60 + seq % 100);
			}
			tide_mbuf_free_bulk(pk, k);
		}
		for (unsigned s = 0; s < 8; s++)
			FE_CHECK(pk_take_used(f, 1, (uint16_t)s) == 0);
		/* tide -> guest: 7 receive buffers, ids 0..6 */
		for (unsigned j = 0; j < 7; j++) {
			uint64_t a = fe_gpa(f, fe_buf(f, 0, j));
			uint32_t l = FE_BUF;

			fe_pk_post(f, 0, &a, &l, 1, (uint16_t)j, VRING_DESC_F_WRITE);
		}
		for (unsigned s = 0; s < 4; s++)
			pk[s] = mkpkt(round + s, 60 + s);
		pk[4] = mkpkt(round + 9, 5000);
		FE_CHECK(tide_tx_burst(tq, pk, 5) == 5);
		for (unsigned s = 0, id = 0; s < 5; s++) {
			unsigned len = s < 4 ? 60 + s : 5000, seq = s < 4 ? round + s : round + 9;
			unsigned nbuf = s < 4 ? 1 : 3, off = 0;
			struct virtio_net_hdr_mrg h;

			memcpy(&h, fe_buf(f, 0, id), sizeof(h));
			FE_CHECK(h.num_buffers == nbuf);
			for (unsigned n = 0; n < nbuf; n++, id++) {
				uint32_t ul = pk_take_used(f, 0, (uint16_t)id);
				const uint8_t *b = fe_buf(f, 0, id) + (n == 0 ? 12 : 0);

				FE_CHECK(ul <= FE_BUF);
				for (unsigned i = 0; i < ul - (n == 0 ? 12 : 0); i++, off++)
					FE_CHECK(b[i] == pat(seq, off));
			}
			FE_CHECK(off == len);
		}
		FE_CHECK(fe_pk_used(f, 0, &(uint16_t){0}, &(uint32_t){0}) == 0);
	}
}

/* A head whose flags say both available and used is not available: not taken, no fault. */
static void pk_bad_head_check(struct fe *f)
{
	struct vring_packed_desc *r = fe_pk_ring(f, 1);
	struct fe_vq *q = &f->vq[1];
	uint8_t frame[64] = {3};
	struct tide_mbuf *m;
	struct tide_vhost_info vi = {.sz = sizeof(vi)};
	uint16_t pos = q->pk_avail;
	bool wrap = q->pk_wrap;

	fe_pk_tx_post(f, 40, frame, sizeof(frame), 12);
	__atomic_store_n(&r[pos].flags, VRING_PACKED_DESC_F_AVAIL | VRING_PACKED_DESC_F_USED,
			 __ATOMIC_RELEASE);
	FE_CHECK(tide_rx_burst(tide_port_rxq(P, 0), &m, 1) == 0);
	poll_ctl();
	vinfo(&vi);
	FE_CHECK(vi.connected);
	__atomic_store_n(&r[pos].flags, fe_pk_avail_flags(wrap), __ATOMIC_RELEASE);
	FE_CHECK(tide_rx_burst(tide_port_rxq(P, 0), &m, 1) == 1);
	tide_mbuf_free(m);
	pk_take_used(f, 1, 40);
}

/* Calls: DISABLE never, ENABLE always, DESC (event index) at the offset and wrap asked. */
static void pk_notify_check(struct fe *f)
{
	struct vring_packed_event *ev = fe_pk_drv_event(f, 1);
	struct fe_vq *q = &f->vq[1];
	uint8_t frame[64] = {1};
	struct tide_mbuf *m;

	(void)readable(q->call);
	ev->flags = VRING_PACKED_EVENT_F_DISABLE;
	fe_pk_tx_post(f, 20, frame, sizeof(frame), 12);
	FE_CHECK(tide_rx_burst(tide_port_rxq(P, 0), &m, 1) == 1);
	tide_mbuf_free(m);
	pk_take_used(f, 1, 20);
	FE_CHECK(!readable(q->call));
	ev->flags = VRING_PACKED_EVENT_F_ENABLE;
	fe_pk_tx_post(f, 21, frame, sizeof(frame), 12);
	FE_CHECK(tide_rx_burst(tide_port_rxq(P, 0), &m, 1) == 1);
	tide_mbuf_free(m);
	pk_take_used(f, 1, 21);
	FE_CHECK(readable(q->call));
	/* Wake me when the used element after the next one is written: at every position of
	 * two passes of the ring (the event offset and wrap cross the end of the ring too). */
	for (unsigned r = 0; f->features & VIRTIO_BIT(VIRTIO_F_EVENT_IDX) && r < q->num;
	     r++) {
		uint16_t pos = (uint16_t)(q->pk_used + 1);
		bool wrap = q->pk_uwrap;

		if (pos >= q->num) {
			pos = (uint16_t)(pos - q->num);
			wrap = !wrap;
		}
		ev->off_wrap = (uint16_t)(pos | (wrap ? VRING_PACKED_WRAP : 0));
		ev->flags = VRING_PACKED_EVENT_F_DESC;
		fe_pk_tx_post(f, 22, frame, sizeof(frame), 12);
		FE_CHECK(tide_rx_burst(tide_port_rxq(P, 0), &m, 1) == 1);
		tide_mbuf_free(m);
		pk_take_used(f, 1, 22);
		FE_CHECK(!readable(q->call));
		fe_pk_tx_post(f, 23, frame, sizeof(frame), 12);
		FE_CHECK(tide_rx_burst(tide_port_rxq(P, 0), &m, 1) == 1);
		tide_mbuf_free(m);
		pk_take_used(f, 1, 23);
		FE_CHECK(readable(q->call));
	}
	/* Bursts of 20 used elements, the event inside the burst (a call), past it or before
	 * it (none): at offsets 0..19, 20..24 and -1..-40 from the burst's start, around the
	 * ring. */
	for (unsigned r = 0; f->features & VIRTIO_BIT(VIRTIO_F_EVENT_IDX) && r < q->num / 4;
	     r++) {
		bool inside = r % 3 == 0;
		int off = inside ? (int)(r % 20) : r % 3 == 1 ? 20 + (int)(r % 5) : -1 - (int)(r % 40);
		int at = q->pk_used + off;
		bool wrap = q->pk_uwrap;
		struct tide_mbuf *pk[20];
		uint16_t pos;

		if (at >= q->num) {
			at -= q->num;
			wrap = !wrap;
		} else if (at < 0) {
			at += q->num;
			wrap = !wrap;
		}
		pos = (uint16_t)at;
		ev->off_wrap = (uint16_t)(pos | (wrap ? VRING_PACKED_WRAP : 0));
		ev->flags = VRING_PACKED_EVENT_F_DESC;
		for (unsigned j = 0; j < 20; j++)
			fe_pk_tx_post(f, 30 + j, frame, sizeof(frame), 12);
		FE_CHECK(tide_rx_burst(tide_port_rxq(P, 0), pk, 20) == 20);
		tide_mbuf_free_bulk(pk, 20);
		for (unsigned j = 0; j < 20; j++)
			pk_take_used(f, 1, (uint16_t)(30 + j));
		if (readable(q->call) != inside) {
			fprintf(stderr, "FAIL packed calls: event at %+d of a burst of 20 (ring of %u): %s\n",
				off, q->num, inside ? "no call" : "a call not asked for");
			exit(1);
		}
	}
	ev->flags = VRING_PACKED_EVENT_F_ENABLE;
}

/*
 * A packet that would take more receive buffers than tide tracks for one packet (64): dropped
 * and counted, the buffers left to the next packet, the link up.
 */
static void pk_many_bufs_check(struct fe *f)
{
	struct tide_port_stats st0 = {.sz = sizeof(st0)}, st1 = {.sz = sizeof(st1)};
	struct tide_mbuf *m = mkpkt(5, 1300), *m2;
	struct fe_vq *q = &f->vq[0];
	uint16_t pos = q->pk_used;
	uint16_t id;
	uint32_t len;

	FE_CHECK(tide_port_stats_get(P, &st0) == 0);
	for (unsigned j = 0; j < 70; j++) {
		uint64_t a = fe_gpa(f, fe_buf(f, 0, j));
		uint32_t l = 20;

		fe_pk_post(f, 0, &a, &l, 1, (uint16_t)j, VRING_DESC_F_WRITE);
	}
	FE_CHECK(tide_tx_burst(tide_port_txq(P, 0), &m, 1) == 1);
	FE_CHECK(tide_port_stats_get(P, &st1) == 0);
	FE_CHECK(st1.txq[0].errors == st0.txq[0].errors + 1);
	FE_CHECK(fe_pk_used(f, 0, &id, &len) == 0 && q->pk_used == pos);
	/* The buffers are still there for a packet that fits: 60 bytes + header in 4 of them. */
	m2 = mkpkt(6, 60);
	FE_CHECK(tide_tx_burst(tide_port_txq(P, 0), &m2, 1) == 1);
	for (unsigned j = 0; j < 4; j++)
		pk_take_used(f, 0, (uint16_t)j);
	/* Give the remaining 66 back: tide takes them for small packets. */
	for (unsigned j = 4; j < 70; j++) {
		m2 = mkpkt(7, 8);
		FE_CHECK(tide_tx_burst(tide_port_txq(P, 0), &m2, 1) == 1);
		pk_take_used(f, 0, (uint16_t)j);
	}
	FE_CHECK(tide_pool_in_use(pool) == 0);
	/* tx_released (tide/port.h): the 68 packets taken, the dropped one included. */
	FE_CHECK(tide_port_stats_get(P, &st1) == 0);
	FE_CHECK(st1.tx_released - st0.tx_released == 68);
}

static uint16_t pk_num = FE_NUM; /* the packed rings' size in good_packed_connection() */

static void good_packed_connection(void)
{
	struct fe f;
	struct tide_vhost_info vi = {.sz = sizeof(vi)};
	uint64_t d0, saved = extra_feats;

	extra_feats |= PACKED;
	fe_init(&f);
	f.vq[0].num = f.vq[1].num = pk_num;
	handshake(&f, S_ALL);
	vinfo(&vi);
	FE_CHECK(vi.features & PACKED);
	pk_traffic(&f);
	pk_notify_check(&f);
	pk_bad_head_check(&f);
	pk_many_bufs_check(&f);
	FE_CHECK(tide_pool_in_use(pool) == 0);
	d0 = vi.disconnects;
	fe_fini(&f);
	WAIT_FOR((vinfo(&vi), vi.disconnects > d0), "disconnect of the good packed frontend");
	FE_CHECK(vi.connected == 0);
	extra_feats = saved;
}

/* Packed, guest Tx vring: one buffer of one descriptor at position 0 (pass 1). */
static void pk_tx_one(struct fe *f, uint64_t addr, uint32_t len, uint16_t id, uint16_t extra)
{
	handshake(f, S_ALL);
	fe_pk_post(f, 1, &addr, &len, 1, id, extra);
	rx_poll();
}

static void pc_id_range(struct fe *f)
{
	pk_tx_one(f, FE_GPA + FE_BUFS, 64, FE_NUM + 3, 0);
}

/* A chain (the general path) whose id, in its last descriptor, is beyond the queue. */
static void pc_chain_id_range(struct fe *f)
{
	uint64_t a[2] = {FE_GPA + FE_BUFS, FE_GPA + FE_BUFS + 64};
	uint32_t l[2] = {64, 64};

	handshake(f, S_ALL);
	fe_pk_post(f, 1, a, l, 2, FE_NUM + 3, 0);
	rx_poll();
}

/* In order, the burst's first buffer is bad: no used descriptor written over it. */
static void pc_inorder_bad_first(struct fe *f)
{
	const struct vring_packed_desc *d = &fe_pk_ring(f, 1)[0];

	extra_feats |= IN_ORDER;
	pk_tx_one(f, FE_GPA + FE_BUFS, 64, FE_NUM + 3, 0);
	FE_CHECK(d->flags == VRING_PACKED_DESC_F_AVAIL && d->id == FE_NUM + 3);
}

static void pc_addr_outside(struct fe *f)
{
	pk_tx_one(f, FE_GPA + FE_MEM + 64, 64, 0, 0);
}

static void pc_addr_crossing(struct fe *f)
{
	pk_tx_one(f, FE_GPA + FE_MEM - 10, 100, 0, 0);
}

static void pc_tx_writable(struct fe *f)
{
	pk_tx_one(f, FE_GPA + FE_BUFS, 64, 0, VRING_DESC_F_WRITE);
}

/* Every descriptor of the ring in one chain, all available, each with the next flag. */
static void pc_chain_long(struct fe *f)
{
	struct vring_packed_desc *r = fe_pk_ring(f, 1);

	handshake(f, S_ALL);
	for (unsigned i = FE_NUM; i-- > 0;) {
		r[i] = (struct vring_packed_desc){FE_GPA + FE_BUFS, 64, 0, 0};
		__atomic_store_n(&r[i].flags,
				 VRING_DESC_F_NEXT | fe_pk_avail_flags(true), __ATOMIC_RELEASE);
	}
	rx_poll();
}

/* A chain whose second descriptor is not marked available in its pass. */
static void pc_chain_unavail(struct fe *f)
{
	uint64_t a[2] = {FE_GPA + FE_BUFS, FE_GPA + FE_BUFS + 64};
	uint32_t l[2] = {64, 64};

	handshake(f, S_ALL);
	fe_pk_post(f, 1, a, l, 2, 0, 0);
	__atomic_store_n(&fe_pk_ring(f, 1)[1].flags, fe_pk_avail_flags(false), __ATOMIC_RELEASE);
	rx_poll();
}

static void pc_ind_outside(struct fe *f)
{
	pk_tx_one(f, FE_GPA + FE_MEM - 16, 32, 0, VRING_DESC_F_INDIRECT);
}

static void pc_ind_size(struct fe *f)
{
	pk_tx_one(f, FE_GPA + FE_BUFS, 24, 0, VRING_DESC_F_INDIRECT);
}

static void pc_ind_next(struct fe *f)
{
	pk_tx_one(f, FE_GPA + FE_BUFS, 32, 0, VRING_DESC_F_INDIRECT | VRING_DESC_F_NEXT);
}

static void pc_ind_in_chain(struct fe *f)
{
	uint64_t a[2] = {FE_GPA + FE_BUFS, FE_GPA + FE_BUFS + 64};
	uint32_t l[2] = {64, 32};

	handshake(f, S_ALL);
	fe_pk_post(f, 1, a, l, 2, 0, 0);
	fe_pk_ring(f, 1)[1].flags |= VRING_DESC_F_INDIRECT;
	rx_poll();
}

/* An indirect table in bounds whose entry points outside guest memory. */
static void pc_ind_entry_outside(struct fe *f)
{
	struct vring_packed_desc *t = (struct vring_packed_desc *)(void *)fe_buf(f, 1, 10);

	t[0] = (struct vring_packed_desc){FE_GPA + FE_MEM + 4096, 64, 0, 0};
	pk_tx_one(f, fe_gpa(f, t), 16, 0, VRING_DESC_F_INDIRECT);
}

/* tide's Tx into the packed guest Rx vring, one buffer. */
static void pk_tx_into(struct fe *f, uint16_t flags, uint16_t id)
{
	uint64_t a = FE_GPA + FE_BUFS;
	uint32_t l = FE_BUF;
	struct tide_mbuf *m;

	handshake(f, S_ALL);
	fe_pk_post(f, 0, &a, &l, 1, id, flags);
	m = mkpkt(1, 60);
	if (tide_tx_burst(tide_port_txq(P, 0), &m, 1) == 0)
		tide_mbuf_free(m);
}

static void pc_rx_crossing(struct fe *f)
{
	uint64_t a = FE_GPA + FE_MEM - 40;
	uint32_t l = 100;
	struct tide_mbuf *m;

	handshake(f, S_ALL);
	fe_pk_post(f, 0, &a, &l, 1, 0, VRING_DESC_F_WRITE);
	m = mkpkt(1, 60);
	if (tide_tx_burst(tide_port_txq(P, 0), &m, 1) == 0)
		tide_mbuf_free(m);
}

static void pc_ind_no_feature(struct fe *f)
{
	struct vring_packed_desc *t = (struct vring_packed_desc *)(void *)fe_buf(f, 1, 10);
	uint64_t a = fe_gpa(f, t);
	uint32_t l = 16;

	handshake(f, S_ALL);
	fe_send_u64(f, VHOST_USER_SET_FEATURES,
		    (feats | PACKED) & ~VIRTIO_BIT(VIRTIO_F_INDIRECT_DESC));
	poll_ctl();
	t[0] = (struct vring_packed_desc){FE_GPA + FE_BUFS, 32, 0, 0};
	fe_pk_post(f, 1, &a, &l, 1, 0, VRING_DESC_F_INDIRECT);
	rx_poll();
}

static void pc_rx_readable(struct fe *f)
{
	pk_tx_into(f, 0, 0);
}

static void pc_rx_id_range(struct fe *f)
{
	pk_tx_into(f, VRING_DESC_F_WRITE, FE_NUM);
}

/* SET_VRING_BASE with a ring position beyond the queue size. */
static void pc_base(struct fe *f)
{
	struct fe_vq *q = &f->vq[1];
	struct vhost_user_vring_addr a = {.index = 1, .desc = fe_uva(f, q->desc_off),
				    .used = fe_uva(f, q->used_off), .avail = fe_uva(f, q->avail_off)};
	uint64_t u = 1;

	handshake(f, S_MEM);
	fe_send_state(f, VHOST_USER_SET_VRING_NUM, 1, FE_NUM);
	fe_send_state(f, VHOST_USER_SET_VRING_BASE, 1, VRING_PACKED_WRAP | 300);
	fe_send(f, VHOST_USER_SET_VRING_ADDR, &a, sizeof(a), NULL, 0);
	fe_send(f, VHOST_USER_SET_VRING_KICK, &u, 8, &q->kick, 1);
	fe_send_state(f, VHOST_USER_SET_VRING_ENABLE, 1, 1);
}

/* Packed rings of 200 running, then the frontend renegotiates split rings: refused at the
 * vrings' restart (a split ring's indices wrap by mask). */
static void pc_split_size(struct fe *f)
{
	f->vq[0].num = f->vq[1].num = 200;
	handshake(f, S_ALL);
	fe_send_u64(f, VHOST_USER_SET_FEATURES, feats);
	poll_ctl();
}

static const struct hcase pcases[] = {
	{"packed: buffer id beyond the queue", "buffer id beyond the queue size", true, pc_id_range},
	{"packed: buffer outside memory", "outside guest memory", true, pc_addr_outside},
	{"packed: buffer crossing the region end", "outside guest memory", true, pc_addr_crossing},
	{"packed: writable descriptor in a Tx chain", "device-writable", true, pc_tx_writable},
	{"packed: chain longer than the queue", "chain longer than the queue", true, pc_chain_long},
	{"packed: chained descriptor not available", "not marked available", true, pc_chain_unavail},
	{"packed: indirect table outside memory", "indirect table outside", true, pc_ind_outside},
	{"packed: indirect table size", "multiple of 16", true, pc_ind_size},
	{"packed: indirect descriptor with next", "indirect descriptor with the next flag", true, pc_ind_next},
	{"packed: indirect inside a chain", "indirect descriptor inside a chain", true, pc_ind_in_chain},
	{"packed: indirect entry outside memory", "outside guest memory", true, pc_ind_entry_outside},
	{"packed: indirect without the feature", "without VIRTIO_F_INDIRECT_DESC", true, pc_ind_no_feature},
	{"packed: Rx buffer crossing the region end", "outside guest memory", true, pc_rx_crossing},
	{"packed: readable descriptor in an Rx chain", "device-readable", true, pc_rx_readable},
	{"packed: Rx buffer id beyond the queue", "buffer id beyond the queue size", true, pc_rx_id_range},
	{"packed: base beyond the queue size", "base beyond the queue size", true, pc_base},
	{"packed: chain with id beyond the queue", "buffer id beyond the queue size", true, pc_chain_id_range},
	{"packed: in order, bad first buffer", "buffer id beyond the queue size", true, pc_inorder_bad_first},
	{"packed ring of 200 renegotiated split", "split ring size not a power of two", true, pc_split_size},
	{"packed: call fd: blocking eventfd, counter full", "frontend closed the connection", false, pc_call_saturated},
};

static void good_connection(void)
{
	struct fe f;
	struct tide_vhost_info vi = {.sz = sizeof(vi)};
	uint64_t d0;

	fe_init_flags(&f, mfd_flags);
	handshake(&f, S_ALL);
	/* Sealable memory was sealed: the frontend can no longer shrink it under tide. */
	if (mfd_flags & MFD_ALLOW_SEALING)
		FE_CHECK(ftruncate(f.memfd, FE_MEM / 2) < 0 && errno == EPERM);
	traffic(&f);
	restart_check(&f);
	notify_check(&f);
	big_frame_check(&f);
	small_bufs_check(&f);
	oversize_check(&f);
	vinfo(&vi);
	d0 = vi.disconnects;
	fe_fini(&f);
	WAIT_FOR((vinfo(&vi), vi.disconnects > d0), "disconnect of the good frontend");
	FE_CHECK(vi.connected == 0);
}

/* ---- in-order completion (VIRTIO_F_IN_ORDER) ---- */

/*
 * Split, in order: each Rx burst writes one used entry, at its first slot, with the head of
 * its last chain (a dropped one too), and moves used->idx by its chains; the other slots are
 * left alone. The guest Rx vring keeps one entry per buffer with its length.
 */
static void split_inorder_check(struct fe *f)
{
	struct tide_rxq *rq = tide_port_rxq(P, 0);
	struct fe_vq *gtx = &f->vq[1], *grx = &f->vq[0];
	struct tide_port_stats st0 = {.sz = sizeof(st0)}, st1 = {.sz = sizeof(st1)};
	struct tide_mbuf *pk[32];
	uint8_t frame[200];
	uint16_t u = gtx->used->idx;
	unsigned seq = 0;

	FE_CHECK(tide_port_stats_get(P, &st0) == 0);
	for (unsigned i = 0; i < FE_NUM; i++)
		gtx->used->ring[i].id = NO_ID;
	/* Bursts of 5, 4 (of 7 waiting; n = 4), the other 3, and 20 (the last too short). */
	static const unsigned post[4] = {5, 7, 0, 20}, take[4] = {32, 4, 32, 32},
			      chains[4] = {5, 4, 3, 20};
	for (unsigned r = 0; r < 4; r++) {
		unsigned k;

		for (unsigned s = 0; s < post[r]; s++) {
			unsigned len = 60 + (seq + s) % 50;
			bool shortone = r == 3 && s == post[r] - 1;

			for (unsigned i = 0; i < len; i++)
				frame[i] = pat(seq + s, i);
			/* short: the first 8 bytes of a header and no frame: dropped, counted */
			fe_tx_post(f, gtx->avail_idx % FE_NUM, frame, shortone ? 0 : len,
				   shortone ? 8 : 12);
		}
		k = tide_rx_burst(rq, pk, (uint16_t)take[r]);
		FE_CHECK(k == (r == 3 ? chains[r] - 1 : chains[r]));
		for (unsigned i = 0; i < k; i++, seq++)
			check_frame(pk[i], seq, 60 + seq % 50);
		tide_mbuf_free_bulk(pk, k);
		/* Chain j of the burst is avail entry u + j, descriptor slot (u + j) % FE_NUM. */
		FE_CHECK((uint16_t)(gtx->used->idx - u) == chains[r]);
		FE_CHECK(gtx->used->ring[u % FE_NUM].id == (u + chains[r] - 1u) % FE_NUM);
		for (unsigned j = 1; j < chains[r]; j++)
			FE_CHECK(gtx->used->ring[(u + j) % FE_NUM].id == NO_ID);
		gtx->used->ring[u % FE_NUM].id = NO_ID;
		u = (uint16_t)(u + chains[r]);
	}
	FE_CHECK(tide_port_stats_get(P, &st1) == 0);
	FE_CHECK(st1.rxq[0].errors == st0.rxq[0].errors + 1);
	/* Guest Rx: one used entry per buffer, each with its length. */
	{
		uint16_t r0 = grx->used->idx;

		grx->avail_idx = grx->avail->idx;
		fe_rx_post(f, 3);
		for (unsigned s = 0; s < 3; s++)
			pk[s] = mkpkt(s, 70 + s);
		FE_CHECK(tide_tx_burst(tide_port_txq(P, 0), pk, 3) == 3);
		FE_CHECK((uint16_t)(grx->used->idx - r0) == 3);
		for (unsigned s = 0; s < 3; s++) {
			const struct vring_used_elem *e = &grx->used->ring[(r0 + s) % FE_NUM];

			FE_CHECK(e->id == s && e->len == 12 + 70 + s);
		}
	}
	FE_CHECK(tide_pool_in_use(pool) == 0);
}

/* Packed, guest Tx: one buffer of @n descriptors (the header in the first), @len frame bytes
 * of packet @seq spread over them; @hdr < 12 makes it too short. */
static void pk_chain_post(struct fe *f, unsigned n, uint16_t id, unsigned seq, unsigned len,
			  unsigned hdr)
{
	uint8_t *b = fe_buf(f, 1, id);
	uint64_t a[4];
	uint32_t l[4];
	unsigned per = len / n, off = 0;

	FE_CHECK(n >= 1 && n <= 4);

	memset(b, 0, hdr);
	for (unsigned i = 0; i < len; i++)
		b[hdr + i] = pat(seq, i);
	/* The header and the first piece, then a piece each, the rest in the last. */
	for (unsigned i = 0; i < n; i++) {
		a[i] = fe_gpa(f, i == 0 ? b : b + hdr + off);
		l[i] = (i == 0 ? hdr : 0) + (i + 1 < n ? per : len - off);
		off += per;
	}
	fe_pk_post(f, 1, a, l, n, id, 0);
}

/* The AVAIL and USED bits of ring position @pos. */
static uint16_t pk_bits(struct fe *f, unsigned v, uint16_t pos)
{
	return fe_pk_ring(f, v)[pos].flags & (VRING_PACKED_DESC_F_AVAIL | VRING_PACKED_DESC_F_USED);
}

/*
 * Packed, in order: each Rx burst writes one used descriptor, at the burst's first position
 * (flags: the wrap counter of that position), with the id of its last chain, and the next
 * burst's starts after all the descriptors this one took, across the end of the ring too.
 * Without the feature each chain has its own (pk_traffic()).
 */
static void pk_inorder_check(struct fe *f)
{
	struct tide_rxq *rq = tide_port_rxq(P, 0);
	struct fe_vq *q = &f->vq[1];
	struct tide_port_stats st0 = {.sz = sizeof(st0)}, st1 = {.sz = sizeof(st1)};
	struct tide_mbuf *pk[32];
	unsigned seq = 0, k;
	uint16_t id, pos;
	bool wrap;

	FE_CHECK(tide_port_stats_get(P, &st0) == 0);
	/* Up to 3 positions before the end of the ring: 11 bursts of 23 one-descriptor chains. */
	for (unsigned round = 0; round < 11; round++) {
		pos = q->pk_avail;
		wrap = q->pk_wrap;
		for (unsigned s = 0; s < 23; s++)
			pk_chain_post(f, 1, (uint16_t)(100 + s), seq + s, 60 + s, 12);
		k = tide_rx_burst(rq, pk, 32);
		FE_CHECK(k == 23);
		for (unsigned i = 0; i < k; i++, seq++)
			FE_CHECK(pk[i]->pkt_len == 60 + i && tide_mbuf_mtod(pk[i], uint8_t *)[5] == pat(seq, 5));
		tide_mbuf_free_bulk(pk, k);
		FE_CHECK(pk_bits(f, 1, pos) == (wrap ? VRING_PACKED_DESC_F_AVAIL | VRING_PACKED_DESC_F_USED : 0));
		for (unsigned j = 1; j < 23; j++)
			FE_CHECK(pk_bits(f, 1, (uint16_t)(pos + j)) == fe_pk_avail_flags(wrap));
		FE_CHECK(fe_pk_used_batch(f, 1, 23, &id, &(uint32_t){0}) == 1 && id == 122);
	}
	FE_CHECK(q->pk_avail == FE_NUM - 3 && q->pk_used == FE_NUM - 3);
	/* Chains of 1, 3 (across the end: 254, 255, 0), 2 and 1 (too short: dropped). */
	pos = q->pk_avail;
	wrap = q->pk_wrap;
	pk_chain_post(f, 1, 10, seq, 64, 12);
	pk_chain_post(f, 3, 11, seq + 1, 300, 12);
	pk_chain_post(f, 2, 12, seq + 2, 90, 12);
	pk_chain_post(f, 1, 13, seq + 3, 0, 8);
	k = tide_rx_burst(rq, pk, 32);
	FE_CHECK(k == 3);
	for (unsigned i = 0; i < k; i++)
		check_frame(pk[i], seq + i, i == 0 ? 64 : i == 1 ? 300 : 90);
	tide_mbuf_free_bulk(pk, k);
	seq += 4;
	FE_CHECK(tide_port_stats_get(P, &st1) == 0);
	FE_CHECK(st1.rxq[0].errors == st0.rxq[0].errors + 1);
	/* One used descriptor, at 253 in this pass; the other heads (254, 1, 3) untouched. */
	FE_CHECK(pk_bits(f, 1, pos) == (wrap ? VRING_PACKED_DESC_F_AVAIL | VRING_PACKED_DESC_F_USED : 0));
	FE_CHECK(fe_pk_ring(f, 1)[pos].id == 13);
	FE_CHECK(pk_bits(f, 1, FE_NUM - 2) == fe_pk_avail_flags(wrap));
	FE_CHECK(pk_bits(f, 1, 1) == fe_pk_avail_flags(!wrap));
	FE_CHECK(pk_bits(f, 1, 3) == fe_pk_avail_flags(!wrap));
	FE_CHECK(fe_pk_used_batch(f, 1, 7, &id, &(uint32_t){0}) == 1 && id == 13);
	FE_CHECK(q->pk_used == 4 && q->pk_uwrap == !wrap);
	/* The next bursts start at 4 in the next pass: one chain each (n = 1). */
	pk_chain_post(f, 1, 14, seq, 61, 12);
	pk_chain_post(f, 2, 15, seq + 1, 62, 12);
	for (unsigned b = 0; b < 2; b++) {
		FE_CHECK(tide_rx_burst(rq, pk, 1) == 1);
		FE_CHECK(pk[0]->pkt_len == 61 + b);
		tide_mbuf_free(pk[0]);
		FE_CHECK(pk_bits(f, 1, (uint16_t)(4 + b)) ==
			 (!wrap ? VRING_PACKED_DESC_F_AVAIL | VRING_PACKED_DESC_F_USED : 0));
		if (b == 0)
			FE_CHECK(pk_bits(f, 1, 5) == fe_pk_avail_flags(!wrap));
		FE_CHECK(fe_pk_used_batch(f, 1, b == 0 ? 1 : 2, &id, &(uint32_t){0}) == 1 && id == 14 + b);
	}
	FE_CHECK(fe_pk_used_batch(f, 1, 1, &id, &(uint32_t){0}) == 0);
	/* Guest Rx: one used descriptor per buffer, each with its length. */
	for (unsigned j = 0; j < 3; j++) {
		uint64_t a = fe_gpa(f, fe_buf(f, 0, j));
		uint32_t l = FE_BUF;

		fe_pk_post(f, 0, &a, &l, 1, (uint16_t)j, VRING_DESC_F_WRITE);
		pk[j] = mkpkt(j, 70 + j);
	}
	FE_CHECK(tide_tx_burst(tide_port_txq(P, 0), pk, 3) == 3);
	for (unsigned j = 0; j < 3; j++)
		FE_CHECK(pk_take_used(f, 0, (uint16_t)j) == 12 + 70 + j);
	FE_CHECK(tide_pool_in_use(pool) == 0);
}

/* A good connection that negotiates VIRTIO_F_IN_ORDER (@packed: packed rings too). */
static void good_inorder_connection(bool packed)
{
	struct fe f;
	struct tide_vhost_info vi = {.sz = sizeof(vi)};
	uint64_t d0, saved = extra_feats;

	extra_feats |= IN_ORDER | (packed ? PACKED : 0);
	fe_init(&f);
	handshake(&f, S_ALL);
	vinfo(&vi);
	FE_CHECK(vi.features & IN_ORDER);
	if (packed)
		pk_inorder_check(&f);
	else
		split_inorder_check(&f);
	d0 = vi.disconnects;
	fe_fini(&f);
	WAIT_FOR((vinfo(&vi), vi.disconnects > d0), "disconnect of the in-order frontend");
	extra_feats = saved;
}

/* Each case, then a good connection (@good); @base is negotiated on top for each case. */
static unsigned run_cases(const struct hcase *cs, size_t n, uint64_t base, void (*good)(void),
			  const char *only, unsigned fds0)
{
	unsigned failed = 0;

	for (size_t i = 0; i < n; i++) {
		const struct hcase *c = &cs[i];
		struct tide_vhost_info a = {.sz = sizeof(a)}, b = {.sz = sizeof(b)};
		struct fe f;

		if (only && strcmp(only, c->name) != 0)
			continue;
		extra_feats = base;
		vinfo(&a);
		fe_init(&f);
		c->run(&f);
		WAIT_FOR((vinfo(&b), b.disconnects > a.disconnects), c->name);
		rx_poll();
		fe_fini(&f);
		if (strstr(b.reason, c->reason) == NULL ||
		    b.violations - a.violations != (c->violation ? 1u : 0u) || b.connected ||
		    tide_pool_in_use(pool) != 0 || count_fds() != fds0) {
			fprintf(stderr, "FAIL %s: reason '%s' (want '%s'), violations +%llu, connected %d, pool in use %u, fds %u (was %u)\n",
				c->name, b.reason, c->reason,
				(unsigned long long)(b.violations - a.violations), b.connected,
				tide_pool_in_use(pool), count_fds(), fds0);
			failed++;
		} else {
			printf("ok   %-44s -> %s\n", c->name, b.reason);
		}
		extra_feats = i % 2 ? VIRTIO_BIT(VIRTIO_F_EVENT_IDX) : 0;
		good();
		extra_feats = 0;
	}
	return failed;
}

/* A failing check exits at once: the socket file goes with the process. */
static void remove_socket(void)
{
	unlink(path);
}

/* Each Tx packet freed right after its copy (txfree_loop=yes, benchmark-only). */
static void txfree_loop_case(void)
{
	char spec[200];

	snprintf(spec, sizeof(spec), "vhost:socket=%s,role=server,txfree_loop=yes", path);
	FE_CHECK(tide_port_open(spec, &P) == 0);
	FE_CHECK(tide_port_configure(P, 1, 1) == 0);
	FE_CHECK(tide_rxq_setup(P, 0, 256, pool, NULL) == 0);
	FE_CHECK(tide_txq_setup(P, 0, 256, NULL) == 0);
	FE_CHECK(tide_port_start(P) == 0);
	good_connection();
	tide_port_close(P);
	FE_CHECK(tide_pool_in_use(pool) == 0);
}

/*
 * Argument NAME: only the case NAME. Argument "txfree_loop" (the test vhost_hostile_txfree_loop):
 * only txfree_loop=yes, which exits 77, a skip, in a build without -Dbench_variants=true,
 * where that key does not exist.
 */
int main(int argc, char **argv)
{
	unsigned fds0, failed = 0;
	const char *only = argc > 1 ? argv[1] : NULL;
	bool loop = only != NULL && strcmp(only, "txfree_loop") == 0;
	char spec[200];

	if (loop && !TIDE_BENCH_VARIANTS) {
		fprintf(stderr, "skip: txfree_loop=yes exists only in a build with -Dbench_variants=true\n");
		return 77;
	}
	tide_thread_register();
	snprintf(path, sizeof(path), "%s/tide-vhost-hostile-%d.sock", test_tmp(), (int)getpid());
	atexit(remove_socket);
	snprintf(spec, sizeof(spec), "vhost:socket=%s,role=server", path);
	FE_CHECK(tide_pktpool_create("hostile", 4096, 64, 0, NULL, &pool) == 0);
	if (loop) {
		txfree_loop_case();
		tide_pool_free(pool);
		return 0;
	}
	FE_CHECK(tide_port_open(spec, &P) == 0);
	FE_CHECK(tide_port_configure(P, 1, 1) == 0);
	FE_CHECK(tide_rxq_setup(P, 0, 256, pool, NULL) == 0);
	FE_CHECK(tide_txq_setup(P, 0, 256, NULL) == 0);
	FE_CHECK(tide_port_start(P) == 0);
	good_connection();
	extra_feats = VIRTIO_BIT(VIRTIO_F_EVENT_IDX);
	good_connection();
	extra_feats = 0;
	good_packed_connection();
	extra_feats = VIRTIO_BIT(VIRTIO_F_EVENT_IDX);
	good_packed_connection();
	/* Packed rings of a size that is not a power of two (virtio 1.1 allows any). */
	pk_num = 200;
	good_packed_connection();
	extra_feats = 0;
	good_packed_connection();
	pk_num = FE_NUM;
	good_inorder_connection(false);
	good_inorder_connection(true);
	extra_feats = VIRTIO_BIT(VIRTIO_F_EVENT_IDX);
	good_inorder_connection(true);
	extra_feats = 0;
	fds0 = count_fds();
	failed += run_cases(cases, sizeof(cases) / sizeof(cases[0]), 0, good_connection, only, fds0);
	failed += run_cases(pcases, sizeof(pcases) / sizeof(pcases[0]), PACKED,
			    good_packed_connection, only, fds0);
	good_connection(); /* and back to a split ring */
	tide_port_close(P);
	/* unsealed_mem=yes: memory that cannot be sealed is trusted, and serves. */
	snprintf(spec, sizeof(spec), "vhost:socket=%s,role=server,unsealed_mem=yes", path);
	FE_CHECK(tide_port_open(spec, &P) == 0);
	FE_CHECK(tide_port_configure(P, 1, 1) == 0);
	FE_CHECK(tide_rxq_setup(P, 0, 256, pool, NULL) == 0);
	FE_CHECK(tide_txq_setup(P, 0, 256, NULL) == 0);
	FE_CHECK(tide_port_start(P) == 0);
	mfd_flags = MFD_CLOEXEC;
	good_connection();
	printf("ok   unsealed_mem=yes: memory that cannot be sealed serves\n");
	mfd_flags = MFD_CLOEXEC | MFD_ALLOW_SEALING;
	tide_port_close(P);
	FE_CHECK(tide_pool_in_use(pool) == 0);
	tide_pool_free(pool);
	if (failed)
		fprintf(stderr, "%u case(s) failed\n", failed);
	return failed ? 1 : 0;
}
