#include "mpi/type_decode.hpp"

#include <sys/mman.h>
#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

namespace loom::mpi {
namespace {

using types::Layout;
using types::make_dense;
using types::make_repeat;
using types::make_sequence;
using types::NodeRef;

struct Unsupported {
  std::string why;
};

MPI_Aint extent_of(MPI_Datatype t) {
  MPI_Aint lb = 0, extent = 0;
  PMPI_Type_get_extent(t, &lb, &extent);
  return extent;
}

// Pair types have a gap between their members, so they are not one dense run.
template <typename First, typename Second>
NodeRef pair_layout() {
  struct Pair {
    First a;
    Second b;
  };
  return make_sequence({{0, make_dense(sizeof(First))},
                        {static_cast<int64_t>(offsetof(Pair, b)), make_dense(sizeof(Second))}});
}

NodeRef named_layout_guess(MPI_Datatype t) {
  int size = 0;
  MPI_Aint lb = 0, extent = 0;
  PMPI_Type_size(t, &size);
  PMPI_Type_get_extent(t, &lb, &extent);
  if (lb == 0 && extent == size) return make_dense(size);
  if (t == MPI_DOUBLE_INT) return pair_layout<double, int>();
  if (t == MPI_LONG_INT) return pair_layout<long, int>();
  if (t == MPI_SHORT_INT) return pair_layout<short, int>();
  if (t == MPI_FLOAT_INT) return pair_layout<float, int>();
  if (t == MPI_LONG_DOUBLE_INT) return pair_layout<long double, int>();
  if (t == MPI_2INT) return pair_layout<int, int>();
  return nullptr;
}

// Does the host pack `t` exactly as a byte copy of `layout`? Hosts may not: MPICH's
// strided kernels copy long double with x87 loads and stores, which skip the 6 padding
// bytes. The probe packs a small vector of `t` (so the host's strided path runs, not a
// plain memcpy) into two differently pre-filled buffers, exposing skipped bytes.
bool host_packs_as(MPI_Datatype t, const NodeRef& layout) {
  MPI_Aint lb = 0, extent = 0;
  PMPI_Type_get_extent(t, &lb, &extent);
  const int count = 2, blocklen = 2, stride = 3;
  const types::Layout probe = {
      {0, make_repeat(count, stride * extent, make_repeat(blocklen, extent, layout))}};
  const types::Bounds b = types::bounds(probe);
  const int size = static_cast<int>(types::packed_size(probe));
  if (size == 0) return true;  // MPI_LB, MPI_UB: nothing to pack, nothing to disagree on
  std::vector<char> src(static_cast<size_t>(b.hi)), expect;
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<char>(i * 37 + 11);
  types::for_each_block(probe, [&](int64_t off, int64_t len) {
    expect.insert(expect.end(), src.begin() + off, src.begin() + off + len);
  });
  MPI_Datatype vector;
  if (PMPI_Type_vector(count, blocklen, stride, t, &vector) != MPI_SUCCESS) return false;
  PMPI_Type_commit(&vector);
  bool same = true;
  for (char fill : {'\x00', '\xff'}) {
    std::vector<char> out(static_cast<size_t>(size), fill);
    int position = 0;
    same = same &&
           PMPI_Pack(src.data(), 1, vector, out.data(), size, &position, MPI_COMM_SELF) ==
               MPI_SUCCESS &&
           position == size && out == expect;
  }
  PMPI_Type_free(&vector);
  return same;
}

NodeRef named_layout(MPI_Datatype t) {
  static std::mutex mutex;
  static std::map<MPI_Datatype, NodeRef> known;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = known.find(t); it != known.end()) {
    if (!it->second) throw Unsupported{"the host packs this named type differently"};
    return it->second;
  }
  NodeRef layout = named_layout_guess(t);
  if (layout && !host_packs_as(t, layout)) layout = nullptr;
  known[t] = layout;
  if (!layout) throw Unsupported{"the host packs this named type differently"};
  return layout;
}

// Throws when the host could not describe `t` (TypeContents::why).
struct Contents : TypeContents {
  explicit Contents(MPI_Datatype t) : TypeContents(t) {
    if (!why.empty()) throw Unsupported{why};
  }
};

NodeRef decode(MPI_Datatype t, int depth, bool covered);

// `count` copies of `child`, each `stride` bytes apart (the MPI "blocklength" pattern).
NodeRef run_of(int64_t count, MPI_Datatype child_type, const NodeRef& child) {
  return make_repeat(count, extent_of(child_type), child);
}

NodeRef decode_subarray(const Contents& c, const NodeRef& child) {
  const int ndims = c.ints[0];
  const int* sizes = &c.ints[1];
  const int* subsizes = &c.ints[1 + ndims];
  const int* starts = &c.ints[1 + 2 * ndims];
  const int order = c.ints[1 + 3 * ndims];
  const int64_t element = extent_of(c.types[0]);
  // Strides of each dimension in bytes; dimension order per C or Fortran layout.
  std::vector<int64_t> stride(ndims);
  int64_t step = element;
  for (int k = 0; k < ndims; ++k) {
    const int d = order == MPI_ORDER_C ? ndims - 1 - k : k;
    stride[d] = step;
    step *= sizes[d];
  }
  NodeRef node = child;
  int64_t disp = 0;
  for (int k = 0; k < ndims; ++k) {
    const int d = order == MPI_ORDER_C ? ndims - 1 - k : k;  // innermost first
    node = make_repeat(subsizes[d], stride[d], node);
    disp += starts[d] * stride[d];
  }
  return make_sequence({{disp, node}});
}

// MPI_Type_create_darray: each dimension keeps the runs of indices this process owns
// (one run for BLOCK, one per cycle for CYCLIC(k), all for NONE), in increasing order;
// dimensions nest in array order. The process grid is row-major whatever the order.
NodeRef decode_darray(const Contents& c, const NodeRef& child) {
  const int rank = c.ints[1];
  const int ndims = c.ints[2];
  const int* gsizes = &c.ints[3];
  const int* distribs = &c.ints[3 + ndims];
  const int* dargs = &c.ints[3 + 2 * ndims];
  const int* psizes = &c.ints[3 + 3 * ndims];
  const int order = c.ints[3 + 4 * ndims];
  std::vector<int> coord(ndims);
  for (int d = ndims - 1, r = rank; d >= 0; --d) {
    coord[d] = r % psizes[d];
    r /= psizes[d];
  }
  std::vector<int64_t> stride(ndims);
  int64_t step = extent_of(c.types[0]);
  for (int k = 0; k < ndims; ++k) {
    const int d = order == MPI_ORDER_C ? ndims - 1 - k : k;
    stride[d] = step;
    step *= gsizes[d];
  }
  NodeRef node = child;
  for (int k = 0; k < ndims; ++k) {
    const int d = order == MPI_ORDER_C ? ndims - 1 - k : k;  // innermost first
    const int64_t g = gsizes[d], p = psizes[d];
    int64_t block = 0, cycle = 0;
    switch (distribs[d]) {
      case MPI_DISTRIBUTE_NONE:
        block = g, cycle = g;
        break;
      case MPI_DISTRIBUTE_BLOCK:
        block = dargs[d] == MPI_DISTRIBUTE_DFLT_DARG ? (g + p - 1) / p : dargs[d];
        cycle = g;  // one block per process
        break;
      case MPI_DISTRIBUTE_CYCLIC:
        block = dargs[d] == MPI_DISTRIBUTE_DFLT_DARG ? 1 : dargs[d];
        cycle = block * p;
        break;
      default:
        throw Unsupported{"unknown darray distribution"};
    }
    std::vector<types::Placed> runs;
    const int64_t first = distribs[d] == MPI_DISTRIBUTE_NONE ? 0 : coord[d] * block;
    for (int64_t start = first; start < g; start += cycle) {
      const int64_t len = std::min(block, g - start);
      runs.push_back({start * stride[d], make_repeat(len, stride[d], node)});
      if (distribs[d] != MPI_DISTRIBUTE_CYCLIC) break;
    }
    node = make_sequence(std::move(runs));
  }
  return node;
}

// The basic types met while decoding one type (per thread: decoding is reentrant only
// across threads).
thread_local std::vector<MPI_Datatype>* basic_types_seen = nullptr;

bool is_pair_type(MPI_Datatype t) {
  return t == MPI_DOUBLE_INT || t == MPI_LONG_INT || t == MPI_SHORT_INT || t == MPI_FLOAT_INT ||
         t == MPI_LONG_DOUBLE_INT || t == MPI_2INT;
}

void note_basic_type(MPI_Datatype t) {
  int size = 0;
  PMPI_Type_size(t, &size);
  if (!basic_types_seen || size == 0) return;  // MPI_LB/MPI_UB carry no data
  for (MPI_Datatype seen : *basic_types_seen)
    if (seen == t) return;
  basic_types_seen->push_back(t);
}

// The derived parts checked against the host while decoding one type (see decode_datatype).
struct PartCheck {
  int64_t span_limit = 0;  // parts whose true extent is at most this are packed by the host
  std::vector<MPI_Datatype> agreed;  // handles stay valid while the decoded type holds them
};
thread_local PartCheck* part_check = nullptr;

// Whether the host packs one element of part `t` as the typemap `node` says.
bool host_agrees_on_part(MPI_Datatype t, const NodeRef& node) {
  MPI_Count size = 0, true_lb = 0, true_extent = 0;
  PMPI_Type_size_x(t, &size);
  PMPI_Type_get_true_extent_x(t, &true_lb, &true_extent);
  const Layout layout{{0, node}};
  if (size != types::packed_size(layout)) return false;
  // The scratch copy covers the host's true bounds: the layout must not reach past them
  // (Open MPI's vector(2, 1, -1, MPI_BYTE) has true_lb 0, the typemap's is -1).
  const types::Bounds b = types::bounds(layout);
  if (size > 0 && (b.lo != true_lb || b.hi - b.lo != true_extent)) return false;
  // A part the program built but never committed cannot be packed (MPICH refuses it, fatally
  // under the default error handler); a committed duplicate has the same typemap.
  MPI_Datatype committed = MPI_DATATYPE_NULL;
  if (PMPI_Type_dup(t, &committed) != MPI_SUCCESS) return false;
  const bool same =
      PMPI_Type_commit(&committed) == MPI_SUCCESS &&
      host_packs_same(committed, size, true_lb, true_extent, [&](const void* base, void* out) {
        auto* to = static_cast<char*>(out);
        types::for_each_block(layout, [&](int64_t off, int64_t len) {
          std::memcpy(to, static_cast<const char*>(base) + off, static_cast<size_t>(len));
          to += len;
        });
      });
  PMPI_Type_free(&committed);
  return same;
}

NodeRef decode_derived(const Contents& c, const std::function<NodeRef(size_t)>& child) {
  switch (c.combiner) {
    case MPI_COMBINER_DUP:
    case MPI_COMBINER_RESIZED:  // same typemap; lb/extent come from the host
      return child(0);
    case MPI_COMBINER_CONTIGUOUS:
      return run_of(c.ints[0], c.types[0], child(0));
    case MPI_COMBINER_VECTOR: {
      const NodeRef block = run_of(c.ints[1], c.types[0], child(0));
      return make_repeat(c.ints[0], static_cast<int64_t>(c.ints[2]) * extent_of(c.types[0]), block);
    }
    case MPI_COMBINER_HVECTOR: {
      const NodeRef block = run_of(c.ints[1], c.types[0], child(0));
      return make_repeat(c.ints[0], c.addrs[0], block);
    }
    case MPI_COMBINER_INDEXED:
    case MPI_COMBINER_HINDEXED: {
      const int count = c.ints[0];
      const NodeRef element = child(0);
      const int64_t extent = extent_of(c.types[0]);
      // Blocks of one short length share one node: an indexed type of thousands of blocks has a
      // few lengths. A block of a contiguous element is one dense run, as canonicalize would make
      // it.
      const bool contiguous = element->kind == types::Node::Kind::Dense && element->size == extent;
      NodeRef shared[64];
      std::vector<types::Placed> items;
      items.reserve(count);
      for (int i = 0; i < count; ++i) {
        const int64_t disp = c.combiner == MPI_COMBINER_INDEXED
                                 ? static_cast<int64_t>(c.ints[1 + count + i]) * extent
                                 : static_cast<int64_t>(c.addrs[i]);
        const int length = c.ints[1 + i];
        const auto make = [&] {
          return contiguous ? make_dense(length * extent) : make_repeat(length, extent, element);
        };
        if (length >= 0 && length < 64) {
          NodeRef& block = shared[length];
          if (!block) block = make();
          items.push_back({disp, block});
        } else {
          items.push_back({disp, make()});
        }
      }
      return make_sequence(std::move(items));
    }
    case MPI_COMBINER_INDEXED_BLOCK:
    case MPI_COMBINER_HINDEXED_BLOCK: {
      const int count = c.ints[0];
      const int64_t extent = extent_of(c.types[0]);
      const NodeRef block = run_of(c.ints[1], c.types[0], child(0));
      std::vector<types::Placed> items;
      items.reserve(count);
      for (int i = 0; i < count; ++i) {
        const int64_t disp = c.combiner == MPI_COMBINER_INDEXED_BLOCK
                                 ? static_cast<int64_t>(c.ints[2 + i]) * extent
                                 : static_cast<int64_t>(c.addrs[i]);
        items.push_back({disp, block});
      }
      return make_sequence(std::move(items));
    }
    case MPI_COMBINER_STRUCT: {
      const int count = c.ints[0];
      std::vector<types::Placed> items;
      items.reserve(count);
      for (int i = 0; i < count; ++i) {
        // Open MPI 4.1 spaces count > 1 elements of such a struct by size instead of
        // extent, and MPICH 4.0 crashes on it: Loom's bytes must be the host's.
        int member_size = 0;
        PMPI_Type_size(c.types[i], &member_size);
        if (member_size == 0 && c.ints[1 + i] > 0 && !is_named(c.types[i]))
          throw Unsupported{"struct with an empty derived member"};
      }
      for (int i = 0; i < count; ++i)
        items.push_back(
            {static_cast<int64_t>(c.addrs[i]), run_of(c.ints[1 + i], c.types[i], child(i))});
      return make_sequence(std::move(items));
    }
    case MPI_COMBINER_SUBARRAY:
      return decode_subarray(c, child(0));
    case MPI_COMBINER_DARRAY:
      return decode_darray(c, child(0));
    default:
      throw Unsupported{"combiner " + std::to_string(c.combiner) + " is not decoded by Loom"};
  }
}

// `covered`: an enclosing type is checked against the host as a whole. Otherwise the
// largest parts small enough to pack are checked one by one, so that a host quirk inside a
// type too large to check whole still leaves that type to the host.
NodeRef decode(MPI_Datatype t, int depth, bool covered) {
  if (depth > 64) throw Unsupported{"type nesting deeper than 64"};
  Contents c(t);
  if (c.combiner == MPI_COMBINER_NAMED) {
    note_basic_type(t);
    return named_layout(t);
  }
  bool check_here = false;
  if (!covered && part_check) {
    if (std::find(part_check->agreed.begin(), part_check->agreed.end(), t) !=
        part_check->agreed.end())
      covered = true;
    else {
      MPI_Count true_lb = 0, true_extent = 0;
      PMPI_Type_get_true_extent_x(t, &true_lb, &true_extent);
      check_here = true_extent <= part_check->span_limit;
    }
  }
  NodeRef node = decode_derived(
      c, [&](size_t i) { return decode(c.types[i], depth + 1, covered || check_here); });
  if (check_here) {
    if (!host_agrees_on_part(t, node))
      throw Unsupported{"the host packs a part of the type differently"};
    part_check->agreed.push_back(t);
  }
  return node;
}

// Appends `t`'s constructor calls, down to named types, to `out`; false past 64 levels.
bool append_signature(MPI_Datatype t, int depth, std::string* out) {
  if (depth > 64) return false;
  Contents c(t);
  const auto append = [out](const void* data, size_t bytes) {
    out->append(static_cast<const char*>(data), bytes);
  };
  append(&c.combiner, sizeof c.combiner);
  if (c.combiner == MPI_COMBINER_NAMED) {
    append(&t, sizeof t);  // predefined handles are fixed for the process's lifetime
    return true;
  }
  const size_t counts[3] = {c.ints.size(), c.addrs.size(), c.types.size()};
  append(counts, sizeof counts);
  append(c.ints.data(), c.ints.size() * sizeof(int));
  append(c.addrs.data(), c.addrs.size() * sizeof(MPI_Aint));
  for (MPI_Datatype child : c.types)
    if (!append_signature(child, depth + 1, out)) return false;
  return true;
}

}  // namespace

