// The harness of the point-to-point tests (p2p_*_test.cpp, one binary per chapter of the
// standard; p2p_main.cpp is their main()): the two ways of calling MPI, the record of one run
// of a communication pattern and its comparison with the host's, the datatypes under test,
// send modes and completion calls, and the fixture every test uses.
//
// libloom is linked before libmpi: MPI_Send & co. reach Loom, PMPI_Send & co. the host. Every
// test runs one communication pattern twice, once entirely through PMPI_* (the reference) and
// once through MPI_*, and requires the same received bytes (whole buffers: gaps and margins are
// prefilled with a sentinel), the same status fields (source, tag, MPI_ERROR where the standard
// defines it, MPI_Get_count and MPI_Get_elements with the user's datatype, MPI_Test_cancelled),
// the same error classes and the same request handles left behind. Received data is also
// checked against what the sender sent, so a pattern that moves nothing cannot pass. Where the
// host itself is known to be wrong (HostDefect, narrowly), Loom must either do exactly what the
// host does (it left the case to the host) or be right.
//
// Ranks pair up as (0,1), (2,3), ...; some tests use the ring or all ranks. Every rank runs
// every test in the same order; nothing inside a communication pattern may return early.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "loom/loom.h"
#include "tests/mpi/gtest_mpi.hpp"
#include "tests/mpi/loom_env.hpp"
#include "tests/mpi/p2p_test_support.hpp"

namespace loom::test::p2p {

inline int partner() {
  return g_rank ^ 1;
}

// Both ranks of a pair have reached this point (cheaper than a barrier of all ranks).
inline void pair_handshake() {
  constexpr int kHandshakeTag = 32000;
  PMPI_Sendrecv(nullptr, 0, MPI_BYTE, partner(), kHandshakeTag, nullptr, 0, MPI_BYTE, partner(),
                kHandshakeTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

// ---------------------------------------------------------------------------------------------
// The two ways of calling MPI: the host directly (PMPI_*) and through Loom (MPI_*).

// clang-format off
#define P2P_FUNCTIONS(X)                                                                       \
  X(Send) X(Ssend) X(Rsend) X(Bsend) X(Isend) X(Issend) X(Irsend) X(Ibsend) X(Recv) X(Irecv)   \
  X(Sendrecv) X(Sendrecv_replace) X(Send_init) X(Ssend_init) X(Bsend_init) X(Rsend_init)      \
  X(Recv_init) X(Start) X(Startall) X(Probe) X(Iprobe) X(Mprobe) X(Improbe) X(Mrecv)          \
  X(Imrecv) X(Wait) X(Waitall) X(Waitany) X(Waitsome) X(Test) X(Testall) X(Testany)           \
  X(Testsome) X(Request_free) X(Request_get_status) X(Cancel) X(Get_count) X(Get_elements)    \
  X(Test_cancelled)
// clang-format on

struct Api {
  const char* name;
#define P2P_SLOT(fn) decltype(&::MPI_##fn) fn;
  P2P_FUNCTIONS(P2P_SLOT)
#undef P2P_SLOT
};

inline const Api kHost = {"host (PMPI_*)",
#define P2P_HOST_ENTRY(fn) &::PMPI_##fn,
                          P2P_FUNCTIONS(P2P_HOST_ENTRY)
#undef P2P_HOST_ENTRY
};

inline const Api kLoom = {"Loom (MPI_*)",
#define P2P_LOOM_ENTRY(fn) &::MPI_##fn,
                          P2P_FUNCTIONS(P2P_LOOM_ENTRY)
#undef P2P_LOOM_ENTRY
};

// Polling loops give the processor away between polls: with more ranks than cores, a spinning
// rank would hold up the very peer it waits for.
inline bool keep_polling(int rc, int flag) {
  if (rc != MPI_SUCCESS || flag) return false;
  std::this_thread::yield();
  return true;
}

// ---------------------------------------------------------------------------------------------
// Buffers, messages, statuses

constexpr int kUnset = -12345;  // prefilled status fields the MPI did not write

inline unsigned salt_of(int a, int b, int c) {
  return static_cast<unsigned>(a) * 7919u + static_cast<unsigned>(b) * 104729u +
         static_cast<unsigned>(c) * 31u + 17u;
}

// What a rank sends: `count` elements of `type` filled from `salt`. Every rank builds the same
// types, so a receiver computes what its peer sent.
inline Bytes message_of(MPI_Datatype type, int count, unsigned salt) {
  Buffer data(type, count);
  data.fill(salt);
  return packed_by_host(data.data(), count, type);
}

inline std::string first_difference(const Bytes& a, const Bytes& b) {
  if (a.size() != b.size())
    return "sizes " + std::to_string(a.size()) + " and " + std::to_string(b.size());
  std::size_t first = a.size(), differing = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] == b[i]) continue;
    if (first == a.size()) first = i;
    ++differing;
  }
  return std::to_string(differing) + " of " + std::to_string(a.size()) +
         " bytes differ, first at storage offset " + std::to_string(first) + " (" +
         std::to_string(a[first]) + " vs " + std::to_string(b[first]) + "; sentinel " +
         std::to_string(kSentinel) + ")";
}

