/* Helper of tools/slow-link.sh: a plain MPI program (no Loom) with two modes.
 *
 *   bandwidth check MBPS TOLERANCE   streams large messages (4 MiB each) from rank 0 to the
 *       first rank of every other emulated node and back, three times per direction, and
 *       compares the median with MBPS (the set rate in MB/s, 1e6 bytes); exits 1 on every
 *       rank when a median lies outside MBPS * (1 - TOLERANCE) .. MBPS * (1 + TOLERANCE/2)
 *       (faster than the set rate means the traffic bypassed the shaped link).
 *   bandwidth hello                  one line per rank: its node (network namespace), ranks
 *       on its node (MPI_COMM_TYPE_SHARED), and the LD_PRELOAD / LOOM_* / UCX_* variables
 *       it sees (and those named in SLOWLINK_HELLO_VARS), to show what reaches the ranks.
 *
 * Nodes are told apart by MPI_COMM_TYPE_SHARED, as Loom does. The two ranks of each
 * measurement run on two different CPUs; the others wait without spinning. */
#define _GNU_SOURCE
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern char** environ;

enum { MSG = 4 << 20, REPEATS = 3, LINE = 4096 };

static cpu_set_t allowed; /* the CPUs this rank may run on, as started */

/* Waits for a request without spinning: ranks that take no part in a measurement must leave
 * the (few, shared) cores to the two that do. */
static void idle_wait(MPI_Request* req) {
  int done = 0;
  struct timespec ms = {0, 1000000};
  for (MPI_Test(req, &done, MPI_STATUS_IGNORE); !done; MPI_Test(req, &done, MPI_STATUS_IGNORE))
    nanosleep(&ms, NULL);
}

/* The two ranks of a measurement on two different CPUs (the first two this rank may use),
 * whatever the launcher did; which = -1 restores the mask. */
static void pin(int which) {
  cpu_set_t one;
  int seen = 0, cpus = CPU_COUNT(&allowed);
  if (which < 0 || cpus < 2) {
    sched_setaffinity(0, sizeof allowed, &allowed);
    return;
  }
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &allowed) && seen++ == which) {
      CPU_ZERO(&one);
      CPU_SET(c, &one);
      sched_setaffinity(0, sizeof one, &one);
      return;
    }
}