#if MPI_VERSION >= 4
namespace {

// A large-count constructor's MPI_Count values (`large`, MPI 4.0 section 5.1.13: every count
// and displacement; `in` keeps the int arguments it still has) in the classic constructor's
// int and MPI_Aint lists. False when a count does not fit an int or the lists do not match
// the combiner.
bool classic_from_large(int combiner, const std::vector<int>& in,
                        const std::vector<MPI_Count>& large, std::vector<int>* ints,
                        std::vector<MPI_Aint>* addrs) {
  bool fits = true;
  const auto push_ints = [&](size_t from, size_t to) {
    for (size_t i = from; i < to && i < large.size(); ++i) {
      fits = fits && large[i] >= INT_MIN && large[i] <= INT_MAX;
      ints->push_back(static_cast<int>(large[i]));
    }
  };
  const auto push_addrs = [&](size_t from, size_t to) {
    for (size_t i = from; i < to && i < large.size(); ++i)
      addrs->push_back(static_cast<MPI_Aint>(large[i]));
  };
  const size_t n = large.size();
  const MPI_Count count = n > 0 ? large[0] : 0;
  ints->clear();
  addrs->clear();
  switch (combiner) {
    case MPI_COMBINER_CONTIGUOUS:  // count
    case MPI_COMBINER_VECTOR:      // count, blocklength, stride
      if (n != (combiner == MPI_COMBINER_VECTOR ? 3u : 1u) || !in.empty()) return false;
      push_ints(0, n);
      break;
    case MPI_COMBINER_INDEXED:        // count, blocklengths[count], displacements[count]
    case MPI_COMBINER_INDEXED_BLOCK:  // count, blocklength, displacements[count]
      if (count < 0 ||
          n != static_cast<size_t>(count) * (combiner == MPI_COMBINER_INDEXED ? 2 : 1) +
                   (combiner == MPI_COMBINER_INDEXED ? 1 : 2))
        return false;
      push_ints(0, n);
      break;
    case MPI_COMBINER_HVECTOR:  // count, blocklength, stride (bytes)
      if (n != 3) return false;
      push_ints(0, 2);
      push_addrs(2, 3);
      break;
    case MPI_COMBINER_HINDEXED:          // count, blocklengths[count], displacements[count]
    case MPI_COMBINER_STRUCT:            // the same, and the types
    case MPI_COMBINER_HINDEXED_BLOCK: {  // count, blocklength, displacements[count]
      const size_t lengths =
          combiner == MPI_COMBINER_HINDEXED_BLOCK ? 1 : static_cast<size_t>(count);
      if (count < 0 || n != 1 + lengths + static_cast<size_t>(count)) return false;
      push_ints(0, 1 + lengths);
      push_addrs(1 + lengths, n);
      break;
    }
    case MPI_COMBINER_SUBARRAY: {  // ints: ndims, order; large: sizes, subsizes, starts
      if (in.size() != 2 || in[0] < 0 || n != 3 * static_cast<size_t>(in[0])) return false;
      ints->push_back(in[0]);
      push_ints(0, n);
      ints->push_back(in[1]);
      break;
    }
    case MPI_COMBINER_DARRAY: {  // ints: size, rank, ndims, distribs, dargs, psizes, order;
      // large: gsizes
      if (in.size() < 4 || in[2] < 0) return false;
      const size_t ndims = static_cast<size_t>(in[2]);
      if (in.size() != 4 + 3 * ndims || n != ndims) return false;
      ints->assign(in.begin(), in.begin() + 3);
      push_ints(0, n);
      ints->insert(ints->end(), in.begin() + 3, in.end());
      break;
    }
    case MPI_COMBINER_RESIZED:  // lb, extent
      if (n != 2) return false;
      push_addrs(0, 2);
      break;
    default:
      return false;
  }
  return fits;
}

}  // namespace
#endif

