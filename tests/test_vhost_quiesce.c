/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The vhost port when membarrier() fails after the probe (src/quiesce.h): taking a vring
 * away then waits for a grace period (every thread that runs bursts passes a burst call or
 * goes offline), and the control thread does that holding the port's lock. A thread that
 * runs bursts and calls into the port meanwhile must not be what that wait waits for:
 *
 *   W, a worker (an index, online: it ran a burst), calls tide_vhost_info_get() or
 *   tide_port_poll_ctl() while the control thread, holding the port lock, waits for the
 *   grace period. W waits for the lock; unless waiting for it counts as a quiescent point,
 *   the grace period waits for W and neither ever goes on.
 *
 * Deterministic: W makes its call when the control thread logs the failed barrier, which it
 * does holding the lock, before the grace period; the grace period cannot end before W has
 * made the call, so W's call always meets the lock held. A failure is a timeout (5 s) with
 * a message, not a hang. The frontend is tests/vhost_front.h in this process; its leaving
 * (socket closed) makes the control thread stop both vrings.
 */
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include <tide/lcore.h>
#include <tide/log.h>
#include <tide/port.h>
#include <tide/vhost.h>

#include "membarrier_fail.h"
#include "quiesce.h"
#include "vhost_front.h"
#include "proc_util.h"
#include "tmp_util.h"

#define WAIT_S 5

static struct tide_port *P;
static struct tide_pool *pool;
static char path[108];
static int in_grace; /* the control thread logged the failed barrier (lock held) */
static int w_call;   /* which call W makes: 1 info, 2 poll_ctl */
static int w_ready, w_done;

static void pause_ms(unsigned ms)
{
	struct timespec t = {.tv_sec = 0, .tv_nsec = (long)ms * 1000000};

	nanosleep(&t, NULL);
}

static bool wait_flag(int *flag, double secs)
{
	double end = now_s() + secs;

	while (!__atomic_load_n(flag, __ATOMIC_ACQUIRE))
		if (now_s() > end)
			return false;
		else
			pause_ms(1);
	return true;
}

static void qlog(enum tide_log_level level, const char *comp, const char *msg, void *user)
{
	(void)user;
	if (strstr(msg, "membarrier() failed") != NULL)
		__atomic_store_n(&in_grace, 1, __ATOMIC_RELEASE);
	if (level <= TIDE_LOG_WARNING)
		fprintf(stderr, "%s %s: %s\n", tide_log_level_name(level), comp, msg);
}

/* W: one burst (online), then, once the control thread is in its grace period, the call. */
static void *w_main(void *arg)
{
	struct tide_vhost_info vi = {.sz = sizeof(vi)};
	struct tide_mbuf *m[4];
	unsigned k;

	(void)arg;
	FE_CHECK(tide_thread_register() >= 0);
	k = tide_rx_burst(tide_port_rxq(P, 0), m, 4);
	tide_mbuf_free_bulk(m, k);
	__atomic_store_n(&w_ready, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&in_grace, __ATOMIC_ACQUIRE))
		pause_ms(1); /* no burst call: the grace period waits for this thread */
	if (w_call == 1)
		FE_CHECK(tide_vhost_info_get(P, &vi) == 0);
	else
		FE_CHECK(tide_port_poll_ctl(P) == 0);
	__atomic_store_n(&w_done, 1, __ATOMIC_RELEASE);
	tide_thread_offline();
	tide_pool_cache_flush(pool);
	tide_thread_unregister();
	return NULL;
}

static void no_poll(void)
{
	/* the control thread answers */
}

static void remove_socket(void)
{
	unlink(path);
}

static bool connected(void)
{
	struct tide_vhost_info vi = {.sz = sizeof(vi)};

	FE_CHECK(tide_vhost_info_get(P, &vi) == 0);
	return vi.connected;
}

static void run_case(int call, const char *what)
{
	struct tide_vhost_info vi = {.sz = sizeof(vi)};
	pthread_t w;
	struct fe f;
	double end;

	w_call = call;
	__atomic_store_n(&in_grace, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&w_ready, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&w_done, 0, __ATOMIC_RELAXED);
	fe_init(&f);
	fe_connect(&f, path);
	fe_handshake(&f, FE_TO_VRINGS,
		     VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VHOST_USER_F_PROTOCOL_FEATURES),
		     no_poll);
	end = now_s() + WAIT_S;
	while (!connected()) {
		FE_CHECK(now_s() < end);
		pause_ms(1);
	}
	FE_CHECK(pthread_create(&w, NULL, w_main, NULL) == 0);
	FE_CHECK(wait_flag(&w_ready, WAIT_S));
	__atomic_store_n(&mb_errno, EPERM, __ATOMIC_RELAXED);
	close(f.sock); /* the frontend leaves: the control thread stops both vrings */
	f.sock = -1;
	if (!wait_flag(&in_grace, WAIT_S)) {
		fprintf(stderr, "FAIL %s: no failed barrier was logged (the case tests nothing)\n",
			what);
		exit(1);
	}
	if (!wait_flag(&w_done, WAIT_S)) {
		fprintf(stderr, "FAIL %s: deadlock: the control thread waits for a grace period holding the port lock, the worker waits for that lock\n",
			what);
		remove_socket();
		_exit(1); /* both threads are stuck for good */
	}
	FE_CHECK(pthread_join(w, NULL) == 0);
	end = now_s() + WAIT_S;
	while (connected()) {
		FE_CHECK(now_s() < end);
		pause_ms(1);
	}
	FE_CHECK(tide_vhost_info_get(P, &vi) == 0);
	__atomic_store_n(&mb_errno, 0, __ATOMIC_RELAXED);
	printf("ok   %s: the worker's call returned during the grace period; %s\n", what,
	       vi.reason);
	fe_fini(&f);
}

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : ""; /* "info" or "poll": that case alone */
	char spec[160];

	if (quiesce_kind() == 0) {
		fprintf(stderr, "membarrier() is not available here: no barrier to fail\n");
		return 77;
	}
	tide_log_set_handler(qlog, NULL);
	tide_log_set_level(TIDE_LOG_WARNING);
	snprintf(path, sizeof(path), "%s/tide-vhost-quiesce-%d.sock", test_tmp(), (int)getpid());
	atexit(remove_socket);
	snprintf(spec, sizeof(spec), "vhost:socket=%s,role=server", path);
	FE_CHECK(tide_pktpool_create("vhq", 1024, 32, 0, NULL, &pool) == 0);
	FE_CHECK(tide_port_open(spec, &P) == 0);
	FE_CHECK(tide_port_configure(P, 1, 1) == 0);
	FE_CHECK(tide_rxq_setup(P, 0, 256, pool, NULL) == 0);
	FE_CHECK(tide_txq_setup(P, 0, 256, NULL) == 0);
	FE_CHECK(tide_port_start(P) == 0);
	if (strcmp(only, "poll") != 0)
		run_case(1, "tide_vhost_info_get() from a worker");
	if (strcmp(only, "info") != 0)
		run_case(2, "tide_port_poll_ctl() from a worker");
	tide_port_close(P);
	FE_CHECK(tide_pool_in_use(pool) == 0);
	tide_pool_free(pool);
	tide_log_set_handler(NULL, NULL);
	printf("ok\n");
	return 0;
}
