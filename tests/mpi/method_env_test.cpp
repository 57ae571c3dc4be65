// The method choice under LOOM_METHOD and LOOM_CACHE_DIR. One process runs one --case, since
// Loom reads LOOM_METHOD and loads the calibration once per process. Before MPI_Init the test
// writes the case's calibration file (or a corrupt one, or none) into $LOOM_CACHE_DIR; then it
// captures stderr through MPI_Init and Loom's first decisions, so it can check that exactly the
// expected warning was printed, once.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "loom/loom.h"
#include "tests/mpi/gtest_mpi.hpp"
#include "tests/mpi/host_quirks.hpp"

namespace {

enum class Expect {
  ForcedHost,  // LOOM_METHOD=host
  ForcedPack,  // LOOM_METHOD=pack
  BuiltIn,     // no usable calibration: the built-in rule
  Calibrated,  // the test's calibration: pack on this node, host across nodes
};

struct Case {
  const char* name;
  const char* file;  // the calibration file's content, or null for none
  Expect expect;
  const char* warning;  // a substring of the one "loom:" line expected, or null for none
};

// Loom's pack path costs nanoseconds on this node and a whole second across nodes; the
// host's typed send a millisecond. So: Pack on this node, Host across nodes.
std::string calibration(const char* host_mpi, int version, const char* host_settings = nullptr) {
  const char* grid_1ns =
      R"([{"spread": 2, "block_bytes": [1, 4096], "message_bytes": [1024, 1048576],
           "seconds": [[1e-9, 1e-9], [1e-9, 1e-9]]}])";
  const char* grid_1ms =
      R"([{"spread": 2, "block_bytes": [1, 4096], "message_bytes": [1024, 1048576],
           "seconds": [[1e-3, 1e-3], [1e-3, 1e-3]]}])";
  const char* grid_1s =
      R"([{"spread": 2, "block_bytes": [1, 4096], "message_bytes": [1024, 1048576],
           "seconds": [[1, 1], [1, 1]]}])";
  std::ostringstream out;
  out << R"({"format": "loom-calibration", "version": )" << version << R"(, "host_mpi": ")"
      << host_mpi << R"(", "machine": "test", "other_node_measured": false, "pack": )" << grid_1ns
      << R"(, "unpack": )" << grid_1ns << R"(, "contiguous": {
        "same_node": {"message_bytes": [1024, 1048576], "seconds": [1e-9, 1e-9]},
        "other_node": {"message_bytes": [1024, 1048576], "seconds": [1, 1]}},
      "host_typed": {"same_node": )"
      << grid_1ms << R"(, "other_node": )" << grid_1ms << R"(},
      "host_typed_nested": {"same_node": )"
      << grid_1ms << R"(, "other_node": )" << grid_1ms << R"(},
      "loom_packed": {"same_node": )"
      << grid_1ns << R"(, "other_node": )" << grid_1s << "}";
  if (host_settings) out << R"(, "host_settings": ")" << host_settings << '"';
  out << "}";
  return out.str();
}

const std::string kCalibrated = calibration("Another MPI 0.0", 2);
const std::string kWrongVersion = calibration("Another MPI 0.0", 99);
// Measured with a transport setting this run does not have (the test never sets it).
const std::string kOtherSettings =
    calibration("Another MPI 0.0", 2, "MPIR_CVAR_LOOM_TEST_ONLY=1 OMPI_MCA_btl=self");
// The host_mpi Loom records for the running MPI is only known to Loom, so the calibrated
// case reuses a mismatching file: it is used, and with LOOM_VERBOSE=1 Loom says so. Every note
// about the calibration needs LOOM_VERBOSE (or LOOM_DEBUG, LOOM_STATS): the `-verbose` cases
// run with LOOM_VERBOSE=1 (tests/mpi/CMakeLists.txt), the others without.
const Case kCases[] = {
    {"forced-host", kCalibrated.c_str(), Expect::ForcedHost, nullptr},
    {"forced-pack", kCalibrated.c_str(), Expect::ForcedPack, nullptr},
    {"invalid-env", nullptr, Expect::BuiltIn, "LOOM_METHOD=bogus is not one of auto, host, pack"},
    {"builtin", nullptr, Expect::BuiltIn, nullptr},
    {"builtin-stats", nullptr, Expect::BuiltIn,
     "using built-in defaults (run `loom-bench measure`"},
    {"corrupt", "{\"format\": \"loom-calibration\", \"version\": 1, \"pack\": [", Expect::BuiltIn,
     nullptr},
    {"corrupt-verbose", "{\"format\": \"loom-calibration\", \"version\": 1, \"pack\": [",
     Expect::BuiltIn, "; using built-in defaults"},
    {"wrong-version", kWrongVersion.c_str(), Expect::BuiltIn, nullptr},
    {"wrong-version-verbose", kWrongVersion.c_str(), Expect::BuiltIn,
     "version 99 is not supported"},
    {"calibrated", kCalibrated.c_str(), Expect::Calibrated, nullptr},
    {"calibrated-verbose", kCalibrated.c_str(), Expect::Calibrated,
     "was measured with Another MPI 0.0"},
    {"other-settings", kOtherSettings.c_str(), Expect::BuiltIn, nullptr},
    {"other-settings-verbose", kOtherSettings.c_str(), Expect::BuiltIn,
     "it was measured with host settings 'MPIR_CVAR_LOOM_TEST_ONLY=1 OMPI_MCA_btl=self'"},
};

