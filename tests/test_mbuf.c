/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mbuf: layout, refcounts, chains, free_bulk over mixed pools, data helpers at their bounds,
 * and a pool's memory in place before its first packet (no page faults on the data path).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include <tide/lcore.h>
#include <tide/mbuf.h>

#include "proc_util.h"
#include "testutil.h"

static int setup_thread(void **state)
{
	(void)state;
	return tide_thread_register() < 0;
}

static void test_layout(void **state)
{
	struct tide_pool *p;
	struct tide_mbuf *m;

	(void)state;
	assert_int_equal(sizeof(struct tide_mbuf), 64);
	assert_int_equal(tide_pktpool_create("lay", 32, 8, 0, NULL, &p), 0);
	assert_int_equal(tide_pktpool_headroom(p), TIDE_MBUF_HEADROOM);
	assert_int_equal(tide_pktpool_data_room(p), TIDE_MBUF_DATAROOM);
	m = tide_mbuf_alloc(p);
	assert_non_null(m);
	assert_ptr_equal(m->buf_addr, (char *)m + 64);
	/* Drivers posting fresh mbufs take the address without reading the header. */
	assert_ptr_equal(tide_mbuf__buf_of(m), m->buf_addr);
	assert_int_equal(m->iova, tide_pool_offset(p, m) + 64);
	assert_int_equal(tide_mbuf__iova_of(p, m), m->iova);
	assert_int_equal(m->buf_len, TIDE_MBUF_HEADROOM + TIDE_MBUF_DATAROOM);
	assert_int_equal(m->data_off, TIDE_MBUF_HEADROOM);
	assert_int_equal(m->refcnt, 1);
	assert_int_equal(m->nb_segs, 1);
	assert_null(m->next);
	assert_int_equal(tide_mbuf_tailroom(m), TIDE_MBUF_DATAROOM);
	/* The offload fields come back zero from an allocation. */
	m->ol_flags = TIDE_MBUF_F_TX_IPV4 | TIDE_MBUF_F_TX_TCP_SEG;
	m->tso_segsz = 1448;
	m->l2_len = 14;
	m->l3_len = 20;
	m->l4_len = 32;
	m->packet_type = 0xffff;
	tide_mbuf_free(m);
	m = tide_mbuf_alloc(p);
	require_non_null(m);
	assert_int_equal(m->ol_flags, 0);
	assert_int_equal(m->tso_segsz, 0);
	assert_int_equal(m->l2_len, 0);
	assert_int_equal(m->l3_len, 0);
	assert_int_equal(m->l4_len, 0);
	assert_int_equal(m->packet_type, 0);
	tide_mbuf_free(m);
	assert_pool_full(p);
	tide_pool_free(p);
}

static void test_pow2_elements(void **state)
{
	struct tide_pktpool_opts o = {.sz = sizeof(o), .headroom = 192, .elt_pow2 = 1};
	struct tide_pool *p;
	struct tide_mbuf *m;

	(void)state;
	/* 64 + 192 + 1792 = 2048: an AF_XDP-style 2 KiB frame, data at frame + 256. */
	assert_int_equal(tide_pktpool_create("pow2", 16, 0, 1792, &o, &p), 0);
	assert_int_equal(p->elt_size, 2048);
	m = tide_mbuf_alloc(p);
	assert_int_equal(tide_pool_offset(p, m) % 2048, 0);
	assert_int_equal(m->iova + m->data_off, tide_pool_offset(p, m) + 256);
	assert_ptr_equal(tide_mbuf__buf_of(m), m->buf_addr);
	assert_int_equal(tide_mbuf__iova_of(p, m), m->iova);
	tide_mbuf_free(m);
	assert_pool_full(p);
	tide_pool_free(p);
	assert_int_equal(tide_pktpool_create("big", 4, 0, 65535, NULL, &p), -EINVAL);
}

static void test_refcnt(void **state)
{
	struct tide_pool *p;
	struct tide_mbuf *m;

	(void)state;
	assert_int_equal(tide_pktpool_create("ref", 8, 0, 0, NULL, &p), 0);
	m = tide_mbuf_alloc(p);
	require_non_null(m);
	tide_mbuf_refcnt_update(m, 2);
	assert_int_equal(tide_mbuf_refcnt_read(m), 3);
	tide_mbuf_free(m);
	tide_mbuf_free(m);
	assert_int_equal(tide_pool_in_use(p), 1);
	assert_int_equal(tide_mbuf_refcnt_read(m), 1);
	tide_mbuf_free(m);
	assert_pool_full(p);
	/* Back in the pool with refcnt 1 (the pool contract). */
	assert_int_equal(tide_mbuf_refcnt_read(m), 1);
	tide_pool_free(p);
}

