/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The telemetry socket (tide/telemetry.h): a SOCK_SEQPACKET listener and its clients in one
 * epoll set, served without blocking from the control thread. It reads the ports through the
 * public API only.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <tide/log.h>
#include <tide/port.h>
#include <tide/telemetry.h>

#include "kvargs.h"
#include "log.h"
#include "sized.h"
#include "unix_sock.h"

#define LISTENER UINT32_MAX   /* epoll data of the listening socket */
#define CMDS_PER_POLL 64      /* commands of one client answered per poll: a flood waits */

struct tide_telemetry {
	int lfd, epfd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int client[TIDE_TELEMETRY_MAX_CLIENTS]; /* -1: free */
	struct tide_telemetry_stats st;
	char cmd[TIDE_TELEMETRY_MAX_CMD + 1];
	char out[TIDE_TELEMETRY_MAX_REPLY];
	size_t len;
	bool overflow; /* the answer did not fit: replaced by an error */
};

/* ---- the answer being written (t->out) ---- */

static void __attribute__((format(printf, 2, 3))) put(struct tide_telemetry *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->overflow)
		return;
	va_start(ap, fmt);
	n = vsnprintf(t->out + t->len, sizeof(t->out) - t->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(t->out) - t->len)
		t->overflow = true;
	else
		t->len += (size_t)n;
}

/* @s as a JSON string: quotes, backslashes and control bytes escaped. */
static void put_str(struct tide_telemetry *t, const char *s)
{
	put(t, "\"");
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c == '"' || *c == '\\')
			put(t, "\\%c", *c);
		else if (*c < 0x20 || *c == 0x7f)
			put(t, "\\u%04x", *c);
		else
			put(t, "%c", *c);
	}
	put(t, "\"");
}

static void put_u64(struct tide_telemetry *t, const char *key, uint64_t v, bool last)
{
	put(t, "\"%s\":%llu%s", key, (unsigned long long)v, last ? "" : ",");
}

/* ---- commands ---- */

static struct tide_port *find_port(const char *arg)
{
	uint64_t id;

	if (arg == NULL || *arg == '\0')
		return NULL;
	if (tide_parse_u64(arg, 0, TIDE_MAX_PORTS - 1, &id) == 0)
		return tide_port_by_id((unsigned)id);
	return tide_port_by_name(arg);
}

static void cmd_info(struct tide_telemetry *t, const char *arg)
{
	unsigned n = 0;

	(void)arg;
	for (struct tide_port *p = tide_port_next(NULL); p != NULL; p = tide_port_next(p))
		n++;
	put(t, "{\"version\":\"%s\",\"pid\":%d,\"ports\":%u}", TIDE_VERSION_STRING, (int)getpid(), n);
}

static void cmd_list(struct tide_telemetry *t, const char *arg)
{
	bool first = true;

	(void)arg;
	put(t, "[");
	for (struct tide_port *p = tide_port_next(NULL); p != NULL; p = tide_port_next(p)) {
		put(t, "%s%d", first ? "" : ",", tide_port_id(p));
		first = false;
	}
	put(t, "]");
}

static void cmd_port_info(struct tide_telemetry *t, struct tide_port *p)
{
	struct tide_port_info pi = {.sz = sizeof(pi)};
	const uint8_t *m = pi.mac;

	tide_port_info_get(p, &pi);
	put(t, "{\"id\":%d,\"name\":", tide_port_id(p));
	put_str(t, pi.name != NULL ? pi.name : tide_port_name(p));
	put(t, ",\"driver\":");
	put_str(t, pi.driver != NULL ? pi.driver : "");
	put(t, ",\"mac\":\"%02x:%02x:%02x:%02x:%02x:%02x\",", m[0], m[1], m[2], m[3], m[4], m[5]);
	put_u64(t, "nb_rxq", pi.nb_rxq, false);
	put_u64(t, "nb_txq", pi.nb_txq, false);
	put_u64(t, "max_rxq", pi.max_rxq, false);
	put_u64(t, "max_txq", pi.max_txq, false);
	put_u64(t, "min_desc", pi.min_desc, false);
	put_u64(t, "max_desc", pi.max_desc, false);
	put_u64(t, "max_rs_gap", pi.max_rs_gap, false);
	put_u64(t, "count_completion", (uint64_t)pi.count_completion, false);
	put_u64(t, "needs_poll_ctl", (uint64_t)pi.needs_poll_ctl, true);
	put(t, "}");
}