TypeContents::TypeContents(MPI_Datatype type) {
#if MPI_VERSION >= 4
  MPI_Count ni = 0, na = 0, nc = 0, nt = 0;
  if (PMPI_Type_get_envelope_c(type, &ni, &na, &nc, &nt, &combiner) != MPI_SUCCESS) {
    combiner = -1;
    why = "MPI_Type_get_envelope_c failed";
    return;
  }
  if (combiner == MPI_COMBINER_NAMED) return;
  ints.resize(static_cast<size_t>(ni));
  addrs.resize(static_cast<size_t>(na));
  types.resize(static_cast<size_t>(nt));
  std::vector<MPI_Count> large(static_cast<size_t>(nc));
  if (PMPI_Type_get_contents_c(type, ni, na, nc, nt, ints.data(), addrs.data(), large.data(),
                               types.data()) != MPI_SUCCESS) {
    types.clear();  // nothing was returned to free
    why = "MPI_Type_get_contents_c failed";
  } else if (nc > 0 &&
             !classic_from_large(combiner, std::vector<int>(ints), large, &ints, &addrs)) {
    why = "a large count of the type does not fit an int";
  }
#else
  int ni = 0, na = 0, nt = 0;
  if (PMPI_Type_get_envelope(type, &ni, &na, &nt, &combiner) != MPI_SUCCESS) {
    combiner = -1;
    why = "MPI_Type_get_envelope failed";
    return;
  }
  if (combiner == MPI_COMBINER_NAMED) return;
  ints.resize(static_cast<size_t>(ni));
  addrs.resize(static_cast<size_t>(na));
  types.resize(static_cast<size_t>(nt));
  if (PMPI_Type_get_contents(type, ni, na, nt, ints.data(), addrs.data(), types.data()) !=
      MPI_SUCCESS) {
    types.clear();
    why = "MPI_Type_get_contents failed";
  }
#endif
  if (!why.empty()) {
    release_types();
    combiner = -1;
    ints.clear();
    addrs.clear();
  }
}

