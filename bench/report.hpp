// Shared measurement and reporting helpers for every loom-bench subcommand:
// timing, robust statistics, aligned text tables and a small JSON writer.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace loom::bench {

constexpr int64_t kKiB = 1024, kMiB = 1024 * kKiB;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<unsigned char[], FreeDeleter>;

// Page-aligned; exits on failure (a benchmark cannot do anything useful without its buffers).
Buffer allocate(int64_t bytes, const char* tool);

// Memory mapped straight from the kernel (mmap), whatever its size: glibc's allocator picks heap or
// mmap by a threshold it moves at run time, so two paths compared in one run could see memory of
// different kinds (a shared-window put moved 2.4x between runs that differed only in that).
// Zero-filled; exits on failure.
class MappedBuffer {
 public:
  MappedBuffer() = default;
  MappedBuffer(int64_t bytes, const char* tool);
  ~MappedBuffer();
  MappedBuffer(MappedBuffer&& other) noexcept { *this = std::move(other); }
  MappedBuffer& operator=(MappedBuffer&& other) noexcept;
  MappedBuffer(const MappedBuffer&) = delete;
  MappedBuffer& operator=(const MappedBuffer&) = delete;
  unsigned char* data() const { return data_; }
  int64_t size() const { return size_; }

 private:
  unsigned char* data_ = nullptr;
  int64_t size_ = 0;
};

// Deterministic pseudo-random bytes: the same seed gives the same bytes on every rank, so a
// receiver can rebuild what its peer sent. Touches every page (no page faults while timing).
void fill_pattern(unsigned char* p, int64_t n, uint64_t seed);

double now_seconds();
// Seconds per call of `op`, over one sample of `repeats` back-to-back calls.
double seconds_per_call(const std::function<void()>& op, int repeats);

// Robust summary of repeated measurements (seconds, or any unit).
struct Summary {
  double median = 0, p10 = 0, p90 = 0, p99 = 0, min = 0, max = 0, mean = 0;
  size_t n = 0;
};
Summary summarize(std::vector<double> samples);
double geomean(const std::vector<double>& values);
// Throughput of `bytes` in `seconds`; 0 for no time.
double gbps(int64_t bytes, double seconds);
// Adds `error` to a "; "-separated list of errors.
void append_error(std::string* errors, const std::string& error);

// Column-aligned text table.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add_row(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(FILE* out) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// Option parsing shared by the subcommands (parse_subcommand_options below):
// `bad_option_value` says "<tool>: bad value for <option>" and returns exit code 2.
int bad_option_value(const char* tool, const char* option);

// A whole number in [1, 2^20]; false on anything else.
bool parse_positive(const char* text, int* out);

class JsonWriter;

// The sampling options of every subcommand that times cases: --quick, --reps N,
// --time SECONDS, --json FILE. A subcommand's Options derives from this, with its defaults.
struct SamplingOptions {
  SamplingOptions(int default_max_reps, int default_min_reps, double default_seconds_per_case)
      : max_reps(default_max_reps),
        min_reps(default_min_reps),
        seconds_per_case(default_seconds_per_case) {}
  int max_reps;
  int min_reps;
  double seconds_per_case;
  std::string json_path;
  bool quick = false;
  bool reps_given = false, time_given = false;  // --quick shortens only what is not given

  // After parsing: --quick shortens the bounds not given (to 20 samples and
  // `quick_seconds_per_case`); every case takes at least min(min_reps, max_reps) samples,
  // 3 with --quick.
  void finish(double quick_seconds_per_case);
  // "seconds_per_case", "min_reps", "max_reps" of a JSON result's "options".
  void write_json(JsonWriter& j) const;
};

// What one option of a subcommand's argv is: not one the parser knows, taken (with its value),
// bad (the parser has said why on stderr), or one that ends the run at once with exit code 0
// (--help, --list).
enum class OptionParse { NotMine, Taken, Bad, Done };

// Walks a subcommand's argv: the sampling options (unless `sampling` is null) and --help/-h
// (`usage` to stdout) are taken here, every other argument by `own(arg, value)`: an option
// named in `valued` comes with the argument after it (missing or empty: "<tool>: <option> needs
// a value", exit 2), any other with a null value. NotMine from `own` is an unknown option, said
// on stderr with the usage. Returns -1 to go on, or the exit code (0 after --help or Done, 2).
using OwnOption = std::function<OptionParse(const std::string& arg, const char* value)>;
int parse_subcommand_options(int argc, char** argv, const char* tool, SamplingOptions* sampling,
                             void (*usage)(FILE*), std::initializer_list<const char*> valued,
                             const OwnOption& own);

