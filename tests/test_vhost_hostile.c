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
#include <stdbool.h>
#include <time.h>

#include <tide/lcore.h>
#include <tide/log.h>
#include <tide/port.h>
#include <tide/vhost.h>

#include "vhost_front.h"

static struct tide_port *P;
static uint64_t extra_feats; /* negotiated on top of feats (the event index, for some runs) */
static struct tide_pool *pool;
static char path[108];
static const uint64_t feats = VHOST_BIT(VIRTIO_F_VERSION_1) | VHOST_BIT(VIRTIO_NET_F_MRG_RXBUF) |
			      VHOST_BIT(VIRTIO_RING_F_INDIRECT_DESC) |
			      VHOST_BIT(VHOST_USER_F_PROTOCOL_FEATURES);

static unsigned count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned n = 0;

	FE_CHECK(d != NULL);
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n;
}

static void vinfo(struct tide_vhost_info *vi)
{
	FE_CHECK(tide_vhost_info_get(P, vi) == 0);
}

static void poll_ctl(void)
{
	FE_CHECK(tide_port_poll_ctl(P) == 0);
}

/* Poll the control plane until @cond or 5 s (no sleeps: each poll returns at once). */
#define WAIT_FOR(cond, what)                                                                      \
	do {                                                                                       \
		struct timespec t0_, t1_;                                                          \
		clock_gettime(CLOCK_MONOTONIC, &t0_);                                              \
		for (;;) {                                                                         \
			poll_ctl();                                                                \
			if (cond)                                                                  \
				break;                                                             \
			clock_gettime(CLOCK_MONOTONIC, &t1_);                                      \
			if (t1_.tv_sec - t0_.tv_sec > 5) {                                         \
				fprintf(stderr, "timed out waiting for %s\n", what);               \
				exit(1);                                                           \
			}                                                                          \
		}                                                                                  \
	} while (0)

/* ---- handshake steps ---- */

enum step { S_CONNECT = FE_TO_CONNECT, S_FEATURES = FE_TO_FEATURES, S_MEM = FE_TO_MEM, S_ALL };

/* Connect and go through the handshake up to @upto (S_ALL: until the link is up). */
static void handshake(struct fe *f, enum step upto)
{
	struct tide_vhost_info vi;
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
		for (unsigned i = 0; i < k; i++, got++) {
			uint8_t b[200];

			FE_CHECK(pk[i]->pkt_len == 100 + got);
			FE_CHECK(tide_mbuf_read(pk[i], 0, pk[i]->pkt_len, b) == 0);
			for (unsigned j = 0; j < pk[i]->pkt_len; j++)
				FE_CHECK(b[j] == pat(got, j));
		}
		tide_mbuf_free_bulk(pk, k);
	}
	FE_CHECK((uint16_t)(gtx->used->idx - used0) == 8);
	/* tide -> guest: 4 small packets and one of 5000 bytes over 3 mergeable buffers */
	grx->avail_idx = grx->avail->idx;
	fe_rx_post(f, 16);
	for (unsigned s = 0; s < 4; s++)
		pk[s] = mkpkt(s, 60 + s);
	pk[4] = mkpkt(9, 5000);
	FE_CHECK(tide_tx_burst(tq, pk, 5) == 5);
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
	struct vhost_user_region r[2] = {fe_region(f), fe_region(f)};
	int fds[2] = {f->memfd, f->memfd};

	handshake(f, S_FEATURES);
	r[1].gpa += FE_MEM / 2;
	r[1].uva += FE_MEM;
	fe_mem_table(f, r, 2, fds, 2);
}

static void c_overlap_uva(struct fe *f)
{
	struct vhost_user_region r[2] = {fe_region(f), fe_region(f)};
	int fds[2] = {f->memfd, f->memfd};

	handshake(f, S_FEATURES);
	r[1].gpa += FE_MEM;
	r[1].uva += FE_MEM / 2;
	fe_mem_table(f, r, 2, fds, 2);
}

static void c_beyond_file(struct fe *f)
{
	struct vhost_user_region r = fe_region(f);

	handshake(f, S_FEATURES);
	r.size = 2 * FE_MEM;
	fe_mem_table(f, &r, 1, &f->memfd, 1);
}

