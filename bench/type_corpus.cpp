#include "bench/type_corpus.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "bench/report.hpp"

namespace loom::bench {

namespace {

// The builders' commit and free: Loom's (MPI_*) unless use_host_type_calls(true).
bool host_type_calls = false;
int type_commit(MPI_Datatype* t) {
  return host_type_calls ? PMPI_Type_commit(t) : MPI_Type_commit(t);
}
int type_free(MPI_Datatype* t) {
  return host_type_calls ? PMPI_Type_free(t) : MPI_Type_free(t);
}

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  std::fprintf(stderr, "type_corpus: %s failed (rc=%d)\n", what, rc);
  std::abort();
}

int to_int(int64_t v, const char* what) {
  if (v < 0 || v > 0x7fffffff) {
    std::fprintf(stderr, "type_corpus: %s = %lld does not fit an int\n", what,
                 static_cast<long long>(v));
    std::abort();
  }
  return static_cast<int>(v);
}

int64_t ceil_sqrt(int64_t n) {
  auto r = static_cast<int64_t>(std::sqrt(static_cast<double>(n)));
  while (r * r < n) ++r;
  while (r > 1 && (r - 1) * (r - 1) >= n) --r;
  return std::max<int64_t>(r, 1);
}

int64_t ceil_cbrt(int64_t n) {
  auto r = static_cast<int64_t>(std::cbrt(static_cast<double>(n)));
  while (r * r * r < n) ++r;
  while (r > 1 && (r - 1) * (r - 1) * (r - 1) >= n) --r;
  return std::max<int64_t>(r, 1);
}

// Splits n items into rows of about sqrt(n): {per_row, rows}, per_row * rows <= n.
std::pair<int64_t, int64_t> split2(int64_t n) {
  const int64_t a = ceil_sqrt(std::max<int64_t>(n, 1));
  return {a, std::max<int64_t>(1, n / a)};
}

// The element type that makes a block of `block_bytes` the way an application would declare it.
struct Element {
  MPI_Datatype type;
  int bytes;
};
Element element_for_block(int64_t block_bytes) {
  if (block_bytes == 1) return {MPI_CHAR, 1};
  if (block_bytes == 2) return {MPI_SHORT, 2};
  if (block_bytes == 4) return {MPI_FLOAT, 4};
  return {MPI_DOUBLE, 8};
}

void free_all(std::initializer_list<MPI_Datatype*> types) {
  for (MPI_Datatype* t : types) check(type_free(t), "MPI_Type_free");
}

// Deterministic sorted index list with gaps drawn uniformly from [1, max_gap]: the shape of a
// halo send list built by scanning particles or mesh points in storage order.
std::vector<int> gapped_indices(int64_t n, int max_gap, uint64_t seed) {
  std::vector<int> idx(static_cast<size_t>(n));
  uint64_t state = seed;
  int64_t cur = 0;
  for (auto& v : idx) {
    state += 0x9e3779b97f4a7c15ull;  // splitmix64
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    cur += 1 + static_cast<int64_t>(z % static_cast<uint64_t>(max_gap));
    v = to_int(cur, "index");
  }
  return idx;
}

std::vector<int> scaled(const std::vector<int>& idx, int factor) {
  std::vector<int> out(idx.size());
  for (size_t i = 0; i < idx.size(); ++i) out[i] = idx[i] * factor;
  return out;
}

// indexed_block of target / (block x elem_bytes) blocks (at least one) of `block` `elem`s, one
// per item of gapped_indices(blocks, 7, seed) (block i at item i x block elements), described as
// "<blocks> <items> of <items spanned>, <element>".
CorpusType gapped_blocks_type(int64_t target, int block, MPI_Datatype elem, int elem_bytes,
                              uint64_t seed, const char* items, const char* element) {
  const int64_t block_bytes = static_cast<int64_t>(block) * elem_bytes;
  const int64_t n = std::max<int64_t>(1, target / block_bytes);
  const std::vector<int> indices = gapped_indices(n, 7, seed);
  const std::vector<int> displs = scaled(indices, block);
  MPI_Datatype t;
  check(MPI_Type_create_indexed_block(to_int(n, "n"), block, displs.data(), elem, &t),
        "MPI_Type_create_indexed_block");
  return finish_corpus_type(
      t, 1, block_bytes,
      format("%lld %s of %d, %s", static_cast<long long>(n), items, indices.back() + 1, element));
}

// ---------------------------------------------------------------------------------------------
// Strided sweeps (TEMPI, Pearson et al. 2021, sec. 5: 1-D/2-D/3-D objects with varying block
// size). Every other block is taken (stride = 2 x block), as TEMPI measured the hosts.

template <int kBlock>
CorpusType build_vec1d(int64_t target) {
  const Element e = element_for_block(kBlock);
  const int64_t n = std::max<int64_t>(1, target / kBlock);
  MPI_Datatype t;
  check(MPI_Type_vector(to_int(n, "blocks"), kBlock / e.bytes, 2 * kBlock / e.bytes, e.type, &t),
        "MPI_Type_vector");
  return finish_corpus_type(
      t, 1, kBlock,
      format("vector n=%lld blk=%dB stride=%dB", static_cast<long long>(n), kBlock, 2 * kBlock));
}

// 2-D: every other block of each row, rows padded by one block pair (a ghost column) so the two
// strides cannot fold into one and the engine really runs a 2-D kernel.
template <int kBlock>
CorpusType build_vec2d(int64_t target) {
  const Element e = element_for_block(kBlock);
  const auto [n1, n2] = split2(target / kBlock);
  MPI_Datatype row, t;
  check(MPI_Type_vector(to_int(n1, "n1"), kBlock / e.bytes, 2 * kBlock / e.bytes, e.type, &row),
        "MPI_Type_vector");
  const MPI_Aint pitch = (2 * n1 + 2) * kBlock;
  check(MPI_Type_create_hvector(to_int(n2, "n2"), 1, pitch, row, &t), "MPI_Type_create_hvector");
  free_all({&row});
  return finish_corpus_type(t, 1, kBlock,
                            format("hvector(%lld,pitch=%lldB) of vector(%lld,blk=%dB,stride=%dB)",
                                   static_cast<long long>(n2), static_cast<long long>(pitch),
                                   static_cast<long long>(n1), kBlock, 2 * kBlock));
}

// 3-D: the 2-D object repeated over planes, each plane padded by one row.
template <int kBlock>
CorpusType build_vec3d(int64_t target) {
  const Element e = element_for_block(kBlock);
  const int64_t n = std::max<int64_t>(1, target / kBlock);
  const int64_t n1 = ceil_cbrt(n);
  const int64_t n2 = ceil_sqrt(std::max<int64_t>(1, n / n1));
  const int64_t n3 = std::max<int64_t>(1, n / (n1 * n2));
  MPI_Datatype row, plane, t;
  check(MPI_Type_vector(to_int(n1, "n1"), kBlock / e.bytes, 2 * kBlock / e.bytes, e.type, &row),
        "MPI_Type_vector");
  const MPI_Aint pitch2 = (2 * n1 + 2) * kBlock;
  const MPI_Aint pitch3 = (n2 + 1) * pitch2;
  check(MPI_Type_create_hvector(to_int(n2, "n2"), 1, pitch2, row, &plane), "hvector");
  check(MPI_Type_create_hvector(to_int(n3, "n3"), 1, pitch3, plane, &t), "hvector");
  free_all({&row, &plane});
  return finish_corpus_type(
      t, 1, kBlock,
      format("%lldx%lldx%lld blocks of %dB, stride=%dB, pitches %lld/%lldB",
             static_cast<long long>(n1), static_cast<long long>(n2), static_cast<long long>(n3),
             kBlock, 2 * kBlock, static_cast<long long>(pitch2), static_cast<long long>(pitch3)));
}

// ---------------------------------------------------------------------------------------------
// Faces and edges of a 3-D double grid (C order [z][y][x], one ghost layer), as subarrays: the
// halo exchange of any 3-D stencil code. The two in-face dimensions scale with the target; the
// dimension normal to the face is 8 cells (6 + 2 ghosts) so that a 64 MiB face fits in memory
// while keeping the access pattern of a large grid (x-face: one 8-byte element per 64-byte line).

CorpusType grid_subarray(const int sizes[3], const int subsizes[3], int64_t min_block,
                         const char* what) {
  const int starts[3] = {1, 1, 1};
  MPI_Datatype t;
  check(MPI_Type_create_subarray(3, sizes, subsizes, starts, MPI_ORDER_C, MPI_DOUBLE, &t),
        "MPI_Type_create_subarray");
  return finish_corpus_type(t, 1, min_block,
                            format("%s of double[%d][%d][%d]: sub [%d][%d][%d]", what, sizes[0],
                                   sizes[1], sizes[2], subsizes[0], subsizes[1], subsizes[2]));
}

constexpr int kSlab = 8;  // cells along the face normal, ghosts included

CorpusType build_grid_xface(int64_t target) {
  const auto [a, b] = split2(target / 8);
  const int ny = to_int(a, "ny"), nz = to_int(b, "nz");
  const int sizes[3] = {nz + 2, ny + 2, kSlab}, sub[3] = {nz, ny, 1};
  return grid_subarray(sizes, sub, 8, "x-face");
}

CorpusType build_grid_yface(int64_t target) {
  const auto [a, b] = split2(target / 8);
  const int nx = to_int(a, "nx"), nz = to_int(b, "nz");
  const int sizes[3] = {nz + 2, kSlab, nx + 2}, sub[3] = {nz, 1, nx};
  return grid_subarray(sizes, sub, 8LL * nx, "y-face");
}

CorpusType build_grid_zface(int64_t target) {
  const auto [a, b] = split2(target / 8);
  const int nx = to_int(a, "nx"), ny = to_int(b, "ny");
  const int sizes[3] = {kSlab, ny + 2, nx + 2}, sub[3] = {1, ny, nx};
  return grid_subarray(sizes, sub, 8LL * nx, "z-face");
}

// Edge along y (x and z fixed): one double per row, rows 64 B apart.
CorpusType build_grid_edge(int64_t target) {
  const int ny = to_int(std::max<int64_t>(1, target / 8), "ny");
  const int sizes[3] = {kSlab, ny + 2, kSlab}, sub[3] = {1, ny, 1};
  return grid_subarray(sizes, sub, 8, "y-edge");
}

// ---------------------------------------------------------------------------------------------
// Application types (DDTBench micro-applications unless noted).

// WRF (Weather Research and Forecasting) halo exchange, DDTBench WRF_x_sa / WRF_y_sa: a struct
// of one subarray per field, REAL arrays in Fortran (i,k,j) order with halo width 3: 2 2-D
// fields, 4 3-D fields and one 4-D field holding 3 scalar species. Fields lie one after another
// in one allocation (DDTBench uses absolute addresses of separate arrays; same typemap shape).
struct WrfShape {
  int ni, nk, nj;  // interior patch
};
constexpr int kWrfHalo = 3, kWrf2d = 2, kWrf3d = 4, kWrfScalars = 3;

CorpusType build_wrf(const WrfShape& s, bool x_direction) {
  const int d1 = s.ni + 2 * kWrfHalo, d2 = s.nk, d3 = s.nj + 2 * kWrfHalo;
  // x halo: 3 columns of i, all k, interior j. y halo: interior i, all k, 3 rows of j.
  const int sub_i = x_direction ? kWrfHalo : s.ni, sub_j = x_direction ? s.nj : kWrfHalo;
  const int start_i = kWrfHalo, start_j = kWrfHalo;
  const int nfields = kWrf2d + kWrf3d + 1;
  std::vector<MPI_Datatype> types(nfields);
  std::vector<MPI_Aint> displs(nfields);
  std::vector<int> lens(nfields, 1);
  MPI_Aint offset = 0;
  int f = 0;
  for (int m = 0; m < kWrf2d; ++m, ++f) {
    const int sizes[2] = {d1, d3}, sub[2] = {sub_i, sub_j}, starts[2] = {start_i, start_j};
    check(MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_FORTRAN, MPI_FLOAT, &types[f]),
          "subarray 2-D");
    displs[f] = offset;
    offset += static_cast<MPI_Aint>(d1) * d3 * 4;
  }
  for (int m = 0; m < kWrf3d; ++m, ++f) {
    const int sizes[3] = {d1, d2, d3}, sub[3] = {sub_i, d2, sub_j},
              starts[3] = {start_i, 0, start_j};
    check(MPI_Type_create_subarray(3, sizes, sub, starts, MPI_ORDER_FORTRAN, MPI_FLOAT, &types[f]),
          "subarray 3-D");
    displs[f] = offset;
    offset += static_cast<MPI_Aint>(d1) * d2 * d3 * 4;
  }
  {
    const int sizes[4] = {d1, d2, d3, kWrfScalars}, sub[4] = {sub_i, d2, sub_j, kWrfScalars};
    const int starts[4] = {start_i, 0, start_j, 0};
    check(MPI_Type_create_subarray(4, sizes, sub, starts, MPI_ORDER_FORTRAN, MPI_FLOAT, &types[f]),
          "subarray 4-D");
    displs[f] = offset;
  }
  MPI_Datatype t;
  check(MPI_Type_create_struct(nfields, lens.data(), displs.data(), types.data(), &t),
        "MPI_Type_create_struct");
  for (auto& ft : types) check(type_free(&ft), "MPI_Type_free");
  return finish_corpus_type(t, 1, 4LL * sub_i,
                            format("struct of %d subarrays, patch i=%d k=%d j=%d halo=%d", nfields,
                                   s.ni, s.nk, s.nj, kWrfHalo));
}

