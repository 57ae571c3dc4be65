#include "model/model.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <system_error>
#include <utility>

#include <unistd.h>

namespace loom::model {
namespace {

using nlohmann::json;

bool positive_finite(double v) {
  return std::isfinite(v) && v > 0;
}

// Where `x` falls on an ascending axis, in log space: the lower index and the fraction
// towards the next point, clamped to [0, 1] at both ends.
struct Position {
  size_t index;
  double fraction;
};

Position locate_clamped(const std::vector<double>& axis, double x) {
  if (axis.size() < 2 || !(x > axis.front())) return {0, 0.0};
  if (x >= axis.back()) return {axis.size() - 2, 1.0};
  const size_t upper = static_cast<size_t>(std::upper_bound(axis.begin(), axis.end(), x) -
                                           axis.begin());  // axis[upper-1] <= x < axis[upper]
  const size_t lower = upper - 1;
  const double fraction =
      (std::log(x) - std::log(axis[lower])) / (std::log(axis[upper]) - std::log(axis[lower]));
  return {lower, fraction};
}

double log_lerp(double a, double b, double fraction) {
  if (fraction <= 0) return a;
  if (fraction >= 1) return b;
  return std::exp(std::log(a) + (std::log(b) - std::log(a)) * fraction);
}

// Time of `bytes` along one row of measurements (`seconds` over `message_bytes`).
double along_bytes(const std::vector<double>& message_bytes, const std::vector<double>& seconds,
                   double bytes) {
  if (message_bytes.empty()) return std::numeric_limits<double>::quiet_NaN();
  if (bytes > message_bytes.back()) return seconds.back() * (bytes / message_bytes.back());
  const Position p = locate_clamped(message_bytes, bytes);
  if (message_bytes.size() < 2) return seconds[0];
  return log_lerp(seconds[p.index], seconds[p.index + 1], p.fraction);
}

bool check_axis(const std::vector<double>& axis, const char* name, std::string* why) {
  if (axis.empty()) {
    *why = std::string(name) + " is empty";
    return false;
  }
  for (size_t i = 0; i < axis.size(); ++i) {
    if (!positive_finite(axis[i])) {
      *why = std::string(name) + "[" + std::to_string(i) + "] is not a positive finite number";
      return false;
    }
    if (i > 0 && !(axis[i] > axis[i - 1])) {
      *why = std::string(name) + " is not strictly ascending at index " + std::to_string(i);
      return false;
    }
  }
  return true;
}

bool check_times(const std::vector<double>& seconds, size_t expected, const std::string& name,
                 std::string* why) {
  if (seconds.size() != expected) {
    *why = name + " has " + std::to_string(seconds.size()) + " values for " +
           std::to_string(expected) + " message sizes";
    return false;
  }
  for (size_t i = 0; i < seconds.size(); ++i)
    if (!positive_finite(seconds[i])) {
      *why = name + "[" + std::to_string(i) + "] is not a positive finite time";
      return false;
    }
  return true;
}

// ---------------------------------------------------------------------------------------
// JSON. Every reader names the path of what it rejects, e.g. "pack.seconds[2][3]".

json grid_to_json(const Grid& g) {
  return {{"spread", g.spread},
          {"block_bytes", g.block_bytes},
          {"message_bytes", g.message_bytes},
          {"seconds", g.seconds}};
}

json surface_to_json(const Surface& s) {
  json grids = json::array();
  for (const Grid& g : s.by_spread) grids.push_back(grid_to_json(g));
  return grids;
}

json curve_to_json(const Curve& c) {
  return {{"message_bytes", c.message_bytes}, {"seconds", c.seconds}};
}

class Reader {
 public:
  explicit Reader(std::string* why) : why_(why) {}

  const json* member(const json& object, const char* key, const std::string& where) {
    if (!object.is_object()) {
      fail((where.empty() ? "the document" : where) + " is not an object");
      return nullptr;
    }
    auto it = object.find(key);
    if (it == object.end()) {
      fail("missing " + join(where, key));
      return nullptr;
    }
    return &*it;
  }

  bool numbers(const json& array, const std::string& where, std::vector<double>* out) {
    if (!array.is_array()) return fail(where + " is not an array");
    out->clear();
    for (size_t i = 0; i < array.size(); ++i) {
      if (!array[i].is_number()) return fail(where + "[" + std::to_string(i) + "] is not a number");
      out->push_back(array[i].get<double>());
    }
    return true;
  }