TypeContents::~TypeContents() {
  release_types();
}

void TypeContents::release_types() {
  for (MPI_Datatype& child : types) {
    const int comb = type_combiner(child);
    // Predefined handles, F90 parameterized types included, must not be freed.
    if (comb != MPI_COMBINER_NAMED && comb != MPI_COMBINER_F90_REAL &&
        comb != MPI_COMBINER_F90_COMPLEX && comb != MPI_COMBINER_F90_INTEGER)
      PMPI_Type_free(&child);
  }
  types.clear();
}

int type_combiner(MPI_Datatype type) {
  int combiner = -1;
#if MPI_VERSION >= 4
  MPI_Count ni = 0, na = 0, nc = 0, nt = 0;
  if (PMPI_Type_get_envelope_c(type, &ni, &na, &nc, &nt, &combiner) != MPI_SUCCESS) return -1;
#else
  int ni = 0, na = 0, nt = 0;
  if (PMPI_Type_get_envelope(type, &ni, &na, &nt, &combiner) != MPI_SUCCESS) return -1;
#endif
  return combiner;
}

namespace {

// MPI_Type_get_envelope's answer as TypeOutline keeps it; false when the host cannot say.
bool envelope(MPI_Datatype type, TypeOutline* o) {
#if MPI_VERSION >= 4
  MPI_Count ni = 0, na = 0, nc = 0, nt = 0;
  if (PMPI_Type_get_envelope_c(type, &ni, &na, &nc, &nt, &o->combiner) != MPI_SUCCESS) return false;
  o->entries[0] = ni, o->entries[1] = na, o->entries[2] = nc, o->entries[3] = nt;
#else
  int ni = 0, na = 0, nt = 0;
  if (PMPI_Type_get_envelope(type, &ni, &na, &nt, &o->combiner) != MPI_SUCCESS) return false;
  o->entries[0] = ni, o->entries[1] = na, o->entries[3] = nt;
#endif
  return true;
}

// Description sizes recorded by note_constructed, by handle, while the type lives.
class ConstructedSizes {
 public:
  std::optional<int64_t> find(MPI_Datatype type) {
    std::lock_guard lock(mutex_);
    const auto it = sizes_.find(type);
    if (it == sizes_.end()) return std::nullopt;
    return it->second;
  }
  // Records `made` as its own `entries` plus the sizes of `from`, under one lock; nothing when
  // one of them is neither recorded nor predefined.
  void set_from(MPI_Datatype made, int64_t entries, const MPI_Datatype* from, int count) {
    std::lock_guard lock(mutex_);
    for (int k = 0; k < count; ++k) {
      if (const auto it = sizes_.find(from[k]); it != sizes_.end()) {
        entries += it->second;
      } else if (!is_named(from[k])) {
        return;
      }
    }
    sizes_[made] = entries;
  }
  void erase(MPI_Datatype type) {
    std::lock_guard lock(mutex_);
    sizes_.erase(type);
  }