// "64", "4K", "16MiB" -> bytes (base/bytes.hpp: K/M/G are binary units). False on malformed
// input or zero.
bool parse_size(const std::string& text, int64_t* out);
// "a,b,,c" -> {"a", "b", "c"}: the list options of every subcommand.
std::vector<std::string> split_commas(const std::string& s);
// A --sizes-like option's value `v` into `out`, and `given` set: Taken, or Bad (said on stderr,
// naming `what`) on a bad item.
OptionParse size_list_option(const char* tool, const char* what, const char* v,
                             std::vector<int64_t>* out, bool* given);
// A comma-separated list of sizes; false (and a message naming `what`) on a bad item.
bool parse_size_list(const char* tool, const char* what, const std::string& text,
                     std::vector<int64_t>* out);

// A cache of this (virtual) CPU, e.g. ("index3", _SC_LEVEL3_CACHE_SIZE). sysfs first: it
// describes the cache this CPU really has, while sysconf may report the whole package's L3
// (384 MiB instead of 32 MiB on this machine's VM).
int64_t cpu_cache_bytes(const char* sysfs_index, int sysconf_name, int64_t fallback);

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string human_bytes(int64_t bytes);

// Minimal streaming JSON writer; callers emit well-nested objects and arrays.
class JsonWriter {
 public:
  void begin_object(const char* key = nullptr) { open(key, '{'); }
  void end_object() { close('}'); }
  void begin_array(const char* key = nullptr) { open(key, '['); }
  void end_array() { close(']'); }
  void field(const char* key, const std::string& value);
  void field(const char* key, const char* value) { field(key, std::string(value)); }
  void field(const char* key, double value);
  void field(const char* key, int64_t value);
  void field(const char* key, int value) { field(key, static_cast<int64_t>(value)); }
  void field(const char* key, size_t value) { field(key, static_cast<int64_t>(value)); }
  void field(const char* key, bool value);  // JSON true/false
  void field(const char* key, const Summary& s);
  // "key": [v, ...]
  template <class T>
  void array(const char* key, const std::vector<T>& values) {
    begin_array(key);
    for (const T& v : values) field(nullptr, v);
    end_array();
  }
  // "key": [{...}, ...], each object's fields written by `write(item)`.
  template <class T, class Write>
  void objects(const char* key, const std::vector<T>& items, Write write) {
    begin_array(key);
    for (const T& item : items) {
      begin_object();
      write(item);
      end_object();
    }
    end_array();
  }
  const std::string& str() const { return out_; }
  bool write_file(const std::string& path) const;

 private:
  void prefix(const char* key);
  void open(const char* key, char bracket);
  void close(char bracket);
  std::string out_;
  std::vector<bool> first_;
};

// Values of one quantity over a run's cases (ratios, shares): their geomean and extremes, each
// with the case that set it.
struct CaseStats {
  std::vector<double> values;
  double min = 0, max = 0;
  std::string min_case, max_case;
  void add(double v, const std::string& label) {
    if (values.empty() || v < min) min = v, min_case = label;
    if (values.empty() || v > max) max = v, max_case = label;
    values.push_back(v);
  }
  bool empty() const { return values.empty(); }
  size_t cases() const { return values.size(); }
  double geomean() const { return bench::geomean(values); }
};
// "key": {"cases", "geomean", "min", "min_case", "max", "max_case"}
void write_case_stats(JsonWriter& j, const char* key, const CaseStats& stats);

// Whether two measured ranges of one quantity overlap: then the difference between them is
// within this run's noise.
inline bool ranges_overlap(double lo_a, double hi_a, double lo_b, double hi_b) {
  return lo_a <= hi_b && lo_b <= hi_a;
}
// The p10-p90 ranges of `a` and `b` overlap.
inline bool within_noise(const Summary& a, const Summary& b) {
  return ranges_overlap(a.p10, a.p90, b.p10, b.p90);
}

// One case of a host-vs-Loom benchmark, as its summary reads it.
struct Comparison {
  std::string label;          // e.g. "vec_b8 64 KiB"
  double ratio = 0;           // host time / Loom time: > 1 means Loom is faster
  bool within_noise = false;  // the two paths' ranges overlap
  double bound = 0;           // host time / the floor's: the most any engine could gain; 0: none
};

