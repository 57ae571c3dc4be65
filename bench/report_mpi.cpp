// The part of the report helpers that asks the host MPI and Loom about the run; the rest
// (report.cpp) has no MPI dependency, so MPI-free tools such as loom-gpu-bench share it.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "bench/report.hpp"
#include "loom/loom.h"
#include "ops/method.hpp"

namespace loom::bench {

namespace {

// The host's whole MPI_Get_library_version text on one line: what a result records beside the
// short name, so that a build of the host can be told from another of the same version.
std::string host_mpi_banner() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string banner(text, static_cast<size_t>(std::max(length, 0)));
  for (char& c : banner)
    if (c == '\n' || c == '\t' || c == '\r') c = ' ';
  while (!banner.empty() && (banner.back() == ' ' || banner.back() == '\0')) banner.pop_back();
  return banner;
}

}  // namespace

JsonWriter begin_json_report(const JsonRunHeader& header, const SamplingOptions& opt) {
  JsonWriter j;
  j.begin_object();
  j.field("subcommand", header.subcommand);
  j.begin_object("mpi");
  j.field("name", mpi::host_mpi_version());
  j.field("library_version", host_mpi_banner());
  if (header.ranks) j.field("ranks", *header.ranks);
  if (!header.process_grid.empty()) {
    j.begin_array("dims");
    for (int dim : header.process_grid) j.field(nullptr, dim);
    j.end_array();
  }
  j.end_object();
  j.begin_object("loom");
  j.field("active", loom_is_active() != 0);
  j.end_object();
  j.begin_object("machine");
  for (const auto& [key, value] : header.machine) j.field(key, value);
  j.field("cpus", static_cast<int64_t>(sysconf(_SC_NPROCESSORS_ONLN)));
  j.end_object();
  j.begin_object("options");
  j.field("quick", opt.quick);
  return j;
}

MpiRun start_mpi_run(int* argc, char*** argv, ThreadLevel level) {
  if (level == ThreadLevel::Default) {
    MPI_Init(argc, argv);
  } else {
    int provided = 0;
    MPI_Init_thread(argc, argv,
                    level == ThreadLevel::Multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE,
                    &provided);
  }
  MpiRun run;
  MPI_Query_thread(&run.thread_level);
  MPI_Comm_rank(MPI_COMM_WORLD, &run.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &run.ranks);
  run.host_mpi = mpi::host_mpi_version();
  run.loom_active = loom_is_active() != 0;
  return run;
}

int MpiRun::refuse(int exit_code, const std::string& why) const {
  if (rank == 0) std::fputs(why.c_str(), stderr);
  return exit_code;
}

void finish_mpi_run() {
  MPI_Finalize();
}

void note_if_loom_inactive(const MpiRun& run, const char* consequence) {
  if (!run.loom_active)
    std::printf("NOTE: Loom is INACTIVE (LOOM_DISABLE=1, or libloom not interposed): %s",
                consequence);
}

}  // namespace loom::bench
