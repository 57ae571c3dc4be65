// Edge cases of MPI_Pack / MPI_Unpack / MPI_Pack_size, each checked against the host MPI.
//
// libloom is linked before libmpi: MPI_Pack reaches Loom, PMPI_Pack the host. Where a layout is
// simple enough the expected bytes are also computed directly, so a host bug cannot hide a Loom
// bug.
#include <gtest/gtest.h>
#include <mpi.h>
#include <sys/mman.h>

#include <array>
#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "loom/loom.h"
#include "tests/mpi/gtest_mpi.hpp"
#include "tests/mpi/host_quirks.hpp"

namespace {

using loom::test::kHostIsMpich;

using Bytes = std::vector<unsigned char>;

int error_class(int rc) {
  int cls = -1;
  PMPI_Error_class(rc, &cls);
  return cls;
}

void fill_pattern(unsigned char* p, std::size_t n, unsigned salt) {
  for (std::size_t i = 0; i < n; ++i)
    p[i] = static_cast<unsigned char>((i * 131 + salt) ^ (i >> 7));
}

// MPICH 4.0 rejects MPI_BOTTOM (a null inbuf/outbuf) in MPI_Pack/MPI_Unpack with MPI_ERR_ARG,
// so there only the error class can be compared.
constexpr bool kHostPacksFromBottom = !kHostIsMpich;

// Packs through Loom and the host at `start` (into a buffer with slack and guard bytes) and
// expects the same return class, position and whole buffer. Returns the host's packed bytes.
Bytes expect_same_pack(const void* inbuf, int count, MPI_Datatype type, int start = 0,
                       bool host_must_succeed = true) {
  int size = 0;
  EXPECT_EQ(PMPI_Pack_size(count, type, MPI_COMM_WORLD, &size), MPI_SUCCESS);
  int loom_size = -1;
  EXPECT_EQ(MPI_Pack_size(count, type, MPI_COMM_WORLD, &loom_size), MPI_SUCCESS);
  EXPECT_EQ(loom_size, size) << "MPI_Pack_size";
  const int outsize = start + size + 8;
  Bytes loom(static_cast<std::size_t>(outsize) + 64), host;
  fill_pattern(loom.data(), loom.size(), 3);
  host = loom;
  int pos_l = start, pos_h = start;
  int rc_l = MPI_Pack(inbuf, count, type, loom.data(), outsize, &pos_l, MPI_COMM_WORLD);
  int rc_h = PMPI_Pack(inbuf, count, type, host.data(), outsize, &pos_h, MPI_COMM_WORLD);
  if (host_must_succeed) {
    EXPECT_EQ(rc_h, MPI_SUCCESS);
  }
  EXPECT_EQ(error_class(rc_l), error_class(rc_h));
  EXPECT_EQ(pos_l, pos_h);
  EXPECT_EQ(loom, host) << "packed bytes differ (count " << count << ", start " << start << ")";
  return Bytes(host.begin() + start, host.begin() + pos_h);
}

// Unpacks `packed` through Loom into `loom_dest` and through the host into `host_dest` (both
// addresses of identically laid out, identically filled memory) and expects the same result.
void expect_same_unpack(const Bytes& packed, void* loom_dest, void* host_dest, int count,
                        MPI_Datatype type) {
  int pos_l = 0, pos_h = 0;
  const int insize = static_cast<int>(packed.size());
  Bytes in(packed);
  in.push_back(0);  // never a null inbuf (Open MPI rejects one with MPI_ERR_ARG even for 0 bytes)
  int rc_l = MPI_Unpack(in.data(), insize, &pos_l, loom_dest, count, type, MPI_COMM_WORLD);
  int rc_h = PMPI_Unpack(in.data(), insize, &pos_h, host_dest, count, type, MPI_COMM_WORLD);
  EXPECT_EQ(rc_h, MPI_SUCCESS);
  EXPECT_EQ(error_class(rc_l), error_class(rc_h));
  EXPECT_EQ(pos_l, pos_h);
}

// Type handle freed at scope exit (through Loom, which must release its cache).
struct Type {
  MPI_Datatype t = MPI_DATATYPE_NULL;
  Type() = default;
  Type(const Type&) = delete;
  Type& operator=(const Type&) = delete;
  ~Type() {
    if (t != MPI_DATATYPE_NULL) MPI_Type_free(&t);
  }
  Type& commit() {
    EXPECT_EQ(MPI_Type_commit(&t), MPI_SUCCESS);
    return *this;
  }
  operator MPI_Datatype() const { return t; }
};

// ---------------------------------------------------------------------------------------------
// MPI_BOTTOM with absolute addresses

struct Record {
  std::unique_ptr<int> a = std::make_unique<int>();
  std::unique_ptr<double[]> b = std::make_unique<double[]>(3);
  std::unique_ptr<char[]> c = std::make_unique<char[]>(5);
  std::unique_ptr<short[]> d = std::make_unique<short[]>(8);  // strided through a vector
  void fill(unsigned salt) {
    fill_pattern(reinterpret_cast<unsigned char*>(a.get()), sizeof(int), salt);
    fill_pattern(reinterpret_cast<unsigned char*>(b.get()), 3 * sizeof(double), salt + 1);
    fill_pattern(reinterpret_cast<unsigned char*>(c.get()), 5, salt + 2);
    fill_pattern(reinterpret_cast<unsigned char*>(d.get()), 8 * sizeof(short), salt + 3);
  }
  Bytes bytes() const {
    Bytes out;
    auto add = [&](const void* p, std::size_t n) {
      out.insert(out.end(), static_cast<const unsigned char*>(p),
                 static_cast<const unsigned char*>(p) + n);
    };
    add(a.get(), sizeof(int));
    add(b.get(), 3 * sizeof(double));
    add(c.get(), 5);
    add(d.get(), 8 * sizeof(short));
    return out;
  }
  // A struct whose displacements are the absolute addresses of the separate allocations.
  void make_type(MPI_Datatype stride_shorts, Type* out) const {
    std::array<MPI_Aint, 4> disp{};
    MPI_Get_address(a.get(), &disp[0]);
    MPI_Get_address(b.get(), &disp[1]);
    MPI_Get_address(c.get(), &disp[2]);
    MPI_Get_address(d.get(), &disp[3]);
    // Members in an order different from memory order on purpose.
    std::array<int, 4> bl{1, 3, 5, 1};
    std::array<MPI_Datatype, 4> types{MPI_INT, MPI_DOUBLE, MPI_CHAR, stride_shorts};
    std::array<int, 4> order{2, 0, 3, 1};
    std::array<int, 4> obl{};
    std::array<MPI_Aint, 4> odisp{};
    std::array<MPI_Datatype, 4> otypes{};
    for (int i = 0; i < 4; ++i) {
      obl[i] = bl[order[i]];
      odisp[i] = disp[order[i]];
      otypes[i] = types[order[i]];
    }
    ASSERT_EQ(MPI_Type_create_struct(4, obl.data(), odisp.data(), otypes.data(), &out->t),
              MPI_SUCCESS);
    out->commit();
  }
};

TEST(MpiBottom, StructOfSeparatelyAllocatedVariables) {
  Type every_other_short;
  ASSERT_EQ(MPI_Type_vector(4, 1, 2, MPI_SHORT, &every_other_short.t), MPI_SUCCESS);
  Record src, loom_dst, host_dst;
  src.fill(1);
  Type src_type, loom_type, host_type;
  src.make_type(every_other_short, &src_type);
  loom_dst.make_type(every_other_short, &loom_type);
  host_dst.make_type(every_other_short, &host_type);

  Bytes packed = expect_same_pack(MPI_BOTTOM, 1, src_type, 0, kHostPacksFromBottom);
  Bytes packed_at_17 = expect_same_pack(MPI_BOTTOM, 1, src_type, 17, kHostPacksFromBottom);
  if (!kHostPacksFromBottom) GTEST_SKIP() << "host MPI_Pack rejects MPI_BOTTOM; classes matched";
  EXPECT_EQ(packed, packed_at_17);
  // Independent oracle: c[0..5), a, d[0,2,4,6], b[0..3).
  Bytes expected;
  auto add = [&](const void* p, std::size_t n) {
    expected.insert(expected.end(), static_cast<const unsigned char*>(p),
                    static_cast<const unsigned char*>(p) + n);
  };
  add(src.c.get(), 5);
  add(src.a.get(), sizeof(int));
  for (int i = 0; i < 8; i += 2) add(&src.d[i], sizeof(short));
  add(src.b.get(), 3 * sizeof(double));
  EXPECT_EQ(packed, expected);

  loom_dst.fill(7);
  host_dst.fill(7);
  int pos_l = 0, pos_h = 0;
  EXPECT_EQ(MPI_Unpack(packed.data(), static_cast<int>(packed.size()), &pos_l, MPI_BOTTOM, 1,
                       loom_type, MPI_COMM_WORLD),
            MPI_SUCCESS);
  EXPECT_EQ(PMPI_Unpack(packed.data(), static_cast<int>(packed.size()), &pos_h, MPI_BOTTOM, 1,
                        host_type, MPI_COMM_WORLD),
            MPI_SUCCESS);
  EXPECT_EQ(pos_l, pos_h);
  EXPECT_EQ(loom_dst.bytes(), host_dst.bytes()) << "unpack to absolute addresses";
}

TEST(MpiBottom, HindexedOfAbsoluteAddresses) {
  std::vector<std::unique_ptr<double[]>> blocks;
  std::vector<MPI_Aint> disp;
  std::vector<int> bl;
  for (int i = 0; i < 6; ++i) {
    blocks.push_back(std::make_unique<double[]>(static_cast<std::size_t>(i + 1)));
    fill_pattern(reinterpret_cast<unsigned char*>(blocks.back().get()),
                 static_cast<std::size_t>(i + 1) * sizeof(double), static_cast<unsigned>(i));
    MPI_Aint addr;
    MPI_Get_address(blocks.back().get(), &addr);
    disp.push_back(addr);
    bl.push_back(i + 1);
  }
  Type t;
  ASSERT_EQ(MPI_Type_create_hindexed(6, bl.data(), disp.data(), MPI_DOUBLE, &t.t), MPI_SUCCESS);
  t.commit();
  Bytes packed = expect_same_pack(MPI_BOTTOM, 1, t, 5, kHostPacksFromBottom);
  if (!kHostPacksFromBottom) GTEST_SKIP() << "host MPI_Pack rejects MPI_BOTTOM; classes matched";
  Bytes expected;
  for (int i = 0; i < 6; ++i) {
    auto* p = reinterpret_cast<const unsigned char*>(blocks[static_cast<std::size_t>(i)].get());
    expected.insert(expected.end(), p, p + (i + 1) * sizeof(double));
  }
  EXPECT_EQ(packed, expected);
}

// ---------------------------------------------------------------------------------------------
// Struct padding and resized types with count > 1

struct Particle {
  char tag;
  double pos[3];
  int id;
  short flags;
};

void make_particle_type(Type* out) {
  std::array<int, 4> bl{1, 3, 1, 1};
  std::array<MPI_Aint, 4> disp{offsetof(Particle, tag), offsetof(Particle, pos),
                               offsetof(Particle, id), offsetof(Particle, flags)};
  std::array<MPI_Datatype, 4> types{MPI_CHAR, MPI_DOUBLE, MPI_INT, MPI_SHORT};
  Type raw;
  ASSERT_EQ(MPI_Type_create_struct(4, bl.data(), disp.data(), types.data(), &raw.t), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_create_resized(raw, 0, sizeof(Particle), &out->t), MPI_SUCCESS);
  out->commit();
}

TEST(StructPadding, ArrayOfPaddedStructsPacksOnlyMembersAndUnpackKeepsPadding) {
  Type particle;
  make_particle_type(&particle);
  constexpr int kCount = 7;
  std::array<Particle, kCount> src;
  fill_pattern(reinterpret_cast<unsigned char*>(src.data()), sizeof src, 11);
  Bytes packed = expect_same_pack(src.data(), kCount, particle, 3);
  ASSERT_EQ(packed.size(), kCount * (1 + 24 + 4 + 2));
  // Oracle: members only, in order.
  Bytes expected;
  for (const Particle& p : src) {
    auto add = [&](const void* q, std::size_t n) {
      expected.insert(expected.end(), static_cast<const unsigned char*>(q),
                      static_cast<const unsigned char*>(q) + n);
    };
    add(&p.tag, 1);
    add(p.pos, 24);
    add(&p.id, 4);
    add(&p.flags, 2);
  }
  EXPECT_EQ(packed, expected);

  std::array<Particle, kCount> loom_dst, host_dst;
  std::memset(static_cast<void*>(loom_dst.data()), 0xAB, sizeof loom_dst);
  std::memset(static_cast<void*>(host_dst.data()), 0xAB, sizeof host_dst);
  expect_same_unpack(packed, loom_dst.data(), host_dst.data(), kCount, particle);
  EXPECT_EQ(std::memcmp(loom_dst.data(), host_dst.data(), sizeof loom_dst), 0);
  const auto* bytes = reinterpret_cast<const unsigned char*>(loom_dst.data());
  for (std::size_t i = 0; i < kCount; ++i) {  // padding after tag must stay 0xAB
    for (std::size_t k = 1; k < offsetof(Particle, pos); ++k)
      EXPECT_EQ(bytes[i * sizeof(Particle) + k], 0xAB) << "padding byte overwritten";
  }
}

TEST(ResizedCount, FftTransposeColumnType) {
  constexpr int kN = 37;  // odd and not a power of two
  std::vector<double> m(kN * kN);
  for (int i = 0; i < kN * kN; ++i) m[static_cast<std::size_t>(i)] = i * 1.5;
  Type column, column_resized;
  ASSERT_EQ(MPI_Type_vector(kN, 1, kN, MPI_DOUBLE, &column.t), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_create_resized(column, 0, sizeof(double), &column_resized.t), MPI_SUCCESS);
  column_resized.commit();
  Bytes packed = expect_same_pack(m.data(), kN, column_resized);
  std::vector<double> transposed(kN * kN);
  ASSERT_EQ(packed.size(), transposed.size() * sizeof(double));
  std::memcpy(transposed.data(), packed.data(), packed.size());
  for (int i = 0; i < kN; ++i)
    for (int j = 0; j < kN; ++j)
      ASSERT_EQ(transposed[static_cast<std::size_t>(i * kN + j)],
                m[static_cast<std::size_t>(j * kN + i)]);
  std::vector<double> loom_dst(kN * kN, -1), host_dst(kN * kN, -1);
  expect_same_unpack(packed, loom_dst.data(), host_dst.data(), kN, column_resized);
  EXPECT_EQ(loom_dst, m);
  EXPECT_EQ(host_dst, m);
}

TEST(ResizedCount, NegativeLowerBoundAndPaddedExtent) {
  Type pair, shifted;
  ASSERT_EQ(MPI_Type_contiguous(2, MPI_INT, &pair.t), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_create_resized(pair, -12, 20, &shifted.t), MPI_SUCCESS);
  shifted.commit();
  MPI_Aint lb, extent;
  MPI_Type_get_extent(shifted, &lb, &extent);
  ASSERT_EQ(lb, -12);
  ASSERT_EQ(extent, 20);
  std::vector<unsigned char> buf(20 * 9 + 64);
  fill_pattern(buf.data(), buf.size(), 5);
  Bytes packed = expect_same_pack(buf.data() + 32, 9, shifted, 1);
  Bytes expected;
  for (int i = 0; i < 9; ++i)
    expected.insert(expected.end(), buf.begin() + 32 + 20 * i, buf.begin() + 32 + 20 * i + 8);
  EXPECT_EQ(packed, expected);
  Bytes loom_dst(buf.size(), 0xCD), host_dst(buf.size(), 0xCD);
  expect_same_unpack(packed, loom_dst.data() + 32, host_dst.data() + 32, 9, shifted);
  EXPECT_EQ(loom_dst, host_dst);
}

TEST(ResizedCount, NegativeExtentWalksBackwards) {
  Type backwards;
  ASSERT_EQ(MPI_Type_create_resized(MPI_DOUBLE, 0, -24, &backwards.t), MPI_SUCCESS);
  backwards.commit();
  std::vector<double> v(64);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  Bytes packed = expect_same_pack(v.data() + 60, 5, backwards);
  std::array<double, 5> got{};
  ASSERT_EQ(packed.size(), sizeof got);
  std::memcpy(got.data(), packed.data(), sizeof got);
  EXPECT_EQ(got, (std::array<double, 5>{60, 57, 54, 51, 48}));
}

// ---------------------------------------------------------------------------------------------
// Offsets beyond 2^31: a sparse mapping; only the pages holding data are touched.

class Sparse {
 public:
  explicit Sparse(std::size_t bytes) : size_(bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    base_ = p == MAP_FAILED ? nullptr : static_cast<unsigned char*>(p);
  }
  ~Sparse() {
    if (base_) munmap(base_, size_);
  }
  unsigned char* base() const { return base_; }