static struct tide_mbuf *make_chain(struct tide_pool *p, unsigned segs, uint16_t seglen)
{
	struct tide_mbuf *head = NULL;

	for (unsigned i = 0; i < segs; i++) {
		struct tide_mbuf *m = tide_mbuf_alloc(p);
		char *d;

		assert_non_null(m);
		d = tide_mbuf_append(m, seglen);
		assert_non_null(d);
		for (unsigned j = 0; j < seglen; j++)
			d[j] = (char)(i * 31 + j);
		if (head == NULL)
			head = m;
		else
			assert_int_equal(tide_mbuf_chain(head, m), 0);
	}
	return head;
}

static void test_chain_free_and_linearize(void **state)
{
	struct tide_pool *p;
	struct tide_mbuf *m;
	char buf[600];

	(void)state;
	assert_int_equal(tide_pktpool_create("chain", 32, 4, 0, NULL, &p), 0);
	m = make_chain(p, 4, 150);
	assert_int_equal(m->nb_segs, 4);
	assert_int_equal(m->pkt_len, 600);
	assert_int_equal(tide_pool_in_use(p), 4);
	assert_int_equal(tide_mbuf_read(m, 0, 600, buf), 0);
	for (unsigned i = 0; i < 600; i++)
		assert_int_equal((unsigned char)buf[i], (unsigned char)((i / 150) * 31 + i % 150));
	assert_int_equal(tide_mbuf_read(m, 1, 600, buf), -EINVAL);
	/* A shared last segment survives the chain's free. */
	struct tide_mbuf *last = tide_mbuf_last_seg(m);
	tide_mbuf_refcnt_update(last, 1);
	tide_mbuf_free(m);
	assert_int_equal(tide_pool_in_use(p), 1);
	assert_int_equal(tide_mbuf_refcnt_read(last), 1);
	tide_mbuf_free(last);
	assert_pool_full(p);

	m = make_chain(p, 3, 100);
	assert_int_equal(tide_mbuf_linearize(m), 0);
	assert_int_equal(m->nb_segs, 1);
	assert_int_equal(m->data_len, 300);
	assert_int_equal(tide_mbuf_read(m, 0, 300, buf), 0);
	assert_int_equal((unsigned char)buf[250], (unsigned char)(2 * 31 + 50));
	assert_int_equal(tide_pool_in_use(p), 1);
	tide_mbuf_free(m);
	/* Too big to linearize: nothing changes. */
	m = make_chain(p, 2, 2000);
	assert_int_equal(tide_mbuf_linearize(m), -ENOSPC);
	assert_int_equal(m->nb_segs, 2);
	tide_mbuf_free(m);
	assert_pool_full(p);
	tide_pool_free(p);
}

/* Chain refuses a segment count or a length that would overflow, and changes nothing;
 * linearize fits a packet exactly as long as the first segment's room, not a byte more. */
static void test_chain_limits(void **state)
{
	struct tide_pool *p;
	struct tide_mbuf *h, *t;
	uint16_t room;

	(void)state;
	assert_int_equal(tide_pktpool_create("lim", 8, 0, 0, NULL, &p), 0);
	h = make_chain(p, 1, 10);
	t = make_chain(p, 1, 10);
	/* Segment count: 65534 + 1 fits, 65535 + 1 does not. */
	h->nb_segs = UINT16_MAX;
	assert_int_equal(tide_mbuf_chain(h, t), -EOVERFLOW);
	assert_null(h->next);
	assert_int_equal(h->pkt_len, 10);
	h->nb_segs = UINT16_MAX - 1;
	assert_int_equal(tide_mbuf_chain(h, t), 0);
	assert_int_equal(h->nb_segs, UINT16_MAX);
	assert_ptr_equal(h->next, t);
	h->nb_segs = 2;
	tide_mbuf_free(h);
	assert_pool_full(p);
	/* Packet length: a sum above UINT32_MAX is refused, exactly UINT32_MAX is not. */
	h = make_chain(p, 1, 10);
	t = make_chain(p, 1, 10);
	h->pkt_len = UINT32_MAX - 9;
	assert_int_equal(tide_mbuf_chain(h, t), -EOVERFLOW);
	assert_null(h->next);
	h->pkt_len = UINT32_MAX - 10;
	assert_int_equal(tide_mbuf_chain(h, t), 0);
	assert_int_equal(h->pkt_len, UINT32_MAX);
	h->pkt_len = 20;
	tide_mbuf_free(h);
	assert_pool_full(p);
	/* Linearize at the first segment's room, and one byte over it. */
	h = tide_mbuf_alloc(p);
	room = tide_mbuf_tailroom(h);
	tide_mbuf_free(h);
	for (unsigned over = 0; over < 2; over++) {
		h = make_chain(p, 1, 1000);
		t = make_chain(p, 1, (uint16_t)(room - 1000 + over));
		assert_int_equal(tide_mbuf_chain(h, t), 0);
		assert_int_equal(tide_mbuf_linearize(h), over ? -ENOSPC : 0);
		assert_int_equal(h->nb_segs, over ? 2 : 1);
		assert_int_equal(h->pkt_len, room + over);
		tide_mbuf_free(h);
	}
	assert_pool_full(p);
	tide_pool_free(p);
}

