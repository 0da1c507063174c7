/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vkern_test: the virtio driver's vhost-kernel transport against the Linux kernel's
 * vhost-net and its network stack, over a tap. Runs in the QEMU guest of
 * tests/vhost_kernel/run.sh, and on the host where /dev/vhost-net exists (else exit 77).
 *
 * The tap gets 10.77.0.1/24 and an MTU of 9000; tide is 10.77.0.2 (a static neighbour on
 * the kernel's side: UDP) and 10.77.0.3 (tide answers the kernel's ARP: ping). The pool is
 * a private one (not memfd-shared): the kernel reads the process's memory directly.
 *
 *   udp_tx_SIZE    tide sends COUNT UDP frames of SIZE bytes to a socket of the kernel's:
 *                  every one arrives, payload intact
 *   udp_rx_SIZE    the kernel sends COUNT datagrams to 10.77.0.2: tide receives exactly
 *                  COUNT, payload intact (8000 bytes: over mergeable receive buffers)
 *   ping_SIZE      busybox ping -c PINGS to 10.77.0.3: "PINGS packets received"
 *   link           the tap's state: up after start, down and up again with the tap
 *   intr           Rx interrupts: enabled, the queue's fd wakes a poll() when the kernel
 *                  sends; disabled, it stays quiet (also with the event index)
 *   restart        stop/start 5 times while the kernel sends; pools whole after each stop
 *   close          no fd left open, the tap tide made is gone
 *   existing       a persistent tap made beforehand (event_idx=yes, mrg_rxbuf=no): used
 *                  both ways, then left as found (down)
 *   multiqueue     queues=2 on a multi-queue tap: exact counts over both pairs; then one
 *                  pair in use of the two: exact counts (no flow steered to the idle queue)
 *   tcp_echo       with checksum, TSO and LRO offloads on the queues: a TCP connection of the
 *                  kernel's to a minimal echo in tide (IP_PING:7000); the kernel sends 2 MiB
 *                  and reads them back, every byte checked; the kernel's GSO packets and
 *                  partial checksums arrive whole (Rx LRO), tide's echo goes out as TSO
 *                  packets with partial checksums; nothing done in software, nothing
 *                  refused
 *
 * Prints "VKTEST NAME ok|FAIL detail"; exit 0 when every check passed.
 * usage: vkern_test [COUNT [PINGS]]
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/if_tun.h>

#include <tide/lcore.h>
#include <tide/log.h>
#include <tide/mbuf.h>
#include <tide/offload.h>
#include <tide/pool.h>
#include <tide/port.h>

#define TAP	  "tvk0"
#define TAP_OLD	  "tvkp"
#define TAP_MQ	  "tvkm"
#define IP_TAP	  "10.77.0.1"
#define IP_UDP	  "10.77.0.2"
#define IP_PING	  "10.77.0.3"
#define PORT_TIDE 9000
#define PORT_KERN 9001
#define PORT_BLAST 8999 /* restart's stream: frames left in the tap's queue count as other */
#define FRAME_MAX 9018
#define MAXQ	  2

static unsigned count = 1000, pings = 50;
static int failures, sock = -1;
static struct tide_port *port;
static struct tide_pool *pool;
static unsigned nq = 1;
static uint8_t me[6], tapmac[6];
static uint32_t ip_tap, ip_udp, ip_ping;

/* What the receive side saw. */
static struct {
	unsigned udp, bad, arp, echo, other;
	unsigned want_len;
	uint8_t *seen;
	unsigned per_q[MAXQ];
} rx;

