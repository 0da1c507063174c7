/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The vhost backend's offloads against tide's test frontend (tests/vhost_front.h), split and
 * packed rings, mergeable receive buffers on and off:
 *  - what is offered: every offload feature with offloads on the Rx queues, the guest's
 *    receive features alone without, nothing with offloads=no (and no capabilities);
 *  - guest -> tide: a guest's TSO frames (IPv4 and IPv6, up to 30000 bytes, in chains of
 *    descriptors), partial checksums and DATA_VALID arrive as the mbuf fields say; the
 *    software fallback then makes correct packets of them (checked by the reference sum
 *    and tide_offload_cksum_verify()); every hostile header reason dropped and counted;
 *  - tide -> guest: with the guest's offloads the header carries the request (the guest's
 *    completion of the partial checksum checked); without, the packet arrives as correct
 *    segments or with its checksums filled; refused requests, an empty pool, and a guest
 *    ring that fills midway are dropped and counted;
 *  - every pool comes back full.
 */
#include <errno.h>
#include <stdbool.h>

#include <tide/lcore.h>
#include <tide/offload.h>
#include <tide/port.h>
#include <tide/vhost.h>

#include "offload_vnet.h"
#include "ol_pkt.h"
#include "vhost_util.h"
#include "tmp_util.h"

#define F_CSUM	     VIRTIO_BIT(0)
#define F_GUEST_CSUM VIRTIO_BIT(1)
#define F_GUEST_TSO4 VIRTIO_BIT(7)
#define F_GUEST_TSO6 VIRTIO_BIT(8)
#define F_GUEST_ECN  VIRTIO_BIT(9)
#define F_HOST_TSO4  VIRTIO_BIT(11)
#define F_HOST_TSO6  VIRTIO_BIT(12)
#define F_HOST_ECN   VIRTIO_BIT(13)
#define F_HOST	     (F_CSUM | F_HOST_TSO4 | F_HOST_TSO6 | F_HOST_ECN)
#define F_GUEST	     (F_GUEST_CSUM | F_GUEST_TSO4 | F_GUEST_TSO6 | F_GUEST_ECN)
#define F_PACKED     VIRTIO_BIT(VIRTIO_F_RING_PACKED)

static struct tide_pool *pool;
static char path[108];
static bool packed, mrg;
static unsigned gtx_slot; /* the next guest Tx buffer slot */
static unsigned grx_nd = 1;  /* descriptors per guest receive buffer */
static uint32_t grx_len = FE_BUF; /* bytes per guest receive descriptor */
static uint8_t A[70000], B[70000];

static uint64_t xstat(const char *name)
{
	uint64_t v = 0;

	if (tide_xstats_get_by_name(P, name, &v) != 0) {
		fprintf(stderr, "no xstat %s\n", name);
		exit(1);
	}
	return v;
}

static uint64_t errors(bool tx)
{
	struct tide_port_stats st = {.sz = sizeof(st)};

	FE_CHECK(tide_port_stats_get(P, &st) == 0);
	return tx ? st.oerrors : st.ierrors;
}

/* @len bytes at @buf as an mbuf chain from @p (2048-byte pieces). */
static struct tide_mbuf *to_mbuf(struct tide_pool *p, const uint8_t *buf, uint32_t len)
{
	struct tide_mbuf *head = NULL;

	for (uint32_t off = 0; off < len;) {
		struct tide_mbuf *m = tide_mbuf_alloc(p);
		uint32_t n = len - off;

		FE_CHECK(m != NULL);
		if (n > tide_mbuf_tailroom(m))
			n = tide_mbuf_tailroom(m);
		memcpy(tide_mbuf_append(m, (uint16_t)n), buf + off, n);
		if (head == NULL)
			head = m;
		else
			FE_CHECK(tide_mbuf_chain(head, m) == 0);
		off += n;
	}
	return head;
}

/* The frame at @buf is a correct packet (IPv4 header and L4 checksums). */
static void check_cksums(const uint8_t *buf, uint32_t len)
{
	struct tide_mbuf *m = to_mbuf(pool, buf, len);
	uint32_t f;

	FE_CHECK(tide_offload_cksum_verify(m) == 0);
	f = m->ol_flags;
	tide_mbuf_free(m);
	FE_CHECK((f & TIDE_MBUF_F_RX_L4_CKSUM_MASK) == TIDE_MBUF_F_RX_L4_CKSUM_GOOD);
	FE_CHECK(get16(buf + 12) == 0x86dd ||
		 (f & TIDE_MBUF_F_RX_IP_CKSUM_MASK) == TIDE_MBUF_F_RX_IP_CKSUM_GOOD);
}

/* Complete a partial checksum as a guest does: the sum from @start, stored at @start+@off. */
static void complete(uint8_t *buf, uint32_t len, uint32_t start, uint32_t off)
{
	put16(buf + start + off, (uint16_t)~ref_fold(ref_add(0, buf + start, len - start)));
}