static void put_queues(struct tide_telemetry *t, const char *key,
		       const struct tide_queue_stats *q, unsigned n)
{
	put(t, "\"%s\":[", key);
	for (unsigned i = 0; i < n; i++) {
		put(t, "%s{", i ? "," : "");
		put_u64(t, "packets", q[i].packets, false);
		put_u64(t, "bytes", q[i].bytes, false);
		put_u64(t, "errors", q[i].errors, false);
		put_u64(t, "nombuf", q[i].nombuf, false);
		put_u64(t, "polls", q[i].polls, false);
		put_u64(t, "idle_polls", q[i].idle_polls, true);
		put(t, "}");
	}
	put(t, "]");
}

static void cmd_port_stats(struct tide_telemetry *t, struct tide_port *p)
{
	struct tide_port_stats s = {.sz = sizeof(s)};
	struct tide_port_info pi = {.sz = sizeof(pi)};

	tide_port_stats_get(p, &s);
	tide_port_info_get(p, &pi);
	put(t, "{");
	put_u64(t, "ipackets", s.ipackets, false);
	put_u64(t, "ibytes", s.ibytes, false);
	put_u64(t, "ierrors", s.ierrors, false);
	put_u64(t, "rx_nombuf", s.rx_nombuf, false);
	put_u64(t, "rx_missed", s.rx_missed, false);
	put_u64(t, "opackets", s.opackets, false);
	put_u64(t, "obytes", s.obytes, false);
	put_u64(t, "oerrors", s.oerrors, false);
	put_u64(t, "tx_hangs", s.tx_hangs, false);
	put_u64(t, "tx_released", s.tx_released, false);
	put_u64(t, "tx_recycled", s.tx_recycled, false);
	put_u64(t, "rx_polls", s.rx_polls, false);
	put_u64(t, "rx_idle_polls", s.rx_idle_polls, false);
	put_u64(t, "tx_polls", s.tx_polls, false);
	put_u64(t, "tx_idle_polls", s.tx_idle_polls, false);
	put_queues(t, "rxq", s.rxq, pi.nb_rxq < TIDE_MAX_QUEUES ? pi.nb_rxq : TIDE_MAX_QUEUES);
	put(t, ",");
	put_queues(t, "txq", s.txq, pi.nb_txq < TIDE_MAX_QUEUES ? pi.nb_txq : TIDE_MAX_QUEUES);
	put(t, "}");
}

static void cmd_port_link(struct tide_telemetry *t, struct tide_port *p)
{
	struct tide_link l;
	int rc = tide_port_link_get(p, &l);

	if (rc < 0)
		put(t, "{\"error\":\"link: %s\"}", strerror(-rc));
	else
		put(t, "{\"up\":%s,\"speed_mbps\":%u}", l.up ? "true" : "false", l.speed_mbps);
}

static void cmd_port_xstats(struct tide_telemetry *t, struct tide_port *p)
{
	struct tide_xstat_name names[256];
	uint64_t vals[256];
	int n = tide_xstats_names_get(p, names, 256);

	if (n > 256)
		n = 256;
	tide_xstats_get(p, vals, (unsigned)n);
	put(t, "{");
	for (int i = 0; i < n; i++) {
		put(t, "%s", i ? "," : "");
		put_str(t, names[i].name);
		put(t, ":%llu", (unsigned long long)vals[i]);
	}
	put(t, "}");
}

struct command {
	const char *name;
	void (*global)(struct tide_telemetry *t, const char *arg);
	void (*port)(struct tide_telemetry *t, struct tide_port *p);
	const char *help;
};

static void cmd_help(struct tide_telemetry *t, const char *arg);

static const struct command commands[] = {
	{"/", cmd_help, NULL, "the commands"},
	{"/info", cmd_info, NULL, "version, pid, number of ports"},
	{"/ports/list", cmd_list, NULL, "the ids of the open ports"},
	{"/ports/info", NULL, cmd_port_info, "PORT: driver, name, queues, limits, MAC"},
	{"/ports/stats", NULL, cmd_port_stats, "PORT: the port's counters, per queue too"},
	{"/ports/xstats", NULL, cmd_port_xstats, "PORT: every extended statistic, by name"},
	{"/ports/link", NULL, cmd_port_link, "PORT: link state"},
};

