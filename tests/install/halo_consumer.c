/* A program built against the installed halo library (tests/install/check_install.sh): a
 * periodic domain split over the ranks, one double field holding each cell's global x, one
 * exchange; every ghost along x must hold its periodic image's x. Prints "halo_consumer: ok". */
#include <loom/halo.h>
#include <mpi.h>
#include <stdio.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int64_t global[3] = {24, 6, 5};
  const int radius[6] = {2, 2, 1, 1, 1, 1};
  const int periodic[3] = {1, 1, 1};
  loom_halo_domain d = NULL;
  int field = 0,
      rc = loom_halo_create(MPI_COMM_WORLD, global, radius, periodic, LOOM_HALO_BOX, 0, &d);
  if (rc == LOOM_HALO_SUCCESS) rc = loom_halo_add_field_type(d, MPI_DOUBLE, &field);
  if (rc == LOOM_HALO_SUCCESS) rc = loom_halo_realize(d);
  int64_t origin[3], n[3], stride[3];
  void* base = NULL;
  if (rc == LOOM_HALO_SUCCESS) {
    loom_halo_origin(d, origin);
    loom_halo_extent(d, n);
    loom_halo_field(d, field, &base, stride);
    for (int64_t z = 0; z < n[2]; ++z)
      for (int64_t y = 0; y < n[1]; ++y)
        for (int64_t x = 0; x < n[0]; ++x)
          *(double*)((char*)base + x * stride[0] + y * stride[1] + z * stride[2]) =
              (double)(origin[0] + x);
    rc = loom_halo_exchange(d);
  }
  long wrong = 0;
  if (rc == LOOM_HALO_SUCCESS)
    for (int64_t z = -1; z < n[2] + 1; ++z)
      for (int64_t y = -1; y < n[1] + 1; ++y)
        for (int64_t x = -2; x < n[0] + 2; ++x) {
          const double want = (double)((origin[0] + x + global[0]) % global[0]);
          wrong += *(double*)((char*)base + x * stride[0] + y * stride[1] + z * stride[2]) != want;
        }
  MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rc != LOOM_HALO_SUCCESS)
    fprintf(stderr, "halo_consumer: %s: %s\n", loom_halo_error_string(rc),
            loom_halo_error_message());
  else if (rank == 0)
    printf("halo_consumer: %s\n", wrong ? "WRONG GHOSTS" : "ok");
  loom_halo_destroy(&d);
  MPI_Finalize();
  return rc != LOOM_HALO_SUCCESS || wrong != 0;
}