/* ---- the guest's side ---- */

/* Guest Tx: header @h and frame @buf (@len bytes) in 2048-byte descriptors, one chain. */
static void gtx_post(struct fe *f, const struct virtio_net_hdr_mrg *h, const uint8_t *buf,
		     uint32_t len)
{
	unsigned hl = sizeof(*h), n = (hl + len + FE_BUF - 1) / FE_BUF, j0;
	uint64_t addr[40];
	uint32_t dl[40];
	uint8_t *w;

	FE_CHECK(n <= 40);
	if (gtx_slot + n > FE_NUM)
		gtx_slot = 0;
	j0 = gtx_slot;
	gtx_slot += n;
	w = fe_buf(f, 1, j0); /* the slots are contiguous in guest memory */
	memcpy(w, h, hl);
	memcpy(w + hl, buf, len);
	for (unsigned i = 0; i < n; i++) {
		addr[i] = fe_gpa(f, fe_buf(f, 1, j0 + i));
		dl[i] = i + 1 < n ? FE_BUF : hl + len - (n - 1) * FE_BUF;
	}
	if (packed) {
		fe_pk_post(f, 1, addr, dl, n, (uint16_t)j0, 0);
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		struct vring_desc *d = &f->vq[1].desc[j0 + i];

		d->addr = addr[i];
		d->len = dl[i];
		d->flags = i + 1 < n ? VRING_DESC_F_NEXT : 0;
		d->next = (uint16_t)(j0 + i + 1);
	}
	f->vq[1].avail->ring[f->vq[1].avail_idx % FE_NUM] = (uint16_t)j0;
	__atomic_store_n(&f->vq[1].avail->idx, ++f->vq[1].avail_idx, __ATOMIC_RELEASE);
}

/* One packet from tide's Rx queue (within a few bursts), or NULL. */
static struct tide_mbuf *rx_one(void)
{
	struct tide_mbuf *m;

	for (int i = 0; i < 4; i++)
		if (tide_rx_burst(tide_port_rxq(P, 0), &m, 1) == 1)
			return m;
	return NULL;
}

/*
 * Guest Rx: @nb receive buffers, each a chain of @nd descriptors of FE_BUF bytes (slots from
 * 0: the previous ones were all used). Mergeable buffers: one descriptor each.
 */
static void grx_post(struct fe *f, unsigned nb, unsigned nd)
{
	struct fe_vq *q = &f->vq[0];

	FE_CHECK(nb * nd <= FE_NUM);
	for (unsigned b = 0; b < nb; b++) {
		uint64_t addr[16];
		uint32_t dl[16];
		unsigned j0 = b * nd;

		for (unsigned i = 0; i < nd; i++) {
			addr[i] = fe_gpa(f, fe_buf(f, 0, j0 + i));
			dl[i] = grx_len;
		}
		if (packed) {
			fe_pk_post(f, 0, addr, dl, nd, (uint16_t)j0, VRING_DESC_F_WRITE);
			continue;
		}
		for (unsigned i = 0; i < nd; i++) {
			struct vring_desc *d = &q->desc[j0 + i];

			d->addr = addr[i];
			d->len = grx_len;
			d->flags = (uint16_t)(VRING_DESC_F_WRITE | (i + 1 < nd ? VRING_DESC_F_NEXT : 0));
			d->next = (uint16_t)(j0 + i + 1);
		}
		q->avail->ring[q->avail_idx % FE_NUM] = (uint16_t)j0;
		q->avail_idx++;
	}
	if (!packed)
		__atomic_store_n(&q->avail->idx, q->avail_idx, __ATOMIC_RELEASE);
}

/* The next used receive buffer: 1 with its first slot and length, or 0. */
static int grx_used(struct fe *f, unsigned *slot, uint32_t *len)
{
	struct fe_vq *q = &f->vq[0];
	uint16_t id;

	if (packed) {
		if (!fe_pk_used_batch(f, 0, grx_nd, &id, len))
			return 0;
		*slot = id;
		return 1;
	}
	if (__atomic_load_n(&q->used->idx, __ATOMIC_ACQUIRE) == q->used_seen)
		return 0;
	*slot = q->used->ring[q->used_seen % FE_NUM].id;
	*len = q->used->ring[q->used_seen % FE_NUM].len;
	q->used_seen++;
	return 1;
}

/* The next packet the guest received: its header into *@h, its frame into @out; its length,
 * or -1 when there is none. A packed chain of descriptors came back as one buffer. */
