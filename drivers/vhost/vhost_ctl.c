/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost-user control plane (backend side): the socket, the messages, the memory table,
 * vring setup, start and stop. A started port has its own control thread (ctl_main()): it
 * sleeps in poll() on the listening socket (server), the connection, the reconnect time
 * (client: a timeout, 50 ms after the last attempt) and an eventfd that port stop, a
 * worker's fault (vhost_fault()) and tide_port_poll_ctl() write; an idle port costs no
 * wakeup, and a wakeup costs only the calls for what woke it. tide_port_poll_ctl() still
 * handles at once what the frontend has sent (tests rely on it; applications need not call
 * it: the port's info has needs_poll_ctl 0). Both run under the port's lock and never
 * wait for the frontend: the sockets are non-blocking.
 *
 * Every message is checked before it changes anything: its version, its payload size for
 * its request, the number of file descriptors that came with it, every index, size and
 * address in it. A violation disconnects the frontend with a logged reason, every mapping
 * and fd of the connection is released, and the port waits for (server) or retries
 * (client) the next connection.
 *
 * A vring runs when the frontend has given its size, addresses and kick (and enabled it,
 * when VHOST_USER_F_PROTOCOL_FEATURES was negotiated) and a memory table exists. Starting
 * it translates the ring addresses through the memory table (each ring wholly inside one
 * region, aligned), gives the queue its copy of the table and publishes the queue (live).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <tide/lcore.h>

#include "log.h"
#include "unix_sock.h"
#include "vhost.h"

#define KIND_NORMAL 0 /* the port or the frontend closed the connection */
#define KIND_CTL    1 /* a bad message (counted in ierrors) */
#define KIND_DATA   2 /* a rule broken in guest memory (already counted by the queue) */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static int sock_addr(const struct vhost_port *vp, struct sockaddr_un *sa, socklen_t *len)
{
	*len = unix_sock_addr(vp->path, false, sa);
	return 0;
}

/* ---- queues: publish and quiesce ---- */

/* The queue of vring @v (even: guest Rx = our Tx queue; odd: guest Tx = our Rx queue). */
static struct vhost_vq *vring_q(struct vhost_port *vp, unsigned v, uint32_t **live,
				uint32_t **busy, struct vhost_fault_slot **fs)
{
	struct tide_port *p = vp->port;
	unsigned i = v / 2;

	if (v % 2 == 0) {
		struct vhost_txq *q = i < p->nb_txq ? (struct vhost_txq *)p->txq[i] : NULL;

		if (q == NULL)
			return NULL;
		*live = &q->live, *busy = &q->busy, *fs = &q->fs;
		return &q->vq;
	} else {
		struct vhost_rxq *q = i < p->nb_rxq ? (struct vhost_rxq *)p->rxq[i] : NULL;

		if (q == NULL)
			return NULL;
		*live = &q->live, *busy = &q->busy, *fs = &q->fs;
		return &q->vq;
	}
}

static bool packed_ring(const struct vhost_port *vp)
{
	return vp->features & VHOST_BIT(VIRTIO_F_RING_PACKED);
}

/*
 * Take vring @v off its queue: pair of vhost_enter(): live = 0, quiesce_barrier() (the
 * worker's store of busy then load of live is ordered by it), then wait until the burst is
 * over. The indices are then ours to read.
 */
static void vring_stop(struct vhost_port *vp, unsigned v)
{
	struct vhost_vring *vr = &vp->vr[v];
	uint32_t *live, *busy;
	struct vhost_fault_slot *fs;
	struct vhost_vq *q;
	int rc;

	if (!vr->running)
		return;
	vr->running = false;
	q = vring_q(vp, v, &live, &busy, &fs);
	if (q == NULL)
		return;
	__atomic_store_n(live, 0, __ATOMIC_RELAXED);
	rc = quiesce_barrier(vp->fence);
	if (rc < 0) /* busy proves nothing: wait for a grace period */
		quiesce_fallback(vp->port->name, rc);
	/* Acquire: pairs with vhost_leave(); the burst's guest-memory accesses are over. */
	while (__atomic_load_n(busy, __ATOMIC_ACQUIRE))
		tide_pause();
	/* Packed: bits 0-14 the ring position, bit 15 its wrap counter. */
	vr->base = q->packed ? (uint16_t)(q->last_avail | (q->wrap ? VRING_PACKED_WRAP : 0))
			     : q->last_avail;
	TIDE_LOG_DEBUG_(vp->port->name, "vring %u stopped: last_avail %u used_idx %u avail %u used %u",
			v, q->last_avail, q->used_idx, q->avail->idx, q->used->idx);
	fs->why = NULL;
}

static void vring_stop_all(struct vhost_port *vp, bool *was)
{
	for (unsigned v = 0; v < 2 * vp->queues; v++) {
		if (was != NULL)
			was[v] = vp->vr[v].running;
		vring_stop(vp, v);
	}
}

/* Frontend virtual address range -> our address; NULL unless wholly inside one region. */
static uint8_t *uva_to_host(const struct vhost_port *vp, uint64_t uva, uint64_t len)
{
	for (unsigned i = 0; i < vp->nmap; i++) {
		const struct vhost_map *m = &vp->map[i];
		uint64_t off = uva - m->uva;

		if (uva >= m->uva && off < m->size && len <= m->size - off)
			return m->host + off;
	}
	return NULL;
}

static void update_link(struct vhost_port *vp)
{
	int up = vp->vr[0].running && vp->vr[1].running;

	if (up != vp->up)
		TIDE_LOG_INFO_(vp->port->name, "link %s", up ? "up" : "down");
	__atomic_store_n(&vp->up, up, __ATOMIC_RELAXED);
}

/* Why vring @v cannot start with these addresses, or NULL. */
static const char *vring_map(struct vhost_port *vp, unsigned v, struct vhost_vq *q)
{
	struct vhost_vring *vr = &vp->vr[v];
	uint32_t n = vr->num;

	if (packed_ring(vp)) {
		/* The descriptor ring and the driver's and the device's event areas. */
		q->desc = (struct vring_desc *)uva_to_host(vp, vr->desc, vring_desc_bytes(n));
		q->avail = (struct vring_avail *)uva_to_host(vp, vr->avail,
							     sizeof(struct vring_packed_event));
		q->used = (struct vring_used *)uva_to_host(vp, vr->used,
							   sizeof(struct vring_packed_event));
		if (!q->desc)
			return "descriptor ring not in guest memory";
		if (!q->avail)
			return "driver event area not in guest memory";
		if (!q->used)
			return "device event area not in guest memory";
		if ((uintptr_t)q->desc % 16 || (uintptr_t)q->avail % 4 || (uintptr_t)q->used % 4)
			return "vring address misaligned";
		if ((vr->base & ~VRING_PACKED_WRAP) >= n)
			return "base beyond the queue size";
		return NULL;
	}
	if (!tide_is_pow2(n))
		return "split ring size not a power of two";
	q->desc = (struct vring_desc *)uva_to_host(vp, vr->desc, vring_desc_bytes(n));
	q->avail = (struct vring_avail *)uva_to_host(vp, vr->avail, vring_avail_bytes(n));
	q->used = (struct vring_used *)uva_to_host(vp, vr->used, vring_used_bytes(n));
	if (q->desc == NULL)
		return "descriptor table not in guest memory";
	if (q->avail == NULL)
		return "avail ring not in guest memory";
	if (q->used == NULL)
		return "used ring not in guest memory";
	if ((uintptr_t)q->desc % 16 || (uintptr_t)q->avail % 2 || (uintptr_t)q->used % 4)
		return "vring address misaligned";
	return NULL;
}

static void disconnect(struct vhost_port *vp, int kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Start vring @v if it has everything it needs. Returns -1 if the frontend was dropped. */
static int vring_try_start(struct vhost_port *vp, unsigned v)
{
	struct vhost_vring *vr = &vp->vr[v];
	bool enabled = (vp->features & VHOST_BIT(VHOST_USER_F_PROTOCOL_FEATURES)) ? vr->enabled
										    : true;
	uint32_t *live, *busy;
	struct vhost_fault_slot *fs;
	const char *why;
	struct vhost_vq *q;

	if (vr->running || !vr->num_set || !vr->addr_set || !vr->kicked || !enabled ||
	    vp->nmap == 0)
		return 0;
	q = vring_q(vp, v, &live, &busy, &fs);
	if (q == NULL) {
		/* A vring of a queue the application did not set up: nothing polls it. */
		return 0;
	}
	if ((why = vring_map(vp, v, q)) != NULL) {
		disconnect(vp, KIND_CTL, "vring %u: %s", v, why);
		return -1;
	}
	q->num = (uint16_t)vr->num;
	q->mask = (uint16_t)(vr->num - 1);
	q->last_avail = vr->base;
	q->used_idx = vr->base;
	q->packed = packed_ring(vp);
	q->wrap = false;
	if (q->packed) {
		/* Every buffer taken was completed: the used position is the avail one. */
		q->last_avail = q->used_idx = vr->base & ~VRING_PACKED_WRAP;
		q->wrap = vr->base & VRING_PACKED_WRAP;
	} else {
		/* A frontend that outlived its backend (virtio-user server=1, a QEMU whose
		 * backend restarted) may give base 0 for rings that moved on. The used index in
		 * its memory says what was completed: start from there (entries taken but not
		 * completed by the old backend are taken again). */
		uint16_t u = __atomic_load_n(&q->used->idx, __ATOMIC_ACQUIRE);

		if (u != vr->base) {
			TIDE_LOG_INFO_(vp->port->name, "vring %u: base %u but used index %u: resuming at %u",
				       v, vr->base, u, u);
			q->last_avail = q->used_idx = u;
		}
	}
	q->mrg = vp->features & VHOST_BIT(VIRTIO_NET_F_MRG_RXBUF);
	q->hdr_len = (vp->features & (VHOST_BIT(VIRTIO_NET_F_MRG_RXBUF) |
				      VHOST_BIT(VIRTIO_F_VERSION_1)))
			     ? 12
			     : 10;
	q->event_idx = vp->features & VHOST_BIT(VIRTIO_RING_F_EVENT_IDX);
	q->indirect = vp->features & VHOST_BIT(VIRTIO_RING_F_INDIRECT_DESC);
	q->used_per_pkt = vp->used_per_pkt;
	q->in_order = vhost_in_order(vp); /* guest Tx vrings complete by count (Rx bursts) */
	q->callfd = vr->callfd;
	q->mem.n = vp->nmap;
	q->mem.last = 0;
	for (unsigned i = 0; i < vp->nmap; i++) {
		q->mem.r[i].gpa = vp->map[i].gpa;
		q->mem.r[i].size = vp->map[i].size;
		q->mem.r[i].host = vp->map[i].host;
	}
	/* We poll: ask the driver not to kick (with event index, avail_event is left alone,
	 * so it kicks at most once per index wrap; packed: the device event area). */
	if (q->packed)
		__atomic_store_n(&((struct vring_packed_event *)(void *)q->used)->flags,
				 VRING_PACKED_EVENT_F_DISABLE, __ATOMIC_RELAXED);
	else if (!q->event_idx)
		__atomic_store_n(&q->used->flags, VRING_USED_F_NO_NOTIFY, __ATOMIC_RELAXED);
	fs->why = NULL;
	vr->running = true;
	TIDE_LOG_DEBUG_(vp->port->name, "vring %u start: last_avail %u avail %u used %u", v,
			q->last_avail, q->avail->idx, q->used->idx);
	/* Release: pairs with the acquire load of live in vhost_enter(); the burst takes the
	 * layout from the value. */
	__atomic_store_n(live, q->packed ? VHOST_LIVE_PACKED : VHOST_LIVE_SPLIT, __ATOMIC_RELEASE);
	return 0;
}

static int vring_start_all(struct vhost_port *vp, const bool *was)
{
	for (unsigned v = 0; v < 2 * vp->queues; v++)
		if ((was == NULL || was[v]) && vring_try_start(vp, v) < 0)
			return -1;
	return 0;
}

/* ---- tear down ---- */

static void unmap_all(struct vhost_port *vp)
{
	for (unsigned i = 0; i < vp->nmap; i++)
		munmap(vp->map[i].addr, vp->map[i].len);
	memset(vp->map, 0, sizeof(vp->map));
	vp->nmap = 0;
}

static void vrings_reset(struct vhost_port *vp)
{
	vring_stop_all(vp, NULL);
	for (unsigned v = 0; v < 2 * VHOST_MAX_QP; v++) {
		struct vhost_vring *vr = &vp->vr[v];

		close_fd(&vr->kickfd);
		close_fd(&vr->callfd);
		memset(vr, 0, sizeof(*vr));
		vr->kickfd = vr->callfd = -1;
	}
}

static void rxmsg_reset(struct vhost_rxmsg *m)
{
	for (unsigned i = 0; i < m->nfds; i++)
		close_fd(&m->fds[i]);
	m->nfds = 0;
	m->have = 0;
	m->too_many_fds = false;
}

static void disconnect(struct vhost_port *vp, int kind, const char *fmt, ...)
{
	va_list ap;

	if (vp->cfd < 0)
		return;
	vrings_reset(vp);
	unmap_all(vp);
	rxmsg_reset(&vp->rx);
	/* Shut down first: the frontend sees the end at once, and so does the control thread
	 * if it waits on this socket (its poll() holds the socket open past our close). */
	shutdown(vp->cfd, SHUT_RDWR);
	close_fd(&vp->cfd);
	va_start(ap, fmt);
	vsnprintf(vp->reason, sizeof(vp->reason), fmt, ap);
	va_end(ap);
	vp->features = vp->proto = 0;
	vp->owner = false;
	__atomic_fetch_add(&vp->disconnects, 1, __ATOMIC_RELAXED);
	if (kind != KIND_NORMAL) {
		__atomic_fetch_add(&vp->violations, 1, __ATOMIC_RELAXED);
		if (kind == KIND_CTL)
			__atomic_fetch_add(&vp->ctl_errors, 1, __ATOMIC_RELAXED);
		TIDE_LOG_WARN_(vp->port->name, "frontend disconnected: %s", vp->reason);
	} else {
		TIDE_LOG_INFO_(vp->port->name, "disconnected: %s", vp->reason);
	}
	update_link(vp);
	vp->retry_at = now_ns() + VHOST_RETRY_NS;
}

/* ---- messages ---- */

static const char *req_name(uint32_t r)
{
	static const char *const names[] = {
		[VHOST_USER_GET_FEATURES] = "GET_FEATURES",
		[VHOST_USER_SET_FEATURES] = "SET_FEATURES",
		[VHOST_USER_SET_OWNER] = "SET_OWNER",
		[VHOST_USER_RESET_OWNER] = "RESET_OWNER",
		[VHOST_USER_SET_MEM_TABLE] = "SET_MEM_TABLE",
		[VHOST_USER_SET_LOG_BASE] = "SET_LOG_BASE",
		[VHOST_USER_SET_LOG_FD] = "SET_LOG_FD",
		[VHOST_USER_SET_VRING_NUM] = "SET_VRING_NUM",
		[VHOST_USER_SET_VRING_ADDR] = "SET_VRING_ADDR",
		[VHOST_USER_SET_VRING_BASE] = "SET_VRING_BASE",
		[VHOST_USER_GET_VRING_BASE] = "GET_VRING_BASE",
		[VHOST_USER_SET_VRING_KICK] = "SET_VRING_KICK",
		[VHOST_USER_SET_VRING_CALL] = "SET_VRING_CALL",
		[VHOST_USER_SET_VRING_ERR] = "SET_VRING_ERR",
		[VHOST_USER_GET_PROTOCOL_FEATURES] = "GET_PROTOCOL_FEATURES",
		[VHOST_USER_SET_PROTOCOL_FEATURES] = "SET_PROTOCOL_FEATURES",
		[VHOST_USER_GET_QUEUE_NUM] = "GET_QUEUE_NUM",
		[VHOST_USER_SET_VRING_ENABLE] = "SET_VRING_ENABLE",
	};

	return r < sizeof(names) / sizeof(names[0]) && names[r] ? names[r] : "unknown request";
}

static int send_reply(struct vhost_port *vp, uint32_t req, const void *payload, uint32_t size)
{
	uint8_t buf[sizeof(struct vhost_user_hdr) + 16];
	struct vhost_user_hdr h = {.request = req, .flags = VHOST_USER_VERSION | VHOST_USER_REPLY,
				   .size = size};

	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), payload, size);
	if (send(vp->cfd, buf, sizeof(h) + size, MSG_DONTWAIT | MSG_NOSIGNAL) !=
	    (ssize_t)(sizeof(h) + size)) {
		disconnect(vp, KIND_NORMAL, "cannot reply to %s: %s", req_name(req),
			   strerror(errno));
		return -1;
	}
	return 0;
}

