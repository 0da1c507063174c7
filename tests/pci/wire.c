/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The host side of the PCI suite: the other end of the guest NIC's wire, and the guest's
 * servant. QEMU's NIC is on "-netdev dgram" over unix datagram sockets (one datagram is one
 * frame without FCS; QEMU stops reading when the guest has no room, so with a sender that
 * waits on EAGAIN nothing is lost). The guest sends one-line commands over its second
 * serial port (QEMU connects it to CTL, where this program listens) and reads one-line
 * replies:
 *
 *   RX TAG COUNT LEN           send COUNT frames of LEN bytes of test TAG; reply when sent
 *   STAT TAG                   what came from the guest for TAG: rx, bad, out-of-order, bytes
 *   WAIT TAG N MS              STAT once N frames of TAG have come (or MS ms have passed):
 *                              the guest's pacing, since QEMU drops what it cannot queue
 *   ECHO TAG COUNT LEN MS [W]  send COUNT frames and wait up to MS ms for all to come back;
 *                              with W, never more than W frames ahead of those come back
 *                              (a forwarder whose Tx ring is shorter than what QEMU can
 *                              queue towards it would otherwise drop by design)
 *   LINK on|off                QEMU monitor: set_link on the NIC's netdev
 *   FAULTS                     how many IOMMU fault lines ("vtd_") QEMU has printed so far
 *   REFLECT on|off             send every frame that is not a test frame straight back
 *                              (the port conformance row's partner)
 *   CRX TAG COUNT LEN BAD [L2] send COUNT checksum test frames (csum_frame.h) of LEN bytes
 *                              (every third of L2 bytes, if given), kinds in turn; BAD 0:
 *                              checksums right, 1: the TCP/UDP one wrong, 2: the IPv4
 *                              header's wrong
 *   CWAIT TAG N MS             once N checksum test frames of TAG have come (or MS ms have
 *                              passed): how many, and how many had a wrong IPv4 header
 *                              checksum, a wrong TCP/UDP checksum, a wrong payload, or came
 *                              out of order
 *   BYE                        print the totals and exit 0
 *
 * Every frame from the guest is checked (tests/pci/wire_frame.h): length, pattern, and
 * sequence order within its test; a checksum test frame (tests/pci/csum_frame.h) has both
 * its checksums recomputed. Frames that are neither count as foreign.
 *
 * usage: wire HOST_SOCK QEMU_SOCK CTL_SOCK MONITOR_SOCK NETDEV_ID SECONDS QEMU_STDERR
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "csum_frame.h"
#include "wire_frame.h"

struct tagstat {
	uint64_t rx, bad, order, bytes;
	uint32_t next_seq;
};

static struct tagstat stats[256];

struct csumstat {
	uint64_t rx, bad_ip, bad_l4, bad_pay, order;
	uint32_t next_seq;
};

static struct csumstat cstats[256];
static uint64_t foreign, reflected, total_rx, total_tx;
static bool reflect;
static int dg = -1, ctl = -1;
static struct sockaddr_un qaddr;
static const char *mon_path, *netdev, *qemu_err;
static double deadline;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stdout, "wire: FAIL: ");
	vfprintf(stdout, fmt, ap);
	fprintf(stdout, "\n");
	va_end(ap);
	exit(1);
}

static void check_deadline(void)
{
	if (now() > deadline)
		die("out of time");
}

