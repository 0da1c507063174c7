/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Quiescent-state based reclamation for the control plane (in the manner of RCU QSBR and
 * DPDK's rte_rcu_qsbr). Readers are the threads that run burst calls; their quiescent
 * points are the burst calls themselves (tide_qs_tick_() in tide/port.h), where a thread
 * holds no pointer into a queue's internal state. A writer unpublishes something, runs a
 * grace period, and may then free or reuse it.
 *
 *   writer (control)                         reader (lcore i)
 *   unpublish (store)                        ... burst: may follow the old pointer ...
 *   e = ++token          (release) ----+     tick: t = token (acquire)
 *   wait seen[i] >= e or 0 (acquire) <-+---- seen[i] = t      (release)
 *   free                                     ... burst: sees the unpublished state ...
 *
 * A reader that saw the new token also sees everything unpublished before it (acquire
 * pairs with the bump's release); a reader that reports e has finished every burst that
 * began before it (program order, published by the release store of seen). Going online
 * is the one store-load pattern (seen, then the queue state): a full fence on that path
 * and in the writer after the bump keeps a thread that comes online from slipping between
 * the bump and the scan.
 */
#ifndef TIDE_SRC_QS_H
#define TIDE_SRC_QS_H

#include <stdbool.h>
#include <stdint.h>

#include <tide/lcore.h>

/* Start a grace period: returns its token. */
uint64_t qs_start(void);

/* Has every online thread other than the caller passed a quiescent point since qs_start()
 * returned @e (or gone offline)? Non-blocking. */
bool qs_passed(uint64_t e);

/* A whole grace period: start one and wait until it has passed (the caller counts as
 * quiescent). Logs once per second while some thread keeps it waiting. */
void qs_synchronize(void);

/* How many qs_synchronize() calls ran in this process (relaxed; tests pin the count of a
 * control call, e.g. one per queue release rather than one per queue). */
extern uint64_t qs_synchronize_calls;

#endif