 private:
  std::mutex mutex_;
  std::unordered_map<MPI_Datatype, int64_t> sizes_;
};

ConstructedSizes& constructed_sizes() {
  static auto* sizes = new ConstructedSizes();  // outlives static destructors of user code
  return *sizes;
}

int64_t envelope_entries(const TypeOutline& o) {
  return o.entries[0] + o.entries[1] + o.entries[2] + o.entries[3];
}

int64_t description_below(MPI_Datatype type, int node_limit, int* nodes_left) {
  if (const std::optional<int64_t> known = constructed_sizes().find(type)) return *known;
  TypeOutline o;
  if (!envelope(type, &o) || o.combiner == MPI_COMBINER_NAMED) return 0;
  const int64_t entries = envelope_entries(o);
  if (entries > node_limit || *nodes_left <= 0) return entries;
  --*nodes_left;
  const TypeContents contents(type);
  int64_t sum = entries;
  for (MPI_Datatype child : contents.types) sum += description_below(child, node_limit, nodes_left);
  return sum;
}

}  // namespace

TypeOutline type_outline(MPI_Datatype type) {
  TypeOutline o;
  if (!envelope(type, &o)) return o;
  MPI_Count size = 0, lb = 0, extent = 0, true_lb = 0, true_extent = 0;
  PMPI_Type_size_x(type, &size);
  PMPI_Type_get_extent_x(type, &lb, &extent);
  PMPI_Type_get_true_extent_x(type, &true_lb, &true_extent);
  o.size = size, o.lb = lb, o.extent = extent, o.true_lb = true_lb, o.true_extent = true_extent;
  return o;
}

