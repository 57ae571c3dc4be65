#include "bench/report.hpp"

#include "base/bytes.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace loom::bench {

Buffer allocate(int64_t bytes, const char* tool) {
  const size_t rounded = (static_cast<size_t>(std::max<int64_t>(bytes, 1)) + 4095) & ~size_t{4095};
  auto* p = static_cast<unsigned char*>(std::aligned_alloc(4096, rounded));
  if (!p) {
    std::fprintf(stderr, "%s: out of memory allocating %lld bytes\n", tool,
                 static_cast<long long>(bytes));
    std::exit(1);
  }
  return Buffer(p);
}

MappedBuffer::MappedBuffer(int64_t bytes, const char* tool) {
  size_ = std::max<int64_t>(bytes, 1);
  void* p = mmap(nullptr, static_cast<size_t>(size_), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::fprintf(stderr, "%s: out of memory mapping %lld bytes\n", tool,
                 static_cast<long long>(bytes));
    std::exit(1);
  }
  data_ = static_cast<unsigned char*>(p);
}

MappedBuffer::~MappedBuffer() {
  if (data_) munmap(data_, static_cast<size_t>(size_));
}

MappedBuffer& MappedBuffer::operator=(MappedBuffer&& other) noexcept {
  if (this != &other) {
    if (data_) munmap(data_, static_cast<size_t>(size_));
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void fill_pattern(unsigned char* p, int64_t n, uint64_t seed) {
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(p + i, &x, 8);
  }
  for (; i < n; ++i) p[i] = static_cast<unsigned char>(x >> (8 * (i % 8)));
}

double now_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

double seconds_per_call(const std::function<void()>& op, int repeats) {
  const double start = now_seconds();
  for (int i = 0; i < repeats; ++i) op();
  return (now_seconds() - start) / repeats;
}

static double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] * (1 - frac) + sorted[hi] * frac;
}

Summary summarize(std::vector<double> samples) {
  Summary s;
  s.n = samples.size();
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.median = quantile(samples, 0.5);
  s.p10 = quantile(samples, 0.1);
  s.p90 = quantile(samples, 0.9);
  s.p99 = quantile(samples, 0.99);
  s.min = samples.front();
  s.max = samples.back();
  double sum = 0;
  for (double v : samples) sum += v;
  s.mean = sum / static_cast<double>(samples.size());
  return s;
}

double geomean(const std::vector<double>& values) {
  if (values.empty()) return 0;
  double log_sum = 0;
  for (double v : values) log_sum += std::log(v);
  return std::exp(log_sum / static_cast<double>(values.size()));
}

double gbps(int64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0;
}

void append_error(std::string* errors, const std::string& error) {
  *errors += (errors->empty() ? "" : "; ") + error;
}

void Table::print(FILE* out) const {
  std::vector<size_t> width(header_.size(), 0);
  auto widen = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], row[i].size());
  };
  widen(header_);
  for (const auto& row : rows_) widen(row);
  auto emit = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i)
      std::fprintf(out, i == 0 ? "%-*s" : "  %*s", static_cast<int>(width[i]), row[i].c_str());
    std::fputc('\n', out);
  };
  emit(header_);
  size_t total = 0;
  for (size_t w : width) total += w + 2;
  std::fprintf(out, "%s\n", std::string(total > 2 ? total - 2 : 0, '-').c_str());
  for (const auto& row : rows_) emit(row);
  std::fflush(out);
}

std::string format(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

std::string human_bytes(int64_t bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int unit = 0;
  double v = static_cast<double>(bytes);
  while (v >= 1024 && unit < 3 && std::fmod(v, 1024) == 0) {
    v /= 1024;
    ++unit;
  }
  return format("%g %s", v, units[unit]);
}

void JsonWriter::prefix(const char* key) {
  if (!first_.empty()) {
    if (!first_.back()) out_ += ",";
    first_.back() = false;
  }
  if (key) {
    out_ += "\"";
    out_ += key;
    out_ += "\":";
  }
}

void JsonWriter::open(const char* key, char bracket) {
  prefix(key);
  out_ += bracket;
  first_.push_back(true);
}
void JsonWriter::close(char bracket) {
  out_ += bracket;
  first_.pop_back();
}

void JsonWriter::field(const char* key, const std::string& value) {
  prefix(key);
  out_ += "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') {
      out_ += '\\';
      out_ += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {  // control characters must be escaped
      out_ += format("\\u%04x", c);
    } else {
      out_ += c;
    }
  }
  out_ += "\"";
}