static void c_wrap(struct fe *f)
{
	struct vhost_user_region r = fe_region(f);

	handshake(f, S_FEATURES);
	r.gpa = ~0ull - 4095;
	fe_mem_table(f, &r, 1, &f->memfd, 1);
}

static void c_mem_nofd(struct fe *f)
{
	struct vhost_user_region r = fe_region(f);

	handshake(f, S_FEATURES);
	fe_mem_table(f, &r, 1, NULL, 0);
}

static void c_mem_twofds(struct fe *f)
{
	struct vhost_user_region r = fe_region(f);
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
	struct vhost_user_addr a = {.index = 1, .desc = fe_uva(f, FE_MEM - 100),
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
	fe_send_u64(f, VHOST_USER_SET_FEATURES, feats & ~VHOST_BIT(VIRTIO_RING_F_INDIRECT_DESC));
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
	{"descriptor loop", "loops", true, c_loop},
	{"next beyond the table", "next index beyond", true, c_next_range},
	{"buffer outside memory", "outside guest memory", true, c_addr_outside},
	{"buffer crossing the region end", "outside guest memory", true, c_addr_crossing},
	{"indirect table outside memory", "indirect table outside", true, c_ind_outside},
	{"indirect descriptor with next", "indirect descriptor with the next flag", true, c_ind_next},
	{"indirect table size", "multiple of 16", true, c_ind_size},
	{"nested indirect table", "nested indirect", true, c_ind_nested},
	{"indirect chain loop", "loops", true, c_ind_loop},
	{"indirect without the feature", "without VIRTIO_RING_F_INDIRECT_DESC", true, c_ind_no_feature},
	{"writable descriptor in a Tx chain", "device-writable", true, c_tx_writable},
	{"readable descriptor in an Rx chain", "device-readable", true, c_rx_readable},
	{"Rx buffer shorter than the header", "shorter than the virtio-net header", true, c_rx_short},
	{"Rx buffer crossing the region end", "outside guest memory", true, c_rx_crossing},
	{"Rx avail index jump", "avail index moved", true, c_rx_avail_jump},
	{"gone mid-traffic", "frontend closed the connection", false, c_gone_traffic},
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
	if (!(f->features & VHOST_BIT(VIRTIO_RING_F_EVENT_IDX))) {
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
	struct tide_port_stats st0, st1;
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

static void good_connection(void)
{
	struct fe f;
	struct tide_vhost_info vi;
	uint64_t d0;

	fe_init(&f);
	handshake(&f, S_ALL);
	traffic(&f);
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

int main(int argc, char **argv)
{
	unsigned fds0, failed = 0;
	const char *only = argc > 1 ? argv[1] : NULL;
	char spec[200];

	tide_thread_register();
	snprintf(path, sizeof(path), "/tmp/tide-vhost-hostile-%d.sock", (int)getpid());
	snprintf(spec, sizeof(spec), "vhost:socket=%s,role=server", path);
	FE_CHECK(tide_pktpool_create("hostile", 4096, 64, 0, NULL, &pool) == 0);
	FE_CHECK(tide_port_open(spec, &P) == 0);
	FE_CHECK(tide_port_configure(P, 1, 1) == 0);
	FE_CHECK(tide_rxq_setup(P, 0, 256, pool, NULL) == 0);
	FE_CHECK(tide_txq_setup(P, 0, 256, NULL) == 0);
	FE_CHECK(tide_port_start(P) == 0);
	good_connection();
	extra_feats = VHOST_BIT(VIRTIO_RING_F_EVENT_IDX);
	good_connection();
	extra_feats = 0;
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
			printf("ok   %-40s -> %s\n", c->name, b.reason);
		}
		extra_feats = i % 2 ? VHOST_BIT(VIRTIO_RING_F_EVENT_IDX) : 0;
		good_connection();
		extra_feats = 0;
	}
	tide_port_close(P);
	FE_CHECK(tide_pool_in_use(pool) == 0);
	tide_pool_free(pool);
	if (failed)
		fprintf(stderr, "%u case(s) failed\n", failed);
	return failed ? 1 : 0;
}
