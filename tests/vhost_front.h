/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A small vhost-user frontend for tests: guest memory in a memfd, a receive and a transmit
 * vring laid out in it, the handshake message by message, and packets in and out. Each
 * step can be bent by the test to break exactly one rule.
 */
#ifndef TIDE_TEST_VHOST_FRONT_H
#define TIDE_TEST_VHOST_FRONT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "../src/vhost_user.h"
#include "../src/virtio_ring.h"
#include "sock_util.h"

#define FE_CHECK(c) SU_CHECK(c)

#define FE_MEM	  (4u << 20)	/* guest memory */
#define FE_GPA	  0x40000000ull /* where the guest sees it */
#define FE_NUM	  256		/* vring size */
#define FE_BUF	  2048		/* one packet buffer */
#define FE_BUFS	  (64u << 10)	/* offset of the buffers */

struct fe_vq {
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	uint64_t desc_off, avail_off, used_off;
	uint16_t avail_idx, used_seen;
	int kick, call;
	/* Packed layout (VIRTIO_F_RING_PACKED negotiated): desc_off holds the descriptor ring,
	 * avail_off the driver's event area, used_off the device's; the driver's next avail
	 * and next used positions and their wrap counters. */
	uint16_t pk_avail, pk_used;
	bool pk_wrap, pk_uwrap;
	uint16_t num; /* vring size: FE_NUM; a packed ring may be given any size up to it */
};

struct fe {
	int sock, memfd;
	uint8_t *mem;
	struct fe_vq vq[2]; /* 0: guest Rx (tide Tx), 1: guest Tx (tide Rx) */
	uint64_t features;
};

static inline uint64_t fe_gpa(const struct fe *f, const void *p)
{
	return FE_GPA + (uint64_t)((const uint8_t *)p - f->mem);
}

static inline uint64_t fe_uva(const struct fe *f, uint64_t off)
{
	return (uint64_t)(uintptr_t)f->mem + off;
}

/* Buffer j of vring v. */
static inline uint8_t *fe_buf(struct fe *f, unsigned v, unsigned j)
{
	return f->mem + FE_BUFS + ((size_t)v * FE_NUM + j) * FE_BUF;
}

/* Guest memory from memfd_create() with @mfd_flags (fe_init(): sealable, as QEMU's). */
static inline void fe_init_flags(struct fe *f, unsigned mfd_flags)
{
	memset(f, 0, sizeof(*f));
	f->memfd = memfd_create("fe-guest", mfd_flags);
	FE_CHECK(f->memfd >= 0 && ftruncate(f->memfd, FE_MEM) == 0);
	f->mem = mmap(NULL, FE_MEM, PROT_READ | PROT_WRITE, MAP_SHARED, f->memfd, 0);
	FE_CHECK(f->mem != MAP_FAILED);
	for (unsigned v = 0; v < 2; v++) {
		struct fe_vq *q = &f->vq[v];

		q->desc_off = v * 16384;
		q->avail_off = q->desc_off + 4096;
		q->used_off = q->desc_off + 8192;
		q->desc = (struct vring_desc *)(f->mem + q->desc_off);
		q->avail = (struct vring_avail *)(f->mem + q->avail_off);
		q->used = (struct vring_used *)(f->mem + q->used_off);
		q->num = FE_NUM;
		q->kick = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		q->call = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		FE_CHECK(q->kick >= 0 && q->call >= 0);
	}
	f->sock = -1;
}

static inline void fe_init(struct fe *f)
{
	fe_init_flags(f, MFD_CLOEXEC | MFD_ALLOW_SEALING);
}

static inline void fe_fini(struct fe *f)
{
	if (f->sock >= 0)
		close(f->sock);
	for (unsigned v = 0; v < 2; v++) {
		close(f->vq[v].kick);
		close(f->vq[v].call);
	}
	munmap(f->mem, FE_MEM);
	close(f->memfd);
}

