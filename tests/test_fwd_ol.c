/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tide-fwd's software offloads: a guest (tide's test frontend, tests/vhost_front.h) sends TSO
 * frames and partial checksums to a vhost port; io forwarding sends them to a pcap port,
 * which has no offloads, so tide-fwd cuts and fills them in software before its Tx burst.
 * The capture holds correct packets only (tide_offload_cksum_verify(), and tshark's
 * dissectors when tshark is installed), the TCP payload in order; the counters say sw_gso 2,
 * sw_cksum 1; every buffer comes back. Then --offloads off: the vhost port offers the guest
 * no checksum or TSO features, and nothing is done in software.
 */
#include <errno.h>
#include <stdbool.h>
#include <time.h>

#include <tide/offload.h>
#include <tide/vhost.h>

#include "fwd.h"
#include "proc_util.h"
#include "vhost_front.h"
#include "tmp_util.h"

/* virtio-net header values (virtio 1.x, 5.1.6). */
#define VIRTIO_NET_HDR_F_NEEDS_CSUM 1
#define VIRTIO_NET_HDR_GSO_TCPV4    1
#define VIRTIO_NET_HDR_GSO_TCPV6    4

static char dir[80];
static char sock[108], out[200];
static uint8_t A[70000];

static void nop_poll(void)
{
	/* the vhost port's control thread answers */
}

static void put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint32_t get16(const uint8_t *p)
{
	return (uint32_t)p[0] << 8 | p[1];
}

static uint32_t sum16(uint32_t s, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i += 2)
		s += (uint32_t)p[i] << 8 | (i + 1 < n ? p[i + 1] : 0);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return s;
}

/* A TCP (IPv4 or IPv6, 20 bytes of header) or UDP/IPv4 packet of @payload bytes, the L4
 * checksum field holding the pseudo-header's sum (a guest's partial checksum). */
static uint32_t build(uint8_t *buf, bool v6, bool udp, uint32_t payload, uint32_t seq)
{
	uint32_t l3 = v6 ? 40 : 20, l4 = udp ? 8 : 20, l4len = l4 + payload;
	uint8_t *ip = buf + 14, *t = ip + l3, ph[8] = {0};

	memset(buf, 0, 14 + l3 + l4);
	memcpy(buf, "\x52\x54\x00\x00\x00\x02\x52\x54\x00\x00\x00\x01", 12);
	put16(buf + 12, v6 ? 0x86dd : 0x0800);
	if (v6) {
		ip[0] = 0x60;
		put16(ip + 4, l4len);
		ip[6] = 6;
		ip[7] = 64;
		memcpy(ip + 8, "\xfd\0\0\0\0\0\0\0\0\0\0\0\0\0\0\x01", 16);
		memcpy(ip + 24, "\xfd\0\0\0\0\0\0\0\0\0\0\0\0\0\0\x02", 16);
		put16(ph + 2, l4len);
		ph[7] = 6;
		put16(t + 16, sum16(sum16(0, ip + 8, 32), ph, 8));
	} else {
		ip[0] = 0x45;
		put16(ip + 2, l3 + l4len);
		ip[6] = 0x40;
		ip[8] = 64;
		ip[9] = udp ? 17 : 6;
		memcpy(ip + 12, "\x0a\x00\x00\x01\x0a\x00\x00\x02", 8);
		put16(ip + 10, ~sum16(0, ip, 20) & 0xffff);
		ph[1] = ip[9];
		put16(ph + 2, l4len);
		put16(t + (udp ? 6 : 16), sum16(sum16(0, ip + 12, 8), ph, 4));
	}
	put16(t, 40000);
	put16(t + 2, 5001);
	if (udp) {
		put16(t + 4, l4len);
	} else {
		put16(t + 4, seq >> 16);
		put16(t + 6, seq);
		t[12] = 5 << 4;
		t[13] = 0x18;
		put16(t + 14, 65535);
	}
	for (uint32_t i = 0; i < payload; i++)
		t[l4 + i] = (uint8_t)(seq + i * 7);
	return 14 + l3 + l4len;
}