// What a user can act on from a host-vs-Loom run: Loom against the host (geomean, worst and best
// case, how many cases are faster, within noise, slower), and where a floor was measured the
// bound (host/floor) and the share of it Loom reaches (its ratio / the bound).
struct ComparisonSummary {
  explicit ComparisonSummary(const std::vector<Comparison>& cases = {});
  CaseStats ratio, bound, share;
  int faster = 0, within_noise = 0, slower = 0;
  bool worst_within_noise = false;
  std::vector<std::string> slower_cases;  // beyond noise, "<label> <ratio>x"
};
// What the lines of a summary call the two paths and the floor.
struct ComparisonNames {
  const char* loom = "Loom";
  const char* host = "host";
  const char* floor = "floor";
};
// "<indent><loom> vs <host>: geomean 1.85x over 26 cases; faster in 20, within noise in 5,
// slower in 1", the worst and best cases, the cases slower beyond noise, the bound and Loom's
// share of it; nothing when there are no cases.
void print_comparison(const ComparisonSummary& s, const ComparisonNames& names, const char* indent);
// "key": {"cases", "geomean_ratio", "worst_ratio", "worst_case", "worst_within_noise",
// "best_ratio", "best_case", "faster", "within_noise", "slower", "slower_cases", and with a
// bound "bound": {...} and "share_of_bound": {...} (write_case_stats)}
void write_comparison(JsonWriter& j, const char* key, const ComparisonSummary& s);

// "verified", and "verify_error" where `error` says what failed.
void write_verification(JsonWriter& j, const std::string& error);
// "  data: identical in all N cases (<what>)", or "  data mismatch in M of N cases (<what>):
// <labels>" (at most 8 named).
void print_verification(const char* what, const std::vector<std::string>& mismatched, size_t cases);

// What every benchmark's JSON result records about the run, ahead of its own "options" and
// results. Fields left empty are not written.
struct JsonRunHeader {
  const char* subcommand = nullptr;
  std::optional<int> ranks = {};  // "mpi": ranks taking part (single-process benchmarks leave it)
  std::vector<int> process_grid = {};                         // "mpi": "dims" of a Cartesian grid
  std::vector<std::pair<const char*, int64_t>> machine = {};  // cache sizes and such, before "cpus"
};
// Opens the document and writes "subcommand", "mpi" (name: mpi::host_mpi_version(),
// library_version: the host's whole banner), "loom" (active) and "machine", then opens
// "options" with "quick": the subcommand writes its own options (with
// SamplingOptions::write_json) and closes it.
JsonWriter begin_json_report(const JsonRunHeader& header, const SamplingOptions& opt);
// Closes the document and writes it to `path`, saying where on stdout; on failure warns on
// stderr, prefixed with `tool`, and returns false.
bool finish_json_report(JsonWriter& j, const std::string& path, const char* tool);

// What an MPI subcommand's report heads with: this rank, the ranks, the host MPI and Loom.
struct MpiRun {
  int rank = 0, ranks = 1;
  std::string host_mpi;  // mpi::host_mpi_version()
  bool loom_active = false;
  int thread_level = 0;  // MPI_Query_thread
  const char* loom_state() const { return loom_active ? "active" : "INACTIVE"; }
  // How a subcommand refuses to measure: rank 0 says `why` on stderr; returns `exit_code`.
  int refuse(int exit_code, const std::string& why) const;
};
// How a subcommand starts MPI: MPI_Init, or MPI_Init_thread at MPI_THREAD_SINGLE or
// MPI_THREAD_MULTIPLE (MpiRun::thread_level says what the host provided).
enum class ThreadLevel { Default, Single, Multiple };
MpiRun start_mpi_run(int* argc, char*** argv, ThreadLevel level);
// MPI_Init, or MPI_Init_thread at MPI_THREAD_SINGLE with `thread_single`.
inline MpiRun start_mpi_run(int* argc, char*** argv, bool thread_single) {
  return start_mpi_run(argc, argv, thread_single ? ThreadLevel::Single : ThreadLevel::Default);
}
void finish_mpi_run();  // MPI_Finalize
// With Loom inactive, says so on stdout: "NOTE: Loom is INACTIVE (...): " and `consequence`
// (what that means for the numbers, its own line breaks and a final newline).
void note_if_loom_inactive(const MpiRun& run, const char* consequence);

// The one start-up of the MPI subcommands: `parse` the options (-1 to go on, else the exit code,
// returned before MPI starts), start MPI (start_mpi_run), run `body(options, run)` and finalise
// MPI. Returns the body's exit code.
template <class Options, class Body>
int run_mpi_subcommand(int argc, char** argv, ThreadLevel level,
                       int (*parse)(int, char**, Options*), Body body) {
  Options options;
  if (const int rc = parse(argc, argv, &options); rc >= 0) return rc;
  const MpiRun run = start_mpi_run(&argc, &argv, level);
  const int exit_code = body(options, run);
  finish_mpi_run();
  return exit_code;
}
template <class Options, class Body>
int run_mpi_subcommand(int argc, char** argv, bool thread_single,
                       int (*parse)(int, char**, Options*), Body body) {
  return run_mpi_subcommand(argc, argv, thread_single ? ThreadLevel::Single : ThreadLevel::Default,
                            parse, body);
}

// Keeps the optimiser from discarding a benchmarked result.
inline void do_not_optimize(const void* p) {
  asm volatile("" : : "g"(p) : "memory");
}

}  // namespace loom::bench