static inline void fe_connect(struct fe *f, const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	f->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	FE_CHECK(f->sock >= 0);
	FE_CHECK(connect(f->sock, (struct sockaddr *)&sa, sizeof(sa)) == 0);
}

/* Send one message with a header claiming @size payload bytes, @len of them actually sent. */
static inline void fe_send_raw(struct fe *f, uint32_t req, uint32_t flags, uint32_t size,
			       const void *pl, size_t len, const int *fds, unsigned nfds)
{
	uint8_t buf[sizeof(struct vhost_user_msg_hdr) + 512];
	struct vhost_user_msg_hdr h = {.request = req, .flags = flags, .size = size};

	FE_CHECK(len <= 512);
	memcpy(buf, &h, sizeof(h));
	if (len)
		memcpy(buf + sizeof(h), pl, len);
	/* The backend may already have dropped us: a failed send is what the test checks. */
	(void)!su_sendmsg(f->sock, buf, sizeof(h) + len, fds, nfds);
}

static inline void fe_send(struct fe *f, uint32_t req, const void *pl, uint32_t size,
			   const int *fds, unsigned nfds)
{
	fe_send_raw(f, req, VHOST_USER_VERSION, size, pl, size, fds, nfds);
}

static inline void fe_send_u64(struct fe *f, uint32_t req, uint64_t v)
{
	fe_send(f, req, &v, 8, NULL, 0);
}

static inline void fe_send_state(struct fe *f, uint32_t req, uint32_t idx, uint32_t num)
{
	struct vhost_user_vring_state s = {idx, num};

	fe_send(f, req, &s, sizeof(s), NULL, 0);
}

/* Read a reply of @size payload bytes into @out; returns 0, or -1 when the socket closed. */
static inline int fe_reply(struct fe *f, void *out, uint32_t size)
{
	uint8_t buf[sizeof(struct vhost_user_msg_hdr) + 64];
	size_t have = 0, want = sizeof(struct vhost_user_msg_hdr) + size;

	while (have < want) {
		ssize_t n = recv(f->sock, buf + have, want - have, 0);

		if (n <= 0)
			return -1;
		have += (size_t)n;
	}
	memcpy(out, buf + sizeof(struct vhost_user_msg_hdr), size);
	return 0;
}

static inline struct vhost_user_mem_region fe_region(const struct fe *f)
{
	struct vhost_user_mem_region r = {.gpa = FE_GPA, .size = FE_MEM,
				      .uva = (uint64_t)(uintptr_t)f->mem, .mmap_off = 0};
	return r;
}

static inline void fe_mem_table(struct fe *f, const struct vhost_user_mem_region *r, unsigned n,
				const int *fds, unsigned nfds)
{
	struct vhost_user_mem_table m = {.nregions = n};

	memcpy(m.r, r, n * sizeof(*r));
	fe_send(f, VHOST_USER_SET_MEM_TABLE, &m, 8 + n * (uint32_t)sizeof(*r), fds, nfds);
}

static inline void fe_vring(struct fe *f, unsigned v)
{
	struct fe_vq *q = &f->vq[v];
	struct vhost_user_vring_addr a = {.index = v, .desc = fe_uva(f, q->desc_off),
				    .used = fe_uva(f, q->used_off), .avail = fe_uva(f, q->avail_off)};
	uint64_t u = v;
	bool packed = f->features & VIRTIO_BIT(VIRTIO_F_RING_PACKED);

	/* Packed: both wrap counters start at 1 (bit 15 of the base). */
	q->pk_avail = q->pk_used = 0;
	q->pk_wrap = q->pk_uwrap = true;
	fe_send_state(f, VHOST_USER_SET_VRING_NUM, v, q->num);
	fe_send_state(f, VHOST_USER_SET_VRING_BASE, v, packed ? VRING_PACKED_WRAP : 0);
	fe_send(f, VHOST_USER_SET_VRING_ADDR, &a, sizeof(a), NULL, 0);
	fe_send(f, VHOST_USER_SET_VRING_KICK, &u, 8, &q->kick, 1);
	fe_send(f, VHOST_USER_SET_VRING_CALL, &u, 8, &q->call, 1);
	fe_send_state(f, VHOST_USER_SET_VRING_ENABLE, v, 1);
}