const Case* the_case = nullptr;
std::string calibration_file;  // where Loom must look
std::string captured;          // Loom's stderr during the first decisions

std::string host_family() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(text, &length);  // allowed before MPI_Init
  return std::strstr(text, "Open MPI") ? "openmpi" : "mpich";
}

struct Types {
  MPI_Datatype bytes_1;     // 1 B blocks, 1 KiB per element
  MPI_Datatype bytes_16;    // 16 B blocks, 64 B per element
  MPI_Datatype bytes_256;   // 256 B blocks, 64 KiB per element
  MPI_Datatype bytes_4096;  // 4 KiB blocks, 64 KiB per element
  MPI_Datatype dense;       // contiguous: never packed
  MPI_Datatype uncommitted;
};
Types types;

void make_types() {
  MPI_Type_vector(1024, 1, 2, MPI_BYTE, &types.bytes_1);
  MPI_Type_vector(4, 16, 32, MPI_BYTE, &types.bytes_16);
  MPI_Type_vector(256, 256, 512, MPI_BYTE, &types.bytes_256);
  MPI_Type_vector(16, 4096, 8192, MPI_BYTE, &types.bytes_4096);
  MPI_Type_contiguous(4096, MPI_BYTE, &types.dense);
  MPI_Type_vector(8, 1, 2, MPI_INT, &types.uncommitted);
  for (MPI_Datatype* t :
       {&types.bytes_1, &types.bytes_16, &types.bytes_256, &types.bytes_4096, &types.dense})
    MPI_Type_commit(t);
}

// Loom decides on first use; every query here runs with stderr going to a file.
// Loom reads the calibration in MPI_Init and warns there, or at the first decision: stderr is
// captured from before MPI_Init until after the first decisions.
int begin_stderr_capture() {
  std::fflush(stderr);
  const int saved = dup(2);
  const int file = open((calibration_file + ".stderr").c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  dup2(file, 2);
  close(file);
  return saved;
}

void end_stderr_capture(int saved) {
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  const std::string path = calibration_file + ".stderr";
  std::ifstream in(path);
  captured.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
}

void first_decisions() {
  for (int repeat = 0; repeat < 3; ++repeat)
    for (MPI_Datatype t : {types.bytes_1, types.bytes_256, types.bytes_4096})
      for (int same_node : {0, 1}) loom_method_for(t, 1 + repeat, same_node);
}

std::vector<std::string> loom_lines() {
  std::vector<std::string> lines;
  std::istringstream in(captured);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("loom:", 0) == 0) lines.push_back(line);
  return lines;
}

// What the case expects for `count` elements of a vector type with `block`-byte blocks.
int expected(int block, int64_t bytes, bool same_node) {
  switch (the_case->expect) {
    case Expect::ForcedHost:
      return LOOM_METHOD_HOST;
    case Expect::ForcedPack:
      return LOOM_METHOD_PACK;
    case Expect::BuiltIn:  // docs/model.md: block <= 16 B, or <= 256 B up to 64 KiB messages,
                           // except where the host's own engine is as fast (host_quirks.hpp)
      if (loom::test::kHostTypedAsFastFromBytes >= 0 &&
          bytes >= loom::test::kHostTypedAsFastFromBytes &&
          block > loom::test::kHostTypedAsFastAboveBlock)
        return LOOM_METHOD_HOST;
      return block <= 16 || (block <= 256 && bytes <= 65536) ? LOOM_METHOD_PACK : LOOM_METHOD_HOST;
    case Expect::Calibrated:
      return same_node ? LOOM_METHOD_PACK : LOOM_METHOD_HOST;
  }
  return -1;
}