inline MPI_Status fresh_status() {
  MPI_Status status;
  std::memset(&status, 0, sizeof status);
  status.MPI_SOURCE = kUnset;
  status.MPI_TAG = kUnset;
  status.MPI_ERROR = kUnset;
  return status;
}

inline int error_class(int code) {
  int cls = -1;
  PMPI_Error_class(code, &cls);
  return cls;
}

inline std::string error_name(int code) {
  if (code == kUnset) return "unset";
  if (code == MPI_SUCCESS) return "MPI_SUCCESS";
  int cls = -1;
  if (PMPI_Error_class(code, &cls) != MPI_SUCCESS) return "invalid code " + std::to_string(code);
  static const std::map<int, const char*> names = {
      {MPI_ERR_TRUNCATE, "MPI_ERR_TRUNCATE"}, {MPI_ERR_IN_STATUS, "MPI_ERR_IN_STATUS"},
      {MPI_ERR_PENDING, "MPI_ERR_PENDING"},   {MPI_ERR_COUNT, "MPI_ERR_COUNT"},
      {MPI_ERR_RANK, "MPI_ERR_RANK"},         {MPI_ERR_TAG, "MPI_ERR_TAG"},
      {MPI_ERR_TYPE, "MPI_ERR_TYPE"},         {MPI_ERR_REQUEST, "MPI_ERR_REQUEST"},
      {MPI_ERR_BUFFER, "MPI_ERR_BUFFER"},     {MPI_ERR_COMM, "MPI_ERR_COMM"},
      {MPI_ERR_ARG, "MPI_ERR_ARG"},           {MPI_ERR_OTHER, "MPI_ERR_OTHER"},
      {MPI_ERR_INTERN, "MPI_ERR_INTERN"}};
  const auto it = names.find(cls);
  return it != names.end() ? it->second : "error class " + std::to_string(cls);
}

// ---------------------------------------------------------------------------------------------
// One run of a communication pattern: everything observable, in the order it was observed.

class Record {
 public:
  explicit Record(const Api& which) : api(which) {}
  const Api& api;

