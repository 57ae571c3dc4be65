// Loom's datatype IR: an MPI typemap as a tree of dense runs, strided repeats and
// sequences. Packing walks the tree in typemap order, so every transformation here
// must keep that order: Loom's packed bytes are byte-identical to the host MPI's.
// No MPI dependency: the interposer decodes MPI types into this form.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace loom::types {

struct Node;
using NodeRef = std::shared_ptr<const Node>;

// A node placed at a byte displacement (relative to its parent's origin).
struct Placed {
  int64_t disp = 0;
  NodeRef node;
};

// A typemap fragment.
//   Dense:    `size` contiguous bytes at offset 0.
//   Repeat:   `count` copies of `child`, copy i at offset i * `stride` (stride may be <= 0).
//   Sequence: `items` in typemap order, each at its own displacement.
struct Node {
  enum class Kind : uint8_t { Dense, Repeat, Sequence };
  Kind kind = Kind::Dense;
  int64_t size = 0;  // packed bytes
  int64_t count = 0;
  int64_t stride = 0;
  NodeRef child;
  std::vector<Placed> items;
};

// A whole layout: placed items in typemap order. The canonical form never holds a
// top-level Sequence item (sequences are spliced) or an empty item.
using Layout = std::vector<Placed>;

NodeRef make_dense(int64_t bytes);
NodeRef make_repeat(int64_t count, int64_t stride, NodeRef child);
NodeRef make_sequence(std::vector<Placed> items);

int64_t packed_size(const Layout& layout);

// Lowest and one-past-highest byte offsets the layout touches; {0, 0} when empty.
struct Bounds {
  int64_t lo = 0, hi = 0;
};
Bounds bounds(const Layout& layout);
Bounds bounds(const Node& node);

// Deep structural equality (same typemap relative to the origin).
bool same_shape(const Node& a, const Node& b);

// Calls visit(offset, length) for each contiguous block in typemap order. Adjacent
// blocks are reported separately as they appear in the tree; this is the reference
// semantics that tests compare executors and canonical forms against.
void for_each_block(const Layout& layout, const std::function<void(int64_t, int64_t)>& visit);

// Number of dense runs in the canonical tree (adjacent runs of a canonical layout are
// already merged), computed without visiting them: the mean block size is
// packed_size / dense_runs.
int64_t dense_runs(const Layout& layout);

// Nesting depth of strided levels (repeats or sequences whose parts do not abut), as the
// layout stands: 0 for a contiguous layout, 1 for a vector or an indexed list, 2 for a
// vector of vectors or the face of a 3-D subarray. Taken on the decoded layout, before
// canonicalisation flattens levels, it describes the type as the user built it, which is
// what a host MPI's engine works from (MPICH sends nested types by a much faster path).
int strided_levels(const Layout& layout);

// A layout as a flat list of integers, to pass one across a C interface
// (loom_testing_type_layout, include/loom/testing.h): the number of items, then each item's
// displacement and node; a node is its kind (Node::Kind's value), then for Dense its size, for
// Repeat its count, stride and child, for Sequence its number of items, then each item's
// displacement and node. from_words gives the layout back (shared nodes as copies), or nullopt
// when the words are not one.
std::vector<int64_t> to_words(const Layout& layout);
std::optional<Layout> from_words(std::span<const int64_t> words);

// Human-readable form, e.g. "rep(4,x32,dense(8))@16".
std::string describe(const Layout& layout);
std::string describe(const Node& node);

// Canonicalise: drop empty parts, elide count-1 repeats, merge adjacent dense runs,
// fold dense repeats, flatten nested repeats that form one stride, and turn runs of
// equally-spaced identical items into repeats. Typemap order is never changed.
Layout canonicalize(const Layout& layout);

}  // namespace loom::types