static void check(bool ok, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void check(bool ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("VKTEST %s %s ", name, ok ? "ok" : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	failures += !ok;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- the kernel's side: interface settings ---- */

static int ifr_ioctl(const char *name, unsigned long req, struct ifreq *ifr)
{
	snprintf(ifr->ifr_name, sizeof(ifr->ifr_name), "%s", name);
	return ioctl(sock, req, ifr) < 0 ? -errno : 0;
}

static int if_up(const char *name, bool up)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	if (ifr_ioctl(name, SIOCGIFFLAGS, &ifr) < 0)
		return -errno;
	ifr.ifr_flags = (short)(up ? ifr.ifr_flags | IFF_UP : ifr.ifr_flags & ~IFF_UP);
	return ifr_ioctl(name, SIOCSIFFLAGS, &ifr);
}

static short if_flags(const char *name)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	return ifr_ioctl(name, SIOCGIFFLAGS, &ifr) < 0 ? 0 : ifr.ifr_flags;
}

static void set_sysctl(const char *path, const char *v)
{
	int fd = open(path, O_WRONLY);

	if (fd >= 0) {
		if (write(fd, v, strlen(v)) < 0) {
			/* best effort: only quietens the tap */
		}
		close(fd);
	}
}

/* Address, MTU, IPv6 off (no stray solicitations), the static neighbour for IP_UDP. */
static int tap_config(const char *name)
{
	struct ifreq ifr;
	struct arpreq ar;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;
	char path[128];
	int rc;

	snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/disable_ipv6", name);
	set_sysctl(path, "1");
	memset(&ifr, 0, sizeof(ifr));
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = ip_tap;
	if ((rc = ifr_ioctl(name, SIOCSIFADDR, &ifr)) < 0)
		return rc;
	sin->sin_addr.s_addr = htonl(0xffffff00);
	if ((rc = ifr_ioctl(name, SIOCSIFNETMASK, &ifr)) < 0)
		return rc;
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_mtu = 9000;
	if ((rc = ifr_ioctl(name, SIOCSIFMTU, &ifr)) < 0)
		return rc;
	memset(&ifr, 0, sizeof(ifr));
	if ((rc = ifr_ioctl(name, SIOCGIFHWADDR, &ifr)) < 0)
		return rc;
	memcpy(tapmac, ifr.ifr_hwaddr.sa_data, 6);
	memset(&ar, 0, sizeof(ar));
	((struct sockaddr_in *)&ar.arp_pa)->sin_family = AF_INET;
	((struct sockaddr_in *)&ar.arp_pa)->sin_addr.s_addr = ip_udp;
	ar.arp_ha.sa_family = ARPHRD_ETHER;
	memcpy(ar.arp_ha.sa_data, me, 6);
	ar.arp_flags = ATF_PERM | ATF_COM;
	snprintf(ar.arp_dev, sizeof(ar.arp_dev), "%s", name);
	return ioctl(sock, SIOCSARP, &ar) < 0 ? -errno : 0;
}

/* A persistent tap made outside tide (as `ip tuntap add` does), or removed. */
static int tap_persist(const char *name, bool on, bool mq)
{
	struct ifreq ifr;
	int fd = open("/dev/net/tun", O_RDWR), rc = 0;

	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR | (mq ? IFF_MULTI_QUEUE : 0);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0 || ioctl(fd, TUNSETPERSIST, on ? 1 : 0) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

static unsigned fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned n = 0;

	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

/* ---- frames ---- */

static uint16_t csum(const void *p, unsigned len, uint32_t sum)
{
	const uint8_t *b = p;

	for (unsigned i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)b[i] << 8 | b[i + 1];
	if (len & 1)
		sum += (uint32_t)b[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void fill(uint8_t *b, uint32_t seq, unsigned size)
{
	uint32_t n = htonl(seq);

	memcpy(b, &n, 4);
	for (unsigned i = 4; i < size; i++)
		b[i] = (uint8_t)(seq * 7 + i);
}

/* An Ethernet + IPv4 header for @plen bytes of @proto payload, tide to the kernel. */
static void ip_hdr(uint8_t *f, uint32_t src, uint8_t proto, unsigned plen)
{
	memcpy(f, tapmac, 6);
	memcpy(f + 6, me, 6);
	put16(f + 12, 0x0800);
	memset(f + 14, 0, 20);
	f[14] = 0x45;
	put16(f + 16, (uint16_t)(20 + plen));
	f[22] = 64;
	f[23] = proto;
	memcpy(f + 26, &src, 4);
	memcpy(f + 30, &ip_tap, 4);
	put16(f + 24, csum(f + 14, 20, 0));
}

/* @len bytes of @f as one packet: a chain of the pool's mbufs when it is larger than one. */
static struct tide_mbuf *mk_pkt(const uint8_t *f, unsigned len)
{
	unsigned room = tide_pktpool_data_room(pool), off = 0;
	struct tide_mbuf *head = NULL;

	while (off < len) {
		unsigned n = len - off < room ? len - off : room;
		struct tide_mbuf *m = tide_mbuf_alloc(pool);

		if (m == NULL) {
			if (head)
				tide_mbuf_free(head);
			return NULL;
		}
		memcpy(tide_mbuf_append(m, (uint16_t)n), f + off, n);
		if (head == NULL)
			head = m;
		else
			tide_mbuf_chain(head, m);
		off += n;
	}
	return head;
}

static void send_pkts(unsigned q, struct tide_mbuf **m, unsigned n);

static void send_frame(unsigned q, const uint8_t *f, unsigned len)
{
	struct tide_mbuf *m = mk_pkt(f, len);

	if (m != NULL)
		send_pkts(q, &m, 1);
}

/* ---- tide's receive side: UDP counting, ARP and echo answers ---- */

/* tcp_echo's end in tide (below): a TCP echo at IP_PING:TCP_PORT that acknowledges
 * in-order data and sends it back as TSO packets; no retransmission of its own (the tap
 * loses nothing tide sends), a segment out of order is dropped and the kernel sends it
 * again. */
static struct {
	bool on, open;
	uint16_t peer_port;
	uint32_t rcv_nxt, snd_nxt;
	uint64_t got, gso_in, partial_in, big_in, tso_out, bad;
	uint32_t ol; /* the received packet's ol_flags */
} tcp;

static void tcp_handle(unsigned q, const uint8_t *f, unsigned len);

static void handle(unsigned q, const uint8_t *f, unsigned len)
{
	static uint8_t r[FRAME_MAX];
	uint32_t dst;

	if (len >= 42 && get16(f + 12) == 0x0806 && get16(f + 20) == 1) {
		memcpy(&dst, f + 38, 4);
		if (dst != ip_ping && dst != ip_udp)
			goto other;
		memcpy(r, f + 6, 6);
		memcpy(r + 6, me, 6);
		memcpy(r + 12, f + 12, 8);
		put16(r + 20, 2);
		memcpy(r + 22, me, 6);
		memcpy(r + 28, &dst, 4);
		memcpy(r + 32, f + 22, 10);
		rx.arp++;
		send_frame(q, r, 42);
		return;
	}
	if (len < 34 || get16(f + 12) != 0x0800 || f[14] != 0x45)
		goto other;
	memcpy(&dst, f + 30, 4);
	if (f[23] == 1 && dst == ip_ping && len >= 42 && f[34] == 8) {
		unsigned ilen = get16(f + 16) - 20u;

		if (ilen + 34 > len)
			goto other;
		memcpy(r, f, 34 + ilen);
		memcpy(r, f + 6, 6);
		memcpy(r + 6, me, 6);
		memcpy(r + 26, f + 30, 4);
		memcpy(r + 30, f + 26, 4);
		put16(r + 24, 0);
		put16(r + 24, csum(r + 14, 20, 0));
		r[34] = 0;
		put16(r + 36, 0);
		put16(r + 36, csum(r + 34, ilen, 0));
		rx.echo++;
		send_frame(q, r, 34 + ilen);
		return;
	}
	if (f[23] == 6 && dst == ip_ping && tcp.on) {
		tcp_handle(q, f, len);
		return;
	}
	if (f[23] == 17 && dst == ip_udp && len >= 42 && get16(f + 36) == PORT_TIDE) {
		unsigned plen = get16(f + 38) - 8u;
		uint32_t seq;
		static uint8_t want[FRAME_MAX];

		if (plen != rx.want_len || plen + 42 > len) {
			rx.bad++;
			return;
		}
		memcpy(&seq, f + 42, 4);
		seq = ntohl(seq);
		fill(want, seq, plen);
		if (seq >= count || memcmp(f + 42, want, plen) != 0 || rx.seen[seq]) {
			rx.bad++;
			return;
		}
		rx.seen[seq] = 1;
		rx.udp++;
		rx.per_q[q]++;
		return;
	}
other:
	rx.other++;
}

/* One Rx burst on every queue; each packet copied out, handled and freed. */
static unsigned service(void)
{
	static uint8_t f[65536 + 64]; /* a GSO packet with Rx LRO */
	struct tide_mbuf *m[32];
	unsigned total = 0;

	for (unsigned q = 0; q < nq; q++) {
		uint16_t n = tide_rx_burst(tide_port_rxq(port, q), m, 32);

		for (unsigned i = 0; i < n; i++) {
			unsigned len = m[i]->pkt_len;

			tcp.ol = m[i]->ol_flags;
			if (len <= sizeof(f) && tide_mbuf_read(m[i], 0, len, f) == 0)
				handle(q, f, len);
			else
				rx.bad++;
			tide_mbuf_free(m[i]);
		}
		total += n;
	}
	return total;
}

/* Send every packet, serving Rx meanwhile (the kernel's answers need buffers). */
static void send_pkts(unsigned q, struct tide_mbuf **m, unsigned n)
{
	double end = now() + 5;
	unsigned done = 0;

	while (done < n && now() < end) {
		done += tide_tx_burst(tide_port_txq(port, q), m + done, (uint16_t)(n - done));
		if (done < n)
			tide_txq_done_cleanup(tide_port_txq(port, q), 0);
	}
	if (done < n)
		tide_mbuf_free_bulk(m + done, n - done);
}

/* ---- the port ---- */

static int port_open(const char *spec, unsigned queues)
{
	struct tide_port_info info;
	int rc;

	nq = queues;
	if ((rc = tide_port_open(spec, &port)) < 0)
		return rc;
	tide_port_info_get(port, &info);
	memcpy(me, info.mac, 6);
	if ((rc = tide_port_configure(port, queues, queues)) < 0)
		return rc;
	for (unsigned q = 0; q < queues; q++)
		if ((rc = tide_rxq_setup(port, q, 256, pool, NULL)) < 0 ||
		    (rc = tide_txq_setup(port, q, 256, NULL)) < 0)
			return rc;
	return tide_port_start(port);
}

static bool pool_whole(void)
{
	struct tide_pool_audit a;

	tide_pool_cache_flush(pool);
	return tide_pool_audit(pool, &a) == 0 && a.free == a.n && a.duplicates == 0;
}

static int udp_socket(uint16_t port_no)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0), big = 8 << 20;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port_no),
				 .sin_addr.s_addr = ip_tap};

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof(big));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* tide -> kernel: @n UDP frames of @size bytes spread over the Tx queues; the socket gets
 * every one, payload intact. */