static int grx_pkt(struct fe *f, struct virtio_net_hdr_mrg *h, uint8_t *out)
{
	unsigned slot, hl = 12; /* VIRTIO_F_VERSION_1: 12 bytes with or without mrg_rxbuf */
	uint32_t len, got = 0;
	uint16_t nbuf = 1;

	if (!grx_used(f, &slot, &len))
		return -1;
	memcpy(h, fe_buf(f, 0, slot), hl);
	if (mrg)
		nbuf = h->num_buffers;
	for (uint16_t b = 0; b < nbuf; b++) {
		if (b > 0)
			FE_CHECK(grx_used(f, &slot, &len) == 1);
		/* The buffer's slots are contiguous in guest memory. */
		memcpy(out + got, fe_buf(f, 0, slot) + (b == 0 ? hl : 0), len - (b == 0 ? hl : 0));
		got += len - (b == 0 ? hl : 0);
	}
	return (int)got;
}

/* ---- connections ---- */

static void connect_fe(struct fe *f, uint64_t feats)
{
	struct tide_vhost_info vi;

	fe_init(f);
	gtx_slot = 0;
	vinfo(&vi);
	{
		uint64_t c0 = vi.connects;

		fe_connect(f, path);
		WAIT_FOR((vinfo(&vi), vi.connects > c0), "accept");
	}
	fe_handshake(f, FE_TO_VRINGS, feats, poll_ctl);
	WAIT_FOR((vinfo(&vi), vi.connected), "link up");
	FE_CHECK(vi.features == feats);
}

/* Every buffer of the pool back, none twice. */
static void pool_full(const char *where)
{
	struct tide_pool_audit a;

	FE_CHECK(tide_pool_audit(pool, &a) == 0);
	if (a.free != a.n || a.duplicates != 0) {
		fprintf(stderr, "FAIL: %s: pool %u of %u free, %u freed twice\n", where, a.free,
			a.n, a.duplicates);
		exit(1);
	}
}

static void disconnect_fe(struct fe *f)
{
	struct tide_vhost_info vi;
	uint64_t d0;

	vinfo(&vi);
	d0 = vi.disconnects;
	fe_fini(f);
	WAIT_FOR((vinfo(&vi), vi.disconnects > d0), "disconnect");
	FE_CHECK(tide_pool_in_use(pool) == 0);
}

static uint64_t base_feats(void)
{
	return VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VHOST_USER_F_PROTOCOL_FEATURES) |
	       (mrg ? VIRTIO_BIT(VIRTIO_NET_F_MRG_RXBUF) : 0) | (packed ? F_PACKED : 0);
}

/* Open and start a port (@extra spec keys) with the Rx and Tx offloads @rx / @tx enabled. */
static void open_port(const char *extra, uint64_t rx, uint64_t tx)
{
	struct tide_rxq_conf rc = {.sz = sizeof(rc), .offloads = rx};
	struct tide_txq_conf tc = {.sz = sizeof(tc), .offloads = tx};
	char spec[200];

	snprintf(spec, sizeof(spec), "vhost:socket=%s%s", path, extra);
	FE_CHECK(tide_port_open(spec, &P) == 0);
	FE_CHECK(tide_port_configure(P, 1, 1) == 0);
	FE_CHECK(tide_rxq_setup(P, 0, 256, pool, &rc) == 0);
	FE_CHECK(tide_txq_setup(P, 0, 256, &tc) == 0);
	FE_CHECK(tide_port_start(P) == 0);
}

/* What the port offers a frontend (GET_FEATURES). */
static uint64_t offered(void)
{
	struct fe f;
	struct tide_vhost_info vi;
	uint64_t u = 0, c0;

	fe_init(&f);
	vinfo(&vi);
	c0 = vi.connects;
	fe_connect(&f, path);
	WAIT_FOR((vinfo(&vi), vi.connects > c0), "accept");
	fe_send(&f, VHOST_USER_GET_FEATURES, NULL, 0, NULL, 0);
	poll_ctl();
	FE_CHECK(fe_reply(&f, &u, 8) == 0);
	disconnect_fe(&f);
	return u;
}

#define RX_OL (TIDE_OFFLOAD_RX_TCP_CKSUM | TIDE_OFFLOAD_RX_UDP_CKSUM | TIDE_OFFLOAD_RX_TCP_LRO)
#define TX_OL                                                                        \
	(TIDE_OFFLOAD_TX_IPV4_CKSUM | TIDE_OFFLOAD_TX_TCP_CKSUM | TIDE_OFFLOAD_TX_UDP_CKSUM | \
	 TIDE_OFFLOAD_TX_TCP_TSO)