static void rx_one(const uint8_t *b, ssize_t n)
{
	uint8_t tag;
	uint32_t seq;
	int rc = wire_check(b, (uint32_t)n, &tag, &seq);
	struct tagstat *s;

	total_rx++;
	if (rc == -1) {
		uint8_t ct;
		uint32_t cseq;
		int cr = csum_check(b, (uint32_t)n, &ct, &cseq);

		if (cr != -1) {
			struct csumstat *c = &cstats[ct];

			c->rx++;
			c->bad_ip += cr == -2;
			c->bad_l4 += cr == -3;
			c->bad_pay += cr == -4;
			if (cr != 0 && c->bad_ip + c->bad_l4 + c->bad_pay <= 3)
				printf("wire: checksum frame tag %u seq %u len %zd: check %d\n", ct,
				       cseq, n, cr);
			c->order += cseq != c->next_seq;
			c->next_seq = cseq + 1;
			return;
		}
	}
	if (rc == -1) {
		foreign++;
		/* Back at once, waiting briefly while QEMU is not reading (no receive here: this
		 * runs inside the receive loop). */
		for (int i = 0; reflect && i < 100; i++) {
			struct pollfd p = {.fd = dg, .events = POLLOUT};

			if (sendto(dg, b, (size_t)n, MSG_DONTWAIT, (struct sockaddr *)&qaddr,
				   sizeof(qaddr)) == n) {
				reflected++;
				break;
			}
			poll(&p, 1, 1);
		}
		return;
	}
	s = &stats[b[18]];
	s->rx++;
	s->bytes += (uint64_t)n;
	if (rc != 0) {
		s->bad++;
		if (s->bad <= 3)
			printf("wire: bad frame tag %u seq %u len %zd (check %d)\n", b[18], seq, n, rc);
		return;
	}
	if (seq != s->next_seq) {
		s->order++;
		if (s->order <= 3)
			printf("wire: tag %u: seq %u where %u was next\n", tag, seq, s->next_seq);
	}
	s->next_seq = seq + 1;
}

/* Take every frame waiting. */
static void rx_all(void)
{
	static uint8_t b[65536];

	for (;;) {
		ssize_t n = recv(dg, b, sizeof(b), MSG_DONTWAIT);

		if (n < 0)
			return;
		rx_one(b, n);
	}
}

/* Send one frame, waiting while QEMU is not reading (and receiving meanwhile), until
 * @end. Returns whether it went. */
static bool tx_one(const uint8_t *b, uint32_t len, double end)
{
	for (;;) {
		if (sendto(dg, b, len, MSG_DONTWAIT, (struct sockaddr *)&qaddr, sizeof(qaddr)) ==
		    (ssize_t)len) {
			total_tx++;
			return true;
		}
		if (errno != EAGAIN && errno != ENOBUFS && errno != ECONNREFUSED && errno != ENOENT)
			die("sendto: %s", strerror(errno));
		{
			struct pollfd p = {.fd = dg, .events = POLLIN | POLLOUT};

			poll(&p, 1, 5);
		}
		rx_all();
		check_deadline();
		if (now() > end)
			return false;
	}
}

/* Send up to @count frames of test @tag (until @end), at most @window ahead of the frames
 * of @tag received (0: no limit); returns how many went. */
static unsigned send_frames(unsigned tag, unsigned count, unsigned len, double end,
			    unsigned window)
{
	static uint8_t b[WIRE_MAX];
	unsigned i;

	for (i = 0; i < count; i++) {
		while (window && i - stats[tag].rx >= window && now() < end) {
			struct pollfd p = {.fd = dg, .events = POLLIN};

			poll(&p, 1, 10);
			rx_all();
		}
		wire_fill(b, len, (uint8_t)tag, i, wire_guest_mac, wire_host_mac);
		if (!tx_one(b, len, end))
			break;
		if ((i & 63) == 0)
			rx_all();
	}
	return i;
}

static void reply(const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	printf("wire: > %s\n", line);
	fflush(stdout);
	line[n++] = '\n';
	if (write(ctl, line, (size_t)n) != n)
		die("write to the guest's serial port: %s", strerror(errno));
}

static void monitor(const char *cmd)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	char buf[4096];
	ssize_t n;

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", mon_path);
	if (connect(s, (struct sockaddr *)&a, sizeof(a)) < 0)
		die("monitor %s: %s", mon_path, strerror(errno));
	usleep(100000);
	n = read(s, buf, sizeof(buf)); /* the banner */
	if (write(s, cmd, strlen(cmd)) < 0 || write(s, "\n", 1) < 0)
		die("monitor write");
	usleep(200000);
	n = read(s, buf, sizeof(buf) - 1);
	(void)n;
	close(s);
}