static int reply_u64(struct vhost_port *vp, uint32_t req, uint64_t v)
{
	return send_reply(vp, req, &v, sizeof(v));
}

/* Take ownership of the message's fd @i (the cleanup closes the ones left). */
static int take_fd(struct vhost_rxmsg *m, unsigned i)
{
	int fd = m->fds[i];

	m->fds[i] = -1;
	return fd;
}

/*
 * Is the memory file @fd sealed against shrinking (after we tried to seal it)? A frontend
 * that shrinks a file under our mapping turns our next copy into SIGBUS, which takes the
 * whole process down with every other port on it. QEMU's memfd backend seals its memory
 * (seal=on, its default) and a memfd made with MFD_ALLOW_SEALING takes our seal; hugetlbfs
 * and tmpfs files and memfds without MFD_ALLOW_SEALING (DPDK's EAL memory) cannot be
 * sealed and are mapped only when the port trusts them (unsealed_mem=yes).
 */
static bool sealed_shrink(int fd)
{
	int seals;

	(void)fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK); /* EPERM if sealed already: checked below */
	seals = fcntl(fd, F_GET_SEALS);
	return seals >= 0 && (seals & F_SEAL_SHRINK);
}

/*
 * A region of the memory table: mapped from its fd. The file must be at least as long as
 * the range the frontend announced, and sealed against shrinking unless @unsealed_ok (see
 * sealed_shrink()).
 */
