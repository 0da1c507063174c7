/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: arbitrary vhost-user messages through vhost_msg_decode(), the decode
 * step the control thread runs on every message it receives (drivers/vhost/vhost_msg.c).
 * Besides the sanitizers it checks the contract: a refused message has a short reason; an
 * accepted one has a request with a handler, its payload of the size its rule says, the fds
 * its rule expects, a vring index below the port's vrings, and for a memory table 1..8
 * disjoint regions, one fd each; and decoding is deterministic.
 *
 * Input: byte 0 the fds that came with the message (bits 0-3: how many, above 8 means some
 * were dropped; bit 4: dropped as well), byte 1 the port's queue pairs (bits 0-3, plus one)
 * and bit 7: set the header's size to the payload that follows; then the message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vhost_msg.h"

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

#define WHY_LEN 128 /* the port's reason: VHOST_REASON_LEN + 1 */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The table's handlers: the decode step never calls them. */
#define STUB(f)                                                                                    \
	int f(struct vhost_port *vp, const struct vhost_msg *m)                                    \
	{                                                                                          \
		(void)vp;                                                                          \
		(void)m;                                                                           \
		__builtin_trap();                                                                  \
	}
VHOST_MSG_HANDLERS(STUB)

static bool overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

static void check_accepted(const struct vhost_msg *m, size_t len, unsigned nfds, bool dropped,
			   unsigned nvrings)
{
	const struct vhost_req *r = m->req;

	CHECK(r != NULL && r->name != NULL && r->handle != NULL);
	CHECK(!dropped);
	CHECK((m->h.flags & VHOST_USER_VERSION_MASK) == VHOST_USER_VERSION);
	CHECK(m->h.size == len - sizeof(struct vhost_user_msg_hdr));
	CHECK(m->h.size <= VHOST_USER_MAX_PAYLOAD);
	switch (r->fds) {
	case VHOST_FDS_NONE:
		CHECK(nfds == 0);
		break;
	case VHOST_FDS_VRING:
		CHECK(nfds == (m->nofd ? 0u : 1u));
		break;
	case VHOST_FDS_ONE:
		CHECK(nfds == 1);
		break;
	default:
		CHECK(nfds == m->mem.nregions);
		break;
	}
	switch (r->payload) {
	case VHOST_PL_NONE:
		CHECK(m->h.size == 0 || m->h.size == 8);
		break;
	case VHOST_PL_U64:
		CHECK(m->h.size == 8);
		break;
	case VHOST_PL_STATE:
		CHECK(m->h.size == 8 && m->vring < nvrings && m->vring == m->st.index);
		break;
	case VHOST_PL_VRING_FD:
		CHECK(m->h.size == 8 && m->vring < nvrings);
		CHECK((m->u & ~(VHOST_USER_VRING_IDX_MASK | VHOST_USER_VRING_NOFD)) == 0);
		break;
	case VHOST_PL_ADDR:
		CHECK(m->h.size == sizeof(struct vhost_user_vring_addr) && m->vring < nvrings);
		break;
	case VHOST_PL_MEM:
		CHECK(m->mem.nregions >= 1 && m->mem.nregions <= VHOST_USER_MAX_REGIONS);
		CHECK(m->h.size == 8 + m->mem.nregions * sizeof(struct vhost_user_mem_region));
		for (unsigned i = 0; i < m->mem.nregions; i++)
			for (unsigned j = 0; j < i; j++) {
				const struct vhost_user_mem_region *a = &m->mem.r[i], *b = &m->mem.r[j];

				CHECK(!overlap(a->gpa, a->size, b->gpa, b->size));
				CHECK(!overlap(a->uva, a->size, b->uva, b->size));
			}
		break;
	case VHOST_PL_IOTLB:
		CHECK(m->h.size == sizeof(struct vhost_user_iotlb)); /* values: the handler's */
		break;
	default:
		CHECK(0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct vhost_msg m, m2;
	char why[WHY_LEN], why2[WHY_LEN];
	unsigned nfds, nvrings;
	bool dropped;
	uint8_t *buf;
	size_t len;
	int rc;

	if (size < 2)
		return 0;
	nfds = data[0] & 0x0f;
	dropped = (data[0] & 0x10) != 0;
	if (nfds > VHOST_USER_MAX_FDS) {
		nfds = VHOST_USER_MAX_FDS;
		dropped = true;
	}
	nvrings = 2 * (1 + (data[1] & 0x0f));
	len = size - 2;
	/* A buffer of exactly the message, so that any over-read hits a redzone. */
	buf = malloc(len ? len : 1);
	CHECK(buf != NULL);
	memcpy(buf, data + 2, len);
	if ((data[1] & 0x80) && len >= sizeof(struct vhost_user_msg_hdr)) {
		uint32_t pl = (uint32_t)(len - sizeof(struct vhost_user_msg_hdr));

		memcpy(buf + offsetof(struct vhost_user_msg_hdr, size), &pl, sizeof(pl));
	}
	why[0] = why2[0] = '\0';
	rc = vhost_msg_decode(buf, len, nfds, dropped, nvrings, &m, why, sizeof(why));
	CHECK(rc == 0 || rc == -1);
	if (rc < 0) {
		CHECK(why[0] != '\0' && strlen(why) < sizeof(why));
	} else {
		check_accepted(&m, len, nfds, dropped, nvrings);
	}
	CHECK(vhost_msg_decode(buf, len, nfds, dropped, nvrings, &m2, why2, sizeof(why2)) == rc);
	CHECK(rc < 0 ? strcmp(why, why2) == 0 : memcmp(&m, &m2, sizeof(m)) == 0);
	free(buf);
	return 0;
}