static void command(char *line)
{
	unsigned tag, count, len, ms, window = 0, bad, len2 = 0;
	char arg[16];

	printf("wire: < %s\n", line);
	fflush(stdout);
	if (sscanf(line, "RX %u %u %u", &tag, &count, &len) == 3 && tag < 256 && len >= WIRE_HDR &&
	    len <= WIRE_MAX) {
		unsigned sent = send_frames(tag, count, len, now() + 60, 0);

		reply("OK RX %u sent=%u", tag, sent);
	} else if (sscanf(line, "WAIT %u %u %u", &tag, &count, &ms) == 3 && tag < 256) {
		double end = now() + ms / 1000.0;

		rx_all();
		while (stats[tag].rx < count && now() < end) {
			struct pollfd p = {.fd = dg, .events = POLLIN};

			poll(&p, 1, 10);
			rx_all();
		}
		reply("STAT %u rx=%llu bad=%llu order=%llu bytes=%llu", tag,
		      (unsigned long long)stats[tag].rx, (unsigned long long)stats[tag].bad,
		      (unsigned long long)stats[tag].order, (unsigned long long)stats[tag].bytes);
	} else if (sscanf(line, "STAT %u", &tag) == 1 && tag < 256) {
		rx_all();
		reply("STAT %u rx=%llu bad=%llu order=%llu bytes=%llu", tag,
		      (unsigned long long)stats[tag].rx, (unsigned long long)stats[tag].bad,
		      (unsigned long long)stats[tag].order, (unsigned long long)stats[tag].bytes);
	} else if (sscanf(line, "ECHO %u %u %u %u %u", &tag, &count, &len, &ms, &window) >= 4 &&
		   tag < 256 && len >= WIRE_HDR && len <= WIRE_MAX) {
		double end = now() + ms / 1000.0;
		unsigned sent = send_frames(tag, count, len, end, window);

		while (stats[tag].rx < count && now() < end) {
			struct pollfd p = {.fd = dg, .events = POLLIN};

			poll(&p, 1, 10);
			rx_all();
		}
		reply("ECHO %u sent=%u back=%llu bad=%llu order=%llu", tag, sent,
		      (unsigned long long)stats[tag].rx, (unsigned long long)stats[tag].bad,
		      (unsigned long long)stats[tag].order);
	} else if (sscanf(line, "CRX %u %u %u %u %u", &tag, &count, &len, &bad, &len2) >= 4 &&
		   tag < 256 && len >= CSUM_MIN_LEN && len <= WIRE_MAX && bad <= 2 &&
		   (len2 == 0 || (len2 >= CSUM_MIN_LEN && len2 <= WIRE_MAX))) {
		static uint8_t b[WIRE_MAX];
		unsigned i;

		for (i = 0; i < count; i++) {
			unsigned l = len2 && i % 3 == 2 ? len2 : len;

			csum_fill(b, l, (uint8_t)tag, i, wire_guest_mac, wire_host_mac, (int)bad);
			if (!tx_one(b, l, now() + 60))
				break;
			if ((i & 63) == 0)
				rx_all();
		}
		reply("OK CRX %u sent=%u", tag, i);
	} else if (sscanf(line, "CWAIT %u %u %u", &tag, &count, &ms) == 3 && tag < 256) {
		double end = now() + ms / 1000.0;

		rx_all();
		while (cstats[tag].rx < count && now() < end) {
			struct pollfd p = {.fd = dg, .events = POLLIN};

			poll(&p, 1, 10);
			rx_all();
		}
		reply("CSTAT %u rx=%llu badip=%llu badl4=%llu badpay=%llu order=%llu", tag,
		      (unsigned long long)cstats[tag].rx, (unsigned long long)cstats[tag].bad_ip,
		      (unsigned long long)cstats[tag].bad_l4, (unsigned long long)cstats[tag].bad_pay,
		      (unsigned long long)cstats[tag].order);
	} else if (sscanf(line, "LINK %15s", arg) == 1 &&
		   (strcmp(arg, "on") == 0 || strcmp(arg, "off") == 0)) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "set_link %s %s", netdev, arg);
		monitor(cmd);
		reply("OK LINK %s", arg);
	} else if (sscanf(line, "REFLECT %15s", arg) == 1) {
		reflect = strcmp(arg, "on") == 0;
		reply("OK REFLECT %s reflected=%llu", arg, (unsigned long long)reflected);
	} else if (strcmp(line, "FAULTS") == 0) {
		FILE *f = fopen(qemu_err, "r");
		char l[1024];
		unsigned n = 0;

		while (f && fgets(l, sizeof(l), f))
			n += strstr(l, "vtd_") != NULL;
		if (f)
			fclose(f);
		reply("FAULTS %u", n);
	} else if (strcmp(line, "BYE") == 0) {
		rx_all();
		printf("wire: BYE frames to the guest %llu, from it %llu, foreign %llu, reflected "
		       "%llu\n", (unsigned long long)total_tx, (unsigned long long)total_rx,
		       (unsigned long long)foreign, (unsigned long long)reflected);
		exit(0);
	} else {
		reply("ERR %s", line);
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_un h = {.sun_family = AF_UNIX}, c = {.sun_family = AF_UNIX};
	int lst, sb = 4 << 20;
	char line[512];
	size_t used = 0;

	if (argc != 8) {
		fprintf(stderr, "usage: wire HOST_SOCK QEMU_SOCK CTL_SOCK MONITOR_SOCK NETDEV SECONDS "
				"QEMU_STDERR\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	deadline = now() + atof(argv[6]);
	mon_path = argv[4];
	netdev = argv[5];
	qemu_err = argv[7];
	dg = socket(AF_UNIX, SOCK_DGRAM, 0);
	snprintf(h.sun_path, sizeof(h.sun_path), "%s", argv[1]);
	qaddr.sun_family = AF_UNIX;
	snprintf(qaddr.sun_path, sizeof(qaddr.sun_path), "%s", argv[2]);
	unlink(argv[1]);
	if (bind(dg, (struct sockaddr *)&h, sizeof(h)) < 0)
		die("bind %s: %s", argv[1], strerror(errno));
	setsockopt(dg, SOL_SOCKET, SO_SNDBUF, &sb, sizeof(sb));
	setsockopt(dg, SOL_SOCKET, SO_RCVBUF, &sb, sizeof(sb));
	lst = socket(AF_UNIX, SOCK_STREAM, 0);
	snprintf(c.sun_path, sizeof(c.sun_path), "%s", argv[3]);
	unlink(argv[3]);
	if (bind(lst, (struct sockaddr *)&c, sizeof(c)) < 0 || listen(lst, 1) < 0)
		die("listen %s: %s", argv[3], strerror(errno));
	printf("wire: ready\n");
	for (;;) {
		struct pollfd p = {.fd = lst, .events = POLLIN};

		if (poll(&p, 1, 100) > 0)
			break;
		check_deadline();
	}
	ctl = accept(lst, NULL, NULL);
	if (ctl < 0)
		die("accept: %s", strerror(errno));
	for (;;) {
		struct pollfd p[2] = {{.fd = ctl, .events = POLLIN}, {.fd = dg, .events = POLLIN}};
		ssize_t n;

		check_deadline();
		if (poll(p, 2, 100) <= 0)
			continue;
		if (p[1].revents)
			rx_all();
		if (!p[0].revents)
			continue;
		n = read(ctl, line + used, sizeof(line) - 1 - used);
		if (n <= 0)
			die("the guest's serial port closed (guest gone?)");
		used += (size_t)n;
		for (;;) {
			char *nl = memchr(line, '\n', used);
			size_t k;

			if (nl == NULL)
				break;
			*nl = '\0';
			k = (size_t)(nl - line) + 1;
			if (nl > line && nl[-1] == '\r')
				nl[-1] = '\0';
			if (line[0])
				command(line);
			memmove(line, line + k, used - k);
			used -= k;
		}
		if (used == sizeof(line) - 1)
			used = 0; /* a line too long: noise on the port */
	}
}