 private:
  std::size_t size_;
  unsigned char* base_;
};

struct Block {
  int64_t offset;  // from the buffer address
  int64_t length;
};

// Fills the blocks, checks pack against the host and the blocks' bytes in order, then unpacks
// through Loom and the host into the same places and compares blocks plus their neighbours.
void check_far_blocks(unsigned char* buf, MPI_Datatype type, int count,
                      const std::vector<Block>& blocks) {
  unsigned salt = 1;
  Bytes expected;
  for (const Block& b : blocks) {
    fill_pattern(buf + b.offset, static_cast<std::size_t>(b.length), salt++);
    expected.insert(expected.end(), buf + b.offset, buf + b.offset + b.length);
  }
  Bytes packed = expect_same_pack(buf, count, type, 9);
  EXPECT_EQ(packed, expected) << "packed bytes are not the far blocks in typemap order";

  constexpr int64_t kAround = 16;
  auto snapshot = [&] {
    Bytes s;
    for (const Block& b : blocks)
      s.insert(s.end(), buf + b.offset - kAround, buf + b.offset + b.length + kAround);
    return s;
  };
  auto clear = [&] {
    for (const Block& b : blocks)
      std::memset(buf + b.offset - kAround, 0x5A, static_cast<std::size_t>(b.length + 2 * kAround));
  };
  clear();
  int pos = 0;
  ASSERT_EQ(PMPI_Unpack(packed.data(), static_cast<int>(packed.size()), &pos, buf, count, type,
                        MPI_COMM_WORLD),
            MPI_SUCCESS);
  Bytes host = snapshot();
  clear();
  int pos_l = 0;
  ASSERT_EQ(MPI_Unpack(packed.data(), static_cast<int>(packed.size()), &pos_l, buf, count, type,
                       MPI_COMM_WORLD),
            MPI_SUCCESS);
  EXPECT_EQ(pos_l, pos);
  EXPECT_EQ(snapshot(), host) << "unpack to offsets beyond 2^31 differs";
}

constexpr int64_t kTwoGiB = int64_t{1} << 31;

TEST(Beyond2GiB, HindexedWithFarPositiveAndNegativeDisplacements) {
  Sparse mem(std::size_t{5} << 30);
  ASSERT_NE(mem.base(), nullptr);
  unsigned char* mid = mem.base() + (int64_t{5} << 29);  // 2.5 GiB in
  std::vector<MPI_Aint> disp{kTwoGiB + 64, -(kTwoGiB + 4096), 0, kTwoGiB + (int64_t{1} << 28) + 8};
  std::vector<int> bl{3, 2, 1, 4};
  Type t;
  ASSERT_EQ(MPI_Type_create_hindexed(4, bl.data(), disp.data(), MPI_DOUBLE, &t.t), MPI_SUCCESS);
  t.commit();
  std::vector<Block> blocks;
  for (std::size_t i = 0; i < disp.size(); ++i) blocks.push_back({disp[i], bl[i] * 8});
  check_far_blocks(mid, t, 1, blocks);
}

TEST(Beyond2GiB, HvectorStrideAndVectorElementStride) {
  Sparse mem(std::size_t{5} << 30);
  ASSERT_NE(mem.base(), nullptr);
  Type hv;
  ASSERT_EQ(MPI_Type_create_hvector(2, 4, kTwoGiB + 24, MPI_INT, &hv.t), MPI_SUCCESS);
  hv.commit();
  check_far_blocks(mem.base() + 4096, hv, 1, {{0, 16}, {kTwoGiB + 24, 16}});

  Type v;  // 300M doubles = 2.4 GB between blocks: the element stride fits an int, bytes do not
  ASSERT_EQ(MPI_Type_vector(2, 2, 300'000'000, MPI_DOUBLE, &v.t), MPI_SUCCESS);
  v.commit();
  check_far_blocks(mem.base() + 4096, v, 1, {{0, 16}, {int64_t{2'400'000'000}, 16}});
}

TEST(Beyond2GiB, ResizedExtentBeyond2GiBWithCount2AndSubarray) {
  Sparse mem(std::size_t{5} << 30);
  ASSERT_NE(mem.base(), nullptr);
  Type pair, far;
  ASSERT_EQ(MPI_Type_contiguous(3, MPI_INT, &pair.t), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_create_resized(pair, 0, kTwoGiB + 512, &far.t), MPI_SUCCESS);
  far.commit();
  check_far_blocks(mem.base() + 4096, far, 2, {{0, 12}, {kTwoGiB + 512, 12}});

  // Rows 1 GiB apart: the third row starts beyond 2^31.
  std::array<int, 2> sizes{3, 1 << 30}, subsizes{3, 5}, starts{0, 7};
  Type sub;
  ASSERT_EQ(MPI_Type_create_subarray(2, sizes.data(), subsizes.data(), starts.data(), MPI_ORDER_C,
                                     MPI_CHAR, &sub.t),
            MPI_SUCCESS);
  sub.commit();
  check_far_blocks(mem.base() + 4096, sub, 1,
                   {{7, 5}, {(int64_t{1} << 30) + 7, 5}, {(int64_t{2} << 30) + 7, 5}});
}

// ---------------------------------------------------------------------------------------------
// Zero-byte types

TEST(ZeroBytes, PackAndPackSizeOfZeroSizeTypes) {
  Type empty_contig, empty_vector, empty_struct, empty_padded, int_and_empty;
  ASSERT_EQ(MPI_Type_contiguous(0, MPI_INT, &empty_contig.t), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_vector(3, 0, 2, MPI_DOUBLE, &empty_vector.t), MPI_SUCCESS);
  int zero = 0;
  MPI_Aint d0 = 8;
  MPI_Datatype dbl = MPI_DOUBLE;
  ASSERT_EQ(MPI_Type_create_struct(1, &zero, &d0, &dbl, &empty_struct.t), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_create_resized(empty_contig, 0, 16, &empty_padded.t), MPI_SUCCESS);
  std::array<int, 2> bl{1, 1};
  std::array<MPI_Aint, 2> disp{0, 8};
  std::array<MPI_Datatype, 2> types{MPI_INT, empty_contig};
  ASSERT_EQ(MPI_Type_create_struct(2, bl.data(), disp.data(), types.data(), &int_and_empty.t),
            MPI_SUCCESS);
  std::array<unsigned char, 256> buf{};
  fill_pattern(buf.data(), buf.size(), 9);
  for (Type* t : {&empty_contig, &empty_vector, &empty_struct, &empty_padded}) {
    t->commit();
    for (int count : {0, 1, 5}) {
      Bytes packed = expect_same_pack(buf.data() + 64, count, *t, 7);
      EXPECT_TRUE(packed.empty());
    }
  }
  int_and_empty.commit();
  Bytes packed = expect_same_pack(buf.data() + 64, 3, int_and_empty, 2);
  EXPECT_EQ(packed.size(), 3 * sizeof(int));
}

TEST(ZeroBytes, UnpackOfZeroSizeTypes) {
  Type empty_contig, empty_padded;
  ASSERT_EQ(MPI_Type_contiguous(0, MPI_INT, &empty_contig.t), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_create_resized(empty_contig, 0, 16, &empty_padded.t), MPI_SUCCESS);
  empty_contig.commit();
  empty_padded.commit();
  for (Type* t : {&empty_contig, &empty_padded}) {
    for (int count : {0, 1, 4}) {
      Bytes in(16, 0x11), loom_dst(64, 0x22), host_dst(64, 0x22);
      int pos_l = 5;
      int rc_l = MPI_Unpack(in.data(), 16, &pos_l, loom_dst.data(), count, *t, MPI_COMM_WORLD);
      EXPECT_EQ(pos_l, 5);
      if (kHostIsMpich) {
        // MPICH 4.0's own MPI_Unpack dies with SIGFPE on zero-size types; Loom must not.
        EXPECT_EQ(rc_l, MPI_SUCCESS);
        EXPECT_EQ(loom_dst, host_dst);
        continue;
      }
      int pos_h = 5;
      int rc_h = PMPI_Unpack(in.data(), 16, &pos_h, host_dst.data(), count, *t, MPI_COMM_WORLD);
      EXPECT_EQ(error_class(rc_l), error_class(rc_h));
      EXPECT_EQ(pos_l, pos_h);
      EXPECT_EQ(loom_dst, host_dst);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Lifetimes: freed inner types, handle reuse, dup

TEST(Lifetime, CommittedTypeFreedThenUsedThroughDerivedType) {
  std::vector<int> data(4096);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<int>(i * 7);
  MPI_Datatype inner;
  ASSERT_EQ(MPI_Type_vector(5, 2, 7, MPI_INT, &inner), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_commit(&inner), MPI_SUCCESS);
  expect_same_pack(data.data(), 3, inner);  // Loom builds and caches its plan here
  const MPI_Datatype old_handle = inner;
  Type outer;
  ASSERT_EQ(MPI_Type_create_hvector(3, 1, 200 * sizeof(int), inner, &outer.t), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_free(&inner), MPI_SUCCESS);
  outer.commit();
  Bytes before = expect_same_pack(data.data(), 2, outer);

  // A new type may get the freed handle (MPICH reuses handles); a stale cache entry would show.
  Type reuse;
  ASSERT_EQ(MPI_Type_vector(3, 1, 3, MPI_DOUBLE, &reuse.t), MPI_SUCCESS);
  reuse.commit();
  std::printf("freed handle %s reused\n", reuse.t == old_handle ? "was" : "was not");
  expect_same_pack(data.data(), 4, reuse);
  EXPECT_EQ(expect_same_pack(data.data(), 2, outer), before);
  Bytes loom_dst(data.size() * sizeof(int), 0x33), host_dst = loom_dst;
  expect_same_unpack(before, loom_dst.data(), host_dst.data(), 2, outer);
  EXPECT_EQ(loom_dst, host_dst);
}

TEST(Lifetime, FreedHandlesReusedForDifferentLayouts) {
  std::vector<unsigned char> data(1 << 16);
  fill_pattern(data.data(), data.size(), 4);
  for (int k = 1; k <= 60; ++k) {
    Type t;  // same constructor, a different layout every time: cache keys must not collide
    ASSERT_EQ(
        MPI_Type_vector(k % 7 + 1, k % 5 + 1, k % 5 + 1 + k % 3, k % 2 ? MPI_INT : MPI_SHORT, &t.t),
        MPI_SUCCESS);
    t.commit();
    expect_same_pack(data.data(), k % 4 + 1, t, k % 3);
  }
}

TEST(Lifetime, DupOfCommittedTypeIsUsableWithoutCommit) {
  std::vector<double> data(512);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<double>(i);
  MPI_Datatype original;
  ASSERT_EQ(MPI_Type_vector(6, 3, 8, MPI_DOUBLE, &original), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_commit(&original), MPI_SUCCESS);
  Bytes expected = expect_same_pack(data.data(), 2, original);
  Type dup, dup_of_dup, dup_committed;
  ASSERT_EQ(MPI_Type_dup(original, &dup.t), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_dup(dup, &dup_of_dup.t), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_dup(original, &dup_committed.t), MPI_SUCCESS);
  dup_committed.commit();  // committing a committed dup again is allowed and a no-op
  ASSERT_EQ(MPI_Type_free(&original), MPI_SUCCESS);
  EXPECT_EQ(expect_same_pack(data.data(), 2, dup), expected);
  EXPECT_EQ(expect_same_pack(data.data(), 2, dup_of_dup), expected);
  EXPECT_EQ(expect_same_pack(data.data(), 2, dup_committed), expected);
  std::vector<double> loom_dst(512, -1), host_dst(512, -1);
  expect_same_unpack(expected, loom_dst.data(), host_dst.data(), 2, dup_of_dup);
  EXPECT_EQ(loom_dst, host_dst);

  Type pair_dup;  // dup of a named pair type with a gap
  ASSERT_EQ(MPI_Type_dup(MPI_DOUBLE_INT, &pair_dup.t), MPI_SUCCESS);
  pair_dup.commit();
  expect_same_pack(data.data(), 5, pair_dup, 1);
}

// Loom builds a committed type's plan on its first use, not at MPI_Type_commit: what the type
// is made of must still be readable then, after its inner types and even the original of a dup
// were freed.
TEST(Lifetime, InnerTypesAndDupOriginalFreedBeforeFirstUse) {
  std::vector<int> data(8192);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<int>(i * 3 + 1);
  MPI_Datatype inner, outer;
  ASSERT_EQ(MPI_Type_vector(4, 3, 9, MPI_INT, &inner), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_create_hvector(5, 2, 160 * sizeof(int), inner, &outer), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_commit(&outer), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_free(&inner), MPI_SUCCESS);
  Type dup;
  ASSERT_EQ(MPI_Type_dup(outer, &dup.t), MPI_SUCCESS);  // neither has been used yet
  Bytes expected = expect_same_pack(data.data(), 3, outer);
  ASSERT_EQ(MPI_Type_free(&outer), MPI_SUCCESS);
  EXPECT_EQ(expect_same_pack(data.data(), 3, dup), expected);
  EXPECT_EQ(loom_type_is_accelerated(dup), loom_is_active());
}

TEST(Lifetime, PlanBuiltOnFirstUseAndKeptAcrossCommitFreeCycles) {
  std::vector<double> data(4096);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<double>(i) * 0.5;
  const auto make = [](MPI_Datatype* t) {
    ASSERT_EQ(MPI_Type_vector(64, 2, 5, MPI_DOUBLE, t), MPI_SUCCESS);
    ASSERT_EQ(MPI_Type_commit(t), MPI_SUCCESS);
  };
  loom_stats before, committed, used;
  loom_get_stats(&before);
  // Committed and freed unused: counted as committed, never built.
  for (int k = 0; k < 3; ++k) {
    MPI_Datatype unused;
    make(&unused);
    ASSERT_EQ(MPI_Type_free(&unused), MPI_SUCCESS);
  }
  Type first;
  make(&first.t);
  loom_get_stats(&committed);
  EXPECT_EQ(committed.types_accelerated, before.types_accelerated);
  const Bytes expected = expect_same_pack(data.data(), 2, first);
  loom_get_stats(&used);
  if (!loom_is_active()) return;
  EXPECT_EQ(used.types_committed - before.types_committed, 4u);
  EXPECT_EQ(used.types_accelerated - before.types_accelerated, 1u);
  char described[512];
  loom_type_describe(first, described, sizeof described);
  // The same layout built again and again, as applications that rebuild their types per
  // exchange do: the same plan each time, and the same bytes as the host.
  for (int k = 0; k < 5; ++k) {
    Type again;
    make(&again.t);
    EXPECT_EQ(expect_same_pack(data.data(), 2, again), expected);
    char text[512];
    loom_type_describe(again, text, sizeof text);
    EXPECT_STREQ(text, described);
    EXPECT_TRUE(loom_type_is_accelerated(again));
  }
}

// ---------------------------------------------------------------------------------------------
// Host quirks inside types too large to check whole at commit

// Open MPI 4.1 packs the descending bytes of vector(2, 1, -1, MPI_BYTE) in ascending order. A
// type spanning 2 MiB is not packed whole at commit, but its parts are: Loom must still give
// the host's bytes (found by the identity test, seed 11360203663509286960), and accelerate the
// type where the host has no such quirk. The part is never committed, as programs leave inner
// types (MPICH refuses to pack an uncommitted type: the check packs a committed duplicate).
void check_type_spanning_megabytes(MPI_Aint pair_stride, bool accelerated) {
  Type pair, outer;
  ASSERT_EQ(MPI_Type_create_hvector(2, 1, pair_stride, MPI_BYTE, &pair.t), MPI_SUCCESS);
  constexpr MPI_Aint kFar = MPI_Aint{2} << 20;
  std::array<int, 3> bl{3, 3, 1};
  std::array<MPI_Aint, 3> disp{0, 64, kFar};
  std::array<MPI_Datatype, 3> types{MPI_LONG_INT, pair.t, MPI_INT};
  ASSERT_EQ(MPI_Type_create_struct(3, bl.data(), disp.data(), types.data(), &outer.t), MPI_SUCCESS);
  outer.commit();
  const std::size_t span = static_cast<std::size_t>(kFar) + 2 * 64;
  for (int count : {1, 2}) {
    Bytes many(span * static_cast<std::size_t>(count) + 64);
    fill_pattern(many.data(), many.size(), 5);
    const Bytes packed = expect_same_pack(many.data() + 64, count, outer, 3);
    Bytes loom_dst(many.size(), 0x11), host_dst(loom_dst);
    expect_same_unpack(packed, loom_dst.data() + 64, host_dst.data() + 64, count, outer);
    EXPECT_EQ(loom_dst, host_dst) << "count " << count;
  }
  EXPECT_EQ(loom_type_is_accelerated(outer) != 0, accelerated && loom_is_active());
}

TEST(HostQuirks, DescendingBytesInsideATypeSpanningMegabytes) {
  check_type_spanning_megabytes(-1, kHostIsMpich);
  check_type_spanning_megabytes(2, true);
}

// ---------------------------------------------------------------------------------------------
// Named types, MPI_PACKED and MPI_BYTE

TEST(NamedTypes, EveryNamedTypePacksAndUnpacksLikeTheHost) {
  const std::vector<std::pair<MPI_Datatype, const char*>> named = {
      {MPI_CHAR, "MPI_CHAR"},
      {MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR"},
      {MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR"},
      {MPI_BYTE, "MPI_BYTE"},
      {MPI_PACKED, "MPI_PACKED"},
      {MPI_SHORT, "MPI_SHORT"},
      {MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT"},
      {MPI_INT, "MPI_INT"},
      {MPI_UNSIGNED, "MPI_UNSIGNED"},
      {MPI_LONG, "MPI_LONG"},
      {MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG"},
      {MPI_LONG_LONG, "MPI_LONG_LONG"},
      {MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG"},
      {MPI_FLOAT, "MPI_FLOAT"},
      {MPI_DOUBLE, "MPI_DOUBLE"},
      {MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE"},
      {MPI_WCHAR, "MPI_WCHAR"},
      {MPI_C_BOOL, "MPI_C_BOOL"},
      {MPI_INT8_T, "MPI_INT8_T"},
      {MPI_INT16_T, "MPI_INT16_T"},
      {MPI_INT32_T, "MPI_INT32_T"},
      {MPI_INT64_T, "MPI_INT64_T"},
      {MPI_UINT8_T, "MPI_UINT8_T"},
      {MPI_UINT16_T, "MPI_UINT16_T"},
      {MPI_UINT32_T, "MPI_UINT32_T"},
      {MPI_UINT64_T, "MPI_UINT64_T"},
      {MPI_C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX"},
      {MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX"},
      {MPI_C_LONG_DOUBLE_COMPLEX, "MPI_C_LONG_DOUBLE_COMPLEX"},
      {MPI_AINT, "MPI_AINT"},
      {MPI_OFFSET, "MPI_OFFSET"},
      {MPI_COUNT, "MPI_COUNT"},
      {MPI_FLOAT_INT, "MPI_FLOAT_INT"},
      {MPI_DOUBLE_INT, "MPI_DOUBLE_INT"},
      {MPI_LONG_INT, "MPI_LONG_INT"},
      {MPI_2INT, "MPI_2INT"},
      {MPI_SHORT_INT, "MPI_SHORT_INT"},
      {MPI_LONG_DOUBLE_INT, "MPI_LONG_DOUBLE_INT"},
  };
  Bytes src(4096);
  fill_pattern(src.data(), src.size(), 21);
  for (const auto& [type, name] : named) {
    SCOPED_TRACE(name);
    for (int count : {0, 1, 3, 33}) {
      Bytes packed = expect_same_pack(src.data() + 8, count, type, count % 5);
      Bytes loom_dst(src.size(), 0x44), host_dst = loom_dst;
      expect_same_unpack(packed, loom_dst.data() + 8, host_dst.data() + 8, count, type);
      EXPECT_EQ(loom_dst, host_dst);  // pair types: the gaps stay untouched
    }
  }
}

TEST(Packed, MixedLoomAndHostCallsShareOneBuffer) {
  std::vector<int> ints(64);
  for (std::size_t i = 0; i < ints.size(); ++i) ints[i] = static_cast<int>(i * 3 + 1);
  double d = 2.75;
  Type strided;
  ASSERT_EQ(MPI_Type_vector(8, 1, 4, MPI_INT, &strided.t), MPI_SUCCESS);
  strided.commit();
  std::array<unsigned char, 512> mixed{}, host_only{};
  int pm = 0, ph = 0;
  // Loom, host, Loom, host into one buffer; positions must chain exactly as host-only calls.
  ASSERT_EQ(MPI_Pack(ints.data(), 1, strided, mixed.data(), 512, &pm, MPI_COMM_WORLD), MPI_SUCCESS);
  ASSERT_EQ(PMPI_Pack(&d, 1, MPI_DOUBLE, mixed.data(), 512, &pm, MPI_COMM_WORLD), MPI_SUCCESS);
  ASSERT_EQ(MPI_Pack(ints.data() + 1, 2, strided, mixed.data(), 512, &pm, MPI_COMM_WORLD),
            MPI_SUCCESS);
  ASSERT_EQ(PMPI_Pack(ints.data(), 3, MPI_SHORT_INT, mixed.data(), 512, &pm, MPI_COMM_WORLD),
            MPI_SUCCESS);
  ASSERT_EQ(PMPI_Pack(ints.data(), 1, strided, host_only.data(), 512, &ph, MPI_COMM_WORLD),
            MPI_SUCCESS);
  ASSERT_EQ(PMPI_Pack(&d, 1, MPI_DOUBLE, host_only.data(), 512, &ph, MPI_COMM_WORLD), MPI_SUCCESS);
  ASSERT_EQ(PMPI_Pack(ints.data() + 1, 2, strided, host_only.data(), 512, &ph, MPI_COMM_WORLD),
            MPI_SUCCESS);
  ASSERT_EQ(PMPI_Pack(ints.data(), 3, MPI_SHORT_INT, host_only.data(), 512, &ph, MPI_COMM_WORLD),
            MPI_SUCCESS);
  ASSERT_EQ(pm, ph);
  EXPECT_EQ(mixed, host_only);

  // MPI_PACKED copies raw packed bytes; re-packing the buffer as MPI_PACKED must not change it.
  Bytes repacked = expect_same_pack(mixed.data(), pm, MPI_PACKED, 4);
  EXPECT_TRUE(std::equal(repacked.begin(), repacked.end(), mixed.begin()));
  Bytes as_bytes = expect_same_pack(mixed.data(), pm, MPI_BYTE, 1);
  EXPECT_EQ(as_bytes, repacked);

  // Unpack the mixed buffer alternating Loom and host; the results must match host-only.
  std::vector<int> a(64, 0), b(64, 0);
  double da = 0, db = 0;
  int ua = 0, ub = 0;
  ASSERT_EQ(PMPI_Unpack(mixed.data(), pm, &ua, a.data(), 1, strided, MPI_COMM_WORLD), MPI_SUCCESS);
  ASSERT_EQ(MPI_Unpack(mixed.data(), pm, &ua, &da, 1, MPI_DOUBLE, MPI_COMM_WORLD), MPI_SUCCESS);
  ASSERT_EQ(MPI_Unpack(mixed.data(), pm, &ua, a.data() + 1, 2, strided, MPI_COMM_WORLD),
            MPI_SUCCESS);
  ASSERT_EQ(PMPI_Unpack(mixed.data(), pm, &ub, b.data(), 1, strided, MPI_COMM_WORLD), MPI_SUCCESS);
  ASSERT_EQ(PMPI_Unpack(mixed.data(), pm, &ub, &db, 1, MPI_DOUBLE, MPI_COMM_WORLD), MPI_SUCCESS);
  ASSERT_EQ(PMPI_Unpack(mixed.data(), pm, &ub, b.data() + 1, 2, strided, MPI_COMM_WORLD),
            MPI_SUCCESS);
  EXPECT_EQ(ua, ub);
  EXPECT_EQ(a, b);
  EXPECT_EQ(da, 2.75);
  EXPECT_EQ(db, 2.75);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  return loom::test::run_tests_and_finalize(&argc, argv);
}