// Floats packed per unit of the scaled dimension (per j row for x, per i column for y).
int64_t wrf_floats_per_unit(int nk) {
  return static_cast<int64_t>(kWrfHalo) * (kWrf2d + (kWrf3d + kWrfScalars) * nk);
}

// Vertical levels: 32 (a typical WRF run) when the target allows, fewer for tiny halos.
int wrf_levels(int64_t floats) {
  int nk = 32;
  while (nk > 1 && wrf_floats_per_unit(nk) > floats) --nk;
  return nk;
}

CorpusType build_wrf_x(int64_t target) {
  const int64_t floats = std::max<int64_t>(1, target / 4);
  const int nk = wrf_levels(floats);
  const int nj = to_int(std::max<int64_t>(1, floats / wrf_floats_per_unit(nk)), "nj");
  // Patch width 18 keeps a 64 MiB halo's fields within memory (span ~8x the packed bytes).
  return build_wrf({18, nk, nj}, true);
}

CorpusType build_wrf_y(int64_t target) {
  const int64_t floats = std::max<int64_t>(1, target / 4);
  const int nk = wrf_levels(floats);
  const int ni = to_int(std::max<int64_t>(1, floats / wrf_floats_per_unit(nk)), "ni");
  return build_wrf({ni, nk, 18}, false);
}