/* How far fe_handshake() goes. */
enum fe_step { FE_TO_CONNECT, FE_TO_FEATURES, FE_TO_MEM, FE_TO_VRINGS };

/*
 * The handshake of a connected frontend, message by message, up to @upto: features
 * (@feats must all be offered), protocol features (MQ), owner, the memory table, both
 * vrings. @poll runs the backend's control plane where the frontend waits for a reply.
 */
static inline void fe_handshake(struct fe *f, enum fe_step upto, uint64_t feats,
				void (*poll)(void))
{
	struct vhost_user_mem_region r = fe_region(f);
	uint64_t u;

	if (upto == FE_TO_CONNECT)
		return;
	fe_send(f, VHOST_USER_GET_FEATURES, NULL, 0, NULL, 0);
	poll();
	FE_CHECK(fe_reply(f, &u, 8) == 0);
	FE_CHECK((u & feats) == feats);
	fe_send(f, VHOST_USER_GET_PROTOCOL_FEATURES, NULL, 0, NULL, 0);
	poll();
	FE_CHECK(fe_reply(f, &u, 8) == 0);
	FE_CHECK(u & VIRTIO_BIT(VHOST_USER_PROTOCOL_F_MQ));
	fe_send_u64(f, VHOST_USER_SET_PROTOCOL_FEATURES, VIRTIO_BIT(VHOST_USER_PROTOCOL_F_MQ));
	fe_send(f, VHOST_USER_SET_OWNER, NULL, 0, NULL, 0);
	fe_send_u64(f, VHOST_USER_SET_FEATURES, feats);
	f->features = feats;
	if (upto == FE_TO_FEATURES)
		return;
	fe_mem_table(f, &r, 1, &f->memfd, 1);
	if (upto == FE_TO_MEM)
		return;
	fe_vring(f, 0);
	fe_vring(f, 1);
}

/* ---- guest side of the rings ---- */

/* Guest Tx: one packet of @len bytes (after a zero header of @hdr bytes) in buffer slot j. */
static inline void fe_tx_post(struct fe *f, unsigned j, const uint8_t *pkt, uint32_t len,
			      unsigned hdr)
{
	struct fe_vq *q = &f->vq[1];
	uint8_t *b = fe_buf(f, 1, j);

	memset(b, 0, hdr);
	memcpy(b + hdr, pkt, len);
	q->desc[j].addr = fe_gpa(f, b);
	q->desc[j].len = hdr + len;
	q->desc[j].flags = 0;
	q->desc[j].next = 0;
	q->avail->ring[q->avail_idx % FE_NUM] = (uint16_t)j;
	__atomic_store_n(&q->avail->idx, ++q->avail_idx, __ATOMIC_RELEASE);
}

/* Guest Rx: post @n empty buffers of FE_BUF bytes from slot 0. */
static inline void fe_rx_post(struct fe *f, unsigned n)
{
	struct fe_vq *q = &f->vq[0];

	for (unsigned j = 0; j < n; j++) {
		q->desc[j].addr = fe_gpa(f, fe_buf(f, 0, j));
		q->desc[j].len = FE_BUF;
		q->desc[j].flags = VRING_DESC_F_WRITE;
		q->avail->ring[q->avail_idx % FE_NUM] = (uint16_t)j;
		q->avail_idx++;
	}
	__atomic_store_n(&q->avail->idx, q->avail_idx, __ATOMIC_RELEASE);
}

/* ---- guest side of packed rings ---- */

static inline struct vring_packed_desc *fe_pk_ring(struct fe *f, unsigned v)
{
	return (struct vring_packed_desc *)(void *)(f->mem + f->vq[v].desc_off);
}

static inline struct vring_packed_event *fe_pk_drv_event(struct fe *f, unsigned v)
{
	return (struct vring_packed_event *)(void *)(f->mem + f->vq[v].avail_off);
}

