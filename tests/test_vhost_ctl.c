/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The vhost port's control thread (drivers/vhost/vhost_ctl.c), with no tide_port_poll_ctl()
 * call anywhere in this test: everything below is done by that thread alone.
 *
 *  - Idle, it sleeps: while nothing happens (no frontend; a frontend connected but silent)
 *    its context switch count (/proc/self/task/TID/status) does not move at all over a
 *    300 ms window. A thread that woke on a timer would show one switch per period.
 *  - It accepts a frontend and answers the handshake; it is woken by a worker's fault in
 *    guest memory (eventfd) and disconnects with the reason; it accepts the next frontend.
 *  - Client role: it retries on its timeout while nothing listens (wakes, but far from a
 *    busy loop), connects when a listener appears, answers a message long after that
 *    without connecting a second time, and reconnects after the listener's connection
 *    ends.
 *  - Port stop wakes it and joins it at once (an alarm fails the test if stop hangs).
 *  - The port's info says so: needs_poll_ctl is 0 for vhost (its thread serves it), 1 for
 *    memif (its control plane runs only in tide_port_poll_ctl()), 0 for a driver without a
 *    control plane (null). tide-fwd reads it (vhost_fwd_ctl checks what tide-fwd does).
 *  - Every vhost port has a MAC of its own, in this process and in another.
 *  - A vring the control thread starts while port stop runs brings no burst back: after
 *    stop, the queues run the no-ops (the thread is parked inside the vring start).
 * Pools come back full.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include <tide/lcore.h>
#include <tide/log.h>
#include <tide/port.h>
#include <tide/vhost.h>

#include "driver.h"
#include "vhost_front.h"
#include "proc_util.h"
#include "tmp_util.h"

#define WINDOW_MS 300

static struct tide_pool *pool;
static const uint64_t feats = VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VIRTIO_NET_F_MRG_RXBUF) |
			      VIRTIO_BIT(VHOST_USER_F_PROTOCOL_FEATURES);

static void pause_ms(unsigned ms)
{
	struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};

	nanosleep(&t, NULL);
}

/* Check @cond every millisecond (the control thread does the work). */
#define WAIT_FOR(cond, what) POLL_UNTIL(pause_ms(1), cond, what)

static struct tide_vhost_info info(struct tide_port *p)
{
	struct tide_vhost_info vi = {.sz = sizeof(vi)};

	FE_CHECK(tide_vhost_info_get(p, &vi) == 0);
	return vi;
}

/* The task id of port @p's control thread (named "<port>-ctl"), or -1. */
static int ctl_tid(struct tide_port *p)
{
	char want[16], path[300], comm[32];
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int tid = -1;

	FE_CHECK(d != NULL);
	snprintf(want, sizeof(want), "%.11s-ctl", tide_port_name(p));
	while (tid < 0 && (e = readdir(d)) != NULL) {
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (f == NULL)
			continue;
		if (fgets(comm, sizeof(comm), f) != NULL) {
			comm[strcspn(comm, "\n")] = '\0';
			if (strcmp(comm, want) == 0)
				tid = atoi(e->d_name);
		}
		fclose(f);
	}
	closedir(d);
	return tid;
}

/* Voluntary + involuntary context switches of thread @tid. */
static unsigned long long switches(int tid)
{
	char path[64], line[128];
	unsigned long long n = 0, v;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", tid);
	f = fopen(path, "r");
	FE_CHECK(f != NULL);
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "voluntary_ctxt_switches: %llu", &v) == 1 ||
		    sscanf(line, "nonvoluntary_ctxt_switches: %llu", &v) == 1)
			n += v;
	fclose(f);
	return n;
}

/* Nanoseconds thread @tid has spent on a CPU (/proc/self/task/TID/schedstat). */
static unsigned long long cpu_ns(int tid)
{
	char path[64];
	unsigned long long ns = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", tid);
	f = fopen(path, "r");
	FE_CHECK(f != NULL);
	FE_CHECK(fscanf(f, "%llu", &ns) == 1);
	fclose(f);
	return ns;
}

/* Thread @tid sleeps in poll()/ppoll() (/proc/self/task/TID/syscall: the call it is in). */
static bool in_poll(int tid)
{
	char path[64], buf[64];
	long nr = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	f = fopen(path, "r");
	FE_CHECK(f != NULL);
	if (fgets(buf, sizeof(buf), f) != NULL && sscanf(buf, "%ld", &nr) != 1)
		nr = -1; /* "running" */
	fclose(f);
#ifdef SYS_poll
	if (nr == SYS_poll)
		return true;
#endif
	return nr == SYS_ppoll;
}