  void fact(const std::string& label, const std::string& value) {
    (in_defect_ ? defect_facts_ : facts_).emplace_back(label, value);
  }
  // An absolute check (against what was sent, or what the standard says). Inside a host
  // defect it is only noted: the host run may fail it, and Loom's may if it did as the host.
  void check(bool ok, const std::string& what) {
    if (in_defect_) {
      if (!ok) defect_failures_.push_back(what);
      return;
    }
    EXPECT_TRUE(ok) << "rank " << g_rank << ", " << api.name << ": " << what;
  }
  void code(const std::string& label, int rc) { fact(label + ": return", error_name(rc)); }
  void request(const std::string& label, MPI_Request request) {
    fact(label + ": handle", request == MPI_REQUEST_NULL ? "MPI_REQUEST_NULL" : "a request");
  }
  // Every field of the status, and what MPI_Get_count, MPI_Get_elements and
  // MPI_Test_cancelled make of it with `type`. MPI_ERROR is compared only where the standard
  // defines it (`error_defined`): multiple-completion calls that returned MPI_ERR_IN_STATUS;
  // StatusFields checks that the other calls leave it alone.
  void status(const std::string& label, const MPI_Status& status, MPI_Datatype type,
              bool error_defined = false) {
    MPI_Status copy = status;
    int count = kUnset, elements = kUnset, cancelled = kUnset;
    const int count_rc = api.Get_count(&copy, type, &count);
    const int elements_rc = api.Get_elements(&copy, type, &elements);
    const int cancelled_rc = api.Test_cancelled(&copy, &cancelled);
    fact(label + ": status",
         "source=" + std::to_string(status.MPI_SOURCE) + " tag=" + std::to_string(status.MPI_TAG) +
             " error=" + (error_defined ? error_name(status.MPI_ERROR) : "-") +
             " count=" + std::to_string(count) + "(" + error_name(count_rc) +
             ") elements=" + std::to_string(elements) + "(" + error_name(elements_rc) +
             ") cancelled=" + std::to_string(cancelled) + "(" + error_name(cancelled_rc) + ")");
  }
  // A truncated receive's status. MPICH 4.0.2 leaves its count undefined (it differs between
  // identical runs), so there only source, tag, error and MPI_Test_cancelled are compared.
  void truncated_status(const std::string& label, const MPI_Status& status, MPI_Datatype type,
                        bool error_defined) {
    if (!kHostIsMpich) return this->status(label, status, type, error_defined);
    fact(label + ": source/tag",
         std::to_string(status.MPI_SOURCE) + "/" + std::to_string(status.MPI_TAG));
    if (error_defined) fact(label + ": MPI_ERROR", error_name(status.MPI_ERROR));
    cancelled_status(label, status);
  }
  // A cancelled or send request's status: only MPI_Test_cancelled is defined.
  void cancelled_status(const std::string& label, const MPI_Status& status) {
    MPI_Status copy = status;
    int cancelled = kUnset;
    api.Test_cancelled(&copy, &cancelled);
    fact(label + ": cancelled", std::to_string(cancelled));
  }
  void buffer(const std::string& label, const Buffer& buffer) {
    (in_defect_ ? defect_buffers_ : buffers_).emplace_back(label, buffer.bytes());
  }
  void enter_host_defect(bool on) { in_defect_ = on; }

  friend void expect_same(const Record& host, const Record& loom);
  // LOOM_P2P_TEST_VERBOSE=1: every fact of every run, for debugging a test.
  void print() const {
    for (const auto& [label, value] : facts_)
      std::fprintf(stderr, "[rank %d] %s: %s = %s\n", g_rank, api.name, label.c_str(),
                   value.c_str());
  }

 private:
  std::vector<std::pair<std::string, std::string>> facts_;
  std::vector<std::pair<std::string, Bytes>> buffers_;
  // What was observed inside HostDefect sections, kept apart.
  bool in_defect_ = false;
  std::vector<std::pair<std::string, std::string>> defect_facts_;
  std::vector<std::pair<std::string, Bytes>> defect_buffers_;
  std::vector<std::string> defect_failures_;
};

inline void expect_same(const Record& host, const Record& loom) {
  ASSERT_EQ(host.facts_.size(), loom.facts_.size()) << "rank " << g_rank << ": different runs";
  int reported = 0;
  for (std::size_t i = 0; i < host.facts_.size() && reported < 20; ++i) {
    const auto& [host_label, host_value] = host.facts_[i];
    const auto& [loom_label, loom_value] = loom.facts_[i];
    if (host_label == loom_label && host_value == loom_value) continue;
    ++reported;
    ADD_FAILURE() << "rank " << g_rank << ": " << host_label << "\n  host: " << host_value
                  << "\n  Loom: " << loom_value
                  << (host_label == loom_label ? "" : "\n  (Loom label: " + loom_label + ")");
  }
  ASSERT_EQ(host.buffers_.size(), loom.buffers_.size()) << "rank " << g_rank;
  for (std::size_t i = 0; i < host.buffers_.size() && reported < 20; ++i) {
    if (host.buffers_[i] == loom.buffers_[i]) continue;
    ++reported;
    ADD_FAILURE() << "rank " << g_rank << ": " << host.buffers_[i].first
                  << ": received buffer differs from the host's: "
                  << first_difference(host.buffers_[i].second, loom.buffers_[i].second);
  }
  // Where the host is known to be wrong, Loom may do the same (it left the case to the host);
  // if it does anything else, it must be right.
  if (host.defect_facts_ == loom.defect_facts_ && host.defect_buffers_ == loom.defect_buffers_)
    return;
  for (const std::string& failure : loom.defect_failures_)
    ADD_FAILURE() << "rank " << g_rank << ", " << loom.api.name
                  << " (a case the host gets wrong; Loom differs from it, and is wrong too): "
                  << failure;
}