  bool text(const json& object, const char* key, const std::string& where, std::string* out) {
    const json* value = member(object, key, where);
    if (!value) return false;
    if (!value->is_string()) return fail(join(where, key) + " is not a string");
    *out = value->get<std::string>();
    return true;
  }

  // A surface: `object[key]` is an array of grids, ascending by spread.
  bool surface(const json& object, const char* key, const std::string& where, Surface* out) {
    const std::string name = join(where, key);
    const json* grids = member(object, key, where);
    if (!grids) return false;
    if (!grids->is_array()) return fail(name + " is not an array of grids");
    out->by_spread.resize(grids->size());
    for (size_t i = 0; i < grids->size(); ++i)
      if (!grid((*grids)[i], name + "[" + std::to_string(i) + "]", &out->by_spread[i]))
        return false;
    std::string reason;
    if (!out->valid(&reason)) return fail(name + ": " + reason);
    return true;
  }

  bool grid(const json& g, const std::string& name, Grid* out) {
    const json* spread = member(g, "spread", name);
    if (!spread) return false;
    if (!spread->is_number()) return fail(name + ".spread is not a number");
    out->spread = spread->get<double>();
    const json *blocks = member(g, "block_bytes", name), *messages = nullptr, *seconds = nullptr;
    if (!blocks || !numbers(*blocks, name + ".block_bytes", &out->block_bytes)) return false;
    if (!(messages = member(g, "message_bytes", name)) ||
        !numbers(*messages, name + ".message_bytes", &out->message_bytes))
      return false;
    if (!(seconds = member(g, "seconds", name))) return false;
    if (!seconds->is_array()) return fail(name + ".seconds is not an array");
    out->seconds.resize(seconds->size());
    for (size_t i = 0; i < seconds->size(); ++i)
      if (!numbers((*seconds)[i], name + ".seconds[" + std::to_string(i) + "]", &out->seconds[i]))
        return false;
    std::string reason;
    if (!out->valid(&reason)) return fail(name + ": " + reason);
    return true;
  }

  bool curve(const json& object, const char* key, const std::string& where, Curve* out) {
    const std::string name = join(where, key);
    const json* c = member(object, key, where);
    if (!c) return false;
    const json* messages = member(*c, "message_bytes", name);
    if (!messages || !numbers(*messages, name + ".message_bytes", &out->message_bytes))
      return false;
    const json* seconds = member(*c, "seconds", name);
    if (!seconds || !numbers(*seconds, name + ".seconds", &out->seconds)) return false;
    std::string reason;
    if (!out->valid(&reason)) return fail(name + ": " + reason);
    return true;
  }

  bool fail(const std::string& reason) {
    if (why_) *why_ = reason;
    return false;
  }

