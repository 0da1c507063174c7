/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * simnic descriptor formats and registers: the contract between the driver (simnic.c)
 * and the device model (simnic_hw.c). Little-endian, 16 bytes each.
 *
 * Tx descriptor: the driver writes addr, len, cmd and clears status; the device writes
 * status.DD back, only on descriptors whose cmd has RS (wb=dd mode).
 * Rx descriptor: the driver writes addr and clears status; the device writes len, rss and
 * status (DD | EOP) when it has stored a packet in the buffer. Write-back is in ring order
 * (as on ixgbe-class NICs): the status store of a descriptor is released after every
 * earlier descriptor's write-back, so DD seen on one descriptor means every descriptor
 * before it since the last one checked is complete too. The driver checks one descriptor
 * per burst when it can.
 *
 * Doorbells (tail registers) are free-running 32-bit indices written by the driver with a
 * release store; the device reads them with acquire, which makes the descriptors written
 * before the doorbell visible. Write-backs (status, head) are release stores by the device
 * paired with acquire loads by the driver.
 */
#ifndef TIDE_SIMNIC_DESC_H
#define TIDE_SIMNIC_DESC_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#define SIMNIC_TXD_CMD_EOP 0x1u
#define SIMNIC_TXD_CMD_RS 0x2u
#define SIMNIC_TXD_STAT_DD 0x1u

#define SIMNIC_RXD_STAT_DD 0x1u
#define SIMNIC_RXD_STAT_EOP 0x2u

struct simnic_tx_desc {
	uint64_t addr;   /* packet data (virtual address: the model's IOMMU is the identity) */
	uint16_t len;
	uint16_t cmd;    /* SIMNIC_TXD_CMD_* */
	uint16_t rsvd;
	uint16_t status; /* written back: SIMNIC_TXD_STAT_DD */
};

struct simnic_rx_desc {
	uint64_t addr;   /* buffer to store the packet in */
	uint16_t len;    /* written back */
	uint16_t status; /* written back: SIMNIC_RXD_STAT_* */
	uint32_t rss;    /* written back: flow hash */
};

static_assert(sizeof(struct simnic_tx_desc) == 16, "Tx descriptor is 16 bytes");
static_assert(offsetof(struct simnic_tx_desc, status) == 14, "Tx status at byte 14");
static_assert(sizeof(struct simnic_rx_desc) == 16, "Rx descriptor is 16 bytes");
static_assert(offsetof(struct simnic_rx_desc, status) == 10, "Rx status at byte 10");

#endif
