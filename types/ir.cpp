#include "types/ir.hpp"

#include <algorithm>
#include <cstdio>

namespace loom::types {

NodeRef make_dense(int64_t bytes) {
  auto n = std::make_shared<Node>();
  n->kind = Node::Kind::Dense;
  n->size = bytes;
  return n;
}

NodeRef make_repeat(int64_t count, int64_t stride, NodeRef child) {
  auto n = std::make_shared<Node>();
  n->kind = Node::Kind::Repeat;
  n->count = count;
  n->stride = stride;
  n->size = count * child->size;
  n->child = std::move(child);
  return n;
}

NodeRef make_sequence(std::vector<Placed> items) {
  auto n = std::make_shared<Node>();
  n->kind = Node::Kind::Sequence;
  for (const auto& item : items) n->size += item.node->size;
  n->items = std::move(items);
  return n;
}

int64_t packed_size(const Layout& layout) {
  int64_t size = 0;
  for (const auto& item : layout) size += item.node->size;
  return size;
}

Bounds bounds(const Node& node) {
  switch (node.kind) {
    case Node::Kind::Dense:
      return {0, node.size};
    case Node::Kind::Repeat: {
      if (node.count == 0 || node.size == 0) return {0, 0};
      const Bounds c = bounds(*node.child);
      const int64_t span = (node.count - 1) * node.stride;
      return {c.lo + std::min<int64_t>(0, span), c.hi + std::max<int64_t>(0, span)};
    }
    case Node::Kind::Sequence:
      return bounds(node.items);
  }
  return {0, 0};
}

Bounds bounds(const Layout& layout) {
  bool any = false;
  Bounds b;
  for (const auto& item : layout) {
    if (item.node->size == 0) continue;
    const Bounds c = bounds(*item.node);
    if (!any) {
      b = {item.disp + c.lo, item.disp + c.hi};
      any = true;
    } else {
      b.lo = std::min(b.lo, item.disp + c.lo);
      b.hi = std::max(b.hi, item.disp + c.hi);
    }
  }
  return b;
}

bool same_shape(const Node& a, const Node& b) {
  if (&a == &b) return true;
  if (a.kind != b.kind || a.size != b.size) return false;
  switch (a.kind) {
    case Node::Kind::Dense:
      return true;
    case Node::Kind::Repeat:
      return a.count == b.count && a.stride == b.stride && same_shape(*a.child, *b.child);
    case Node::Kind::Sequence:
      if (a.items.size() != b.items.size()) return false;
      for (size_t i = 0; i < a.items.size(); ++i)
        if (a.items[i].disp != b.items[i].disp || !same_shape(*a.items[i].node, *b.items[i].node))
          return false;
      return true;
  }
  return false;
}

static void visit_node(const Node& node, int64_t origin,
                       const std::function<void(int64_t, int64_t)>& visit) {
  switch (node.kind) {
    case Node::Kind::Dense:
      if (node.size > 0) visit(origin, node.size);
      return;
    case Node::Kind::Repeat:
      for (int64_t i = 0; i < node.count; ++i)
        visit_node(*node.child, origin + i * node.stride, visit);
      return;
    case Node::Kind::Sequence:
      for (const auto& item : node.items) visit_node(*item.node, origin + item.disp, visit);
      return;
  }
}

void for_each_block(const Layout& layout, const std::function<void(int64_t, int64_t)>& visit) {
  for (const auto& item : layout) visit_node(*item.node, item.disp, visit);
}

namespace {
int64_t dense_runs(const Node& node) {
  switch (node.kind) {
    case Node::Kind::Dense:
      return node.size > 0 ? 1 : 0;
    case Node::Kind::Repeat:
      return node.count * dense_runs(*node.child);
    case Node::Kind::Sequence: {
      int64_t runs = 0;
      for (const auto& item : node.items) runs += dense_runs(*item.node);
      return runs;
    }
  }
  return 0;
}
bool contiguous_from_origin(const Node& node) {
  const Bounds b = bounds(node);
  return b.lo == 0 && b.hi == node.size;
}

int strided_levels(const Node& node) {
  switch (node.kind) {
    case Node::Kind::Dense:
      return 0;
    case Node::Kind::Repeat: {
      const int inner = strided_levels(*node.child);
      if (node.count <= 1) return inner;
      const bool abutting =
          inner == 0 && node.stride == node.child->size && contiguous_from_origin(*node.child);
      return abutting ? 0 : 1 + inner;
    }
    case Node::Kind::Sequence: {
      int inner = 0, parts = 0;
      bool abutting = true;
      int64_t next = 0;
      for (const auto& item : node.items) {
        if (item.node->size == 0) continue;
        ++parts;
        inner = std::max(inner, strided_levels(*item.node));
        abutting = abutting && item.disp == next && contiguous_from_origin(*item.node);
        next = item.disp + item.node->size;
      }
      if (parts <= 1) return inner;
      return abutting && inner == 0 ? 0 : 1 + inner;
    }
  }
  return 0;
}
}  // namespace

int strided_levels(const Layout& layout) {
  return strided_levels(*make_sequence(layout));
}

int64_t dense_runs(const Layout& layout) {
  int64_t runs = 0;
  for (const auto& item : layout) runs += dense_runs(*item.node);
  return runs;
}

namespace {

void node_words(const Node& node, std::vector<int64_t>& out);

void items_words(const std::vector<Placed>& items, std::vector<int64_t>& out) {
  out.push_back(static_cast<int64_t>(items.size()));
  for (const Placed& item : items) {
    out.push_back(item.disp);
    node_words(*item.node, out);
  }
}

void node_words(const Node& node, std::vector<int64_t>& out) {
  out.push_back(static_cast<int64_t>(node.kind));
  switch (node.kind) {
    case Node::Kind::Dense:
      out.push_back(node.size);
      return;
    case Node::Kind::Repeat:
      out.push_back(node.count);
      out.push_back(node.stride);
      node_words(*node.child, out);
      return;
    case Node::Kind::Sequence:
      items_words(node.items, out);
      return;
  }
}

// Reads words from `at` on; false when they run out or hold something that is not a layout.
class WordReader {
 public:
  explicit WordReader(std::span<const int64_t> words) : words_(words) {}
  bool done() const { return at_ == words_.size(); }
  bool next(int64_t* word) {
    if (at_ >= words_.size()) return false;
    *word = words_[at_++];
    return true;
  }
  bool items(std::vector<Placed>* items) {
    int64_t n = 0;
    // Every item takes at least three words: a count beyond what is left is not a layout.
    if (!next(&n) || n < 0 || n > static_cast<int64_t>(words_.size() - at_) / 3) return false;
    items->resize(static_cast<size_t>(n));
    for (Placed& item : *items)
      if (!next(&item.disp) || !node(&item.node)) return false;
    return true;
  }
  bool node(NodeRef* node) {
    int64_t kind = 0, a = 0, b = 0;
    if (!next(&kind)) return false;
    switch (kind) {
      case static_cast<int64_t>(Node::Kind::Dense):
        if (!next(&a)) return false;
        *node = make_dense(a);
        return true;
      case static_cast<int64_t>(Node::Kind::Repeat): {
        NodeRef child;
        if (!next(&a) || !next(&b) || !this->node(&child)) return false;
        *node = make_repeat(a, b, std::move(child));
        return true;
      }
      case static_cast<int64_t>(Node::Kind::Sequence): {
        std::vector<Placed> parts;
        if (!items(&parts)) return false;
        *node = make_sequence(std::move(parts));
        return true;
      }
    }
    return false;
  }

