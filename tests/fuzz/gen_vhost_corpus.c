/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Seed corpus for the vhost-user message fuzz target (fuzz_vhost_msg.c): one valid message
 * of every request the backend serves, as a frontend sends them while it sets a port up, so
 * that the fuzzer starts from every payload rule instead of guessing sizes and fd counts.
 * usage: gen_vhost_corpus DIR   (writes DIR/vhost_msg/)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vhost_user.h"
#include "virtio_ring.h"

static const char *dir;
static unsigned count;

/* One seed: the fd byte, the queue-pair byte (1 pair), the header and @size bytes of @pl. */
static void seed(unsigned nfds, uint32_t req, uint32_t flags, const void *pl, uint32_t size)
{
	struct vhost_user_msg_hdr h = {.request = req, .flags = VHOST_USER_VERSION | flags, .size = size};
	uint8_t ctl[2] = {(uint8_t)nfds, 0};
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/vhost_msg/seed-%02u-req%u", dir, count++, req);
	f = fopen(path, "wb");
	if (!f || fwrite(ctl, 1, 2, f) != 2 || fwrite(&h, 1, sizeof(h), f) != sizeof(h) ||
	    (size && fwrite(pl, 1, size, f) != size) || fclose(f)) {
		perror(path);
		exit(1);
	}
}

static void seed_u64(unsigned nfds, uint32_t req, uint64_t v)
{
	seed(nfds, req, 0, &v, sizeof(v));
}

static void seed_state(uint32_t req, uint32_t index, uint32_t num)
{
	struct vhost_user_vring_state st = {.index = index, .num = num};

	seed(0, req, 0, &st, sizeof(st));
}

int main(int argc, char **argv)
{
	struct vhost_user_mem_table mem = {.nregions = 2};
	struct vhost_user_vring_addr ad = {.index = 1, .desc = 0x7f0000000000ull,
				     .avail = 0x7f0000004000ull, .used = 0x7f0000005000ull};

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	dir = argv[1];
	seed(0, VHOST_USER_GET_FEATURES, 0, NULL, 0);
	seed(0, VHOST_USER_GET_PROTOCOL_FEATURES, 0, NULL, 0);
	seed_u64(0, VHOST_USER_SET_PROTOCOL_FEATURES, VIRTIO_BIT(VHOST_USER_PROTOCOL_F_REPLY_ACK));
	seed(0, VHOST_USER_GET_QUEUE_NUM, 0, NULL, 0);
	seed(0, VHOST_USER_SET_OWNER, 0, NULL, 0);
	seed_u64(0, VHOST_USER_SET_FEATURES,
		 VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VIRTIO_NET_F_MRG_RXBUF));
	mem.r[0] = (struct vhost_user_mem_region){.gpa = 0, .size = 1u << 21,
					      .uva = 0x7f0000000000ull, .mmap_off = 0};
	mem.r[1] = (struct vhost_user_mem_region){.gpa = 1u << 21, .size = 1u << 21,
					      .uva = 0x7f0000200000ull, .mmap_off = 4096};
	seed(2, VHOST_USER_SET_MEM_TABLE, 0, &mem,
	     (uint32_t)(8 + mem.nregions * sizeof(struct vhost_user_mem_region)));
	seed_state(VHOST_USER_SET_VRING_NUM, 1, 256);
	seed_state(VHOST_USER_SET_VRING_BASE, 1, 0);
	seed(0, VHOST_USER_SET_VRING_ADDR, 0, &ad, sizeof(ad));
	seed_u64(1, VHOST_USER_SET_VRING_KICK, 1);
	seed_u64(1, VHOST_USER_SET_VRING_CALL, 1);
	seed_u64(0, VHOST_USER_SET_VRING_ERR, 1 | VHOST_USER_VRING_NOFD);
	seed_state(VHOST_USER_SET_VRING_ENABLE, 1, 1);
	seed_state(VHOST_USER_GET_VRING_BASE, 1, 0);
	seed(0, VHOST_USER_RESET_OWNER, VHOST_USER_NEED_REPLY, NULL, 0);
	seed(1, VHOST_USER_SET_BACKEND_REQ_FD, 0, NULL, 0);
	{
		struct vhost_user_iotlb t = {.iova = 0x10000, .size = 4096, .uaddr = 0x7f0000000000ull,
					     .perm = VHOST_USER_ACCESS_RW,
					     .type = VHOST_USER_IOTLB_UPDATE};

		seed(0, VHOST_USER_IOTLB_MSG, VHOST_USER_NEED_REPLY, &t, sizeof(t));
		t.type = VHOST_USER_IOTLB_INVALIDATE;
		seed(0, VHOST_USER_IOTLB_MSG, VHOST_USER_NEED_REPLY, &t, sizeof(t));
	}
	return 0;
}