 private:
  static std::string join(const std::string& where, const char* key) {
    return where.empty() ? std::string(key) : where + "." + key;
  }
  std::string* why_;
};

}  // namespace

const char* method_name(Method m) {
  return m == Method::Pack ? "pack" : "host";
}

bool parse_method(const std::string& text, Method* out) {
  if (text == "host") {
    *out = Method::Host;
    return true;
  }
  if (text == "pack") {
    *out = Method::Pack;
    return true;
  }
  return false;
}

const char* locality_name(Locality where) {
  return where == Locality::OtherNode ? "other_node" : "same_node";
}

double Grid::at(double block, double bytes) const {
  if (block_bytes.empty() || seconds.empty()) return std::numeric_limits<double>::quiet_NaN();
  const Position row = locate_clamped(block_bytes, block);
  const double lower = along_bytes(message_bytes, seconds[row.index], bytes);
  if (row.fraction <= 0 || block_bytes.size() < 2) return lower;
  const double upper = along_bytes(message_bytes, seconds[row.index + 1], bytes);
  return log_lerp(lower, upper, row.fraction);
}

bool Grid::valid(std::string* why) const {
  std::string reason;
  bool ok = true;
  if (!(std::isfinite(spread) && spread >= 1)) {
    reason = "spread is not a finite number of at least 1";
    ok = false;
  }
  ok = ok && check_axis(block_bytes, "block_bytes", &reason) &&
       check_axis(message_bytes, "message_bytes", &reason);
  if (ok && seconds.size() != block_bytes.size()) {
    reason = "seconds has " + std::to_string(seconds.size()) + " rows for " +
             std::to_string(block_bytes.size()) + " block sizes";
    ok = false;
  }
  for (size_t i = 0; ok && i < seconds.size(); ++i)
    ok = check_times(seconds[i], message_bytes.size(), "seconds[" + std::to_string(i) + "]",
                     &reason);
  if (!ok && why) *why = reason;
  return ok;
}

double Surface::at(double spread, double block, double bytes) const {
  if (by_spread.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::vector<double> spreads;
  for (const Grid& g : by_spread) spreads.push_back(g.spread);
  const Position p = locate_clamped(spreads, spread);
  const double lower = by_spread[p.index].at(block, bytes);
  if (p.fraction <= 0 || by_spread.size() < 2) return lower;
  return log_lerp(lower, by_spread[p.index + 1].at(block, bytes), p.fraction);
}

bool Surface::valid(std::string* why) const {
  std::string reason;
  bool ok = !by_spread.empty();
  if (!ok) reason = "has no grids";
  for (size_t i = 0; ok && i < by_spread.size(); ++i) {
    if (!by_spread[i].valid(&reason)) {
      reason = "grid " + std::to_string(i) + ": " + reason;
      ok = false;
    } else if (i > 0 && !(by_spread[i].spread > by_spread[i - 1].spread)) {
      reason = "spreads are not strictly ascending at index " + std::to_string(i);
      ok = false;
    }
  }
  if (!ok && why) *why = reason;
  return ok;
}

double Curve::at(double bytes) const {
  return along_bytes(message_bytes, seconds, bytes);
}

bool Curve::valid(std::string* why) const {
  std::string reason;
  const bool ok = check_axis(message_bytes, "message_bytes", &reason) &&
                  check_times(seconds, message_bytes.size(), "seconds", &reason);
  if (!ok && why) *why = reason;
  return ok;
}

bool Calibration::valid(std::string* why) const {
  std::string reason;
  auto grid_ok = [&](const Surface& g, const std::string& name) {
    if (g.valid(&reason)) return true;
    reason = name + ": " + reason;
    return false;
  };
  auto curve_ok = [&](const Curve& c, const std::string& name) {
    if (c.valid(&reason)) return true;
    reason = name + ": " + reason;
    return false;
  };
  bool ok = grid_ok(pack, "pack") && grid_ok(unpack, "unpack");
  for (int w = 0; ok && w < kLocalities; ++w) {
    const char* where = locality_name(static_cast<Locality>(w));
    ok = curve_ok(contiguous[w], std::string("contiguous.") + where) &&
         grid_ok(host_typed[w], std::string("host_typed.") + where) &&
         grid_ok(host_typed_nested[w], std::string("host_typed_nested.") + where) &&
         grid_ok(loom_packed[w], std::string("loom_packed.") + where) &&
         (!exchange_measured ||
          (grid_ok(host_typed_exchange[w], std::string("host_typed_exchange.") + where) &&
           grid_ok(host_typed_nested_exchange[w],
                   std::string("host_typed_nested_exchange.") + where) &&
           grid_ok(loom_packed_exchange[w], std::string("loom_packed_exchange.") + where)));
  }
  if (!ok && why) *why = reason;
  return ok;
}

std::string to_json(const Calibration& c) {
  json doc = {{"format", kFormatName},
              {"version", kFormatVersion},
              {"host_mpi", c.host_mpi},
              {"machine", c.machine},
              {"other_node_measured", c.other_node_measured},
              {"pack", surface_to_json(c.pack)},
              {"unpack", surface_to_json(c.unpack)}};
  for (int w = 0; w < kLocalities; ++w) {
    const char* where = locality_name(static_cast<Locality>(w));
    doc["contiguous"][where] = curve_to_json(c.contiguous[w]);
    doc["host_typed"][where] = surface_to_json(c.host_typed[w]);
    doc["host_typed_nested"][where] = surface_to_json(c.host_typed_nested[w]);
    doc["loom_packed"][where] = surface_to_json(c.loom_packed[w]);
    if (c.exchange_measured) {
      doc["host_typed_exchange"][where] = surface_to_json(c.host_typed_exchange[w]);
      doc["host_typed_nested_exchange"][where] = surface_to_json(c.host_typed_nested_exchange[w]);
      doc["loom_packed_exchange"][where] = surface_to_json(c.loom_packed_exchange[w]);
    }
  }
  if (c.speed_probe_seconds > 0) doc["speed_probe_seconds"] = c.speed_probe_seconds;
  if (c.host_settings) doc["host_settings"] = *c.host_settings;
  return doc.dump(2) + "\n";
}

namespace {

// A calibration from `input` (a string or an open stream: json::parse reads either).
template <typename Input>
std::optional<Calibration> parse_calibration(Input&& input, std::string* why) {
  Reader read(why);
  json doc;
  try {
    doc = json::parse(std::forward<Input>(input));
  } catch (const json::exception& e) {
    // what() starts with "[json.exception.parse_error.101] ": the rest says where and why.
    std::string detail = e.what();
    if (const size_t tag_end = detail.find("] "); detail[0] == '[' && tag_end != std::string::npos)
      detail.erase(0, tag_end + 2);
    read.fail("not valid JSON (" + detail + ")");
    return std::nullopt;
  }
  Calibration c;
  std::string format;
  if (!read.text(doc, "format", "", &format)) return std::nullopt;
  if (format != kFormatName) {
    read.fail("format is '" + format + "', not '" + kFormatName + "'");
    return std::nullopt;
  }
  const json* version = read.member(doc, "version", "");
  if (!version) return std::nullopt;
  if (!version->is_number_integer() || version->get<int64_t>() != kFormatVersion) {
    read.fail("version " + version->dump() + " is not supported (this Loom reads version " +
              std::to_string(kFormatVersion) + "; run `loom-bench measure` again)");
    return std::nullopt;
  }
  if (!read.text(doc, "host_mpi", "", &c.host_mpi) || !read.text(doc, "machine", "", &c.machine))
    return std::nullopt;
  const json* measured = read.member(doc, "other_node_measured", "");
  if (!measured) return std::nullopt;
  if (!measured->is_boolean()) {
    read.fail("other_node_measured is not true or false");
    return std::nullopt;
  }
  c.other_node_measured = measured->get<bool>();
  if (!read.surface(doc, "pack", "", &c.pack) || !read.surface(doc, "unpack", "", &c.unpack))
    return std::nullopt;
  for (int w = 0; w < kLocalities; ++w) {
    const char* where = locality_name(static_cast<Locality>(w));
    const json* contiguous = read.member(doc, "contiguous", "");
    const json* host_typed = read.member(doc, "host_typed", "");
    const json* host_typed_nested = read.member(doc, "host_typed_nested", "");
    const json* loom_packed = read.member(doc, "loom_packed", "");
    if (!contiguous || !host_typed || !host_typed_nested || !loom_packed ||
        !read.curve(*contiguous, where, "contiguous", &c.contiguous[w]) ||
        !read.surface(*host_typed, where, "host_typed", &c.host_typed[w]) ||
        !read.surface(*host_typed_nested, where, "host_typed_nested", &c.host_typed_nested[w]) ||
        !read.surface(*loom_packed, where, "loom_packed", &c.loom_packed[w]))
      return std::nullopt;
  }
  // Optional (see Calibration): all three exchange surfaces, or none.
  c.exchange_measured = doc.contains("host_typed_exchange") ||
                        doc.contains("host_typed_nested_exchange") ||
                        doc.contains("loom_packed_exchange");
  for (int w = 0; c.exchange_measured && w < kLocalities; ++w) {
    const char* where = locality_name(static_cast<Locality>(w));
    const json* host_typed = read.member(doc, "host_typed_exchange", "");
    const json* host_typed_nested = read.member(doc, "host_typed_nested_exchange", "");
    const json* loom_packed = read.member(doc, "loom_packed_exchange", "");
    if (!host_typed || !host_typed_nested || !loom_packed ||
        !read.surface(*host_typed, where, "host_typed_exchange", &c.host_typed_exchange[w]) ||
        !read.surface(*host_typed_nested, where, "host_typed_nested_exchange",
                      &c.host_typed_nested_exchange[w]) ||
        !read.surface(*loom_packed, where, "loom_packed_exchange", &c.loom_packed_exchange[w]))
      return std::nullopt;
  }
  // Optional (see Calibration).
  if (const auto probe = doc.find("speed_probe_seconds"); probe != doc.end()) {
    if (!probe->is_number() || !(probe->get<double>() > 0) ||
        !std::isfinite(probe->get<double>())) {
      read.fail("speed_probe_seconds is not a positive number");
      return std::nullopt;
    }
    c.speed_probe_seconds = probe->get<double>();
  }
  if (const auto settings = doc.find("host_settings"); settings != doc.end()) {
    if (!settings->is_string()) {
      read.fail("host_settings is not a string");
      return std::nullopt;
    }
    c.host_settings = settings->get<std::string>();
  }
  return c;
}

}  // namespace

std::optional<Calibration> from_json(const std::string& text, std::string* why) {
  return parse_calibration(text, why);
}

// Parsed from the stream, not from a copy of the file: a file of over 128 KiB read whole would be
// one allocation that glibc maps and unmaps, raising its mmap threshold for the whole process.
std::optional<Calibration> load_file(const std::string& path, std::string* why) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (why) *why = std::string("cannot open it: ") + std::strerror(errno);
    return std::nullopt;
  }
  std::optional<Calibration> c = parse_calibration(in, why);
  if (in.bad()) {
    if (why) *why = "cannot read it";
    return std::nullopt;
  }
  return c;
}