static inline struct vring_packed_event *fe_pk_dev_event(struct fe *f, unsigned v)
{
	return (struct vring_packed_event *)(void *)(f->mem + f->vq[v].used_off);
}

/* The flags that make a descriptor available in pass @wrap. */
static inline uint16_t fe_pk_avail_flags(bool wrap)
{
	return wrap ? VRING_PACKED_DESC_F_AVAIL : VRING_PACKED_DESC_F_USED;
}

/*
 * Make @n descriptors available on vring @v as one buffer (a chain when n > 1: the next flag
 * on all but the last), the head's flags last. @extra is or-ed into every descriptor's
 * flags.
 */
static inline void fe_pk_post(struct fe *f, unsigned v, const uint64_t *addr,
			      const uint32_t *len, unsigned n, uint16_t id, uint16_t extra)
{
	struct fe_vq *q = &f->vq[v];
	struct vring_packed_desc *r = fe_pk_ring(f, v);
	uint16_t head = q->pk_avail, hflags = 0;

	for (unsigned i = 0; i < n; i++) {
		uint16_t fl = (uint16_t)(extra | fe_pk_avail_flags(q->pk_wrap) |
					 (i + 1 < n ? VRING_DESC_F_NEXT : 0));

		r[q->pk_avail].addr = addr[i];
		r[q->pk_avail].len = len[i];
		r[q->pk_avail].id = id;
		if (i == 0)
			hflags = fl;
		else
			__atomic_store_n(&r[q->pk_avail].flags, fl, __ATOMIC_RELAXED);
		if (++q->pk_avail == q->num) {
			q->pk_avail = 0;
			q->pk_wrap = !q->pk_wrap;
		}
	}
	__atomic_store_n(&r[head].flags, hflags, __ATOMIC_RELEASE);
}

/* Guest Tx, packed: one packet of @len bytes after a zero header of @hdr bytes, buffer j. */
static inline void fe_pk_tx_post(struct fe *f, unsigned j, const uint8_t *pkt, uint32_t len,
				 unsigned hdr)
{
	uint8_t *b = fe_buf(f, 1, j);
	uint64_t a = fe_gpa(f, b);
	uint32_t l = hdr + len;

	memset(b, 0, hdr);
	memcpy(b + hdr, pkt, len);
	fe_pk_post(f, 1, &a, &l, 1, (uint16_t)j, 0);
}

/*
 * The used element at the driver's next used position of vring @v: 1 with its id and length,
 * the position moved past @ndesc descriptors (one buffer of one descriptor; or, in order
 * (VIRTIO_F_IN_ORDER), the whole batch it completes); 0 when that position is not used yet.
 */
static inline int fe_pk_used_batch(struct fe *f, unsigned v, unsigned ndesc, uint16_t *id,
				   uint32_t *len)
{
	struct fe_vq *q = &f->vq[v];
	struct vring_packed_desc *e = &fe_pk_ring(f, v)[q->pk_used];
	uint16_t fl = __atomic_load_n(&e->flags, __ATOMIC_ACQUIRE);
	uint16_t want = q->pk_uwrap ? VRING_PACKED_DESC_F_AVAIL | VRING_PACKED_DESC_F_USED : 0;

	if ((fl & (VRING_PACKED_DESC_F_AVAIL | VRING_PACKED_DESC_F_USED)) != want)
		return 0;
	*id = e->id;
	*len = e->len;
	q->pk_used = (uint16_t)(q->pk_used + ndesc);
	if (q->pk_used >= q->num) {
		q->pk_used = (uint16_t)(q->pk_used - q->num);
		q->pk_uwrap = !q->pk_uwrap;
	}
	return 1;
}

/* The next used element of vring @v (one-descriptor buffers): 1 with id and len, or 0. */
static inline int fe_pk_used(struct fe *f, unsigned v, uint16_t *id, uint32_t *len)
{
	return fe_pk_used_batch(f, v, 1, id, len);
}

#endif
