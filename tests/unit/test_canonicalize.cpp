#include <gtest/gtest.h>

#include <optional>
#include <span>
#include <vector>

#include "tests/unit/random_layout.hpp"
#include "types/ir.hpp"

using namespace loom::types;
using loom::test::block_stream;

namespace {

Layout one(NodeRef n, int64_t disp = 0) {
  return {{disp, std::move(n)}};
}

std::string canon(const Layout& l) {
  return describe(canonicalize(l));
}

TEST(Canonicalize, ElidesCountOneRepeat) {
  EXPECT_EQ(canon(one(make_repeat(1, 100, make_dense(8)), 4)), "dense(8)@4");
}

TEST(Canonicalize, FoldsDenseRepeat) {
  EXPECT_EQ(canon(one(make_repeat(4, 8, make_dense(8)))), "dense(32)@0");
}

TEST(Canonicalize, FlattensNestedStrides) {
  EXPECT_EQ(canon(one(make_repeat(3, 64, make_repeat(4, 16, make_dense(4))))),
            "rep(12,x16,dense(4))@0");
  // Not one stride: stays two levels.
  EXPECT_EQ(canon(one(make_repeat(3, 100, make_repeat(4, 16, make_dense(4))))),
            "rep(3,x100,rep(4,x16,dense(4)))@0");
}

TEST(Canonicalize, MergesAdjacentDenseRuns) {
  EXPECT_EQ(canon(one(make_sequence({{0, make_dense(4)}, {4, make_dense(12)}}), 8)), "dense(16)@8");
}

TEST(Canonicalize, TurnsEquallySpacedItemsIntoRepeat) {
  auto d = make_dense(4);
  EXPECT_EQ(canon(one(make_sequence({{0, d}, {10, d}, {20, d}, {30, d}}))),
            "rep(4,x10,dense(4))@0");
}

TEST(Canonicalize, ExtendsRepeatWithRepeatOfSameStride) {
  auto d = make_dense(2);
  auto a = make_repeat(3, 5, d);
  EXPECT_EQ(canon(one(make_sequence({{0, a}, {15, a}}))), "rep(6,x5,dense(2))@0");
}

TEST(Canonicalize, DropsEmptyParts) {
  auto d = make_dense(4);
  EXPECT_EQ(canon(one(make_sequence({{0, make_repeat(0, 8, d)}, {8, make_dense(0)}, {16, d}}))),
            "dense(4)@16");
  EXPECT_TRUE(canonicalize(one(make_repeat(5, 8, make_dense(0)))).empty());
}

TEST(Canonicalize, SplicesNestedSequences) {
  auto inner = make_sequence({{0, make_dense(4)}, {4, make_dense(4)}});
  EXPECT_EQ(canon(one(make_sequence({{0, inner}, {8, make_dense(8)}}))), "dense(16)@0");
}

TEST(Canonicalize, KeepsDescendingOrder) {
  // The host packs the block at 8 first; sorting would change the bytes.
  auto d = make_dense(4);
  Layout l = one(make_sequence({{8, d}, {0, d}}));
  Layout c = canonicalize(l);
  EXPECT_EQ(block_stream(c), (std::vector<std::pair<int64_t, int64_t>>{{8, 4}, {0, 4}}));
  EXPECT_EQ(describe(c), "rep(2,x-8,dense(4))@8");
}

TEST(Canonicalize, HoistsSequenceDisplacementOutOfRepeat) {
  auto seq = make_sequence({{16, make_dense(4)}, {40, make_dense(8)}});
  Layout c = canonicalize(one(make_repeat(3, 100, seq)));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].disp, 16);
  EXPECT_EQ(block_stream(c), block_stream(one(make_repeat(3, 100, seq))));
}

