/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost_instr: the vhost driver's burst calls against an in-process frontend
 * (tests/vhost_front.h), for instruction counts under callgrind: every iteration the
 * frontend posts a burst (packets on its Tx vring, or empty buffers on its Rx vring) and
 * takes the used entries back, and tide runs one burst. Only bench_burst() does the
 * driver's work, so `valgrind --tool=callgrind --toggle-collect=bench_burst` counts the
 * driver and the engine alone, deterministically (no other process, no timing).
 *
 * usage: vhost_instr rx|tx[-packed][-inorder][-ol] PACKETS SIZE [SPEC_EXTRA]   e.g. vhost_instr tx 100000 64 ,txfree_loop=yes
 * (-packed: the frontend negotiates VIRTIO_F_RING_PACKED and posts one-descriptor buffers on
 * packed rings, both driver event areas saying DISABLE, as a polling guest does; -inorder: it
 * negotiates VIRTIO_F_IN_ORDER too, as DPDK's virtio-user does by default, and takes a
 * guest Tx burst back from its one used element; -ol: the queues enable every offload the
 * port offers and the frontend negotiates VIRTIO_NET_F_CSUM and HOST_TSO4/6, the packets
 * asking for none: the cost of the offload bursts on plain traffic)
 * Prints "dir=.. packets=N size=S": divide bench_burst's inclusive Ir by N.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tide/lcore.h>
#include <tide/port.h>
#include <tide/vhost.h>

#include "../../tests/vhost_front.h"
#include "../../tests/tmp_util.h"

#define BURST 32

static struct tide_port *P;

static void poll_ctl(void)
{
	tide_port_poll_ctl(P);
}

/* The measured part: one burst call of the driver. */
__attribute__((noinline)) uint16_t bench_burst(int tx, struct tide_mbuf **pk, uint16_t n);
__attribute__((noinline)) uint16_t bench_burst(int tx, struct tide_mbuf **pk, uint16_t n)
{
	return tx ? tide_tx_burst(tide_port_txq(P, 0), pk, n)
		  : tide_rx_burst(tide_port_rxq(P, 0), pk, n);
}