static void udp_tx(const char *name, unsigned n, unsigned size)
{
	static uint8_t f[FRAME_MAX], got[FRAME_MAX];
	unsigned plen = size - 42, sent = 0, recvd = 0, bad = 0;
	uint8_t *seen = calloc(n, 1);
	int fd = udp_socket(PORT_KERN);
	double end = now() + 20;

	while ((sent < n || recvd < n) && now() < end) {
		struct tide_mbuf *m[16];
		unsigned k = 0;

		while (sent + k < n && k < 16 && sent - recvd + k < 128) {
			ip_hdr(f, ip_udp, 17, 8 + plen);
			put16(f + 34, PORT_TIDE);
			put16(f + 36, PORT_KERN);
			put16(f + 38, (uint16_t)(8 + plen));
			put16(f + 40, 0);
			fill(f + 42, sent + k, plen);
			m[k] = mk_pkt(f, size);
			if (m[k] == NULL)
				break;
			k++;
		}
		send_pkts((sent / 16) % nq, m, k);
		sent += k;
		service();
		for (;;) {
			ssize_t r = recv(fd, got, sizeof(got), 0);
			uint32_t seq;

			if (r < 0)
				break;
			memcpy(&seq, got, 4);
			seq = ntohl(seq);
			fill(f, seq, plen);
			if ((unsigned)r != plen || seq >= n || seen[seq] || memcmp(got, f, plen) != 0) {
				bad++;
				continue;
			}
			seen[seq] = 1;
			recvd++;
		}
	}
	check(recvd == n && bad == 0, name, "sent=%u received=%u bad=%u", sent, recvd, bad);
	free(seen);
	if (fd >= 0)
		close(fd);
}

