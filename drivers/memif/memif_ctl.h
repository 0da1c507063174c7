/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memif control plane, internal: what its files share (the rest of the driver sees
 * memif.h). All of it runs on the control thread (tide_port_poll_ctl(), port start, stop
 * and close); every socket is non-blocking.
 *   memif_ctl.c     messages on the control socket, the entry points (start, poll, stop)
 *   memif_server.c  the server's side of the handshake: checks, mappings, answers
 *   memif_client.c  the client's side: connecting, region 0 and the eventfds, the plan
 *   memif_link.c    link up and down: queues published and quiesced, regions released,
 *                   the zero-copy quarantine
 *   memif_sock.c    server sockets shared by several interface ids
 */
#ifndef TIDE_MEMIF_CTL_H
#define TIDE_MEMIF_CTL_H

#include "memif.h"
#include "osutil.h"

/* ---- memif_ctl.c ---- */
/* Send @m (with @fd as SCM_RIGHTS when >= 0) on the port's connection: 0 or -errno. */
int memif_ctl_send(struct memif_port *mp, const struct memif_msg *m, int fd);

/* ---- memif_server.c ---- */
/* One message from the client (@fd: the one that came with it, or -1; taken over). */
void memif_server_handle(struct memif_port *mp, const struct memif_msg *m, int fd);

/* ---- memif_client.c ---- */
/* One message from the server. */
void memif_client_handle(struct memif_port *mp, const struct memif_msg *m);
/* Not connected: connect when the retry time has come (back off after a failure). */
void memif_client_try(struct memif_port *mp);

/* ---- memif_link.c ---- */
/* The handshake is done: give each queue its ring and publish the generation. */
void memif_link_up(struct memif_port *mp);

#endif /* TIDE_MEMIF_CTL_H */
