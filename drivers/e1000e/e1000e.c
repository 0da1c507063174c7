/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * e1000e driver, control side: open through the PCI layer, device reset, MAC, rings,
 * receive and transmit control, MSI-X (Rx queue 0 and link changes), statistics.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <tide/pci.h>

#include "e1000e.h"
#include "log.h"
#include "mem.h"
#include "osutil.h"

extern const struct tide_driver tide_driver_e1000e;

/* What the 82574 checks and fills: IPv4 header, TCP and UDP over IPv4 and IPv6. */
#define E1000E_RX_OFFLOADS \
	(TIDE_OFFLOAD_RX_IPV4_CKSUM | TIDE_OFFLOAD_RX_TCP_CKSUM | TIDE_OFFLOAD_RX_UDP_CKSUM)
#define E1000E_TX_OFFLOADS \
	(TIDE_OFFLOAD_TX_IPV4_CKSUM | TIDE_OFFLOAD_TX_TCP_CKSUM | TIDE_OFFLOAD_TX_UDP_CKSUM)

static struct e1000e_port *eport(const struct tide_port *p)
{
	return p->priv;
}

/* Device memory for a descriptor ring: whole pages, mapped for DMA. */
static void *ring_alloc(struct e1000e_port *ep, size_t bytes, size_t *len)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t l = (bytes + (size_t)pg - 1) & ~((size_t)pg - 1);
	void *p = mmap(NULL, l, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		       -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if (pci_dma_map(ep->pci, p, l, 0) < 0) {
		munmap(p, l);
		return NULL;
	}
	*len = l;
	return p;
}

static void ring_free(struct e1000e_port *ep, void *p, size_t len)
{
	if (p == NULL)
		return;
	pci_dma_unmap(ep->pci, p);
	munmap(p, len);
}

/* Map a pool's whole memory for the device (a reference per queue that uses it). */
static int pool_map(struct e1000e_port *ep, struct tide_pool *pool)
{
	struct tide_pool_mem mi;
	int rc;

	tide_pool_mem_info(pool, &mi);
	rc = pci_dma_map(ep->pci, mi.base, mi.len, mi.hugepages ? 2u << 20 : 0);
	if (rc < 0)
		TIDE_LOG_ERR_(ep->port->name, "pool %s (%zu bytes at %p) cannot be mapped for the "
			      "device", tide_pool_name(pool), mi.len, mi.base);
	return rc;
}

static void pool_unmap(struct e1000e_port *ep, struct tide_pool *pool)
{
	struct tide_pool_mem mi;

	tide_pool_mem_info(pool, &mi);
	pci_dma_unmap(ep->pci, mi.base);
}

/* ---- device ---- */

static bool reset_done(void *ep)
{
	return !(e1000e_rd(ep, E1000E_CTRL) & E1000E_CTRL_RST);
}

int e1000e_dev_reset(struct e1000e_port *ep)
{
	e1000e_wr(ep, E1000E_IMC, 0xffffffffu);
	e1000e_wr(ep, E1000E_RCTL, 0);
	e1000e_wr(ep, E1000E_TCTL, 0);
	(void)e1000e_rd(ep, E1000E_STATUS); /* flush the writes */
	os_sleep_ns(10000 * 1000ull);
	e1000e_wr(ep, E1000E_CTRL, e1000e_rd(ep, E1000E_CTRL) | E1000E_CTRL_RST);
	/* The first read of CTRL comes 1 ms after the reset is set. */
	os_sleep_ns(1000 * 1000ull);
	if (os_poll_ms(reset_done, ep, 99)) {
		e1000e_wr(ep, E1000E_IMC, 0xffffffffu);
		(void)e1000e_rd(ep, E1000E_ICR);
		return 0;
	}
	TIDE_LOG_ERR_(ep->pci->bdf, "e1000e: the device did not come out of reset");
	return -EIO;
}

/* Clear-on-read counters into the running totals. */
static void hw_stats_read(struct e1000e_port *ep)
{
	ep->hw.crcerrs += e1000e_rd(ep, E1000E_CRCERRS);
	ep->hw.algnerrc += e1000e_rd(ep, E1000E_ALGNERRC);
	ep->hw.rxerrc += e1000e_rd(ep, E1000E_RXERRC);
	ep->hw.mpc += e1000e_rd(ep, E1000E_MPC);
	ep->hw.rlec += e1000e_rd(ep, E1000E_RLEC);
	ep->hw.rnbc += e1000e_rd(ep, E1000E_RNBC);
	ep->hw.roc += e1000e_rd(ep, E1000E_ROC);
	ep->hw.gprc += e1000e_rd(ep, E1000E_GPRC);
	ep->hw.gptc += e1000e_rd(ep, E1000E_GPTC);
	ep->hw.tpr += e1000e_rd(ep, E1000E_TPR);
	ep->hw.tpt += e1000e_rd(ep, E1000E_TPT);
}