/* kernel -> tide: @n datagrams of a @size-byte frame from @flows source ports. */
static void udp_rx(const char *name, unsigned n, unsigned size, unsigned flows)
{
	static uint8_t b[FRAME_MAX];
	unsigned plen = size - 42, sent = 0;
	int fds[16];
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(PORT_TIDE),
				 .sin_addr.s_addr = ip_udp};
	double end = now() + 20;

	for (unsigned i = 0; i < flows; i++)
		fds[i] = udp_socket((uint16_t)(PORT_KERN + 1 + i));
	memset(&rx, 0, sizeof(rx));
	rx.want_len = plen;
	rx.seen = calloc(count > n ? count : n, 1);
	while (rx.udp < n && now() < end) {
		for (unsigned k = 0; k < 32 && sent < n && sent - rx.udp - rx.bad < 64; k++, sent++) {
			fill(b, sent, plen);
			if (sendto(fds[sent % flows], b, plen, 0, (struct sockaddr *)&to, sizeof(to)) < 0) {
				sent--;
				break;
			}
		}
		service();
	}
	for (double t = now() + 0.2; now() < t;)
		service(); /* nothing more may come */
	if (nq == 1)
		check(rx.udp == n && rx.bad == 0, name, "sent=%u received=%u bad=%u arp=%u other=%u",
		      sent, rx.udp, rx.bad, rx.arp, rx.other);
	else
		check(rx.udp == n && rx.bad == 0 && rx.per_q[0] + rx.per_q[1] == n && rx.per_q[0] &&
			      rx.per_q[1],
		      name,
		      "sent=%u received=%u (queue 0: %u, queue 1: %u) bad=%u", sent, rx.udp,
		      rx.per_q[0], rx.per_q[1], rx.bad);
	for (unsigned i = 0; i < flows; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(rx.seen);
	rx.seen = NULL;
}

/* The kernel sends datagrams @first..@first+@n-1 of 22 bytes to tide. */
static void kern_send(int fd, uint32_t first, unsigned n)
{
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(PORT_TIDE),
				 .sin_addr.s_addr = ip_udp};
	uint8_t b[22];

	for (uint32_t i = first; i < first + n; i++) {
		fill(b, i, sizeof(b));
		if (sendto(fd, b, sizeof(b), 0, (struct sockaddr *)&to, sizeof(to)) < 0)
			rx.bad++;
	}
}

/* Until tide has received @n datagrams (5 s at most), then 100 ms more for stragglers. */
static void rx_until(unsigned n)
{
	for (double end = now() + 5; rx.udp < n && now() < end;)
		service();
	usleep(100000);
	service();
}

/*
 * Rx interrupts: asleep on the queue's fd, woken by a datagram of the kernel's; quiet while
 * disabled, both after a wake-up (the device's index past the event) and after an enable
 * that found nothing (the index at the event); a signal from before an enable (the kernel
 * signals a vring's first used entry regardless) does not wake.
 */
static void intr_check(const char *name)
{
	int ifd = tide_rxq_intr_fd(port, 0), fd = udp_socket(PORT_KERN + 1), en, dis, en2, dis2,
	    early, woke, cleared, quiet, quiet2;
	struct pollfd pf = {.fd = ifd, .events = POLLIN};

	for (double q = now() + 0.3; now() < q;)
		if (service() > 0)
			q = now() + 0.3;
	memset(&rx, 0, sizeof(rx));
	rx.want_len = 22;
	rx.seen = calloc(count, 1);
	en = tide_rxq_intr_enable(port, 0);
	service(); /* the burst after enabling: nothing came */
	early = poll(&pf, 1, 0);
	kern_send(fd, 0, 1);
	woke = poll(&pf, 1, 3000);
	dis = tide_rxq_intr_disable(port, 0);
	cleared = poll(&pf, 1, 0);
	kern_send(fd, 1, 10);
	rx_until(11);
	quiet = poll(&pf, 1, 0);
	/* Enabled and disabled again with nothing received meanwhile. */
	en2 = tide_rxq_intr_enable(port, 0);
	service();
	dis2 = tide_rxq_intr_disable(port, 0);
	kern_send(fd, 11, 10);
	rx_until(21);
	quiet2 = poll(&pf, 1, 0);
	check(ifd >= 0 && en == 0 && dis == 0 && en2 == 0 && dis2 == 0 && early == 0 && woke == 1 &&
		      cleared == 0 && quiet == 0 && quiet2 == 0 && rx.udp == 21 && rx.bad == 0,
	      name, "fd=%d enable=%d: readable %d before, woken %d after a datagram; disable=%d: readable %d, %d after 10 more; enable=%d, disable=%d: readable %d after 10 more; received %u bad %u",
	      ifd, en, early, woke, dis, cleared, quiet, en2, dis2, quiet2, rx.udp, rx.bad);
	free(rx.seen);
	rx.seen = NULL;
	if (fd >= 0)
		close(fd);
}