static const char *map_region(const struct vhost_user_region *r, int fd, bool unsealed_ok,
			      struct vhost_map *out)
{
	struct stat st;
	uint64_t end, align, len;
	void *a;

	if (r->size == 0)
		return "memory region of size 0";
	if (r->gpa + r->size < r->gpa || r->uva + r->size < r->uva ||
	    r->mmap_off + r->size < r->mmap_off)
		return "memory region wraps around the address space";
	end = r->mmap_off + r->size;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return "memory region fd is not a file";
	if ((uint64_t)st.st_size < end)
		return "memory region beyond the end of its file";
	align = st.st_blksize > 0 && tide_is_pow2((uint64_t)st.st_blksize) ? (uint64_t)st.st_blksize
									    : 4096;
	len = (end + align - 1) & ~(align - 1);
	if (len < end || len > SIZE_MAX)
		return "memory region too large";
	if (!sealed_shrink(fd) && !unsealed_ok)
		return "memory file cannot be sealed against shrinking (unsealed_mem=yes trusts it)";
	a = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
	if (a == MAP_FAILED)
		return "cannot map memory region";
	out->addr = a;
	out->len = (size_t)len;
	out->gpa = r->gpa;
	out->size = r->size;
	out->uva = r->uva;
	out->host = (uint8_t *)a + r->mmap_off;
	return NULL;
}

