/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost-user and virtio split-ring wire formats (QEMU docs/interop/vhost-user.rst, virtio
 * 1.x section 2.7). Layouts are pinned with static_assert: they are what the frontend's
 * memory and messages hold, little-endian (tide runs on little-endian hosts only).
 */
#ifndef TIDE_VHOST_PROTO_H
#define TIDE_VHOST_PROTO_H

#include <assert.h>
#include <stdint.h>

/* ---- virtio feature bits ---- */
#define VIRTIO_NET_F_MTU	     3
#define VIRTIO_NET_F_MRG_RXBUF	     15
#define VIRTIO_NET_F_MQ		     22
#define VIRTIO_F_ANY_LAYOUT	     27
#define VIRTIO_RING_F_INDIRECT_DESC  28
#define VIRTIO_RING_F_EVENT_IDX	     29
#define VHOST_USER_F_PROTOCOL_FEATURES 30
#define VIRTIO_F_VERSION_1	     32
#define VIRTIO_F_IN_ORDER	     35

#define VHOST_BIT(b) (1ull << (b))

/* ---- vhost-user protocol feature bits ---- */
#define VHOST_USER_PROTOCOL_F_MQ	0
#define VHOST_USER_PROTOCOL_F_REPLY_ACK 3
#define VHOST_USER_PROTOCOL_F_NET_MTU	4

/* ---- requests (frontend -> backend) ---- */
enum vhost_user_req {
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
};

#define VHOST_USER_VERSION	  0x1u
#define VHOST_USER_VERSION_MASK	  0x3u
#define VHOST_USER_REPLY	  0x4u
#define VHOST_USER_NEED_REPLY	  0x8u
#define VHOST_USER_VRING_IDX_MASK 0xffull
#define VHOST_USER_VRING_NOFD	  0x100ull
#define VHOST_USER_MAX_REGIONS	  8
#define VHOST_USER_MAX_FDS	  8

struct vhost_user_hdr {
	uint32_t request;
	uint32_t flags;
	uint32_t size; /* of the payload that follows */
};
static_assert(sizeof(struct vhost_user_hdr) == 12, "vhost-user header is 12 bytes");

struct vhost_user_state {
	uint32_t index;
	uint32_t num;
};

struct vhost_user_addr {
	uint32_t index;
	uint32_t flags;
	uint64_t desc;	/* frontend virtual addresses */
	uint64_t used;
	uint64_t avail;
	uint64_t log;
};
static_assert(sizeof(struct vhost_user_addr) == 40, "vring address payload is 40 bytes");

struct vhost_user_region {
	uint64_t gpa;	   /* guest physical address */
	uint64_t size;
	uint64_t uva;	   /* frontend virtual address */
	uint64_t mmap_off; /* offset of the region in its fd */
};
static_assert(sizeof(struct vhost_user_region) == 32, "memory region is 32 bytes");

struct vhost_user_mem {
	uint32_t nregions;
	uint32_t padding;
	struct vhost_user_region r[VHOST_USER_MAX_REGIONS];
};

#define VHOST_USER_MAX_PAYLOAD sizeof(struct vhost_user_mem)

/* ---- split virtqueue ---- */
#define VRING_DESC_F_NEXT	1
#define VRING_DESC_F_WRITE	2
#define VRING_DESC_F_INDIRECT	4
#define VRING_AVAIL_F_NO_INTERRUPT 1
#define VRING_USED_F_NO_NOTIFY	1
#define VHOST_MAX_VRING		32768

struct vring_desc {
	uint64_t addr; /* guest physical */
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};
static_assert(sizeof(struct vring_desc) == 16, "descriptor is 16 bytes");

struct vring_avail {
	uint16_t flags;
	uint16_t idx;
	uint16_t ring[]; /* num entries, then used_event */
};

struct vring_used_elem {
	uint32_t id;
	uint32_t len;
};

struct vring_used {
	uint16_t flags;
	uint16_t idx;
	struct vring_used_elem ring[]; /* num entries, then avail_event */
};

static inline uint64_t vring_desc_bytes(uint32_t num)
{
	return 16ull * num;
}
static inline uint64_t vring_avail_bytes(uint32_t num)
{
	return 4 + 2ull * num + 2;
}
static inline uint64_t vring_used_bytes(uint32_t num)
{
	return 4 + 8ull * num + 2;
}

/* ---- packed virtqueue (virtio 1.1+ section 2.8) ---- */
#define VIRTIO_F_RING_PACKED	     34
#define VRING_PACKED_DESC_F_AVAIL    (1u << 7)
#define VRING_PACKED_DESC_F_USED     (1u << 15)
#define VRING_PACKED_EVENT_F_ENABLE  0 /* event area flags: notify on every used buffer */
#define VRING_PACKED_EVENT_F_DISABLE 1 /* never */
#define VRING_PACKED_EVENT_F_DESC    2 /* at the offset and wrap in off_wrap (EVENT_IDX) */
#define VRING_PACKED_WRAP	     (1u << 15) /* the wrap counter bit of off_wrap, base */

/* One descriptor; the device overwrites it with the used element (id, len, flags). */
struct vring_packed_desc {
	uint64_t addr; /* guest physical */
	uint32_t len;
	uint16_t id;
	uint16_t flags;
};
static_assert(sizeof(struct vring_packed_desc) == 16, "packed descriptor is 16 bytes");

/* The driver and the device event suppression areas (vhost-user: avail and used addresses). */
struct vring_packed_event {
	uint16_t off_wrap; /* bits 0-14 ring offset, bit 15 wrap counter */
	uint16_t flags;	   /* VRING_PACKED_EVENT_F_* */
};
static_assert(sizeof(struct vring_packed_event) == 4, "event suppression area is 4 bytes");

/* virtio-net header (12 bytes with VERSION_1 or MRG_RXBUF, else the first 10). */
struct virtio_net_hdr_mrg {
	uint8_t flags;
	uint8_t gso_type;
	uint16_t hdr_len;
	uint16_t gso_size;
	uint16_t csum_start;
	uint16_t csum_offset;
	uint16_t num_buffers;
};
static_assert(sizeof(struct virtio_net_hdr_mrg) == 12, "virtio-net header is 12 bytes");

/* Event index: has the other side asked to hear about index @new (old: the last one)? */
static inline int vring_need_event(uint16_t event, uint16_t new_idx, uint16_t old)
{
	return (uint16_t)(new_idx - event - 1) < (uint16_t)(new_idx - old);
}

#endif