static void test_free_bulk_mixed(void **state)
{
	enum { N = 200 };
	struct tide_pool *pa, *pb;
	struct tide_mbuf *m[N];
	struct tide_pool_stats sa = {.sz = sizeof(sa)};
	uint64_t seed = 5;

	(void)state;
	assert_int_equal(tide_pktpool_create("a", 256, 32, 0, NULL, &pa), 0);
	assert_int_equal(tide_pktpool_create("b", 256, 32, 0, NULL, &pb), 0);
	for (unsigned i = 0; i < N; i++) {
		m[i] = tide_mbuf_alloc((test_rand(&seed) & 1) ? pa : pb);
		assert_non_null(m[i]);
	}
	/* Some shared, some chained, one NULL. */
	tide_mbuf_refcnt_update(m[3], 1);
	tide_mbuf_chain(m[10], make_chain(pa, 2, 10));
	tide_mbuf_free(m[20]);
	m[20] = NULL;
	tide_mbuf_free_bulk(m, N);
	assert_int_equal(tide_mbuf_refcnt_read(m[3]), 1);
	tide_mbuf_free(m[3]);
	assert_pool_full(pa);
	assert_pool_full(pb);
	tide_pool_stats_get(pa, &sa);
	/* Grouping: fewer put calls than mbufs is checked via ring ops staying small. */
	assert_true(sa.puts >= 100);
	tide_pool_free(pa);
	tide_pool_free(pb);
}

/*
 * tide_mbuf_free_bulk puts a burst back in one go when every packet is already in the pool
 * state. One packet that is not (shared, chained, from another pool, NULL), at the front, in
 * the middle or at the end, must send the whole burst the careful way: nothing leaks, no
 * shared buffer is freed early, no buffer lands in the wrong pool.
 */
static void test_free_bulk_fast_check(void **state)
{
	enum { N = 32, PLAIN, SHARED, CHAINED, FOREIGN, NUL };
	static const unsigned kinds[] = {PLAIN, SHARED, CHAINED, FOREIGN, NUL};
	/* 32 packets (checked four at a time) and 31 (three more one by one). */
	static const struct {
		unsigned n, at;
	} cases[] = {{N, 0}, {N, N / 2}, {N, N - 1}, {N - 1, 0}, {N - 1, N / 2}, {N - 1, N - 2}};
	struct tide_pool *pa, *pb;
	struct tide_mbuf *m[N], *odd;

	(void)state;
	assert_int_equal(tide_pktpool_create("fa", 128, 32, 0, NULL, &pa), 0);
	assert_int_equal(tide_pktpool_create("fb", 16, 0, 0, NULL, &pb), 0);
	for (unsigned k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		for (unsigned c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
			unsigned n = cases[c].n, at = cases[c].at;

			assert_int_equal(tide_mbuf_alloc_bulk(pa, m, n), 0);
			odd = m[at];
			switch (kinds[k]) {
			case SHARED:
				tide_mbuf_refcnt_update(odd, 1);
				break;
			case CHAINED:
				assert_int_equal(tide_mbuf_chain(odd, make_chain(pa, 1, 10)), 0);
				break;
			case FOREIGN:
				tide_mbuf_free(odd);
				odd = m[at] = tide_mbuf_alloc(pb);
				assert_non_null(odd);
				break;
			case NUL:
				tide_mbuf_free(odd);
				m[at] = NULL;
				break;
			}
			tide_mbuf_free_bulk(m, n);
			if (kinds[k] == SHARED) {
				/* One reference dropped, the buffer still out. */
				assert_int_equal(tide_pool_in_use(pa), 1);
				assert_int_equal(tide_mbuf_refcnt_read(odd), 1);
				tide_mbuf_free(odd);
			}
			assert_pool_full(pa);
			assert_pool_full(pb);
		}
	}
	tide_pool_free(pa);
	tide_pool_free(pb);
}

