/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * virtio split virtqueues and the vhost-user message format, as both sides of the wire see
 * them (virtio 1.x section 2.7; QEMU docs/interop/vhost-user.rst). Layouts are pinned with
 * static_assert; everything is little-endian (tide runs on little-endian hosts only).
 * Internal: the virtio frontend driver (drivers/virtio) uses it.
 *
 * Who writes what in a split virtqueue:
 *
 *   descriptor table  driver    addr, len, flags, next of each buffer
 *   avail ring        driver    flags, idx, ring[num] (descriptor heads), used_event
 *   used ring         device    flags, idx, ring[num] ({id, len}), avail_event
 */
#ifndef TIDE_SRC_VIRTIO_RING_H
#define TIDE_SRC_VIRTIO_RING_H

#include <assert.h>
#include <stdint.h>

/* ---- feature bits ---- */
#define VIRTIO_NET_F_MAC		  5
#define VIRTIO_NET_F_MRG_RXBUF		  15
#define VIRTIO_NET_F_MQ			  22
#define VIRTIO_RING_F_INDIRECT_DESC	  28
#define VIRTIO_RING_F_EVENT_IDX		  29
#define VHOST_USER_F_PROTOCOL_FEATURES	  30
#define VIRTIO_F_VERSION_1		  32
#define VIRTIO_F_RING_PACKED		  34
#define VIRTIO_F_IN_ORDER		  35

#define VIRTIO_BIT(b) (1ull << (b))

/* ---- device status (virtio 1.x section 2.1) ---- */
#define VIRTIO_STATUS_ACK	  1
#define VIRTIO_STATUS_DRIVER	  2
#define VIRTIO_STATUS_DRIVER_OK	  4
#define VIRTIO_STATUS_FEATURES_OK 8
#define VIRTIO_STATUS_FAILED	  128

/* ---- split virtqueue ---- */
#define VRING_DESC_F_NEXT	   1
#define VRING_DESC_F_WRITE	   2
#define VRING_DESC_F_INDIRECT	   4
#define VRING_AVAIL_F_NO_INTERRUPT 1
#define VRING_USED_F_NO_NOTIFY	   1

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
static_assert(sizeof(struct vring_used_elem) == 8, "used element is 8 bytes");

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

/* Event index: has the other side asked to hear about index @new_idx (old: the last one)? */
static inline int vring_need_event(uint16_t event, uint16_t new_idx, uint16_t old)
{
	return (uint16_t)(new_idx - event - 1) < (uint16_t)(new_idx - old);
}

/* virtio-net header: 12 bytes with VIRTIO_F_VERSION_1 or MRG_RXBUF (num_buffers last). */
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

/* ---- vhost-user messages ---- */
#define VHOST_USER_PROTOCOL_F_MQ	0
#define VHOST_USER_PROTOCOL_F_REPLY_ACK 3
#define VHOST_USER_PROTOCOL_F_NET_MTU	4

enum vhost_user_request {
	VHOST_USER_GET_FEATURES = 1,
	VHOST_USER_SET_FEATURES = 2,
	VHOST_USER_SET_OWNER = 3,
	VHOST_USER_RESET_OWNER = 4,
	VHOST_USER_SET_MEM_TABLE = 5,
	VHOST_USER_SET_VRING_NUM = 8,
	VHOST_USER_SET_VRING_ADDR = 9,
	VHOST_USER_SET_VRING_BASE = 10,
	VHOST_USER_GET_VRING_BASE = 11,
	VHOST_USER_SET_VRING_KICK = 12,
	VHOST_USER_SET_VRING_CALL = 13,
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
#define VHOST_USER_VRING_NOFD	  0x100ull
#define VHOST_USER_MAX_REGIONS	  8

struct vhost_user_msg_hdr {
	uint32_t request;
	uint32_t flags;
	uint32_t size; /* of the payload that follows */
};
static_assert(sizeof(struct vhost_user_msg_hdr) == 12, "vhost-user header is 12 bytes");

struct vhost_user_vring_state {
	uint32_t index;
	uint32_t num;
};

struct vhost_user_vring_addr {
	uint32_t index;
	uint32_t flags;
	uint64_t desc; /* frontend virtual addresses */
	uint64_t used;
	uint64_t avail;
	uint64_t log;
};
static_assert(sizeof(struct vhost_user_vring_addr) == 40, "vring address payload is 40 bytes");

struct vhost_user_mem_region {
	uint64_t gpa;
	uint64_t size;
	uint64_t uva;
	uint64_t mmap_off;
};
static_assert(sizeof(struct vhost_user_mem_region) == 32, "memory region is 32 bytes");

struct vhost_user_mem_table {
	uint32_t nregions;
	uint32_t padding;
	struct vhost_user_mem_region r[VHOST_USER_MAX_REGIONS];
};

#endif /* TIDE_SRC_VIRTIO_RING_H */
