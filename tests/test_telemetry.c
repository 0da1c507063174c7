/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The telemetry socket: every command against ports with known counters, every kind of bad
 * input answered with an error, a client that never reads dropped instead of waited for,
 * the client limit, and the socket file gone after close.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <tide/lcore.h>
#include <tide/port.h>
#include <tide/telemetry.h>

#include "testutil.h"
#include "tmp_util.h"

static char dir[80];
static char path[96];

static int client(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* The next message on @fd, polling the server until it comes (bounded). */
static void receive(struct tide_telemetry *t, int fd, char *buf, size_t len)
{
	for (int i = 0; i < 100000; i++) {
		ssize_t n;

		assert_true(tide_telemetry_poll(t) >= 0);
		n = recv(fd, buf, len - 1, MSG_DONTWAIT);
		if (n > 0) {
			buf[n] = '\0';
			return;
		}
		assert_true(n < 0 && errno == EAGAIN);
		usleep(100);
	}
	fail_msg("no answer from the telemetry server");
}

static void ask(struct tide_telemetry *t, int fd, const void *cmd, size_t n, char *buf,
		size_t len)
{
	assert_int_equal(send(fd, cmd, n, 0), (ssize_t)n);
	receive(t, fd, buf, len);
}

static void expect(const char *answer, const char *want)
{
	if (strstr(answer, want) == NULL)
		fail_msg("answer %s does not hold %s", answer, want);
}

static void test_commands(void **state)
{
	static char buf[TIDE_TELEMETRY_MAX_REPLY + 1];
	struct tide_telemetry *t;
	struct tide_telemetry_stats st = {.sz = sizeof(st)};
	struct tide_port *a, *b;
	struct tide_pool *pool;
	struct tide_mbuf *pkts[32];
	char cmd[TIDE_TELEMETRY_MAX_CMD + 64], want[128];
	int fd;
	uint16_t k, got = 0;

	(void)state;
	assert_int_equal(tide_telemetry_open(path, &t), 0);
	assert_int_equal(tide_pktpool_create("tm", 1024, 0, 0, NULL, &pool), 0);
	assert_int_equal(tide_port_open("ring:name=tm", &a), 0);
	assert_int_equal(tide_port_open("ring:name=tm,peer=1", &b), 0);
	for (struct tide_port *p = a; p != NULL; p = p == a ? b : NULL) {
		assert_int_equal(tide_port_configure(p, 1, 1), 0);
		assert_int_equal(tide_rxq_setup(p, 0, 256, pool, NULL), 0);
		assert_int_equal(tide_txq_setup(p, 0, 256, NULL), 0);
		assert_int_equal(tide_port_start(p), 0);
	}
	/* 7 packets of 100 bytes from a to b. */
	assert_int_equal(tide_mbuf_alloc_bulk(pool, pkts, 7), 0);
	for (unsigned i = 0; i < 7; i++)
		memset(tide_mbuf_append(pkts[i], 100), 1, 100);
	k = tide_tx_burst(tide_port_txq(a, 0), pkts, 7);
	assert_int_equal(k, 7);
	for (int i = 0; i < 100 && got < 7; i++)
		got += tide_rx_burst(tide_port_rxq(b, 0), pkts + got, (uint16_t)(32 - got));
	assert_int_equal(got, 7);
	tide_mbuf_free_bulk(pkts, got);

	fd = client();
	receive(t, fd, buf, sizeof(buf));
	expect(buf, "\"max_output_len\":65536");
	ask(t, fd, "/", 1, buf, sizeof(buf));
	expect(buf, "\"/ports/stats\":");
	ask(t, fd, "/info", 5, buf, sizeof(buf));
	expect(buf, "\"ports\":2}");
	ask(t, fd, "/ports/list", 11, buf, sizeof(buf));
	snprintf(want, sizeof(want), "{\"/ports/list\":[%d,%d]}", tide_port_id(a), tide_port_id(b));
	assert_string_equal(buf, want);
	/* By name, with the newline a shell client sends; by id. */
	snprintf(cmd, sizeof(cmd), "/ports/stats,%s\n", tide_port_name(b));
	ask(t, fd, cmd, strlen(cmd), buf, sizeof(buf));
	expect(buf, "{\"/ports/stats\":{\"ipackets\":7,\"ibytes\":700,");
	expect(buf, "\"rxq\":[{\"packets\":7,\"bytes\":700,");
	snprintf(cmd, sizeof(cmd), "/ports/stats,%d", tide_port_id(a));
	ask(t, fd, cmd, strlen(cmd), buf, sizeof(buf));
	expect(buf, "\"opackets\":7,\"obytes\":700,");
	snprintf(cmd, sizeof(cmd), "/ports/xstats,%s", tide_port_name(b));
	ask(t, fd, cmd, strlen(cmd), buf, sizeof(buf));
	expect(buf, "{\"/ports/xstats\":{\"rx_good_packets\":7,\"rx_good_bytes\":700,");
	expect(buf, "\"rx_q0_packets\":7,");
	snprintf(cmd, sizeof(cmd), "/ports/info,%d", tide_port_id(a));
	ask(t, fd, cmd, strlen(cmd), buf, sizeof(buf));
	snprintf(want, sizeof(want), "\"name\":\"%s\",\"driver\":\"ring\"", tide_port_name(a));
	expect(buf, want);
	snprintf(cmd, sizeof(cmd), "/ports/link,%s", tide_port_name(a));
	ask(t, fd, cmd, strlen(cmd), buf, sizeof(buf));
	expect(buf, "{\"/ports/link\":{\"up\":true,");

	/* Bad input: each gets an error, and the connection keeps working. */
	ask(t, fd, "/nothing", 8, buf, sizeof(buf));
	expect(buf, "{\"error\":\"unknown command (send / for the list)\",\"command\":\"/nothing\"}");
	ask(t, fd, "/x\"y\\", 5, buf, sizeof(buf)); /* echoed as valid JSON */
	expect(buf, "\"command\":\"/x\\\"y\\\\\"}");
	ask(t, fd, "/ports/stats", 12, buf, sizeof(buf));
	expect(buf, "this command takes a port");
	ask(t, fd, "/ports/stats,31", 15, buf, sizeof(buf));
	expect(buf, "no such port");
	ask(t, fd, "/ports/stats,\"x\\", 16, buf, sizeof(buf));
	expect(buf, "no such port");
	ask(t, fd, "/ports/\xff\x01\0x", 11, buf, sizeof(buf));
	expect(buf, "not a command: byte 7 is not printable text");
	memset(cmd, 'a', sizeof(cmd));
	ask(t, fd, cmd, sizeof(cmd), buf, sizeof(buf));
	expect(buf, "command longer than 1024 bytes");
	ask(t, fd, "/info", 5, buf, sizeof(buf));
	expect(buf, "{\"/info\":{\"version\":");
	tide_telemetry_stats_get(t, &st);
	assert_int_equal(st.clients, 1);
	assert_int_equal(st.commands, 16);
	assert_int_equal(st.errors, 7);
	assert_int_equal(st.dropped, 0);
	close(fd);

	for (struct tide_port *p = a; p != NULL; p = p == a ? b : NULL)
		tide_port_close(p);
	assert_pool_full(pool);
	tide_pool_free(pool);
	tide_telemetry_close(t);
	assert_int_equal(access(path, F_OK), -1); /* the socket file is gone */
}

/* A client that sends and never reads is dropped when its socket is full; poll never waits
 * for it, and another client is served meanwhile. */
static void test_client_not_reading(void **state)
{
	char buf[4096];
	struct tide_telemetry *t;
	struct tide_telemetry_stats st = {.sz = sizeof(st)};
	int idle = 0, good, sent = 0, sz = 4096;

	(void)state;
	assert_int_equal(tide_telemetry_open(path, &t), 0);
	idle = client();
	/* A small receive buffer fills after a few answers. */
	assert_int_equal(setsockopt(idle, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz)), 0);
	good = client();
	receive(t, good, buf, sizeof(buf));
	for (int i = 0; i < 100000; i++) {
		tide_telemetry_stats_get(t, &st);
		if (st.dropped > 0)
			break;
		if (send(idle, "/", 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1)
			sent++;
		assert_true(tide_telemetry_poll(t) >= 0);
	}
	tide_telemetry_stats_get(t, &st);
	if (st.dropped != 1)
		fail_msg("a client that never reads was not dropped after %d commands", sent);
	ask(t, good, "/info", 5, buf, sizeof(buf));
	expect(buf, "{\"/info\":");
	close(idle);
	close(good);
	tide_telemetry_close(t);
}

/* One client more than the limit is told so and closed; the others stay served. */
static void test_client_limit(void **state)
{
	char buf[4096];
	struct tide_telemetry *t;
	struct tide_telemetry_stats st = {.sz = sizeof(st)};
	int fds[TIDE_TELEMETRY_MAX_CLIENTS + 1];

	(void)state;
	assert_int_equal(tide_telemetry_open(path, &t), 0);
	for (unsigned i = 0; i <= TIDE_TELEMETRY_MAX_CLIENTS; i++) {
		fds[i] = client();
		receive(t, fds[i], buf, sizeof(buf));
		if (i < TIDE_TELEMETRY_MAX_CLIENTS)
			expect(buf, "\"version\"");
	}
	expect(buf, "{\"error\":\"too many clients (at most 16)\"}");
	tide_telemetry_stats_get(t, &st);
	assert_int_equal(st.clients, TIDE_TELEMETRY_MAX_CLIENTS);
	assert_int_equal(st.dropped, 1);
	ask(t, fds[0], "/info", 5, buf, sizeof(buf));
	expect(buf, "{\"/info\":");
	for (unsigned i = 0; i <= TIDE_TELEMETRY_MAX_CLIENTS; i++)
		close(fds[i]);
	tide_telemetry_close(t);
}

/* Paths: too long refused; a live server's path refused; a dead one's file taken over. */
static void test_open(void **state)
{
	char longpath[200];
	struct tide_telemetry *t, *u;
	int fd;

	(void)state;
	memset(longpath, 'x', sizeof(longpath) - 1);
	longpath[sizeof(longpath) - 1] = '\0';
	assert_int_equal(tide_telemetry_open(longpath, &t), -EINVAL);
	assert_int_equal(tide_telemetry_open(NULL, &t), -EINVAL);
	assert_int_equal(tide_telemetry_open(path, &t), 0);
	assert_int_equal(tide_telemetry_open(path, &u), -EADDRINUSE);
	assert_true(tide_telemetry_fd(t) >= 0);
	tide_telemetry_close(t);
	/* A socket file nobody listens on (as a killed process leaves it). */
	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	{
		struct sockaddr_un sa = {.sun_family = AF_UNIX};

		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
		assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	}
	close(fd);
	assert_int_equal(tide_telemetry_open(path, &t), 0);
	tide_telemetry_close(t);
	tide_telemetry_close(NULL);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "%s/tide-telemetry-XXXXXX", test_tmp());
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(path, sizeof(path), "%s/t.sock", dir);
	return tide_thread_register() < 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	rmdir(dir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open),
		cmocka_unit_test(test_commands),
		cmocka_unit_test(test_client_not_reading),
		cmocka_unit_test(test_client_limit),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
