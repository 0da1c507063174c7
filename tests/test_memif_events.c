/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memif link events and connection counters: a server and a client in one process. Each
 * port's link event fd fires when the handshake completes and again when the link goes
 * down; the xstats count the connection and the disconnect (a normal one: no violation).
 */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include <tide/port.h>

#include "memif_util.h"

static char dir[64];

static uint64_t xstat(struct tide_port *p, const char *name)
{
	uint64_t v = ~0ull;

	MT_CHECK(tide_xstats_get_by_name(p, name, &v) == 0);
	return v;
}

/* 1 when @fd has an event (and clears it), 0 when not. */
static int event(int fd)
{
	uint64_t n;

	if (read(fd, &n, sizeof(n)) == (ssize_t)sizeof(n))
		return 1;
	MT_CHECK(errno == EAGAIN);
	return 0;
}

int main(void)
{
	char spec[160];
	struct tide_pool *pool;
	struct tide_port *s, *c;
	int sfd, cfd;

	MT_CHECK(tide_thread_register() >= 0);
	mt_tmpdir(dir, sizeof(dir), "events");
	MT_CHECK(tide_pktpool_create("ev", 4096, 0, 0, NULL, &pool) == 0);
	snprintf(spec, sizeof(spec), "memif:socket=%s/e.sock,role=server", dir);
	s = mt_port(spec, 1, 256, pool);
	snprintf(spec, sizeof(spec), "memif:socket=%s/e.sock,role=client", dir);
	c = mt_port(spec, 1, 256, pool);
	sfd = tide_port_link_event_fd(s);
	cfd = tide_port_link_event_fd(c);
	MT_CHECK(sfd >= 0 && cfd >= 0);
	MT_CHECK(!event(sfd) && !event(cfd)); /* nothing happened yet */

	for (int i = 0; i < 10000 && !(mt_wait_link(s, 1, 0) && mt_wait_link(c, 1, 0)); i++) {
		tide_port_poll_ctl(s);
		tide_port_poll_ctl(c);
		usleep(1000);
	}
	MT_CHECK(mt_wait_link(s, 1, 0) && mt_wait_link(c, 1, 0));
	if (!event(sfd) || !event(cfd)) {
		fprintf(stderr, "FAIL: the link came up without a link event\n");
		return 1;
	}
	MT_CHECK(xstat(s, "memif_connects") == 1 && xstat(c, "memif_connects") == 1);
	MT_CHECK(xstat(s, "memif_disconnects") == 0);

	tide_port_close(c); /* the client says goodbye */
	MT_CHECK(mt_wait_link(s, 0, 10));
	if (!event(sfd)) {
		fprintf(stderr, "FAIL: the link went down without a link event\n");
		return 1;
	}
	MT_CHECK(!event(sfd)); /* one change, one event */
	MT_CHECK(xstat(s, "memif_disconnects") == 1 && xstat(s, "memif_violations") == 0);
	tide_port_close(s);
	MT_CHECK(tide_pool_in_use(pool) == 0);
	tide_pool_free(pool);
	printf("ok: memif link events up and down on both ends; connects 1, disconnects 1\n");
	return 0;
}