// MILC (lattice QCD) su3 z-down face, DDTBench MILC_su3_zd, exactly its constructor chain:
// su3_vector = 3 single-precision complex = contiguous(6, MPI_FLOAT); lattice split in even and
// odd halves (hvector count 2), each [t][z][y/2][x]; the z=0 plane of every t slice is one block
// (vector). x = y = 16, z = 8 (DDTBench uses 8..16); t scales with the target.
CorpusType build_milc(int64_t target) {
  constexpr int kSu3Bytes = 24, kZ = 8;
  int lxy = 16;
  while (lxy > 2 && static_cast<int64_t>(kSu3Bytes) * lxy * lxy > target) lxy -= 2;
  const int lt = to_int(std::max<int64_t>(1, target / (int64_t{kSu3Bytes} * lxy * lxy)), "t");
  MPI_Datatype su3, half, t;
  check(MPI_Type_contiguous(6, MPI_FLOAT, &su3), "MPI_Type_contiguous");
  const int face_sites = lxy * lxy / 2, tslice_sites = lxy * lxy * kZ / 2;
  check(MPI_Type_vector(lt, face_sites, tslice_sites, su3, &half), "MPI_Type_vector");
  const MPI_Aint half_bytes = static_cast<MPI_Aint>(kSu3Bytes) * tslice_sites * lt;
  check(MPI_Type_create_hvector(2, 1, half_bytes, half, &t), "MPI_Type_create_hvector");
  free_all({&su3, &half});
  return finish_corpus_type(t, 1, int64_t{kSu3Bytes} * face_sites,
                            format("lattice x=y=%d z=%d t=%d, su3_vector=6 float", lxy, kZ, lt));
}