/* Which features with which queue settings; the capabilities. */
static void offer_checks(void)
{
	struct tide_port_info pi = {.sz = sizeof(pi)};
	struct tide_rxq_conf rc = {.sz = sizeof(rc), .offloads = TIDE_OFFLOAD_RX_TCP_CKSUM};
	char spec[200];
	uint64_t u;

	open_port("", RX_OL, TX_OL);
	FE_CHECK(tide_port_info_get(P, &pi) == 0);
	FE_CHECK(pi.rx_offload_capa == RX_OL && pi.tx_offload_capa == TX_OL);
	u = offered();
	FE_CHECK((u & (F_HOST | F_GUEST)) == (F_HOST | F_GUEST));
	tide_port_close(P);
	/* Rx checksums without LRO: no TSO from the guest. */
	open_port("", TIDE_OFFLOAD_RX_TCP_CKSUM | TIDE_OFFLOAD_RX_UDP_CKSUM, 0);
	u = offered();
	FE_CHECK((u & (F_HOST | F_GUEST)) == (F_CSUM | F_GUEST));
	tide_port_close(P);
	/* No Rx offloads: the guest sends nothing partial; it still takes ours. */
	open_port("", 0, 0);
	u = offered();
	FE_CHECK((u & (F_HOST | F_GUEST)) == F_GUEST);
	tide_port_close(P);
	/* offloads=no: nothing offered, no capabilities, an Rx offload refused. */
	snprintf(spec, sizeof(spec), "vhost:socket=%s,offloads=no", path);
	FE_CHECK(tide_port_open(spec, &P) == 0);
	FE_CHECK(tide_port_info_get(P, &pi) == 0);
	FE_CHECK(pi.rx_offload_capa == 0 && pi.tx_offload_capa == 0);
	FE_CHECK(tide_port_configure(P, 1, 1) == 0);
	FE_CHECK(tide_rxq_setup(P, 0, 256, pool, &rc) == -ENOTSUP);
	FE_CHECK(tide_rxq_setup(P, 0, 256, pool, NULL) == 0);
	FE_CHECK(tide_txq_setup(P, 0, 256, NULL) == 0);
	FE_CHECK(tide_port_start(P) == 0);
	u = offered();
	FE_CHECK((u & (F_HOST | F_GUEST)) == 0);
	tide_port_close(P);
	printf("ok   offered: all / CSUM+guest / guest only / none (offloads=no), capabilities\n");
}

/* ---- guest -> tide ---- */

static struct virtio_net_hdr_mrg tso_hdr(const struct pkt *k, uint16_t mss)
{
	struct virtio_net_hdr_mrg h = {
		.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
		.gso_type = (uint8_t)(k->v6 ? VIRTIO_NET_HDR_GSO_TCPV6 : VIRTIO_NET_HDR_GSO_TCPV4),
		.hdr_len = (uint16_t)(k->l2 + k->l3 + k->l4),
		.gso_size = mss,
		.csum_start = (uint16_t)(k->l2 + k->l3),
		.csum_offset = (uint16_t)(k->udp ? 6 : 16)};

	return h;
}

/* A guest's TSO frames and partial checksums arrive as requests the fallback completes. */
static void rx_good(struct fe *f)
{
	for (int c = 0; c < 4; c++) {
		bool v6 = c & 1;
		uint32_t payload = c < 2 ? 10000 : 30000;
		struct pkt k = build(A, v6, false, payload, 100u + (unsigned)c, true);
		struct virtio_net_hdr_mrg h = tso_hdr(&k, 1448);
		struct tide_mbuf *m, *out[32];
		uint32_t pos = 0, hdr = k.l2 + k.l3 + k.l4;
		int n;

		gtx_post(f, &h, A, k.len);
		m = rx_one();
		FE_CHECK(m != NULL);
		FE_CHECK(m->pkt_len == k.len);
		FE_CHECK(m->ol_flags == ((v6 ? TIDE_MBUF_F_TX_IPV6 : TIDE_MBUF_F_TX_IPV4) |
					 TIDE_MBUF_F_TX_TCP_CKSUM | TIDE_MBUF_F_TX_TCP_SEG |
					 TIDE_MBUF_F_RX_L4_CKSUM_NONE));
		FE_CHECK(m->l2_len == k.l2 && m->l3_len == k.l3 && m->l4_len == k.l4 &&
			 m->tso_segsz == 1448);
		FE_CHECK(tide_mbuf_read(m, 0, k.len, B) == 0 && memcmp(A, B, k.len) == 0);
		n = tide_offload_segment(m, pool, out, 32);
		FE_CHECK(n == (int)((payload + 1447) / 1448));
		for (int i = 0; i < n; i++) {
			uint32_t plen = out[i]->pkt_len - hdr;

			FE_CHECK(tide_mbuf_read(out[i], 0, out[i]->pkt_len, B) == 0);
			check_cksums(B, out[i]->pkt_len);
			FE_CHECK(memcmp(B + hdr, A + hdr + pos, plen) == 0);
			pos += plen;
		}
		FE_CHECK(pos == payload);
		tide_mbuf_free_bulk(out, (unsigned)n);
	}
	/* UDP with a partial checksum; TCP with DATA_VALID; no header. */
	{
		struct pkt k = build(A, false, true, 700, 7, true);
		struct virtio_net_hdr_mrg h = {.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
					       .csum_start = 34, .csum_offset = 6};
		struct tide_mbuf *m;

		gtx_post(f, &h, A, k.len);
		FE_CHECK((m = rx_one()) != NULL);
		FE_CHECK(m->ol_flags == (TIDE_MBUF_F_TX_IPV4 | TIDE_MBUF_F_TX_UDP_CKSUM |
					 TIDE_MBUF_F_RX_L4_CKSUM_NONE));
		FE_CHECK(tide_offload_cksum_fill(m) == 0);
		FE_CHECK(tide_mbuf_read(m, 0, k.len, B) == 0);
		check_cksums(B, k.len);
		tide_mbuf_free(m);

		k = build(A, true, false, 300, 8, false);
		h = (struct virtio_net_hdr_mrg){.flags = VIRTIO_NET_HDR_F_DATA_VALID};
		gtx_post(f, &h, A, k.len);
		FE_CHECK((m = rx_one()) != NULL);
		FE_CHECK(m->ol_flags == TIDE_MBUF_F_RX_L4_CKSUM_GOOD);
		tide_mbuf_free(m);
		h = (struct virtio_net_hdr_mrg){0};
		gtx_post(f, &h, A, k.len);
		FE_CHECK((m = rx_one()) != NULL);
		FE_CHECK(m->ol_flags == 0 && m->pkt_len == k.len);
		tide_mbuf_free(m);
	}
}

