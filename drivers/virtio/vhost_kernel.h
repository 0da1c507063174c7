/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The Linux vhost-net ioctl interface (the kernel's UAPI <linux/vhost.h>), spelled out here
 * because the kernel's header brings its own virtio ring definitions, which clash with
 * src/virtio_ring.h. Layouts and numbers are the kernel's stable ABI; tests/test_virtio_kernel.c
 * compares each one with <linux/vhost.h>.
 */
#ifndef TIDE_VHOST_KERNEL_H
#define TIDE_VHOST_KERNEL_H

#include <assert.h>
#include <stdint.h>
#include <sys/ioctl.h>

struct vk_vring_state {
	uint32_t index;
	uint32_t num;
};

struct vk_vring_file {
	uint32_t index;
	int32_t fd; /* -1: none (a backend of -1 detaches the tap) */
};

struct vk_vring_addr {
	uint32_t index;
	uint32_t flags;
	uint64_t desc, used, avail, log;
};

struct vk_mem_region {
	uint64_t gpa, size, uva, pad;
};

struct vk_memory {
	uint32_t nregions;
	uint32_t pad;
	struct vk_mem_region r[];
};

static_assert(sizeof(struct vk_vring_addr) == 40, "vhost_vring_addr");
static_assert(sizeof(struct vk_mem_region) == 32, "vhost_memory_region");
static_assert(sizeof(struct vk_memory) == 8, "vhost_memory");

#define VK_IOC		     0xAF
#define VK_GET_FEATURES	     _IOR(VK_IOC, 0x00, uint64_t)
#define VK_SET_FEATURES	     _IOW(VK_IOC, 0x00, uint64_t)
#define VK_SET_OWNER	     _IO(VK_IOC, 0x01)
#define VK_SET_MEM_TABLE     _IOW(VK_IOC, 0x03, struct vk_memory)
#define VK_SET_VRING_NUM     _IOW(VK_IOC, 0x10, struct vk_vring_state)
#define VK_SET_VRING_ADDR    _IOW(VK_IOC, 0x11, struct vk_vring_addr)
#define VK_SET_VRING_BASE    _IOW(VK_IOC, 0x12, struct vk_vring_state)
#define VK_SET_VRING_KICK    _IOW(VK_IOC, 0x20, struct vk_vring_file)
#define VK_SET_VRING_CALL    _IOW(VK_IOC, 0x21, struct vk_vring_file)
#define VK_NET_SET_BACKEND   _IOW(VK_IOC, 0x30, struct vk_vring_file)

/* vhost-net's vrings within one fd: one queue pair. */
#define VK_RX 0
#define VK_TX 1

#endif