// NAS LU (DDTBench NAS_LU_x / NAS_LU_y): u(5, nx, ny, nz) doubles, Fortran order, 2 ghost cells
// per side. x-face: 5 doubles per (j,k) (vector of 40-byte blocks, nested over k). y-face: 5*nx
// doubles per k (vector). The face normal has 4 interior cells so 64 MiB faces fit in memory.
CorpusType build_nas_lu_x(int64_t target) {
  const auto [ny, nz] = split2(target / 40);
  const int64_t nx_tot = 4 + 4, ny_tot = ny + 4;
  MPI_Datatype col, t;
  check(MPI_Type_vector(to_int(ny, "ny"), 5, to_int(5 * nx_tot, "stride"), MPI_DOUBLE, &col),
        "MPI_Type_vector");
  check(MPI_Type_create_hvector(to_int(nz, "nz"), 1, 5 * nx_tot * ny_tot * 8, col, &t), "hvector");
  free_all({&col});
  return finish_corpus_type(t, 1, 40,
                            format("u(5,%lld,%lld,%lld) x-face", static_cast<long long>(nx_tot),
                                   static_cast<long long>(ny_tot), static_cast<long long>(nz)));
}

CorpusType build_nas_lu_y(int64_t target) {
  const auto [nx, nz] = split2(target / 40);
  const int64_t nx_tot = nx + 4, ny_tot = 4 + 4;
  MPI_Datatype t;
  check(MPI_Type_vector(to_int(nz, "nz"), to_int(5 * nx, "blk"),
                        to_int(5 * nx_tot * ny_tot, "stride"), MPI_DOUBLE, &t),
        "MPI_Type_vector");
  return finish_corpus_type(t, 1, 40 * nx,
                            format("u(5,%lld,%lld,%lld) y-face", static_cast<long long>(nx_tot),
                                   static_cast<long long>(ny_tot), static_cast<long long>(nz)));
}