/* Every reason a header is refused: the packet dropped, counted by reason and in ierrors,
 * the connection kept (the next packet passes). */
static void rx_hostile(struct fe *f)
{
	static const char *const names[] = {NULL, "flags", "csum_beyond", "csum_align",
					    "csum_field", "gso_type", "gso_size", "gso_csum",
					    "gso_proto"};
	struct pkt k = build(A, false, false, 4000, 9, true);
	struct virtio_net_hdr_mrg good = tso_hdr(&k, 1448);

	for (unsigned r = 1; r < OFFLOAD_VNET_NR_REASONS; r++) {
		struct virtio_net_hdr_mrg h = good;
		struct tide_vhost_info vi;
		struct tide_mbuf *m;
		char name[64];
		uint64_t c0, e0;

		switch (r) {
		case OFFLOAD_VNET_FLAGS: h.flags |= 4; break;
		case OFFLOAD_VNET_CSUM_BEYOND: h.csum_start = (uint16_t)(k.len - 1); break;
		case OFFLOAD_VNET_CSUM_ALIGN: h.csum_offset = 15; break;
		case OFFLOAD_VNET_CSUM_FIELD: h.csum_offset = 6; break;
		case OFFLOAD_VNET_GSO_TYPE: h.gso_type = 2; break;
		case OFFLOAD_VNET_GSO_SIZE: h.gso_size = 0; break;
		case OFFLOAD_VNET_GSO_CSUM: h.flags = 0; break;
		case OFFLOAD_VNET_GSO_PROTO: h.gso_type = VIRTIO_NET_HDR_GSO_TCPV6; break;
		}
		snprintf(name, sizeof(name), "vhost_rx_hdr_%s", names[r]);
		FE_CHECK(strcmp(names[r], offload_vnet_reason_name(r)) == 0);
		c0 = xstat(name);
		e0 = errors(false);
		gtx_post(f, &h, A, k.len);
		FE_CHECK(rx_one() == NULL);
		if (xstat(name) != c0 + 1 || errors(false) != e0 + 1) {
			fprintf(stderr, "FAIL: header refused for %s: %s %llu -> %llu, ierrors %llu -> %llu\n",
				names[r], name, (unsigned long long)c0,
				(unsigned long long)xstat(name), (unsigned long long)e0,
				(unsigned long long)errors(false));
			exit(1);
		}
		gtx_post(f, &good, A, k.len);
		FE_CHECK((m = rx_one()) != NULL && m->pkt_len == k.len);
		tide_mbuf_free(m);
		vinfo(&vi);
		FE_CHECK(vi.connected && vi.violations == 0);
	}
}

/* ---- tide -> guest ---- */

/* A TSO packet of @payload bytes (IPv4 unless @v6) with its requests, from @p. */
static struct tide_mbuf *tso_pkt(struct tide_pool *p, bool v6, uint32_t payload, uint16_t mss,
				 struct pkt *k)
{
	struct tide_mbuf *m;

	*k = build(A, v6, false, payload, 55, false);
	m = to_mbuf(p, A, k->len);
	m->ol_flags = (v6 ? TIDE_MBUF_F_TX_IPV6 : TIDE_MBUF_F_TX_IPV4 | TIDE_MBUF_F_TX_IP_CKSUM) |
		      TIDE_MBUF_F_TX_TCP_CKSUM | TIDE_MBUF_F_TX_TCP_SEG;
	m->l2_len = (uint8_t)k->l2;
	m->l3_len = (uint16_t)k->l3;
	m->l4_len = (uint8_t)k->l4;
	m->tso_segsz = mss;
	return m;
}