int64_t description_size(MPI_Datatype type, int* nodes_opened, int node_limit, int max_nodes) {
  int nodes_left = max_nodes;
  const int64_t size = description_below(type, node_limit, &nodes_left);
  if (nodes_opened) *nodes_opened = max_nodes - nodes_left;
  return size;
}

void note_constructed(MPI_Datatype made, const MPI_Datatype* from, int count) {
  TypeOutline o;
  if (envelope(made, &o)) constructed_sizes().set_from(made, envelope_entries(o), from, count);
}

void forget_constructed(MPI_Datatype type) {
  constructed_sizes().erase(type);
}

bool type_signature(MPI_Datatype type, std::string* out) {
  out->clear();
  try {
    return append_signature(type, 0, out);
  } catch (const Unsupported&) {
    return false;
  }
}

namespace {

// The check's pattern, words [from, to): bytes that differ from their neighbours', written a word
// at a time, so a check costs about one pass over the type's span, not a loop per byte.
void write_pattern(uint64_t* words, size_t from, size_t to) {
  for (size_t k = from; k < to; ++k) words[k] = (k + 1) * 0x9E3779B97F4A7C15ull;
}

// Memory for host_packs_same's checks, kept by each thread that plans: on fresh memory a check
// paid a page fault per 4 KiB of the type's span, most of a subarray type's plan
// (docs/commit.md, "What planning a type costs"). Mapped, not allocated: the application's heap,
// and glibc's mmap threshold, stay as the application left them.
class CheckScratch {
 public:
  CheckScratch() = default;
  CheckScratch(const CheckScratch&) = delete;
  CheckScratch& operator=(const CheckScratch&) = delete;
  ~CheckScratch() {
    for (Region* r : {&pattern_, &packed_}) r->release();
  }
  // `words` words of the check's pattern (write_pattern): written once, and only read by the
  // packs that follow, so a later check reuses them as they are.
  const uint64_t* pattern(size_t words) {
    if (words > pattern_.bytes / 8 && (words * 8 > kKeptBytes || !pattern_.grow(words * 8)))
      return nullptr;
    auto* w = reinterpret_cast<uint64_t*>(pattern_.data);
    if (patterned_ < words) write_pattern(w, patterned_, words), patterned_ = words;
    return w;
  }
  // Two buffers of `bytes` each, filled with 0xA5.
  unsigned char* packed_pair(size_t bytes) {
    if (2 * bytes > packed_.bytes && (2 * bytes > kKeptBytes || !packed_.grow(2 * bytes)))
      return nullptr;
    std::memset(packed_.data, 0xA5, 2 * bytes);
    return packed_.data;
  }
  bool busy = false;