/* busybox ping -c @n -s @data IP_PING while tide answers; "N packets received". */
static void ping_run(const char *name, unsigned data)
{
	char cnt[16], sz[16], out[4096];
	int pfd[2];
	size_t have = 0;
	pid_t pid;
	int st = -1;
	unsigned tx = 0, got = 0;
	char *s;

	snprintf(cnt, sizeof(cnt), "%u", pings);
	snprintf(sz, sizeof(sz), "%u", data);
	if (pipe(pfd) < 0)
		return;
	fcntl(pfd[0], F_SETFL, O_NONBLOCK);
	memset(&rx, 0, sizeof(rx));
	pid = fork();
	if (pid == 0) {
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		execlp("ping", "ping", "-A", "-q", "-W", "2", "-c", cnt, "-s", sz, IP_PING, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	for (double end = now() + 60; now() < end;) {
		ssize_t r;

		service();
		r = read(pfd[0], out + have, sizeof(out) - 1 - have);
		if (r > 0)
			have += (size_t)r;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			pid = 0;
			break;
		}
	}
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	for (ssize_t r; (r = read(pfd[0], out + have, sizeof(out) - 1 - have)) > 0;)
		have += (size_t)r;
	close(pfd[0]);
	out[have] = '\0';
	s = strstr(out, "packets transmitted");
	if (s != NULL) {
		while (s > out && s[-1] != '\n')
			s--;
		sscanf(s, "%u packets transmitted, %u packets received", &tx, &got);
	}
	check(tx == pings && got == pings && rx.echo == pings, name,
	      "%u packets transmitted, %u packets received (tide answered %u echo requests, %u ARP requests)",
	      tx, got, rx.echo, rx.arp);
	if (got != pings)
		printf("%s", out);
}

/* The kernel sends to IP_UDP until told to stop (for restart). */
static volatile int blast_on;

static void *blast(void *arg)
{
	uint8_t b[64] = {0};
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(PORT_BLAST),
				 .sin_addr.s_addr = ip_udp};
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	unsigned long *n = arg;

	while (__atomic_load_n(&blast_on, __ATOMIC_RELAXED)) {
		if (sendto(fd, b, sizeof(b), MSG_DONTWAIT, (struct sockaddr *)&to, sizeof(to)) > 0)
			(*n)++;
		else
			usleep(100);
	}
	close(fd);
	return NULL;
}

static void restart(void)
{
	pthread_t th;
	unsigned long blasted = 0;
	unsigned got = 0, whole = 0;
	struct tide_link l;
	int rc = 0;

	blast_on = 1;
	pthread_create(&th, NULL, blast, &blasted);
	for (unsigned i = 0; i < 5 && rc == 0; i++) {
		for (double t = now() + 0.2; now() < t;)
			got += service();
		rc = tide_port_stop(port);
		whole += rc == 0 && pool_whole();
		if (rc == 0)
			rc = tide_port_start(port);
	}
	blast_on = 0;
	pthread_join(th, NULL);
	tide_port_link_get(port, &l);
	check(rc == 0 && whole == 5 && got > 0 && l.up, "restart",
	      "5 stops under traffic: pool whole after %u, %u frames received of %lu sent, rc=%d, link %s",
	      whole, got, blasted, rc, l.up ? "up" : "down");
	/* The tap and its settings stayed through the restarts: exact counts again, once the
	 * stream's frames still queued in the tap are drained. */
	for (double quiet = now() + 0.3; now() < quiet;)
		if (service() > 0)
			quiet = now() + 0.3;
	udp_rx("restart_after", 200, 64, 1);
}

static void link_state(void)
{
	struct tide_link a, b, c;

	tide_port_link_get(port, &a);
	if_up(TAP, false);
	tide_port_link_get(port, &b);
	if_up(TAP, true);
	tide_port_link_get(port, &c);
	check(a.up && !b.up && c.up, "link", "after start %d, tap down %d, tap up %d", a.up, b.up,
	      c.up);
}

static void existing_tap(void)
{
	char spec[128];
	bool there, down;
	int rc;

	if ((rc = tap_persist(TAP_OLD, true, false)) < 0) {
		check(false, "existing", "cannot make a persistent tap: %s", strerror(-rc));
		return;
	}
	snprintf(spec, sizeof(spec), "virtio:path=/dev/vhost-net,iface=%s,event_idx=yes,mrg_rxbuf=no",
		 TAP_OLD);
	rc = port_open(spec, 1);
	if (rc == 0 && (rc = tap_config(TAP_OLD)) == 0) {
		udp_rx("existing_rx", 100, 1400, 1);
		udp_tx("existing_tx", 100, 1400);
		intr_check("intr_event_idx");
	}
	tide_port_close(port);
	port = NULL;
	there = if_nametoindex(TAP_OLD) != 0;
	down = !(if_flags(TAP_OLD) & IFF_UP);
	check(rc == 0 && there && down, "existing",
	      "rc=%d; after close the tap is %s and %s (it was made down and persistent)", rc,
	      there ? "there" : "gone", down ? "down" : "up");
	tap_persist(TAP_OLD, false, false);
}