/* The guest got the @n segments of the packet in A (@k, @mss), every checksum right. */
static void check_segments_at_guest(struct fe *f, const struct pkt *k, uint16_t mss, int n)
{
	uint32_t hdr = k->l2 + k->l3 + k->l4, pos = 0;

	for (int i = 0; i < n; i++) {
		struct virtio_net_hdr_mrg h;
		int len = grx_pkt(f, &h, B);

		FE_CHECK(len > 0);
		FE_CHECK(h.gso_type == VIRTIO_NET_HDR_GSO_NONE &&
			 !(h.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM));
		FE_CHECK((uint32_t)len == hdr + (i + 1 < n ? mss : k->payload - pos));
		check_cksums(B, (uint32_t)len);
		FE_CHECK(memcmp(B + hdr, A + hdr + pos, (uint32_t)len - hdr) == 0);
		pos += (uint32_t)len - hdr;
	}
	FE_CHECK(pos == k->payload);
}

/* Send @m alone; 1 when the burst took it. */
static unsigned tx1(struct tide_mbuf *m)
{
	return tide_tx_burst(tide_port_txq(P, 0), &m, 1);
}

static void tx_checks(struct fe *f, bool goff)
{
	struct virtio_net_hdr_mrg h;
	struct tide_mbuf *m;
	struct pkt k;
	uint64_t g0 = xstat("vhost_tx_sw_gso"), c0 = xstat("vhost_tx_sw_cksum"), e0, b0;

	grx_nd = mrg ? 1 : 8; /* without mergeable buffers: 16 KiB per buffer */
	for (int v6 = 0; v6 < 2; v6++) {
		grx_post(f, goff ? (mrg ? 5 : 1) : 7, grx_nd);
		m = tso_pkt(pool, v6, 10000, 1448, &k);
		FE_CHECK(tx1(m) == 1);
		if (goff) {
			/* The request in the header; the guest completes the checksum. */
			FE_CHECK(grx_pkt(f, &h, B) == (int)k.len);
			FE_CHECK(h.flags == VIRTIO_NET_HDR_F_NEEDS_CSUM && h.gso_size == 1448 &&
				 h.gso_type == (v6 ? VIRTIO_NET_HDR_GSO_TCPV6 : VIRTIO_NET_HDR_GSO_TCPV4) &&
				 h.csum_start == k.l2 + k.l3 && h.csum_offset == 16 &&
				 h.hdr_len == k.l2 + k.l3 + k.l4);
			complete(B, k.len, h.csum_start, h.csum_offset);
			check_cksums(B, k.len);
			FE_CHECK(memcmp(B + k.l2 + k.l3 + k.l4, A + k.l2 + k.l3 + k.l4, k.payload) == 0);
		} else {
			check_segments_at_guest(f, &k, 1448, 7);
		}
		FE_CHECK(grx_pkt(f, &h, B) == -1);
		FE_CHECK(tide_pool_in_use(pool) == 0);
	}
	FE_CHECK(xstat("vhost_tx_sw_gso") == g0 + (goff ? 0 : 2));

	/* A UDP checksum request (and the IPv4 header's, always in software). */
	grx_post(f, 1, grx_nd);
	k = build(A, false, true, 900, 3, false);
	m = to_mbuf(pool, A, k.len);
	put16(tide_mbuf_mtod_offset(m, uint8_t *, k.l2 + k.l3 + 6), 0xdead);
	put16(tide_mbuf_mtod_offset(m, uint8_t *, k.l2 + 10), 0xbeef);
	m->ol_flags = TIDE_MBUF_F_TX_IPV4 | TIDE_MBUF_F_TX_IP_CKSUM | TIDE_MBUF_F_TX_UDP_CKSUM;
	m->l2_len = (uint8_t)k.l2;
	m->l3_len = (uint16_t)k.l3;
	FE_CHECK(tx1(m) == 1);
	FE_CHECK(grx_pkt(f, &h, B) == (int)k.len);
	if (goff) {
		FE_CHECK(h.flags == VIRTIO_NET_HDR_F_NEEDS_CSUM && h.gso_type == 0 &&
			 h.csum_start == k.l2 + k.l3 && h.csum_offset == 6);
		complete(B, k.len, h.csum_start, h.csum_offset);
	} else {
		FE_CHECK(h.flags == 0 && h.gso_type == 0);
	}
	check_cksums(B, k.len);
	FE_CHECK(memcmp(B, A, k.len) == 0); /* the checksums as build() made them */
	FE_CHECK(xstat("vhost_tx_sw_cksum") == c0 + (goff ? 0 : 1));

	/* Requests that do not match the packet, and UDP segmentation: dropped, counted. */
	e0 = errors(true);
	b0 = xstat("vhost_tx_ol_bad");
	grx_post(f, 1, grx_nd);
	m = to_mbuf(pool, A, k.len);
	m->ol_flags = TIDE_MBUF_F_TX_IPV4 | TIDE_MBUF_F_TX_TCP_CKSUM; /* a UDP packet */
	m->l2_len = (uint8_t)k.l2;
	m->l3_len = (uint16_t)k.l3;
	FE_CHECK(tx1(m) == 1);
	m = to_mbuf(pool, A, k.len);
	m->ol_flags = TIDE_MBUF_F_TX_IPV4 | TIDE_MBUF_F_TX_UDP_CKSUM | TIDE_MBUF_F_TX_UDP_SEG;
	m->l2_len = (uint8_t)k.l2;
	m->l3_len = (uint16_t)k.l3;
	m->l4_len = 8;
	m->tso_segsz = 100;
	FE_CHECK(tx1(m) == 1);
	m = tso_pkt(pool, false, 3000, 1000, &k);
	m->l3_len = 24;
	FE_CHECK(tx1(m) == 1);
	FE_CHECK(xstat("vhost_tx_ol_bad") == b0 + 3 && errors(true) == e0 + 3);
	FE_CHECK(grx_pkt(f, &h, B) == -1); /* nothing reached the guest */
	FE_CHECK(tide_pool_in_use(pool) == 0);
	/* the buffer posted stays for the next packet */
	k = build(A, false, true, 10, 1, false);
	FE_CHECK(tx1(to_mbuf(pool, A, k.len)) == 1);
	FE_CHECK(grx_pkt(f, &h, B) == (int)k.len);
	if (goff)
		return;

	/* Software segmentation whose pool runs dry: dropped, counted, the pool full. */
	{
		struct tide_pool *tiny;
		uint64_t n0 = xstat("vhost_tx_ol_nombuf");

		FE_CHECK(tide_pktpool_create("vhost-ol-tiny", 4, 0, 16384, NULL, &tiny) == 0);
		grx_post(f, 7, grx_nd);
		m = tso_pkt(tiny, false, 10000, 1448, &k);
		e0 = errors(true);
		FE_CHECK(tx1(m) == 1);
		FE_CHECK(xstat("vhost_tx_ol_nombuf") == n0 + 1 && errors(true) == e0 + 1);
		FE_CHECK(tide_pool_in_use(tiny) == 0);
		tide_pool_free(tiny);
		/* the 7 buffers take the next packet's segments */
		m = tso_pkt(pool, false, 10000, 1448, &k);
		FE_CHECK(tx1(m) == 1);
		check_segments_at_guest(f, &k, 1448, 7);
	}
	/* The guest's ring fills midway: the segments that fit go, the rest are counted. */
	{
		uint64_t p0 = xstat("vhost_tx_gso_partial");

		g0 = xstat("vhost_tx_sw_gso");
		e0 = errors(true);
		grx_post(f, 3, grx_nd);
		m = tso_pkt(pool, true, 10000, 1448, &k);
		FE_CHECK(tx1(m) == 1);
		FE_CHECK(xstat("vhost_tx_gso_partial") == p0 + 4 && xstat("vhost_tx_sw_gso") == g0 + 1);
		FE_CHECK(errors(true) == e0);
		for (int i = 0; i < 3; i++)
			FE_CHECK(grx_pkt(f, &h, B) > 0);
		FE_CHECK(grx_pkt(f, &h, B) == -1);
		FE_CHECK(tide_pool_in_use(pool) == 0);
		/* Without mergeable buffers, a first segment larger than the guest's buffer:
		 * dropped and counted as any packet too large for it, no segment counted. */
		if (!mrg) {
			grx_len = 1024;
			grx_post(f, 1, 1);
			grx_len = FE_BUF;
			e0 = errors(true);
			p0 = xstat("vhost_tx_gso_partial");
			g0 = xstat("vhost_tx_sw_gso");
			m = tso_pkt(pool, false, 10000, 1448, &k);
			FE_CHECK(tx1(m) == 1);
			FE_CHECK(errors(true) == e0 + 1 && xstat("vhost_tx_gso_partial") == p0 &&
				 xstat("vhost_tx_sw_gso") == g0);
			FE_CHECK(tide_pool_in_use(pool) == 0);
			k = build(A, false, true, 100, 1, false); /* takes the small buffer */
			FE_CHECK(tx1(to_mbuf(pool, A, k.len)) == 1);
			FE_CHECK(grx_pkt(f, &h, B) == (int)k.len);
		}
		/* No buffer at all: the packet stays the caller's, untouched. */
		m = tso_pkt(pool, true, 10000, 1448, &k);
		FE_CHECK(tx1(m) == 0);
		FE_CHECK(tide_mbuf_read(m, 0, k.len, B) == 0 && memcmp(A, B, k.len) == 0);
		tide_mbuf_free(m);
	}
}