static void test_data_helpers_bounds(void **state)
{
	struct tide_pool *p;
	struct tide_mbuf *m;

	(void)state;
	assert_int_equal(tide_pktpool_create("dh", 4, 0, 256, NULL, &p), 0);
	m = tide_mbuf_alloc(p);
	/* Prepend exactly the headroom, then one more byte fails. */
	assert_non_null(tide_mbuf_prepend(m, TIDE_MBUF_HEADROOM));
	assert_int_equal(m->data_off, 0);
	assert_null(tide_mbuf_prepend(m, 1));
	assert_int_equal(m->pkt_len, TIDE_MBUF_HEADROOM);
	/* Append up to the tailroom exactly. */
	assert_non_null(tide_mbuf_append(m, 256));
	assert_int_equal(tide_mbuf_tailroom(m), 0);
	assert_null(tide_mbuf_append(m, 1));
	assert_int_equal(m->pkt_len, TIDE_MBUF_HEADROOM + 256);
	/* adj and trim at their limits. */
	assert_null(tide_mbuf_adj(m, (uint16_t)(m->data_len + 1)));
	assert_non_null(tide_mbuf_adj(m, 100));
	assert_int_equal(tide_mbuf_trim(m, (uint16_t)(m->data_len + 1)), -EINVAL);
	assert_int_equal(tide_mbuf_trim(m, m->data_len), 0);
	assert_int_equal(m->pkt_len, 0);
	assert_int_equal(m->data_len, 0);
	tide_mbuf_free(m);
	assert_pool_full(p);
	tide_pool_free(p);
}

/*
 * The first pass of packets over a fresh pool takes no page faults: the pool's pages are
 * faulted in when it is created, on 4 KiB pages too (without transparent hugepages here,
 * which would otherwise hide a missing prefault behind one fault per 2 MiB), private and
 * shared (memfd) alike. Zero-filling a page on the data path costs microseconds: a sink
 * taking them in its first pass lets its peer's ring overflow.
 */
static void test_pool_prefaulted(void **state)
{
	enum { N = 512, ROOM = 9216 };
	static struct tide_mbuf *m[N];
	static const unsigned flags[] = {TIDE_POOL_F_NO_HUGE,
					 TIDE_POOL_F_NO_HUGE | TIDE_POOL_F_SHARED};
	bool thp_off;

	(void)state;
#ifdef UNDER_TSAN
	skip();
#endif
	/* Refused under qemu-user: there transparent hugepages may hide some faults. */
	thp_off = prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) == 0;
	for (unsigned f = 0; f < sizeof(flags) / sizeof(flags[0]); f++) {
		struct tide_pool *p;
		long before;

		assert_int_equal(tide_pktpool_create("prefault", N, 0, ROOM,
						     &(struct tide_pktpool_opts){
							 .sz = sizeof(struct tide_pktpool_opts),
							 .pool_flags = flags[f]},
						     &p),
				 0);
		before = minor_faults();
		assert_int_equal(tide_mbuf_alloc_bulk(p, m, N), 0);
		for (unsigned i = 0; i < N; i++)
			memset(m[i]->buf_addr, 0xa5, m[i]->buf_len);
		tide_mbuf_free_bulk(m, N);
		/* Jumbo buffers (9 KiB of data room: the header's page is written when the
		 * pool is made, the next two only by packets) span over a thousand pages: a
		 * handful of faults elsewhere (the test's stack and heap) may count, not one
		 * a page. */
		assert_in_range(minor_faults() - before, 0, 16);
		assert_pool_full(p);
		tide_pool_free(p);
	}
	if (thp_off)
		prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_pow2_elements),
		cmocka_unit_test(test_refcnt),
		cmocka_unit_test(test_chain_free_and_linearize),
		cmocka_unit_test(test_chain_limits),
		cmocka_unit_test(test_free_bulk_mixed),
		cmocka_unit_test(test_free_bulk_fast_check),
		cmocka_unit_test(test_data_helpers_bounds),
		cmocka_unit_test(test_pool_prefaulted),
	};

	return cmocka_run_group_tests(tests, setup_thread, NULL);
}