 private:
  static constexpr size_t kKeptBytes = size_t{4} << 20;
  struct Region {
    unsigned char* data = nullptr;
    size_t bytes = 0;
    // Grows to at least `want` bytes, at least doubling (a program's types grow a few times, not
    // at every check), keeping what the region holds.
    bool grow(size_t want) {
      const size_t page = 4096;
      const size_t to = (std::max(want, std::min(2 * bytes, kKeptBytes)) + page - 1) / page * page;
      void* p = data
                    ? mremap(data, bytes, to, MREMAP_MAYMOVE)
                    : mmap(nullptr, to, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) return false;
      data = static_cast<unsigned char*>(p), bytes = to;
      return true;
    }
    void release() {
      if (data) munmap(data, bytes);
      data = nullptr, bytes = 0;
    }
  };
  Region pattern_, packed_;
  size_t patterned_ = 0;
};

thread_local CheckScratch check_scratch;

// Under AddressSanitizer each check gets heap memory of its exact size, so that a pack reading
// past the type's bounds is caught; mapped memory has no redzones.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kKeepCheckScratch = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kKeepCheckScratch = false;
#else
constexpr bool kKeepCheckScratch = true;
#endif
#else
constexpr bool kKeepCheckScratch = true;
#endif

}  // namespace

bool host_packs_same(MPI_Datatype type, int64_t size, int64_t true_lb, int64_t true_extent,
                     const std::function<void(const void* base, void* packed)>& loom_pack) {
  if (size <= 0) return true;
  if (size > INT_MAX) return false;
  // The scratch copy, holding the pattern, stands where the type's bytes start. Kept per thread
  // (CheckScratch); a check larger than it keeps, or one that finds it in use, gets memory of
  // its own.
  const size_t words = std::max<size_t>((static_cast<size_t>(true_extent) + 7) / 8, 1);
  const size_t packed = static_cast<size_t>(size);
  CheckScratch& scratch = check_scratch;
  const uint64_t* user = nullptr;
  unsigned char* bytes = nullptr;
  if (kKeepCheckScratch && !scratch.busy) {
    user = scratch.pattern(words);
    bytes = user ? scratch.packed_pair(packed) : nullptr;
  }
  std::unique_ptr<uint64_t[]> own_user;
  std::unique_ptr<unsigned char[]> own_bytes;
  if (!user || !bytes) {
    own_user.reset(new uint64_t[words]);
    write_pattern(own_user.get(), 0, words);
    own_bytes.reset(new unsigned char[2 * packed]);
    std::memset(own_bytes.get(), 0xA5, 2 * packed);
    user = own_user.get(), bytes = own_bytes.get();
  }
  // A type of absolute addresses (sent from MPI_BOTTOM) would need an origin below address 0,
  // which no pointer can express: such a type is not compared.
  intptr_t origin = 0;
  if (__builtin_sub_overflow(reinterpret_cast<intptr_t>(user), true_lb, &origin) || origin < 0)
    return true;
  const auto* base = reinterpret_cast<const unsigned char*>(origin);
  unsigned char *host_bytes = bytes, *loom_bytes = bytes + packed;
  const bool held = !own_user;
  if (held) scratch.busy = true;
  struct Release {
    CheckScratch& s;
    bool held;
    ~Release() {
      if (held) s.busy = false;
    }
  } release{scratch, held};
  int position = 0;
  if (PMPI_Pack(base, 1, type, host_bytes, static_cast<int>(size), &position, MPI_COMM_SELF) !=
          MPI_SUCCESS ||
      position != size)
    return false;
  loom_pack(base, loom_bytes);
  return std::memcmp(host_bytes, loom_bytes, packed) == 0;
}