/* The thread is asleep; then nothing happens for WINDOW_MS: it must not wake once. */
static void idle_window(int tid, const char *what)
{
	unsigned long long c0, c1;

	WAIT_FOR(in_poll(tid), "the control thread to sleep in poll()");
	c0 = switches(tid);
	pause_ms(WINDOW_MS); /* the window measured, not a wait for anything */
	c1 = switches(tid);
	printf("%s: the control thread woke %llu times in %u ms\n", what, c1 - c0, WINDOW_MS);
	if (c1 != c0) {
		fprintf(stderr, "FAIL: %s: the idle control thread woke %llu times in %u ms\n",
			what, c1 - c0, WINDOW_MS);
		exit(1);
	}
}

static void no_poll(void)
{
	/* tide_port_poll_ctl() is never called: the control thread answers. */
}

/* Handshake on a connected frontend; the control thread brings the link up. */
static void handshake(struct fe *f, struct tide_port *p)
{
	fe_handshake(f, FE_TO_VRINGS, feats, no_poll);
	WAIT_FOR(info(p).connected, "link up");
}

/* One frame guest Tx -> tide Rx, intact. */
static void one_frame(struct fe *f, struct tide_port *p, unsigned seq)
{
	uint8_t frame[60];
	struct tide_mbuf *m = NULL;
	double end = now_s() + 5;

	for (unsigned i = 0; i < sizeof(frame); i++)
		frame[i] = (uint8_t)(seq * 7 + i);
	fe_tx_post(f, seq % FE_NUM, frame, sizeof(frame), 12);
	while (tide_rx_burst(tide_port_rxq(p, 0), &m, 1) == 0) {
		FE_CHECK(now_s() < end);
		pause_ms(1);
	}
	FE_CHECK(m->pkt_len == sizeof(frame));
	FE_CHECK(memcmp(tide_mbuf_mtod(m, const uint8_t *), frame, sizeof(frame)) == 0);
	tide_mbuf_free(m);
}

static struct tide_port *open_port(const char *spec)
{
	struct tide_port *p;

	FE_CHECK(tide_port_open(spec, &p) == 0);
	FE_CHECK(tide_port_configure(p, 1, 1) == 0);
	FE_CHECK(tide_rxq_setup(p, 0, 256, pool, NULL) == 0);
	FE_CHECK(tide_txq_setup(p, 0, 256, NULL) == 0);
	FE_CHECK(tide_port_start(p) == 0);
	return p;
}

/* The socket files of the two cases: removed however the test ends (a failed check exits). */
static char paths[2][108];

static void remove_sockets(void)
{
	for (unsigned i = 0; i < 2; i++)
		if (paths[i][0] != '\0')
			unlink(paths[i]);
}

static void on_alarm(int sig)
{
	static const char msg[] = "FAIL: tide_port_stop() did not return (control thread not woken)\n";

	(void)sig;
	(void)!write(2, msg, sizeof(msg) - 1);
	remove_sockets(); /* unlink() is async-signal-safe; exit handlers do not run */
	_exit(1);
}

/* Stop and close @p: prompt (the thread is woken), and the thread is gone after it. */
static void stop_close(struct tide_port *p)
{
	signal(SIGALRM, on_alarm);
	alarm(10);
	tide_port_stop(p);
	alarm(0);
	FE_CHECK(ctl_tid(p) < 0);
	tide_port_close(p);
}

/* 1 when the link event fd @fd has an event (and clears it), 0 when not. */
static int link_event(int fd)
{
	uint64_t n;

	if (read(fd, &n, sizeof(n)) == (ssize_t)sizeof(n))
		return 1;
	FE_CHECK(errno == EAGAIN);
	return 0;
}

static uint64_t xstat(struct tide_port *p, const char *name)
{
	uint64_t v = ~0ull;

	FE_CHECK(tide_xstats_get_by_name(p, name, &v) == 0);
	return v;
}

