/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memif MAC addresses: every open memif port of a process has its own, whatever its id,
 * role and socket (two ports with the same id on two sockets, both ends of a pair in one
 * process), a port opened after a close does not take the address of one still open (nor
 * after the per-process counter wrapped), and
 * another process's ports (same specs) differ from this one's. Each is a locally
 * administered unicast address.
 */
#include <stdbool.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memif.h"
#include "memif_util.h"

#define NP 8

static char dir[64];

static void open_all(struct tide_port **p)
{
	static const char *const roles[] = {"server", "client"};

	for (unsigned i = 0; i < NP; i++) {
		char spec[256];

		/* ids 0 and 1, both roles, sockets a and b: every id appears twice per role. */
		snprintf(spec, sizeof(spec), "memif:socket=%s/%c.sock,role=%s,id=%u", dir,
			 "ab"[i / 4], roles[i % 2], (i / 2) % 2);
		MT_CHECK(tide_port_open(spec, &p[i]) == 0);
	}
}

static void macs_of(struct tide_port **p, unsigned n, uint8_t (*mac)[6])
{
	for (unsigned i = 0; i < n; i++) {
		struct tide_port_info info = {.sz = sizeof(info)};

		MT_CHECK(tide_port_info_get(p[i], &info) == 0);
		memcpy(mac[i], info.mac, 6);
		/* Locally administered (bit 1), unicast (bit 0 clear). */
		MT_CHECK((mac[i][0] & 3) == 2);
	}
}

static void check_distinct(uint8_t (*mac)[6], unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = i + 1; j < n; j++)
			if (memcmp(mac[i], mac[j], 6) == 0) {
				fprintf(stderr, "ports %u and %u share MAC %02x:%02x:%02x:%02x:%02x:%02x\n",
					i, j, mac[i][0], mac[i][1], mac[i][2], mac[i][3],
					mac[i][4], mac[i][5]);
				exit(1);
			}
}

int main(void)
{
	struct tide_port *p[NP];
	uint8_t mac[2 * NP + 1][6];
	int fds[2], st;
	pid_t pid;

	mt_tmpdir(dir, sizeof(dir), "memif-mac");
	open_all(p);
	macs_of(p, NP, mac);
	check_distinct(mac, NP);

	/* Close one, open another: it must not take an address still in use. */
	tide_port_close(p[3]);
	MT_CHECK(tide_port_open("memif:role=client,id=0,socket=/nonexistent/x.sock", &p[3]) == 0);
	macs_of(p, NP, mac);
	check_distinct(mac, NP);

	/* The per-process counter wrapped round to the value of a port still open: skipped. */
	tide_port_close(p[5]);
	memif_mac_next = 0;
	MT_CHECK(tide_port_open("memif:role=server,id=7,socket=/nonexistent/y.sock", &p[5]) == 0);
	macs_of(p, NP, mac);
	check_distinct(mac, NP);

	/* Another process with the same specs: its addresses differ from ours. */
	MT_CHECK(pipe(fds) == 0);
	pid = fork();
	MT_CHECK(pid >= 0);
	if (pid == 0) {
		struct tide_port *c[NP];
		uint8_t cm[NP][6];

		for (unsigned i = 0; i < NP; i++)
			tide_port_close(p[i]);
		open_all(c);
		macs_of(c, NP, cm);
		MT_CHECK(write(fds[1], cm, sizeof(cm)) == (ssize_t)sizeof(cm));
		for (unsigned i = 0; i < NP; i++)
			tide_port_close(c[i]);
		_exit(0);
	}
	close(fds[1]);
	MT_CHECK(read(fds[0], (uint8_t *)mac + NP * 6, NP * 6) == NP * 6);
	close(fds[0]);
	MT_CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	check_distinct(mac, 2 * NP);

	for (unsigned i = 0; i < NP; i++)
		tide_port_close(p[i]);
	printf("memif_mac: %u ports here and %u in another process, all addresses distinct\n",
	       NP, NP);
	return 0;
}
