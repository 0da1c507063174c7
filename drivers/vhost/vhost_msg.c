/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost-user messages: the one table of requests (name, payload rule, file descriptors,
 * handler) and the decode step that checks a message against it before anything changes
 * (vhost_msg.h). Every request not in the table, or in it without a handler, is refused.
 */
#include <stdio.h>
#include <string.h>

#include "vhost_msg.h"

static const struct vhost_req reqs[] = {
    [VHOST_USER_GET_FEATURES] = {"GET_FEATURES", VHOST_PL_NONE, VHOST_FDS_NONE,
				 vhost_msg_get_features},
    [VHOST_USER_SET_FEATURES] = {"SET_FEATURES", VHOST_PL_U64, VHOST_FDS_NONE,
				 vhost_msg_set_features},
    [VHOST_USER_SET_OWNER] = {"SET_OWNER", VHOST_PL_NONE, VHOST_FDS_NONE, vhost_msg_set_owner},
    [VHOST_USER_RESET_OWNER] = {"RESET_OWNER", VHOST_PL_NONE, VHOST_FDS_NONE,
				vhost_msg_reset_owner},
    [VHOST_USER_SET_MEM_TABLE] = {"SET_MEM_TABLE", VHOST_PL_MEM, VHOST_FDS_REGIONS,
				  vhost_msg_set_mem_table},
    /* Named for the log; we never log dirty pages. */
    [VHOST_USER_SET_LOG_BASE] = {"SET_LOG_BASE", VHOST_PL_NONE, VHOST_FDS_NONE, NULL},
    [VHOST_USER_SET_LOG_FD] = {"SET_LOG_FD", VHOST_PL_NONE, VHOST_FDS_NONE, NULL},
    [VHOST_USER_SET_VRING_NUM] = {"SET_VRING_NUM", VHOST_PL_STATE, VHOST_FDS_NONE,
				  vhost_msg_set_vring_num},
    [VHOST_USER_SET_VRING_ADDR] = {"SET_VRING_ADDR", VHOST_PL_ADDR, VHOST_FDS_NONE,
				   vhost_msg_set_vring_addr},
    [VHOST_USER_SET_VRING_BASE] = {"SET_VRING_BASE", VHOST_PL_STATE, VHOST_FDS_NONE,
				   vhost_msg_set_vring_base},
    [VHOST_USER_GET_VRING_BASE] = {"GET_VRING_BASE", VHOST_PL_STATE, VHOST_FDS_NONE,
				   vhost_msg_get_vring_base},
    [VHOST_USER_SET_VRING_KICK] = {"SET_VRING_KICK", VHOST_PL_VRING_FD, VHOST_FDS_VRING,
				   vhost_msg_set_vring_fd},
    [VHOST_USER_SET_VRING_CALL] = {"SET_VRING_CALL", VHOST_PL_VRING_FD, VHOST_FDS_VRING,
				   vhost_msg_set_vring_fd},
    [VHOST_USER_SET_VRING_ERR] = {"SET_VRING_ERR", VHOST_PL_VRING_FD, VHOST_FDS_VRING,
				  vhost_msg_set_vring_fd},
    [VHOST_USER_GET_PROTOCOL_FEATURES] = {"GET_PROTOCOL_FEATURES", VHOST_PL_NONE, VHOST_FDS_NONE,
					  vhost_msg_get_protocol_features},
    [VHOST_USER_SET_PROTOCOL_FEATURES] = {"SET_PROTOCOL_FEATURES", VHOST_PL_U64, VHOST_FDS_NONE,
					  vhost_msg_set_protocol_features},
    [VHOST_USER_GET_QUEUE_NUM] = {"GET_QUEUE_NUM", VHOST_PL_NONE, VHOST_FDS_NONE,
				  vhost_msg_get_queue_num},
    [VHOST_USER_SET_VRING_ENABLE] = {"SET_VRING_ENABLE", VHOST_PL_STATE, VHOST_FDS_NONE,
				     vhost_msg_set_vring_enable},
    [VHOST_USER_NET_SET_MTU] = {"NET_SET_MTU", VHOST_PL_U64, VHOST_FDS_NONE, vhost_msg_net_set_mtu},
    [VHOST_USER_SET_BACKEND_REQ_FD] = {"SET_BACKEND_REQ_FD", VHOST_PL_NONE, VHOST_FDS_ONE,
				       vhost_msg_set_backend_req_fd},
    [VHOST_USER_IOTLB_MSG] = {"IOTLB_MSG", VHOST_PL_IOTLB, VHOST_FDS_NONE, vhost_msg_iotlb},
};

static const struct vhost_req *req_find(uint32_t req)
{
	return req < sizeof(reqs) / sizeof(reqs[0]) && reqs[req].name ? &reqs[req] : NULL;
}

const char *vhost_req_name(uint32_t req)
{
	const struct vhost_req *r = req_find(req);

	return r != NULL ? r->name : "unknown request";
}

/* Payload sizes: exact for each request (requests without payload may carry 8 bytes). */
static bool size_ok(const struct vhost_req *r, uint32_t size)
{
	if (r == NULL || r->handle == NULL)
		return false; /* not served: unknown, or named for the log only */
	switch (r->payload) {
	case VHOST_PL_NONE:
		return size == 0 || size == 8;
	case VHOST_PL_ADDR:
		return size == sizeof(struct vhost_user_vring_addr);
	case VHOST_PL_MEM:
		return true; /* checked against its region count */
	case VHOST_PL_IOTLB:
		return size == sizeof(struct vhost_user_iotlb);
	default:
		return size == 8;
	}
}