// Every tree keeps its exact typemap, and the canonical form obeys the invariants.
TEST(Canonicalize, RandomTreesKeepTypemapOrder) {
  const uint64_t seed = 20261121;
  loom::test::RandomLayouts gen(seed);
  for (int i = 0; i < 20000; ++i) {
    Layout l = gen.layout(static_cast<int>(gen.pick(0, 4)));
    Layout c = canonicalize(l);
    ASSERT_EQ(block_stream(l), block_stream(c))
        << "seed " << seed << " case " << i << "\n  in:  " << describe(l)
        << "\n  out: " << describe(c);
    ASSERT_EQ(packed_size(l), packed_size(c));
    for (size_t k = 0; k < c.size(); ++k) {
      const Node& n = *c[k].node;
      ASSERT_GT(n.size, 0) << describe(c);
      ASSERT_NE(n.kind, Node::Kind::Sequence) << describe(c);
      if (n.kind == Node::Kind::Repeat) {
        ASSERT_GT(n.count, 1) << describe(c);
      }
      if (k > 0 && n.kind == Node::Kind::Dense && c[k - 1].node->kind == Node::Kind::Dense) {
        ASSERT_NE(c[k - 1].disp + c[k - 1].node->size, c[k].disp) << "unmerged: " << describe(c);
      }
    }
    // Canonicalising again changes nothing.
    ASSERT_EQ(describe(canonicalize(c)), describe(c)) << "seed " << seed << " case " << i;
  }
}

// The words of a layout (loom_testing_type_layout's form) give the same tree back, and
// anything that is not such a list of words is refused.
TEST(LayoutWords, RoundTripRandomTrees) {
  const uint64_t seed = 20261208;
  loom::test::RandomLayouts gen(seed);
  for (int i = 0; i < 5000; ++i) {
    const Layout l = gen.layout(static_cast<int>(gen.pick(0, 4)));
    const std::vector<int64_t> words = to_words(l);
    const std::optional<Layout> back = from_words(words);
    ASSERT_TRUE(back) << "seed " << seed << " case " << i << ": " << describe(l);
    ASSERT_EQ(describe(*back), describe(l)) << "seed " << seed << " case " << i;
    ASSERT_EQ(to_words(*back), words) << "seed " << seed << " case " << i;
    // Every proper prefix is refused, and so is one word too many.
    for (size_t cut = 0; cut < words.size(); cut += 1 + words.size() / 8)
      ASSERT_FALSE(from_words(std::span<const int64_t>(words.data(), cut)))
          << "seed " << seed << " case " << i << " cut at " << cut;
    std::vector<int64_t> longer = words;
    longer.push_back(0);
    ASSERT_FALSE(from_words(longer)) << "seed " << seed << " case " << i;
  }
}

TEST(LayoutWords, RefusesWhatIsNotALayout) {
  EXPECT_TRUE(from_words(std::vector<int64_t>{0}));                  // no items
  EXPECT_FALSE(from_words(std::vector<int64_t>{}));                  // not even a count
  EXPECT_FALSE(from_words(std::vector<int64_t>{-1}));                // a negative count
  EXPECT_FALSE(from_words(std::vector<int64_t>{1, 0, 7, 8}));        // an unknown kind
  EXPECT_FALSE(from_words(std::vector<int64_t>{1000000, 0, 0, 8}));  // more items than words
  const std::optional<Layout> dense = from_words(std::vector<int64_t>{1, 16, 0, 8});
  ASSERT_TRUE(dense);
  EXPECT_EQ(describe(*dense), "dense(8)@16");
}

}  // namespace

TEST(StridedLevels, CountsLevelsAsBuilt) {
  EXPECT_EQ(strided_levels(one(make_dense(64))), 0);
  EXPECT_EQ(strided_levels(one(make_repeat(4, 8, make_dense(8)))), 0);  // abutting copies
  EXPECT_EQ(strided_levels(one(make_repeat(1, 100, make_repeat(4, 16, make_dense(8))))), 1);
  EXPECT_EQ(strided_levels(one(make_repeat(4, 16, make_dense(8)))), 1);  // a vector
  EXPECT_EQ(strided_levels(one(make_sequence({{0, make_dense(8)}, {24, make_dense(8)}}))), 1);
  EXPECT_EQ(strided_levels(one(make_sequence({{0, make_dense(4)}, {4, make_dense(12)}}))), 0);
  // A vector of vectors whose rows line up into one stride is still two levels as built
  // (canonicalisation would flatten it to one): hosts see the type as built.
  EXPECT_EQ(strided_levels(one(make_repeat(3, 64, make_repeat(4, 16, make_dense(4))))), 2);
  EXPECT_EQ(strided_levels(
                one(make_repeat(2, 4096, make_repeat(8, 64, make_repeat(1, 8, make_dense(8)))))),
            2);
  // Several top-level items: the deepest one counts, plus the level they form.
  EXPECT_EQ(strided_levels({{0, make_repeat(4, 16, make_dense(8))}, {1000, make_dense(8)}}), 2);
}
