/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * icmp_ping: send COUNT ICMP echo requests from a tide memif port to 192.168.1.1 (MAC
 * aa:aa:aa:aa:aa:aa, what libmemif's icmp_responder answers as), 32 in flight at most,
 * and write every frame sent to the capture IN and every frame received to the capture
 * OUT, for a checker that matches each reply to its request (check_icmp.py). Prints "link=L sent=N received=M".
 *
 * usage: icmp_ping SPEC COUNT SECONDS IN.pcap OUT.pcap
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tide/lcore.h>

#include "memif_util.h"

#define PAYLOAD 56

static void pcap_open(FILE **f, const char *path)
{
	/* Classic pcap, microseconds, Ethernet. */
	const uint32_t hdr[6] = {0xa1b2c3d4, 0x00040002, 0, 0, 65535, 1};

	*f = fopen(path, "wb");
	MT_CHECK(*f != NULL && fwrite(hdr, sizeof(hdr), 1, *f) == 1);
}

static void pcap_write(FILE *f, const uint8_t *buf, uint32_t len)
{
	struct timespec ts;
	uint32_t rec[4];

	clock_gettime(CLOCK_REALTIME, &ts);
	rec[0] = (uint32_t)ts.tv_sec;
	rec[1] = (uint32_t)(ts.tv_nsec / 1000);
	rec[2] = rec[3] = len;
	MT_CHECK(fwrite(rec, sizeof(rec), 1, f) == 1 && fwrite(buf, len, 1, f) == 1);
}

static uint16_t csum(const uint8_t *p, size_t n)
{
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static struct tide_mbuf *request(struct tide_pool *pool, uint16_t seq)
{
	static const uint8_t dst[6] = {0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa};
	static const uint8_t src[6] = {0x02, 0xfe, 0x01, 0x00, 0x00, 0x01};
	struct tide_mbuf *m = tide_mbuf_alloc(pool);
	uint8_t *p, *ip, *icmp;
	uint16_t v;

	MT_CHECK(m != NULL);
	p = (uint8_t *)tide_mbuf_append(m, 14 + 20 + 8 + PAYLOAD);
	MT_CHECK(p != NULL);
	memset(p, 0, 14 + 20 + 8 + PAYLOAD);
	memcpy(p, dst, 6);
	memcpy(p + 6, src, 6);
	p[12] = 0x08; /* IPv4 */
	ip = p + 14;
	ip[0] = 0x45;
	v = htons(20 + 8 + PAYLOAD);
	memcpy(ip + 2, &v, 2);
	ip[8] = 64;
	ip[9] = 1; /* ICMP */
	memcpy(ip + 12, (uint8_t[]){192, 168, 1, 2}, 4);
	memcpy(ip + 16, (uint8_t[]){192, 168, 1, 1}, 4);
	v = htons(csum(ip, 20));
	memcpy(ip + 10, &v, 2);
	icmp = ip + 20;
	icmp[0] = 8; /* echo request */
	v = htons(0x7de);
	memcpy(icmp + 4, &v, 2);
	v = htons(seq);
	memcpy(icmp + 6, &v, 2);
	for (int i = 0; i < PAYLOAD; i++)
		icmp[8 + i] = (uint8_t)(seq * 3 + i);
	v = htons(csum(icmp, 8 + PAYLOAD));
	memcpy(icmp + 2, &v, 2);
	return m;
}

int main(int argc, char **argv)
{
	struct tide_pool *pool;
	struct tide_port *p;
	static uint8_t buf[65536];
	FILE *in, *out;
	unsigned count, sent = 0, got = 0;
	double end;
	int up;

	if (argc != 6) {
		fprintf(stderr, "usage: %s SPEC COUNT SECONDS IN.pcap OUT.pcap\n", argv[0]);
		return 2;
	}
	count = (unsigned)atoi(argv[2]);
	tide_thread_register();
	MT_CHECK(tide_pktpool_create("ping", 4096, 256, 0, NULL, &pool) == 0);
	p = mt_port(argv[1], 1, 1024, pool);
	pcap_open(&in, argv[4]);
	pcap_open(&out, argv[5]);
	up = mt_wait_link(p, 1, atof(argv[3]));
	end = mt_now() + atof(argv[3]);
	while (up && got < count && mt_now() < end) {
		struct tide_mbuf *pk[32];
		unsigned k;

		tide_port_poll_ctl(p);
		if (sent < count && sent - got < 32) {
			uint32_t len;

			pk[0] = request(pool, (uint16_t)sent);
			len = pk[0]->pkt_len;
			MT_CHECK(tide_mbuf_read(pk[0], 0, len, buf) == 0);
			if (tide_tx_burst(tide_port_txq(p, 0), pk, 1) == 1) {
				pcap_write(in, buf, len); /* the burst owns (and freed) the mbuf */
				sent++;
			} else {
				tide_mbuf_free(pk[0]);
			}
		}
		k = tide_rx_burst(tide_port_rxq(p, 0), pk, 32);
		for (unsigned i = 0; i < k; i++) {
			MT_CHECK(tide_mbuf_read(pk[i], 0, pk[i]->pkt_len, buf) == 0);
			pcap_write(out, buf, pk[i]->pkt_len);
		}
		got += k;
		tide_mbuf_free_bulk(pk, k);
	}
	printf("link=%d sent=%u received=%u\n", up, sent, got);
	fclose(in);
	fclose(out);
	tide_port_close(p);
	MT_CHECK(tide_pool_in_use(pool) == 0);
	tide_pool_free(pool);
	return 0;
}