static uint32_t rctl_value(const struct e1000e_port *ep, uint16_t buf_size)
{
	uint32_t v = E1000E_RCTL_EN | E1000E_RCTL_BAM | E1000E_RCTL_SECRC | E1000E_RCTL_LPE;

	switch (buf_size) {
	case 16384: v |= E1000E_RCTL_BSEX | 1u << E1000E_RCTL_BSIZE_SHIFT; break;
	case 8192: v |= E1000E_RCTL_BSEX | 2u << E1000E_RCTL_BSIZE_SHIFT; break;
	case 4096: v |= E1000E_RCTL_BSEX | 3u << E1000E_RCTL_BSIZE_SHIFT; break;
	case 2048: break;
	case 1024: v |= 1u << E1000E_RCTL_BSIZE_SHIFT; break;
	case 512: v |= 2u << E1000E_RCTL_BSIZE_SHIFT; break;
	default: v |= 3u << E1000E_RCTL_BSIZE_SHIFT; break; /* 256 */
	}
	if (ep->promisc)
		v |= E1000E_RCTL_UPE | E1000E_RCTL_MPE;
	if (ep->allmulti)
		v |= E1000E_RCTL_MPE;
	return v;
}

/* The largest receive buffer size the device supports that fits @room bytes. */
static uint16_t rx_buf_size(unsigned room)
{
	static const uint16_t sizes[] = {16384, 8192, 4096, 2048, 1024, 512, 256};

	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		if (room >= sizes[i])
			return sizes[i];
	return 0;
}

/* ---- queues ---- */

static int e1000e_rxq_setup(struct tide_port *p, unsigned qid, unsigned nb_desc,
			    struct tide_pool *pool, const struct tide_rxq_conf *conf,
			    struct tide_rxq **out)
{
	struct e1000e_port *ep = eport(p);
	struct e1000e_rxq *q;
	unsigned room = pool->elt_size - (unsigned)sizeof(struct tide_mbuf) - pool->mbuf_headroom;
	int rc;

	(void)qid;
	if (rx_buf_size(room) == 0) {
		TIDE_LOG_ERR_(p->name, "pool %s: %u bytes of data room; the device needs 256 at "
			      "least", tide_pool_name(pool), room);
		return -EINVAL;
	}
	q = tide_zalloc_aligned(sizeof(*q));
	if (q == NULL)
		return -ENOMEM;
	q->ep = ep;
	rc = pool_map(ep, pool);
	if (rc < 0) {
		free(q);
		return rc;
	}
	q->ring = ring_alloc(ep, nb_desc * sizeof(*q->ring), &q->ring_len);
	rc = q->ring ? rxr_init(&q->rxr, &q->pub, nb_desc, pool, conf, e1000e_rx_post_ool, q)
		     : -ENOMEM;
	if (rc < 0) {
		ring_free(ep, q->ring, q->ring_len);
		pool_unmap(ep, pool);
		free(q);
		return rc;
	}
	q->size = nb_desc;
	q->mask = nb_desc - 1;
	q->headroom = (uint16_t)pool->mbuf_headroom;
	q->buf_size = rx_buf_size(room);
	q->chain = ep->chain;
	q->offloads = conf->offloads;
	e1000e_rx_csum_init(q);
	q->rdt = (volatile uint32_t *)(ep->regs + E1000E_RDT);
	tide_mbuf__rx_tmpl_init(&q->tmpl, pool, (uint16_t)p->id, 0);
	ep->rxq = q;
	*out = &q->pub;
	return 0;
}