static void multiqueue(void)
{
	char spec[128];
	int rc;

	snprintf(spec, sizeof(spec), "virtio:path=/dev/vhost-net,iface=%s,queues=2", TAP_MQ);
	rc = port_open(spec, 2);
	if (rc == 0 && (rc = tap_config(TAP_MQ)) == 0) {
		udp_rx("multiqueue_rx", count, 64, 16);
		udp_tx("multiqueue_tx", count, 64);
	}
	/* One pair in use of the two: the tap steers no flow to the other queue. */
	if (rc == 0 && (rc = tide_port_stop(port)) == 0 && (rc = tide_port_configure(port, 1, 1)) == 0)
		rc = tide_port_start(port);
	if (rc == 0) {
		nq = 1;
		udp_rx("multiqueue_one_pair", count, 64, 16);
	}
	check(rc == 0, "multiqueue", "rc=%d", rc);
	tide_port_close(port);
	port = NULL;
	check(if_nametoindex(TAP_MQ) == 0 && pool_whole(), "multiqueue_close",
	      "tap %s, pool %s", if_nametoindex(TAP_MQ) ? "left behind" : "gone",
	      pool_whole() ? "whole" : "NOT whole");
}


/* ---- tcp_echo: the kernel's TCP through the tap to tide and back, with offloads ---- */

#define TCP_PORT  7000
#define TCP_BYTES (2u << 20)
#define TCP_MSS	  1448
#define TCP_CHUNK (10 * TCP_MSS) /* echo pieces: chains of at most 8 mbufs, sent in place */


static void tcp_send(unsigned q, const uint8_t *data, unsigned n, uint8_t flags, bool syn)
{
	static uint8_t f[64 + TCP_CHUNK];
	unsigned hl = syn ? 24 : 20;
	struct tide_mbuf *m;
	uint8_t *t = f + 34;

	ip_hdr(f, ip_ping, 6, hl + n);
	f[24] = f[25] = 0; /* the IPv4 header checksum: requested below */
	memset(t, 0, hl);
	put16(t, TCP_PORT);
	put16(t + 2, tcp.peer_port);
	t[4] = (uint8_t)(tcp.snd_nxt >> 24), t[5] = (uint8_t)(tcp.snd_nxt >> 16);
	t[6] = (uint8_t)(tcp.snd_nxt >> 8), t[7] = (uint8_t)tcp.snd_nxt;
	t[8] = (uint8_t)(tcp.rcv_nxt >> 24), t[9] = (uint8_t)(tcp.rcv_nxt >> 16);
	t[10] = (uint8_t)(tcp.rcv_nxt >> 8), t[11] = (uint8_t)tcp.rcv_nxt;
	t[12] = (uint8_t)((hl / 4) << 4);
	t[13] = flags;
	put16(t + 14, 65535);
	if (syn) {
		t[20] = 2, t[21] = 4; /* MSS */
		put16(t + 22, 8960);
	}
	memcpy(t + hl, data, n);
	m = mk_pkt(f, 34 + hl + n);
	if (m == NULL)
		return;
	m->ol_flags = TIDE_MBUF_F_TX_IPV4 | TIDE_MBUF_F_TX_IP_CKSUM | TIDE_MBUF_F_TX_TCP_CKSUM;
	m->l2_len = 14;
	m->l3_len = 20;
	m->l4_len = (uint8_t)hl;
	if (n > TCP_MSS) {
		m->ol_flags |= TIDE_MBUF_F_TX_TCP_SEG;
		m->tso_segsz = TCP_MSS;
		tcp.tso_out++;
	}
	tcp.snd_nxt += n + (syn ? 1 : 0);
	send_pkts(q, &m, 1);
}

/* A TCP segment to IP_PING (frame @f of @len bytes, checksums as the header said). */
static void tcp_handle(unsigned q, const uint8_t *f, unsigned len)
{
	const uint8_t *t = f + 34;
	unsigned iplen = get16(f + 16), hl, n;
	uint32_t seq;

	if (len < 54 || iplen + 14u > len || get16(t + 2) != TCP_PORT) {
		tcp.bad++;
		return;
	}
	hl = (t[12] >> 4) * 4u;
	if (hl < 20 || 20 + hl > iplen) {
		tcp.bad++;
		return;
	}
	n = iplen - 20 - hl;
	seq = (uint32_t)t[4] << 24 | (uint32_t)t[5] << 16 | (uint32_t)t[6] << 8 | t[7];
	if (t[13] & 0x02) { /* SYN (or its retransmission) */
		tcp.open = true;
		tcp.peer_port = get16(t);
		tcp.rcv_nxt = seq + 1;
		tcp.snd_nxt = 1000;
		tcp_send(q, NULL, 0, 0x12, true);
		return;
	}
	if (!tcp.open || get16(t) != tcp.peer_port)
		return;
	if (tcp.ol & TIDE_MBUF_F_TX_TCP_SEG)
		tcp.gso_in++;
	if ((tcp.ol & TIDE_MBUF_F_RX_L4_CKSUM_MASK) == TIDE_MBUF_F_RX_L4_CKSUM_NONE)
		tcp.partial_in++;
	if (n > TCP_MSS)
		tcp.big_in++;
	if (n == 0 && !(t[13] & 0x01))
		return; /* an acknowledgement of ours */
	if (seq != tcp.rcv_nxt) {
		tcp_send(q, NULL, 0, 0x10, false); /* out of order: ask again */
		return;
	}
	tcp.rcv_nxt += n + (t[13] & 0x01 ? 1 : 0);
	tcp.got += n;
	if (n == 0) {
		tcp_send(q, NULL, 0, 0x10, false);
		return;
	}
	/* The data back, in pieces of at most TCP_CHUNK, each acknowledging it. */
	for (unsigned off = 0; off < n; off += TCP_CHUNK)
		tcp_send(q, t + hl + off, n - off < TCP_CHUNK ? n - off : TCP_CHUNK, 0x18, false);
}

