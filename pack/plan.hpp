// A Plan is a canonical layout compiled into the cheapest executor: one copy for dense
// types, N-dimensional strided-block kernels for regular types, a compact offset/length
// list for irregular ones, and loops over sub-programs for everything else. Plans are
// immutable after construction and safe to share between threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pack/kernels.hpp"
#include "types/ir.hpp"

namespace loom::pack {

namespace device {
class Program;
}

constexpr int kMaxDims = 8;
// Strided ops of at most this many blocks are executed as offset/length list entries.
constexpr int64_t kListBlocks = 8;
constexpr int64_t kListBlocksAmongOthers = 32;
// Runs of at least this many copies that split into one unit length get a list of
// their own.
constexpr size_t kUniformListRun = 16;

struct Op {
  enum class Kind : uint8_t { Copy, Strided, List, Loop };
  Kind kind = Kind::Copy;
  int ndims = 0;                 // Strided: dims used; Loop: always 1
  int64_t disp = 0;              // byte displacement from the element origin
  int64_t block = 0;             // Copy: length; Strided: bytes per block
  int64_t size = 0;              // packed bytes the op produces
  int64_t count[kMaxDims] = {};  // Strided: innermost first; Loop: iterations in count[0]
  int64_t stride[kMaxDims] = {};
  uint32_t first = 0, last = 0;  // List: entries [first,last); Loop: body ops [first,last)
};

namespace detail {
// An entry of an op list being compiled: a plain copy of `block` bytes at `disp`, or (op >= 0)
// the compiler's op number `op`. Irregular types lower to thousands of copies; an entry is 24
// bytes where an Op is ~180.
struct Piece {
  int64_t disp = 0, block = 0;
  int32_t op = -1;
};
}  // namespace detail

class Plan {
 public:
  // `extent` is the type's extent: element i of a count starts i * extent bytes later.
  Plan(const types::Layout& canonical, int64_t extent, Isa isa);

  int64_t size() const { return size_; }
  int64_t extent() const { return extent_; }
  Isa isa() const { return isa_; }
  bool dense() const { return dense_; }  // any count is one contiguous copy
  // One element is one contiguous copy (its extent may be larger).
  bool one_run() const { return top_ops_ == 1 && ops_[0].kind == Op::Kind::Copy; }
  // Packs `count` elements starting at `base` (which may be MPI_BOTTOM, i.e. null, with
  // absolute displacements) into `packed`, which receives count * size() bytes.
  void pack(const void* base, int64_t count, void* packed) const;
  void unpack(const void* packed, int64_t count, void* base) const;
  // The first `bytes` packed bytes of one element (0 < bytes < size()) as a plan of their own:
  // unpacking it writes only the places those bytes belong to, where a message ends inside an
  // element (MPI changes only the received entries of a receive buffer).
  Plan prefix(int64_t bytes) const;
  // "dense", "strided-2d", "list", "program"...
  std::string kind() const;
  std::string describe() const;
  const std::vector<Op>& ops() const { return ops_; }
  uint32_t top_ops() const { return top_ops_; }  // ops [0, top_ops()) form one element
  const std::vector<int64_t>& list_disp() const { return lists_->disp; }
  const std::vector<int64_t>& list_len() const { return lists_->len; }
  // The plan compiled for data-parallel executors (a GPU, the emulated device), built on
  // first use and shared by copies of this plan.
  const device::Program& device_program() const;

 private:
  uint32_t compile(const types::Layout& items);
  Op make_list(const detail::Piece* first, const detail::Piece* last);
  void add_node(int64_t disp, const types::NodeRef& node);
  template <bool kPack>
  void run(uint32_t first, uint32_t last, uintptr_t base, char*& packed, bool out_of_cache) const;
  template <bool kPack>
  void run_strided(const Op& op, uintptr_t base, char* packed, bool out_of_cache) const;
  template <bool kPack>
  void execute(uintptr_t base, int64_t count, char* packed) const;
  // Puts `program` (one element's ops) in front of ops_, as [0, top_ops_).
  void set_program(std::vector<Op> program);
  // The ops that produce the first `bytes` packed bytes of ops [first, last) (fewer than they
  // produce), from the same origin; a loop body cut short is appended to ops_ as its own range.
  std::vector<Op> prefix_program(uint32_t first, uint32_t last, int64_t bytes);

  std::vector<Op> ops_;
  uint32_t top_ops_ = 0;  // ops [0, top_ops_) form the element's program
  bool dense_ = false;    // any count is one contiguous copy
  int64_t size_ = 0, extent_ = 0;
  Isa isa_;
  RowKernels kernels_;
  // List entries: written while compiling, then shared by copies of the plan and its prefixes.
  struct Lists {
    std::vector<int64_t> disp, len;
  };
  std::shared_ptr<Lists> lists_;
  struct DeviceCache;
  std::shared_ptr<DeviceCache> device_;
};

}  // namespace loom::pack
