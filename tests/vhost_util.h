/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers of the vhost backend tests that drive one port against tide's test frontend
 * (vhost_front.h): the port under test, its info, and its control plane polled until a
 * condition holds.
 */
#ifndef TIDE_TEST_VHOST_UTIL_H
#define TIDE_TEST_VHOST_UTIL_H

#include <tide/port.h>
#include <tide/vhost.h>

#include "proc_util.h"
#include "vhost_front.h"

/* The vhost port under test, which the test opens. A global, as fe_handshake()'s @poll
 * takes no argument. */
static struct tide_port *P;

/* The vhost info of P into @vi. */
static inline void vinfo(struct tide_vhost_info *vi)
{
	vi->sz = sizeof(*vi);
	FE_CHECK(tide_vhost_info_get(P, vi) == 0);
}

/* One poll of P's control plane; returns at once when there is nothing to do. */
static inline void poll_ctl(void)
{
	FE_CHECK(tide_port_poll_ctl(P) == 0);
}

/* Poll P's control plane until @cond, for up to 5 s (no sleeps: each poll returns at once). */
#define WAIT_FOR(cond, what) POLL_UNTIL(poll_ctl(), cond, what)

#endif
