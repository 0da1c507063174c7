/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * e1000e driver internals: one Rx and one Tx queue of an Intel 82574L through the PCI
 * layer (src/pci.h). Descriptor handling only: Tx bookkeeping goes through the Tx
 * completion engine (txc.h, DD write-back on RS-marked descriptors), Rx buffers through the
 * shared refill (rxr.h).
 */
#ifndef TIDE_E1000E_H_INTERNAL
#define TIDE_E1000E_H_INTERNAL

#include <stdbool.h>

#include "driver.h"
#include "e1000e_regs.h"
#include "pci.h"
#include "rxr.h"
#include "txc.h"

/* MSI-X vectors: Rx queue 0, and "other" (link changes). */
#define E1000E_VEC_RX 0
#define E1000E_VEC_OTHER 1
#define E1000E_NB_VEC 2

struct e1000e_port;

struct e1000e_txq {
	struct tide_txq pub; /* first: the handle */
	struct txc txc;
	struct e1000e_tx_desc *ring;
	size_t ring_len;      /* bytes mapped (page multiple) */
	uint32_t size, mask;
	volatile uint32_t *tdt; /* doorbell */
	/* The DMA region the last packet's data was found in (one compare per packet), and
	 * its page size: a segment across a page gets a descriptor per page (see tx_slow). */
	uintptr_t dma_lo, dma_len, dma_page;
	bool fast_asserted;   /* txfree=fast: releases ignore references */
	uint64_t unmapped;    /* packets refused: their memory is not mapped for the device */
	uint64_t refused;     /* packets refused otherwise (shared chain segment, fast+split,
				 a checksum request that does not match the packet) */
	/* Checksum offload (a Tx checksum offload enabled: the burst reads each packet's
	 * requests). The context the device holds, as last written on this queue: a packet
	 * whose request needs another one gets a context descriptor first. */
	bool offload;
	bool ctx_valid;       /* false until the first context after start */
	uint64_t ctx_setup;   /* the context descriptor's first 8 bytes (IPCSS .. TUCSE) */
	uint64_t contexts;    /* context descriptors written */
	struct e1000e_port *ep;
};

struct e1000e_rxq {
	struct tide_rxq pub; /* first: the handle */
	struct rxr rxr;
	struct e1000e_rx_desc *ring;
	size_t ring_len;
	uint32_t size, mask;
	uint16_t headroom;
	uint16_t buf_size;    /* what the device may write per descriptor */
	bool chain;           /* frames over one buffer: chains (true) or dropped */
	volatile uint32_t *rdt;
	struct tide_mbuf *pkt_first, *pkt_last; /* a frame being assembled across bursts */
	bool pkt_bad;         /* the frame being assembled is dropped at its last descriptor */
	uint64_t dropped_long; /* frames over one buffer dropped (rx_chain=no) */
	uint64_t dropped_err;  /* frames the device flagged with an error */
	struct tide_mbuf__rx_tmpl tmpl;
	uint64_t offloads;    /* TIDE_OFFLOAD_RX_* enabled */
	/* Rx checksum status: ol_flags for each combination of the descriptor's status and
	 * error bits the device sets (rx_csum_index), built at setup from what is enabled. */
	uint8_t csum_flags[128];
	struct e1000e_port *ep;
};

/* The index into csum_flags of a descriptor's status and errors: IXSM, UDPCS, TCPCS, IPCS
 * (bits 2, 4, 5, 6 of the status) and TCPE, IPE (bits 5, 6 of the errors). */
static inline unsigned e1000e_rx_csum_index(uint8_t status, uint8_t errors)
{
	return (status >> 2 & 0x1du) | (errors & 0x60u);
}

struct e1000e_port {
	struct pci_dev *pci; /* first: what the PCI layer's public calls find (pci_bus.c) */
	struct tide_port *port;
	volatile uint8_t *regs; /* BAR0 */
	bool promisc, allmulti, chain;
	bool irq;             /* MSI-X vectors are set up */
	bool rx_intr_on;
	int link_up;          /* last seen by poll_ctl / link_get */
	uint64_t link_changes;
	struct e1000e_rxq *rxq;
	struct e1000e_txq *txq;
	/* Clear-on-read device counters, accumulated. */
	struct {
		uint64_t crcerrs, algnerrc, rxerrc, mpc, rlec, rnbc, roc, gprc, gptc, tpr, tpt;
	} hw;
};

static inline uint32_t e1000e_rd(const struct e1000e_port *ep, uint32_t reg)
{
	return *(volatile const uint32_t *)(ep->regs + reg);
}

static inline void e1000e_wr(const struct e1000e_port *ep, uint32_t reg, uint32_t v)
{
	*(volatile uint32_t *)(ep->regs + reg) = v;
}

/* e1000e.c */
/* Mask interrupts, stop Rx and Tx, reset the device and wait up to 100 ms for it to come
 * out of reset (CTRL.RST clears). 0, or -EIO (logged) when it did not. */
int e1000e_dev_reset(struct e1000e_port *ep);

/* e1000e_rxtx.c */
unsigned e1000e_tx_advance_ool(struct txc *t);
void e1000e_rx_post_ool(struct rxr *r, uint32_t first, unsigned n, bool doorbell);
void e1000e_rx_refill(struct e1000e_rxq *q);
void e1000e_rx_csum_init(struct e1000e_rxq *q);
tide_rx_burst_fn e1000e_rx_burst_fn(bool csum);
tide_tx_burst_fn e1000e_tx_burst_fn(bool offload);

#endif
