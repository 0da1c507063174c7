/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost_lockstep: the vhost-user 2x2 in one EAL process, one 32-packet burst at a time in
 * lock step, on one CPU. A pair is a frontend, tide's virtio port (vhost-user client) or
 * DPDK's net_virtio_user (the PMD bench/vhost/run's testpmd frontend uses), and a backend,
 * tide's vhost port or DPDK's net_vhost, on a socket of their own; up to MAX_PAIRS pairs
 * run in one process, each with a frontend and a backend of its own. Each port has one
 * queue pair of 1024 descriptors (N with ",vring=N" after the mode), and both frontends
 * run with the same features, their defaults: mrg_rxbuf and in_order on, split virtqueues
 * unless -packed. Every frontend and every backend has a pool of its own, as a guest and a
 * switch do: a pool shared in one process would hand the buffer the frontend's Tx just freed straight to net_vhost's Rx, hot
 * in the cache. tide's frontend's pool is shareable (TIDE_POOL_F_SHARED, a memfd) because the
 * backend maps it; tide's frontend sends from it in place, as virtio-user does from the EAL's
 * memory. Each backend listens on its socket (tide: role=server, unsealed_mem=yes behind DPDK's
 * frontend, whose memory files are not sealed; net_vhost: its default) and the frontend
 * connects; vhost-user messages are served by the ports' own control threads (tide's
 * <port>-ctl, DPDK's vhost thread) while virtio-user's probe or the main thread waits.
 *
 *   rx (guest -> backend):  bench_fe_tx  the frontend's Tx burst (onto its Tx vring)
 *                           bench_be_rx  the backend's Rx burst (copies them out)
 *   tx (backend -> guest):  bench_be_tx  the backend's Tx burst (copies them in)
 *                           bench_fe_rx  the frontend's Rx burst
 *
 * Two readings:
 *  - instructions (one pair): `valgrind --tool=callgrind --toggle-collect=bench_be_rx ...`
 *    counts one burst function alone (inclusive); packets are built and checked outside;
 *  - wall clock: each burst call is timed (bench/lockstep_time.h) and printed per packet, after
 *    WARM untimed bursts per pair (the first bursts carry one-off costs, first touches of
 *    memory among them). One CPU, no second process: the time the backend's
 *    and the frontend's work takes, without the cross-CPU cache-line traffic and the scheduler
 *    that set the rate of a two-process pair (docs/drivers/vhost.md). With several pairs they
 *    take turns in blocks of BLOCK bursts (which goes first rotates): a slow spell of the
 *    machine (another guest, a frequency change) falls on every pair alike, while each block
 *    still runs on the caches its own previous block left.
 *
 * usage: vhost_lockstep PAIRS rx|tx[-packed] PACKETS SIZE EAL-ARGS...
 *        (e.g. --no-pci -l 0 --huge-dir D --file-prefix P --single-file-segments)
 * PAIRS: P[+P...] with P = FE/BE, or BE alone for dpdk/BE (DPDK's frontend);
 * FE = dpdk | tide | tide:KEY=V[,KEY=V] (tide's virtio port with extra spec keys);
 * BE = dpdk | tide | tide:KEY=V[,KEY=V] (tide's vhost port with extra spec keys, e.g.
 * tide+tide:txfree_loop=yes for the seed 003 row). "both" is tide+dpdk (DPDK's frontend
 * with either backend); "2x2" is tide/tide+dpdk/tide+tide/dpdk+dpdk/dpdk. At most
 * MAX_PAIRS, dpdk/dpdk at most once (see pairs_up()).
 * -packed: packed virtqueues (virtio-user packed_vq=1, tide's virtio port packed=yes; both
 * backends offer them).
 * Prints, per pair, "pair=FE/BE dir=.. packets=N size=S mrg_rxbuf=0|1 in_order=0|1
 * packed=0|1 pool_huge=F,B" (the features the backend negotiated, which are the
 * frontend's; F and B: whether tide's frontend's and backend's pools are on 2 MiB pages,
 * "-" for DPDK's, which are the EAL's memory) and "ns_per_pkt=FE,BE" (the frontend's and
 * the backend's bursts, wall clock, over the whole run) and "ns_per_pkt_med=FE,BE" (the
 * median over the run's blocks of BLOCK bursts of each side's time per packet: a preemption
 * inside a timed call inflates one block, where it adds its whole length to the sum).
 * Exit 1 when a burst moves less than asked, a payload arrives changed, the layout asked for
 * was not negotiated, or a pool is not full at the end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_vhost.h>

#include <tide/lcore.h>
#include <tide/mbuf.h>
#include <tide/pool.h>
#include <tide/port.h>
#include <tide/vhost.h>

#include "../dpdk_instr.h"
#include "../lockstep_time.h"
#include "../../tests/tmp_util.h"

#define F_MRG_RXBUF (1ull << 15)   /* VIRTIO_NET_F_MRG_RXBUF */
#define F_RING_PACKED (1ull << 34) /* VIRTIO_F_RING_PACKED */
#define F_IN_ORDER (1ull << 35)    /* VIRTIO_F_IN_ORDER */
#define BLOCK 256                  /* bursts per turn with several pairs */
#define WARM 1024                  /* untimed bursts per pair before the clock starts */

/* Every vring's depth: 1024 unless the mode says ",vring=N" (virtio-user's and tide's
 * virtio port's default is 256, QEMU's virtio-net-pci's too). */
static unsigned vring = 1024;

#define MAX_PAIRS 4

/* One frontend with its backend: the unit the lock step drives. */
struct pair {
	char name[100];             /* "FE/BE" ("dpdk/" added when FE was left out) */
	char fe_s[48], be_s[48];    /* FE and BE as given */
	const char *fe_extra;       /* tide: spec keys after the ':', else "" */
	const char *be_extra;
	int fe_tide;                /* tide's virtio port, else DPDK's net_virtio_user */
	int be_tide;                /* tide's vhost port, else DPDK's net_vhost */
	uint16_t fe;                /* the virtio-user port */
	uint16_t be;                /* net_vhost's port */
	struct tide_port *ftp;      /* tide's virtio port */
	struct tide_port *btp;      /* tide's vhost port */
	struct tide_rxq *frxq;      /* the tide ports' queue handles, taken at setup */
	struct tide_txq *ftxq;
	struct tide_rxq *brxq;
	struct tide_txq *btxq;
	struct rte_mempool *mp_fe;  /* virtio-user's pool */
	struct rte_mempool *mp_be;  /* net_vhost's pool */
	struct tide_pool *fpool;    /* tide's frontend's pool (shared) */
	struct tide_pool *bpool;    /* tide's backend's pool */
	char vdev[32];              /* net_vhost's device name */
	char sock[108];
	uint64_t done, feat;
	uint64_t timed;             /* the packets of done since the clock started */
	uint64_t ns[2];             /* frontend, backend */
	double *blk[2];             /* per block of BLOCK bursts: ns per packet of each side */
	uint64_t nblk;
};

/* The four measured calls; they take void ** (rte_mbuf or tide_mbuf pointers). */
__attribute__((noinline)) uint16_t bench_fe_tx(struct pair *p, void **pk, uint16_t n);
__attribute__((noinline)) uint16_t bench_fe_tx(struct pair *p, void **pk, uint16_t n)
{
	return p->fe_tide ? tide_tx_burst(p->ftxq, (struct tide_mbuf **)pk, n)
			  : rte_eth_tx_burst(p->fe, 0, (struct rte_mbuf **)pk, n);
}

__attribute__((noinline)) uint16_t bench_fe_rx(struct pair *p, void **pk, uint16_t n);
__attribute__((noinline)) uint16_t bench_fe_rx(struct pair *p, void **pk, uint16_t n)
{
	return p->fe_tide ? tide_rx_burst(p->frxq, (struct tide_mbuf **)pk, n)
			  : rte_eth_rx_burst(p->fe, 0, (struct rte_mbuf **)pk, n);
}

__attribute__((noinline)) uint16_t bench_be_rx(struct pair *p, void **pk, uint16_t n);
__attribute__((noinline)) uint16_t bench_be_rx(struct pair *p, void **pk, uint16_t n)
{
	return p->be_tide ? tide_rx_burst(p->brxq, (struct tide_mbuf **)pk, n)
			  : rte_eth_rx_burst(p->be, 0, (struct rte_mbuf **)pk, n);
}

__attribute__((noinline)) uint16_t bench_be_tx(struct pair *p, void **pk, uint16_t n);
__attribute__((noinline)) uint16_t bench_be_tx(struct pair *p, void **pk, uint16_t n)
{
	return p->be_tide ? tide_tx_burst(p->btxq, (struct tide_mbuf **)pk, n)
			  : rte_eth_tx_burst(p->be, 0, (struct rte_mbuf **)pk, n);
}

/* di_fill()/di_take() for tide's mbufs: BURST packets numbered from @seq; @k arrived whole. */
static void tide_fill(struct tide_pool *pool, void **pk, unsigned size, uint64_t seq)
{
	for (unsigned j = 0; j < BURST; j++) {
		struct tide_mbuf *m = tide_mbuf_alloc(pool);
		char *d;

		SU_CHECK(m != NULL);
		d = tide_mbuf_append(m, (uint16_t)size);
		SU_CHECK(d != NULL);
		memset(d, 0x5a, size);
		memcpy(d, &seq, sizeof(seq));
		seq++;
		pk[j] = m;
	}
}

static void tide_take(void **pk, unsigned k, unsigned size, uint64_t seq)
{
	for (unsigned j = 0; j < k; j++) {
		struct tide_mbuf *m = pk[j];
		uint64_t s;

		SU_CHECK(m->pkt_len == size && m->nb_segs == 1);
		memcpy(&s, tide_mbuf_mtod(m, const char *), sizeof(s));
		SU_CHECK(s == seq + j);
	}
	tide_mbuf_free_bulk((struct tide_mbuf **)pk, k);
}

static struct rte_mempool *mempool(const char *what, unsigned idx)
{
	char n[RTE_MEMPOOL_NAMESIZE];
	struct rte_mempool *mp;

	snprintf(n, sizeof(n), "%s-%u", what, idx);
	mp = rte_pktmbuf_pool_create(n, 8191, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				     rte_socket_id());
	SU_CHECK(mp != NULL);
	return mp;
}

/* @p's pools. All of them are made before the first virtio-user starts (see pairs_up()). */
static void pair_pools(struct pair *p, unsigned idx)
{
	struct tide_pktpool_opts so = {.sz = sizeof(so), .pool_flags = TIDE_POOL_F_SHARED};
	char name[32];

	if (p->fe_tide) {
		snprintf(name, sizeof(name), "lsfe%u", idx);
		SU_CHECK(tide_pktpool_create(name, 8192, 256, 0, &so, &p->fpool) == 0);
	} else {
		p->mp_fe = mempool("fe", idx);
	}
	if (p->be_tide) {
		snprintf(name, sizeof(name), "lsbe%u", idx);
		SU_CHECK(tide_pktpool_create(name, 8192, 256, 0, NULL, &p->bpool) == 0);
	} else {
		p->mp_be = mempool("be", idx);
	}
}

/* A tide port of one queue pair on @pool, started; its queue handles into @rxq and @txq. */
static struct tide_port *tide_port_up(const char *spec, struct tide_pool *pool,
				      struct tide_rxq **rxq, struct tide_txq **txq)
{
	struct tide_port *tp;

	SU_CHECK(tide_port_open(spec, &tp) == 0);
	SU_CHECK(tide_port_configure(tp, 1, 1) == 0);
	SU_CHECK(tide_rxq_setup(tp, 0, vring, pool, NULL) == 0);
	SU_CHECK(tide_txq_setup(tp, 0, vring, NULL) == 0);
	SU_CHECK(tide_port_start(tp) == 0);
	*rxq = tide_port_rxq(tp, 0);
	*txq = tide_port_txq(tp, 0);
	return tp;
}

/* Bring up @p's backend (listening on its socket) and then its frontend (it connects;
 * virtio-user is hot-plugged and its probe runs the handshake). net_vhost's device itself
 * comes from the EAL arguments. */
static void pair_up(struct pair *p, unsigned idx, int packed)
{
	struct tide_port_info info = {.sz = sizeof(info)};
	char spec[300], name[32];

	if (p->be_tide) {
		unlink(p->sock);
		snprintf(spec, sizeof(spec), "vhost:socket=%s,role=server%s%s%s", p->sock,
			 p->fe_tide ? "" : ",unsealed_mem=yes", *p->be_extra ? "," : "",
			 p->be_extra);
		p->btp = tide_port_up(spec, p->bpool, &p->brxq, &p->btxq);
	} else {
		SU_CHECK(rte_eth_dev_get_port_by_name(p->vdev, &p->be) == 0);
		di_port_up(p->be, p->mp_be);
	}
	if (p->fe_tide) {
		snprintf(spec, sizeof(spec),
			 "virtio:path=%s,role=client,queue_size=%d%s%s%s",
			 p->sock, vring, packed ? ",packed=yes" : "", *p->fe_extra ? "," : "",
			 p->fe_extra);
		p->ftp = tide_port_up(spec, p->fpool, &p->frxq, &p->ftxq);
		/* The depth asked for is the one the port runs with (its queue_size key). */
		SU_CHECK(tide_port_info_get(p->ftp, &info) == 0 && info.rx_desc_pref == vring);
		return;
	}
	snprintf(name, sizeof(name), "net_virtio_user%u", idx);
	snprintf(spec, sizeof(spec), "%s,path=%s,queues=1,queue_size=%d%s", name, p->sock, vring,
		 packed ? ",packed_vq=1" : "");
	SU_CHECK(rte_dev_probe(spec) == 0);
	SU_CHECK(rte_eth_dev_get_port_by_name(name, &p->fe) == 0);
	di_port_up(p->fe, p->mp_fe);
}

static int links_up(struct pair *p)
{
	struct rte_eth_link lk;
	struct tide_link lt;

	if (p->fe_tide) {
		SU_CHECK(tide_port_link_get(p->ftp, &lt) == 0);
		if (!lt.up)
			return 0;
	} else {
		SU_CHECK(rte_eth_link_get_nowait(p->fe, &lk) == 0);
		if (!lk.link_status)
			return 0;
	}
	if (p->be_tide) {
		SU_CHECK(tide_port_link_get(p->btp, &lt) == 0);
		return lt.up;
	}
	SU_CHECK(rte_eth_link_get_nowait(p->be, &lk) == 0);
	return lk.link_status;
}

/* Wait for @p's links. tide's frontend posts its receive buffers at an Rx burst once a
 * connection runs (its control thread waits for that before the link goes up): poll it
 * meanwhile, and once more after, so that the backend's first Tx burst finds them. */
static void pair_wait(struct pair *p)
{
	void *pk[BURST];

	for (int t = 0;; t++) {
		if (p->fe_tide)
			SU_CHECK(bench_fe_rx(p, pk, BURST) == 0);
		if (links_up(p))
			break;
		SU_CHECK(t < 30000); /* 30 s */
		usleep(1000);
	}
	if (p->fe_tide)
		SU_CHECK(bench_fe_rx(p, pk, BURST) == 0);
}

static uint64_t backend_features(struct pair *p)
{
	struct tide_vhost_info vi = {.sz = sizeof(vi)};
	uint64_t feat;
	int vid;

	if (p->be_tide) {
		SU_CHECK(tide_vhost_info_get(p->btp, &vi) == 0);
		return vi.features;
	}
	/* net_vhost's device is the librte_vhost device on its socket (a vid's name is its
	 * socket path; vids are given out from 0 as frontends connect). */
	for (vid = 0; vid < RTE_MAX_ETHPORTS; vid++) {
		char ifname[sizeof(p->sock)];

		if (rte_vhost_get_ifname(vid, ifname, sizeof(ifname)) == 0 &&
		    strcmp(ifname, p->sock) == 0)
			break;
	}
	SU_CHECK(vid < RTE_MAX_ETHPORTS);
	SU_CHECK(rte_vhost_get_negotiated_features(vid, &feat) == 0);
	return feat;
}

/*
 * Bring every pair up. DPDK memory that grows while a virtio-user runs makes it send its
 * backend a new memory table while it holds the EAL's memory lock; net_vhost's thread in
 * this same process needs that lock to answer, and it grows DPDK memory itself while it
 * serves a handshake. So all pools are made first, and the pair of virtio-user and
 * net_vhost comes last, after every other pair's handshake is done: its virtio-user's rings
 * are the last DPDK memory taken, and no net_vhost handshake runs after it. tide's control
 * threads take no EAL lock.
 */
static void pairs_up(struct pair *pairs, int n, int packed)
{
	int dd = -1;

	for (int i = 0; i < n; i++)
		pair_pools(&pairs[i], (unsigned)i);
	for (int i = 0; i < n; i++) {
		if (!pairs[i].fe_tide && !pairs[i].be_tide) {
			dd = i;
			continue;
		}
		pair_up(&pairs[i], (unsigned)i, packed);
	}
	for (int i = 0; i < n; i++)
		if (i != dd)
			pair_wait(&pairs[i]);
	if (dd >= 0) {
		pair_up(&pairs[dd], (unsigned)dd, packed);
		pair_wait(&pairs[dd]);
	}
	for (int i = 0; i < n; i++) {
		pairs[i].feat = backend_features(&pairs[i]);
		SU_CHECK(!!(pairs[i].feat & F_RING_PACKED) == packed);
	}
}

/* @bursts lock-step bursts of @p in direction @tx, every burst call timed. */
static void run(struct pair *p, int tx, unsigned size, uint64_t bursts)
{
	int send_tide = tx ? p->be_tide : p->fe_tide;
	int recv_tide = tx ? p->fe_tide : p->be_tide;

	for (uint64_t b = 0; b < bursts; b++) {
		void *pk[BURST];
		unsigned k, got = 0;

		if (send_tide)
			tide_fill(tx ? p->bpool : p->fpool, pk, size, p->done);
		else
			di_fill(tx ? p->mp_be : p->mp_fe, (struct rte_mbuf **)pk, size, p->done);
		k = tx ? LS_TIMED(p->ns, 1, bench_be_tx(p, pk, BURST))
		       : LS_TIMED(p->ns, 0, bench_fe_tx(p, pk, BURST));
		SU_CHECK(k == BURST);
		/* The vring is filled before the first lock-step burst is taken (a queue may be
		 * enabled a moment after the link): retry an empty first poll, and start the
		 * clock again. */
		for (int i = 0; got == 0; i++) {
			SU_CHECK(i < 30000);
			got = tx ? LS_TIMED(p->ns, 0, bench_fe_rx(p, pk, BURST))
				 : LS_TIMED(p->ns, 1, bench_be_rx(p, pk, BURST));
			if (got == 0) {
				SU_CHECK(p->done == 0);
				p->ns[0] = p->ns[1] = 0;
				usleep(1000);
			}
		}
		SU_CHECK(got == BURST);
		if (recv_tide)
			tide_take(pk, got, size, p->done);
		else
			di_take((struct rte_mbuf **)pk, got, size, p->done, 0);
		p->done += BURST;
	}
}

static void pair_down(struct pair *p)
{
	if (p->fe_tide) {
		tide_port_close(p->ftp);
		SU_CHECK(tide_pool_in_use(p->fpool) == 0);
		tide_pool_free(p->fpool);
	} else {
		rte_eth_dev_stop(p->fe);
		rte_eth_dev_close(p->fe);
		SU_CHECK(rte_mempool_full(p->mp_fe));
	}
	if (p->be_tide) {
		tide_port_close(p->btp);
		SU_CHECK(tide_pool_in_use(p->bpool) == 0);
		tide_pool_free(p->bpool);
	} else {
		rte_eth_dev_stop(p->be);
		rte_eth_dev_close(p->be);
		SU_CHECK(rte_mempool_full(p->mp_be));
	}
	unlink(p->sock);
}

/* "dpdk", "tide" or "tide:KEYS" -> *@tide and the keys; -1 when it is none of them. */
static int parse_side(const char *t, int *tide, const char **extra)
{
	if (strcmp(t, "dpdk") == 0) {
		*tide = 0;
		*extra = "";
	} else if (strcmp(t, "tide") == 0 || strncmp(t, "tide:", 5) == 0) {
		*tide = 1;
		*extra = t[4] ? t + 5 : "";
	} else {
		return -1;
	}
	return 0;
}

/* Parse "P[+P...]" (P: FE/BE or BE; "both", "2x2") into @pairs. Returns the count, 0 when
 * it is not one; dpdk/dpdk at most once. */
static int parse_pairs(const char *arg, struct pair *pairs)
{
	char buf[400], *save = NULL;
	int n = 0, dd = 0;

	if (strcmp(arg, "both") == 0)
		arg = "tide+dpdk";
	else if (strcmp(arg, "2x2") == 0)
		arg = "tide/tide+dpdk/tide+tide/dpdk+dpdk/dpdk";
	snprintf(buf, sizeof(buf), "%s", arg);
	for (char *t = strtok_r(buf, "+", &save); t; t = strtok_r(NULL, "+", &save)) {
		struct pair *p = &pairs[n];
		char *slash = strchr(t, '/');
		const char *fe = slash ? t : "dpdk", *be = slash ? slash + 1 : t;

		if (slash)
			*slash = '\0';
		if (n == MAX_PAIRS || strlen(fe) >= sizeof(p->fe_s) || strlen(be) >= sizeof(p->be_s))
			return 0;
		snprintf(p->fe_s, sizeof(p->fe_s), "%s", fe);
		snprintf(p->be_s, sizeof(p->be_s), "%s", be);
		snprintf(p->name, sizeof(p->name), "%s/%s", fe, be);
		if (parse_side(p->fe_s, &p->fe_tide, &p->fe_extra) < 0 ||
		    parse_side(p->be_s, &p->be_tide, &p->be_extra) < 0)
			return 0;
		if (!p->fe_tide && !p->be_tide && dd++)
			return 0;
		n++;
	}
	return n;
}

static struct pair pairs[MAX_PAIRS];
static int npairs;

/* At exit, a failed check's too: no socket left behind. */
static void unlink_socks(void)
{
	for (int i = 0; i < npairs; i++)
		unlink(pairs[i].sock);
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of @n values (sorts them). */
static double median(double *v, uint64_t n)
{
	qsort(v, n, sizeof(*v), dbl_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static const char *pool_huge(struct tide_pool *pool)
{
	struct tide_pool_mem pm;

	if (pool == NULL)
		return "-";
	tide_pool_mem_info(pool, &pm);
	return pm.hugepages ? "1" : "0";
}

int main(int argc, char **argv)
{
	static char vb[MAX_PAIRS][200];
	char *eal[64];
	int ne = 0, tx, packed, n = 0;
	uint64_t total, bursts;
	unsigned size;
	char mode[32] = "";
	char *opt;

	if (argc >= 3) {
		n = parse_pairs(argv[1], pairs);
		snprintf(mode, sizeof(mode), "%s", argv[2]);
		opt = strchr(mode, ',');
		if (opt != NULL) {
			*opt++ = '\0';
			char junk;

			if (sscanf(opt, "vring=%u%c", &vring, &junk) != 1 || vring < 64 ||
			    vring > 4096 || (vring & (vring - 1)) != 0)
				n = 0;
		}
	}
	if (argc < 5 || argc > 56 || n == 0 ||
	    (strcmp(mode, "rx") != 0 && strcmp(mode, "tx") != 0 &&
	     strcmp(mode, "rx-packed") != 0 && strcmp(mode, "tx-packed") != 0)) {
		fprintf(stderr,
			"usage: %s PAIRS rx|tx[-packed][,vring=N] PACKETS SIZE EAL-ARGS...\n"
			"  vring: every vring's depth, a power of two in 64..4096 (default 1024);\n"
			"  PAIRS: P[+P...], P = FE/BE or BE (= dpdk/BE); FE, BE = dpdk | tide | "
			"tide:KEY=V[,KEY=V] (extra spec keys of tide's virtio or vhost port);\n"
			"  both = tide+dpdk; 2x2 = tide/tide+dpdk/tide+tide/dpdk+dpdk/dpdk; at most "
			"%d, dpdk/dpdk at most once\n",
			argv[0], MAX_PAIRS);
		return 2;
	}
	tx = mode[0] == 't';
	packed = strstr(mode, "-packed") != NULL;
	total = strtoull(argv[3], NULL, 0);
	size = (unsigned)atoi(argv[4]);
	SU_CHECK(size >= 60 && size <= 2048);
	SU_CHECK(total >= BURST);
	bursts = total / BURST;
	eal[ne++] = argv[0];
	for (int i = 5; i < argc; i++)
		eal[ne++] = argv[i];
	for (int i = 0; i < n; i++) {
		struct pair *p = &pairs[i];

		snprintf(p->sock, sizeof(p->sock), "%s/tide-vhost-lockstep-%d-%d.sock", test_tmp(),
			 (int)getpid(), i);
		if (p->be_tide)
			continue;
		unlink(p->sock);
		snprintf(p->vdev, sizeof(p->vdev), "net_vhost%d", i);
		snprintf(vb[i], sizeof(vb[i]), "--vdev=%s,iface=%s,queues=1", p->vdev, p->sock);
		eal[ne++] = vb[i];
	}
	npairs = n;
	atexit(unlink_socks);
	eal[ne] = NULL;
	SU_CHECK(rte_eal_init(ne, eal) >= 0);
	SU_CHECK(tide_thread_register() >= 0);
	pairs_up(pairs, n, packed);
	/* The first bursts of a pair carry one-off costs (first touches of memory among them;
	 * without hugepages they took 2-4 us per packet over 32000 packets): WARM bursts
	 * each, untimed, before the clock starts. */
	for (int i = 0; i < n; i++) {
		run(&pairs[i], tx, size, WARM);
		pairs[i].ns[0] = pairs[i].ns[1] = 0;
		pairs[i].timed = pairs[i].done;
	}
	/* Turns of BLOCK bursts, the first rotating, each block's time kept per side. */
	for (int i = 0; i < n; i++)
		for (int j = 0; j < 2; j++)
			SU_CHECK((pairs[i].blk[j] = calloc(bursts / BLOCK + 1, sizeof(double))) != NULL);
	for (uint64_t b = 0, k = 0; b < bursts; k++) {
		uint64_t m = bursts - b < BLOCK ? bursts - b : BLOCK;

		for (int i = 0; i < n; i++) {
			struct pair *p = &pairs[(i + k) % (uint64_t)n];
			uint64_t ns0[2] = {p->ns[0], p->ns[1]};

			run(p, tx, size, m);
			for (int j = 0; j < 2; j++)
				p->blk[j][p->nblk] = (double)(p->ns[j] - ns0[j]) / (double)(m * BURST);
			p->nblk++;
		}
		b += m;
	}
	for (int i = 0; i < n; i++) {
		struct pair *p = &pairs[i];

		printf("pair=%s dir=%s packets=%llu size=%u vring=%u mrg_rxbuf=%d in_order=%d "
		       "packed=%d pool_huge=%s,%s\n",
		       p->name, mode, (unsigned long long)(p->done - p->timed), size, vring,
		       !!(p->feat & F_MRG_RXBUF), !!(p->feat & F_IN_ORDER),
		       !!(p->feat & F_RING_PACKED), pool_huge(p->fpool), pool_huge(p->bpool));
		ls_print(p->ns, 2, p->done - p->timed);
		printf("ns_per_pkt_med=%.2f,%.2f\n", median(p->blk[0], p->nblk),
		       median(p->blk[1], p->nblk));
		free(p->blk[0]);
		free(p->blk[1]);
	}
	for (int i = 0; i < n; i++)
		pair_down(&pairs[i]);
	rte_eal_cleanup();
	return 0;
}