// NAS MG (DDTBench NAS_MG_x / NAS_MG_y): u(n1, n2, n3) doubles, Fortran order, one ghost layer.
// x-face: one double per (j,k) (vector nested in hvector); y-face: n1-2 doubles per k (vector).
CorpusType build_nas_mg_x(int64_t target) {
  const auto [m2, m3] = split2(target / 8);
  const int64_t n1 = kSlab, n2 = m2 + 2;
  MPI_Datatype col, t;
  check(MPI_Type_vector(to_int(m2, "m2"), 1, to_int(n1, "n1"), MPI_DOUBLE, &col), "vector");
  check(MPI_Type_create_hvector(to_int(m3, "m3"), 1, n1 * n2 * 8, col, &t), "hvector");
  free_all({&col});
  return finish_corpus_type(t, 1, 8,
                            format("u(%lld,%lld,%lld) x-face", static_cast<long long>(n1),
                                   static_cast<long long>(n2), static_cast<long long>(m3 + 2)));
}

CorpusType build_nas_mg_y(int64_t target) {
  const auto [m1, m3] = split2(target / 8);
  const int64_t n1 = m1 + 2, n2 = kSlab;
  MPI_Datatype t;
  check(MPI_Type_vector(to_int(m3, "m3"), to_int(m1, "m1"), to_int(n1 * n2, "stride"), MPI_DOUBLE,
                        &t),
        "MPI_Type_vector");
  return finish_corpus_type(t, 1, 8 * m1,
                            format("u(%lld,%lld,%lld) y-face", static_cast<long long>(n1),
                                   static_cast<long long>(n2), static_cast<long long>(m3 + 2)));
}

