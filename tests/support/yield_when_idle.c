/* Test-only: MPICH 4.0's ch4:ucx device waits by calling ucp_worker_progress() in a loop that
 * never yields the core. With more ranks than cores (the test suites run up to 8 ranks on this
 * machine's 2) a waiting rank spins through its whole time slice while the rank it waits for
 * cannot run. Preloaded into MPICH's test ranks, this wrapper yields the core whenever a progress
 * call found nothing to do, as Open MPI does by itself when oversubscribed. It changes no MPI
 * semantics; Loom never loads it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stddef.h>

typedef unsigned (*progress_function)(void* worker);

unsigned ucp_worker_progress(void* worker) {
  static progress_function host_progress;
  if (host_progress == NULL) {
    host_progress = (progress_function)dlsym(RTLD_NEXT, "ucp_worker_progress");
  }
  unsigned events = host_progress(worker);
  if (events == 0) {
    sched_yield();
  }
  return events;
}