/* Guest Tx: header @h and frame (@len bytes at A) in one chain of 2048-byte descriptors. */
static void post(struct fe *f, unsigned *slot, const struct virtio_net_hdr_mrg *h, uint32_t len)
{
	struct fe_vq *q = &f->vq[1];
	unsigned n = (12 + len + FE_BUF - 1) / FE_BUF, j0 = *slot;
	uint8_t *w = fe_buf(f, 1, j0);

	FE_CHECK(j0 + n <= FE_NUM);
	*slot += n;
	memcpy(w, h, 12);
	memcpy(w + 12, A, len);
	for (unsigned i = 0; i < n; i++) {
		q->desc[j0 + i].addr = fe_gpa(f, fe_buf(f, 1, j0 + i));
		q->desc[j0 + i].len = i + 1 < n ? FE_BUF : 12 + len - (n - 1) * FE_BUF;
		q->desc[j0 + i].flags = i + 1 < n ? VRING_DESC_F_NEXT : 0;
		q->desc[j0 + i].next = (uint16_t)(j0 + i + 1);
	}
	q->avail->ring[q->avail_idx % FE_NUM] = (uint16_t)j0;
	__atomic_store_n(&q->avail->idx, ++q->avail_idx, __ATOMIC_RELEASE);
}

static uint64_t ctr_sum(const struct fwd_ctx *ctx, unsigned port, size_t off)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < ctx->nlcores; i++)
		n += __atomic_load_n((const uint64_t *)((const char *)&ctx->lcores[i].ctr[port] + off),
				     __ATOMIC_RELAXED); /* the lcores count while we read */
	return n;
}

#define CTR(ctx, port, field) ctr_sum(ctx, port, offsetof(struct fwd_ctr, field))

static void wait_for(bool (*cond)(struct fwd_ctx *), struct fwd_ctx *ctx, const char *what)
{
	time_t t0 = time(NULL);

	while (!cond(ctx)) {
		struct timespec ms = {0, 1000000};

		if (time(NULL) - t0 > 10) {
			fprintf(stderr, "FAIL: timed out waiting for %s\n", what);
			exit(1);
		}
		nanosleep(&ms, NULL);
	}
}

static bool link_up(struct fwd_ctx *ctx)
{
	struct tide_vhost_info vi = {.sz = sizeof(vi)};

	return tide_vhost_info_get(ctx->ports[0], &vi) == 0 && vi.connected;
}

static unsigned want_out;

static bool all_out(struct fwd_ctx *ctx)
{
	struct tide_port_stats st = {.sz = sizeof(st)};

	return tide_port_stats_get(ctx->ports[1], &st) == 0 && st.opackets >= want_out;
}

static void setup(struct fwd_ctx *ctx, struct fwd_config *cfg, bool offloads)
{
	char spec0[160], spec1[260], err[256];

	fwd_config_init(cfg);
	snprintf(spec0, sizeof(spec0), "vhost:socket=%s", sock);
	snprintf(spec1, sizeof(spec1), "pcap:tx=%s", out);
	cfg->specs[0] = strdup(spec0);
	cfg->specs[1] = strdup(spec1);
	cfg->nspecs = 2;
	cfg->cpus[0] = -1;
	cfg->engine = "io";
	cfg->rxd = cfg->txd = 256;
	cfg->quiet = true;
	cfg->offloads = offloads;
	if (fwd_setup(ctx, cfg, err, sizeof(err)) != 0 || fwd_start(ctx, err, sizeof(err)) != 0) {
		fprintf(stderr, "FAIL: %s\n", err);
		exit(1);
	}
}

static void finish(struct fwd_ctx *ctx, struct fwd_config *cfg)
{
	fwd_stop(ctx);
	FE_CHECK(tide_pool_in_use(ctx->pool) == 0);
	fwd_teardown(ctx);
	free((void *)cfg->specs[0]);
	free((void *)cfg->specs[1]);
}

