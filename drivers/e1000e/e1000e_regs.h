/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Intel 82574L (e1000e) registers and the legacy descriptor formats the driver uses, from
 * the 82574 GbE Controller Family datasheet. Offsets are bytes into BAR0; every register
 * is 32 bits, little-endian.
 */
#ifndef TIDE_E1000E_REGS_H
#define TIDE_E1000E_REGS_H

#include <assert.h>
#include <stdint.h>

#define E1000E_VENDOR_INTEL 0x8086
#define E1000E_DEV_82574L 0x10d3

/* General */
#define E1000E_CTRL 0x0000
#define E1000E_CTRL_SLU (1u << 6)   /* set link up */
#define E1000E_CTRL_RST (1u << 26)  /* device reset, self-clearing */
#define E1000E_STATUS 0x0008
#define E1000E_STATUS_LU (1u << 1)  /* link up */
#define E1000E_STATUS_SPEED_SHIFT 6 /* 2 bits: 10, 100, 1000, 1000 Mb/s */
#define E1000E_CTRL_EXT 0x0018

/* Interrupts */
#define E1000E_ICR 0x00c0 /* cause; write 1 to clear */
#define E1000E_ICS 0x00c8
#define E1000E_IMS 0x00d0 /* mask set */
#define E1000E_IMC 0x00d8 /* mask clear */
#define E1000E_EIAC 0x00dc /* MSI-X: causes cleared (and masked) when their vector fires */
#define E1000E_IVAR 0x00e4 /* MSI-X: cause -> vector, 4 bits each (3 vector, 1 valid) */
#define E1000E_ICR_LSC (1u << 2)
#define E1000E_ICR_RXQ0 (1u << 20)
#define E1000E_ICR_OTHER (1u << 24)
#define E1000E_ICR_LINK (E1000E_ICR_LSC | E1000E_ICR_OTHER) /* MSI-X: link changes */
#define E1000E_IVAR_RXQ0_SHIFT 0
#define E1000E_IVAR_OTHER_SHIFT 16
#define E1000E_IVAR_VALID 0x8u

/* Receive */
#define E1000E_RCTL 0x0100
#define E1000E_RCTL_EN (1u << 1)
#define E1000E_RCTL_UPE (1u << 3)   /* unicast promiscuous */
#define E1000E_RCTL_MPE (1u << 4)   /* multicast promiscuous */
#define E1000E_RCTL_LPE (1u << 5)   /* long packets (above 1522 bytes) */
#define E1000E_RCTL_BAM (1u << 15)  /* accept broadcast */
#define E1000E_RCTL_BSIZE_SHIFT 16  /* 2 bits; with BSEX the size is 16 times */
#define E1000E_RCTL_BSEX (1u << 25)
#define E1000E_RCTL_SECRC (1u << 26) /* strip the Ethernet CRC */
#define E1000E_MAX_FRAME 9230u /* largest jumbo of the 82574 (9234) without the FCS */
#define E1000E_RFCTL 0x5008
#define E1000E_RXCSUM 0x5000
#define E1000E_RXCSUM_IPOFLD (1u << 8) /* check the IPv4 header checksum */
#define E1000E_RXCSUM_TUOFLD (1u << 9) /* check the TCP/UDP checksum (IPv4 and IPv6) */
#define E1000E_RDBAL 0x2800
#define E1000E_RDBAH 0x2804
#define E1000E_RDLEN 0x2808
#define E1000E_RDH 0x2810
#define E1000E_RDT 0x2818
#define E1000E_RDTR 0x2820
#define E1000E_RADV 0x282c
#define E1000E_MTA 0x5200 /* 128 registers */
#define E1000E_RAL0 0x5400
#define E1000E_RAH0 0x5404
#define E1000E_RAH_AV (1u << 31)

/* Transmit */
#define E1000E_TCTL 0x0400
#define E1000E_TCTL_EN (1u << 1)
#define E1000E_TCTL_PSP (1u << 3)      /* pad short packets */
#define E1000E_TCTL_CT_SHIFT 4         /* collision threshold */
#define E1000E_TCTL_COLD_SHIFT 12      /* collision distance */
#define E1000E_TIPG 0x0410
#define E1000E_TDBAL 0x3800
#define E1000E_TDBAH 0x3804
#define E1000E_TDLEN 0x3808
#define E1000E_TDH 0x3810
#define E1000E_TDT 0x3818
#define E1000E_TIDV 0x3820
#define E1000E_TADV 0x382c
#define E1000E_TARC0 0x3840
#define E1000E_TARC_ENABLE (1u << 10)

