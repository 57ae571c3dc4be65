// Canonicalisation rules. Each rule rewrites the tree without reordering the typemap:
//   empty      : zero-count repeats and zero-size parts disappear
//   elide      : rep(1, s, X) -> X
//   dense fold : rep(n, L, dense(L)) -> dense(n*L)
//   flatten    : rep(n, m*t, rep(m, t, X)) -> rep(n*m, t, X)
//   splice     : sequences inside sequences are spliced in place
//   merge      : dense(a)@d, dense(b)@d+a -> dense(a+b)@d
//   extend     : rep(n, s, X)@d, X@d+n*s -> rep(n+1, s, X)@d  (also rep + rep of same stride)
//   pair       : X@d, X@e -> rep(2, e-d, X)@d
//   hoist      : rep(n, s, seq[...]) keeps its first displacement outside, so equal
//                shapes compare equal wherever they sit.
#include <algorithm>

#include "types/ir.hpp"

namespace loom::types {
namespace {

using Kind = Node::Kind;

NodeRef fold_repeat(int64_t count, int64_t stride, const NodeRef& child) {
  if (count == 1) return child;
  if (child->kind == Kind::Dense && stride == child->size) return make_dense(count * child->size);
  if (child->kind == Kind::Repeat && stride == child->count * child->stride)
    return fold_repeat(count * child->count, child->stride, child->child);
  return make_repeat(count, stride, child);
}

// The node that `prev` followed by `item` forms when together they are one longer dense
// run or one longer repeat; null when they stay two items.
NodeRef merge(const Placed& prev, const Placed& item) {
  const Node& p = *prev.node;
  const Node& c = *item.node;
  if (p.kind == Kind::Dense && c.kind == Kind::Dense && item.disp == prev.disp + p.size)
    return make_dense(p.size + c.size);
  if (p.kind == Kind::Repeat && item.disp == prev.disp + p.count * p.stride) {
    if (same_shape(*p.child, c)) return fold_repeat(p.count + 1, p.stride, p.child);
    if (c.kind == Kind::Repeat && c.stride == p.stride && same_shape(*p.child, *c.child))
      return fold_repeat(p.count + c.count, p.stride, p.child);
  }
  if (same_shape(p, c)) return fold_repeat(2, item.disp - prev.disp, prev.node);
  return nullptr;
}

// Appends a canonical item (Dense or Repeat). A merge can make the last item mergeable
// with the one before it, so merging cascades backwards.
void append(Layout& out, Placed item) {
  while (!out.empty()) {
    NodeRef merged = merge(out.back(), item);
    if (!merged) break;
    item = {out.back().disp, std::move(merged)};
    out.pop_back();
  }
  out.push_back(std::move(item));
}

Layout canon(const NodeRef& node) {
  Layout out;
  if (node->size == 0) return out;
  switch (node->kind) {
    case Kind::Dense:
      out.push_back({0, node});
      break;
    case Kind::Sequence:
      out.reserve(node->items.size());
      for (const auto& item : node->items) {
        // A dense item is already canonical: no layout of its own (indexed types are
        // sequences of thousands of them).
        if (item.node->kind == Kind::Dense) {
          if (item.node->size > 0) append(out, item);
          continue;
        }
        for (auto& c : canon(item.node)) append(out, {item.disp + c.disp, std::move(c.node)});
      }
      break;
    case Kind::Repeat: {
      Layout child = canon(node->child);
      if (node->count == 1 || child.empty()) return child;
      if (child.size() == 1) {
        out.push_back({child[0].disp, fold_repeat(node->count, node->stride, child[0].node)});
        break;
      }
      const int64_t first = child[0].disp;
      for (auto& c : child) c.disp -= first;
      out.push_back(
          {first, fold_repeat(node->count, node->stride, make_sequence(std::move(child)))});
      break;
    }
  }
  return out;
}

}  // namespace

Layout canonicalize(const Layout& layout) {
  if (layout.size() == 1) {  // canon's items are merged already: appending them again is a no-op
    Layout out = canon(layout[0].node);
    for (auto& c : out) c.disp += layout[0].disp;
    return out;
  }
  Layout out;
  for (const auto& item : layout)
    for (auto& c : canon(item.node)) append(out, {item.disp + c.disp, std::move(c.node)});
  return out;
}

}  // namespace loom::types