int main(int argc, char **argv)
{
	uint64_t feats = VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VIRTIO_NET_F_MRG_RXBUF) |
			 VIRTIO_BIT(VHOST_USER_F_PROTOCOL_FEATURES);
	struct tide_pool *pool;
	struct tide_link l;
	struct fe f;
	char path[108], spec[256];
	uint64_t total, done = 0;
	unsigned size;
	int tx, packed, inorder;
	bool ol = false;
	uint16_t next_id = 0;

	if (argc < 4) {
		fprintf(stderr, "usage: %s rx|tx[-packed][-inorder] PACKETS SIZE [SPEC_EXTRA]\n",
			argv[0]);
		return 2;
	}
	tx = strncmp(argv[1], "tx", 2) == 0;
	packed = strstr(argv[1], "-packed") != NULL;
	if (packed)
		feats |= VIRTIO_BIT(VIRTIO_F_RING_PACKED);
	inorder = strstr(argv[1], "-inorder") != NULL;
	if (inorder)
		feats |= VIRTIO_BIT(VIRTIO_F_IN_ORDER);
	if (strstr(argv[1], "-ol") != NULL) {
		ol = true;
		feats |= VIRTIO_BIT(0) | VIRTIO_BIT(11) | VIRTIO_BIT(12); /* CSUM, HOST_TSO4/6 */
	}
	total = strtoull(argv[2], NULL, 0);
	size = (unsigned)atoi(argv[3]);
	FE_CHECK(size >= 60 && size <= FE_BUF - 12);
	tide_thread_register();
	snprintf(path, sizeof(path), "%s/tide-vhost-instr-%d.sock", test_tmp(), (int)getpid());
	snprintf(spec, sizeof(spec), "vhost:socket=%s,role=server%s", path, argc > 4 ? argv[4] : "");
	FE_CHECK(tide_pktpool_create("instr", 4096, 256, 0, NULL, &pool) == 0);
	FE_CHECK(tide_port_open(spec, &P) == 0);
	FE_CHECK(tide_port_configure(P, 1, 1) == 0);
	{
		struct tide_port_info pi = {.sz = sizeof(pi)};
		struct tide_rxq_conf rc = {.sz = sizeof(rc)};
		struct tide_txq_conf tc = {.sz = sizeof(tc)};

		FE_CHECK(tide_port_info_get(P, &pi) == 0);
		rc.offloads = ol ? pi.rx_offload_capa : 0;
		FE_CHECK(tide_rxq_setup(P, 0, 1024, pool, &rc) == 0);
		tc.offloads = ol ? pi.tx_offload_capa : 0;
		FE_CHECK(tide_txq_setup(P, 0, 1024, ol ? &tc : NULL) == 0);
	}
	FE_CHECK(tide_port_start(P) == 0);
	fe_init(&f);
	fe_connect(&f, path);
	poll_ctl();
	fe_handshake(&f, FE_TO_VRINGS, feats, poll_ctl);
	do {
		poll_ctl();
		tide_port_link_get(P, &l);
	} while (!l.up);
	/* A polling guest: no interrupts wanted. */
	if (packed) {
		fe_pk_drv_event(&f, 0)->flags = VRING_PACKED_EVENT_F_DISABLE;
		fe_pk_drv_event(&f, 1)->flags = VRING_PACKED_EVENT_F_DISABLE;
	} else {
		f.vq[0].avail->flags = VRING_AVAIL_F_NO_INTERRUPT;
		f.vq[1].avail->flags = VRING_AVAIL_F_NO_INTERRUPT;
	}
	if (packed) {
		uint8_t frame[FE_BUF];

		/* Guest Tx buffers hold a packet once (a zero header, then the frame). */
		memset(frame, 0x5a, sizeof(frame));
		for (unsigned j = 0; j < FE_NUM; j++) {
			memset(fe_buf(&f, 1, j), 0, 12);
			memcpy(fe_buf(&f, 1, j) + 12, frame, size);
		}
	} else {
		uint8_t frame[FE_BUF];

		memset(frame, 0x5a, sizeof(frame));
		/* Guest Tx: every slot holds a packet once; only the ring entries are re-posted. */
		for (unsigned j = 0; j < FE_NUM; j++)
			fe_tx_post(&f, j, frame, size, 12);
		f.vq[1].avail_idx = 0;
		__atomic_store_n(&f.vq[1].avail->idx, 0, __ATOMIC_RELEASE);
	}
	while (done < total) {
		struct tide_mbuf *pk[BURST];
		unsigned k;

		if (packed) {
			/* Post a burst of buffers on the vring the burst serves, run it, take the
			 * used elements back (outside the counted call). */
			unsigned v = tx ? 0 : 1;
			uint16_t id;
			uint32_t len;

			for (unsigned j = 0; j < BURST; j++) {
				uint16_t slot = (uint16_t)((next_id + j) % FE_NUM);
				uint64_t a = fe_gpa(&f, fe_buf(&f, v, slot));
				uint32_t blen = tx ? FE_BUF : 12 + size;

				fe_pk_post(&f, v, &a, &blen, 1, slot, tx ? VRING_DESC_F_WRITE : 0);
				if (tx) {
					pk[j] = tide_mbuf_alloc(pool);
					FE_CHECK(pk[j] != NULL);
					memset(tide_mbuf_append(pk[j], (uint16_t)size), 0x5a, size);
				}
			}
			next_id = (uint16_t)((next_id + BURST) % FE_NUM);
			k = bench_burst(tx, pk, BURST);
			FE_CHECK(k == BURST);
			if (inorder && !tx) {
				FE_CHECK(fe_pk_used_batch(&f, v, BURST, &id, &len) == 1);
				FE_CHECK(id == (uint16_t)((next_id + FE_NUM - 1) % FE_NUM));
			} else {
				for (unsigned j = 0; j < BURST; j++)
					FE_CHECK(fe_pk_used(&f, v, &id, &len) == 1);
			}
			if (!tx)
				tide_mbuf_free_bulk(pk, k);
		} else if (tx) {
			struct fe_vq *q = &f.vq[0];

			for (unsigned j = 0; j < BURST; j++) {
				unsigned slot = (q->avail_idx + j) % FE_NUM;

				q->desc[slot] = (struct vring_desc){fe_gpa(&f, fe_buf(&f, 0, slot)),
								    FE_BUF, VRING_DESC_F_WRITE, 0};
				q->avail->ring[slot] = (uint16_t)slot;
				pk[j] = tide_mbuf_alloc(pool);
				FE_CHECK(pk[j] != NULL);
				memset(tide_mbuf_append(pk[j], (uint16_t)size), 0x5a, size);
			}
			q->avail_idx += BURST;
			__atomic_store_n(&q->avail->idx, q->avail_idx, __ATOMIC_RELEASE);
			k = bench_burst(1, pk, BURST);
			FE_CHECK(k == BURST);
		} else {
			struct fe_vq *q = &f.vq[1];

			for (unsigned j = 0; j < BURST; j++)
				q->avail->ring[(q->avail_idx + j) % FE_NUM] =
					(uint16_t)((q->avail_idx + j) % FE_NUM);
			q->avail_idx += BURST;
			__atomic_store_n(&q->avail->idx, q->avail_idx, __ATOMIC_RELEASE);
			k = bench_burst(0, pk, BURST);
			FE_CHECK(k == BURST);
			tide_mbuf_free_bulk(pk, k);
		}
		done += k;
	}
	printf("dir=%s%s%s packets=%llu size=%u\n", tx ? "tx" : "rx", packed ? "-packed" : "",
	       inorder ? "-inorder" : "", (unsigned long long)done, size);
	fe_fini(&f);
	tide_port_close(P);
	FE_CHECK(tide_pool_in_use(pool) == 0);
	tide_pool_free(pool);
	return 0;
}
