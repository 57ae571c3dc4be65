// Compressed all-to-alls (ops/compressed_alltoall.hpp, docs/compress.md): every call's result
// against the host's own MPI_Alltoall(v) on the same data, exact for lossless codecs and within
// the codec's bound on every value for the bounded ones; and which path each call took,
// through loom_get_stats. The mode (--mode) says what the environment requested:
//   compressed  LOOM_COMPRESS is a good spec and every rank is its own node (compressed path)
//   shared      LOOM_COMPRESS is a good spec, every rank on this node (threshold: host)
//   bad         LOOM_COMPRESS is not a spec (uncompressed, counted)
//   hint        LOOM_COMPRESS unset, every rank its own node: only hinted communicators compress
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "codec/codec.hpp"
#include "loom/loom.h"
#include "tests/mpi/gtest_mpi.hpp"

namespace {

std::string mode;

int rank_of(MPI_Comm comm) {
  int r = 0;
  MPI_Comm_rank(comm, &r);
  return r;
}
int size_of(MPI_Comm comm) {
  int s = 0;
  MPI_Comm_size(comm, &s);
  return s;
}

loom_stats stats() {
  loom_stats s;
  loom_get_stats(&s);
  return s;
}

// The codec bound for a spec (none: exact).
loom::codec::ErrorBound bound_of(const char* text) {
  if (!text || !*text) return {};
  auto spec = loom::codec::parse_spec(text);
  if (!spec) return {};
  auto codec = loom::codec::make_codec(*spec);
  return codec ? codec->error_bound() : loom::codec::ErrorBound{};
}

loom::codec::ErrorBound env_bound() {
  return bound_of(std::getenv("LOOM_COMPRESS"));
}

// A smooth value with noise, different for each sender, peer and index.
double value(int sender, int peer, size_t i) {
  const double x = static_cast<double>(i);
  const uint32_t h = static_cast<uint32_t>(i * 2654435761u + static_cast<uint32_t>(sender) * 97u +
                                           static_cast<uint32_t>(peer) * 13u);
  return 10 * std::sin(x / 37.0 + sender) + std::cos(x / 101.0 + peer) +
         1e-3 * static_cast<double>(h % 1000) / 1000.0;
}

template <typename T>
void expect_within(const std::vector<T>& expected, const std::vector<T>& got,
                   loom::codec::ErrorBound bound, const char* what) {
  ASSERT_EQ(expected.size(), got.size());
  size_t bad = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    const double x = expected[i], y = got[i];
    bool ok;
    switch (bound.kind) {
      case loom::codec::ErrorBound::Kind::Absolute:
        ok = std::fabs(x - y) <= bound.value;
        break;
      case loom::codec::ErrorBound::Kind::Relative:
        ok = std::fabs(x - y) <= bound.value * std::fabs(x);
        break;
      case loom::codec::ErrorBound::Kind::Unbounded:
        ok = std::isfinite(y);
        break;
      default:
        ok = std::memcmp(&expected[i], &got[i], sizeof(T)) == 0;
        break;
    }
    if (!ok && bad++ < 5)
      ADD_FAILURE() << what << ": value " << i << " expected " << x << " got " << y;
  }
  EXPECT_EQ(bad, 0u) << what;
}

// Counts sent from `sender` to `peer` in the v tests: zeros included.
int vcount(int sender, int peer, int salt) {
  const uint32_t h = static_cast<uint32_t>(sender * 7919 + peer * 104729 + salt * 31337);
  const uint32_t r = (h * 2654435761u) >> 16;
  return r % 4 == 0 ? 0 : static_cast<int>(r % 5000);
}

// What the path of a call on `comm` with compression requested should be.
bool expect_compressed(MPI_Comm comm, bool requested) {
  return requested && mode != "shared" && size_of(comm) > 1;
}

template <typename T>
MPI_Datatype mpi_type() {
  return sizeof(T) == 4 ? MPI_FLOAT : MPI_DOUBLE;
}

