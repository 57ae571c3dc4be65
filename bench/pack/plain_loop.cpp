#include "bench/pack/plain_loop.hpp"

#include <cstring>
#include <utility>
#include <vector>

#include "loom/testing.h"

namespace loom::bench {
namespace {

using types::Node;

// One block of `n` bytes between the strided buffer and the packed stream.
template <bool kPack>
void copy(unsigned char* strided, unsigned char*& packed, int64_t n) {
  if constexpr (kPack)
    std::memcpy(packed, strided, static_cast<size_t>(n));
  else
    std::memcpy(strided, packed, static_cast<size_t>(n));
  packed += n;
}

// `count` blocks of kBytes, `stride` apart: the loop a compiler turns into fixed-size moves. The
// packed cursor is a local: through the reference, every byte stored could alias it.
template <bool kPack, int64_t kBytes>
void run_of(unsigned char* strided, int64_t stride, int64_t count, unsigned char*& packed) {
  unsigned char* p = packed;
  for (int64_t i = 0; i < count; ++i, strided += stride, p += kBytes) {
    if constexpr (kPack)
      std::memcpy(p, strided, kBytes);
    else
      std::memcpy(strided, p, kBytes);
  }
  packed = p;
}

template <bool kPack>
void run_of(unsigned char* strided, int64_t stride, int64_t count, int64_t bytes,
            unsigned char*& packed) {
  switch (bytes) {
    case 1:
      return run_of<kPack, 1>(strided, stride, count, packed);
    case 2:
      return run_of<kPack, 2>(strided, stride, count, packed);
    case 4:
      return run_of<kPack, 4>(strided, stride, count, packed);
    case 8:
      return run_of<kPack, 8>(strided, stride, count, packed);
    case 16:
      return run_of<kPack, 16>(strided, stride, count, packed);
    case 32:
      return run_of<kPack, 32>(strided, stride, count, packed);
    case 64:
      return run_of<kPack, 64>(strided, stride, count, packed);
    default:
      for (int64_t i = 0; i < count; ++i, strided += stride) copy<kPack>(strided, packed, bytes);
  }
}

template <bool kPack>
void walk(const Node& node, unsigned char* strided, unsigned char*& packed) {
  switch (node.kind) {
    case Node::Kind::Dense:
      return copy<kPack>(strided, packed, node.size);
    case Node::Kind::Repeat:
      if (node.child->kind == Node::Kind::Dense)
        return run_of<kPack>(strided, node.stride, node.count, node.child->size, packed);
      for (int64_t i = 0; i < node.count; ++i)
        walk<kPack>(*node.child, strided + i * node.stride, packed);
      return;
    case Node::Kind::Sequence:
      for (const types::Placed& item : node.items)
        walk<kPack>(*item.node, strided + item.disp, packed);
      return;
  }
}

template <bool kPack>
void walk_elements(const types::Layout& layout, int64_t extent, int count, unsigned char* strided,
                   unsigned char* packed) {
  for (int e = 0; e < count; ++e, strided += extent)
    for (const types::Placed& item : layout) walk<kPack>(*item.node, strided + item.disp, packed);
}

}  // namespace

std::optional<PlainLoop> PlainLoop::of(MPI_Datatype type, int count) {
  // The layout libloom decodes the type into, as words (include/loom/testing.h).
  const int n = loom_testing_type_layout(type, nullptr, 0);
  if (n < 0) return std::nullopt;
  std::vector<int64_t> words(static_cast<size_t>(n));
  if (loom_testing_type_layout(type, words.data(), n) != n) return std::nullopt;
  std::optional<types::Layout> layout = types::from_words(words);
  if (!layout) return std::nullopt;
  MPI_Aint lb = 0, extent = 0;
  PMPI_Type_get_extent(type, &lb, &extent);
  return PlainLoop(types::canonicalize(*layout), extent, count);
}

void PlainLoop::pack(const unsigned char* strided, unsigned char* packed) const {
  walk_elements<true>(layout_, extent_, count_, const_cast<unsigned char*>(strided), packed);
}

void PlainLoop::unpack(const unsigned char* packed, unsigned char* strided) const {
  walk_elements<false>(layout_, extent_, count_, strided, const_cast<unsigned char*>(packed));
}

}  // namespace loom::bench
