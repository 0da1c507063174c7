/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lm_peer: a memif test peer built on FD.io VPP's libmemif (not on tide), for the
 * interoperability tests. One interface on one socket, either role, interrupt or polling
 * mode, and one of three jobs:
 *   echo   send every received frame back unchanged (chains included)
 *   count  check every received frame (the pattern of tests/memif_util.h: queue, a
 *          sequence that only goes up, payload bytes) and count it
 *   gen    send COUNT frames of SIZE bytes in that pattern, then count what comes back
 * In interrupt mode frames are read when the ring's eventfd fires (libmemif's on_interrupt
 * callback), as libmemif applications do; in polling mode every loop. libmemif's
 * memif_rx_burst() reads the ring's index and only then drains the eventfd: a kick that
 * comes in between is consumed while its frames stay in the ring, and when it was the
 * sender's last, nothing wakes the reader again. So after SWEEP_IDLE seconds without an
 * interrupt the peer looks at every ring once ("swept": the frames found so; a sender
 * that kicks shows a handful at most, one that never does shows nearly all).
 * It stops after SECONDS, or when it has received EXPECT frames, and prints one line:
 *   lm_peer: connects=C disconnects=D rx=N tx=M bad=B txfull=F swept=S
 *
 * usage: lm_peer -r master|slave -s SOCKET [-i ID] [-k SECRET] [-q RINGS] [-l LOG2]
 *                [-b BUFSIZE] [-m intr|poll] [-a echo|count|gen] [-n COUNT] [-z SIZE]
 *                [-x EXPECT] [-t SECONDS] [-e]
 * gen without EXPECT stops once everything is sent; -e stops at the first disconnect.
 */
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libmemif.h>

#define MAXQ 8
#define BURST 64
#define MAXFRAME 65536
#define SWEEP_IDLE 0.2 /* s */

static memif_conn_handle_t conn;
static int polling, job; /* job: 0 echo, 1 count, 2 gen */
static unsigned nq = 1, connected;
static uint16_t bufsize = 2048;
static uint64_t connects, disconnects, rx, tx, bad, txfull, count, expect, swept;
static double last_intr; /* interrupt mode: when on_interrupt last ran */
static uint32_t size = 64;
static uint64_t next_seq[MAXQ], sent_seq[MAXQ];
static volatile sig_atomic_t stop;
static int exit_on_down; /* -e: stop at the first disconnect after a connect */
static uint8_t frame[MAXFRAME];