void JsonWriter::field(const char* key, double value) {
  prefix(key);
  out_ += std::isfinite(value) ? format("%.9g", value) : std::string("null");
}

void JsonWriter::field(const char* key, int64_t value) {
  prefix(key);
  out_ += std::to_string(value);
}

void JsonWriter::field(const char* key, bool value) {
  prefix(key);
  out_ += value ? "true" : "false";
}

void JsonWriter::field(const char* key, const Summary& s) {
  begin_object(key);
  field("median", s.median);
  field("p10", s.p10);
  field("p90", s.p90);
  field("p99", s.p99);
  field("min", s.min);
  field("max", s.max);
  field("mean", s.mean);
  field("n", s.n);
  end_object();
}

bool JsonWriter::write_file(const std::string& path) const {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return false;
  std::fputs(out_.c_str(), f);
  std::fputc('\n', f);
  return std::fclose(f) == 0;
}

bool finish_json_report(JsonWriter& j, const std::string& path, const char* tool) {
  j.end_object();
  if (!j.write_file(path)) {
    std::fprintf(stderr, "%s: cannot write %s\n", tool, path.c_str());
    return false;
  }
  std::printf("JSON: %s\n", path.c_str());
  return true;
}

bool parse_size(const std::string& text, int64_t* out) {
  int64_t v = 0;
  if (!base::parse_bytes(text, &v) || v <= 0) return false;
  *out = v;
  return true;
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const std::string item = s.substr(start, comma == std::string::npos ? comma : comma - start);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

OptionParse size_list_option(const char* tool, const char* what, const char* v,
                             std::vector<int64_t>* out, bool* given) {
  if (!parse_size_list(tool, what, v, out)) return OptionParse::Bad;
  *given = true;
  return OptionParse::Taken;
}

bool parse_size_list(const char* tool, const char* what, const std::string& text,
                     std::vector<int64_t>* out) {
  out->clear();
  for (const auto& item : split_commas(text)) {
    int64_t v = 0;
    if (!parse_size(item, &v)) {
      std::fprintf(stderr, "%s: bad %s '%s'\n", tool, what, item.c_str());
      return false;
    }
    out->push_back(v);
  }
  if (out->empty()) std::fprintf(stderr, "%s: empty %s list\n", tool, what);
  return !out->empty();
}

int64_t cpu_cache_bytes(const char* sysfs_index, int sysconf_name, int64_t fallback) {
  const std::string path =
      std::string("/sys/devices/system/cpu/cpu0/cache/") + sysfs_index + "/size";
  if (FILE* f = std::fopen(path.c_str(), "r")) {
    long long kib = 0;
    const int got = std::fscanf(f, "%lldK", &kib);
    std::fclose(f);
    if (got == 1 && kib > 0) return kib * 1024;
  }
  const long v = sysconf(sysconf_name);
  return v > 0 ? v : fallback;
}

int bad_option_value(const char* tool, const char* option) {
  std::fprintf(stderr, "%s: bad value for %s\n", tool, option);
  return 2;
}

bool parse_positive(const char* text, int* out) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end || errno || v < 1 || v > 1 << 20) return false;
  *out = static_cast<int>(v);
  return true;
}

void SamplingOptions::finish(double quick_seconds_per_case) {
  if (quick) {
    if (!reps_given) max_reps = 20;
    if (!time_given) seconds_per_case = quick_seconds_per_case;
  }
  min_reps = std::min(quick ? 3 : min_reps, max_reps);
}