static bool overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

static int set_mem_table(struct vhost_port *vp, const uint8_t *pl, uint32_t size)
{
	struct vhost_user_mem mem;
	struct vhost_map nm[VHOST_USER_MAX_REGIONS];
	bool was[2 * VHOST_MAX_QP];
	const char *why = NULL;
	unsigned n, i;

	memset(&mem, 0, sizeof(mem));
	if (size < 8) {
		disconnect(vp, KIND_CTL, "SET_MEM_TABLE: payload of %u bytes", size);
		return -1;
	}
	memcpy(&mem, pl, size);
	n = mem.nregions;
	if (n == 0 || n > VHOST_USER_MAX_REGIONS) {
		disconnect(vp, KIND_CTL, "SET_MEM_TABLE: %u regions (1..%u)", n,
			   VHOST_USER_MAX_REGIONS);
		return -1;
	}
	if (size != 8 + n * sizeof(struct vhost_user_region)) {
		disconnect(vp, KIND_CTL, "SET_MEM_TABLE: payload of %u bytes for %u regions", size,
			   n);
		return -1;
	}
	if (vp->rx.nfds != n) {
		disconnect(vp, KIND_CTL, "SET_MEM_TABLE: %u file descriptors for %u regions",
			   vp->rx.nfds, n);
		return -1;
	}
	for (i = 0; i < n; i++)
		for (unsigned j = 0; j < i; j++) {
			const struct vhost_user_region *a = &mem.r[i], *b = &mem.r[j];

			if (overlap(a->gpa, a->size, b->gpa, b->size) ||
			    overlap(a->uva, a->size, b->uva, b->size)) {
				disconnect(vp, KIND_CTL, "SET_MEM_TABLE: regions %u and %u overlap", j,
					   i);
				return -1;
			}
		}
	for (i = 0; i < n && why == NULL; i++)
		why = map_region(&mem.r[i], vp->rx.fds[i], vp->unsealed_mem, &nm[i]);
	if (why != NULL) {
		for (unsigned j = 0; j + 1 < i; j++)
			munmap(nm[j].addr, nm[j].len);
		disconnect(vp, KIND_CTL, "SET_MEM_TABLE: region %u: %s", i - 1, why);
		return -1;
	}
	/* The mappings keep the memory; the fds are closed by the message cleanup. */
	vring_stop_all(vp, was);
	unmap_all(vp);
	memcpy(vp->map, nm, n * sizeof(nm[0]));
	vp->nmap = n;
	return vring_start_all(vp, was);
}

/* The vring index of a message, checked against what we offered. */
static int vring_index(struct vhost_port *vp, uint32_t req, uint64_t idx, unsigned *out)
{
	if (idx >= 2ull * vp->queues) {
		disconnect(vp, KIND_CTL, "%s: vring %llu beyond the %u offered", req_name(req),
			   (unsigned long long)idx, 2 * vp->queues);
		return -1;
	}
	*out = (unsigned)idx;
	return 0;
}