/* A TSO packet with CWR to a guest with TSO: the header says ECN when the guest negotiated
 * it; without, the packet is segmented here (the guest could not take the ECN bit). */
static void ecn_checks(void)
{
	for (int ecn = 0; ecn < 2; ecn++) {
		struct fe f;
		struct virtio_net_hdr_mrg h;
		struct tide_mbuf *m;
		struct pkt k;
		uint64_t g0 = xstat("vhost_tx_sw_gso");

		packed = false;
		mrg = true;
		grx_nd = 1;
		connect_fe(&f, base_feats() | F_GUEST_CSUM | F_GUEST_TSO4 | F_GUEST_TSO6 |
				       (ecn ? F_GUEST_ECN : 0));
		grx_post(&f, ecn ? 5 : 7, 1);
		m = tso_pkt(pool, false, 10000, 1448, &k);
		tide_mbuf_mtod(m, uint8_t *)[k.l2 + k.l3 + 13] |= 0x80; /* CWR */
		FE_CHECK(tx1(m) == 1);
		if (ecn) {
			FE_CHECK(grx_pkt(&f, &h, B) == (int)k.len);
			FE_CHECK(h.gso_type == (VIRTIO_NET_HDR_GSO_TCPV4 | VIRTIO_NET_HDR_GSO_ECN));
			FE_CHECK(xstat("vhost_tx_sw_gso") == g0);
		} else {
			FE_CHECK(xstat("vhost_tx_sw_gso") == g0 + 1);
			for (int i = 0; i < 7; i++) {
				FE_CHECK(grx_pkt(&f, &h, B) > 0);
				FE_CHECK(h.gso_type == VIRTIO_NET_HDR_GSO_NONE && h.flags == 0);
				check_cksums(B, k.l2 + k.l3 + k.l4 + (i < 6 ? 1448u : 10000u - 6 * 1448));
				FE_CHECK(!!(B[k.l2 + k.l3 + 13] & 0x80) == (i == 0)); /* CWR first */
			}
		}
		FE_CHECK(grx_pkt(&f, &h, B) == -1);
		disconnect_fe(&f);
	}
	printf("ok   CWR: ECN in the header for a guest with GUEST_ECN, segmented without\n");
}