// Runs `pattern` through the host, then through Loom, and compares what each observed. The
// barriers keep the two runs' messages apart.
inline void expect_same_as_host(const std::function<void(Record&)>& pattern) {
  Record host(kHost), loom(kLoom);
  pattern(host);
  PMPI_Barrier(MPI_COMM_WORLD);
  pattern(loom);
  PMPI_Barrier(MPI_COMM_WORLD);
  static const bool verbose = std::getenv("LOOM_P2P_TEST_VERBOSE") != nullptr;
  if (verbose) {
    host.print();
    loom.print();
  }
  expect_same(host, loom);
}

// A scope in which the host MPI is known to get the case wrong (when `applies`): both runs still
// happen, but Loom must either match the host or pass the absolute checks (Record::check).
class HostDefect {
 public:
  HostDefect(Record& rec, bool applies) : rec_(rec) { rec_.enter_host_defect(applies); }
  ~HostDefect() { rec_.enter_host_defect(false); }
  HostDefect(const HostDefect&) = delete;
  HostDefect& operator=(const HostDefect&) = delete;

 private:
  Record& rec_;
};

// Checks that `received` holds `before` with `message` unpacked into its first elements of
// `type`: the message's bytes where the typemap puts them, and nothing else changed. Partial
// elements are left to the comparison with the host.
inline void expect_delivered_into(Record& rec, const std::string& label, const Buffer& received,
                                  const Buffer& before, MPI_Datatype type, const Bytes& message) {
  Buffer expected = before;
  const int size = type_size(type);
  if (!message.empty()) {
    if (size == 0 || message.size() % static_cast<std::size_t>(size) != 0) return;
    const int elements = static_cast<int>(message.size() / static_cast<std::size_t>(size));
    unpack_by_host(message, expected.data(), elements, type);
  }
  const bool same = received.bytes() == expected.bytes();
  rec.check(same, label + ": not what was sent: " +
                      (same ? "" : first_difference(received.bytes(), expected.bytes())));
}

inline void expect_delivered(Record& rec, const std::string& label, const Buffer& received,
                             MPI_Datatype type, int capacity, const Bytes& message) {
  expect_delivered_into(rec, label, received, Buffer(type, capacity), type, message);
}

// ---------------------------------------------------------------------------------------------
// The datatypes under test, built on every rank in the same way.

struct TypeCase {
  std::string name;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Datatype basic = MPI_BYTE;  // the named type its typemap is made of (MPI_BYTE if mixed)
  int size = 0;
};

enum TypeIndex { kVector, kFace, kIndexedBlock, kStruct, kNegativeLb, kNested, kContiguous };
inline std::vector<TypeCase> g_types;

class TypeCorpus : public ::testing::Environment {
 public:
  void SetUp() override {
    MPI_Datatype t = MPI_DATATYPE_NULL;
    add("vector(40,2,5,int)", small_block_vector(), MPI_INT);
    add("subarray face(6x8x10 double, k=7)", grid_face(), MPI_DOUBLE);
    const int displacements[6] = {0, 5, 9, 20, 31, 40};
    MPI_Type_create_indexed_block(6, 3, displacements, MPI_FLOAT, &t);
    add("indexed_block(6x3 float)", t, MPI_FLOAT);
    add("struct{int;double[2];char[3];short} extent 40", padded_struct(), MPI_BYTE);
    add("resized(hindexed double at -48,-16,8; lb -64, extent 96)", negative_lb_doubles(),
        MPI_DOUBLE);
    // Five of the structs above, 56 bytes apart.
    MPI_Type_create_hvector(5, 1, 56, g_types[kStruct].type, &t);
    add("hvector(5 structs, stride 56)", t, MPI_BYTE);
    MPI_Type_contiguous(64, MPI_INT, &t);
    add("contiguous(64 int)", t, MPI_INT);
  }
  void TearDown() override {
    for (TypeCase& tc : g_types) MPI_Type_free(&tc.type);
    g_types.clear();
  }

 private:
  static void add(const char* name, MPI_Datatype type, MPI_Datatype basic) {
    EXPECT_EQ(MPI_Type_commit(&type), MPI_SUCCESS) << name;
    g_types.push_back({name, type, basic, type_size(type)});
  }
};