/*
 * Why the call fd @fd cannot be used, or NULL. Bursts write it to notify the guest, and a
 * burst must never block: the kernel's own vhost signals an eventfd without ever waiting
 * (eventfd_signal()), and so must we. Only an eventfd is taken (the protocol's call fd; a
 * pipe may block, or raise SIGPIPE once its reader is gone, and a file notifies nobody),
 * and it is made non-blocking: a write that would overflow the counter then fails with
 * EAGAIN (counted: tide_vhost_info.call_errors), where the counter, full, is readable and
 * has woken the guest already. O_NONBLOCK belongs to the file description, which the
 * frontend shares: its reads of the call fd become non-blocking too. QEMU's event notifiers
 * and DPDK's virtio-user make their eventfds non-blocking themselves, and the kernel's
 * irqfd does not read with read(); a frontend that waits in a blocking read() on its call
 * fd would see EAGAIN instead.
 */
static const char *call_fd_check(int fd)
{
	char link[64], what[32];
	ssize_t n;
	int fl;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, what, sizeof(what) - 1);
	if (n < 0)
		return "cannot tell whether the call fd is an eventfd (no /proc)";
	what[n] = '\0';
	if (strcmp(what, "anon_inode:[eventfd]") != 0)
		return "call fd is not an eventfd";
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0))
		return "cannot make the call eventfd non-blocking";
	return NULL;
}

/* SET_VRING_KICK / CALL / ERR: an index and an fd, or the no-fd flag. */
static int vring_fd_msg(struct vhost_port *vp, uint32_t req, uint64_t u)
{
	bool nofd = u & VHOST_USER_VRING_NOFD;
	struct vhost_vring *vr;
	unsigned v;
	int fd;

	if (vring_index(vp, req, u & VHOST_USER_VRING_IDX_MASK, &v) < 0)
		return -1;
	if (u & ~(VHOST_USER_VRING_IDX_MASK | VHOST_USER_VRING_NOFD)) {
		disconnect(vp, KIND_CTL, "%s: unknown bits in 0x%llx", req_name(req),
			   (unsigned long long)u);
		return -1;
	}
	if (vp->rx.nfds != (nofd ? 0u : 1u)) {
		disconnect(vp, KIND_CTL, "%s: %u file descriptors, expected %u", req_name(req),
			   vp->rx.nfds, nofd ? 0 : 1);
		return -1;
	}
	fd = nofd ? -1 : take_fd(&vp->rx, 0);
	vr = &vp->vr[v];
	switch (req) {
	case VHOST_USER_SET_VRING_KICK:
		close_fd(&vr->kickfd);
		vr->kickfd = fd; /* we poll: kept only so that the frontend's writes succeed */
		vr->kicked = true;
		return vring_try_start(vp, v);
	case VHOST_USER_SET_VRING_CALL: {
		bool was = vr->running;
		const char *why = fd >= 0 ? call_fd_check(fd) : NULL;

		if (why != NULL) {
			close(fd);
			disconnect(vp, KIND_CTL, "SET_VRING_CALL: vring %u: %s", v, why);
			return -1;
		}
		vring_stop(vp, v);
		close_fd(&vr->callfd);
		vr->callfd = fd;
		return was ? vring_try_start(vp, v) : 0;
	}
	default: /* SET_VRING_ERR: we never report vring errors */
		close_fd(&fd);
		return 0;
	}
}

/* Payload sizes: exact for each request (requests without payload may carry 8 bytes). */
static bool size_ok(uint32_t req, uint32_t size)
{
	switch (req) {
	case VHOST_USER_GET_FEATURES:
	case VHOST_USER_GET_PROTOCOL_FEATURES:
	case VHOST_USER_GET_QUEUE_NUM:
	case VHOST_USER_SET_OWNER:
	case VHOST_USER_RESET_OWNER:
		return size == 0 || size == 8;
	case VHOST_USER_SET_FEATURES:
	case VHOST_USER_SET_PROTOCOL_FEATURES:
	case VHOST_USER_SET_VRING_KICK:
	case VHOST_USER_SET_VRING_CALL:
	case VHOST_USER_SET_VRING_ERR:
	case VHOST_USER_SET_VRING_NUM:
	case VHOST_USER_SET_VRING_BASE:
	case VHOST_USER_GET_VRING_BASE:
	case VHOST_USER_SET_VRING_ENABLE:
		return size == 8;
	case VHOST_USER_SET_VRING_ADDR:
		return size == sizeof(struct vhost_user_addr);
	case VHOST_USER_SET_MEM_TABLE:
		return true; /* checked against its region count */
	default:
		return false;
	}
}