TEST(MethodEnv, ExactlyTheExpectedWarningOnce) {
  const auto lines = loom_lines();
  for (const auto& line : lines) std::printf("captured: %s\n", line.c_str());
  if (!the_case->warning) {
    // Not only Loom's lines: nothing at all may reach stderr unasked.
    EXPECT_TRUE(captured.empty()) << "unexpected output on stderr:\n" << captured;
    return;
  }
  ASSERT_EQ(lines.size(), 1u) << "expected one warning containing '" << the_case->warning
                              << "', got:\n"
                              << captured;
  EXPECT_NE(lines[0].find(the_case->warning), std::string::npos) << lines[0];
  if (the_case->file) {  // a warning about a file names it
    EXPECT_NE(lines[0].find(calibration_file), std::string::npos) << lines[0];
  }
}

TEST(MethodEnv, DecisionsFollowTheSetting) {
  struct Query {
    MPI_Datatype type;
    int block, count;
    int64_t element_bytes;
  };
  const Query queries[] = {
      {types.bytes_1, 1, 1, 1024},        {types.bytes_1, 1, 1024, 1024},
      {types.bytes_16, 16, 1, 64},        {types.bytes_16, 16, 4, 64},
      {types.bytes_256, 256, 1, 65536},   {types.bytes_256, 256, 2, 65536},
      {types.bytes_4096, 4096, 1, 65536}, {types.bytes_4096, 4096, 16, 65536},
  };
  for (const Query& q : queries)
    for (int same_node : {1, 0}) {
      const int64_t bytes = q.count * q.element_bytes;
      EXPECT_EQ(loom_method_for(q.type, q.count, same_node), expected(q.block, bytes, same_node))
          << "block " << q.block << " bytes " << bytes << " same_node " << same_node;
    }
  // Whatever the setting: nothing to pack, or no plan, means the host.
  for (int same_node : {1, 0}) {
    EXPECT_EQ(loom_method_for(types.dense, 4, same_node), LOOM_METHOD_HOST);
    EXPECT_EQ(loom_method_for(types.uncommitted, 4, same_node), LOOM_METHOD_HOST);
    EXPECT_EQ(loom_method_for(types.bytes_1, 0, same_node), LOOM_METHOD_HOST);
  }
}

// The point-to-point layer follows the same decision: a message to this rank (same node)
// is counted as packed or as left to the host, and arrives intact either way.
TEST(MethodEnv, SendsFollowTheDecision) {
  const int elements = 4;
  std::vector<unsigned char> out(2 * 1024 * elements), in(out.size(), 0);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<unsigned char>(i * 7 + 1);
  loom_stats before, after;
  loom_get_stats(&before);
  MPI_Request request;
  ASSERT_EQ(MPI_Isend(out.data(), elements, types.bytes_1, 0, 5, MPI_COMM_SELF, &request),
            MPI_SUCCESS);
  ASSERT_EQ(MPI_Recv(in.data(), elements, types.bytes_1, 0, 5, MPI_COMM_SELF, MPI_STATUS_IGNORE),
            MPI_SUCCESS);
  ASSERT_EQ(MPI_Wait(&request, MPI_STATUS_IGNORE), MPI_SUCCESS);
  loom_get_stats(&after);
  // The host packs both buffers: the type's bytes must agree, whoever moved them.
  std::vector<unsigned char> sent(1024 * elements), received(sent.size());
  int position = 0;
  PMPI_Pack(out.data(), elements, types.bytes_1, sent.data(), static_cast<int>(sent.size()),
            &position, MPI_COMM_SELF);
  position = 0;
  PMPI_Pack(in.data(), elements, types.bytes_1, received.data(), static_cast<int>(received.size()),
            &position, MPI_COMM_SELF);
  EXPECT_EQ(sent, received);
  const bool packed = loom_method_for(types.bytes_1, elements, 1) == LOOM_METHOD_PACK;
  EXPECT_EQ(after.send_packed - before.send_packed, packed ? 1u : 0u);
  EXPECT_EQ(after.send_host - before.send_host, packed ? 0u : 1u);
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], "--case"))
      for (const Case& c : kCases)
        if (!std::strcmp(argv[i + 1], c.name)) the_case = &c;
  const char* dir = std::getenv("LOOM_CACHE_DIR");
  if (!the_case || !dir || !*dir) {
    std::fprintf(stderr, "usage: LOOM_CACHE_DIR=DIR %s --case NAME  (NAME:", argv[0]);
    for (const Case& c : kCases) std::fprintf(stderr, " %s", c.name);
    std::fprintf(stderr, ")\n");
    return 2;
  }
  std::filesystem::create_directories(dir);
  calibration_file = std::string(dir) + "/calibration-" + host_family() + ".json";
  std::filesystem::remove(calibration_file);
  if (the_case->file) std::ofstream(calibration_file) << the_case->file;

  const int saved_stderr = begin_stderr_capture();
  MPI_Init(&argc, &argv);
  make_types();
  first_decisions();
  end_stderr_capture(saved_stderr);
  return loom::test::run_tests_and_finalize(&argc, argv);
}