/* The frames of the capture at @out, in order: count, and each into @frames. */
static unsigned read_pcap(uint8_t (*frames)[2048], uint32_t *lens, unsigned max)
{
	FILE *f = fopen(out, "rb");
	uint8_t gh[24], rh[16];
	unsigned n = 0;

	FE_CHECK(f != NULL && fread(gh, 1, 24, f) == 24);
	while (fread(rh, 1, 16, f) == 16) {
		uint32_t cap;

		memcpy(&cap, rh + 8, 4);
		FE_CHECK(n < max && cap <= 2048 && fread(frames[n], 1, cap, f) == cap);
		lens[n++] = cap;
	}
	fclose(f);
	return n;
}

/* Every frame's checksums, by tide's verifier. */
static void verify(struct tide_pool *pool, const uint8_t *fr, uint32_t len)
{
	struct tide_mbuf *m = tide_mbuf_alloc(pool);
	uint32_t fl;

	FE_CHECK(m != NULL);
	memcpy(tide_mbuf_append(m, (uint16_t)len), fr, len);
	FE_CHECK(tide_offload_cksum_verify(m) == 0);
	fl = m->ol_flags;
	tide_mbuf_free(m);
	FE_CHECK((fl & TIDE_MBUF_F_RX_L4_CKSUM_MASK) == TIDE_MBUF_F_RX_L4_CKSUM_GOOD);
	FE_CHECK(get16(fr + 12) == 0x86dd ||
		 (fl & TIDE_MBUF_F_RX_IP_CKSUM_MASK) == TIDE_MBUF_F_RX_IP_CKSUM_GOOD);
}

static uint8_t frames[64][2048];
static uint32_t lens[64];

static void tshark_check(unsigned expect)
{
	char cmd[512], line[128];
	unsigned lines = 0;
	FILE *p;

	if (system("tshark --version >/dev/null 2>&1") != 0) {
		printf("skip tshark: not installed\n");
		return;
	}
	/* Checksum status: 0 bad, 1 good, 2 unverified. */
	snprintf(cmd, sizeof(cmd),
		 "tshark -r %s -o ip.check_checksum:TRUE -o tcp.check_checksum:TRUE "
		 "-o udp.check_checksum:TRUE -T fields -e ip.checksum.status "
		 "-e tcp.checksum.status -e udp.checksum.status 2>/dev/null", out);
	p = popen(cmd, "r");
	FE_CHECK(p != NULL);
	while (fgets(line, sizeof(line), p) != NULL) {
		lines++;
		if (strchr(line, '0') != NULL || strchr(line, '2') != NULL ||
		    strchr(line, '1') == NULL) {
			fprintf(stderr, "FAIL: tshark: packet %u: checksum status \"%s\"\n", lines,
				line);
			exit(1);
		}
	}
	FE_CHECK(pclose(p) == 0);
	if (lines != expect) {
		fprintf(stderr, "FAIL: tshark read %u packets of %u\n", lines, expect);
		exit(1);
	}
	printf("ok   tshark: %u packets, every checksum good\n", lines);
}

/* ---- the fallback alone, deterministic: one Tx buffer through fwd_tx_flush_ol() ---- */

/* @m as a TSO (@tso) or TCP/UDP checksum request over IPv4, for the packet at A. */
static struct tide_mbuf *req(struct tide_pool *pool, uint32_t len, bool udp, bool tso,
			     uint16_t mss)
{
	struct tide_mbuf *head = NULL;

	for (uint32_t off = 0; off < len;) {
		struct tide_mbuf *m = tide_mbuf_alloc(pool);
		uint32_t n = len - off;

		FE_CHECK(m != NULL);
		if (n > tide_mbuf_tailroom(m))
			n = tide_mbuf_tailroom(m);
		memcpy(tide_mbuf_append(m, (uint16_t)n), A + off, n);
		if (head == NULL)
			head = m;
		else
			FE_CHECK(tide_mbuf_chain(head, m) == 0);
		off += n;
	}
	head->ol_flags = TIDE_MBUF_F_TX_IPV4 |
			 (udp ? TIDE_MBUF_F_TX_UDP_CKSUM : TIDE_MBUF_F_TX_TCP_CKSUM) |
			 (tso ? TIDE_MBUF_F_TX_TCP_SEG : 0);
	head->l2_len = 14;
	head->l3_len = 20;
	head->l4_len = udp ? 8 : 20;
	head->tso_segsz = mss;
	return head;
}