// One MPI_Alltoall (blocking, non-blocking or in place) against the host's.
template <typename T>
void alltoall_case(MPI_Comm comm, int count, int form, loom::codec::ErrorBound bound,
                   bool requested) {
  const int me = rank_of(comm), n = size_of(comm);
  std::vector<T> send(static_cast<size_t>(count) * n), expected(send.size()),
      got(send.size(), T(-7));
  for (int p = 0; p < n; ++p)
    for (int i = 0; i < count; ++i)
      send[static_cast<size_t>(p) * count + i] = static_cast<T>(value(me, p, i));
  ASSERT_EQ(
      PMPI_Alltoall(send.data(), count, mpi_type<T>(), expected.data(), count, mpi_type<T>(), comm),
      MPI_SUCCESS);
  const loom_stats before = stats();
  if (form == 0) {
    ASSERT_EQ(
        MPI_Alltoall(send.data(), count, mpi_type<T>(), got.data(), count, mpi_type<T>(), comm),
        MPI_SUCCESS);
  } else if (form == 1) {
    MPI_Request request;
    ASSERT_EQ(MPI_Ialltoall(send.data(), count, mpi_type<T>(), got.data(), count, mpi_type<T>(),
                            comm, &request),
              MPI_SUCCESS);
    int done = 0;
    ASSERT_EQ(MPI_Test(&request, &done, MPI_STATUS_IGNORE), MPI_SUCCESS);
    if (!done) {
      ASSERT_EQ(MPI_Wait(&request, MPI_STATUS_IGNORE), MPI_SUCCESS);
    }
    EXPECT_EQ(request, MPI_REQUEST_NULL);
  } else {
    got = send;
    ASSERT_EQ(
        MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, got.data(), count, mpi_type<T>(), comm),
        MPI_SUCCESS);
  }
  const loom_stats after = stats();
  // The own block is always exact.
  for (int i = 0; i < count; ++i)
    ASSERT_EQ(got[static_cast<size_t>(me) * count + i],
              expected[static_cast<size_t>(me) * count + i]);
  expect_within(expected, got, bound, "alltoall");
  if (expect_compressed(comm, requested)) {
    EXPECT_EQ(after.compress_calls, before.compress_calls + 1);
  } else {
    EXPECT_EQ(after.compress_calls, before.compress_calls);
  }
}

// One MPI_Alltoallv with counts including zeros and gaps between blocks.
template <typename T>
void alltoallv_case(MPI_Comm comm, int salt, int form, loom::codec::ErrorBound bound,
                    bool requested) {
  const int me = rank_of(comm), n = size_of(comm);
  std::vector<int> scounts(n), sdispls(n), rcounts(n), rdispls(n);
  int stotal = 0, rtotal = 0;
  for (int p = 0; p < n; ++p) {
    scounts[p] = vcount(me, p, salt);
    rcounts[p] = vcount(p, me, salt);
    sdispls[p] = stotal + 3;
    rdispls[p] = rtotal + 5;
    stotal += scounts[p] + 3;
    rtotal += rcounts[p] + 5;
  }
  std::vector<T> send(static_cast<size_t>(stotal)), expected(static_cast<size_t>(rtotal), T(-3)),
      got(expected.size(), T(-3));
  for (int p = 0; p < n; ++p)
    for (int i = 0; i < scounts[p]; ++i) send[sdispls[p] + i] = static_cast<T>(value(me, p, i));
  ASSERT_EQ(PMPI_Alltoallv(send.data(), scounts.data(), sdispls.data(), mpi_type<T>(),
                           expected.data(), rcounts.data(), rdispls.data(), mpi_type<T>(), comm),
            MPI_SUCCESS);
  const loom_stats before = stats();
  if (form == 0) {
    ASSERT_EQ(MPI_Alltoallv(send.data(), scounts.data(), sdispls.data(), mpi_type<T>(), got.data(),
                            rcounts.data(), rdispls.data(), mpi_type<T>(), comm),
              MPI_SUCCESS);
  } else {
    MPI_Request request;
    ASSERT_EQ(MPI_Ialltoallv(send.data(), scounts.data(), sdispls.data(), mpi_type<T>(), got.data(),
                             rcounts.data(), rdispls.data(), mpi_type<T>(), comm, &request),
              MPI_SUCCESS);
    ASSERT_EQ(MPI_Wait(&request, MPI_STATUS_IGNORE), MPI_SUCCESS);
  }
  const loom_stats after = stats();
  expect_within(expected, got, bound, "alltoallv");
  EXPECT_EQ(after.compress_calls,
            before.compress_calls + (expect_compressed(comm, requested) ? 1 : 0));
}