void SamplingOptions::write_json(JsonWriter& j) const {
  j.field("seconds_per_case", seconds_per_case);
  j.field("min_reps", min_reps);
  j.field("max_reps", max_reps);
}

namespace {

bool named(const std::string& arg, std::initializer_list<const char*> names) {
  return std::any_of(names.begin(), names.end(), [&](const char* n) { return arg == n; });
}

bool sampling_takes_value(const std::string& arg) {
  return arg == "--reps" || arg == "--time" || arg == "--json";
}

// Takes `arg` (with its value `v`, for those that take one) if it is a sampling option.
OptionParse parse_sampling_option(const std::string& arg, const char* v, const char* tool,
                                  SamplingOptions* out) {
  if (arg == "--quick") {
    out->quick = true;
    return OptionParse::Taken;
  }
  if (!sampling_takes_value(arg)) return OptionParse::NotMine;
  if (arg == "--reps") {
    if (!parse_positive(v, &out->max_reps)) {
      bad_option_value(tool, "--reps (a whole number >= 1)");
      return OptionParse::Bad;
    }
    out->reps_given = true;
  } else if (arg == "--time") {
    char* end = nullptr;
    const double seconds = std::strtod(v, &end);
    if (end == v || *end || !std::isfinite(seconds) || seconds <= 0) {
      bad_option_value(tool, "--time (seconds > 0)");
      return OptionParse::Bad;
    }
    out->seconds_per_case = seconds;
    out->time_given = true;
  } else {
    out->json_path = v;
  }
  return OptionParse::Taken;
}

}  // namespace

int parse_subcommand_options(int argc, char** argv, const char* tool, SamplingOptions* sampling,
                             void (*usage)(FILE*), std::initializer_list<const char*> valued,
                             const OwnOption& own) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      usage(stdout);
      return 0;
    }
    const bool sampling_option = sampling && (arg == "--quick" || sampling_takes_value(arg));
    const char* value = nullptr;
    if (sampling_option ? arg != "--quick" : named(arg, valued)) {
      if (i + 1 >= argc || !*argv[i + 1]) {
        std::fprintf(stderr, "%s: %s needs a value\n", tool, arg.c_str());
        return 2;
      }
      value = argv[++i];
    }
    const OptionParse parsed =
        sampling_option ? parse_sampling_option(arg, value, tool, sampling) : own(arg, value);
    switch (parsed) {
      case OptionParse::Taken:
        continue;
      case OptionParse::Bad:
        return 2;
      case OptionParse::Done:
        return 0;
      case OptionParse::NotMine:
        std::fprintf(stderr, "%s: unknown option '%s'\n", tool, arg.c_str());
        usage(stderr);
        return 2;
    }
  }
  return -1;
}

void write_verification(JsonWriter& j, const std::string& error) {
  j.field("verified", error.empty());
  if (!error.empty()) j.field("verify_error", error);
}

void print_verification(const char* what, const std::vector<std::string>& mismatched,
                        size_t cases) {
  if (mismatched.empty()) {
    std::printf("  data: identical in %s (%s)\n",
                cases == 1 ? "its one case" : format("all %zu cases", cases).c_str(), what);
    return;
  }
  std::printf("  data mismatch in %zu of %zu case%s (%s):", mismatched.size(), cases,
              cases == 1 ? "" : "s", what);
  for (size_t i = 0; i < mismatched.size() && i < 8; ++i)
    std::printf("%s %s", i ? "," : "", mismatched[i].c_str());
  if (mismatched.size() > 8) std::printf(" ... (+%zu)", mismatched.size() - 8);
  std::printf("\n");
}

ComparisonSummary::ComparisonSummary(const std::vector<Comparison>& cases) {
  for (const Comparison& c : cases) {
    if (ratio.empty() || c.ratio < ratio.min) worst_within_noise = c.within_noise;
    ratio.add(c.ratio, c.label);
    if (c.within_noise)
      ++within_noise;
    else if (c.ratio >= 1)
      ++faster;
    else
      ++slower, slower_cases.push_back(format("%s %.2fx", c.label.c_str(), c.ratio));
    if (c.bound > 0) {
      bound.add(c.bound, c.label);
      share.add(c.ratio / c.bound, c.label);
    }
  }
}