struct tcp_client {
	unsigned sent, got, bad;
	int err;
	bool done;
};

static uint8_t tcp_byte(unsigned i)
{
	return (uint8_t)(i * 13 + (i >> 10) + 5);
}

/* The kernel's end: connect, send TCP_BYTES and read them back (both at once, so that
 * neither side's window fills), checking every byte. */
static void *tcp_client_run(void *arg)
{
	struct tcp_client *c = arg;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(TCP_PORT),
				 .sin_addr.s_addr = ip_ping};
	int fd = socket(AF_INET, SOCK_STREAM, 0), big = 4 << 20;
	struct timeval tv = {.tv_sec = 10};
	static uint8_t buf[65536];
	double end = now() + 60;

	if (fd < 0) {
		c->err = errno;
		goto out;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		c->err = errno;
		goto out;
	}
	fcntl(fd, F_SETFL, O_NONBLOCK);
	while (c->got < TCP_BYTES && now() < end) {
		struct pollfd pf = {.fd = fd, .events = POLLIN | (c->sent < TCP_BYTES ? POLLOUT : 0)};
		ssize_t r;

		if (poll(&pf, 1, 100) <= 0)
			continue;
		if ((pf.revents & POLLOUT) && c->sent < TCP_BYTES) {
			unsigned n = TCP_BYTES - c->sent < sizeof(buf) ? TCP_BYTES - c->sent : sizeof(buf);

			for (unsigned i = 0; i < n; i++)
				buf[i] = tcp_byte(c->sent + i);
			r = send(fd, buf, n, 0);
			if (r > 0)
				c->sent += (unsigned)r;
		}
		if (pf.revents & POLLIN) {
			r = recv(fd, buf, sizeof(buf), 0);
			if (r == 0)
				break;
			for (ssize_t i = 0; i < r; i++)
				c->bad += buf[i] != tcp_byte(c->got + (unsigned)i);
			if (r > 0)
				c->got += (unsigned)r;
		}
	}
out:
	if (fd >= 0)
		close(fd);
	__atomic_store_n(&c->done, true, __ATOMIC_RELEASE);
	return NULL;
}

/* Offload counters of the port that must be 0 in the TCP exchange. */
static uint64_t ol_refusals(void)
{
	static const char *const n[] = {
		"virtio_tx_offload_refused", "virtio_rx_hdr_flags", "virtio_rx_hdr_csum_beyond",
		"virtio_rx_hdr_csum_align", "virtio_rx_hdr_csum_field", "virtio_rx_hdr_gso_type",
		"virtio_rx_hdr_gso_size", "virtio_rx_hdr_gso_csum", "virtio_rx_hdr_gso_proto"};
	uint64_t sum = 0;

	for (unsigned i = 0; i < sizeof(n) / sizeof(n[0]); i++) {
		uint64_t v = 1;

		tide_xstats_get_by_name(port, n[i], &v);
		sum += v;
	}
	return sum;
}