bool save_file(const Calibration& c, const std::string& path, std::string* why) {
  std::string reason;
  if (!c.valid(&reason)) {
    if (why) *why = "invalid calibration: " + reason;
    return false;
  }
  namespace fs = std::filesystem;
  const fs::path target(path);
  std::error_code error;
  if (target.has_parent_path()) {
    fs::create_directories(target.parent_path(), error);
    if (error) {
      if (why) *why = "cannot create " + target.parent_path().string() + ": " + error.message();
      return false;
    }
  }
  // Readers (other ranks, other jobs) never see a half-written file.
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << to_json(c);
    out.close();
    if (!out) {
      if (why) *why = "cannot write " + temporary;
      fs::remove(temporary, error);
      return false;
    }
  }
  fs::rename(temporary, target, error);
  if (error) {
    if (why) *why = "cannot rename " + temporary + " to " + path + ": " + error.message();
    fs::remove(temporary, error);
    return false;
  }
  return true;
}

namespace {

// What one traffic's predictions read at one locality. Exchanges read the one-way surfaces
// when the calibration did not measure exchanges.
struct PathSurfaces {
  const Surface& host_flat;
  const Surface& host_nested;
  const Surface& loom;
};

PathSurfaces surfaces_for(const Calibration& c, Locality where, Traffic traffic) {
  const int w = static_cast<int>(where);
  if (traffic == Traffic::Exchange && c.exchange_measured)
    return {c.host_typed_exchange[w], c.host_typed_nested_exchange[w], c.loom_packed_exchange[w]};
  return {c.host_typed[w], c.host_typed_nested[w], c.loom_packed[w]};
}

}  // namespace