/*
 * tide-fwd's io engine set up in this process on the ports of @spec0 (and @spec1), no lcore
 * threads, and both ports started. Their egress queues take no offloads, so whatever a
 * packet asks for is done in software.
 */
static void fwd_up(struct fwd_ctx *ctx, struct fwd_config *cfg, const char *spec0,
		   const char *spec1)
{
	char err[256];

	fwd_config_init(cfg);
	cfg->specs[0] = spec0;
	cfg->specs[1] = spec1;
	cfg->nspecs = spec1 != NULL ? 2 : 1;
	cfg->cpus[0] = -1;
	cfg->engine = "io";
	cfg->rxd = cfg->txd = 256;
	cfg->quiet = true;
	if (fwd_setup(ctx, cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "FAIL: %s\n", err);
		exit(1);
	}
	FE_CHECK(ctx->tx_ol[0] == 0);
	FE_CHECK(tide_port_start(ctx->ports[0]) == 0 && tide_port_start(ctx->ports[1]) == 0);
}

/*
 * A buffer of [TSO 7 segments, plain, UDP checksum, TSO 4 segments, bad TSO, plain] for a
 * ring port without offloads: the peer receives 14 packets in that order, the segments in
 * their packet's place, every checksum right; the bad request dropped and counted.
 */
static void flush_order_check(void)
{
	struct fwd_config cfg;
	struct fwd_ctx ctx;
	struct fwd_lcore *lc;
	struct tide_mbuf *got[32];
	uint32_t plen[6];
	unsigned n = 0;

	fwd_up(&ctx, &cfg, "ring:name=fwd-ol", "ring:name=fwd-ol,peer=yes");
	lc = &ctx.lcores[0];
	plen[0] = build(A, false, false, 10000, 100);
	fwd_tx_add(lc, 0, req(ctx.pool, plen[0], false, true, 1448));
	plen[1] = build(A, false, true, 50, 7);
	fwd_tx_add(lc, 0, req(ctx.pool, plen[1], true, false, 0));
	plen[2] = build(A, false, true, 300, 8);
	fwd_tx_add(lc, 0, req(ctx.pool, plen[2], true, false, 0));
	plen[3] = build(A, false, false, 4000, 200);
	fwd_tx_add(lc, 0, req(ctx.pool, plen[3], false, true, 1000));
	plen[4] = build(A, false, false, 3000, 300);
	{
		struct tide_mbuf *bad = req(ctx.pool, plen[4], false, true, 1000);

		bad->l3_len = 24; /* not the IPv4 header's length */
		fwd_tx_add(lc, 0, bad);
	}
	plen[5] = build(A, false, true, 60, 9);
	fwd_tx_add(lc, 0, req(ctx.pool, plen[5], true, false, 0));
	lc->txb[0].pkts[1]->ol_flags = 0; /* plain: nothing to do */
	lc->txb[0].pkts[5]->ol_flags = 0;
	fwd_tx_flush_ol(lc);
	FE_CHECK(CTR(&ctx, 0, sw_gso) == 2 && CTR(&ctx, 0, sw_cksum) == 1 &&
		 CTR(&ctx, 0, drops[FWD_DROP_OFFLOAD]) == 1);
	while (n < 32) {
		uint16_t k = tide_rx_burst(tide_port_rxq(ctx.ports[1], 0), got + n, 32);

		if (k == 0)
			break;
		n += k;
	}
	if (n != 14) {
		fprintf(stderr, "FAIL: the peer received %u packets, not 14\n", n);
		exit(1);
	}
	for (unsigned i = 0; i < n; i++) {
		static uint8_t fr[2048];
		/* 7 segments of seq 100.., plain, UDP, 4 segments of seq 200.., plain */
		bool tcp = i < 7 || (i >= 9 && i < 13);
		uint32_t want_seq = i < 7 ? 100 + i * 1448 : 200 + (i - 9) * 1000;
		uint32_t want_len = i == 7 ? plen[1] : i == 8 ? plen[2] : plen[5];

		FE_CHECK(got[i]->nb_segs == 1 && got[i]->pkt_len <= sizeof(fr));
		memcpy(fr, tide_mbuf_mtod(got[i], const uint8_t *), got[i]->pkt_len);
		if (tcp)
			FE_CHECK((get16(fr + 38) << 16 | get16(fr + 40)) == want_seq);
		else
			FE_CHECK(fr[23] == 17 && got[i]->pkt_len == want_len);
		if (i != 7 && i != 13) /* the plain ones keep the partial sum build() left */
			verify(ctx.pool, fr, got[i]->pkt_len);
	}
	tide_mbuf_free_bulk(got, n);
	FE_CHECK(tide_pool_in_use(ctx.pool) == 0);
	tide_port_stop(ctx.ports[0]);
	tide_port_stop(ctx.ports[1]);
	fwd_teardown(&ctx);
	printf("ok   one Tx buffer: segments in their packet's place, the checksum filled, the "
	       "bad request dropped and counted\n");
}

