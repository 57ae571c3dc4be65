// The method model: given a calibration of this machine (measured once by
// `loom-bench measure`), predict the time of sending one non-contiguous message either
// natively through the host MPI's datatype engine or by packing with Loom, sending the
// contiguous bytes, and unpacking; and pick the faster. No MPI dependency.
// The JSON format and the measurements are described in docs/model.md.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace loom::model {

enum class Method : uint8_t { Host, Pack };
// Spreads (span bytes per packed byte) that `loom-bench measure` calibrates: vectors with a
// stride of twice and of eight times the block. Eight is a grid face one double per line.
constexpr double kDenseSpread = 2;
constexpr double kSparseSpread = 8;
enum class Locality : uint8_t { SameNode, OtherNode };
constexpr int kLocalities = 2;
// How a message meets the peer's traffic. OneWay: a blocking send or receive, whose cost is
// its latency, timed as a ping-pong. Exchange: non-blocking and combined send-receive calls,
// made while the peer sends too. Then both ranks pack and unpack at once, and the host's
// pipelining of one message across two cores no longer hides its per-block cost: MPICH 4.0
// exchanges 3-D halo faces slower natively than through Loom, where a ping-pong favours it
// (docs/model.md, "Calibrating").
enum class Traffic : uint8_t { OneWay, Exchange };
constexpr int kTraffics = 2;

const char* method_name(Method m);  // "host", "pack"
bool parse_method(const std::string& text, Method* out);
const char* locality_name(Locality where);  // "same_node", "other_node" (JSON keys)

// Measured times in seconds on a grid: rows are mean block sizes (bytes), columns are
// message sizes (packed bytes). Both axes strictly ascending and positive.
struct Grid {
  // The span of the measured types per packed byte (extent / size; vector(n, b, 2b) is 2).
  // Sparse types touch more memory per packed byte, and their cost follows that.
  double spread = kDenseSpread;
  std::vector<double> block_bytes;
  std::vector<double> message_bytes;
  std::vector<std::vector<double>> seconds;  // [block][message]
  // Bilinear interpolation of log(time) over (log block, log bytes): exact at grid
  // points. Blocks outside the axis clamp to its edges; messages below the smallest size
  // take the smallest size's time, beyond the largest the time grows in proportion to
  // the bytes (the largest sizes are bandwidth-bound).
  double at(double block, double bytes) const;
  bool valid(std::string* why) const;
};

// What the model knows of a message's datatype.
struct TypeShape {
  double mean_block = 0;         // mean contiguous block in bytes
  double spread = kDenseSpread;  // span per packed byte (extent / size), at least 1
  // Built with strided levels inside strided levels (a vector of vectors, a 3-D subarray
  // face). Host engines may treat these differently from a flat vector of the same
  // layout: MPICH 4.0 sends them several times faster (docs/model.md, "The choice").
  bool nested = false;
};

// Grids of one quantity measured at ascending spreads. Between spreads the time is
// interpolated in log-log space, outside them it clamps to the nearest grid.
struct Surface {
  std::vector<Grid> by_spread;
  double at(double spread, double block, double bytes) const;
  bool valid(std::string* why) const;
};

// A 1-D curve over message sizes (contiguous sends), with Grid's rules along bytes.
struct Curve {
  std::vector<double> message_bytes;
  std::vector<double> seconds;
  double at(double bytes) const;
  bool valid(std::string* why) const;
};

struct Calibration {
  std::string host_mpi;  // e.g. "Open MPI v4.1.4"; a mismatch with the running host warns
  std::string machine;   // free text: CPU, hostname
  // The parts of Loom's pack path, recorded to explain it: its kernels, and the contiguous
  // send of packed bytes, one way.
  Surface pack, unpack;
  Curve contiguous[kLocalities];
  // What the choice compares, one way per message: the host's own send of the derived type,
  // flat (a vector) and nested (a vector of vectors of the same layout), and Loom's whole
  // pack path timed end to end (pack, send, unpack). The path is timed whole because its
  // parts, timed alone, run in warmer caches, and their sum predicted large messages faster
  // than they ran.
  Surface host_typed[kLocalities];
  Surface host_typed_nested[kLocalities];
  Surface loom_packed[kLocalities];
  // The same three for Exchange traffic: both ranks start a send and a receive of the
  // message at once and wait for both; the time of one exchange. Calibrations written
  // before these existed lack them: Exchange traffic then uses the one-way surfaces.
  bool exchange_measured = false;
  Surface host_typed_exchange[kLocalities];
  Surface host_typed_nested_exchange[kLocalities];
  Surface loom_packed_exchange[kLocalities];
  // False when the calibration ran on one node: the OtherNode entries are then copies of
  // the SameNode measurements.
  bool other_node_measured = false;
  // loom-bench measure's speed probe at its best during this calibration (seconds; 0: not
  // recorded). The next calibration of the same machine and host MPI compares its own
  // against it, to notice that it ran whole while the machine was slow.
  double speed_probe_seconds = 0;
  // The host MPI's transport settings in the environment while measuring (for example
  // "OMPI_MCA_btl_vader_single_copy_mechanism=none"; empty: none set). A transport setting can
  // change the time of Loom's pack path alone (Open MPI with and without cross-memory attach),
  // so timings measured under one setting mislead under another. nullopt: written
  // before Loom recorded them.
  std::optional<std::string> host_settings;