// MPICH 4.0.2 receives a contiguous message (MPI_PACKED or MPI_BYTE) of more than about 8 KiB
// into a struct of mixed basic types wrongly: MPI_ERR_TRUNCATE and only the first 8 KiB or so
// unpacked. Its own Bsend and Sendrecv_replace send such messages. It also fails a partial last
// element of such a struct with MPI_ERR_TRUNCATE. (In this corpus, mixed structs are the types
// whose basic type is MPI_BYTE.)
inline bool host_breaks_contiguous_into(const TypeCase& tc, std::size_t bytes) {
  return kHostIsMpich && tc.basic == MPI_BYTE && bytes > 8192;
}
inline bool host_breaks_partial_element_of(const TypeCase& tc) {
  return kHostIsMpich && tc.basic == MPI_BYTE;
}

// Elements of `tc` for about `bytes` packed bytes.
inline int count_for(const TypeCase& tc, std::size_t bytes) {
  return std::max(1, static_cast<int>(bytes / static_cast<std::size_t>(tc.size)));
}

constexpr std::size_t kMediumBytes = 64 << 10;   // around the hosts' eager limits
constexpr std::size_t kLargeBytes = 4200 << 10;  // the hosts' rendezvous path

// Counts a blocking send of each mode exchanges: none, one, a few, and a medium message; and a
// large one for two types (two modes each, to keep the run short): several MiB of the vector,
// 1 MiB of the face (whose extent is ten times its size).
inline std::vector<int> counts_for(const TypeCase& tc, bool with_large_vector,
                                   bool with_large_face) {
  std::vector<int> counts = {0, 1, 3, count_for(tc, kMediumBytes)};
  if (&tc == &g_types[kVector] && with_large_vector) counts.push_back(count_for(tc, kLargeBytes));
  if (&tc == &g_types[kFace] && with_large_face)
    counts.push_back(count_for(tc, std::size_t{1} << 20));
  return counts;
}

inline std::string describe(const TypeCase& tc, int count) {
  return std::to_string(count) + " x " + tc.name;
}

// ---------------------------------------------------------------------------------------------
// Send modes and completion calls

enum class Mode { Standard, Synchronous, Buffered, Ready };
constexpr Mode kModes[] = {Mode::Standard, Mode::Synchronous, Mode::Buffered, Mode::Ready};

inline const char* mode_name(Mode mode) {
  switch (mode) {
    case Mode::Standard:
      return "Send";
    case Mode::Synchronous:
      return "Ssend";
    case Mode::Buffered:
      return "Bsend";
    case Mode::Ready:
      return "Rsend";
  }
  return "?";
}

inline int send_blocking(const Api& api, Mode mode, const void* data, int count, MPI_Datatype type,
                         int dest, int tag) {
  switch (mode) {
    case Mode::Standard:
      return api.Send(data, count, type, dest, tag, MPI_COMM_WORLD);
    case Mode::Synchronous:
      return api.Ssend(data, count, type, dest, tag, MPI_COMM_WORLD);
    case Mode::Buffered:
      return api.Bsend(data, count, type, dest, tag, MPI_COMM_WORLD);
    case Mode::Ready:
      return api.Rsend(data, count, type, dest, tag, MPI_COMM_WORLD);
  }
  return MPI_ERR_OTHER;
}

inline const char* nonblocking_name(Mode mode) {
  switch (mode) {
    case Mode::Standard:
      return "Isend";
    case Mode::Synchronous:
      return "Issend";
    case Mode::Buffered:
      return "Ibsend";
    case Mode::Ready:
      return "Irsend";
  }
  return "?";
}

inline int send_nonblocking(const Api& api, Mode mode, const void* data, int count,
                            MPI_Datatype type, int dest, int tag, MPI_Request* request) {
  switch (mode) {
    case Mode::Standard:
      return api.Isend(data, count, type, dest, tag, MPI_COMM_WORLD, request);
    case Mode::Synchronous:
      return api.Issend(data, count, type, dest, tag, MPI_COMM_WORLD, request);
    case Mode::Buffered:
      return api.Ibsend(data, count, type, dest, tag, MPI_COMM_WORLD, request);
    case Mode::Ready:
      return api.Irsend(data, count, type, dest, tag, MPI_COMM_WORLD, request);
  }
  return MPI_ERR_OTHER;
}

