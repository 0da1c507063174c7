/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost_guest_udp: the guest side of the QEMU test (built static, runs as a tool of the
 * test's initramfs). A counted UDP stream through ordinary sockets, so that the guest's
 * whole stack and its virtio_net driver carry it.
 *
 *   vhost_guest_udp send IP PORT COUNT SIZE    send COUNT datagrams of SIZE bytes, each
 *                                              starting with its sequence number, paced
 *   vhost_guest_udp recv PORT COUNT SECONDS    count datagrams until COUNT arrived or
 *                                              SECONDS passed; check each payload; after
 *                                              every ACK_EVERY datagrams (and the last)
 *                                              send the count so far (4 bytes, network
 *                                              order) back to the sender: its window
 *
 *   vhost_guest_udp frame IFNAME SIZE COUNT SECONDS
 *                                              send COUNT Ethernet frames of SIZE bytes
 *                                              (to the interface's own MAC, EtherType
 *                                              0x88b5) one at a time through a packet
 *                                              socket, and wait up to SECONDS for each to
 *                                              come back (a forwarder that returns the
 *                                              port's frames to it); check each
 *
 * Prints "VHT SEND sent=N", "VHT RECV got=N bad=B" or "VHT FRAME size=S sent=N got=G
 * bad=B". Payload byte i of datagram (frame) s is (s * 7 + i) & 0xff after the 4-byte
 * sequence number (network order; in a frame, after the Ethernet header).
 */
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define ACK_EVERY  16
#define FRAME_MAX  9018	  /* an MTU of 9000 with a VLAN tag */
#define FRAME_TYPE 0x88b5 /* IEEE local experimental EtherType */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void fill(uint8_t *b, uint32_t seq, unsigned size)
{
	uint32_t n = htonl(seq);

	memcpy(b, &n, 4);
	for (unsigned i = 4; i < size; i++)
		b[i] = (uint8_t)(seq * 7 + i);
}

/*
 * Frames of @size bytes to the interface's own address and back. A send above the
 * interface's MTU fails (EMSGSIZE): sent counts only frames the guest could send.
 */
static int frames(const char *ifname, unsigned size, unsigned count, double secs)
{
	static uint8_t buf[FRAME_MAX], got_buf[FRAME_MAX + 1];
	struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_protocol = htons(FRAME_TYPE)};
	unsigned sent = 0, got = 0, bad = 0;
	struct ifreq ifr = {0};
	int fd = socket(AF_PACKET, SOCK_RAW, htons(FRAME_TYPE));

	if (fd < 0 || size < 14 + 4 || size > FRAME_MAX || strlen(ifname) >= sizeof(ifr.ifr_name)) {
		perror("frame");
		return 2;
	}
	strcpy(ifr.ifr_name, ifname);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0) {
		perror("SIOCGIFHWADDR");
		return 1;
	}
	sll.sll_ifindex = (int)if_nametoindex(ifname);
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		perror("bind");
		return 1;
	}
	for (uint32_t s = 0; s < count; s++) {
		double end = now() + secs;
		uint16_t type = htons(FRAME_TYPE);

		memcpy(buf, ifr.ifr_hwaddr.sa_data, 6);
		memcpy(buf + 6, ifr.ifr_hwaddr.sa_data, 6);
		memcpy(buf + 12, &type, 2);
		fill(buf + 14, s, size - 14);
		if (send(fd, buf, size, 0) != (ssize_t)size)
			continue;
		sent++;
		while (now() < end) {
			struct pollfd p = {.fd = fd, .events = POLLIN};
			struct sockaddr_ll from;
			socklen_t fl = sizeof(from);
			ssize_t n;

			if (poll(&p, 1, 200) <= 0)
				continue;
			n = recvfrom(fd, got_buf, sizeof(got_buf), 0, (struct sockaddr *)&from,
				     &fl);
			if (n < 0 || from.sll_pkttype == PACKET_OUTGOING)
				continue; /* our own frame on its way out */
			bad += (size_t)n != size || memcmp(got_buf, buf, size) != 0;
			got++;
			break;
		}
	}
	printf("VHT FRAME size=%u sent=%u got=%u bad=%u\n", size, sent, got, bad);
	return 0;
}

int main(int argc, char **argv)
{
	static uint8_t buf[2048], want[2048];
	int fd = socket(AF_INET, SOCK_DGRAM, 0), big = 4 << 20;
	struct sockaddr_in sa = {.sin_family = AF_INET};

	if (argc < 5 || fd < 0) {
		fprintf(stderr,
			"usage: vhost_guest_udp send IP PORT COUNT SIZE | recv PORT COUNT SECONDS"
			" | frame IFNAME SIZE COUNT SECONDS\n");
		return 2;
	}
	if (strcmp(argv[1], "frame") == 0 && argc == 6)
		return frames(argv[2], (unsigned)atoi(argv[3]), (unsigned)atoi(argv[4]),
			      atof(argv[5]));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	if (strcmp(argv[1], "send") == 0 && argc == 6) {
		unsigned count = (unsigned)atoi(argv[4]), size = (unsigned)atoi(argv[5]), sent = 0;

		if (size < 4 || size > sizeof(buf))
			return 2;
		sa.sin_port = htons((uint16_t)atoi(argv[3]));
		inet_pton(AF_INET, argv[2], &sa.sin_addr);
		for (uint32_t s = 0; s < count; s++) {
			fill(buf, s, size);
			if (sendto(fd, buf, size, 0, (struct sockaddr *)&sa, sizeof(sa)) == (ssize_t)size)
				sent++;
			if (s % 32 == 31)
				usleep(2000); /* pacing: the receiver is a script */
		}
		printf("VHT SEND sent=%u\n", sent);
		return 0;
	}
	if (strcmp(argv[1], "recv") == 0) {
		unsigned count = (unsigned)atoi(argv[3]), got = 0, bad = 0;
		double end = now() + atof(argv[4]);

		sa.sin_port = htons((uint16_t)atoi(argv[2]));
		sa.sin_addr.s_addr = htonl(INADDR_ANY);
		if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			perror("bind");
			return 1;
		}
		printf("VHT RECV-READY\n");
		fflush(stdout);
		while (got < count && now() < end) {
			struct pollfd p = {.fd = fd, .events = POLLIN};
			struct sockaddr_in from;
			socklen_t fl = sizeof(from);
			ssize_t n;
			uint32_t seq;

			if (poll(&p, 1, 200) <= 0)
				continue;
			n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
			if (n < 4)
				continue;
			memcpy(&seq, buf, 4);
			fill(want, ntohl(seq), (unsigned)n);
			bad += memcmp(buf, want, (size_t)n) != 0;
			got++;
			if (got % ACK_EVERY == 0 || got == count) {
				uint32_t ack = htonl(got);

				sendto(fd, &ack, sizeof(ack), 0, (struct sockaddr *)&from, fl);
			}
		}
		printf("VHT RECV got=%u bad=%u\n", got, bad);
		return 0;
	}
	return 2;
}