// In place, v form: every block is symmetric in size.
void alltoallv_in_place(MPI_Comm comm, loom::codec::ErrorBound bound) {
  const int me = rank_of(comm), n = size_of(comm);
  std::vector<int> counts(n), displs(n);
  int total = 0;
  for (int p = 0; p < n; ++p) {
    counts[p] = 100 + 37 * ((me + p) % 5);  // the same from me to p as from p to me
    displs[p] = total;
    total += counts[p];
  }
  std::vector<float> mine(static_cast<size_t>(total)), expected(mine.size());
  for (int p = 0; p < n; ++p)
    for (int i = 0; i < counts[p]; ++i) mine[displs[p] + i] = static_cast<float>(value(me, p, i));
  ASSERT_EQ(PMPI_Alltoallv(mine.data(), counts.data(), displs.data(), MPI_FLOAT, expected.data(),
                           counts.data(), displs.data(), MPI_FLOAT, comm),
            MPI_SUCCESS);
  std::vector<float> got = mine;
  ASSERT_EQ(MPI_Alltoallv(MPI_IN_PLACE, nullptr, nullptr, MPI_DATATYPE_NULL, got.data(),
                          counts.data(), displs.data(), MPI_FLOAT, comm),
            MPI_SUCCESS);
  expect_within(expected, got, bound, "alltoallv in place");
}

// Every case on one communicator.
void all_cases(MPI_Comm comm, loom::codec::ErrorBound bound, bool requested) {
  for (int count : {0, 1, 7, 1000, 70000})
    for (int form : {0, 1, 2}) {
      SCOPED_TRACE("count " + std::to_string(count) + " form " + std::to_string(form));
      alltoall_case<float>(comm, count, form, bound, requested);
      alltoall_case<double>(comm, count, form, bound, requested);
    }
  for (int salt = 0; salt < 4; ++salt)
    for (int form : {0, 1}) {
      SCOPED_TRACE("salt " + std::to_string(salt) + " form " + std::to_string(form));
      alltoallv_case<float>(comm, salt, form, bound, requested);
      alltoallv_case<double>(comm, salt, form, bound, requested);
    }
  alltoallv_in_place(comm, bound);
}

bool env_requested() {
  return mode == "compressed" || mode == "shared";
}

TEST(Compress, EveryFormWithinTheBound) {
  all_cases(MPI_COMM_WORLD, env_bound(), env_requested());
  const loom_stats s = stats();
  if (mode == "compressed" && size_of(MPI_COMM_WORLD) > 1) {
    EXPECT_GT(s.compress_calls, 0u);
    EXPECT_GT(s.compress_raw_bytes, 0u);
    EXPECT_GT(s.compress_seconds, 0.0);
  }
  if (mode == "shared") {
    EXPECT_EQ(s.compress_calls, 0u);
    EXPECT_GT(s.compress_host_threshold, 0u);
  }
  if (mode == "bad") {
    EXPECT_EQ(s.compress_calls, 0u);
    EXPECT_GE(s.compress_bad_spec, 1u);
  }
}

TEST(Compress, SmoothDataShrinks) {
  if (mode != "compressed" || size_of(MPI_COMM_WORLD) < 2) GTEST_SKIP();
  const loom_stats before = stats();
  alltoall_case<float>(MPI_COMM_WORLD, 1 << 18, 0, env_bound(), true);
  const loom_stats after = stats();
  const uint64_t raw = after.compress_raw_bytes - before.compress_raw_bytes;
  const uint64_t wire = after.compress_wire_bytes - before.compress_wire_bytes;
  EXPECT_EQ(raw, (uint64_t{1} << 18) * 4 * static_cast<uint64_t>(size_of(MPI_COMM_WORLD) - 1));
  EXPECT_LT(wire, raw);
}

