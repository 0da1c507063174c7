/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost_lockstep: vhost-user backends and DPDK's net_virtio_user frontend (the PMD
 * bench/vhost/run's testpmd frontend uses) in one EAL process, one 32-packet burst at a time
 * in lock step, on one CPU. The backend is tide's vhost driver, DPDK's net_vhost, or both,
 * each behind a virtio-user port of its own; the frontend is the same program for every
 * backend, so the runs differ in the backend alone. Each port has one queue pair of 1024
 * descriptors; both PMDs' and tide's features are their defaults (virtio-user: mrg_rxbuf and
 * in_order on). Every frontend and every backend has a pool of its own, as a guest and a
 * switch do: a pool shared in one process would hand the buffer the frontend's Tx just
 * freed straight to net_vhost's Rx, hot in the cache. Each backend listens on its socket
 * (tide: role=server; net_vhost: its default); vhost-user messages are served by the
 * backend's own control thread (tide's <port>-ctl, DPDK's vhost thread) while the
 * frontend's probe waits for the replies.
 *
 *   rx (guest -> backend):  bench_fe_tx  rte_eth_tx_burst on virtio-user (its Tx vring)
 *                           bench_be_rx  the backend's Rx burst (copies them out)
 *   tx (backend -> guest):  bench_be_tx  the backend's Tx burst (copies them in)
 *                           bench_fe_rx  rte_eth_rx_burst on virtio-user
 *
 * Two readings:
 *  - instructions (one backend): `valgrind --tool=callgrind --toggle-collect=bench_be_rx ...`
 *    counts one burst function alone (inclusive); packets are built and checked outside;
 *  - wall clock: each burst call is timed (bench/lockstep_time.h) and printed per packet.
 *    One CPU, no second process: the time the backend's and the frontend's work takes,
 *    without the cross-CPU cache-line traffic and the scheduler that set the rate of a
 *    two-process pair (docs/drivers/vhost.md). With several backends the pairs
 *    take turns in blocks of BLOCK bursts (which goes first rotates): a slow spell of the
 *    machine (another guest, a frequency change) falls on both backends alike, while each
 *    block still runs on the caches its own previous block left.
 *
 * usage: vhost_lockstep BACKENDS rx|tx[-packed] PACKETS SIZE EAL-ARGS...
 *        (e.g. --no-pci -l 0 --huge-dir D --file-prefix P --single-file-segments)
 * BACKENDS: B[+B...] with B = dpdk | tide | tide:KEY=V[,KEY=V] (tide with extra vhost spec
 * keys, e.g. tide+tide:txfree_loop=yes for the seed 003 row); "both" is tide+dpdk. Up to
 * MAX_PAIRS, DPDK's at most once.
 * -packed: virtio-user with packed_vq=1 (both backends offer packed virtqueues).
 * Prints, per backend, "backend=.. dir=.. packets=N size=S in_order=0|1 packed=0|1
 * tide_pool_huge=0|1|-" (what the backend negotiated; whether tide's pool is on 2 MiB pages)
 * and "ns_per_pkt=FE,BE" (the frontend's and the backend's bursts, wall clock).
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
#include <tide/port.h>
#include <tide/vhost.h>

#include "../dpdk_instr.h"
#include "../lockstep_time.h"

#define F_RING_PACKED (1ull << 34) /* VIRTIO_F_RING_PACKED */
#define F_IN_ORDER (1ull << 35)    /* VIRTIO_F_IN_ORDER */
#define BLOCK 256                  /* bursts per turn with several backends */

#define MAX_PAIRS 4

/* One backend with its frontend: the unit the lock step drives. */
struct pair {
	char name[64];              /* as given: "dpdk", "tide" or "tide:KEY=V[,KEY=V]" */
	const char *extra;          /* tide: spec keys after the ':', else "" */
	int tide;                   /* tide's vhost port, else DPDK's net_vhost */
	uint16_t fe;                /* the virtio-user port */
	uint16_t be;                /* net_vhost's port */
	struct tide_port *tp;       /* tide's port */
	struct rte_mempool *mp_fe;  /* the frontend's pool */
	struct rte_mempool *mp_be;  /* net_vhost's pool */
	struct tide_pool *tpool;    /* tide's pool */
	char sock[108];
	uint64_t done, feat;
	uint64_t ns[2];             /* frontend, backend */
};