static void tcp_echo(void)
{
	struct tide_rxq_conf rc = {.sz = sizeof(rc),
				   .offloads = TIDE_OFFLOAD_RX_TCP_CKSUM | TIDE_OFFLOAD_RX_UDP_CKSUM |
					       TIDE_OFFLOAD_RX_TCP_LRO};
	struct tide_txq_conf tc = {.sz = sizeof(tc),
				   .offloads = TIDE_OFFLOAD_TX_IPV4_CKSUM | TIDE_OFFLOAD_TX_TCP_CKSUM |
					       TIDE_OFFLOAD_TX_TCP_TSO};
	struct tcp_client c = {0};
	uint64_t sw_tso = 1, sw_cksum = 1, refusals;
	pthread_t th;
	int rc_ = 0;
	double t0;

	nq = 1;
	if ((rc_ = tide_port_open("virtio:path=/dev/vhost-net,iface=" TAP, &port)) == 0) {
		struct tide_port_info info;

		tide_port_info_get(port, &info);
		memcpy(me, info.mac, 6);
		if ((rc_ = tide_port_configure(port, 1, 1)) == 0 &&
		    (rc_ = tide_rxq_setup(port, 0, 256, pool, &rc)) == 0 &&
		    (rc_ = tide_txq_setup(port, 0, 256, &tc)) == 0 &&
		    (rc_ = tide_port_start(port)) == 0)
			rc_ = tap_config(TAP);
	}
	if (rc_ != 0) {
		check(false, "tcp_echo", "port: %s", strerror(-rc_));
		if (port != NULL)
			tide_port_close(port);
		port = NULL;
		return;
	}
	memset(&tcp, 0, sizeof(tcp));
	memset(&rx, 0, sizeof(rx));
	tcp.on = true;
	t0 = now();
	if (pthread_create(&th, NULL, tcp_client_run, &c) != 0) {
		check(false, "tcp_echo", "pthread_create");
		return;
	}
	while (!__atomic_load_n(&c.done, __ATOMIC_ACQUIRE))
		service();
	pthread_join(th, NULL);
	tcp.on = false;
	tide_xstats_get_by_name(port, "virtio_tx_sw_tso", &sw_tso);
	tide_xstats_get_by_name(port, "virtio_tx_sw_cksum", &sw_cksum);
	refusals = ol_refusals();
	check(c.err == 0 && c.sent == TCP_BYTES && c.got == TCP_BYTES && c.bad == 0 &&
		      tcp.got == TCP_BYTES && tcp.bad == 0 && tcp.gso_in > 0 && tcp.tso_out > 0 &&
		      sw_tso == 0 && sw_cksum == 0 && refusals == 0,
	      "tcp_echo",
	      "%.1f s: the kernel sent %u bytes and read back %u (%u wrong, error %d); tide received "
	      "%llu bytes: %llu GSO packets, %llu packets above %u payload bytes, %llu partial checksums; sent "
	      "%llu TSO packets; software cut %llu, software checksums %llu, refusals %llu",
	      now() - t0, c.sent, c.got, c.bad, c.err, (unsigned long long)tcp.got,
	      (unsigned long long)tcp.gso_in, (unsigned long long)tcp.big_in, TCP_MSS,
	      (unsigned long long)tcp.partial_in, (unsigned long long)tcp.tso_out,
	      (unsigned long long)sw_tso, (unsigned long long)sw_cksum,
	      (unsigned long long)refusals);
	tide_port_close(port);
	port = NULL;
	check(if_nametoindex(TAP) == 0 && pool_whole(), "tcp_echo_close", "tap %s, pool %s",
	      if_nametoindex(TAP) ? "left behind" : "gone", pool_whole() ? "whole" : "NOT whole");
}

int main(int argc, char **argv)
{
	struct tide_pktpool_opts o = {.sz = sizeof(o)};
	unsigned fds0;
	int rc;

	if (argc > 1)
		count = (unsigned)atoi(argv[1]);
	if (argc > 2)
		pings = (unsigned)atoi(argv[2]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (access("/dev/vhost-net", F_OK) < 0) {
		printf("skip: no /dev/vhost-net (modprobe vhost_net)\n");
		return 77;
	}
	if (access("/dev/net/tun", F_OK) < 0) {
		printf("skip: no /dev/net/tun (modprobe tun)\n");
		return 77;
	}
	if (geteuid() != 0) {
		printf("skip: a tap needs root (CAP_NET_ADMIN)\n");
		return 77;
	}
	if (if_nametoindex(TAP) || if_nametoindex(TAP_OLD) || if_nametoindex(TAP_MQ)) {
		printf("skip: an interface named %s, %s or %s exists already\n", TAP, TAP_OLD, TAP_MQ);
		return 77;
	}
	inet_pton(AF_INET, IP_TAP, &ip_tap);
	inet_pton(AF_INET, IP_UDP, &ip_udp);
	inet_pton(AF_INET, IP_PING, &ip_ping);
	sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	tide_thread_register();
	/* A private pool: the kernel reaches any memory of the process. */
	rc = tide_pktpool_create("vkern", 8192, 256, 2048, &o, &pool);
	if (rc < 0) {
		check(false, "pool", "%s", strerror(-rc));
		return 1;
	}
	fds0 = fd_count();
	rc = port_open("virtio:path=/dev/vhost-net,iface=" TAP, 1);
	if (rc == 0)
		rc = tap_config(TAP);
	check(rc == 0 && if_nametoindex(TAP) != 0, "open", "rc=%d (%s), tap %s", rc,
	      rc ? strerror(-rc) : "-", if_nametoindex(TAP) ? "made" : "missing");
	if (rc != 0)
		return 1;
	link_state();
	intr_check("intr");
	for (unsigned i = 0; i < 3; i++) {
		static const unsigned sizes[] = {64, 1400, 8000};
		char name[32];

		snprintf(name, sizeof(name), "udp_tx_%u", sizes[i]);
		udp_tx(name, count, sizes[i]);
		snprintf(name, sizeof(name), "udp_rx_%u", sizes[i]);
		udp_rx(name, count, sizes[i], 1);
	}
	ping_run("ping_64", 56);
	ping_run("ping_1400", 1372);
	ping_run("ping_8000", 7972);
	restart();
	tide_port_close(port);
	port = NULL;
	check(fd_count() == fds0 && if_nametoindex(TAP) == 0 && pool_whole(), "close",
	      "fds %u before open, %u after close; tap %s; pool %s", fds0, fd_count(),
	      if_nametoindex(TAP) ? "left behind" : "gone", pool_whole() ? "whole" : "NOT whole");
	existing_tap();
	multiqueue();
	tcp_echo();
	tide_pool_free(pool);
	tide_thread_unregister();
	printf("VKTEST done failures=%d\n", failures);
	return failures ? 1 : 0;
}
