/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: arbitrary control-channel traffic (bytes, lengths, fd counts, our own sent
 * messages) through memif_msg_decode() and the state machine of both roles. Besides the
 * sanitizers it checks the contracts: errors carry a short reason and leave the connection
 * unchanged, counts stay within the limits, and decode(encode(decode(x))) == decode(x).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "memif_msg.h"
#include "fuzz_memif.h"

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_reason(const char *why)
{
	CHECK(why != NULL);
	CHECK(strlen(why) < MEMIF_REASON_LEN);
}

static void check_conn(const struct memif_conn *c)
{
	CHECK(c->state <= MEMIF_STATE_CLOSED);
	if (c->role == MEMIF_ROLE_SERVER) {
		CHECK(c->n_regions <= c->limits.regions);
		CHECK(c->n_rings[MEMIF_DIR_C2S] <= c->limits.c2s_rings);
		CHECK(c->n_rings[MEMIF_DIR_S2C] <= c->limits.s2c_rings);
		for (unsigned int i = 0; i < c->n_regions; i++)
			CHECK(c->region_size[i] > 0 && c->region_size[i] <= MEMIF_REGION_SIZE_MAX);
	} else {
		CHECK(c->limits.regions <= MEMIF_MAX_REGIONS);
		CHECK(c->limits.max_log2_ring_size <= MEMIF_LOG2_RING_SIZE_MAX);
	}
}

static void feed(struct memif_conn *c, const struct memif_msg *m, unsigned int fds)
{
	struct memif_conn before = *c;
	const char *why = NULL;

	if (memif_conn_step(c, m, fds, &why)) {
		check_reason(why);
		CHECK(memcmp(&before, c, sizeof(before)) == 0);
	}
	check_conn(c);
}

static void sent(struct memif_conn *c, uint16_t type)
{
	struct memif_conn before = *c;

	if (memif_conn_sent(c, type))
		CHECK(memcmp(&before, c, sizeof(before)) == 0);
	check_conn(c);
}

/* Decode from a buffer of exactly @len bytes, so that any over-read hits a redzone. */
static void receive(struct memif_conn conns[2], const uint8_t *p, size_t len, unsigned int fds)
{
	uint8_t *buf = malloc(len ? len : 1);
	uint8_t again[MEMIF_MSG_SIZE];
	struct memif_msg m, m2;
	const char *why = NULL;

	CHECK(buf != NULL);
	memcpy(buf, p, len);
	if (memif_msg_decode(buf, len, &m, &why)) {
		check_reason(why);
		free(buf);
		return;
	}
	free(buf);
	CHECK(len == MEMIF_MSG_SIZE);
	CHECK(memif_msg_encode(&m, again) == 0);
	CHECK(memif_msg_decode(again, sizeof(again), &m2, NULL) == 0);
	CHECK(memcmp(&m, &m2, sizeof(m)) == 0);
	if (m.type == MEMIF_MSG_INIT && memif_msg_secret_check("fuzz", &m.init, &why) == 0)
		CHECK(strcmp(m.init.secret, "fuzz") == 0);
	feed(&conns[0], &m, fds);
	feed(&conns[1], &m, fds);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct memif_conn *conns = malloc(2 * sizeof(*conns));
	struct memif_limits lim;
	size_t pos = 4;

	if (size < 4 || !conns) {
		free(conns);
		return 0;
	}
	lim.regions = (uint16_t)(data[0] + 1);
	lim.c2s_rings = (uint16_t)(data[1] + 1);
	lim.s2c_rings = (uint16_t)(data[2] + 1);
	lim.max_log2_ring_size = data[3] % (MEMIF_LOG2_RING_SIZE_MAX + 1);
	CHECK(memif_conn_init(&conns[0], MEMIF_ROLE_SERVER, &lim) == 0);
	CHECK(memif_conn_init(&conns[1], MEMIF_ROLE_CLIENT, NULL) == 0);

	while (pos < size) {
		uint8_t ctrl = data[pos++];
		size_t len = MEMIF_MSG_SIZE;

		if (ctrl & FUZZ_CTRL_SENT) {
			if (pos < size) {
				sent(&conns[0], data[pos] % (MEMIF_MSG_TYPE_MAX + 2));
				sent(&conns[1], data[pos] % (MEMIF_MSG_TYPE_MAX + 2));
				pos++;
			}
			continue;
		}
		if (ctrl & FUZZ_CTRL_LENGTH) {
			if (pos >= size)
				break;
			len = data[pos++];
		}
		if (len > size - pos)
			len = size - pos;
		receive(conns, data + pos, len, ctrl & FUZZ_CTRL_FDS);
		pos += len;
	}
	free(conns);
	return 0;
}