TEST(Compress, RandomBitsGoRaw) {
  if (mode != "compressed" || size_of(MPI_COMM_WORLD) < 2) GTEST_SKIP();
  const int n = size_of(MPI_COMM_WORLD), count = 3 << 16;  // 3 chunks
  std::vector<uint32_t> bits(static_cast<size_t>(count) * n), got(bits.size()),
      expected(bits.size());
  uint64_t state = 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(rank_of(MPI_COMM_WORLD));
  for (auto& b : bits) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    b = static_cast<uint32_t>(state >> 32);
  }
  ASSERT_EQ(PMPI_Alltoall(bits.data(), count, MPI_FLOAT, expected.data(), count, MPI_FLOAT,
                          MPI_COMM_WORLD),
            MPI_SUCCESS);
  const loom_stats before = stats();
  ASSERT_EQ(
      MPI_Alltoall(bits.data(), count, MPI_FLOAT, got.data(), count, MPI_FLOAT, MPI_COMM_WORLD),
      MPI_SUCCESS);
  const loom_stats after = stats();
  const uint64_t raw = after.compress_raw_bytes - before.compress_raw_bytes;
  const uint64_t wire = after.compress_wire_bytes - before.compress_wire_bytes;
  // The call's probe did not shrink: every chunk went raw, byte for byte.
  if (env_bound().kind == loom::codec::ErrorBound::Kind::Exact) {
    EXPECT_EQ(wire, raw);
    EXPECT_EQ(got, expected);
  }
}

// A block whose first chunk compresses and whose later chunks do not: chunk by chunk, the
// incompressible ones raw, every value exact.
TEST(Compress, CompressibleThenRandomChunks) {
  if (mode != "compressed" || size_of(MPI_COMM_WORLD) < 2) GTEST_SKIP();
  if (env_bound().kind != loom::codec::ErrorBound::Kind::Exact) GTEST_SKIP();
  const int n = size_of(MPI_COMM_WORLD), count = 3 << 16;  // 3 chunks of the default size
  std::vector<uint32_t> bits(static_cast<size_t>(count) * n), got(bits.size()),
      expected(bits.size());
  uint64_t state = 0x2545f4914f6cdd1dull + static_cast<uint64_t>(rank_of(MPI_COMM_WORLD));
  for (size_t i = 0; i < bits.size(); ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const bool smooth = i % static_cast<size_t>(count) < (1u << 16);
    const float f = 1.0f + static_cast<float>(i % 1000) / 1000.0f;
    uint32_t u = 0;
    std::memcpy(&u, &f, 4);
    bits[i] = smooth ? u : static_cast<uint32_t>(state >> 32);
  }
  ASSERT_EQ(PMPI_Alltoall(bits.data(), count, MPI_FLOAT, expected.data(), count, MPI_FLOAT,
                          MPI_COMM_WORLD),
            MPI_SUCCESS);
  const loom_stats before = stats();
  ASSERT_EQ(
      MPI_Alltoall(bits.data(), count, MPI_FLOAT, got.data(), count, MPI_FLOAT, MPI_COMM_WORLD),
      MPI_SUCCESS);
  const loom_stats after = stats();
  EXPECT_LT(after.compress_wire_bytes - before.compress_wire_bytes,
            after.compress_raw_bytes - before.compress_raw_bytes);
  EXPECT_EQ(got, expected);
}

TEST(Compress, DerivedFloatTypes) {
  // contiguous(3, MPI_FLOAT) on the send side, a vector of floats on the receive side: both
  // made only of floats, so the compressed path packs them.
  MPI_Comm comm = MPI_COMM_WORLD;
  const int me = rank_of(comm), n = size_of(comm), blocks = 500;
  MPI_Datatype triple, strided;
  MPI_Type_contiguous(3, MPI_FLOAT, &triple);
  MPI_Type_commit(&triple);
  MPI_Type_vector(blocks * 3, 1, 2, MPI_FLOAT, &strided);
  MPI_Type_commit(&strided);
  MPI_Aint lb, extent;
  MPI_Type_get_extent(strided, &lb, &extent);
  std::vector<float> send(static_cast<size_t>(blocks) * 3 * n);
  for (size_t i = 0; i < send.size(); ++i) send[i] = static_cast<float>(value(me, 0, i));
  std::vector<float> expected(static_cast<size_t>(n) * blocks * 6, -1.f), got(expected);
  ASSERT_EQ(PMPI_Alltoall(send.data(), blocks, triple, expected.data(), 1, strided, comm),
            MPI_SUCCESS);
  const loom_stats before = stats();
  ASSERT_EQ(MPI_Alltoall(send.data(), blocks, triple, got.data(), 1, strided, comm), MPI_SUCCESS);
  const loom_stats after = stats();
  expect_within(expected, got, env_bound(), "derived");
  EXPECT_EQ(after.compress_calls,
            before.compress_calls + (expect_compressed(comm, env_requested()) ? 1 : 0));
  MPI_Type_free(&triple);
  MPI_Type_free(&strided);
}