/* Statistics: clear on read. */
#define E1000E_CRCERRS 0x4000
#define E1000E_ALGNERRC 0x4004
#define E1000E_RXERRC 0x400c
#define E1000E_MPC 0x4010  /* missed: no room in the receive FIFO */
#define E1000E_RLEC 0x4040
#define E1000E_GPRC 0x4074
#define E1000E_GPTC 0x4080
#define E1000E_RNBC 0x40a0 /* receive with no descriptor available */
#define E1000E_ROC 0x40ac  /* oversize */
#define E1000E_TPR 0x40d0
#define E1000E_TPT 0x40d4

/* Legacy receive descriptor: the driver writes addr; the device writes the rest. */
struct e1000e_rx_desc {
	uint64_t addr;
	uint16_t len;
	uint16_t csum;
	uint8_t status;
	uint8_t errors;
	uint16_t special;
};

#define E1000E_RXD_STAT_DD 0x01
#define E1000E_RXD_STAT_EOP 0x02
#define E1000E_RXD_STAT_IXSM 0x04  /* ignore the checksum bits */
#define E1000E_RXD_STAT_UDPCS 0x10 /* UDP checksum checked */
#define E1000E_RXD_STAT_TCPCS 0x20 /* TCP (or UDP) checksum checked */
#define E1000E_RXD_STAT_IPCS 0x40  /* IPv4 header checksum checked */
#define E1000E_RXD_ERR_TCPE 0x20   /* TCP/UDP checksum wrong */
#define E1000E_RXD_ERR_IPE 0x40    /* IPv4 header checksum wrong */
/* CRC, symbol, sequence and Rx data errors; the checksum bits are not errors of the frame. */
#define E1000E_RXD_ERR_FRAME 0x87

/* Legacy transmit descriptor: lower = length | cso << 16 | cmd << 24; upper = status... */
struct e1000e_tx_desc {
	uint64_t addr;
	uint32_t lower;
	uint32_t upper;
};

#define E1000E_TXD_CMD_EOP (0x01u << 24)
#define E1000E_TXD_CMD_IFCS (0x02u << 24) /* insert the CRC */
#define E1000E_TXD_CMD_RS (0x08u << 24)   /* report status: write DD back */
#define E1000E_TXD_STAT_DD 0x01u

/*
 * Extended descriptors (DEXT), mixed freely with legacy ones in the same ring. The TCP/IP
 * context descriptor (DTYP 0) sets up the checksums of the data descriptors (DTYP 1) that
 * follow, until the next context:
 *   addr  = IPCSS (byte 0) | IPCSO (1) | IPCSE (2-3) | TUCSS (4) | TUCSO (5) | TUCSE (6-7):
 *           where the IPv4 header checksum's range starts, where the sum goes, where the
 *           range ends (inclusive); the same for TCP/UDP, TUCSE 0 meaning the packet's end;
 *   lower = PAYLEN (TSO) | DTYP 0 | TUCMD (bits 24-31: TCP, IP = IPv4, RS, DEXT);
 *   upper = status (DD) | HDRLEN | MSS (TSO).
 * A data descriptor: lower = length | DTYP 1 | DCMD (EOP, IFCS, RS, DEXT as legacy CMD);
 * upper = status (DD) | POPTS << 8 (IXSM: insert the IPv4 header checksum, TXSM: insert the
 * TCP/UDP checksum). The device sums its ranges and stores the result; it adds no
 * pseudo-header: the TCP/UDP checksum field must hold the pseudo-header's sum.
 */
#define E1000E_TXD_CMD_DEXT (0x20u << 24)
#define E1000E_TXD_DTYP_DATA (1u << 20)
#define E1000E_TXD_TUCMD_TCP (0x01u << 24)
#define E1000E_TXD_TUCMD_IP (0x02u << 24)
#define E1000E_TXD_POPTS_IXSM (0x01u << 8)
#define E1000E_TXD_POPTS_TXSM (0x02u << 8)

static_assert(sizeof(struct e1000e_rx_desc) == 16, "legacy Rx descriptor is 16 bytes");
static_assert(sizeof(struct e1000e_tx_desc) == 16, "legacy Tx descriptor is 16 bytes");

#endif
