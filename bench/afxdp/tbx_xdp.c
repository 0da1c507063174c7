// SPDX-License-Identifier: BSD-3-Clause
/*
 * tbx_xdp - the helper of bench/afxdp/run for its own XDP programs (tbx_xdp.bpf.c):
 *
 *   tbx_xdp OBJ attach IFNAME native|generic drop|redirect [OUT_IFNAME]
 *       attach tbx_drop or tbx_redirect (to OUT_IFNAME) through a BPF link, print "ready",
 *       then answer every line read on stdin with the packet count so far; on EOF (or when
 *       killed) the link's last reference goes and the program comes off
 *   tbx_xdp OBJ gen IFNAME SIZE [COUNT]
 *       the traffic source: BPF_PROG_TEST_RUN of tbx_gen with live frames, an IPv4/UDP frame
 *       of SIZE bytes sent out of IFNAME (into its veth peer) repeatedly until SIGINT or
 *       SIGTERM, or COUNT frames at full speed and exit; prints the frames sent
 *
 * Run it in the namespace of IFNAME. Exit status 0, or 1 with a message on stderr.
 */
#include <errno.h>
#include <net/if.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <linux/if_link.h>

#ifndef BPF_F_TEST_XDP_LIVE_FRAMES
#define BPF_F_TEST_XDP_LIVE_FRAMES (1U << 1)
#endif

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* gen's exit status when the kernel refuses BPF_PROG_TEST_RUN live frames (EPERM). */
#define EXIT_CANNOT_RUN 77

static int die(const char *what, int err)
{
	fprintf(stderr, "tbx_xdp: %s: %s\n", what, strerror(err));
	return 1;
}

static struct bpf_object *load(const char *path)
{
	struct bpf_object *obj = bpf_object__open_file(path, NULL);

	if (libbpf_get_error(obj)) {
		fprintf(stderr, "tbx_xdp: cannot open %s\n", path);
		return NULL;
	}
	if (bpf_object__load(obj)) {
		fprintf(stderr, "tbx_xdp: cannot load %s (root needed)\n", path);
		bpf_object__close(obj);
		return NULL;
	}
	return obj;
}

static unsigned long long count_sum(int map_fd, int ncpu)
{
	unsigned long long *v = calloc((size_t)ncpu, sizeof(*v)), sum = 0;
	__u32 k = 0;

	if (v != NULL && bpf_map_lookup_elem(map_fd, &k, v) == 0)
		for (int i = 0; i < ncpu; i++)
			sum += v[i];
	free(v);
	return sum;
}

static int cmd_attach(struct bpf_object *obj, int argc, char **argv)
{
	LIBBPF_OPTS(bpf_link_create_opts, lo);
	const char *dev = argv[0], *mode = argv[1], *what = argv[2];
	int ifindex = (int)if_nametoindex(dev), ncpu = libbpf_num_possible_cpus(), link;
	struct bpf_program *prog;
	int cnt_fd = bpf_object__find_map_fd_by_name(obj, "tbx_count");
	char line[64];

	if (ifindex == 0)
		return die(dev, errno);
	if (strcmp(what, "redirect") == 0) {
		__u32 k = 0, out;

		if (argc < 4)
			return die("redirect needs OUT_IFNAME", EINVAL);
		out = if_nametoindex(argv[3]);
		if (out == 0)
			return die(argv[3], errno);
		if (bpf_map_update_elem(bpf_object__find_map_fd_by_name(obj, "tbx_out"), &k, &out,
					0))
			return die("devmap update", errno);
		prog = bpf_object__find_program_by_name(obj, "tbx_redirect");
	} else {
		prog = bpf_object__find_program_by_name(obj, "tbx_drop");
	}
	lo.flags = strcmp(mode, "generic") == 0 ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE;
	link = bpf_link_create(bpf_program__fd(prog), ifindex, BPF_XDP, &lo);
	if (link < 0)
		return die("attach", errno);
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin) != NULL) {
		printf("%llu\n", count_sum(cnt_fd, ncpu));
		fflush(stdout);
	}
	close(link);
	return 0;
}