inline int send_persistent(const Api& api, Mode mode, const void* data, int count,
                           MPI_Datatype type, int dest, int tag, MPI_Request* request) {
  switch (mode) {
    case Mode::Standard:
      return api.Send_init(data, count, type, dest, tag, MPI_COMM_WORLD, request);
    case Mode::Synchronous:
      return api.Ssend_init(data, count, type, dest, tag, MPI_COMM_WORLD, request);
    case Mode::Buffered:
      return api.Bsend_init(data, count, type, dest, tag, MPI_COMM_WORLD, request);
    case Mode::Ready:
      return api.Rsend_init(data, count, type, dest, tag, MPI_COMM_WORLD, request);
  }
  return MPI_ERR_OTHER;
}

// Space for `messages` buffered sends of `count` x `type`, exactly as the standard sizes it.
class AttachedBuffer {
 public:
  AttachedBuffer(MPI_Datatype type, int count, int messages) {
    int pack_size = 0;
    PMPI_Pack_size(count, type, MPI_COMM_WORLD, &pack_size);
    storage_.resize(static_cast<std::size_t>(messages) *
                    static_cast<std::size_t>(pack_size + MPI_BSEND_OVERHEAD));
    EXPECT_EQ(PMPI_Buffer_attach(storage_.data(), static_cast<int>(storage_.size())), MPI_SUCCESS);
  }
  ~AttachedBuffer() {
    void* address = nullptr;
    int size = 0;
    PMPI_Buffer_detach(&address, &size);  // waits until the buffered messages left
  }
  AttachedBuffer(const AttachedBuffer&) = delete;
  AttachedBuffer& operator=(const AttachedBuffer&) = delete;

 private:
  std::vector<char> storage_;
};

enum class Completion { Wait, Test, Waitall, Waitany, Waitsome, Testall, Testany, Testsome };
constexpr Completion kCompletions[] = {
    Completion::Wait,     Completion::Test,    Completion::Waitall, Completion::Waitany,
    Completion::Waitsome, Completion::Testall, Completion::Testany, Completion::Testsome};

inline const char* completion_name(Completion how) {
  switch (how) {
    case Completion::Wait:
      return "Wait";
    case Completion::Test:
      return "Test";
    case Completion::Waitall:
      return "Waitall";
    case Completion::Waitany:
      return "Waitany";
    case Completion::Waitsome:
      return "Waitsome";
    case Completion::Testall:
      return "Testall";
    case Completion::Testany:
      return "Testany";
    case Completion::Testsome:
      return "Testsome";
  }
  return "?";
}

// What one family of completion calls made of a request array. Which requests complete in
// which call depends on timing, so only per-request outcomes are comparable between runs.
struct Completed {
  std::vector<MPI_Status> statuses;  // per request; the fresh pattern where none was given
  std::vector<int> errors;  // per request: the call's return, or MPI_ERROR on MPI_ERR_IN_STATUS
  bool error_in_status = false;
};

