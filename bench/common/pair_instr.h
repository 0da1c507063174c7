/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Two ports of tide in one process, in lock step, for instruction counts under callgrind
 * (bench/memif/memif_instr.c, bench/vhost/virtio_instr.c): port A sends to port B and B to
 * A, each of the four burst calls behind a noinline function of its own so that
 * `valgrind --tool=callgrind --toggle-collect=bench_*` counts it alone (the packets are
 * built and freed outside them). The build names the four functions (PAIR_A_TX,
 * PAIR_B_RX, PAIR_B_TX, PAIR_A_RX: the names bench/memif/run and bench/vhost/run read),
 * and the file they are defined in ends in _instr.c, as those scripts expect.
 */
#ifndef TIDE_BENCH_PAIR_INSTR_H
#define TIDE_BENCH_PAIR_INSTR_H

#include <stdbool.h>
#include <stdint.h>

#include <tide/port.h>

/* The two ports, set by the harness before the first burst. */
extern struct tide_port *pair_a, *pair_b;

__attribute__((noinline)) uint16_t PAIR_A_TX(struct tide_mbuf **pk, uint16_t n);
__attribute__((noinline)) uint16_t PAIR_B_RX(struct tide_mbuf **pk, uint16_t n);
__attribute__((noinline)) uint16_t PAIR_B_TX(struct tide_mbuf **pk, uint16_t n);
__attribute__((noinline)) uint16_t PAIR_A_RX(struct tide_mbuf **pk, uint16_t n);

/* A port with one queue pair of @desc descriptors on @pool, started; exits 1 (with the
 * failing step on stderr) when a step fails. */
struct tide_port *pair_port(const char *spec, unsigned desc, struct tide_pool *pool);

/* Polls both ports' control planes; true when both links are up. */
bool pair_up(void);

#endif