/*
 * fwd_idle(): a round that received nothing completes the lcore's Tx queues (the contract
 * of tide_txq_done_cleanup(): packets a device left waiting go out,
 * finished buffers come back). On a simnic port stepped inline, 32 packets sent with a
 * free threshold that keeps them in the ring are released by the idle round, not before.
 */
static void idle_check(void)
{
	struct fwd_config cfg;
	struct fwd_ctx ctx;
	struct fwd_lcore *lc;
	struct tide_port_stats st = {.sz = sizeof(st)};
	struct tide_mbuf *pk[32];
	uint64_t before;

	fwd_up(&ctx, &cfg, "simnic:ports=2,mode=inline,wire=cross", NULL);
	lc = &ctx.lcores[0];
	FE_CHECK(lc->txq[0] != NULL);
	for (unsigned i = 0; i < 32; i++) {
		pk[i] = tide_mbuf_alloc(ctx.pool);
		FE_CHECK(pk[i] != NULL);
		memset(tide_mbuf_append(pk[i], 60), 0, 60);
	}
	FE_CHECK(tide_tx_burst(lc->txq[0], pk, 32) == 32);
	FE_CHECK(tide_port_stats_get(ctx.ports[0], &st) == 0);
	before = st.tx_released;
	fwd_idle(lc);
	FE_CHECK(tide_port_stats_get(ctx.ports[0], &st) == 0);
	if (st.tx_released <= before) {
		fprintf(stderr, "FAIL: the idle round released %llu of 32 sent buffers (%llu before)\n",
			(unsigned long long)(st.tx_released - before), (unsigned long long)before);
		exit(1);
	}
	tide_port_stop(ctx.ports[0]);
	tide_port_stop(ctx.ports[1]);
	FE_CHECK(tide_pool_in_use(ctx.pool) == 0);
	fwd_teardown(&ctx);
	printf("ok   an idle round completes the Tx queues "
	       "(%llu released)\n", (unsigned long long)(st.tx_released - before));
}

/*
 * The same in tide-fwd's own loop, offloads off: simnic generates 128 packets per port and
 * stops; once they are forwarded every round is idle, and the idle rounds must bring every
 * sent buffer back (the Tx free threshold, 32, would keep the last of them in the rings).
 */