 private:
  std::span<const int64_t> words_;
  size_t at_ = 0;
};

}  // namespace

std::vector<int64_t> to_words(const Layout& layout) {
  std::vector<int64_t> out;
  items_words(layout, out);
  return out;
}

std::optional<Layout> from_words(std::span<const int64_t> words) {
  WordReader reader(words);
  Layout layout;
  if (!reader.items(&layout) || !reader.done()) return std::nullopt;
  return layout;
}

std::string describe(const Node& node) {
  switch (node.kind) {
    case Node::Kind::Dense:
      return "dense(" + std::to_string(node.size) + ")";
    case Node::Kind::Repeat:
      return "rep(" + std::to_string(node.count) + ",x" + std::to_string(node.stride) + "," +
             describe(*node.child) + ")";
    case Node::Kind::Sequence:
      return "seq[" + describe(node.items) + "]";
  }
  return "?";
}

std::string describe(const Layout& layout) {
  std::string out;
  const size_t shown = std::min<size_t>(layout.size(), 8);
  for (size_t i = 0; i < shown; ++i) {
    if (i) out += " ";
    out += describe(*layout[i].node) + "@" + std::to_string(layout[i].disp);
  }
  if (layout.size() > shown) out += " ... (" + std::to_string(layout.size()) + " items)";
  return out;
}

}  // namespace loom::types