/* The four measured calls. The backend's take void ** (rte_mbuf or tide_mbuf pointers). */
__attribute__((noinline)) uint16_t bench_fe_tx(struct pair *p, struct rte_mbuf **pk, uint16_t n);
__attribute__((noinline)) uint16_t bench_fe_tx(struct pair *p, struct rte_mbuf **pk, uint16_t n)
{
	return rte_eth_tx_burst(p->fe, 0, pk, n);
}

__attribute__((noinline)) uint16_t bench_fe_rx(struct pair *p, struct rte_mbuf **pk, uint16_t n);
__attribute__((noinline)) uint16_t bench_fe_rx(struct pair *p, struct rte_mbuf **pk, uint16_t n)
{
	return rte_eth_rx_burst(p->fe, 0, pk, n);
}

__attribute__((noinline)) uint16_t bench_be_rx(struct pair *p, void **pk, uint16_t n);
__attribute__((noinline)) uint16_t bench_be_rx(struct pair *p, void **pk, uint16_t n)
{
	return p->tide ? tide_rx_burst(tide_port_rxq(p->tp, 0), (struct tide_mbuf **)pk, n)
		       : rte_eth_rx_burst(p->be, 0, (struct rte_mbuf **)pk, n);
}

__attribute__((noinline)) uint16_t bench_be_tx(struct pair *p, void **pk, uint16_t n);
__attribute__((noinline)) uint16_t bench_be_tx(struct pair *p, void **pk, uint16_t n)
{
	return p->tide ? tide_tx_burst(tide_port_txq(p->tp, 0), (struct tide_mbuf **)pk, n)
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

static struct rte_mempool *mempool(const char *what, const char *name)
{
	char n[RTE_MEMPOOL_NAMESIZE];
	struct rte_mempool *mp;

	snprintf(n, sizeof(n), "%.4s-%.8s", what, name);
	mp = rte_pktmbuf_pool_create(n, 8191, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				     rte_socket_id());
	SU_CHECK(mp != NULL);
	return mp;
}

/* @p's pools. All pools are made before the first frontend starts: DPDK memory that grows
 * later makes each running virtio-user send its backend a new memory table while it holds
 * the EAL's memory lock, and DPDK's vhost thread in this same process needs that lock to
 * answer (a deadlock; tide's control thread does not take it). */
static void pair_pools(struct pair *p, unsigned idx)
{
	char name[32];

	snprintf(name, sizeof(name), "%u", idx);
	p->mp_fe = mempool("fe", name);
	if (p->tide) {
		snprintf(name, sizeof(name), "lockstep%u", idx);
		SU_CHECK(tide_pktpool_create(name, 8192, 256, 0, NULL, &p->tpool) == 0);
	} else {
		p->mp_be = mempool("be", name);
	}
}

/* Bring up @p's backend (listening on its socket) and then its frontend (hot-plugged, it
 * connects). net_vhost0 itself comes from the EAL arguments. */
static void pair_up(struct pair *p, unsigned idx, int packed)
{
	char spec[200], vf[200], name[32];

	if (p->tide) {
		snprintf(p->sock, sizeof(p->sock), "/tmp/tide-vhost-lockstep-%d-%u.sock",
			 (int)getpid(), idx);
		unlink(p->sock);
		snprintf(spec, sizeof(spec), "vhost:socket=%s,role=server,unsealed_mem=yes%s%s", p->sock,
			 *p->extra ? "," : "", p->extra);
		SU_CHECK(tide_port_open(spec, &p->tp) == 0);
		SU_CHECK(tide_port_configure(p->tp, 1, 1) == 0);
		SU_CHECK(tide_rxq_setup(p->tp, 0, 1024, p->tpool, NULL) == 0);
		SU_CHECK(tide_txq_setup(p->tp, 0, 1024, NULL) == 0);
		SU_CHECK(tide_port_start(p->tp) == 0);
	} else {
		SU_CHECK(rte_eth_dev_get_port_by_name("net_vhost0", &p->be) == 0);
		di_port_up(p->be, p->mp_be);
	}
	snprintf(name, sizeof(name), "net_virtio_user%u", idx);
	snprintf(vf, sizeof(vf), "%s,path=%s,queues=1,queue_size=1024%s", name, p->sock,
		 packed ? ",packed_vq=1" : "");
	SU_CHECK(rte_dev_probe(vf) == 0);
	SU_CHECK(rte_eth_dev_get_port_by_name(name, &p->fe) == 0);
	di_port_up(p->fe, p->mp_fe);
}

static int links_up(struct pair *p)
{
	struct rte_eth_link lf, lb;
	struct tide_link lt;

	SU_CHECK(rte_eth_link_get_nowait(p->fe, &lf) == 0);
	if (p->tide)
		SU_CHECK(tide_port_link_get(p->tp, &lt) == 0);
	else
		SU_CHECK(rte_eth_link_get_nowait(p->be, &lb) == 0);
	return lf.link_status && (p->tide ? lt.up : lb.link_status);
}

static uint64_t backend_features(struct pair *p)
{
	struct tide_vhost_info vi = {.sz = sizeof(vi)};
	uint64_t feat;

	if (p->tide) {
		SU_CHECK(tide_vhost_info_get(p->tp, &vi) == 0);
		return vi.features;
	}
	/* The only vhost-user device of librte_vhost in this process has vid 0 (it checks). */
	SU_CHECK(rte_vhost_get_negotiated_features(0, &feat) == 0);
	return feat;
}

/* @bursts lock-step bursts of @p in direction @tx, every burst call timed. */
static void run(struct pair *p, int tx, unsigned size, uint64_t bursts)
{
	for (uint64_t b = 0; b < bursts; b++) {
		void *pk[BURST];
		unsigned k, got = 0;

		if (p->tide && tx)
			tide_fill(p->tpool, pk, size, p->done);
		else
			di_fill(tx ? p->mp_be : p->mp_fe, (struct rte_mbuf **)pk, size, p->done);
		k = tx ? LS_TIMED(p->ns, 1, bench_be_tx(p, pk, BURST))
		       : LS_TIMED(p->ns, 0, bench_fe_tx(p, (struct rte_mbuf **)pk, BURST));
		SU_CHECK(k == BURST);
		/* The vring is filled before the first lock-step burst is taken (a queue may be
		 * enabled a moment after the link): retry an empty first poll, and start the
		 * clock again. */
		for (int i = 0; got == 0; i++) {
			SU_CHECK(i < 30000);
			got = tx ? LS_TIMED(p->ns, 0, bench_fe_rx(p, (struct rte_mbuf **)pk, BURST))
				 : LS_TIMED(p->ns, 1, bench_be_rx(p, pk, BURST));
			if (got == 0) {
				SU_CHECK(p->done == 0);
				p->ns[0] = p->ns[1] = 0;
				usleep(1000);
			}
		}
		SU_CHECK(got == BURST);
		if (p->tide && !tx)
			tide_take(pk, got, size, p->done);
		else
			di_take((struct rte_mbuf **)pk, got, size, p->done, 0);
		p->done += BURST;
	}
}

static void pair_down(struct pair *p)
{
	rte_eth_dev_stop(p->fe);
	rte_eth_dev_close(p->fe);
	if (p->tide) {
		tide_port_close(p->tp);
		SU_CHECK(tide_pool_in_use(p->tpool) == 0);
		tide_pool_free(p->tpool);
	} else {
		rte_eth_dev_stop(p->be);
		rte_eth_dev_close(p->be);
	}
	SU_CHECK(rte_mempool_full(p->mp_fe));
	SU_CHECK(p->mp_be == NULL || rte_mempool_full(p->mp_be));
	unlink(p->sock);
}

/* Parse "B[+B...]" (B: dpdk | tide | tide:KEYS; "both" = tide+dpdk) into @pairs. Returns the
 * count, 0 when it is not one; DPDK's net_vhost at most once (the EAL's net_vhost0). */
static int parse_backends(const char *arg, struct pair *pairs)
{
	char buf[256], *save = NULL;
	int n = 0, dpdk = 0;

	snprintf(buf, sizeof(buf), "%s", strcmp(arg, "both") == 0 ? "tide+dpdk" : arg);
	for (char *t = strtok_r(buf, "+", &save); t; t = strtok_r(NULL, "+", &save)) {
		struct pair *p = &pairs[n];

		if (n == MAX_PAIRS || strlen(t) >= sizeof(p->name))
			return 0;
		snprintf(p->name, sizeof(p->name), "%s", t);
		if (strcmp(t, "dpdk") == 0) {
			if (dpdk++)
				return 0;
			p->extra = "";
		} else if (strcmp(t, "tide") == 0 || strncmp(t, "tide:", 5) == 0) {
			p->tide = 1;
			p->extra = t[4] ? p->name + 5 : "";
		} else {
			return 0;
		}
		n++;
	}
	return n;
}

int main(int argc, char **argv)
{
	static struct pair pairs[MAX_PAIRS];
	char vb[200];
	char *eal[64];
	int ne = 0, tx, packed, n = 0, dpdk = -1;
	uint64_t total, bursts;
	unsigned size;

	if (argc >= 2)
		n = parse_backends(argv[1], pairs);
	if (argc < 5 || argc > 56 || n == 0 ||
	    (strcmp(argv[2], "rx") != 0 && strcmp(argv[2], "tx") != 0 &&
	     strcmp(argv[2], "rx-packed") != 0 && strcmp(argv[2], "tx-packed") != 0)) {
		fprintf(stderr,
			"usage: %s BACKENDS rx|tx[-packed] PACKETS SIZE EAL-ARGS...\n"
			"  BACKENDS: B[+B...], B = dpdk | tide | tide:KEY=V[,KEY=V] (extra vhost spec "
			"keys); both = tide+dpdk; at most %d, dpdk at most once\n",
			argv[0], MAX_PAIRS);
		return 2;
	}
	for (int i = 0; i < n; i++)
		if (!pairs[i].tide)
			dpdk = i;
	tx = argv[2][0] == 't';
	packed = strstr(argv[2], "-packed") != NULL;
	total = strtoull(argv[3], NULL, 0);
	size = (unsigned)atoi(argv[4]);
	SU_CHECK(size >= 60 && size <= 2048);
	SU_CHECK(total >= BURST);
	bursts = total / BURST;
	eal[ne++] = argv[0];
	for (int i = 5; i < argc; i++)
		eal[ne++] = argv[i];
	if (dpdk >= 0) {
		struct pair *p = &pairs[dpdk];

		snprintf(p->sock, sizeof(p->sock), "/tmp/tide-vhost-lockstep-%d-%d.sock",
			 (int)getpid(), dpdk);
		unlink(p->sock);
		snprintf(vb, sizeof(vb), "--vdev=net_vhost0,iface=%s,queues=1", p->sock);
		eal[ne++] = vb;
	}
	eal[ne] = NULL;
	SU_CHECK(rte_eal_init(ne, eal) >= 0);
	SU_CHECK(tide_thread_register() >= 0);
	for (int i = 0; i < n; i++)
		pair_pools(&pairs[i], (unsigned)i);
	/* net_vhost's pair last: its frontend's rings are the last DPDK memory taken (above). */
	for (int i = 0; i < n; i++)
		if (i != dpdk)
			pair_up(&pairs[i], (unsigned)i, packed);
	if (dpdk >= 0)
		pair_up(&pairs[dpdk], (unsigned)dpdk, packed);
	for (int i = 0; i < n; i++) {
		struct pair *p = &pairs[i];

		for (int t = 0; !links_up(p); t++) {
			SU_CHECK(t < 30000); /* 30 s */
			usleep(1000);
		}
		p->feat = backend_features(p);
		SU_CHECK(!!(p->feat & F_RING_PACKED) == packed);
	}
	/* One backend: all its bursts. Several: turns of BLOCK bursts, the first rotating. */
	for (uint64_t b = 0, k = 0; b < bursts; k++) {
		uint64_t m = n == 1 ? bursts : (bursts - b < BLOCK ? bursts - b : BLOCK);

		for (int i = 0; i < n; i++)
			run(&pairs[(i + k) % (uint64_t)n], tx, size, m);
		b += m;
	}
	for (int i = 0; i < n; i++) {
		struct pair *p = &pairs[i];
		struct tide_pool_mem pm;

		if (p->tide)
			tide_pool_mem_info(p->tpool, &pm);
		printf("backend=%s dir=%s packets=%llu size=%u in_order=%d packed=%d "
		       "tide_pool_huge=%s\n",
		       p->name, argv[2], (unsigned long long)p->done, size,
		       !!(p->feat & F_IN_ORDER), !!(p->feat & F_RING_PACKED),
		       p->tide ? (pm.hugepages ? "1" : "0") : "-");
		ls_print(p->ns, 2, p->done);
	}
	for (int i = 0; i < n; i++)
		pair_down(&pairs[i]);
	rte_eal_cleanup();
	return 0;
}