/* An IPv4/UDP frame of @size bytes (checksummed header; the payload is zeros). */
static void make_frame(unsigned char *f, unsigned size)
{
	static const unsigned char hdr[] = {
	    0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01, 0x08, 0x00, /* Ethernet */
	    0x45, 0, 0, 0, 0, 0, 0, 0, 64, 17, 0, 0,                     /* IPv4 */
	    198, 18, 0, 1, 198, 19, 0, 1,
	    0x04, 0x00, 0x04, 0x00, 0, 0, 0, 0, /* UDP, checksum 0 */
	};
	unsigned sum = 0, ip_len = size - 14;

	memset(f, 0, size);
	memcpy(f, hdr, sizeof(hdr));
	f[16] = (unsigned char)(ip_len >> 8);
	f[17] = (unsigned char)ip_len;
	f[38] = (unsigned char)((ip_len - 20) >> 8);
	f[39] = (unsigned char)(ip_len - 20);
	for (int i = 14; i < 34; i += 2)
		sum += (unsigned)(f[i] << 8 | f[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	f[24] = (unsigned char)(~sum >> 8);
	f[25] = (unsigned char)~sum;
}

static int cmd_gen(struct bpf_object *obj, int argc, char **argv)
{
	unsigned long long count = argc > 2 ? strtoull(argv[2], NULL, 10) : 0;
	unsigned char frame[1514];
	unsigned size = argc > 1 ? (unsigned)atoi(argv[1]) : 0;
	int ifindex = (int)if_nametoindex(argv[0]);
	struct xdp_md ctx = {.ingress_ifindex = (__u32)ifindex};
	unsigned long long sent = 0;
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .repeat = 1 << 16,
		    .flags = BPF_F_TEST_XDP_LIVE_FRAMES, .batch_size = 64);
	int fd = bpf_program__fd(bpf_object__find_program_by_name(obj, "tbx_gen"));

	if (ifindex == 0)
		return die(argv[0], errno);
	if (size < 60 || size > sizeof(frame))
		return die("SIZE must be 60..1514", EINVAL);
	/* Only here: attach must die of the default action, its fgets would restart. */
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	make_frame(frame, size);
	o.data_size_in = size;
	ctx.data_end = size;
	if (argc > 2 && count == 0)
		return die("COUNT must be a positive number", EINVAL);
	while (!stop && (count == 0 || sent < count)) {
		if (count != 0 && count - sent < o.repeat)
			o.repeat = (__u32)(count - sent);
		if (bpf_prog_test_run_opts(fd, &o) != 0) {
			if (errno == EINTR)
				break;
			int err = errno;

			die("BPF_PROG_TEST_RUN (live frames)", err);
			/* A kernel or sandbox that refuses live frames even to root: the
			 * caller cannot measure anything here, which is not a failure. */
			return err == EPERM ? EXIT_CANNOT_RUN : 1;
		}
		sent += o.repeat;
	}
	printf("%llu\n", sent);
	return 0;
}

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	int rc;

	if (argc < 4 || (strcmp(argv[2], "attach") == 0 && argc < 6)) {
		fprintf(stderr, "usage: tbx_xdp OBJ attach IFNAME native|generic drop|redirect [OUT]\n"
				"       tbx_xdp OBJ gen IFNAME SIZE [COUNT]\n");
		return 2;
	}
	obj = load(argv[1]);
	if (obj == NULL)
		return 1;
	if (strcmp(argv[2], "attach") == 0)
		rc = cmd_attach(obj, argc - 3, argv + 3);
	else if (strcmp(argv[2], "gen") == 0)
		rc = cmd_gen(obj, argc - 3, argv + 3);
	else
		rc = die(argv[2], EINVAL);
	bpf_object__close(obj);
	return rc;
}
