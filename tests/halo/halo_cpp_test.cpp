// include/loom/halo.hpp, the C++ layer over the halo library: RAII, errors as exceptions with
// the C API's code, typed field access. Ghosts are checked against their periodic image.
#include <gtest/gtest.h>
#include <mpi.h>

#include <loom/halo.hpp>
#include <vector>

namespace {

TEST(HaloCpp, ExchangeFillsGhostsFromPeriodicImage) {
  const std::array<int64_t, 3> global{20, 9, 7};
  loom::halo::Domain d(MPI_COMM_WORLD, global, {2, 1, 1, 2, 0, 1}, {1, 1, 1});
  const int a = d.add_field<double>();
  const int b = d.add_field(MPI_INT);
  d.realize();
  const auto origin = d.origin();
  const auto n = d.extent();
  auto u = d.field<double>(a);
  auto v = d.field<int>(b);
  auto global_index = [&](int64_t i, int64_t j, int64_t k) {
    const int64_t x = (origin[0] + i + global[0]) % global[0];
    const int64_t y = (origin[1] + j + global[1]) % global[1];
    const int64_t z = (origin[2] + k + global[2]) % global[2];
    return (z * global[1] + y) * global[0] + x;
  };
  for (int64_t k = 0; k < n[2]; ++k)
    for (int64_t j = 0; j < n[1]; ++j)
      for (int64_t i = 0; i < n[0]; ++i) {
        u(i, j, k) = 0.5 * static_cast<double>(global_index(i, j, k));
        v(i, j, k) = static_cast<int>(global_index(i, j, k));
      }
  d.start();
  d.finish();
  int64_t wrong = 0;
  for (int64_t k = 0; k < n[2] + 1; ++k)  // radius -z 0, +z 1
    for (int64_t j = -1; j < n[1] + 2; ++j)
      for (int64_t i = -2; i < n[0] + 1; ++i) {
        wrong += u(i, j, k) != 0.5 * static_cast<double>(global_index(i, j, k));
        wrong += v(i, j, k) != static_cast<int>(global_index(i, j, k));
      }
  MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(wrong, 0);
  // Move keeps one owner.
  loom::halo::Domain moved = std::move(d);
  EXPECT_EQ(d.get(), nullptr);
  moved.exchange();
}

// Array of structs through attach_field: one attached field per member of the user's cells.
TEST(HaloCpp, AttachedArrayOfStructs) {
  struct Cell {
    double t;
    int id;
  };
  const std::array<int64_t, 3> global{11, 8, 6};
  loom::halo::Domain d(MPI_COMM_WORLD, global, {1, 1, 1, 1, 1, 1}, {1, 1, 1});
  const auto n = d.extent();
  std::vector<Cell> cells(static_cast<size_t>((n[0] + 2) * (n[1] + 2) * (n[2] + 2)));
  const std::array<int64_t, 3> strides{
      static_cast<int64_t>(sizeof(Cell)), static_cast<int64_t>(sizeof(Cell)) * (n[0] + 2),
      static_cast<int64_t>(sizeof(Cell)) * (n[0] + 2) * (n[1] + 2)};
  Cell* first = &cells[static_cast<size_t>(((n[1] + 2) + 1) * (n[0] + 2) + 1)];  // (0,0,0)
  const int t = d.attach_field(sizeof(double), &first->t, strides);
  const int id = d.attach_field(sizeof(int), &first->id, strides);
  d.realize();
  const auto origin = d.origin();
  auto ft = d.field<double>(t);
  auto fid = d.field<int>(id);
  EXPECT_EQ(&ft(0, 0, 0), &first->t);
  auto global_index = [&](int64_t i, int64_t j, int64_t k) {
    const int64_t x = (origin[0] + i + global[0]) % global[0];
    const int64_t y = (origin[1] + j + global[1]) % global[1];
    const int64_t z = (origin[2] + k + global[2]) % global[2];
    return (z * global[1] + y) * global[0] + x;
  };
  for (int64_t k = 0; k < n[2]; ++k)
    for (int64_t j = 0; j < n[1]; ++j)
      for (int64_t i = 0; i < n[0]; ++i) {
        ft(i, j, k) = 0.25 * static_cast<double>(global_index(i, j, k));
        fid(i, j, k) = static_cast<int>(global_index(i, j, k));
      }
  d.exchange();
  int64_t wrong = 0;
  for (int64_t k = -1; k < n[2] + 1; ++k)
    for (int64_t j = -1; j < n[1] + 1; ++j)
      for (int64_t i = -1; i < n[0] + 1; ++i) {
        wrong += ft(i, j, k) != 0.25 * static_cast<double>(global_index(i, j, k));
        wrong += fid(i, j, k) != static_cast<int>(global_index(i, j, k));
      }
  MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(wrong, 0);
}

TEST(HaloCpp, ErrorsAreExceptionsWithTheCode) {
  try {
    loom::halo::Domain bad(MPI_COMM_WORLD, {8, -1, 8}, {1, 1, 1, 1, 1, 1}, {1, 1, 1});
    FAIL() << "a negative extent was accepted";
  } catch (const loom::halo::Error& e) {
    EXPECT_EQ(e.code(), LOOM_HALO_ERR_EXTENT);
  }
  loom::halo::Domain d(MPI_COMM_WORLD, {8, 8, 8}, {1, 1, 1, 1, 1, 1}, {0, 0, 0});
  EXPECT_THROW(d.exchange(), loom::halo::Error);  // before realize
  d.add_field<float>();
  d.realize();
  try {
    d.add_field<float>();
    FAIL() << "a field was added after realize";
  } catch (const loom::halo::Error& e) {
    EXPECT_EQ(e.code(), LOOM_HALO_ERR_STATE);
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  int worst = rc;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