static void server_case(const char *path)
{
	char spec[200];
	struct tide_port *p;
	struct tide_vhost_info vi = {.sz = sizeof(vi)};
	struct fe f;
	int tid, efd;

	snprintf(spec, sizeof(spec), "vhost:socket=%s,role=server", path);
	p = open_port(spec);
	tid = ctl_tid(p);
	if (tid < 0) {
		fprintf(stderr, "FAIL: port %s has no control thread\n", tide_port_name(p));
		exit(1);
	}
	idle_window(tid, "server, no frontend");
	efd = tide_port_link_event_fd(p);
	FE_CHECK(efd >= 0 && !link_event(efd));

	fe_init(&f);
	fe_connect(&f, path);
	handshake(&f, p);
	if (!link_event(efd)) {
		fprintf(stderr, "FAIL: the link came up without a link event\n");
		exit(1);
	}
	one_frame(&f, p, 1);
	idle_window(tid, "server, frontend connected and silent");

	/* A worker's fault: the avail index jumps; only the eventfd wakes the thread. */
	vi = info(p);
	__atomic_store_n(&f.vq[1].avail->idx, (uint16_t)(f.vq[1].avail_idx + FE_NUM + 1),
			 __ATOMIC_RELEASE);
	{
		struct tide_mbuf *m[4];

		FE_CHECK(tide_rx_burst(tide_port_rxq(p, 0), m, 4) == 0);
	}
	WAIT_FOR(info(p).disconnects > vi.disconnects, "the fault to disconnect the frontend");
	FE_CHECK(info(p).violations == vi.violations + 1);
	FE_CHECK(strstr(info(p).reason, "avail index") != NULL);
	printf("fault: disconnected: %s\n", info(p).reason);
	if (!link_event(efd)) {
		fprintf(stderr, "FAIL: the link went down without a link event\n");
		exit(1);
	}
	{
		char c;

		FE_CHECK(recv(f.sock, &c, 1, 0) == 0); /* the frontend sees the end */
	}
	fe_fini(&f);

	/* The next frontend, accepted by the thread; it leaves, the thread sees it. */
	fe_init(&f);
	fe_connect(&f, path);
	handshake(&f, p);
	one_frame(&f, p, 2);
	vi = info(p);
	fe_fini(&f);
	WAIT_FOR(info(p).disconnects > vi.disconnects, "the frontend's close to be seen");
	FE_CHECK(!info(p).connected);
	FE_CHECK(link_event(efd)); /* up with the second frontend, down when it left */
	FE_CHECK(xstat(p, "vhost_connects") == 2 && xstat(p, "vhost_disconnects") == 2 &&
		 xstat(p, "vhost_violations") == 1);
	idle_window(tid, "server, after a frontend left");
	stop_close(p);
	FE_CHECK(tide_pool_in_use(pool) == 0);
}

static int accept_within(int lfd, unsigned ms)
{
	struct pollfd pf = {.fd = lfd, .events = POLLIN};

	if (poll(&pf, 1, (int)ms) != 1)
		return -1;
	return accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
}

static void client_case(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	unsigned long long c0, c1, t0, t1;
	char spec[200];
	struct tide_port *p;
	struct tide_vhost_info vi = {.sz = sizeof(vi)};
	struct fe f;
	uint64_t fv;
	int tid, lfd;

	unlink(path);
	snprintf(spec, sizeof(spec), "vhost:socket=%s,role=client", path);
	p = open_port(spec);
	tid = ctl_tid(p);
	FE_CHECK(tid > 0);
	/* Nothing listens: the thread tries again on its timeout, and only then. */
	c0 = switches(tid);
	WAIT_FOR(switches(tid) >= c0 + 3, "the client's connection attempts");
	c0 = switches(tid);
	t0 = cpu_ns(tid);
	pause_ms(WINDOW_MS);
	c1 = switches(tid);
	t1 = cpu_ns(tid);
	printf("client, nothing listening: the control thread woke %llu times and ran %.3f ms in %u ms\n",
	       c1 - c0, (double)(t1 - t0) / 1e6, WINDOW_MS);
	/* One attempt per 50 ms costs microseconds; a loop that does not sleep would run for
	 * most of the window, and one that sleeps too little would wake hundreds of times. */
	if (c1 - c0 >= 100 || t1 - t0 >= (unsigned long long)WINDOW_MS * 1000000 / 10) {
		fprintf(stderr, "FAIL: a busy loop: %llu wakeups, %.3f ms on a CPU in %u ms (one attempt per 50 ms expected)\n",
			c1 - c0, (double)(t1 - t0) / 1e6, WINDOW_MS);
		exit(1);
	}

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	FE_CHECK(lfd >= 0);
	FE_CHECK(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(lfd, 2) == 0);
	fe_init(&f);
	f.sock = accept_within(lfd, 5000);
	FE_CHECK(f.sock >= 0);
	handshake(&f, p);
	one_frame(&f, p, 3);
	idle_window(tid, "client, connected and silent");

	/* A message long after the connection was made (its retry time is past): the thread
	 * answers and connects no second time. The thread holds the port lock from the message
	 * to the end of its pass, so info() after the reply sees what the pass did. */
	vi = info(p);
	fe_send(&f, VHOST_USER_GET_FEATURES, NULL, 0, NULL, 0);
	FE_CHECK(fe_reply(&f, &fv, sizeof(fv)) == 0);
	if (info(p).connects != vi.connects || accept_within(lfd, 0) >= 0) {
		fprintf(stderr, "FAIL: client, connected: a message made the control thread connect "
				"again (connects %llu -> %llu)\n",
			(unsigned long long)vi.connects, (unsigned long long)info(p).connects);
		exit(1);
	}
	printf("client, connected: GET_FEATURES answered (0x%llx), no second connection\n",
	       (unsigned long long)fv);

	/* The listener's side ends the connection: tide reconnects and runs again. */
	vi = info(p);
	close(f.sock);
	WAIT_FOR(info(p).disconnects > vi.disconnects, "the disconnect");
	f.sock = accept_within(lfd, 5000);
	FE_CHECK(f.sock >= 0);
	f.vq[1].avail_idx = 0; /* a new vring: the guest's Tx starts over */
	memset(f.mem, 0, FE_BUFS);
	handshake(&f, p);
	FE_CHECK(info(p).connects == vi.connects + 1);
	one_frame(&f, p, 4);
	stop_close(p);
	fe_fini(&f);
	close(lfd);
	unlink(path);
	FE_CHECK(tide_pool_in_use(pool) == 0);
}