// LAMMPS forward communication (comm->forward_comm): positions x[i][3] of the atoms in the send
// list, an indexed_block of 3 doubles. Send lists come from scanning atoms in storage order;
// gaps 1..7 (mean 4) model a border region holding about a quarter of the atoms.
CorpusType build_lammps_x(int64_t target) {
  return gapped_blocks_type(target, 3, MPI_DOUBLE, 8, 0x1a3395, "atoms", "x[3] doubles");
}

// LAMMPS border communication for atom_style full (DDTBench LAMMPS_full): a struct of one
// indexed_block per per-atom array (x[3], q, tag, type, mask, molecule), same send list.
CorpusType build_lammps_full(int64_t target) {
  constexpr int kBytesPerAtom = 24 + 8 + 4 * 4;
  const int64_t n = std::max<int64_t>(1, target / kBytesPerAtom);
  const std::vector<int> atoms = gapped_indices(n, 7, 0x1a3395);
  const std::vector<int> displs3 = scaled(atoms, 3);
  const MPI_Aint natoms = atoms.back() + 1;
  struct Field {
    int blocklen;
    MPI_Datatype elem;
    int elem_bytes;
  };
  const Field fields[] = {{3, MPI_DOUBLE, 8}, {1, MPI_DOUBLE, 8}, {1, MPI_INT, 4},
                          {1, MPI_INT, 4},    {1, MPI_INT, 4},    {1, MPI_INT, 4}};
  constexpr int kFields = 6;
  MPI_Datatype types[kFields];
  MPI_Aint displs[kFields];
  int lens[kFields];
  MPI_Aint offset = 0;
  for (int f = 0; f < kFields; ++f) {
    const std::vector<int>& d = fields[f].blocklen == 3 ? displs3 : atoms;
    check(MPI_Type_create_indexed_block(to_int(n, "n"), fields[f].blocklen, d.data(),
                                        fields[f].elem, &types[f]),
          "MPI_Type_create_indexed_block");
    displs[f] = offset;
    lens[f] = 1;
    offset += natoms * fields[f].blocklen * fields[f].elem_bytes;
  }
  MPI_Datatype t;
  check(MPI_Type_create_struct(kFields, lens, displs, types, &t), "MPI_Type_create_struct");
  for (auto& ft : types) check(type_free(&ft), "MPI_Type_free");
  return finish_corpus_type(t, 1, 4,
                            format("%lld atoms of %lld; x[3],q,tag,type,mask,molecule",
                                   static_cast<long long>(n), static_cast<long long>(natoms)));
}

// SPECFEM3D_GLOBE outer core (DDTBench SPECFEM3D_oc): assembly of the scalar potential at the
// GLL points on an MPI interface, indexed_block of 1 float over the interface point list.
CorpusType build_specfem_oc(int64_t target) {
  return gapped_blocks_type(target, 1, MPI_FLOAT, 4, 0x5bec3d0c, "interface points", "1 float");
}

