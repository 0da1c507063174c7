/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost control plane, internal: what its files share. All of it runs under the port's
 * lock (the control thread or tide_port_poll_ctl()).
 *   vhost_sock.c   the socket: listen, accept, connect and reconnect, receiving a message
 *                  and its fds (SCM_RIGHTS), replies, disconnect
 *   vhost_msg.c    the table of requests and the decode step (vhost_msg.h)
 *   vhost_mem.c    the memory table: mapping and sealing regions, address translation
 *   vhost_iotlb.c  the device IOTLB (VIRTIO_F_ACCESS_PLATFORM): IOVA translation, misses
 *   vhost_vring.c  vring life: start and stop, kick and call fds
 *   vhost_ctl.c    the control thread, the port-wide requests and the entry points
 */
#ifndef TIDE_VHOST_CTL_H
#define TIDE_VHOST_CTL_H

#include <unistd.h>

#include "osutil.h"
#include "unix_sock.h"
#include "vhost.h"
#include "vhost_msg.h"

/* Why the frontend is disconnected (vhost_disconnect()). */
#define KIND_NORMAL 0 /* the port or the frontend closed the connection */
#define KIND_CTL    1 /* a bad message (counted in ierrors) */
#define KIND_DATA   2 /* a rule broken in guest memory (already counted by the queue) */

/* ---- vhost_sock.c ---- */
/*
 * Drop the frontend: every vring stopped, every mapping and fd of the connection released,
 * the reason kept (and counted unless @kind is KIND_NORMAL). No-op when not connected.
 */
void vhost_disconnect(struct vhost_port *vp, int kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Receive (the rest of) one message: 1 when whole in vp->rx, 0 when nothing more is
 * waiting, -1 when the connection went down. */
int vhost_sock_recv(struct vhost_port *vp);
void vhost_rxmsg_reset(struct vhost_rxmsg *m);
/* Take ownership of the message's fd @i (the cleanup closes the ones left). */
int vhost_take_fd(struct vhost_rxmsg *m, unsigned i);
/* Replies: -1 when the frontend was dropped (it could not take the reply). */
int vhost_send_reply(struct vhost_port *vp, uint32_t req, const void *payload, uint32_t size);
int vhost_reply_u64(struct vhost_port *vp, uint32_t req, uint64_t v);
void vhost_sock_accept(struct vhost_port *vp);
void vhost_sock_connect(struct vhost_port *vp);
int vhost_sock_listen(struct vhost_port *vp);
void vhost_sock_unlisten(struct vhost_port *vp);

/* ---- vhost_mem.c ---- */
/* Frontend virtual address range -> our address; NULL unless wholly inside one region. */
uint8_t *vhost_uva_to_host(const struct vhost_port *vp, uint64_t uva, uint64_t len);
void vhost_unmap_all(struct vhost_port *vp);

/* ---- vhost_iotlb.c ---- */
/* VIRTIO_F_ACCESS_PLATFORM negotiated: vring and buffer addresses are IOVAs. */
bool vhost_iotlb_on(const struct vhost_port *vp);
/* The reason of a ring that waits for a translation (a miss was sent). */
extern const char vhost_iotlb_wait[];
void *vhost_iotlb_ring(struct vhost_port *vp, uint64_t iova, uint64_t len, unsigned perm,
		       const char **why);
void vhost_iotlb_fill(const struct vhost_port *vp, struct vhost_mtab *m, unsigned perm);
int vhost_iotlb_service(struct vhost_port *vp);
/* Misses for the guest receive buffers the vring of @q has available (at its start, and
 * when its burst missed; @skip: an IOVA asked for already, 0 for none). */
void vhost_iotlb_ahead(struct vhost_port *vp, const struct vhost_vq *q, uint64_t skip);
/* Forget every entry and close the backend's channel (a disconnect). */
void vhost_iotlb_reset(struct vhost_port *vp);

/* ---- vhost_vring.c ---- */
/* The queue of vring @v, with its live word, busy word and fault reason in @slot; NULL if
 * the application did not set that queue up. */
struct vhost_vq *vhost_vring_q(struct vhost_port *vp, unsigned v, struct quiesce_slot *slot);
bool vhost_packed_ring(const struct vhost_port *vp);
void vhost_vring_stop(struct vhost_port *vp, unsigned v);
/* Stop every vring; @was (if not NULL) records which ran. */
void vhost_vring_stop_all(struct vhost_port *vp, bool *was);
/* Start vring @v if it has everything it needs. Returns -1 if the frontend was dropped. */
int vhost_vring_try_start(struct vhost_port *vp, unsigned v);
/* Start the vrings @was marks (every vring if NULL). -1 if the frontend was dropped. */
int vhost_vring_start_all(struct vhost_port *vp, const bool *was);
/* Every vring stopped and forgotten, its fds closed. */
void vhost_vrings_reset(struct vhost_port *vp);
/* The link is up while vrings 0 and 1 run. */
void vhost_update_link(struct vhost_port *vp);

#endif