static void idle_loop_check(void)
{
	struct tide_port_stats st[2] = {{.sz = sizeof(st[0])}, {.sz = sizeof(st[1])}};
	struct fwd_config cfg;
	struct fwd_ctx ctx;
	char err[256];
	double end;

	fwd_config_init(&cfg);
	cfg.specs[0] = "simnic:ports=2,mode=inline,wire=gen,count=128";
	cfg.nspecs = 1;
	cfg.cpus[0] = -1;
	cfg.engine = "io";
	cfg.rxd = cfg.txd = 256;
	cfg.quiet = true;
	cfg.offloads = false;
	if (fwd_setup(&ctx, &cfg, err, sizeof(err)) != 0 || fwd_start(&ctx, err, sizeof(err)) != 0) {
		fprintf(stderr, "FAIL: %s\n", err);
		exit(1);
	}
	FE_CHECK(!ctx.sw_ol);
	end = now_s() + 10;
	do {
		usleep(1000);
		FE_CHECK(tide_port_stats_get(ctx.ports[0], &st[0]) == 0);
		FE_CHECK(tide_port_stats_get(ctx.ports[1], &st[1]) == 0);
	} while ((st[0].tx_released < 128 || st[1].tx_released < 128) && now_s() < end);
	fwd_stop(&ctx);
	if (st[0].tx_released != 128 || st[1].tx_released != 128) {
		fprintf(stderr, "FAIL: idle rounds of the loop: %llu and %llu of 128 sent buffers "
				"released (sent %llu, %llu)\n",
			(unsigned long long)st[0].tx_released, (unsigned long long)st[1].tx_released,
			(unsigned long long)st[0].opackets, (unsigned long long)st[1].opackets);
		exit(1);
	}
	FE_CHECK(tide_pool_in_use(ctx.pool) == 0);
	fwd_teardown(&ctx);
	printf("ok   tide-fwd's idle rounds complete every Tx queue (128 + 128 released)\n");
}

static void remove_all(void)
{
	unlink(out);
	unlink(sock);
	rmdir(dir);
}

