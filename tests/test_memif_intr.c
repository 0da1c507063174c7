/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memif Rx interrupt calls while the control thread disconnects the port. Thread A (the
 * queue's lcore in --rx-mode interrupt) is parked inside tide_memif_rxq_intr(disable):
 * after it masked the ring's flag (shared memory) and while it checks the ring's eventfd.
 * The peer then goes away and thread B's tide_port_poll_ctl() takes the link down, which
 * unmaps the ring and closes the eventfd. B must not get there while A is inside: the
 * check is that B has not finished NEG_MS after A parked, then A is released and both end.
 * After the link is down both calls return -ENOTCONN without touching the old ring, and
 * after a reconnection they work again. For the Rx queue of each role.
 *
 * The park point: this executable's poll(), which the library's call resolves to; it
 * parks the armed thread and passes every other call to ppoll().
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <unistd.h>

#include <tide/lcore.h>

#include "memif_util.h"

#define NEG_MS 200

static char dir[64];
static struct tide_pool *pool;

static pthread_mutex_t lk = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static bool armed, parked, go;
static pthread_t park_thread;

int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	struct timespec ts = {timeout / 1000, (long)(timeout % 1000) * 1000000};

	pthread_mutex_lock(&lk);
	if (armed && pthread_equal(pthread_self(), park_thread)) {
		armed = false;
		parked = true;
		pthread_cond_broadcast(&cv);
		while (!go)
			pthread_cond_wait(&cv, &lk);
		parked = false;
	}
	pthread_mutex_unlock(&lk);
	return ppoll(fds, n, timeout < 0 ? NULL : &ts, NULL);
}

struct call {
	struct tide_port *p;
	int rc;
};

static void *thread_a(void *arg)
{
	struct call *c = arg;

	c->rc = tide_memif_rxq_intr(c->p, 0, 0);
	return NULL;
}

static bool b_done;

static void *thread_b(void *arg)
{
	struct tide_port *p = arg;
	struct tide_link l;

	tide_thread_register();
	do {
		struct timespec ms = {0, 1000000};

		tide_port_poll_ctl(p);
		tide_port_link_get(p, &l);
		nanosleep(&ms, NULL);
	} while (l.up);
	__atomic_store_n(&b_done, true, __ATOMIC_RELEASE);
	tide_thread_unregister();
	return NULL;
}

/* The calls on @p's Rx queue 0 work: an fd, enable and disable. */
static void intr_works(struct tide_port *p)
{
	MT_CHECK(tide_memif_rxq_eventfd(p, 0) >= 0);
	MT_CHECK(tide_memif_rxq_intr(p, 0, 1) == 0);
	MT_CHECK(tide_memif_rxq_intr(p, 0, 0) == 0);
}

/* Thread A parked inside @p's disable, @other (the peer) stopped, thread B disconnects @p. */
static void run(const char *role_p, const char *role_other)
{
	char spec[256];
	struct tide_port *p, *other;
	struct call c;
	pthread_t a, b;
	double t0;

	snprintf(spec, sizeof(spec), "memif:socket=%s/i.sock,role=%s,id=4", dir, role_p);
	p = mt_port(spec, 1, 1024, pool);
	snprintf(spec, sizeof(spec), "memif:socket=%s/i.sock,role=%s,id=4", dir, role_other);
	other = mt_port(spec, 1, 1024, pool);
	mt_wait_up(p, other);
	intr_works(p);

	c.p = p;
	c.rc = 1;
	b_done = false;
	pthread_mutex_lock(&lk);
	go = false;
	armed = true;
	MT_CHECK(pthread_create(&a, NULL, thread_a, &c) == 0);
	park_thread = a;
	while (!parked)
		pthread_cond_wait(&cv, &lk);
	pthread_mutex_unlock(&lk);

	/* A is inside the call. The peer goes; B takes p's link down. */
	tide_port_stop(other);
	MT_CHECK(pthread_create(&b, NULL, thread_b, p) == 0);
	t0 = mt_now();
	while (mt_now() < t0 + NEG_MS / 1000.0) {
		if (__atomic_load_n(&b_done, __ATOMIC_ACQUIRE)) {
			fprintf(stderr, "%s: the disconnect finished (ring unmapped, eventfd closed) while a thread was inside tide_memif_rxq_intr()\n",
				role_p);
			exit(1);
		}
		usleep(1000);
	}
	pthread_mutex_lock(&lk);
	go = true;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&lk);
	MT_CHECK(pthread_join(a, NULL) == 0);
	MT_CHECK(pthread_join(b, NULL) == 0);
	MT_CHECK(c.rc == 0); /* it saw the link up, and finished before the unmap */

	/* Down: nothing to touch. */
	MT_CHECK(tide_memif_rxq_eventfd(p, 0) == -ENOTCONN);
	MT_CHECK(tide_memif_rxq_intr(p, 0, 1) == -ENOTCONN);
	MT_CHECK(tide_memif_rxq_intr(p, 0, 0) == -ENOTCONN);

	/* Back up: they work again. */
	MT_CHECK(tide_port_start(other) == 0);
	mt_wait_up(p, other);
	intr_works(p);
	tide_port_close(p);
	tide_port_close(other);
	tide_pool_cache_flush(pool);
	MT_CHECK(tide_pool_in_use(pool) == 0);
	printf("ok %s: the disconnect waited for a thread inside tide_memif_rxq_intr(); -ENOTCONN while down\n",
	       role_p);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	alarm(60);
	mt_tmpdir(dir, sizeof(dir), "memif-intr");
	tide_thread_register();
	MT_CHECK(tide_pktpool_create("intr", 8192, 256, 0, NULL, &pool) == 0);
	run("client", "server");
	run("server", "client");
	tide_pool_free(pool);
	return 0;
}
