// loom-sim-alltoall: MPI_Alltoall of a smooth double field, `--count` values to every peer,
// either the host's exchange (--variant raw) or Loom's compressed exchange with the codec of
// LOOM_COMPRESS (--variant compressed: ops/compressed_alltoall.cpp, as the interposer runs it
// for MPI_Alltoall). Timed per call (slowest rank's mean). Builds against a real MPI
// (measurements, reference results) and against SimGrid's SMPI (-DLOOM_SMPI=ON: projections;
// the codec's own time, measured as it runs, is charged to the simulated rank).
// docs/projection.md.
#include <mpi.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mpi/locality.hpp"
#include "ops/codec_slot.hpp"
#include "ops/compressed_alltoall.hpp"
#include "runtime/counters.hpp"

namespace {

struct Options {
  int count = 1 << 16, iterations = 5, warmup = 1;
  std::string variant = "compressed", dump;
};

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const char* v = argv[i + 1];
    if (a == "--count")
      o->count = std::atoi(v);
    else if (a == "--iterations")
      o->iterations = std::atoi(v);
    else if (a == "--warmup")
      o->warmup = std::atoi(v);
    else if (a == "--variant")
      o->variant = v;
    else if (a == "--dump")
      o->dump = v;
    else
      return false;
  }
  return argc % 2 == 1 && o->count > 0 && o->iterations >= 0 && o->warmup >= 0 &&
         (o->variant == "raw" || o->variant == "compressed");
}

// A smooth field, different for every (sender, receiver) block: what compresses.
void fill(std::vector<double>& send, int rank, int size, int count) {
  for (int p = 0; p < size; ++p)
    for (int i = 0; i < count; ++i) {
      const double x = static_cast<double>(i) + 977.0 * rank + 131.0 * p;
      send[static_cast<size_t>(p) * static_cast<size_t>(count) + static_cast<size_t>(i)] =
          300 + 20 * std::sin(x / 181.0) + 5 * std::cos(x / 53.0);
    }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Options o;
  if (!parse(argc, argv, &o)) {
    if (rank == 0)
      std::fprintf(stderr,
                   "usage: loom-sim-alltoall [--count VALUES_PER_PEER] [--iterations K] "
                   "[--warmup W] [--variant raw|compressed] [--dump DIR]\n");
    MPI_Finalize();
    return 2;
  }
  // What the interposer does at MPI_Init: which ranks share a node, the codec asked for.
  loom::mpi::learn_locality(MPI_COMM_WORLD);
  loom::ops::init_codec_slot();
  const size_t n = static_cast<size_t>(size) * static_cast<size_t>(o.count);
  std::vector<double> send(n), recv(n);
  fill(send, rank, size, o.count);
  int served = 1;
  const auto alltoall = [&] {
    int rc = MPI_SUCCESS;
    if (o.variant == "compressed" &&
        loom::ops::compressed_alltoall(send.data(), o.count, MPI_DOUBLE, recv.data(), o.count,
                                       MPI_DOUBLE, MPI_COMM_WORLD, nullptr, &rc))
      return rc;
    served = 0;
    return MPI_Alltoall(send.data(), o.count, MPI_DOUBLE, recv.data(), o.count, MPI_DOUBLE,
                        MPI_COMM_WORLD);
  };
  for (int i = 0; i < o.warmup; ++i) alltoall();
  // Each call's time is its slowest rank's; the mean and the best of them are reported (on a
  // shared machine the best is the one no rank lost its core during).
  double slowest = 0, best = 0;
  for (int i = 0; i < o.iterations; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    if (alltoall() != MPI_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 1);
    double t = MPI_Wtime() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    slowest += t / o.iterations;
    best = i == 0 ? t : std::min(best, t);
  }
  int all_served = 0;
  MPI_Reduce(&served, &all_served, 1, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD);
  double bytes[2] = {static_cast<double>(loom::runtime::total(loom::ops::kCompressRawBytes)),
                     static_cast<double>(loom::runtime::total(loom::ops::kCompressWireBytes))};
  double all_bytes[2] = {0, 0};
  MPI_Reduce(bytes, all_bytes, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  // Largest difference from what was sent: the codec's error, 0 raw. The block from p is what
  // p's fill put at this rank's place.
  double error = 0, worst = 0;
  std::vector<double> theirs(static_cast<size_t>(o.count));
  for (int p = 0; p < size; ++p) {
    for (int i = 0; i < o.count; ++i) {
      const double x = static_cast<double>(i) + 977.0 * p + 131.0 * rank;
      theirs[static_cast<size_t>(i)] = 300 + 20 * std::sin(x / 181.0) + 5 * std::cos(x / 53.0);
    }
    const double* got = recv.data() + static_cast<size_t>(p) * static_cast<size_t>(o.count);
    for (int i = 0; i < o.count; ++i)
      error = std::fmax(error, std::fabs(got[i] - theirs[static_cast<size_t>(i)]));
  }
  MPI_Reduce(&error, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (!o.dump.empty()) {
    char name[512];
    std::snprintf(name, sizeof name, "%s/alltoall-%d.bin", o.dump.c_str(), rank);
    if (FILE* out = std::fopen(name, "wb")) {
      std::fwrite(recv.data(), sizeof(double), n, out);
      std::fclose(out);
    }
  }
  if (rank == 0) {
    const char* codec = std::getenv("LOOM_COMPRESS");
    std::printf(
        "loom-sim-alltoall variant=%s codec=%s ranks=%d count=%d iterations=%d "
        "seconds_per_call=%.9g best_seconds=%.9g path=%s raw_bytes=%.0f wire_bytes=%.0f "
        "max_abs_error=%.3g\n",
        o.variant.c_str(), codec ? codec : "none", size, o.count, o.iterations, slowest, best,
        all_served ? "compressed" : "host", all_bytes[0], all_bytes[1], worst);
  }
  MPI_Finalize();
  return 0;
}