int main(void)
{
	const uint64_t base = VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VIRTIO_NET_F_MRG_RXBUF) |
			      VIRTIO_BIT(VHOST_USER_F_PROTOCOL_FEATURES);
	const uint64_t csum = VIRTIO_BIT(0), tso4 = VIRTIO_BIT(11), tso6 = VIRTIO_BIT(12);
	struct fwd_config cfg;
	struct fwd_ctx ctx;
	struct fe f;
	struct virtio_net_hdr_mrg h;
	unsigned slot = 0, n;
	uint32_t pos4 = 0, pos6 = 0;

	FE_CHECK(tide_thread_register() >= 0);
	flush_order_check();
	idle_check();
	idle_loop_check();
	snprintf(dir, sizeof(dir), "%s/tide-fwd-ol-XXXXXX", test_tmp());
	FE_CHECK(mkdtemp(dir) != NULL);
	atexit(remove_all);
	snprintf(sock, sizeof(sock), "%s/v.sock", dir);
	snprintf(out, sizeof(out), "%s/out.pcap", dir);

	setup(&ctx, &cfg, true);
	FE_CHECK(ctx.sw_ol && ctx.rx_ol[0] != 0 && ctx.tx_ol[1] == 0);
	fe_init(&f);
	fe_connect(&f, sock);
	fe_handshake(&f, FE_TO_VRINGS, base | csum | tso4 | tso6, nop_poll);
	wait_for(link_up, &ctx, "the guest's link");
	/* TSO over IPv4 (10000 bytes by 1448: 7 segments) and IPv6 (5000 by 1440: 4), a UDP
	 * partial checksum, a packet with nothing to do. */
	h = (struct virtio_net_hdr_mrg){.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
					.gso_type = VIRTIO_NET_HDR_GSO_TCPV4, .hdr_len = 54,
					.gso_size = 1448, .csum_start = 34, .csum_offset = 16};
	post(&f, &slot, &h, build(A, false, false, 10000, 1000));
	h = (struct virtio_net_hdr_mrg){.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
					.gso_type = VIRTIO_NET_HDR_GSO_TCPV6, .hdr_len = 74,
					.gso_size = 1440, .csum_start = 54, .csum_offset = 16};
	post(&f, &slot, &h, build(A, true, false, 5000, 2000));
	h = (struct virtio_net_hdr_mrg){.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM, .csum_start = 34,
					.csum_offset = 6};
	post(&f, &slot, &h, build(A, false, true, 600, 3));
	h = (struct virtio_net_hdr_mrg){0};
	{
		uint32_t len = build(A, false, true, 100, 4);
		uint8_t *u = A + 34;

		put16(u + 6, 0);
		put16(u + 6, ~sum16(sum16(sum16(0, A + 26, 8), (const uint8_t[]){0, 17, 0, 108}, 4),
				    u, 108) & 0xffff);
		post(&f, &slot, &h, len);
	}
	want_out = 7 + 4 + 1 + 1;
	wait_for(all_out, &ctx, "the capture");
	FE_CHECK(CTR(&ctx, 1, sw_gso) == 2 && CTR(&ctx, 1, sw_cksum) == 1 &&
		 CTR(&ctx, 1, drops[FWD_DROP_OFFLOAD]) == 0);
	fe_fini(&f);
	finish(&ctx, &cfg);

	n = read_pcap(frames, lens, 64);
	FE_CHECK(n == want_out);
	{
		struct tide_pool *pool;

		FE_CHECK(tide_pktpool_create("fwd-ol-check", 64, 0, 0, NULL, &pool) == 0);
		for (unsigned i = 0; i < n; i++) {
			bool v6 = get16(frames[i] + 12) == 0x86dd;
			uint32_t hdr = v6 ? 74 : 54;

			verify(pool, frames[i], lens[i]);
			if (i < 11) { /* the TCP segments, in order, their payload contiguous */
				uint8_t *t = frames[i] + (v6 ? 54 : 34);
				uint32_t seq = get16(t + 4) << 16 | get16(t + 6);
				uint32_t *pos = v6 ? &pos6 : &pos4, base_seq = v6 ? 2000 : 1000;

				FE_CHECK(lens[i] <= hdr + (v6 ? 1440u : 1448u));
				FE_CHECK(seq == base_seq + *pos);
				for (uint32_t k = 0; k < lens[i] - hdr; k++)
					FE_CHECK(frames[i][hdr + k] ==
						 (uint8_t)(base_seq + (*pos + k) * 7));
				*pos += lens[i] - hdr;
			}
		}
		FE_CHECK(pos4 == 10000 && pos6 == 5000);
		FE_CHECK(tide_pool_in_use(pool) == 0);
		tide_pool_free(pool);
	}
	printf("ok   --offloads on: 2 TSO frames cut into 11 segments, a UDP checksum filled, "
	       "every packet correct (sw_gso 2, sw_cksum 1)\n");
	tshark_check(n);

	/* --offloads off: no checksum or TSO feature for the guest, no software work. */
	setup(&ctx, &cfg, false);
	FE_CHECK(!ctx.sw_ol && ctx.rx_ol[0] == 0);
	fe_init(&f);
	fe_connect(&f, sock);
	{
		uint64_t u = 0;

		fe_send(&f, VHOST_USER_GET_FEATURES, NULL, 0, NULL, 0);
		FE_CHECK(fe_reply(&f, &u, 8) == 0);
		FE_CHECK((u & (csum | tso4 | tso6)) == 0);
		FE_CHECK(u & VIRTIO_BIT(1)); /* GUEST_CSUM: tide's Tx still fills in software */
	}
	fe_fini(&f);
	finish(&ctx, &cfg);
	printf("ok   --offloads off: the guest is offered no checksum or TSO\n");
	return 0;
}