/* needs_poll_ctl of the one port @spec opens. */
static int needs_poll_ctl(const char *spec)
{
	struct tide_port_info pi = {.sz = sizeof(pi)};
	struct tide_port *p;

	FE_CHECK(tide_port_open(spec, &p) == 0);
	FE_CHECK(tide_port_info_get(p, &pi) == 0);
	tide_port_close(p);
	return pi.needs_poll_ctl;
}

static void info_case(const char *path)
{
	char spec[160];
	int v, m, n;

	snprintf(spec, sizeof(spec), "vhost:socket=%s", path);
	v = needs_poll_ctl(spec);
	snprintf(spec, sizeof(spec), "memif:socket=%s,role=server", path);
	m = needs_poll_ctl(spec);
	n = needs_poll_ctl("null:size=64");
	printf("needs_poll_ctl: vhost %d, memif %d, null %d\n", v, m, n);
	if (v != 0 || m != 1 || n != 0) {
		fprintf(stderr, "FAIL: needs_poll_ctl: vhost %d (want 0), memif %d (want 1), "
				"null %d (want 0)\n", v, m, n);
		exit(1);
	}
}

/* ---- port stop against a vring start on the control thread ---- */

static const char *park_at;  /* the control thread's log line to park it at */
static int parked, unparked; /* it is parked; it may go on */

/* Park the control thread inside the log call of park_at (the port lock held), until
 * unparked; print warnings and errors. */
static void park_log(enum tide_log_level level, const char *comp, const char *msg, void *user)
{
	const char *at = __atomic_load_n(&park_at, __ATOMIC_ACQUIRE);

	(void)user;
	if (at != NULL && strstr(msg, at) != NULL) {
		__atomic_store_n(&park_at, NULL, __ATOMIC_RELAXED);
		__atomic_store_n(&parked, 1, __ATOMIC_RELEASE);
		while (!__atomic_load_n(&unparked, __ATOMIC_ACQUIRE))
			pause_ms(1);
	}
	if (level <= TIDE_LOG_WARNING)
		fprintf(stderr, "%s %s: %s\n", tide_log_level_name(level), comp, msg);
}

static void *stop_main(void *arg)
{
	tide_port_stop(arg);
	return NULL;
}

/*
 * tide_port_stop() makes the bursts no-ops first and joins the control thread later; a vring
 * the thread starts in between must not bring a burst back. The control thread is parked
 * inside the start of vring 0 (tide's Tx queue), the port lock held; port stop runs on
 * another thread, stores the no-op bursts and waits for the lock; then the control thread
 * goes on. After stop, both queues' calls must be the no-ops.
 */
