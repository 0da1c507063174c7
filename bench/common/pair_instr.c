/* SPDX-License-Identifier: BSD-3-Clause */
/* The lock-step pair of the instruction-count harnesses: bench/common/pair_instr.h. */
#include <stdio.h>
#include <stdlib.h>

#include "pair_instr.h"

struct tide_port *pair_a, *pair_b;

uint16_t PAIR_A_TX(struct tide_mbuf **pk, uint16_t n)
{
	return tide_tx_burst(tide_port_txq(pair_a, 0), pk, n);
}

uint16_t PAIR_B_RX(struct tide_mbuf **pk, uint16_t n)
{
	return tide_rx_burst(tide_port_rxq(pair_b, 0), pk, n);
}

uint16_t PAIR_B_TX(struct tide_mbuf **pk, uint16_t n)
{
	return tide_tx_burst(tide_port_txq(pair_b, 0), pk, n);
}

uint16_t PAIR_A_RX(struct tide_mbuf **pk, uint16_t n)
{
	return tide_rx_burst(tide_port_rxq(pair_a, 0), pk, n);
}

static void step(int rc, const char *what, const char *spec)
{
	if (rc != 0) {
		fprintf(stderr, "pair_instr: %s: %s: %d\n", spec, what, rc);
		exit(1);
	}
}

struct tide_port *pair_port(const char *spec, unsigned desc, struct tide_pool *pool)
{
	struct tide_port *p = NULL;

	step(tide_port_open(spec, &p), "open", spec);
	step(tide_port_configure(p, 1, 1), "configure", spec);
	step(tide_rxq_setup(p, 0, desc, pool, NULL), "Rx queue", spec);
	step(tide_txq_setup(p, 0, desc, NULL), "Tx queue", spec);
	step(tide_port_start(p), "start", spec);
	return p;
}

bool pair_up(void)
{
	struct tide_link la, lb;

	tide_port_poll_ctl(pair_a);
	tide_port_poll_ctl(pair_b);
	tide_port_link_get(pair_a, &la);
	tide_port_link_get(pair_b, &lb);
	return la.up && lb.up;
}