static void cmd_help(struct tide_telemetry *t, const char *arg)
{
	(void)arg;
	put(t, "{");
	for (unsigned i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		put(t, "%s", i ? "," : "");
		put_str(t, commands[i].name);
		put(t, ":");
		put_str(t, commands[i].help);
	}
	put(t, "}");
}

/* The answer to @cmd (NUL-terminated, at most TIDE_TELEMETRY_MAX_CMD bytes) in t->out. */
static void answer(struct tide_telemetry *t, char *cmd, size_t n)
{
	const struct command *c = NULL;
	char *arg;

	t->len = 0;
	t->overflow = false;
	while (n > 0 && (cmd[n - 1] == '\n' || cmd[n - 1] == '\r' || cmd[n - 1] == ' '))
		cmd[--n] = '\0';
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)cmd[i] < 0x20 || (unsigned char)cmd[i] > 0x7e) {
			put(t, "{\"error\":\"not a command: byte %zu is not printable text\"}", i);
			t->st.errors++;
			return;
		}
	arg = strchr(cmd, ',');
	if (arg != NULL)
		*arg++ = '\0';
	for (unsigned i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(cmd, commands[i].name) == 0)
			c = &commands[i];
	if (c == NULL) {
		put(t, "{\"error\":");
		put_str(t, "unknown command (send / for the list)");
		put(t, ",\"command\":");
		put_str(t, cmd);
		put(t, "}");
		t->st.errors++;
		return;
	}
	put(t, "{");
	put_str(t, c->name);
	put(t, ":");
	if (c->global != NULL) {
		c->global(t, arg);
	} else {
		struct tide_port *p = find_port(arg);

		if (p == NULL) {
			t->len = 0;
			put(t, "{\"error\":");
			put_str(t, arg == NULL || *arg == '\0' ? "this command takes a port: CMD,PORT"
							       : "no such port (an id or a name)");
			put(t, "}");
			t->st.errors++;
			return;
		}
		c->port(t, p);
	}
	put(t, "}");
	if (t->overflow) {
		t->len = 0; /* an answer that does not fit is replaced, never cut */
		t->overflow = false;
		put(t, "{\"error\":\"answer longer than %u bytes\"}", TIDE_TELEMETRY_MAX_REPLY);
		t->st.errors++;
	}
}

/* ---- clients ---- */

static void drop(struct tide_telemetry *t, unsigned slot, bool count)
{
	epoll_ctl(t->epfd, EPOLL_CTL_DEL, t->client[slot], NULL);
	close(t->client[slot]);
	t->client[slot] = -1;
	if (count)
		t->st.dropped++;
}

/* Send t->out; false (and the client dropped) when it cannot take it now. */
static bool reply(struct tide_telemetry *t, unsigned slot)
{
	ssize_t w = send(t->client[slot], t->out, t->len, MSG_DONTWAIT | MSG_NOSIGNAL);

	if (w == (ssize_t)t->len)
		return true;
	drop(t, slot, true); /* not reading (EAGAIN), gone (EPIPE) or broken: never waited for */
	return false;
}

static void accept_clients(struct tide_telemetry *t)
{
	for (;;) {
		int fd = accept4(t->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		unsigned slot = TIDE_TELEMETRY_MAX_CLIENTS;
		struct epoll_event ev = {.events = EPOLLIN};

		if (fd < 0)
			return; /* EAGAIN: no more; anything else: try again at the next poll */
		for (unsigned i = 0; i < TIDE_TELEMETRY_MAX_CLIENTS; i++)
			if (t->client[i] < 0) {
				slot = i;
				break;
			}
		t->len = 0;
		t->overflow = false;
		if (slot == TIDE_TELEMETRY_MAX_CLIENTS) {
			put(t, "{\"error\":\"too many clients (at most %u)\"}",
			    TIDE_TELEMETRY_MAX_CLIENTS);
			send(fd, t->out, t->len, MSG_DONTWAIT | MSG_NOSIGNAL);
			close(fd);
			t->st.dropped++;
			continue;
		}
		ev.data.u32 = slot;
		if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			close(fd);
			t->st.dropped++;
			continue;
		}
		t->client[slot] = fd;
		t->st.clients++;
		put(t, "{\"version\":\"%s\",\"pid\":%d,\"max_output_len\":%u}", TIDE_VERSION_STRING,
		    (int)getpid(), TIDE_TELEMETRY_MAX_REPLY);
		reply(t, slot);
	}
}

