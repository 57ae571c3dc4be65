#include "pack/plan.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <numeric>

#include "pack/device/program.hpp"

namespace loom::pack {

using types::Node;

namespace {

int64_t strided_size(const Op& op) {
  int64_t size = op.block;
  for (int d = 0; d < op.ndims; ++d) size *= op.count[d];
  return size;
}

inline const char* at(uintptr_t base, int64_t disp) {
  return reinterpret_cast<const char*>(base + static_cast<uintptr_t>(disp));
}

using detail::Piece;

// The entries of one op range being compiled: copies inline, other ops aside.
struct Level {
  std::vector<Piece> pieces;
  std::vector<Op> ops;
  void add_copy(int64_t disp, int64_t block) { pieces.push_back({disp, block, -1}); }
  void add(const Op& op) {
    pieces.push_back({op.disp, op.block, static_cast<int32_t>(ops.size())});
    ops.push_back(op);
  }
};

// Adds a strided op's blocks to `level` as plain copies, in typemap order.
void add_blocks(const Op& op, std::vector<Piece>& pieces) {
  int64_t index[kMaxDims] = {};
  for (int64_t b = 0; b < op.size / op.block; ++b) {
    int64_t disp = op.disp;
    for (int d = 0; d < op.ndims; ++d) disp += index[d] * op.stride[d];
    pieces.push_back({disp, op.block, -1});
    for (int d = 0; d < op.ndims && ++index[d] == op.count[d]; ++d) index[d] = 0;
  }
}

// Lowers one placed node into the current level; loop bodies are compiled by `compile_body`
// into their own op ranges.
template <typename CompileBody>
void lower(int64_t disp, const types::NodeRef& node, Level& level, CompileBody&& compile_body) {
  switch (node->kind) {
    case Node::Kind::Dense:
      level.add_copy(disp, node->size);
      return;
    case Node::Kind::Sequence:
      for (const auto& item : node->items) lower(disp + item.disp, item.node, level, compile_body);
      return;
    case Node::Kind::Repeat: {
      int64_t counts[kMaxDims], strides[kMaxDims];
      int depth = 0;
      const Node* cur = node.get();
      while (cur->kind == Node::Kind::Repeat && depth < kMaxDims) {
        counts[depth] = cur->count;
        strides[depth] = cur->stride;
        ++depth;
        cur = cur->child.get();
      }
      Op op;
      op.disp = disp;
      if (cur->kind == Node::Kind::Dense) {
        op.kind = Op::Kind::Strided;
        op.ndims = depth;
        op.block = cur->size;
        for (int d = 0; d < depth; ++d) {
          op.count[d] = counts[depth - 1 - d];
          op.stride[d] = strides[depth - 1 - d];
        }
        op.size = strided_size(op);
        if (op.size / op.block <= kListBlocks) {  // joins a list whatever its neighbours (compile)
          add_blocks(op, level.pieces);
          return;
        }
      } else {
        op.kind = Op::Kind::Loop;
        op.ndims = 1;
        op.count[0] = node->count;
        op.stride[0] = node->stride;
        int64_t body_size = 0;
        compile_body(node->child, op.first, op.last, body_size);
        op.size = node->count * body_size;
      }
      level.add(op);
      return;
    }
  }
}

// How many entries lowering `node` adds to a level (a bound for reserving).
int64_t lowered_entries(const types::NodeRef& node) {
  if (node->kind != Node::Kind::Sequence) return 1;
  int64_t n = 0;
  for (const auto& item : node->items) n += lowered_entries(item.node);
  return n;
}

}  // namespace

struct Plan::DeviceCache {
  std::once_flag once;
  std::unique_ptr<device::Program> program;
};

const device::Program& Plan::device_program() const {
  std::call_once(device_->once,
                 [this] { device_->program = std::make_unique<device::Program>(*this); });
  return *device_->program;
}

Plan::Plan(const types::Layout& canonical, int64_t extent, Isa isa)
    : extent_(extent),
      isa_(isa),
      kernels_(row_kernels(isa)),
      lists_(std::make_shared<Lists>()),
      device_(std::make_shared<DeviceCache>()) {
  size_ = types::packed_size(canonical);
  const uint32_t first = compile(canonical);
  // The element program is the last range compiled; move it to the front so that
  // [0, top_ops_) is the program and loop bodies follow.
  std::vector<Op> program(ops_.begin() + first, ops_.end());
  ops_.resize(first);
  set_program(std::move(program));
}

void Plan::set_program(std::vector<Op> program) {
  const uint32_t shift = static_cast<uint32_t>(program.size());
  for (auto& op : ops_)
    if (op.kind == Op::Kind::Loop) op.first += shift, op.last += shift;
  for (auto& op : program)
    if (op.kind == Op::Kind::Loop) op.first += shift, op.last += shift;
  ops_.insert(ops_.begin(), program.begin(), program.end());
  top_ops_ = shift;
  dense_ = one_run() && extent_ == size_;
}

// One List op over copies [first, last). Lengths that vary make the copy loop branch
// unpredictably (random merges of neighbouring indices in an indexed type): when
// splitting every entry into gcd-sized units at most doubles the entries, the list is
// stored in those units and runs a fixed-size loop.
namespace {

struct ListShape {
  int64_t unit = 0, bytes = 0, longest = 0;
  bool split = false;  // stored in units: at most twice as many entries
};

ListShape list_shape(const Piece* first, const Piece* last) {
  ListShape shape;
  for (const Piece* op = first; op != last; ++op) {
    shape.unit = std::gcd(shape.unit, op->block);
    shape.bytes += op->block;
    shape.longest = std::max(shape.longest, op->block);
  }
  shape.split = shape.bytes / shape.unit <= 2 * (last - first);
  return shape;
}

}  // namespace

Op Plan::make_list(const Piece* first, const Piece* last) {
  const auto [unit, bytes, longest, split] = list_shape(first, last);
  Op list;
  list.kind = Op::Kind::List;
  list.first = static_cast<uint32_t>(lists_->disp.size());
  list.size = bytes;
  const size_t entries =
      lists_->disp.size() + static_cast<size_t>(split ? bytes / unit : last - first);
  lists_->disp.reserve(entries);
  lists_->len.reserve(entries);
  for (const Piece* op = first; op != last; ++op) {
    const int64_t piece = split ? unit : op->block;
    for (int64_t off = 0; off < op->block; off += piece) {
      lists_->disp.push_back(op->disp + off);
      lists_->len.push_back(piece);
    }
  }
  list.last = static_cast<uint32_t>(lists_->disp.size());
  list.block = split || unit == longest ? unit : 0;  // uniform length, 0 when lengths differ
  return list;
}

// Compiles `items` into a contiguous op range appended to ops_ and returns its start.
// Runs of plain copies become one List op over the offset/length arrays.
uint32_t Plan::compile(const types::Layout& items) {
  Level level;
  int64_t entries = 0;
  for (const auto& item : items) entries += lowered_entries(item.node);
  level.pieces.reserve(static_cast<size_t>(entries));
  auto compile_body = [this](const types::NodeRef& child, uint32_t& first, uint32_t& last,
                             int64_t& body_size) {
    first = compile({{0, child}});
    last = static_cast<uint32_t>(ops_.size());
    body_size = child->size;
  };
  for (const auto& item : items) lower(item.disp, item.node, level, compile_body);
  // A strided op of a few blocks costs more to dispatch than to copy: its blocks join
  // the neighbouring offset/length list instead (irregular indexed types end up here).
  // Among other items (an indexed type whose gaps repeat for a while) longer strided
  // runs join too, so the list is not broken into many short ops.
  const int64_t list_blocks = level.pieces.size() > 1 ? kListBlocksAmongOthers : kListBlocks;
  const auto joins_list = [&](const Piece& p) {
    if (p.op < 0) return false;
    const Op& op = level.ops[static_cast<size_t>(p.op)];
    return op.kind == Op::Kind::Strided && op.size / op.block <= list_blocks;
  };
  if (std::any_of(level.pieces.begin(), level.pieces.end(), joins_list)) {
    size_t blocks = 0;
    for (const Piece& p : level.pieces)
      blocks += joins_list(p) ? static_cast<size_t>(level.ops[static_cast<size_t>(p.op)].size /
                                                    level.ops[static_cast<size_t>(p.op)].block)
                              : 1;
    std::vector<Piece> expanded;
    expanded.reserve(blocks);
    for (const Piece& p : level.pieces) {
      if (!joins_list(p)) {
        expanded.push_back(p);
        continue;
      }
      add_blocks(level.ops[static_cast<size_t>(p.op)], expanded);
    }
    level.pieces = std::move(expanded);
  }

  const std::vector<Piece>& pieces = level.pieces;
  std::vector<Op> merged;
  for (size_t i = 0; i < pieces.size();) {
    if (pieces[i].op >= 0) {
      merged.push_back(level.ops[static_cast<size_t>(pieces[i++].op)]);
      continue;
    }
    size_t end = i;
    while (end < pieces.size() && pieces[end].op < 0) ++end;
    // A run of copies becomes lists. Greedily, each list grows while its entries still
    // split evenly into one unit length (a struct of indexed_block fields gives one list
    // per field); stretches too short to be worth a list of their own are gathered
    // into one mixed list.
    auto even_stretch = [&](size_t from) {
      size_t to = from + 1;
      int64_t unit = pieces[from].block, bytes = unit;
      for (; to < end; ++to) {
        const int64_t u = std::gcd(unit, pieces[to].block), b = bytes + pieces[to].block;
        if (b / u > 2 * static_cast<int64_t>(to + 1 - from)) break;
        unit = u, bytes = b;
      }
      return to;
    };
    while (i < end) {
      size_t stop = even_stretch(i);
      if (stop - i < kUniformListRun)
        while (stop < end && even_stretch(stop) - stop < kUniformListRun) stop = even_stretch(stop);
      if (stop - i == 1) {
        Op copy;
        copy.kind = Op::Kind::Copy;
        copy.disp = pieces[i].disp;
        copy.block = copy.size = pieces[i].block;
        merged.push_back(copy);
      } else {
        merged.push_back(make_list(pieces.data() + i, pieces.data() + stop));
      }
      i = stop;
    }
  }
  const uint32_t first = static_cast<uint32_t>(ops_.size());
  ops_.insert(ops_.end(), merged.begin(), merged.end());
  return first;
}

namespace {

// Calls visit(slab_origin) for each 2-D slab (the two innermost dimensions) of a
// strided op, in typemap order.
template <typename Visit>
void for_each_slab(const Op& op, uintptr_t base, Visit&& visit) {
  const char* origin = at(base, op.disp);
  if (op.ndims <= 2) return visit(origin);
  // Odometer over the dimensions outside the slab.
  int64_t index[kMaxDims] = {};
  int64_t slabs = 1;
  for (int d = 2; d < op.ndims; ++d) slabs *= op.count[d];
  const char* slab = origin;
  for (int64_t k = 0; k < slabs; ++k) {
    visit(slab);
    for (int d = 2; d < op.ndims; ++d) {
      slab += op.stride[d];
      if (++index[d] < op.count[d]) break;
      slab -= op.count[d] * op.stride[d];
      index[d] = 0;
    }
  }
}

Slab slab_of(const Op& op) {
  return {op.block, op.count[0], op.stride[0], op.ndims >= 2 ? op.count[1] : 1,
          op.ndims >= 2 ? op.stride[1] : 0};
}

}  // namespace

template <bool kPack>
void Plan::run_strided(const Op& op, uintptr_t base, char* packed, bool out_of_cache) const {
  Slab slab = slab_of(op);
  slab.out_of_cache = out_of_cache;
  const int64_t slab_bytes = slab.block * slab.n * slab.rows;
  for_each_slab(op, base, [&](const char* origin) {
    if constexpr (kPack)
      kernels_.pack(packed, origin, slab);
    else
      kernels_.unpack(const_cast<char*>(origin), packed, slab);
    packed += slab_bytes;
  });
}

template <bool kPack>
void Plan::run(uint32_t first, uint32_t last, uintptr_t base, char*& packed,
               bool out_of_cache) const {
  for (uint32_t i = first; i < last; ++i) {
    const Op& op = ops_[i];
    switch (op.kind) {
      case Op::Kind::Copy:
        if constexpr (kPack)
          std::memcpy(packed, at(base, op.disp), static_cast<size_t>(op.block));
        else
          std::memcpy(const_cast<char*>(at(base, op.disp)), packed, static_cast<size_t>(op.block));
        break;
      case Op::Kind::Strided:
        run_strided<kPack>(op, base, packed, out_of_cache);
        break;
      case Op::Kind::List: {
        const BlockList list{lists_->disp.data() + op.first, lists_->len.data() + op.first,
                             static_cast<int64_t>(op.last - op.first), op.block};
        if constexpr (kPack)
          kernels_.pack_list(packed, base, list);
        else
          kernels_.unpack_list(base, packed, list);
        break;
      }
      case Op::Kind::Loop: {
        char* out = packed;
        for (int64_t k = 0; k < op.count[0]; ++k)
          run<kPack>(op.first, op.last, base + static_cast<uintptr_t>(op.disp + k * op.stride[0]),
                     out, out_of_cache);
        break;
      }
    }
    packed += op.size;
  }
}

template <bool kPack>
void Plan::execute(uintptr_t base, int64_t count, char* packed) const {
  if (count <= 0 || size_ == 0) return;
  if (dense_) {  // one contiguous run for the whole count
    char* user = const_cast<char*>(at(base, ops_[0].disp));
    const size_t bytes = static_cast<size_t>(count * size_);
    if constexpr (kPack)
      std::memcpy(packed, user, bytes);
    else
      std::memcpy(user, packed, bytes);
    return;
  }
  const bool out_of_cache = count * size_ > kOutOfCacheBytes;
  if (count > 1 && top_ops_ == 1) {
    // A single-op element: fold the count into the op as one more (outer) dimension.
    Op op = ops_[0];
    if (op.kind == Op::Kind::Copy) {
      op.kind = Op::Kind::Strided;
      op.ndims = 0;
    }
    if (op.kind == Op::Kind::Strided && op.ndims < kMaxDims) {
      if (op.ndims > 0 && extent_ == op.count[op.ndims - 1] * op.stride[op.ndims - 1]) {
        op.count[op.ndims - 1] *= count;
      } else if (op.ndims == 0 && extent_ == op.block) {
        op.block *= count;
        op.ndims = 1;
        op.count[0] = 1;
        op.stride[0] = op.block;
      } else {
        op.count[op.ndims] = count;
        op.stride[op.ndims] = extent_;
        ++op.ndims;
      }
      return run_strided<kPack>(op, base, packed, out_of_cache);
    }
  }
  for (int64_t i = 0; i < count; ++i)
    run<kPack>(0, top_ops_, base + static_cast<uintptr_t>(i * extent_), packed, out_of_cache);
}

void Plan::pack(const void* base, int64_t count, void* packed) const {
  execute<true>(reinterpret_cast<uintptr_t>(base), count, static_cast<char*>(packed));
}

void Plan::unpack(const void* packed, int64_t count, void* base) const {
  execute<false>(reinterpret_cast<uintptr_t>(base), count,
                 const_cast<char*>(static_cast<const char*>(packed)));
}

std::vector<Op> Plan::prefix_program(uint32_t first, uint32_t last, int64_t bytes) {
  std::vector<Op> out;
  for (uint32_t i = first; i < last && bytes > 0; ++i) {
    const Op op = ops_[i];  // a copy: ops_ may grow below
    if (op.size <= bytes) {
      out.push_back(op);
      bytes -= op.size;
      continue;
    }
    auto copy_at = [&out](int64_t disp, int64_t length) {
      Op copy;
      copy.disp = disp;
      copy.block = copy.size = length;
      out.push_back(copy);
    };
    switch (op.kind) {
      case Op::Kind::Copy:
        copy_at(op.disp, bytes);
        break;
      case Op::Kind::Strided: {
        // Whole iterations of each dimension, outermost first, then part of one block.
        int64_t origin = op.disp, inner = op.size;
        for (int d = op.ndims - 1; d >= 0; --d) {
          inner /= op.count[d];
          const int64_t whole = bytes / inner;
          if (whole == 0) continue;
          Op part = op;
          part.ndims = d + 1;
          part.count[d] = whole;
          part.disp = origin;
          part.size = whole * inner;
          out.push_back(part);
          origin += whole * op.stride[d];
          bytes -= part.size;
        }
        if (bytes > 0) copy_at(origin, bytes);
        break;
      }
      case Op::Kind::List: {
        uint32_t e = op.first;
        int64_t taken = 0;
        for (; taken + lists_->len[e] <= bytes; ++e) taken += lists_->len[e];
        if (e > op.first) {
          Op part = op;
          part.last = e;
          part.size = taken;
          out.push_back(part);
        }
        if (bytes > taken) copy_at(lists_->disp[e], bytes - taken);
        break;
      }
      case Op::Kind::Loop: {
        const int64_t body = op.size / op.count[0];
        const int64_t whole = bytes / body;
        if (whole > 0) {
          Op part = op;
          part.count[0] = whole;
          part.size = whole * body;
          out.push_back(part);
        }
        const int64_t rest = bytes - whole * body;
        if (rest > 0) {  // one more iteration, its body cut short: a range of its own
          const std::vector<Op> cut = prefix_program(op.first, op.last, rest);
          Op part = op;
          part.disp = op.disp + whole * op.stride[0];
          part.count[0] = 1;
          part.stride[0] = 0;
          part.size = rest;
          part.first = static_cast<uint32_t>(ops_.size());
          ops_.insert(ops_.end(), cut.begin(), cut.end());
          part.last = static_cast<uint32_t>(ops_.size());
          out.push_back(part);
        }
        break;
      }
    }
    break;
  }
  return out;
}

Plan Plan::prefix(int64_t bytes) const {
  Plan part(*this);
  part.device_ = std::make_shared<DeviceCache>();
  part.size_ = std::clamp<int64_t>(bytes, 0, size_);
  part.set_program(part.prefix_program(0, top_ops_, part.size_));
  return part;
}

std::string Plan::kind() const {
  if (size_ == 0) return "empty";
  if (top_ops_ == 1) {
    const Op& op = ops_[0];
    switch (op.kind) {
      case Op::Kind::Copy:
        return "dense";
      case Op::Kind::Strided:
        return "strided-" + std::to_string(op.ndims) + "d";
      case Op::Kind::List:
        return "list";
      case Op::Kind::Loop:
        break;
    }
  }
  return "program";
}

std::string Plan::describe() const {
  std::string out = kind() + " size=" + std::to_string(size_) +
                    " extent=" + std::to_string(extent_) + " isa=" + isa_name(isa_) +
                    " ops=" + std::to_string(ops_.size());
  int64_t by_kind[4] = {};
  for (const Op& op : ops_) ++by_kind[static_cast<int>(op.kind)];
  out += " (copy " + std::to_string(by_kind[0]) + ", strided " + std::to_string(by_kind[1]) +
         ", list " + std::to_string(by_kind[2]) + ", loop " + std::to_string(by_kind[3]) + ")";
  if (top_ops_ >= 1 && ops_[0].kind == Op::Kind::Strided) {
    const Op& op = ops_[0];
    out += " block=" + std::to_string(op.block) + " dims=";
    for (int d = 0; d < op.ndims; ++d) {
      if (d) out += ',';
      out += std::to_string(op.count[d]);
      out += 'x';
      out += std::to_string(op.stride[d]);
    }
  }
  if (!lists_->disp.empty()) out += " list_entries=" + std::to_string(lists_->disp.size());
  return out;
}

}  // namespace loom::pack