static int e1000e_txq_setup(struct tide_port *p, unsigned qid, unsigned nb_desc,
			    const struct tide_txq_conf *conf, struct tide_txq **out)
{
	struct e1000e_port *ep = eport(p);
	struct e1000e_txq *q = tide_zalloc_aligned(sizeof(*q));
	struct txc_drv d = {0};
	int rc;

	(void)qid;
	if (q == NULL)
		return -ENOMEM;
	q->ep = ep;
	d.advance = e1000e_tx_advance_ool;
	d.drv = q;
	q->ring = ring_alloc(ep, nb_desc * sizeof(*q->ring), &q->ring_len);
	rc = q->ring ? txc_init(&q->txc, &q->pub, nb_desc, conf, &d) : -ENOMEM;
	if (rc < 0) {
		ring_free(ep, q->ring, q->ring_len);
		free(q);
		return rc;
	}
	q->size = nb_desc;
	q->mask = nb_desc - 1;
	q->tdt = (volatile uint32_t *)(ep->regs + E1000E_TDT);
	q->dma_page = 4096; /* until the first packet finds its region */
	q->fast_asserted = conf->txfree == TIDE_TXFREE_FAST || (conf->flags & TIDE_TXQ_F_FAST_FREE);
	q->offload = (conf->offloads & E1000E_TX_OFFLOADS) != 0;
	ep->txq = q;
	*out = &q->pub;
	return 0;
}

static void e1000e_rxq_release(struct tide_rxq *pub)
{
	struct e1000e_rxq *q = (struct e1000e_rxq *)pub;
	struct e1000e_port *ep = q->ep;
	struct tide_pool *pool = q->rxr.pool;

	if (ep->rxq == q)
		ep->rxq = NULL;
	rxr_fini(&q->rxr);
	ring_free(ep, q->ring, q->ring_len);
	pool_unmap(ep, pool);
	free(q);
}

static void e1000e_txq_release(struct tide_txq *pub)
{
	struct e1000e_txq *q = (struct e1000e_txq *)pub;
	struct e1000e_port *ep = q->ep;

	if (ep->txq == q)
		ep->txq = NULL;
	txc_fini(&q->txc);
	ring_free(ep, q->ring, q->ring_len);
	free(q);
}

/* ---- start / stop ---- */

static void intr_program(struct e1000e_port *ep)
{
	if (!ep->irq)
		return;
	e1000e_wr(ep, E1000E_IVAR,
		  (E1000E_IVAR_VALID | E1000E_VEC_RX) << E1000E_IVAR_RXQ0_SHIFT |
			  (E1000E_IVAR_VALID | E1000E_VEC_OTHER) << E1000E_IVAR_OTHER_SHIFT);
	/* The Rx vector fires once per enable: its cause is cleared and masked when it
	 * fires. The link vector stays armed; poll_ctl clears its cause. */
	e1000e_wr(ep, E1000E_EIAC, E1000E_ICR_RXQ0);
	e1000e_wr(ep, E1000E_IMS, E1000E_ICR_LINK);
}

static int e1000e_start(struct tide_port *p)
{
	struct e1000e_port *ep = eport(p);
	struct e1000e_rxq *rq = ep->rxq;
	struct e1000e_txq *tq = ep->txq;

	e1000e_wr(ep, E1000E_CTRL, e1000e_rd(ep, E1000E_CTRL) | E1000E_CTRL_SLU);
	for (unsigned i = 0; i < 128; i++)
		e1000e_wr(ep, E1000E_MTA + 4 * i, 0);
	e1000e_wr(ep, E1000E_RDTR, 0);
	e1000e_wr(ep, E1000E_RADV, 0);
	e1000e_wr(ep, E1000E_TIDV, 0);
	e1000e_wr(ep, E1000E_TADV, 0);
	e1000e_wr(ep, E1000E_RFCTL, 0); /* legacy descriptors */
	if (tq != NULL) {
		uint64_t a = (uintptr_t)tq->ring;

		e1000e_wr(ep, E1000E_TDBAL, (uint32_t)a);
		e1000e_wr(ep, E1000E_TDBAH, (uint32_t)(a >> 32));
		e1000e_wr(ep, E1000E_TDLEN, tq->size * (uint32_t)sizeof(*tq->ring));
		e1000e_wr(ep, E1000E_TDH, 0);
		e1000e_wr(ep, E1000E_TDT, 0);
		e1000e_wr(ep, E1000E_TIPG, 8u | 8u << 10 | 6u << 20);
		e1000e_wr(ep, E1000E_TARC0, e1000e_rd(ep, E1000E_TARC0) | E1000E_TARC_ENABLE);
		e1000e_wr(ep, E1000E_TCTL, E1000E_TCTL_EN | E1000E_TCTL_PSP |
						   0xfu << E1000E_TCTL_CT_SHIFT |
						   0x3fu << E1000E_TCTL_COLD_SHIFT);
		tq->ctx_valid = false; /* the device's context is not known after a stop */
		tq->pub.burst = e1000e_tx_burst_fn(tq->offload);
	}
	if (rq != NULL) {
		uint64_t a = (uintptr_t)rq->ring;

		e1000e_wr(ep, E1000E_RDBAL, (uint32_t)a);
		e1000e_wr(ep, E1000E_RDBAH, (uint32_t)(a >> 32));
		e1000e_wr(ep, E1000E_RDLEN, rq->size * (uint32_t)sizeof(*rq->ring));
		e1000e_wr(ep, E1000E_RDH, 0);
		e1000e_wr(ep, E1000E_RDT, 0);
		e1000e_rx_refill(rq);
		if (rq->rxr.refill - rq->rxr.next < rq->size)
			TIDE_LOG_WARN_(p->name, "Rx: pool %s could fill only %u of %u descriptors",
				       tide_pool_name(rq->rxr.pool), rq->rxr.refill - rq->rxr.next,
				       rq->size);
		/* Checksums are checked only where the queue asked (the status bits of the
		 * others stay clear); PCSD stays 0: the descriptors carry checksum status. */
		e1000e_wr(ep, E1000E_RXCSUM,
			  (rq->offloads & TIDE_OFFLOAD_RX_IPV4_CKSUM ? E1000E_RXCSUM_IPOFLD : 0) |
				  (rq->offloads & (TIDE_OFFLOAD_RX_TCP_CKSUM |
						   TIDE_OFFLOAD_RX_UDP_CKSUM)
					   ? E1000E_RXCSUM_TUOFLD
					   : 0));
		e1000e_wr(ep, E1000E_RCTL, rctl_value(ep, rq->buf_size));
		rq->pub.burst = e1000e_rx_burst_fn(rq->offloads != 0);
	}
	intr_program(ep);
	ep->link_up = (e1000e_rd(ep, E1000E_STATUS) & E1000E_STATUS_LU) != 0;
	return 0;
}