  bool valid(std::string* why) const;
};

// The JSON document: {"format": "loom-calibration", "version": 2, ...}. Version 1 had no
// spreads (one grid per quantity); it is refused with a request to measure again.
constexpr const char* kFormatName = "loom-calibration";
constexpr int kFormatVersion = 2;

std::string to_json(const Calibration& c);
// Parses and validates everything (format, version, sizes, ascending axes, positive
// finite times); on failure returns nullopt and says why.
std::optional<Calibration> from_json(const std::string& text, std::string* why);
std::optional<Calibration> load_file(const std::string& path, std::string* why);
// Creates missing parent directories and replaces `path` atomically (write, then rename).
bool save_file(const Calibration& c, const std::string& path, std::string* why);

// Without a calibration, Pack is chosen for messages of small blocks, where the host's
// datatype engines are known to be slow per block:
constexpr double kDefaultPackBlockBytes = 16;            // always Pack at or below this block
constexpr double kDefaultPackSmallBlockBytes = 256;      // ... and at or below this block
constexpr double kDefaultPackSmallMessageBytes = 65536;  // for messages up to this size
// From this size the rule's packing is weak ground whatever the blocks: both hosts' typed paths
// pipeline a large message, packing on one core while the peer unpacks on the other, where
// Loom's pack, transfer and unpack run one after another (docs/p2p.md, "Not done: pipelining
// of large messages").
// A host may start its weak ground lower (BuiltInRule::weak_from_message_bytes).
constexpr double kRuleWeakFromMessageBytes = 131072;

// The part of the built-in rule that depends on the host MPI (mpi/quirks.hpp answers it), where
// the host's own datatype engine is as fast as Loom's pack path (docs/model.md, "Without a
// calibration"). The defaults are the rule of a host that has no part of its own.
struct BuiltInRule {
  // Messages of at least this many bytes go to the host when their mean block is longer than
  // `host_above_block_bytes`: the host's per-block cost is already low there.
  double host_from_message_bytes = std::numeric_limits<double>::infinity();
  double host_above_block_bytes = kDefaultPackSmallBlockBytes;
  // From this size the rule's packing of any blocks is weak ground (tried as a predicted tie).
  double weak_from_message_bytes = kRuleWeakFromMessageBytes;
};
// With a calibration, Pack must be predicted this much faster than the host: near a tie the
// host's own engine keeps the message. Not more: on Open MPI a message Loom hands to the host
// still pays Loom's cost per call, a few per cent of a sub-microsecond message, so a larger
// requirement left below the host messages that packing would have sent faster
// (docs/model.md, "The choice"); online trials catch a type that differs from the
// calibration's vectors.
constexpr double kPackAdvantageRequired = 1.05;

class Model {
 public:
  // Without a calibration: the conservative built-in rule above, with the host's part. It
  // does not depend on locality.
  Model() = default;
  explicit Model(BuiltInRule rule) : rule_(rule) {}
  explicit Model(Calibration c) : calibration_(std::move(c)) {}
  bool calibrated() const { return calibration_.has_value(); }
  const std::optional<Calibration>& calibration() const { return calibration_; }

  // `bytes` is the packed size of the whole message. Predicted times (one way, or one
  // exchange); NaN without a calibration.
  double host_seconds(Locality where, const TypeShape& type, double bytes,
                      Traffic traffic = Traffic::OneWay) const;
  // Loom's pack path: pack, contiguous send of the packed bytes, unpack.
  double pack_seconds(Locality where, const TypeShape& type, double bytes,
                      Traffic traffic = Traffic::OneWay) const;
  // Pack only when it is predicted kPackAdvantageRequired times faster.
  Method choose(Locality where, const TypeShape& type, double bytes,
                Traffic traffic = Traffic::OneWay) const;
  // Without a calibration: the built-in rule packs this message on its weak ground, blocks
  // longer than kDefaultPackBlockBytes or messages of the host's weak_from_message_bytes or more,
  // where the host's own engine has won as often as it lost (docs/model.md, "Without a
  // calibration"). Online trials treat such a choice as a predicted tie (MethodTrial::wait_for).
  bool rule_packs_on_weak_ground(Locality where, const TypeShape& type, double bytes) const;

 private:
  std::optional<Calibration> calibration_;
  BuiltInRule rule_;
};

}  // namespace loom::model