static void stop_window_case(const char *path)
{
	enum tide_log_level lvl = tide_log_get_level();
	char spec[200];
	struct tide_port *p;
	struct tide_txq *tq;
	struct tide_rxq *rq;
	tide_tx_burst_fn running;
	pthread_t s;
	struct fe f;

	snprintf(spec, sizeof(spec), "vhost:socket=%s,role=server", path);
	p = open_port(spec);
	tq = tide_port_txq(p, 0);
	rq = tide_port_rxq(p, 0);
	running = __atomic_load_n(&tq->call, __ATOMIC_ACQUIRE);
	FE_CHECK(running != tide_tx_burst_noop);
	tide_log_set_handler(park_log, NULL);
	tide_log_set_level(TIDE_LOG_DEBUG);
	__atomic_store_n(&park_at, "vring 0 start", __ATOMIC_RELEASE);
	fe_init(&f);
	fe_connect(&f, path);
	fe_handshake(&f, FE_TO_VRINGS, feats, no_poll);
	WAIT_FOR(__atomic_load_n(&parked, __ATOMIC_ACQUIRE), "the control thread to start vring 0");
	tide_thread_offline(); /* this thread runs no burst while port stop waits for a grace period */
	signal(SIGALRM, on_alarm);
	alarm(10);
	FE_CHECK(pthread_create(&s, NULL, stop_main, p) == 0);
	WAIT_FOR(__atomic_load_n(&tq->call, __ATOMIC_ACQUIRE) != running,
		 "port stop to make the bursts no-ops");
	__atomic_store_n(&unparked, 1, __ATOMIC_RELEASE);
	FE_CHECK(pthread_join(s, NULL) == 0);
	alarm(0);
	tide_log_set_level(lvl);
	tide_log_set_handler(NULL, NULL);
	printf("stop during a vring start: Tx call %s, Rx call %s after stop\n",
	       tq->call == tide_tx_burst_noop ? "no-op" : "LIVE",
	       rq->call == tide_rx_burst_noop ? "no-op" : "LIVE");
	if (tq->call != tide_tx_burst_noop || rq->call != tide_rx_burst_noop) {
		fprintf(stderr, "FAIL: a stopped port kept a live burst: the control thread published one after port stop\n");
		exit(1);
	}
	tide_port_close(p);
	fe_fini(&f);
	FE_CHECK(tide_pool_in_use(pool) == 0);
}

static void mac_of(const char *spec, uint8_t mac[6])
{
	struct tide_port_info pi = {.sz = sizeof(pi)};
	struct tide_port *p;

	FE_CHECK(tide_port_open(spec, &p) == 0);
	FE_CHECK(tide_port_info_get(p, &pi) == 0);
	memcpy(mac, pi.mac, 6);
	tide_port_close(p);
}

/*
 * Every vhost port has a MAC of its own: two ports of this process, and the first port of
 * another process (forked before either opened one) all differ, and each is a locally
 * administered unicast address.
 */
static void mac_case(const char *path)
{
	uint8_t a[6], b[6], c[6];
	char spec[160];
	int pfd[2], st;
	pid_t child;

	snprintf(spec, sizeof(spec), "vhost:socket=%s", path);
	FE_CHECK(pipe(pfd) == 0);
	child = fork();
	FE_CHECK(child >= 0);
	if (child == 0) {
		mac_of(spec, c);
		_exit(write(pfd[1], c, 6) == 6 ? 0 : 1);
	}
	close(pfd[1]);
	mac_of(spec, a);
	mac_of(spec, b);
	FE_CHECK(read(pfd[0], c, 6) == 6);
	close(pfd[0]);
	FE_CHECK(waitpid(child, &st, 0) == child && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	printf("MACs: %02x:%02x:%02x:%02x:%02x:%02x, %02x:%02x:%02x:%02x:%02x:%02x (this process), "
	       "%02x:%02x:%02x:%02x:%02x:%02x (another)\n", a[0], a[1], a[2], a[3], a[4], a[5],
	       b[0], b[1], b[2], b[3], b[4], b[5], c[0], c[1], c[2], c[3], c[4], c[5]);
	if (memcmp(a, b, 6) == 0 || memcmp(a, c, 6) == 0 || memcmp(b, c, 6) == 0) {
		fprintf(stderr, "FAIL: two vhost ports share a MAC\n");
		exit(1);
	}
	FE_CHECK((a[0] & 3) == 2 && (b[0] & 3) == 2 && (c[0] & 3) == 2);
}

int main(void)
{
	tide_thread_register();
	FE_CHECK(tide_pktpool_create("vhostctl", 1024, 32, 0, NULL, &pool) == 0);
	snprintf(paths[0], sizeof(paths[0]), "%s/tide-vhost-ctl-%d.sock", test_tmp(),
		 (int)getpid());
	snprintf(paths[1], sizeof(paths[1]), "%s/tide-vhost-ctl-%d-c.sock", test_tmp(),
		 (int)getpid());
	atexit(remove_sockets);
	mac_case(paths[0]);
	info_case(paths[0]);
	server_case(paths[0]);
	client_case(paths[1]);
	stop_window_case(paths[0]);
	tide_pool_free(pool);
	printf("ok\n");
	return 0;
}