static void e1000e_stop(struct tide_port *p)
{
	struct e1000e_port *ep = eport(p);
	struct e1000e_rxq *rq = ep->rxq;
	struct e1000e_txq *tq = ep->txq;

	/* The device stops reading descriptors and writing buffers; then everything it
	 * held comes back. */
	e1000e_wr(ep, E1000E_IMC, E1000E_ICR_RXQ0);
	e1000e_wr(ep, E1000E_RCTL, 0);
	e1000e_wr(ep, E1000E_TCTL, 0);
	(void)e1000e_rd(ep, E1000E_STATUS);
	os_sleep_ns(1000 * 1000ull);
	ep->rx_intr_on = false;
	if (ep->irq)
		(void)pci_irq_drain(ep->pci->irq_fd[E1000E_VEC_RX]);
	if (rq != NULL) {
		if (rq->pkt_first)
			tide_mbuf_free(rq->pkt_first);
		rq->pkt_first = rq->pkt_last = NULL;
		rq->pkt_bad = false;
		rxr_release_all(&rq->rxr);
		memset(rq->ring, 0, rq->size * sizeof(*rq->ring));
		e1000e_wr(ep, E1000E_RDH, 0);
		e1000e_wr(ep, E1000E_RDT, 0);
	}
	if (tq != NULL) {
		txc_release_all(&tq->txc);
		memset(tq->ring, 0, tq->size * sizeof(*tq->ring));
		e1000e_wr(ep, E1000E_TDH, 0);
		e1000e_wr(ep, E1000E_TDT, 0);
	}
}

static void e1000e_close(struct tide_port *p)
{
	struct e1000e_port *ep = eport(p);

	if (ep == NULL || ep->pci == NULL)
		return;
	if (ep->regs)
		(void)e1000e_dev_reset(ep);
	pci_close(ep->pci);
	ep->pci = NULL;
}

/* ---- link, interrupts, statistics ---- */

static int link_read(struct e1000e_port *ep, struct tide_link *out)
{
	uint32_t st = e1000e_rd(ep, E1000E_STATUS);
	static const uint32_t speeds[] = {10, 100, 1000, 1000};
	int up = (st & E1000E_STATUS_LU) != 0;

	if (up != ep->link_up) {
		ep->link_changes++;
		TIDE_LOG_INFO_(ep->port->name, "link %s", up ? "up" : "down");
		ep->link_up = up;
		tide_port_link_changed(ep->port);
	}
	if (out) {
		out->up = up;
		out->speed_mbps = up ? speeds[(st >> E1000E_STATUS_SPEED_SHIFT) & 3] : 0;
	}
	return 0;
}

static int e1000e_link_get(struct tide_port *p, struct tide_link *out)
{
	return link_read(eport(p), out);
}

