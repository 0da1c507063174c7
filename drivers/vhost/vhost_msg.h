/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost-user messages: the table of requests and the decode step that checks a received
 * message against it. vhost_msg_decode() depends on nothing but the bytes, the number of
 * file descriptors that came with them and the number of vrings the port offers: it changes
 * nothing and is the same code for the control thread (vhost_ctl.c) and the fuzz target
 * (tests/fuzz/fuzz_vhost_msg.c).
 */
#ifndef TIDE_VHOST_MSG_H
#define TIDE_VHOST_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vhost_user.h"
#include "virtio_ring.h"

struct vhost_port;
struct vhost_msg;

/* What a request's payload is, which says its size and where its vring index is. */
enum vhost_payload {
	VHOST_PL_NONE,	   /* nothing, or 8 bytes that are ignored */
	VHOST_PL_U64,	   /* 8 bytes: a number (feature bits) */
	VHOST_PL_STATE,	   /* 8 bytes: struct vhost_user_vring_state, index checked */
	VHOST_PL_VRING_FD, /* 8 bytes: a vring index and the no-fd flag */
	VHOST_PL_ADDR,	   /* struct vhost_user_vring_addr, its vring index checked */
	VHOST_PL_MEM,	   /* struct vhost_user_mem_table: 8 bytes and 1..8 regions */
	VHOST_PL_IOTLB,	   /* struct vhost_user_iotlb */
};

/* The file descriptors a request carries. */
enum vhost_fds {
	VHOST_FDS_NONE,	   /* none */
	VHOST_FDS_VRING,   /* one, none when the no-fd flag is set */
	VHOST_FDS_REGIONS, /* one per memory region */
	VHOST_FDS_ONE,	   /* exactly one */
};

typedef int vhost_msg_fn(struct vhost_port *vp, const struct vhost_msg *m);

struct vhost_req {
	const char *name;
	uint8_t payload; /* enum vhost_payload */
	uint8_t fds;	 /* enum vhost_fds */
	/* -1: it dropped the frontend; 1: it replied; 0: done (REPLY_ACK may follow) */
	vhost_msg_fn *handle;
};

/* A decoded message: every field the request's payload rule names is checked. */
struct vhost_msg {
	struct vhost_user_msg_hdr h;
	const struct vhost_req *req;
	uint64_t u;		    /* an 8-byte payload, else 0 */
	struct vhost_user_vring_state st; /* u as a vring state */
	struct vhost_user_vring_addr ad;  /* VHOST_PL_ADDR */
	struct vhost_user_mem_table mem;  /* VHOST_PL_MEM: mem.nregions regions, disjoint */
	struct vhost_user_iotlb iotlb;	  /* VHOST_PL_IOTLB (its values: vhost_iotlb.c) */
	unsigned vring;		    /* STATE, VRING_FD, ADDR: the index, below nvrings */
	bool nofd;		    /* VHOST_PL_VRING_FD: the no-fd flag */
};

/* The handlers of the table (vhost_ctl.c, vhost_mem.c, vhost_vring.c). */
#define VHOST_MSG_HANDLERS(X)                                                                      \
	X(vhost_msg_get_features)                                                                  \
	X(vhost_msg_set_features)                                                                  \
	X(vhost_msg_set_owner)                                                                     \
	X(vhost_msg_reset_owner)                                                                   \
	X(vhost_msg_set_mem_table)                                                                 \
	X(vhost_msg_set_vring_num)                                                                 \
	X(vhost_msg_set_vring_addr)                                                                \
	X(vhost_msg_set_vring_base)                                                                \
	X(vhost_msg_get_vring_base)                                                                \
	X(vhost_msg_set_vring_fd)                                                                  \
	X(vhost_msg_get_protocol_features)                                                         \
	X(vhost_msg_set_protocol_features)                                                         \
	X(vhost_msg_get_queue_num)                                                                 \
	X(vhost_msg_set_vring_enable)                                                              \
	X(vhost_msg_net_set_mtu)                                                                   \
	X(vhost_msg_set_backend_req_fd)                                                            \
	X(vhost_msg_iotlb)
#define VHOST_MSG_DECLARE(f) vhost_msg_fn f;
VHOST_MSG_HANDLERS(VHOST_MSG_DECLARE)
#undef VHOST_MSG_DECLARE

/* The request's name, "unknown request" if it has none. */
const char *vhost_req_name(uint32_t req);

/*
 * Decode the message of @len bytes at @buf (a header and its payload), which came with
 * @nfds file descriptors (@too_many_fds: some were dropped), for a port of @nvrings vrings.
 * Returns 0 with @m filled in, or -1 with the reason in @why (at most @whylen bytes with its
 * terminator). The checks run in this order: the protocol version, the payload size for the
 * request, the number of file descriptors, then the payload (vring index, flag bits, memory
 * regions: their count, size, fds and overlaps).
 */
int vhost_msg_decode(const uint8_t *buf, size_t len, unsigned nfds, bool too_many_fds,
		     unsigned nvrings, struct vhost_msg *m, char *why, size_t whylen);

#endif