double Model::host_seconds(Locality where, const TypeShape& type, double bytes,
                           Traffic traffic) const {
  if (!calibration_) return std::numeric_limits<double>::quiet_NaN();
  const PathSurfaces paths = surfaces_for(*calibration_, where, traffic);
  return (type.nested ? paths.host_nested : paths.host_flat)
      .at(type.spread, type.mean_block, bytes);
}

double Model::pack_seconds(Locality where, const TypeShape& type, double bytes,
                           Traffic traffic) const {
  if (!calibration_) return std::numeric_limits<double>::quiet_NaN();
  return surfaces_for(*calibration_, where, traffic).loom.at(type.spread, type.mean_block, bytes);
}

Method Model::choose(Locality where, const TypeShape& type, double bytes, Traffic traffic) const {
  if (!calibration_) {
    if (bytes >= rule_.host_from_message_bytes && type.mean_block > rule_.host_above_block_bytes)
      return Method::Host;
    return type.mean_block <= kDefaultPackBlockBytes ||
                   (type.mean_block <= kDefaultPackSmallBlockBytes &&
                    bytes <= kDefaultPackSmallMessageBytes)
               ? Method::Pack
               : Method::Host;
  }
  return pack_seconds(where, type, bytes, traffic) * kPackAdvantageRequired <
                 host_seconds(where, type, bytes, traffic)
             ? Method::Pack
             : Method::Host;
}

bool Model::rule_packs_on_weak_ground(Locality where, const TypeShape& type, double bytes) const {
  return !calibration_ &&
         (type.mean_block > kDefaultPackBlockBytes || bytes >= rule_.weak_from_message_bytes) &&
         choose(where, type, bytes) == Method::Pack;
}

}  // namespace loom::model
