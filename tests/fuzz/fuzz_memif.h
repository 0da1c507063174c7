/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Input formats of the memif fuzz targets, shared with the seed corpus generator.
 *
 * fuzz_memif_msg input:
 *   limits[4]   server limits: regions, C2S rings, S2C rings (each byte + 1), log2 (% 15)
 *   then records until the input ends:
 *     ctrl      bits 0-1: number of fds; bit 2: a "sent" record; bit 3: explicit length
 *     [len]     with bit 3: the message length (0..255) instead of MEMIF_MSG_SIZE
 *     body      sent record: 1 byte, the type sent (both roles record it);
 *               otherwise: len bytes (fewer if the input ends), fed to decode and, when
 *               valid, to the state machine of both roles.
 *
 * fuzz_memif_desc input:
 *   n_regions   byte % (FUZZ_DESC_MAX_REGIONS + 1)
 *   sizes       n_regions x u64
 *   buffer      u32 buffer size
 *   max_chain   byte % FUZZ_DESC_MAX_CHAIN + 1
 *   log2        byte % (FUZZ_DESC_MAX_LOG2 + 1)
 *   index, cached, seen, window: 4 x u16
 *   descriptors the rest, copied over the ring (zero padded)
 * Short inputs read as zero.
 */
#ifndef TIDE_FUZZ_MEMIF_H
#define TIDE_FUZZ_MEMIF_H

#define FUZZ_CTRL_FDS	 0x03
#define FUZZ_CTRL_SENT	 0x04
#define FUZZ_CTRL_LENGTH 0x08

#define FUZZ_DESC_MAX_REGIONS 8
#define FUZZ_DESC_MAX_CHAIN   16
#define FUZZ_DESC_MAX_LOG2    6

#endif