/* Answer up to CMDS_PER_POLL commands of one client; returns how many. */
static int serve(struct tide_telemetry *t, unsigned slot)
{
	int served = 0;

	while (served < CMDS_PER_POLL && t->client[slot] >= 0) {
		ssize_t n = recv(t->client[slot], t->cmd, TIDE_TELEMETRY_MAX_CMD,
				 MSG_DONTWAIT | MSG_TRUNC);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (n <= 0) {
			drop(t, slot, n < 0); /* 0: the client hung up, as it may */
			break;
		}
		t->st.commands++;
		served++;
		if (n > TIDE_TELEMETRY_MAX_CMD) {
			t->len = 0;
			t->overflow = false;
			put(t, "{\"error\":\"command longer than %u bytes\"}", TIDE_TELEMETRY_MAX_CMD);
			t->st.errors++;
		} else {
			t->cmd[n] = '\0';
			answer(t, t->cmd, (size_t)n);
		}
		if (!reply(t, slot))
			break;
	}
	return served;
}

int tide_telemetry_poll(struct tide_telemetry *t)
{
	struct epoll_event ev[TIDE_TELEMETRY_MAX_CLIENTS + 1];
	int n = epoll_wait(t->epfd, ev, TIDE_TELEMETRY_MAX_CLIENTS + 1, 0), served = 0;

	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (int i = 0; i < n; i++) {
		uint32_t slot = ev[i].data.u32;

		if (slot == LISTENER) {
			if (ev[i].events & (EPOLLERR | EPOLLHUP))
				return -EIO;
			accept_clients(t);
		} else if (t->client[slot] >= 0) {
			served += serve(t, slot);
		}
	}
	return served;
}

int tide_telemetry_open(const char *path, struct tide_telemetry **out)
{
	struct tide_telemetry *t;
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = LISTENER};
	int rc;

	if (path == NULL || *path == '\0' || strlen(path) >= sizeof(t->path)) {
		TIDE_LOG_ERR_("telemetry", "socket path '%s': empty or longer than %zu characters",
			      path ? path : "(null)", sizeof(t->path) - 1);
		return -EINVAL;
	}
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return -ENOMEM;
	for (unsigned i = 0; i < TIDE_TELEMETRY_MAX_CLIENTS; i++)
		t->client[i] = -1;
	snprintf(t->path, sizeof(t->path), "%s", path);
	t->lfd = unix_sock_listen(path, false, SOCK_SEQPACKET, TIDE_TELEMETRY_MAX_CLIENTS);
	if (t->lfd < 0) {
		rc = t->lfd;
		TIDE_LOG_ERR_("telemetry", "%s: %s%s", path, strerror(-rc),
			      rc == -EADDRINUSE ? " (another server listens on it)" : "");
		free(t);
		return rc;
	}
	t->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (t->epfd < 0 || epoll_ctl(t->epfd, EPOLL_CTL_ADD, t->lfd, &ev) < 0) {
		rc = -errno;
		if (t->epfd >= 0)
			close(t->epfd);
		close(t->lfd);
		unlink(path);
		free(t);
		return rc;
	}
	*out = t;
	return 0;
}

int tide_telemetry_fd(const struct tide_telemetry *t)
{
	return t->epfd;
}

int tide_telemetry_stats_get(const struct tide_telemetry *t, struct tide_telemetry_stats *out)
{
	if (tide_sized_check(out, TIDE_SIZE_UPTO(struct tide_telemetry_stats, dropped)) < 0)
		return -EINVAL;
	return tide_sized_put(out, &t->st, sizeof(t->st));
}

void tide_telemetry_close(struct tide_telemetry *t)
{
	if (t == NULL)
		return;
	for (unsigned i = 0; i < TIDE_TELEMETRY_MAX_CLIENTS; i++)
		if (t->client[i] >= 0)
			drop(t, i, false);
	close(t->epfd);
	close(t->lfd);
	unlink(t->path);
	free(t);
}