namespace {
// A share as a percentage: two significant digits below 10%.
std::string percent(double share) {
  const double p = 100 * share;
  return format(p < 1 ? "%.2f%%" : p < 10 ? "%.1f%%" : "%.0f%%", p);
}
}  // namespace

void print_comparison(const ComparisonSummary& s, const ComparisonNames& names,
                      const char* indent) {
  if (s.ratio.empty()) return;
  const bool one = s.ratio.cases() == 1;
  if (one) {
    std::printf("%s%s vs %s: %.2fx%s in its one case, %s\n", indent, names.loom, names.host,
                s.ratio.min, s.worst_within_noise ? " (within noise)" : "",
                s.ratio.min_case.c_str());
  } else {
    std::printf(
        "%s%s vs %s: geomean %.2fx over %zu cases; faster in %d, within noise in %d, "
        "slower in %d\n",
        indent, names.loom, names.host, s.ratio.geomean(), s.ratio.cases(), s.faster,
        s.within_noise, s.slower);
    std::printf("%s  worst %.2fx%s: %s; best %.2fx: %s\n", indent, s.ratio.min,
                s.worst_within_noise ? " (within noise)" : "", s.ratio.min_case.c_str(),
                s.ratio.max, s.ratio.max_case.c_str());
    if (!s.slower_cases.empty()) {
      std::printf("%s  slower beyond noise:", indent);
      for (size_t i = 0; i < s.slower_cases.size() && i < 8; ++i)
        std::printf("%s %s", i ? "," : "", s.slower_cases[i].c_str());
      if (s.slower_cases.size() > 8) std::printf(" ... (+%zu)", s.slower_cases.size() - 8);
      std::printf("\n");
    }
  }
  if (s.bound.empty()) return;
  std::printf("%sbound (%s/%s, the most any engine could gain over %s here): %s%.2fx\n", indent,
              names.host, names.floor, names.host, one ? "" : "geomean ", s.bound.geomean());
  if (!one)
    std::printf("%s  least %.2fx: %s; most %.2fx: %s\n", indent, s.bound.min,
                s.bound.min_case.c_str(), s.bound.max, s.bound.max_case.c_str());
  std::printf("%s  %s reaches %s of it ((%s/%s) / (%s/%s)%s)", indent, names.loom,
              percent(s.share.geomean()).c_str(), names.host, names.loom, names.host, names.floor,
              one ? "" : ", geomean");
  if (!one) std::printf("; least %s: %s", percent(s.share.min).c_str(), s.share.min_case.c_str());
  std::printf("\n");
}

void write_case_stats(JsonWriter& j, const char* key, const CaseStats& stats) {
  j.begin_object(key);
  j.field("cases", stats.cases());
  j.field("geomean", stats.geomean());
  j.field("min", stats.min);
  j.field("min_case", stats.min_case);
  j.field("max", stats.max);
  j.field("max_case", stats.max_case);
  j.end_object();
}

void write_comparison(JsonWriter& j, const char* key, const ComparisonSummary& s) {
  j.begin_object(key);
  j.field("cases", s.ratio.cases());
  j.field("geomean_ratio", s.ratio.geomean());  // host/Loom: > 1 means Loom is faster
  j.field("worst_ratio", s.ratio.min);
  j.field("worst_case", s.ratio.min_case);
  j.field("worst_within_noise", s.worst_within_noise);
  j.field("best_ratio", s.ratio.max);
  j.field("best_case", s.ratio.max_case);
  j.field("faster", s.faster);
  j.field("within_noise", s.within_noise);
  j.field("slower", s.slower);
  j.array("slower_cases", s.slower_cases);
  if (!s.bound.empty()) {
    write_case_stats(j, "bound", s.bound);           // host/floor
    write_case_stats(j, "share_of_bound", s.share);  // (host/Loom) / (host/floor)
  }
  j.end_object();
}

}  // namespace loom::bench
