/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_virtio_ol_peer: a tide virtio port (the frontend) with checksum and TSO offloads
 * enabled on its queues, against a vhost-user backend that sends back what it receives
 * (dpdk-testpmd io forwarding over net_vhost). Run by test_virtio_dpdk_ol.sh.
 *
 * MODE csum: COUNT TCP/IPv4 packets of 1400 payload bytes, each asking for its IPv4 and
 * TCP checksums (the header's NEEDS_CSUM, or tide's software where the backend has no
 * VIRTIO_NET_F_CSUM). MODE tso: COUNT TCP/IPv4 packets of 8000 payload bytes as chains of
 * 5 mbufs, MSS 1448 (the header's GSO, or cut by tide where the backend has no HOST_TSO4).
 * Packet k carries TCP sequence numbers from k * 65536 and payload bytes that depend on
 * k and the offset.
 *
 * What comes back is made whole the way an application would (a GSO packet cut with
 * tide_offload_segment(), a partial checksum completed with tide_offload_cksum_fill()),
 * then every frame has its IPv4 and TCP checksums verified in software and every payload
 * byte checked against its sequence number. One line at the end:
 *     "tx=N bytes=B want=W frames=F bad=X gso_in=G partial_in=P sw_cksum=S sw_tso=T
 *      refused=R faults=Z"
 * Exit 1 when a frame is bad, bytes are missing, or the pool is not whole at the end.
 *
 * usage: test_virtio_ol_peer SPEC SECONDS COUNT csum|tso
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tide/lcore.h>
#include <tide/offload.h>
#include <tide/port.h>

#include "memif_util.h"

#define MSS	 1448
#define SEQ_STEP 65536u

static unsigned payload_len;
static uint64_t bad, frames, bytes;

static uint8_t pbyte(uint32_t k, uint32_t off)
{
	return (uint8_t)(k * 31 + off * 7 + (off >> 8));
}

/* Packet @k: Ethernet, IPv4, TCP and its payload, over segments of at most 2000 bytes. */
static struct tide_mbuf *make_pkt(struct tide_pool *pool, uint32_t k, int tso)
{
	struct tide_mbuf *head = tide_mbuf_alloc(pool), *m = head;
	unsigned tot = 40 + payload_len, done = 0;
	uint8_t h[54] = {2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00, 0x45, 0};
	uint8_t *ip = h + 14, *tcp = ip + 20;
	uint32_t seq = k * SEQ_STEP;

	if (head == NULL)
		return NULL;
	ip[2] = (uint8_t)(tot >> 8), ip[3] = (uint8_t)tot;
	ip[4] = (uint8_t)(k >> 8), ip[5] = (uint8_t)k;
	ip[8] = 64, ip[9] = 6;
	ip[12] = 10, ip[15] = 1, ip[16] = 10, ip[19] = 2;
	tcp[0] = 0x30, tcp[1] = 0x39, tcp[3] = 0x50;
	tcp[4] = (uint8_t)(seq >> 24), tcp[5] = (uint8_t)(seq >> 16);
	tcp[6] = (uint8_t)(seq >> 8), tcp[7] = (uint8_t)seq;
	tcp[12] = 5 << 4, tcp[13] = 0x18, tcp[14] = 0xff;
	memcpy(tide_mbuf_append(m, 54), h, 54);
	while (done < payload_len) {
		unsigned room = 2000 - m->data_len, n = payload_len - done < room ? payload_len - done
									 : room;
		uint8_t *d;

		if (n == 0) {
			struct tide_mbuf *s = tide_mbuf_alloc(pool);

			if (s == NULL || tide_mbuf_chain(head, s) < 0) {
				tide_mbuf_free(s);
				tide_mbuf_free(head);
				return NULL;
			}
			m = s;
			continue;
		}
		d = (uint8_t *)tide_mbuf_append(head, (uint16_t)n); /* into the last, m */
		for (unsigned i = 0; i < n; i++)
			d[i] = pbyte(k, done + i);
		done += n;
	}
	head->ol_flags = TIDE_MBUF_F_TX_IPV4 | TIDE_MBUF_F_TX_IP_CKSUM | TIDE_MBUF_F_TX_TCP_CKSUM |
			 (tso ? TIDE_MBUF_F_TX_TCP_SEG : 0);
	head->l2_len = 14;
	head->l3_len = 20;
	head->l4_len = 20;
	head->tso_segsz = tso ? MSS : 0;
	return head;
}

/* One frame as it is on the wire: checksums good, payload where its sequence says. */
static void check_frame(struct tide_mbuf *m)
{
	static uint8_t buf[16384];
	uint32_t len = m->pkt_len, seq, k, off, pl;

	frames++;
	if (tide_offload_cksum_verify(m) < 0 ||
	    (m->ol_flags & TIDE_MBUF_F_RX_IP_CKSUM_MASK) != TIDE_MBUF_F_RX_IP_CKSUM_GOOD ||
	    (m->ol_flags & TIDE_MBUF_F_RX_L4_CKSUM_MASK) != TIDE_MBUF_F_RX_L4_CKSUM_GOOD ||
	    len < 54 || len > sizeof(buf) || tide_mbuf_read(m, 0, len, buf) < 0) {
		bad++;
		return;
	}
	seq = (uint32_t)buf[38] << 24 | (uint32_t)buf[39] << 16 | (uint32_t)buf[40] << 8 | buf[41];
	k = seq / SEQ_STEP;
	off = seq % SEQ_STEP;
	pl = ((uint32_t)buf[16] << 8 | buf[17]) - 40;
	if (pl != len - 54 || off + pl > payload_len) {
		bad++;
		return;
	}
	for (uint32_t i = 0; i < pl; i++)
		if (buf[54 + i] != pbyte(k, off + i)) {
			bad++;
			return;
		}
	bytes += pl;
}

int main(int argc, char **argv)
{
	struct tide_pktpool_opts o = {.sz = sizeof(o), .pool_flags = TIDE_POOL_F_SHARED};
	struct tide_rxq_conf rc = {.sz = sizeof(rc),
				   .offloads = TIDE_OFFLOAD_RX_TCP_CKSUM | TIDE_OFFLOAD_RX_UDP_CKSUM |
					       TIDE_OFFLOAD_RX_TCP_LRO};
	struct tide_txq_conf tc = {.sz = sizeof(tc),
				   .offloads = TIDE_OFFLOAD_TX_IPV4_CKSUM | TIDE_OFFLOAD_TX_TCP_CKSUM |
					       TIDE_OFFLOAD_TX_TCP_TSO};
	uint64_t count, tx = 0, gso_in = 0, partial_in = 0, want, v[4] = {0};
	const char *names[4] = {"virtio_tx_sw_cksum", "virtio_tx_sw_tso", "virtio_tx_offload_refused",
				"virtio_faults"};
	struct tide_pool *pool;
	struct tide_port *p;
	struct tide_rxq *rxq;
	struct tide_txq *txq;
	double end, last_rx;
	int tso;

	if (argc != 5) {
		fprintf(stderr, "usage: %s SPEC SECONDS COUNT csum|tso\n", argv[0]);
		return 2;
	}
	end = mt_now() + atof(argv[2]);
	count = strtoull(argv[3], NULL, 0);
	tso = strcmp(argv[4], "tso") == 0;
	payload_len = tso ? 8000 : 1400;
	want = count * payload_len;
	tide_thread_register();
	MT_CHECK(tide_pktpool_create("olpeer", 16384, 256, 0, &o, &pool) == 0);
	MT_CHECK(tide_port_open(argv[1], &p) == 0);
	MT_CHECK(tide_port_configure(p, 1, 1) == 0);
	MT_CHECK(tide_rxq_setup(p, 0, 1024, pool, &rc) == 0);
	MT_CHECK(tide_txq_setup(p, 0, 1024, &tc) == 0);
	MT_CHECK(tide_port_start(p) == 0);
	rxq = tide_port_rxq(p, 0);
	txq = tide_port_txq(p, 0);
	MT_CHECK(mt_wait_link(p, 1, 30) == 1);
	last_rx = mt_now();
	while (mt_now() < end && bytes < want && mt_now() - last_rx < 3) {
		struct tide_mbuf *pk[32];
		unsigned b = 0, k;

		while (b < 8 && tx + b < count && (pk[b] = make_pkt(pool, (uint32_t)(tx + b), tso)))
			b++;
		k = b ? tide_tx_burst(txq, pk, (uint16_t)b) : 0;
		tide_mbuf_free_bulk(pk + k, b - k);
		tx += k;
		k = tide_rx_burst(rxq, pk, 32);
		if (k)
			last_rx = mt_now();
		for (unsigned i = 0; i < k; i++) {
			struct tide_mbuf *m = pk[i], *out[64];
			int n;

			if (m->ol_flags & TIDE_MBUF_F_TX_TCP_SEG) {
				gso_in++;
				n = tide_offload_segment(m, pool, out, 64);
				if (n < 0) {
					bad++;
					tide_mbuf_free(m);
					continue;
				}
				for (int j = 0; j < n; j++) {
					check_frame(out[j]);
					tide_mbuf_free(out[j]);
				}
				continue;
			}
			if (m->ol_flags & TIDE_MBUF_F_TX_L4_MASK) {
				partial_in++;
				if (tide_offload_cksum_fill(m) < 0)
					bad++;
			}
			check_frame(m);
			tide_mbuf_free(m);
		}
	}
	for (unsigned i = 0; i < 4; i++)
		tide_xstats_get_by_name(p, names[i], &v[i]);
	printf("tx=%llu bytes=%llu want=%llu frames=%llu bad=%llu gso_in=%llu partial_in=%llu "
	       "sw_cksum=%llu sw_tso=%llu refused=%llu faults=%llu\n",
	       (unsigned long long)tx, (unsigned long long)bytes, (unsigned long long)want,
	       (unsigned long long)frames, (unsigned long long)bad, (unsigned long long)gso_in,
	       (unsigned long long)partial_in, (unsigned long long)v[0], (unsigned long long)v[1],
	       (unsigned long long)v[2], (unsigned long long)v[3]);
	fflush(stdout);
	tide_port_close(p);
	if (tide_pool_in_use(pool) != 0) {
		fprintf(stderr, "test_virtio_ol_peer: %u buffers not returned\n",
			tide_pool_in_use(pool));
		return 1;
	}
	tide_pool_free(pool);
	return bad == 0 && bytes == want && tx == count ? 0 : 1;
}