// SPECFEM3D_GLOBE crust-mantle + inner core (DDTBench SPECFEM3D_cm): a struct of two
// indexed_blocks of 3 floats (displacement vectors), each over its own array and point list.
CorpusType build_specfem_cm(int64_t target) {
  const int64_t n = std::max<int64_t>(2, target / 12);
  const int64_t n_cm = n * 3 / 4, n_ic = n - n_cm;  // the crust-mantle interface is larger
  const std::vector<int> cm = scaled(gapped_indices(n_cm, 7, 0xc3a7), 3);
  const std::vector<int> ic = scaled(gapped_indices(n_ic, 7, 0x1c0e), 3);
  MPI_Datatype types[2];
  check(MPI_Type_create_indexed_block(to_int(n_cm, "n_cm"), 3, cm.data(), MPI_FLOAT, &types[0]),
        "MPI_Type_create_indexed_block");
  check(MPI_Type_create_indexed_block(to_int(n_ic, "n_ic"), 3, ic.data(), MPI_FLOAT, &types[1]),
        "MPI_Type_create_indexed_block");
  const MPI_Aint displs[2] = {0, static_cast<MPI_Aint>(cm.back() + 3) * 4};
  const int lens[2] = {1, 1};
  MPI_Datatype t;
  check(MPI_Type_create_struct(2, lens, displs, types, &t), "MPI_Type_create_struct");
  free_all({&types[0], &types[1]});
  return finish_corpus_type(t, 1, 12,
                            format("struct: %lld crust-mantle + %lld inner-core points x 3 float",
                                   static_cast<long long>(n_cm), static_cast<long long>(n_ic)));
}

// FFT2D transpose (DDTBench FFT2; Hoefler & Gottlieb, EuroMPI 2010): one column of an N x N
// double-complex matrix is vector(N, 1, N); resizing its extent to one element lets count = N
// columns pack the whole transpose.
CorpusType build_fft2d(int64_t target) {
  const int64_t elems = std::max<int64_t>(1, target / 16);
  int64_t root = ceil_sqrt(elems);
  if (root * root > elems && root > 1) --root;  // floor: packed bytes never exceed the target
  const int N = to_int(root, "N");
  MPI_Datatype column, t;
  check(MPI_Type_vector(N, 1, N, MPI_C_DOUBLE_COMPLEX, &column), "MPI_Type_vector");
  check(MPI_Type_create_resized(column, 0, 16, &t), "MPI_Type_create_resized");
  free_all({&column});
  return finish_corpus_type(t, N, 16, format("resized column of complex double[%d][%d]", N, N));
}

}  // namespace

CorpusType finish_corpus_type(MPI_Datatype type, int count, int64_t min_block_bytes,
                              std::string shape, bool committed) {
  if (!committed) check(type_commit(&type), "MPI_Type_commit");
  MPI_Count size = 0, lb = 0, extent = 0, true_lb = 0, true_extent = 0;
  check(MPI_Type_size_x(type, &size), "MPI_Type_size_x");
  check(MPI_Type_get_extent_x(type, &lb, &extent), "MPI_Type_get_extent_x");
  check(MPI_Type_get_true_extent_x(type, &true_lb, &true_extent), "MPI_Type_get_true_extent_x");
  CorpusType t;
  t.type = type;
  t.count = count;
  t.packed_bytes = static_cast<int64_t>(size) * count;
  // Element i covers [i*extent + true_lb, i*extent + true_lb + true_extent).
  const int64_t last = static_cast<int64_t>(count - 1) * extent;
  const int64_t lowest = true_lb + std::min<int64_t>(0, last);
  const int64_t highest = true_lb + true_extent + std::max<int64_t>(0, last);
  t.span_bytes = highest - lowest;
  t.base_offset = -lowest;
  t.min_block_bytes = min_block_bytes;
  t.shape = std::move(shape);
  return t;
}

void free_corpus_type(CorpusType& t) {
  if (t.type != MPI_DATATYPE_NULL) check(type_free(&t.type), "MPI_Type_free");
  t.type = MPI_DATATYPE_NULL;
}

void use_host_type_calls(bool host) {
  host_type_calls = host;
}

// An application's type: irregular or mixed blocks ("app", not regular).
CorpusEntry app(const char* name, const char* origin, CorpusType (*build)(int64_t)) {
  return {name, "app", false, origin, build};
}