/* A link-change interrupt: clear its cause (the vector stays armed) and read the link. */
static int e1000e_poll_ctl(struct tide_port *p)
{
	struct e1000e_port *ep = eport(p);

	if (ep->irq && pci_irq_drain(ep->pci->irq_fd[E1000E_VEC_OTHER]) != 0)
		e1000e_wr(ep, E1000E_ICR, E1000E_ICR_LINK);
	return link_read(ep, NULL);
}

static int e1000e_rxq_intr_fd(struct tide_port *p, unsigned qid)
{
	struct e1000e_port *ep = eport(p);

	(void)qid;
	if (!ep->irq)
		return -ENOTSUP;
	return e1000e_rd(ep, E1000E_STATUS) & E1000E_STATUS_LU ? ep->pci->irq_fd[E1000E_VEC_RX]
							       : -ENOTCONN;
}

static int e1000e_rxq_intr_set(struct tide_port *p, unsigned qid, int enable)
{
	struct e1000e_port *ep = eport(p);

	(void)qid;
	if (!ep->irq)
		return -ENOTSUP;
	if (enable) {
		if (!(e1000e_rd(ep, E1000E_STATUS) & E1000E_STATUS_LU))
			return -ENOTCONN;
		/* A cause left from packets that came while masked would fire at once. */
		e1000e_wr(ep, E1000E_ICR, E1000E_ICR_RXQ0);
		e1000e_wr(ep, E1000E_IMS, E1000E_ICR_RXQ0);
	} else {
		e1000e_wr(ep, E1000E_IMC, E1000E_ICR_RXQ0);
		(void)pci_irq_drain(ep->pci->irq_fd[E1000E_VEC_RX]);
	}
	ep->rx_intr_on = enable != 0;
	return 0;
}

static void e1000e_stats_add(const struct tide_port *p, struct tide_port_stats *st)
{
	struct e1000e_port *ep = eport(p);

	hw_stats_read(ep);
	st->rx_missed += ep->hw.mpc;
	st->ierrors += ep->hw.crcerrs + ep->hw.algnerrc + ep->hw.rxerrc + ep->hw.rlec + ep->hw.roc;
}

static void e1000e_stats_reset(struct tide_port *p)
{
	struct e1000e_port *ep = eport(p);

	hw_stats_read(ep);
	memset(&ep->hw, 0, sizeof(ep->hw));
}

/* The device's statistics registers (accumulated: they clear on read), the link changes
 * seen and the Tx context descriptors written, for tide_xstats_*(). */
static unsigned e1000e_xstats(struct tide_port *p, const char **xnames, uint64_t *values,
			      unsigned max)
{
	static const char *const n[] = {"crc_errors",	   "alignment_errors", "rx_errors",
					"missed_packets",  "length_errors",    "no_rx_buffer",
					"oversize",	   "good_rx_packets",  "good_tx_packets",
					"total_rx_packets", "total_tx_packets", "link_changes",
					"tx_contexts"};
	struct e1000e_port *ep = eport(p);
	uint64_t v[13];

	hw_stats_read(ep);
	v[0] = ep->hw.crcerrs;
	v[1] = ep->hw.algnerrc;
	v[2] = ep->hw.rxerrc;
	v[3] = ep->hw.mpc;
	v[4] = ep->hw.rlec;
	v[5] = ep->hw.rnbc;
	v[6] = ep->hw.roc;
	v[7] = ep->hw.gprc;
	v[8] = ep->hw.gptc;
	v[9] = ep->hw.tpr;
	v[10] = ep->hw.tpt;
	v[11] = ep->link_changes;
	v[12] = ep->txq ? ep->txq->contexts : 0;
	return tide_xstats_put(n, v, 13, xnames, values, max);
}

/* ---- open ---- */


