/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Seed corpus for the memif fuzz targets, built from valid messages so that the fuzzer starts
 * from complete server and client conversations instead of guessing 128-byte messages.
 * usage: gen_corpus DIR   (writes DIR/msg/ and DIR/desc/)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memif_msg.h"
#include "fuzz_memif.h"

struct seed {
	uint8_t b[8192];
	size_t n;
};

static void add(struct seed *s, const void *p, size_t n)
{
	if (s->n + n > sizeof(s->b))
		exit(1);
	memcpy(s->b + s->n, p, n);
	s->n += n;
}

static void add_byte(struct seed *s, uint8_t v)
{
	add(s, &v, 1);
}

static void add_msg(struct seed *s, const struct memif_msg *m, unsigned int fds)
{
	uint8_t buf[MEMIF_MSG_SIZE];

	if (memif_msg_encode(m, buf))
		exit(1);
	add_byte(s, (uint8_t)fds);
	add(s, buf, sizeof(buf));
}

static void add_sent(struct seed *s, uint16_t type)
{
	add_byte(s, FUZZ_CTRL_SENT);
	add_byte(s, (uint8_t)type);
}

static void save(const char *dir, const char *sub, const char *name, const struct seed *s)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/%s", dir, sub, name);
	f = fopen(path, "wb");
	if (!f || fwrite(s->b, 1, s->n, f) != s->n || fclose(f)) {
		perror(path);
		exit(1);
	}
}

static struct memif_msg msg(uint16_t type)
{
	struct memif_msg m;

	memset(&m, 0, sizeof(m));
	m.type = type;
	return m;
}

static void limits(struct seed *s)
{
	const uint8_t lim[4] = {1, 1, 1, 10}; /* 2 regions, 2+2 rings, log2 <= 10 */

	s->n = 0;
	add(s, lim, sizeof(lim));
}

static struct memif_msg ring(int c2s, uint16_t index, uint32_t offset)
{
	struct memif_msg m = msg(MEMIF_MSG_ADD_RING);

	m.add_ring.flags = c2s ? MEMIF_RING_FLAG_C2S : 0;
	m.add_ring.index = index;
	m.add_ring.offset = offset;
	m.add_ring.log2_ring_size = 10;
	return m;
}

static void gen_msg(const char *dir)
{
	struct memif_limits lim = {2, 2, 2, 10};
	struct memif_msg m;
	struct seed s;
	uint32_t rb = (uint32_t)memif_ring_bytes(10);

	/* A complete server-side conversation, then a disconnect. */
	limits(&s);
	m = msg(MEMIF_MSG_INIT);
	m.init.version = MEMIF_VERSION;
	strcpy(m.init.name, "seed");
	add_msg(&s, &m, 0);
	m = msg(MEMIF_MSG_ADD_REGION);
	m.add_region.size = 1 << 22;
	add_msg(&s, &m, 1);
	m.add_region.index = 1;
	m.add_region.size = 1 << 16;
	add_msg(&s, &m, 1);
	for (uint16_t i = 0; i < 4; i++) {
		m = ring(i < 2, i % 2, i * rb);
		add_msg(&s, &m, 1);
	}
	m = msg(MEMIF_MSG_CONNECT);
	strcpy(m.connect.if_name, "memif0");
	add_msg(&s, &m, 0);
	save(dir, "msg", "server", &s);
	m = msg(MEMIF_MSG_DISCONNECT);
	strcpy(m.disconnect.reason, "bye");
	add_msg(&s, &m, 0);
	save(dir, "msg", "server-disconnect", &s);

	/* A complete client-side conversation. */
	limits(&s);
	memif_msg_hello_from_limits(&m, &lim, "seed");
	add_msg(&s, &m, 0);
	add_sent(&s, MEMIF_MSG_INIT);
	add_msg(&s, &(struct memif_msg){.type = MEMIF_MSG_ACK}, 0);
	add_sent(&s, MEMIF_MSG_ADD_REGION);
	add_msg(&s, &(struct memif_msg){.type = MEMIF_MSG_ACK}, 0);
	for (int i = 0; i < 2; i++) {
		add_sent(&s, MEMIF_MSG_ADD_RING);
		add_msg(&s, &(struct memif_msg){.type = MEMIF_MSG_ACK}, 0);
	}
	add_sent(&s, MEMIF_MSG_CONNECT);
	m = msg(MEMIF_MSG_CONNECTED);
	strcpy(m.connected.if_name, "memif0");
	add_msg(&s, &m, 0);
	save(dir, "msg", "client", &s);

	/* Every type alone, and an odd length. */
	for (uint16_t t = MEMIF_MSG_ACK; t <= MEMIF_MSG_TYPE_MAX; t++) {
		char name[32];

		limits(&s);
		m = msg(t);
		add_msg(&s, &m, t == MEMIF_MSG_ADD_REGION || t == MEMIF_MSG_ADD_RING);
		snprintf(name, sizeof(name), "type-%u", t);
		save(dir, "msg", name, &s);
	}
	limits(&s);
	add_byte(&s, FUZZ_CTRL_LENGTH);
	add_byte(&s, 127);
	add(&s, (uint8_t[127]){0}, 127);
	save(dir, "msg", "short", &s);
}

static void gen_desc(const char *dir)
{
	struct seed s = {.n = 0};
	uint64_t size = 1 << 20;
	uint32_t buf = 2048;
	uint16_t idx[4] = {0xfffe, 0xfffe, 3, 8};

	add_byte(&s, 1);
	add(&s, &size, sizeof(size));
	add(&s, &buf, sizeof(buf));
	add_byte(&s, 3);
	add_byte(&s, 3); /* 8 slots */
	add(&s, idx, sizeof(idx));
	for (uint32_t i = 0; i < 8; i++) {
		struct memif_desc d = {.flags = (i % 3) ? MEMIF_DESC_FLAG_NEXT : 0,
				       .length = 64 * i,
				       .offset = i * 2048};

		add(&s, &d, sizeof(d));
	}
	save(dir, "desc", "ring8", &s);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	gen_msg(argv[1]);
	gen_desc(argv[1]);
	return 0;
}