static double stream(int from, int to, int me, char* buf, int count) {
  MPI_Request req[64], done;
  MPI_Status st[64]; /* not MPI_STATUSES_IGNORE: GCC 12 warns on MPICH's prototype */
  char ack = 0;
  MPI_Ibarrier(MPI_COMM_WORLD, &done);
  idle_wait(&done);
  double t0 = MPI_Wtime();
  if (me == from) {
    for (int i = 0; i < count; i++)
      MPI_Isend(buf + (size_t)(i % 2) * MSG, MSG, MPI_BYTE, to, 1, MPI_COMM_WORLD, &req[i]);
    MPI_Waitall(count, req, st);
    MPI_Recv(&ack, 1, MPI_BYTE, to, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (me == to) {
    for (int i = 0; i < count; i++)
      MPI_Irecv(buf + (size_t)(i % 2) * MSG, MSG, MPI_BYTE, from, 1, MPI_COMM_WORLD, &req[i]);
    MPI_Waitall(count, req, st);
    MPI_Send(&ack, 1, MPI_BYTE, from, 2, MPI_COMM_WORLD);
  }
  double t = MPI_Wtime() - t0;
  MPI_Ibcast(&t, 1, MPI_DOUBLE, from, MPI_COMM_WORLD, &done);
  idle_wait(&done);
  return (double)count * MSG / t / 1e6;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static int check(int me, int size, MPI_Comm node, double mbps, double tol) {
  int noderank;
  MPI_Comm_rank(node, &noderank);
  int* leader = malloc(sizeof(int) * size);
  int mine = noderank == 0;
  MPI_Allgather(&mine, 1, MPI_INT, leader, 1, MPI_INT, MPI_COMM_WORLD);
  /* about 0.3 s of traffic per measurement at the set rate, 2 to 32 messages of 4 MiB */
  int count = (int)(mbps * 1e6 * 0.3 / MSG);
  if (count < 2) count = 2;
  if (count > 32) count = 32;
  char* buf = malloc(2 * (size_t)MSG);
  memset(buf, 0x5a, 2 * (size_t)MSG);
  int bad = 0, pairs = 0, nodes = 0;
  for (int r = 0; r < size; r++) nodes += leader[r];
  if (me == 0)
    printf(
        "slow-link check: %d node(s), %d rank(s); set rate %.1f MB/s, accepted %.1f..%.1f MB/s; "
        "%d x 4 MiB per measurement, median of %d\n",
        nodes, size, mbps, mbps * (1 - tol), mbps * (1 + tol / 2), count, REPEATS);
  for (int peer = 1; peer < size; peer++) {
    if (!leader[peer]) continue;
    for (int dir = 0; dir < 2; dir++) {
      int from = dir ? peer : 0, to = dir ? 0 : peer;
      pin(me == from ? 0 : me == to ? 1 : -1);
      stream(from, to, me, buf, 2); /* warm-up: connection set-up, TCP slow start */
      double v[REPEATS];
      for (int i = 0; i < REPEATS; i++) v[i] = stream(from, to, me, buf, count);
      pin(-1);
      qsort(v, REPEATS, sizeof v[0], cmp);
      double med = v[REPEATS / 2];
      int ok = med >= mbps * (1 - tol) && med <= mbps * (1 + tol / 2);
      bad |= !ok;
      pairs++;
      if (me == 0)
        printf(
            "slow-link check: rank %d -> rank %d: %.1f MB/s (%.1f..%.1f), %.0f%% of the set "
            "%.1f MB/s: %s\n",
            from, to, med, v[0], v[REPEATS - 1], 100 * med / mbps, mbps,
            ok ? "ok" : "off the set rate");
    }
  }
  if (me == 0) {
    if (pairs == 0)
      printf(
          "slow-link check: failed: one node only (MPI_COMM_TYPE_SHARED spans all ranks), "
          "no link to measure\n");
    else if (bad)
      printf("slow-link check: failed: the link does not run at the set rate\n");
    else
      printf("slow-link check: ok\n");
    fflush(stdout);
  }
  free(buf);
  free(leader);
  return bad || pairs == 0;
}

static int hello(int me, int size, MPI_Comm node) {
  int nodesize;
  MPI_Comm_size(node, &nodesize);
  char line[LINE];
  const char* ns = getenv("SLOWLINK_NODE");
  char cpus[256] = "";
  for (int c = 0, k = 0; c < CPU_SETSIZE && k < (int)sizeof cpus - 8; c++)
    if (CPU_ISSET(c, &allowed)) k += snprintf(cpus + k, sizeof cpus - k, "%s%d", k ? "," : "", c);
  int n = snprintf(line, LINE, "rank %d/%d on node %s (%d rank(s) on this node), CPUs %s:", me,
                   size, ns ? ns : "?", nodesize, cpus);
  const char* extra = getenv("SLOWLINK_HELLO_VARS"); /* more names to show, space-separated */
  for (char** e = environ; *e && n < LINE - 1; e++) {
    size_t len = strcspn(*e, "=");
    int show =
        !strncmp(*e, "LD_PRELOAD=", 11) || !strncmp(*e, "LOOM_", 5) || !strncmp(*e, "UCX_", 4);
    for (const char* w = extra; w && *w && !show; w += strcspn(w, " ")) {
      w += strspn(w, " ");
      show = strcspn(w, " ") == len && len && !strncmp(w, *e, len);
    }
    if (show) n += snprintf(line + n, LINE - n, " %s", *e);
  }
  char* all = me == 0 ? malloc((size_t)LINE * size) : NULL;
  MPI_Gather(line, LINE, MPI_CHAR, all, LINE, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (me == 0) {
    for (int r = 0; r < size; r++) printf("%s\n", all + (size_t)r * LINE);
    fflush(stdout);
    free(all);
  }
  return 0;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me, size, rc = 2;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  sched_getaffinity(0, sizeof allowed, &allowed);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  if (argc == 4 && !strcmp(argv[1], "check"))
    rc = check(me, size, node, atof(argv[2]), atof(argv[3]));
  else if (argc == 2 && !strcmp(argv[1], "hello"))
    rc = hello(me, size, node);
  else if (me == 0)
    fprintf(stderr, "usage: bandwidth check MBPS TOLERANCE | bandwidth hello\n");
  MPI_Comm_free(&node);
  MPI_Finalize();
  return rc;
}