inline Completed complete(const Api& api, Completion how, std::vector<MPI_Request>& requests) {
  const int n = static_cast<int>(requests.size());
  Completed out;
  out.statuses.assign(requests.size(), fresh_status());
  out.errors.assign(requests.size(), MPI_SUCCESS);
  auto spread = [&](int rc) {
    out.error_in_status = error_class(rc) == MPI_ERR_IN_STATUS;
    for (int i = 0; i < n; ++i)
      out.errors[i] = out.error_in_status ? out.statuses[i].MPI_ERROR : rc;
  };
  // Bounds the loops below even if an erroneous request were never released.
  const int max_completions = n + 1;
  switch (how) {
    case Completion::Wait:
      for (int i = 0; i < n; ++i) out.errors[i] = api.Wait(&requests[i], &out.statuses[i]);
      break;
    case Completion::Test:
      for (int i = 0; i < n; ++i) {
        int flag = 0, rc = MPI_SUCCESS;
        do rc = api.Test(&requests[i], &flag, &out.statuses[i]);
        while (keep_polling(rc, flag));
        out.errors[i] = rc;
      }
      break;
    case Completion::Waitall:
      spread(api.Waitall(n, requests.data(), out.statuses.data()));
      break;
    case Completion::Testall: {
      int flag = 0, rc = MPI_SUCCESS;
      do rc = api.Testall(n, requests.data(), &flag, out.statuses.data());
      while (keep_polling(rc, flag));
      spread(rc);
      break;
    }
    case Completion::Waitany:
    case Completion::Testany:
      for (int completions = 0; completions <= max_completions;) {
        int index = MPI_UNDEFINED, flag = 1;
        MPI_Status status = fresh_status();
        const int rc = how == Completion::Waitany
                           ? api.Waitany(n, requests.data(), &index, &status)
                           : api.Testany(n, requests.data(), &index, &flag, &status);
        if (index == MPI_UNDEFINED) {
          if (rc != MPI_SUCCESS || flag) break;  // nothing active any more
          std::this_thread::yield();             // Testany: nothing completed yet
          continue;
        }
        out.statuses[index] = status;
        out.errors[index] = rc;
        ++completions;
      }
      break;
    case Completion::Waitsome:
    case Completion::Testsome: {
      std::vector<int> indices(requests.size());
      std::vector<MPI_Status> statuses(requests.size());
      for (int completions = 0; completions <= max_completions;) {
        int outcount = 0;
        std::fill(statuses.begin(), statuses.end(), fresh_status());
        const int rc =
            how == Completion::Waitsome
                ? api.Waitsome(n, requests.data(), &outcount, indices.data(), statuses.data())
                : api.Testsome(n, requests.data(), &outcount, indices.data(), statuses.data());
        if (outcount == MPI_UNDEFINED) break;
        const bool in_status = error_class(rc) == MPI_ERR_IN_STATUS;
        out.error_in_status = out.error_in_status || in_status;
        for (int k = 0; k < outcount; ++k) {
          out.statuses[indices[k]] = statuses[k];
          out.errors[indices[k]] = in_status ? statuses[k].MPI_ERROR : rc;
        }
        completions += outcount;
        if (outcount == 0 && rc != MPI_SUCCESS) break;
        if (outcount == 0) std::this_thread::yield();  // Testsome: nothing completed yet
      }
      break;
    }
  }
  return out;
}

// What an entry of a request array is, for recording its status.
struct Slot {
  enum Kind {
    kReceive,
    kTruncated,  // a truncated receive: see Record::truncated_status
    kUndefined,  // sends and cancelled receives: only MPI_Test_cancelled is defined
                 // (StatusFields compares send statuses whole)
  };
  MPI_Datatype type;
  Kind kind;
};
inline Slot receive_slot(MPI_Datatype type) {
  return {type, Slot::kReceive};
}
inline Slot truncated_slot(MPI_Datatype type) {
  return {type, Slot::kTruncated};
}
inline Slot send_slot(MPI_Datatype type) {
  return {type, Slot::kUndefined};
}
inline Slot cancelled_slot(MPI_Datatype type) {
  return {type, Slot::kUndefined};
}
inline const Slot kNullSlot = {MPI_BYTE, Slot::kReceive};  // an empty status where one is given

inline void record_completion(Record& rec, const std::string& label, Completion how,
                              const Completed& done, const std::vector<MPI_Request>& requests,
                              const std::vector<Slot>& slots) {
  const std::string call = label + " " + completion_name(how);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const std::string item = call + " [" + std::to_string(i) + "]";
    const bool error_defined = done.error_in_status;
    switch (slots[i].kind) {
      case Slot::kReceive:
        rec.status(item, done.statuses[i], slots[i].type, error_defined);
        break;
      case Slot::kTruncated:
        rec.truncated_status(item, done.statuses[i], slots[i].type, error_defined);
        break;
      case Slot::kUndefined:
        rec.cancelled_status(item, done.statuses[i]);
        if (error_defined) rec.fact(item + ": MPI_ERROR", error_name(done.statuses[i].MPI_ERROR));
        break;
    }
    rec.fact(item + ": error", error_name(done.errors[i]));
    rec.request(item, requests[i]);
  }
  rec.fact(call + ": MPI_ERR_IN_STATUS", done.error_in_status ? "yes" : "no");
}

// ---------------------------------------------------------------------------------------------
// Every test ends by agreeing across ranks: a failure on any rank fails the test on rank 0 too,
// whose summary is the one printed in full.

class AllRanks : public ::testing::Test {
 protected:
  void TearDown() override {
    int failed = HasFailure() ? 1 : 0, ranks_failed = 0;
    PMPI_Allreduce(&failed, &ranks_failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (ranks_failed > failed)
      ADD_FAILURE() << ranks_failed - failed << " other rank(s) failed this test (see [rank N])";
  }
};

}  // namespace loom::test::p2p
