/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The test frames of the PCI suite, shared by the host side (wire.c) and the guest side
 * (pci_guest.c): Ethernet, ethertype 0x88b5 (local experimental), then a header that says
 * which test the frame belongs to and its sequence number, then a pattern that depends on
 * both, so that a frame cut short, padded, reordered or mixed with another is seen.
 *
 *   0  dst MAC, src MAC, 0x88b5
 *   14 magic "TPCI", tag (1 byte), 3 bytes 0, seq (le32), length of the frame (le32)
 *   30 byte i of the frame = (seq * 7 + i + tag) & 0xff
 */
#ifndef TIDE_TEST_WIRE_FRAME_H
#define TIDE_TEST_WIRE_FRAME_H

#include <stdint.h>
#include <string.h>

#define WIRE_HDR 30u
#define WIRE_MAX 16384u

static const uint8_t wire_guest_mac[6] = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56};
static const uint8_t wire_host_mac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};

static inline uint8_t wire_byte(uint32_t seq, uint32_t i, uint8_t tag)
{
	return (uint8_t)(seq * 7u + i + tag);
}

/* Write frame @seq of test @tag, @len bytes (at least WIRE_HDR), to @b. */
static inline void wire_fill(uint8_t *b, uint32_t len, uint8_t tag, uint32_t seq,
			     const uint8_t dst[6], const uint8_t src[6])
{
	memcpy(b, dst, 6);
	memcpy(b + 6, src, 6);
	b[12] = 0x88;
	b[13] = 0xb5;
	memcpy(b + 14, "TPCI", 4);
	b[18] = tag;
	b[19] = b[20] = b[21] = 0;
	for (unsigned k = 0; k < 4; k++) {
		b[22 + k] = (uint8_t)(seq >> (8 * k));
		b[26 + k] = (uint8_t)(len >> (8 * k));
	}
	for (uint32_t i = WIRE_HDR; i < len; i++)
		b[i] = wire_byte(seq, i, tag);
}

/* Byte @i of a frame whose header is @b: the pattern check of one byte. */
static inline int wire_check_byte(const uint8_t *hdr, uint32_t i, uint8_t v)
{
	uint32_t seq = hdr[22] | hdr[23] << 8 | hdr[24] << 16 | (uint32_t)hdr[25] << 24;

	return v == wire_byte(seq, i, hdr[18]);
}

/* Check a whole frame in one buffer: 0 and tag/seq when it is one of ours and intact. */
static inline int wire_check(const uint8_t *b, uint32_t len, uint8_t *tag, uint32_t *seq)
{
	uint32_t flen, s;

	if (len < WIRE_HDR || b[12] != 0x88 || b[13] != 0xb5 || memcmp(b + 14, "TPCI", 4) != 0)
		return -1;
	s = b[22] | b[23] << 8 | b[24] << 16 | (uint32_t)b[25] << 24;
	flen = b[26] | b[27] << 8 | b[28] << 16 | (uint32_t)b[29] << 24;
	*tag = b[18];
	*seq = s;
	if (flen != len)
		return -2;
	for (uint32_t i = WIRE_HDR; i < len; i++)
		if (b[i] != wire_byte(s, i, b[18]))
			return -3;
	return 0;
}

#endif
