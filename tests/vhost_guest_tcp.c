/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost_guest_tcp: the guest side of the QEMU TCP test (built static, a tool of the test's
 * initramfs). One TCP stream through ordinary sockets, so that the guest's TCP, its
 * checksum offload and TSO, and its virtio_net driver carry it.
 *
 *   vhost_guest_tcp send IP PORT MIB        connect, send MIB MiB of the test stream, close
 *   vhost_guest_tcp recv PORT MIB SECONDS   accept one connection, read until it closes or
 *                                           SECONDS pass, check every byte
 *
 * The test stream: blocks of 64 KiB; block b is its index (8 bytes, little-endian) and then
 * bytes 8..65535 of a fixed pseudo-random block (x = x * 1103515245 + 12345 from x = 1,
 * modulo 2^32, each byte x >> 24). tests/test_vhost_qemu_tcp.sh makes the same stream.
 *
 * Prints "VHT TCP-SEND bytes=N secs=T" or "VHT TCP-RECV bytes=N bad=B secs=T".
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BLOCK 65536

static uint8_t blk[BLOCK];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void make_block(void)
{
	uint32_t x = 1;

	for (unsigned j = 0; j < BLOCK; j++) {
		x = x * 1103515245u + 12345u;
		blk[j] = (uint8_t)(x >> 24);
	}
}

/* Byte @off of the stream. */
static uint8_t stream_byte(uint64_t off)
{
	uint64_t b = off / BLOCK, j = off % BLOCK;

	return j < 8 ? (uint8_t)(b >> (8 * j)) : blk[j];
}

static int do_send(const char *ip, int port, uint64_t total)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int s = socket(AF_INET, SOCK_STREAM, 0);
	uint64_t sent = 0;
	double t0;

	if (s < 0 || inet_pton(AF_INET, ip, &a.sin_addr) != 1) {
		perror("socket");
		return 1;
	}
	for (int i = 0; connect(s, (struct sockaddr *)&a, sizeof(a)) != 0; i++) {
		if (i == 50) {
			perror("connect");
			return 1;
		}
		close(s);
		s = socket(AF_INET, SOCK_STREAM, 0);
		usleep(200000);
	}
	t0 = now();
	while (sent < total) {
		uint64_t b = sent / BLOCK;

		memcpy(blk, &b, 8); /* little-endian hosts */
		for (size_t off = sent % BLOCK; off < BLOCK && sent < total;) {
			ssize_t k = send(s, blk + off, BLOCK - off, 0);

			if (k <= 0) {
				perror("send");
				return 1;
			}
			off += (size_t)k;
			sent += (uint64_t)k;
		}
	}
	shutdown(s, SHUT_WR);
	{
		char c;

		while (recv(s, &c, 1, 0) > 0) { /* wait for the peer's close: all was read */
		}
	}
	close(s);
	printf("VHT TCP-SEND bytes=%llu secs=%.2f\n", (unsigned long long)sent, now() - t0);
	return 0;
}

static int do_recv(int port, uint64_t total, int secs)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int one = 1, l = socket(AF_INET, SOCK_STREAM, 0), s;
	static uint8_t buf[BLOCK];
	uint64_t got = 0, bad = 0;
	double t0, end;

	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(l, 1) != 0) {
		perror("listen");
		return 1;
	}
	printf("VHT TCP-RECV-READY\n");
	fflush(stdout);
	s = accept(l, NULL, NULL);
	if (s < 0) {
		perror("accept");
		return 1;
	}
	t0 = now();
	end = t0 + secs;
	while (now() < end) {
		struct pollfd p = {.fd = s, .events = POLLIN};
		ssize_t k;

		if (poll(&p, 1, 500) <= 0)
			continue;
		k = recv(s, buf, sizeof(buf), 0);
		if (k <= 0)
			break;
		for (ssize_t i = 0; i < k; i++)
			bad += buf[i] != stream_byte(got + (uint64_t)i);
		got += (uint64_t)k;
	}
	close(s);
	close(l);
	printf("VHT TCP-RECV bytes=%llu bad=%llu secs=%.2f\n", (unsigned long long)got,
	       (unsigned long long)(bad + (got != total)), now() - t0);
	return 0;
}

int main(int argc, char **argv)
{
	make_block();
	if (argc == 5 && strcmp(argv[1], "send") == 0)
		return do_send(argv[2], atoi(argv[3]), (uint64_t)atoi(argv[4]) << 20);
	if (argc == 5 && strcmp(argv[1], "recv") == 0)
		return do_recv(atoi(argv[2]), (uint64_t)atoi(argv[3]) << 20, atoi(argv[4]));
	fprintf(stderr, "usage: %s send IP PORT MIB | recv PORT MIB SECONDS\n", argv[0]);
	return 2;
}