const std::vector<CorpusEntry>& pack_corpus() {
  static const std::vector<CorpusEntry> corpus = {
      {"vec1d_b1", "1d", true, "vector, 1 B blocks (char), stride 2 blocks", build_vec1d<1>},
      {"vec1d_b2", "1d", true, "vector, 2 B blocks (short), stride 2 blocks", build_vec1d<2>},
      {"vec1d_b4", "1d", true, "vector, 4 B blocks (float), stride 2 blocks", build_vec1d<4>},
      {"vec1d_b8", "1d", true, "vector, 8 B blocks (double), stride 2 blocks", build_vec1d<8>},
      {"vec1d_b16", "1d", true, "vector, 16 B blocks, stride 2 blocks", build_vec1d<16>},
      {"vec1d_b64", "1d", true, "vector, 64 B blocks, stride 2 blocks", build_vec1d<64>},
      {"vec1d_b256", "1d", true, "vector, 256 B blocks, stride 2 blocks", build_vec1d<256>},
      {"vec1d_b4096", "1d", true, "vector, 4 KiB blocks, stride 2 blocks", build_vec1d<4096>},
      {"vec2d_b1", "2d", true, "hvector of vector, 1 B blocks (TEMPI 2-D)", build_vec2d<1>},
      {"vec2d_b4", "2d", true, "hvector of vector, 4 B blocks (TEMPI 2-D)", build_vec2d<4>},
      {"vec2d_b16", "2d", true, "hvector of vector, 16 B blocks (TEMPI 2-D)", build_vec2d<16>},
      {"vec2d_b256", "2d", true, "hvector of vector, 256 B blocks (TEMPI 2-D)", build_vec2d<256>},
      {"vec3d_b4", "3d", true, "hvector^2 of vector, 4 B blocks (TEMPI 3-D)", build_vec3d<4>},
      {"vec3d_b16", "3d", true, "hvector^2 of vector, 16 B blocks (TEMPI 3-D)", build_vec3d<16>},
      {"vec3d_b64", "3d", true, "hvector^2 of vector, 64 B blocks (TEMPI 3-D)", build_vec3d<64>},
      {"vec3d_b512", "3d", true, "hvector^2 of vector, 512 B blocks (TEMPI 3-D)", build_vec3d<512>},
      {"grid_xface", "grid", true, "3-D double grid x-face (subarray)", build_grid_xface},
      {"grid_yface", "grid", true, "3-D double grid y-face (subarray)", build_grid_yface},
      {"grid_zface", "grid", true, "3-D double grid z-face (subarray)", build_grid_zface},
      {"grid_edge", "grid", true, "3-D double grid edge along y (subarray)", build_grid_edge},
      app("wrf_x_sa", "WRF x halo: struct of subarrays (DDTBench WRF_x_sa)", build_wrf_x),
      app("wrf_y_sa", "WRF y halo: struct of subarrays (DDTBench WRF_y_sa)", build_wrf_y),
      app("milc_su3_zd", "MILC su3 z-down: hvector of vector (DDTBench MILC_su3_zd)", build_milc),
      app("nas_lu_x", "NAS LU x-face: hvector of vector (DDTBench NAS_LU_x)", build_nas_lu_x),
      app("nas_lu_y", "NAS LU y-face: vector (DDTBench NAS_LU_y)", build_nas_lu_y),
      app("nas_mg_x", "NAS MG x-face: hvector of vector (DDTBench NAS_MG_x)", build_nas_mg_x),
      app("nas_mg_y", "NAS MG y-face: vector (DDTBench NAS_MG_y)", build_nas_mg_y),
      app("lammps_x", "LAMMPS forward comm: indexed_block of x[3]", build_lammps_x),
      app("lammps_full", "LAMMPS full: struct of indexed_block (DDTBench LAMMPS_full)",
          build_lammps_full),
      app("specfem3d_oc", "SPECFEM3D outer core: indexed_block (DDTBench)", build_specfem_oc),
      app("specfem3d_cm", "SPECFEM3D crust-mantle: struct of indexed_block (DDTBench)",
          build_specfem_cm),
      app("fft2d_transpose", "FFT2D transpose: resized vector, count N (DDTBench FFT2)",
          build_fft2d),
  };
  return corpus;
}

const CorpusEntry* find_corpus_entry(const std::string& name) {
  for (const auto& e : pack_corpus())
    if (name == e.name) return &e;
  return nullptr;
}

}  // namespace loom::bench