static bool overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		snprintf(why, whylen, __VA_ARGS__);                                                \
		return -1;                                                                         \
	} while (0)

/* The vring index of a message, checked against what we offered. */
static int vring_index(const char *name, uint64_t idx, unsigned nvrings, unsigned *out, char *why,
		       size_t whylen)
{
	if (idx >= nvrings)
		FAIL("%s: vring %llu beyond the %u offered", name, (unsigned long long)idx,
		     nvrings);
	*out = (unsigned)idx;
	return 0;
}

/* SET_VRING_KICK / CALL / ERR: an index and an fd, or the no-fd flag. */
static int vring_fd_decode(struct vhost_msg *m, unsigned nfds, unsigned nvrings, char *why,
			   size_t whylen)
{
	const char *name = m->req->name;
	uint64_t u = m->u;

	m->nofd = u & VHOST_USER_VRING_NOFD;
	if (vring_index(name, u & VHOST_USER_VRING_IDX_MASK, nvrings, &m->vring, why, whylen) < 0)
		return -1;
	if (u & ~(VHOST_USER_VRING_IDX_MASK | VHOST_USER_VRING_NOFD))
		FAIL("%s: unknown bits in 0x%llx", name, (unsigned long long)u);
	if (nfds != (m->nofd ? 0u : 1u))
		FAIL("%s: %u file descriptors, expected %u", name, nfds, m->nofd ? 0 : 1);
	return 0;
}

/* SET_MEM_TABLE: 1..8 regions, one fd each, disjoint in guest and in frontend addresses. */
static int mem_decode(struct vhost_msg *m, const uint8_t *pl, unsigned nfds, char *why,
		      size_t whylen)
{
	uint32_t size = m->h.size;
	unsigned n;

	if (size < 8)
		FAIL("SET_MEM_TABLE: payload of %u bytes", size);
	memcpy(&m->mem.nregions, pl, sizeof(m->mem.nregions));
	n = m->mem.nregions;
	if (n == 0 || n > VHOST_USER_MAX_REGIONS)
		FAIL("SET_MEM_TABLE: %u regions (1..%u)", n, VHOST_USER_MAX_REGIONS);
	if (size != 8 + n * sizeof(struct vhost_user_mem_region))
		FAIL("SET_MEM_TABLE: payload of %u bytes for %u regions", size, n);
	memcpy(&m->mem, pl, size);
	if (nfds != n)
		FAIL("SET_MEM_TABLE: %u file descriptors for %u regions", nfds, n);
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = 0; j < i; j++) {
			const struct vhost_user_mem_region *a = &m->mem.r[i], *b = &m->mem.r[j];

			if (overlap(a->gpa, a->size, b->gpa, b->size) ||
			    overlap(a->uva, a->size, b->uva, b->size))
				FAIL("SET_MEM_TABLE: regions %u and %u overlap", j, i);
		}
	return 0;
}

int vhost_msg_decode(const uint8_t *buf, size_t len, unsigned nfds, bool too_many_fds,
		     unsigned nvrings, struct vhost_msg *m, char *why, size_t whylen)
{
	const uint8_t *pl = buf + sizeof(struct vhost_user_msg_hdr);
	struct vhost_user_msg_hdr h;
	const char *name;

	memset(m, 0, sizeof(*m));
	if (len < sizeof(h))
		FAIL("message of %zu bytes (the header is %zu)", len, sizeof(h));
	memcpy(&h, buf, sizeof(h));
	m->h = h;
	m->req = req_find(h.request);
	name = vhost_req_name(h.request);
	if (h.size != len - sizeof(h))
		FAIL("%s: payload of %u bytes, %zu received", name, h.size, len - sizeof(h));
	if ((h.flags & VHOST_USER_VERSION_MASK) != VHOST_USER_VERSION) {
		FAIL("%s: protocol version %u (expected 1)", name,
		     h.flags & VHOST_USER_VERSION_MASK);
	}
	if (!size_ok(m->req, h.size)) {
		if (m->req == NULL)
			FAIL("request %u not supported", h.request);
		FAIL("%s: payload of %u bytes", name, h.size);
	}
	if (too_many_fds)
		FAIL("%s: too many file descriptors", name);
	if (m->req->fds == VHOST_FDS_NONE && nfds != 0) {
		FAIL("%s: %u unexpected file descriptors", name, nfds);
	}
	if (m->req->fds == VHOST_FDS_ONE && nfds != 1)
		FAIL("%s: %u file descriptors, expected 1", name, nfds);
	if (h.size == 8)
		memcpy(&m->u, pl, 8);
	memcpy(&m->st, &m->u, sizeof(m->st));
	switch (m->req->payload) {
	case VHOST_PL_STATE:
		return vring_index(name, m->st.index, nvrings, &m->vring, why, whylen);
	case VHOST_PL_ADDR:
		memcpy(&m->ad, pl, sizeof(m->ad));
		return vring_index(name, m->ad.index, nvrings, &m->vring, why, whylen);
	case VHOST_PL_VRING_FD:
		return vring_fd_decode(m, nfds, nvrings, why, whylen);
	case VHOST_PL_MEM:
		return mem_decode(m, pl, nfds, why, whylen);
	case VHOST_PL_IOTLB:
		memcpy(&m->iotlb, pl, sizeof(m->iotlb));
		return 0;
	default:
		return 0;
	}
}