static int open_dev(struct tide_kvargs *kv, const char *bdf, struct tide_port **ports,
		    unsigned max)
{
	struct e1000e_port *ep;
	struct tide_port *p;
	struct pci_dev *pci;
	bool promisc, allmulti, chain;
	uint16_t ven, dev;
	uint32_t ral, rah;
	char name[48];
	int rc;

	if (tide_kvargs_bool(kv, "promisc", true, &promisc) ||
	    tide_kvargs_bool(kv, "allmulti", false, &allmulti) ||
	    tide_kvargs_bool(kv, "rx_chain", true, &chain))
		return -EINVAL;
	if (max < 1)
		return -ENOSPC;
	rc = pci_id_read(bdf, &ven, &dev);
	if (rc < 0)
		return rc;
	if (ven != E1000E_VENDOR_INTEL || dev != E1000E_DEV_82574L) {
		TIDE_LOG_ERR_("e1000e", "%s is %04x:%04x, not an 82574L (8086:10d3)", bdf, ven, dev);
		return -ENODEV;
	}
	rc = pci_open(bdf, &pci);
	if (rc < 0)
		return rc;
	snprintf(name, sizeof(name), "e1000e:%s", bdf);
	rc = tide_port_alloc(&tide_driver_e1000e, name, sizeof(*ep), &p);
	if (rc < 0) {
		pci_close(pci);
		return rc;
	}
	ep = p->priv;
	ep->pci = pci;
	ep->port = p;
	ep->promisc = promisc;
	ep->allmulti = allmulti;
	ep->chain = chain;
	ep->regs = pci_bar(pci, 0, NULL);
	rc = ep->regs ? e1000e_dev_reset(ep) : -EIO;
	if (rc < 0) {
		tide_port_free_unregistered(p);
		return rc;
	}
	if (pci_irq_enable(pci, E1000E_NB_VEC) == 0) {
		ep->irq = true;
		pci->link_vector = E1000E_VEC_OTHER;
	}
	else
		TIDE_LOG_WARN_(name, "no MSI-X: Rx interrupts and link-change interrupts are off");
	hw_stats_read(ep);
	memset(&ep->hw, 0, sizeof(ep->hw));
	ral = e1000e_rd(ep, E1000E_RAL0);
	rah = e1000e_rd(ep, E1000E_RAH0);
	if (rah & E1000E_RAH_AV)
		for (unsigned i = 0; i < 6; i++)
			p->info.mac[i] = (uint8_t)(i < 4 ? ral >> (8 * i) : rah >> (8 * (i - 4)));
	p->info.max_rxq = 1;
	p->info.max_txq = 1;
	p->info.min_desc = 64;
	p->info.max_desc = 4096;
	p->info.rx_offload_capa = E1000E_RX_OFFLOADS;
	p->info.tx_offload_capa = E1000E_TX_OFFLOADS;
	/* Long packet reception is always on (RCTL.LPE) and frames span descriptors: the
	 * limit is the 82574's largest jumbo, 9234 bytes with the FCS (stripped). */
	tide_port_frame_limit(p, E1000E_MAX_FRAME);
	p->info.needs_poll_ctl = 0; /* link_get reads the device; poll_ctl only clears causes */
	ports[0] = p;
	return 1;
}

static int e1000e_open(struct tide_kvargs *kv, struct tide_port **ports, unsigned max)
{
	const char *addr = tide_kvargs_get(kv, "pci");
	char bdf[PCI_BDF_LEN];

	if (addr == NULL) {
		TIDE_LOG_ERR_("e1000e", "pci=DOMAIN:BUS:DEV.FN is required (e.g. "
			      "e1000e:pci=0000:00:03.0)");
		return -EINVAL;
	}
	if (pci_bdf_parse(addr, bdf) < 0) {
		TIDE_LOG_ERR_("e1000e", "pci=%s: not a PCI address (DOMAIN:BUS:DEV.FN in hex, e.g. "
			      "0000:00:03.0)", addr);
		return -EINVAL;
	}
	return open_dev(kv, bdf, ports, max);
}

static const struct tide_pci_id e1000e_ids[] = {
	{E1000E_VENDOR_INTEL, E1000E_DEV_82574L},
	{0, 0},
};

const struct tide_driver tide_driver_e1000e = {
	.name = "e1000e",
	.keys = "pci, promisc, allmulti, rx_chain",
	.open = e1000e_open,
	.rxq_setup = e1000e_rxq_setup,
	.txq_setup = e1000e_txq_setup,
	.rxq_release = e1000e_rxq_release,
	.txq_release = e1000e_txq_release,
	.start = e1000e_start,
	.stop = e1000e_stop,
	.close = e1000e_close,
	.mtu_set = tide_port_mtu_set_keep,
	.link_get = e1000e_link_get,
	.poll_ctl = e1000e_poll_ctl,
	.rxq_intr_fd = e1000e_rxq_intr_fd,
	.rxq_intr_set = e1000e_rxq_intr_set,
	.stats_add = e1000e_stats_add,
	.xstats = e1000e_xstats,
	.stats_reset = e1000e_stats_reset,
	.pci_ids = e1000e_ids,
	.pci_open = open_dev,
};