/* Handle one complete message. Returns -1 when the frontend was dropped. */
static int handle(struct vhost_port *vp)
{
	struct vhost_user_hdr h;
	const uint8_t *pl = vp->rx.buf + sizeof(h);
	struct vhost_user_state st = {0};
	struct vhost_user_addr ad;
	uint64_t u = 0;
	unsigned v = 0;
	bool was[2 * VHOST_MAX_QP];
	int rc = 0;

	memcpy(&h, vp->rx.buf, sizeof(h));
	if ((h.flags & VHOST_USER_VERSION_MASK) != VHOST_USER_VERSION) {
		disconnect(vp, KIND_CTL, "%s: protocol version %u (expected 1)", req_name(h.request),
			   h.flags & VHOST_USER_VERSION_MASK);
		return -1;
	}
	if (!size_ok(h.request, h.size)) {
		if (strcmp(req_name(h.request), "unknown request") == 0)
			disconnect(vp, KIND_CTL, "request %u not supported", h.request);
		else
			disconnect(vp, KIND_CTL, "%s: payload of %u bytes", req_name(h.request),
				   h.size);
		return -1;
	}
	if (vp->rx.too_many_fds) {
		disconnect(vp, KIND_CTL, "%s: too many file descriptors", req_name(h.request));
		return -1;
	}
	if (h.request != VHOST_USER_SET_MEM_TABLE && h.request != VHOST_USER_SET_VRING_KICK &&
	    h.request != VHOST_USER_SET_VRING_CALL && h.request != VHOST_USER_SET_VRING_ERR &&
	    vp->rx.nfds != 0) {
		disconnect(vp, KIND_CTL, "%s: %u unexpected file descriptors", req_name(h.request),
			   vp->rx.nfds);
		return -1;
	}
	if (h.size == 8)
		memcpy(&u, pl, 8);
	memcpy(&st, &u, sizeof(st));
	TIDE_LOG_DEBUG_(vp->port->name, "%s size %u 0x%llx", req_name(h.request), h.size,
			(unsigned long long)u);

	switch (h.request) {
	case VHOST_USER_GET_FEATURES:
		return reply_u64(vp, h.request, vp->offered);
	case VHOST_USER_GET_PROTOCOL_FEATURES:
		return reply_u64(vp, h.request, vp->proto_offered);
	case VHOST_USER_GET_QUEUE_NUM:
		return reply_u64(vp, h.request, vp->queues);
	case VHOST_USER_SET_FEATURES:
		if (u & ~vp->offered) {
			disconnect(vp, KIND_CTL, "SET_FEATURES: 0x%llx not offered",
				   (unsigned long long)(u & ~vp->offered));
			return -1;
		}
		vring_stop_all(vp, was);
		vp->features = u;
		rc = vring_start_all(vp, was);
		break;
	case VHOST_USER_SET_PROTOCOL_FEATURES:
		if (u & ~vp->proto_offered) {
			disconnect(vp, KIND_CTL, "SET_PROTOCOL_FEATURES: 0x%llx not offered",
				   (unsigned long long)(u & ~vp->proto_offered));
			return -1;
		}
		vp->proto = u;
		break;
	case VHOST_USER_SET_OWNER:
		vp->owner = true;
		break;
	case VHOST_USER_RESET_OWNER:
		vrings_reset(vp);
		vp->features = 0;
		vp->owner = false;
		break;
	case VHOST_USER_SET_MEM_TABLE:
		rc = set_mem_table(vp, pl, h.size);
		break;
	case VHOST_USER_SET_VRING_NUM:
		if (vring_index(vp, h.request, st.index, &v) < 0)
			return -1;
		/* Packed rings may have any size (virtio 1.1+); split ones a power of two (checked
		 * again at the vring start: the layout may change after this). */
		if (st.num == 0 || st.num > VHOST_MAX_VRING ||
		    (!packed_ring(vp) && !tide_is_pow2(st.num))) {
			disconnect(vp, KIND_CTL, "SET_VRING_NUM: vring %u size %u (1..%u, a power of two for a split ring)",
				   v, st.num, VHOST_MAX_VRING);
			return -1;
		}
		vring_stop(vp, v);
		vp->vr[v].num = st.num;
		vp->vr[v].num_set = true;
		rc = vring_try_start(vp, v);
		break;
	case VHOST_USER_SET_VRING_BASE:
		if (vring_index(vp, h.request, st.index, &v) < 0)
			return -1;
		/* Packed: bits 16-31 may carry the used position, which is ours the same as
		 * the avail one (bits 0-15; checked at the vring start). */
		if (packed_ring(vp))
			st.num &= UINT16_MAX;
		if (st.num > UINT16_MAX) {
			disconnect(vp, KIND_CTL, "SET_VRING_BASE: vring %u base %u above 65535", v,
				   st.num);
			return -1;
		}
		vring_stop(vp, v);
		vp->vr[v].base = (uint16_t)st.num;
		rc = vring_try_start(vp, v);
		break;
	case VHOST_USER_GET_VRING_BASE:
		if (vring_index(vp, h.request, st.index, &v) < 0)
			return -1;
		vring_stop(vp, v);
		/* The ring is stopped until the next kick. */
		vp->vr[v].kicked = false;
		st.num = vp->vr[v].base;
		if (packed_ring(vp)) /* the used position and wrap in bits 16-31: the same */
			st.num |= st.num << 16;
		update_link(vp);
		return send_reply(vp, h.request, &st, sizeof(st));
	case VHOST_USER_SET_VRING_ADDR:
		memcpy(&ad, pl, sizeof(ad));
		if (vring_index(vp, h.request, ad.index, &v) < 0)
			return -1;
		vring_stop(vp, v);
		vp->vr[v].desc = ad.desc;
		vp->vr[v].avail = ad.avail;
		vp->vr[v].used = ad.used;
		vp->vr[v].addr_set = true;
		rc = vring_try_start(vp, v);
		break;
	case VHOST_USER_SET_VRING_KICK:
	case VHOST_USER_SET_VRING_CALL:
	case VHOST_USER_SET_VRING_ERR:
		rc = vring_fd_msg(vp, h.request, u);
		break;
	case VHOST_USER_SET_VRING_ENABLE:
		if (vring_index(vp, h.request, st.index, &v) < 0)
			return -1;
		if (st.num > 1) {
			disconnect(vp, KIND_CTL, "SET_VRING_ENABLE: vring %u state %u (0 or 1)", v,
				   st.num);
			return -1;
		}
		vp->vr[v].enabled = st.num;
		if (st.num)
			rc = vring_try_start(vp, v);
		else
			vring_stop(vp, v);
		break;
	default:
		break; /* size_ok() refused every other request */
	}
	if (rc < 0)
		return -1;
	update_link(vp);
	/* REPLY_ACK: the frontend waits for the outcome of a message without a reply. */
	if ((vp->proto & VHOST_BIT(VHOST_USER_PROTOCOL_F_REPLY_ACK)) &&
	    (h.flags & VHOST_USER_NEED_REPLY))
		return reply_u64(vp, h.request, 0);
	return 0;
}