static uint8_t pat(uint32_t q, uint64_t seq, uint32_t off)
{
	return (uint8_t)(seq * 7 + off + q * 13);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void check(uint16_t qid, const uint8_t *f, uint32_t len)
{
	uint32_t q;
	uint64_t seq;

	if (len < 12) {
		bad++;
		return;
	}
	memcpy(&q, f, 4);
	memcpy(&seq, f + 4, 8);
	/* A forwarder in between may drop (it counts that); it must never reorder. */
	if (q != qid || seq < next_seq[qid]) {
		bad++;
		return;
	}
	next_seq[qid] = seq + 1;
	for (uint32_t i = 12; i < len; i++)
		if (f[i] != pat(q, seq, i)) {
			bad++;
			return;
		}
}

/* Send one frame of @len bytes from @f on @qid (chained over several buffers if needed). */
static int send_frame(uint16_t qid, const uint8_t *f, uint32_t len)
{
	memif_buffer_t b[MAXFRAME / 128];
	uint16_t got = 0, done = 0;
	uint32_t off = 0;
	int err;

	err = memif_buffer_alloc(conn, qid, b, 1, &got, (uint16_t)(len > 65535 ? 65535 : len));
	if (err != MEMIF_ERR_SUCCESS || got == 0) {
		txfull++;
		return -1;
	}
	/* libmemif hands back one frame as a chain of buffers: count them by the flag. */
	{
		unsigned nb = 1;

		while (b[nb - 1].flags & MEMIF_BUFFER_FLAG_NEXT)
			nb++;
		for (unsigned i = 0; i < nb; i++) {
			uint32_t k = len - off < b[i].len ? len - off : b[i].len;

			memcpy(b[i].data, f + off, k);
			b[i].len = k;
			off += k;
		}
		err = memif_tx_burst(conn, qid, b, (uint16_t)nb, &done);
	}
	if (err != MEMIF_ERR_SUCCESS || done == 0) {
		txfull++;
		return -1;
	}
	tx++;
	return 0;
}

static void receive(uint16_t qid)
{
	memif_buffer_t b[BURST];
	uint16_t n = 0;
	uint32_t len = 0;
	double give_up = now() + 2;
	int err;

	do {
		err = memif_rx_burst(conn, qid, b, BURST, &n);
		if (err != MEMIF_ERR_SUCCESS && err != MEMIF_ERR_NOBUF)
			return;
		for (uint16_t i = 0; i < n; i++) {
			uint32_t k = b[i].len;

			if (len + k > MAXFRAME)
				k = MAXFRAME - len;
			memcpy(frame + len, b[i].data, k);
			len += k;
			if (b[i].flags & MEMIF_BUFFER_FLAG_NEXT)
				continue; /* the frame goes on in the next buffer */
			rx++;
			if (job == 0) {
				/* The receiver drains in another process: wait for room, at most
				 * 2 s per burst (a peer that died never makes room). */
				while (send_frame(qid, frame, len) < 0 && now() < give_up)
					txfull--;
			}
			else
				check(qid, frame, len);
			len = 0;
		}
		memif_refill_queue(conn, qid, n, 0);
	} while (n == BURST);
}

static int on_connect(memif_conn_handle_t c, void *ctx)
{
	(void)ctx;
	connects++;
	connected = 1;
	for (unsigned q = 0; q < nq; q++) {
		if (polling)
			memif_set_rx_mode(c, MEMIF_RX_MODE_POLLING, (uint16_t)q);
		memif_refill_queue(c, (uint16_t)q, UINT16_MAX, 0);
	}
	return 0;
}

static int on_disconnect(memif_conn_handle_t c, void *ctx)
{
	(void)c, (void)ctx;
	disconnects++;
	connected = 0;
	if (exit_on_down)
		stop = 1;
	return 0;
}

static int on_interrupt(memif_conn_handle_t c, void *ctx, uint16_t qid)
{
	(void)c, (void)ctx;
	last_intr = now();
	receive(qid);
	return 0;
}

static void gen(void)
{
	for (unsigned q = 0; q < nq; q++)
		for (int b = 0; b < BURST && sent_seq[q] < count; b++) {
			uint64_t seq = sent_seq[q];

			for (uint32_t i = 0; i < size; i++)
				frame[i] = pat(q, seq, i);
			memcpy(frame, &q, 4);
			memcpy(frame + 4, &seq, 8);
			if (send_frame((uint16_t)q, frame, size) < 0)
				break;
			sent_seq[q]++;
		}
}

/* The peer took every frame we put on our Tx rings (their head and tail met). */
static int tx_drained(void)
{
	static char buf[4096];
	memif_details_t md;

	if (memif_get_details(conn, &md, buf, sizeof(buf)) != MEMIF_ERR_SUCCESS)
		return 1;
	for (unsigned q = 0; q < md.tx_queues_num; q++)
		if (md.tx_queues[q].head != md.tx_queues[q].tail)
			return 0;
	return 1;
}

static void on_signal(int s)
{
	(void)s;
	stop = 1;
}

int main(int argc, char **argv)
{
	memif_socket_args_t sa = {0};
	memif_conn_args_t ca = {0};
	memif_socket_handle_t sock;
	double secs = 10, end;
	int c, err;

	ca.log2_ring_size = 10;
	ca.buffer_size = 2048;
	ca.num_s2m_rings = ca.num_m2s_rings = 1;
	snprintf((char *)ca.interface_name, sizeof(ca.interface_name), "lm_peer");
	snprintf(sa.app_name, sizeof(sa.app_name), "lm_peer");
	while ((c = getopt(argc, argv, "r:s:i:k:q:l:b:m:a:n:z:x:t:e")) != -1) {
		switch (c) {
		case 'r': ca.is_master = strcmp(optarg, "master") == 0; break;
		case 's': snprintf(sa.path, sizeof(sa.path), "%s", optarg); break;
		case 'i': ca.interface_id = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'k': snprintf((char *)ca.secret, sizeof(ca.secret), "%s", optarg); break;
		case 'q': nq = (unsigned)atoi(optarg); break;
		case 'l': ca.log2_ring_size = (uint8_t)atoi(optarg); break;
		case 'b': ca.buffer_size = bufsize = (uint16_t)atoi(optarg); break;
		case 'm': polling = strcmp(optarg, "poll") == 0; break;
		case 'a': job = strcmp(optarg, "count") == 0 ? 1 : strcmp(optarg, "gen") == 0 ? 2 : 0; break;
		case 'n': count = strtoull(optarg, NULL, 0); break;
		case 'z': size = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'x': expect = strtoull(optarg, NULL, 0); break;
		case 't': secs = atof(optarg); break;
		case 'e': exit_on_down = 1; break;
		default:
			fprintf(stderr, "usage: see the top of lm_peer.c\n");
			return 2;
		}
	}
	if (nq < 1 || nq > MAXQ || size < 12 || size > MAXFRAME) {
		fprintf(stderr, "lm_peer: bad -q or -z\n");
		return 2;
	}
	ca.num_s2m_rings = ca.num_m2s_rings = (uint8_t)nq;
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	/* Ask for a connection every 100 ms while disconnected (client). */
	sa.connection_request_timer.it_value.tv_nsec = 100 * 1000000;
	sa.connection_request_timer.it_interval.tv_nsec = 100 * 1000000;
	err = memif_create_socket(&sock, &sa, NULL);
	if (err != MEMIF_ERR_SUCCESS) {
		fprintf(stderr, "lm_peer: memif_create_socket: %s\n", memif_strerror(err));
		return 1;
	}
	ca.socket = sock;
	err = memif_create(&conn, &ca, on_connect, on_disconnect, polling ? NULL : on_interrupt,
			   NULL);
	if (err != MEMIF_ERR_SUCCESS) {
		fprintf(stderr, "lm_peer: memif_create: %s\n", memif_strerror(err));
		return 1;
	}
	/* Tell the test we listen (master) or try (slave). */
	printf("lm_peer: ready\n");
	fflush(stdout);
	end = now() + secs;
	while (!stop && now() < end && !(expect && rx >= expect)) {
		memif_poll_event(sock, polling || job == 2 ? 0 : 10);
		if (!connected)
			continue;
		if (job == 2) {
			unsigned q = 0;

			gen();
			while (q < nq && sent_seq[q] == count)
				q++;
			if (q == nq && expect == 0 && tx_drained())
				break; /* everything sent and taken, nothing to wait for */
		}
		if (polling)
			for (unsigned q = 0; q < nq; q++)
				receive((uint16_t)q);
		else if (now() - last_intr > SWEEP_IDLE) {
			uint64_t before = rx;

			for (unsigned q = 0; q < nq; q++)
				receive((uint16_t)q);
			swept += rx - before;
			last_intr = now();
		}
	}
	printf("lm_peer: connects=%llu disconnects=%llu rx=%llu tx=%llu bad=%llu txfull=%llu "
	       "swept=%llu\n",
	       (unsigned long long)connects, (unsigned long long)disconnects,
	       (unsigned long long)rx, (unsigned long long)tx, (unsigned long long)bad,
	       (unsigned long long)txfull, (unsigned long long)swept);
	memif_delete(&conn);
	memif_delete_socket(&sock);
	return 0;
}
