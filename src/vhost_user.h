/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the vhost-user protocol defines (QEMU docs/interop/vhost-user.rst), as the frontend
 * (drivers/virtio, virtio-user transport) and the backend (drivers/vhost) put it on the
 * socket: the feature bits of its own, the request numbers, the message header and the
 * payloads tide sends or serves. Layouts are pinned with static_assert; little-endian.
 * Internal. The virtqueue layouts the messages point at are in virtio_ring.h.
 */
#ifndef TIDE_SRC_VHOST_USER_H
#define TIDE_SRC_VHOST_USER_H

#include <assert.h>
#include <stdint.h>

/* Bit 30 of the virtio feature word: GET_PROTOCOL_FEATURES is served. */
#define VHOST_USER_F_PROTOCOL_FEATURES	30

/* ---- protocol feature bits ---- */
#define VHOST_USER_PROTOCOL_F_MQ	0
#define VHOST_USER_PROTOCOL_F_REPLY_ACK 3
#define VHOST_USER_PROTOCOL_F_NET_MTU	4
#define VHOST_USER_PROTOCOL_F_BACKEND_REQ 5 /* the backend's request channel (SLAVE_REQ) */

/* ---- requests (frontend -> backend) ---- */
enum vhost_user_request {
	VHOST_USER_GET_FEATURES = 1,
	VHOST_USER_SET_FEATURES = 2,
	VHOST_USER_SET_OWNER = 3,
	VHOST_USER_RESET_OWNER = 4,
	VHOST_USER_SET_MEM_TABLE = 5,
	VHOST_USER_SET_LOG_BASE = 6,
	VHOST_USER_SET_LOG_FD = 7,
	VHOST_USER_SET_VRING_NUM = 8,
	VHOST_USER_SET_VRING_ADDR = 9,
	VHOST_USER_SET_VRING_BASE = 10,
	VHOST_USER_GET_VRING_BASE = 11,
	VHOST_USER_SET_VRING_KICK = 12,
	VHOST_USER_SET_VRING_CALL = 13,
	VHOST_USER_SET_VRING_ERR = 14,
	VHOST_USER_GET_PROTOCOL_FEATURES = 15,
	VHOST_USER_SET_PROTOCOL_FEATURES = 16,
	VHOST_USER_GET_QUEUE_NUM = 17,
	VHOST_USER_SET_VRING_ENABLE = 18,
	VHOST_USER_NET_SET_MTU = 20,
	VHOST_USER_SET_BACKEND_REQ_FD = 21, /* one fd: the backend's request channel */
	VHOST_USER_IOTLB_MSG = 22,	     /* struct vhost_user_iotlb: update or invalidate */
};

/* ---- requests on the backend's channel (backend -> frontend) ---- */
#define VHOST_USER_BACKEND_IOTLB_MSG 1 /* struct vhost_user_iotlb: a miss */

/* ---- header flags and limits ---- */
#define VHOST_USER_VERSION	  0x1u
#define VHOST_USER_VERSION_MASK	  0x3u
#define VHOST_USER_REPLY	  0x4u
#define VHOST_USER_NEED_REPLY	  0x8u
#define VHOST_USER_VRING_IDX_MASK 0xffull  /* u64 payload of SET_VRING_KICK/CALL/ERR */
#define VHOST_USER_VRING_NOFD	  0x100ull /* ... and no fd comes with it */
#define VHOST_USER_MAX_REGIONS	  8
#define VHOST_USER_MAX_FDS	  8

struct vhost_user_msg_hdr {
	uint32_t request;
	uint32_t flags;
	uint32_t size; /* of the payload that follows */
};
static_assert(sizeof(struct vhost_user_msg_hdr) == 12, "vhost-user header is 12 bytes");

/* SET_VRING_NUM, SET_VRING_BASE, GET_VRING_BASE, SET_VRING_ENABLE */
struct vhost_user_vring_state {
	uint32_t index;
	uint32_t num;
};

/* SET_VRING_ADDR */
struct vhost_user_vring_addr {
	uint32_t index;
	uint32_t flags;
	uint64_t desc; /* frontend virtual addresses */
	uint64_t used;
	uint64_t avail;
	uint64_t log;
};
static_assert(sizeof(struct vhost_user_vring_addr) == 40, "vring address payload is 40 bytes");

/* SET_MEM_TABLE: one region per fd that comes with the message. */
struct vhost_user_mem_region {
	uint64_t gpa;	   /* guest physical address */
	uint64_t size;
	uint64_t uva;	   /* frontend virtual address */
	uint64_t mmap_off; /* offset of the region in its fd */
};
static_assert(sizeof(struct vhost_user_mem_region) == 32, "memory region is 32 bytes");

struct vhost_user_mem_table {
	uint32_t nregions;
	uint32_t padding;
	struct vhost_user_mem_region r[VHOST_USER_MAX_REGIONS];
};

/*
 * IOTLB_MSG (and BACKEND_IOTLB_MSG on the backend's channel), with VIRTIO_F_ACCESS_PLATFORM:
 * the device IOTLB entry for [iova, iova + size): the frontend's virtual address of its
 * first byte and the device's access rights; a miss names an IOVA and the access wanted.
 */
struct vhost_user_iotlb {
	uint64_t iova;
	uint64_t size;
	uint64_t uaddr; /* frontend virtual address (the memory table's uva space) */
	uint8_t perm;	/* VHOST_USER_ACCESS_* */
	uint8_t type;	/* VHOST_USER_IOTLB_* */
	uint8_t pad[6];
};
static_assert(sizeof(struct vhost_user_iotlb) == 32, "IOTLB message is 32 bytes");

#define VHOST_USER_ACCESS_RO	     1u
#define VHOST_USER_ACCESS_WO	     2u
#define VHOST_USER_ACCESS_RW	     3u
#define VHOST_USER_IOTLB_MISS	     1u
#define VHOST_USER_IOTLB_UPDATE	     2u
#define VHOST_USER_IOTLB_INVALIDATE  3u

/* The largest payload of a request tide serves. */
#define VHOST_USER_MAX_PAYLOAD sizeof(struct vhost_user_mem_table)

#endif /* TIDE_SRC_VHOST_USER_H */