/*
 * Receive (the rest of) one message. Returns 1 when a whole message is in vp->rx, 0 when
 * nothing more is waiting, -1 when the connection went down.
 */
static int ctl_recv(struct vhost_port *vp)
{
	struct vhost_rxmsg *m = &vp->rx;
	const size_t hl = sizeof(struct vhost_user_hdr);

	for (;;) {
		char cbuf[CMSG_SPACE(sizeof(int) * VHOST_USER_MAX_FDS)];
		struct iovec iov;
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
				    .msg_controllen = sizeof(cbuf)};
		size_t want;
		ssize_t n;

		if (m->have < hl) {
			want = hl - m->have;
		} else {
			struct vhost_user_hdr h;

			memcpy(&h, m->buf, hl);
			if (h.size > VHOST_USER_MAX_PAYLOAD) {
				disconnect(vp, KIND_CTL, "%s: payload of %u bytes (at most %zu)",
					   req_name(h.request), h.size, VHOST_USER_MAX_PAYLOAD);
				return -1;
			}
			want = hl + h.size - m->have;
			if (want == 0)
				return 1;
		}
		iov.iov_base = m->buf + m->have;
		iov.iov_len = want;
		n = recvmsg(vp->cfd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return 0;
		if (n <= 0) {
			disconnect(vp, KIND_NORMAL, "%s",
				   n == 0 ? (m->have ? "frontend closed the connection mid-message"
						     : "frontend closed the connection")
					  : strerror(errno));
			return -1;
		}
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
			if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
				continue;
			for (size_t i = 0; CMSG_LEN((i + 1) * sizeof(int)) <= c->cmsg_len; i++) {
				int fd;

				memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
				if (m->nfds < VHOST_USER_MAX_FDS) {
					m->fds[m->nfds++] = fd;
				} else {
					close(fd);
					m->too_many_fds = true;
				}
			}
		}
		if (mh.msg_flags & MSG_CTRUNC)
			m->too_many_fds = true;
		m->have += (size_t)n;
	}
}

static void server_accept(struct vhost_port *vp)
{
	int fd = accept4(vp->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0)
		return;
	if (vp->cfd >= 0) {
		/* One frontend at a time. */
		TIDE_LOG_WARN_(vp->port->name, "refused a second frontend on %s", vp->path);
		close(fd);
		return;
	}
	vp->cfd = fd;
	vp->connects++;
	TIDE_LOG_INFO_(vp->port->name, "frontend connected on %s", vp->path);
}

static void client_try(struct vhost_port *vp)
{
	struct sockaddr_un sa;
	socklen_t len;
	uint64_t now = now_ns();
	int fd;

	if (now < vp->retry_at)
		return;
	vp->retry_at = now + VHOST_RETRY_NS;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	sock_addr(vp, &sa, &len);
	if (connect(fd, (struct sockaddr *)&sa, len) < 0) {
		close(fd);
		return;
	}
	vp->cfd = fd;
	vp->connects++;
	TIDE_LOG_INFO_(vp->port->name, "connected to the frontend on %s", vp->path);
}

/* ---- the control thread ---- */

/* Wake the control thread: its fd set or timeout changed, or the port stops. */
static void ctl_wake(struct vhost_port *vp)
{
	vhost_wake(vp->wakefd);
}

/* A worker found a violation in guest memory. Acquire: pairs with vhost_fault(). */
static void check_faults(struct vhost_port *vp)
{
	for (unsigned v = 0; v < 2 * vp->queues && vp->cfd >= 0; v++) {
		uint32_t *live, *busy;
		struct vhost_fault_slot *fs;
		const char *f;

		if (!vp->vr[v].running || vring_q(vp, v, &live, &busy, &fs) == NULL)
			continue;
		f = __atomic_load_n(&fs->why, __ATOMIC_ACQUIRE);
		if (f != NULL)
			disconnect(vp, KIND_DATA, "vring %u: %s", v, f);
	}
}

/* Every message that is complete. */
static void ctl_messages(struct vhost_port *vp)
{
	while (vp->cfd >= 0 && ctl_recv(vp) > 0) {
		if (handle(vp) < 0)
			break;
		rxmsg_reset(&vp->rx);
	}
}

/* Milliseconds until the next connection attempt (client role, not connected). */
static int retry_timeout(const struct vhost_port *vp)
{
	uint64_t now = now_ns();

	if (vp->retry_at <= now)
		return 0;
	return (int)((vp->retry_at - now + 999999) / 1000000);
}

/*
 * The control thread. After poll() it does only what woke it: the eventfd (a worker's
 * fault; port stop; a connection closed by tide_port_poll_ctl()) -> the fault check; the
 * connection readable, hung up or in error -> its messages (end of file or an error
 * disconnects with the reason); the listening socket readable -> accept. In client role
 * while not connected, a connection attempt when the retry time has come (client_try()
 * checks it; the poll timeout is set to it).
 */