/* A guest receive buffer the device may not write, met by the first segment of a packet cut
 * in software: a violation; the packet stays the caller's, whole; nothing leaks. */
static void seg_fault_check(void)
{
	struct fe f;
	struct tide_vhost_info vi;
	struct tide_mbuf *m;
	struct pkt k;
	uint64_t v0;

	packed = false;
	mrg = true;
	grx_nd = 1;
	connect_fe(&f, base_feats());
	vinfo(&vi);
	v0 = vi.violations;
	grx_post(&f, 7, 1);
	f.vq[0].desc[0].flags = 0; /* read-only */
	m = tso_pkt(pool, false, 10000, 1448, &k);
	FE_CHECK(tx1(m) == 0);
	FE_CHECK(m->pkt_len == k.len && tide_mbuf_refcnt_read(m) == 1);
	FE_CHECK(tide_mbuf_read(m, 0, k.len, B) == 0 && memcmp(A, B, k.len) == 0);
	tide_mbuf_free(m);
	WAIT_FOR((vinfo(&vi), vi.violations == v0 + 1 && !vi.connected), "the violation");
	FE_CHECK(strstr(vi.reason, "device-readable descriptor in a receive chain") != NULL);
	fe_fini(&f);
	FE_CHECK(tide_pool_in_use(pool) == 0);
	printf("ok   software segmentation into a read-only guest buffer: violation, packet kept\n");
}

/* ---- main ---- */

static void remove_socket(void)
{
	unlink(path);
}

int main(void)
{
	tide_thread_register();
	snprintf(path, sizeof(path), "%s/tide-vhost-offload-%d.sock", test_tmp(), (int)getpid());
	atexit(remove_socket);
	FE_CHECK(tide_pktpool_create("vhost-ol", 4096, 64, 0, NULL, &pool) == 0);
	offer_checks();
	open_port("", RX_OL, TX_OL);
	for (int lay = 0; lay < 2; lay++) {
		for (int mg = 0; mg < 2; mg++) {
			for (int goff = 0; goff < 2; goff++) {
				struct fe f;

				packed = lay;
				mrg = mg;
				connect_fe(&f, base_feats() | F_HOST | (goff ? F_GUEST : 0));
				rx_good(&f);
				pool_full("guest -> tide");
				rx_hostile(&f);
				pool_full("hostile headers");
				tx_checks(&f, goff);
				pool_full("tide -> guest");
				disconnect_fe(&f);
				printf("ok   %s, mrg_rxbuf %s, guest offloads %s: guest TSO and "
				       "checksums in, every refused header counted; TSO and "
				       "checksums out\n",
				       packed ? "packed" : "split", mrg ? "on" : "off",
				       goff ? "on" : "off");
			}
		}
	}
	ecn_checks();
	seg_fault_check();
	tide_port_close(P);
	FE_CHECK(tide_pool_in_use(pool) == 0);
	tide_pool_free(pool);
	return 0;
}