TEST(Compress, NonFloatDataGoesToTheHost) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int n = size_of(comm);
  std::vector<int> send(static_cast<size_t>(n) * 100, rank_of(comm)), got(send.size());
  const loom_stats before = stats();
  ASSERT_EQ(MPI_Alltoall(send.data(), 100, MPI_INT, got.data(), 100, MPI_INT, comm), MPI_SUCCESS);
  const loom_stats after = stats();
  for (int p = 0; p < n; ++p) EXPECT_EQ(got[static_cast<size_t>(p) * 100], p);
  EXPECT_EQ(after.compress_calls, before.compress_calls);
  EXPECT_EQ(after.compress_host_type, before.compress_host_type + (env_requested() ? 1u : 0u));
}

// The loom_compress hint: one communicator compressed with its own codec, the others as the
// environment says; a bad hint is refused through the error handler and leaves it uncompressed.
TEST(Compress, InfoHintPerCommunicator) {
  MPI_Comm hinted, plain;
  MPI_Comm_dup(MPI_COMM_WORLD, &hinted);
  MPI_Comm_dup(MPI_COMM_WORLD, &plain);
  MPI_Comm_set_errhandler(hinted, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(plain, MPI_ERRORS_RETURN);
  MPI_Info info;
  MPI_Info_create(&info);
  const char* spec = "zfp:accuracy=1e-4";
  MPI_Info_set(info, "loom_compress", spec);
  ASSERT_EQ(MPI_Comm_set_info(hinted, info), MPI_SUCCESS);
  MPI_Info_free(&info);
  const bool hinted_compresses = true;       // a good hint works even under a bad LOOM_COMPRESS
  for (int round = 0; round < 2; ++round) {  // mixed, interleaved
    const loom_stats before = stats();
    alltoall_case<float>(hinted, 3000, round, bound_of(spec), true);
    const loom_stats mid = stats();
    alltoall_case<float>(plain, 3000, round, env_bound(), env_requested());
    const loom_stats after = stats();
    if (size_of(MPI_COMM_WORLD) > 1 && mode != "shared" && hinted_compresses) {
      EXPECT_EQ(mid.compress_calls, before.compress_calls + 1);
    }
    EXPECT_EQ(after.compress_calls,
              mid.compress_calls + (expect_compressed(plain, env_requested()) ? 1 : 0));
  }
  // A bad value: MPI_ERR_INFO_VALUE through the handler, counted, and no compression after.
  MPI_Info bad;
  MPI_Info_create(&bad);
  MPI_Info_set(bad, "loom_compress", "zfp:rate=0");
  const loom_stats before = stats();
  int rc = MPI_Comm_set_info(hinted, bad);
  MPI_Info_free(&bad);
  int error_class = MPI_SUCCESS;
  MPI_Error_class(rc, &error_class);
  EXPECT_EQ(error_class, MPI_ERR_INFO_VALUE);
  EXPECT_EQ(stats().compress_bad_spec, before.compress_bad_spec + 1);
  alltoall_case<float>(hinted, 3000, 0, {}, false);
  // "none" switches a communicator off whatever the environment says.
  MPI_Info off;
  MPI_Info_create(&off);
  MPI_Info_set(off, "loom_compress", "none");
  ASSERT_EQ(MPI_Comm_set_info(plain, off), MPI_SUCCESS);
  MPI_Info_free(&off);
  alltoall_case<double>(plain, 3000, 0, {}, false);
  MPI_Comm_free(&hinted);
  MPI_Comm_free(&plain);
}

// Communicators made and freed again and again: the private duplicate goes with them.
TEST(Compress, CommunicatorLifetime) {
  for (int i = 0; i < 20; ++i) {
    MPI_Comm comm;
    MPI_Comm_split(MPI_COMM_WORLD, rank_of(MPI_COMM_WORLD) % 2, 0, &comm);
    alltoall_case<float>(comm, 257, i % 3, env_bound(), env_requested());
    MPI_Comm_free(&comm);
  }
}

}  // namespace

int main(int argc, char** argv) {
  mode = loom::test::mode_argument(argc, argv, "compressed");
  MPI_Init(&argc, &argv);
  return loom::test::run_tests_and_finalize(&argc, argv);
}