static void *ctl_main(void *arg)
{
	struct vhost_port *vp = arg;

	pthread_mutex_lock(&vp->lock);
	while (!vp->quit) {
		struct pollfd pf[3];
		nfds_t n = 0, li = 0, ci = 0;
		int timeout = -1, rc;
		bool woke;

		pf[n++] = (struct pollfd){.fd = vp->wakefd, .events = POLLIN};
		if (vp->lfd >= 0) {
			li = n;
			pf[n++] = (struct pollfd){.fd = vp->lfd, .events = POLLIN};
		}
		if (vp->cfd >= 0) {
			ci = n;
			pf[n++] = (struct pollfd){.fd = vp->cfd, .events = POLLIN};
		} else if (!vp->server) {
			timeout = retry_timeout(vp);
		}
		/* The fds stay open while we wait: only this thread, tide_port_poll_ctl() (which
		 * wakes us when it changed them) and port stop (which joins us) close them. */
		pthread_mutex_unlock(&vp->lock);
		rc = poll(pf, n, timeout);
		if (rc < 0 && errno != EINTR) { /* (a failed poll() leaves every revents 0) */
			struct timespec ts = {.tv_nsec = 10 * 1000000};

			TIDE_LOG_WARN_(vp->port->name, "control thread: poll: %s", strerror(errno));
			nanosleep(&ts, NULL); /* not a busy loop while poll() keeps failing */
		}
		woke = (pf[0].revents & POLLIN) != 0;
		if (woke) {
			uint64_t c;

			if (read(vp->wakefd, &c, sizeof(c)) < 0) {
				/* nothing to do: the eventfd is non-blocking and only we read it */
			}
		}
		pthread_mutex_lock(&vp->lock);
		if (vp->quit)
			break;
		if (woke)
			check_faults(vp);
		/* The connection first: a frontend that left makes room for the next one. The
		 * fd is the one polled, or closed by tide_port_poll_ctl() (cfd -1). */
		if (ci != 0 && pf[ci].revents != 0)
			ctl_messages(vp);
		if (li != 0 && (pf[li].revents & POLLIN))
			server_accept(vp);
		else if (!vp->server && vp->cfd < 0)
			client_try(vp);
	}
	pthread_mutex_unlock(&vp->lock);
	return NULL;
}

/* ---- entry points ---- */

void vhost_lock(struct vhost_port *vp)
{
	unsigned i = tide_thread_index_;
	bool online = i < TIDE_MAX_THREADS &&
		      __atomic_load_n(&tide_qs_.thread[i].seen, __ATOMIC_RELAXED) != 0;

	if (pthread_mutex_trylock(&vp->lock) == 0)
		return;
	if (online)
		tide_thread_offline();
	pthread_mutex_lock(&vp->lock);
	if (online)
		tide_qs_report_(i); /* back online, at a quiescent point */
}

/*
 * The application's call: what the frontend has sent so far is handled when it returns.
 * Accepting and connecting are the control thread's (it polls for them); a connection
 * this call closed changes the thread's fd set, so it is woken to take the new one.
 */
int vhost_ctl_poll(struct vhost_port *vp)
{
	int cfd;

	if (!vp->started)
		return 0;
	vhost_lock(vp);
	cfd = vp->cfd;
	check_faults(vp);
	ctl_messages(vp);
	if (vp->cfd != cfd)
		ctl_wake(vp);
	pthread_mutex_unlock(&vp->lock);
	return 0;
}

static void queues_wakefd(struct vhost_port *vp, int fd)
{
	struct tide_port *p = vp->port;

	for (unsigned i = 0; i < p->nb_rxq; i++)
		((struct vhost_rxq *)p->rxq[i])->fs.wakefd = fd;
	for (unsigned i = 0; i < p->nb_txq; i++)
		((struct vhost_txq *)p->txq[i])->fs.wakefd = fd;
}

static int thread_start(struct vhost_port *vp)
{
	sigset_t all, old;
	char name[16];
	int rc;

	/* Signals are the application's threads' business. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&vp->thread, NULL, ctl_main, vp);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		TIDE_LOG_ERR_(vp->port->name, "cannot start the control thread: %s", strerror(rc));
		return -rc;
	}
	snprintf(name, sizeof(name), "%.11s-ctl", vp->port->name);
	pthread_setname_np(vp->thread, name);
	vp->thread_on = true;
	return 0;
}

int vhost_ctl_start(struct vhost_port *vp)
{
	int fd, rc;

	vp->cfd = -1;
	vp->retry_at = 0;
	vp->quit = false;
	for (unsigned v = 0; v < 2 * VHOST_MAX_QP; v++)
		vp->vr[v].kickfd = vp->vr[v].callfd = -1;
	vp->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (vp->wakefd < 0) {
		rc = -errno;
		TIDE_LOG_ERR_(vp->port->name, "cannot create the control thread's eventfd: %s",
			      strerror(errno));
		return rc;
	}
	queues_wakefd(vp, vp->wakefd);
	if (vp->server) {
		/* A socket file left by a process that died is taken over (unix_sock.h). */
		fd = unix_sock_listen(vp->path, false, SOCK_STREAM, 4);
		if (fd < 0) {
			TIDE_LOG_ERR_(vp->port->name, "socket=%s: cannot listen: %s", vp->path,
				      strerror(-fd));
			rc = fd;
			goto fail;
		}
		vp->lfd = fd;
	}
	vp->started = true;
	rc = thread_start(vp);
	if (rc == 0)
		return 0;
	vp->started = false;
	if (vp->lfd >= 0) {
		close_fd(&vp->lfd);
		unlink(vp->path);
	}
fail:
	queues_wakefd(vp, -1);
	close_fd(&vp->wakefd);
	return rc;
}

void vhost_ctl_stop(struct vhost_port *vp)
{
	if (vp->thread_on) {
		vhost_lock(vp);
		vp->quit = true;
		pthread_mutex_unlock(&vp->lock);
		ctl_wake(vp); /* port stop: the thread sees quit */
		pthread_join(vp->thread, NULL);
		vp->thread_on = false;
	}
	vhost_lock(vp);
	disconnect(vp, KIND_NORMAL, "port stopped");
	if (vp->lfd >= 0) {
		close(vp->lfd);
		vp->lfd = -1;
		unlink(vp->path);
	}
	/* Every vring is stopped: no burst writes the wake fd any more. */
	queues_wakefd(vp, -1);
	close_fd(&vp->wakefd);
	vp->started = false;
	pthread_mutex_unlock(&vp->lock);
}