std::optional<types::Layout> decode_datatype(MPI_Datatype type, std::string* why_not,
                                             bool* mixed_basic_types, int64_t check_parts_over,
                                             MPI_Datatype* single_basic_type) {
  std::vector<MPI_Datatype> seen;
  basic_types_seen = &seen;
  PartCheck parts;
  parts.span_limit = check_parts_over;
  part_check = check_parts_over > 0 ? &parts : nullptr;
  struct Reset {
    ~Reset() { basic_types_seen = nullptr, part_check = nullptr; }
  } reset;
  try {
    MPI_Count true_lb = 0, true_extent = 0;
    PMPI_Type_get_true_extent_x(type, &true_lb, &true_extent);
    const bool checked_whole = true_extent <= check_parts_over;
    types::Layout layout{{0, decode(type, 0, checked_whole)}};
    if (mixed_basic_types)
      *mixed_basic_types = seen.size() > 1 || (seen.size() == 1 && is_pair_type(seen[0]));
    if (single_basic_type)
      *single_basic_type = seen.size() == 1 && !is_pair_type(seen[0]) ? seen[0] : MPI_DATATYPE_NULL;
    return layout;
  } catch (const Unsupported& u) {
    if (why_not) *why_not = u.why;
    return std::nullopt;
  }
}

}  // namespace loom::mpi
