/* An unmodified MPI program: it knows nothing of Loom. Each rank packs a strided column
 * of a matrix with MPI_Pack, sends it to the next rank as MPI_PACKED, and checks what
 * arrives. Run it natively or under loomrun; the output must be the same. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { kRows = 1000, kCols = 8 };

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  double* matrix = malloc(sizeof(double) * kRows * kCols);
  for (int i = 0; i < kRows * kCols; ++i) matrix[i] = rank * 1e6 + i;

  MPI_Datatype column;
  MPI_Type_vector(kRows, 1, kCols, MPI_DOUBLE, &column);
  MPI_Type_commit(&column);

  int packed_size = 0;
  MPI_Pack_size(1, column, MPI_COMM_WORLD, &packed_size);
  char* out = malloc(packed_size);
  char* in = malloc(packed_size);
  int position = 0;
  MPI_Pack(matrix, 1, column, out, packed_size, &position, MPI_COMM_WORLD);

  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  MPI_Sendrecv(out, position, MPI_PACKED, next, 0, in, packed_size, MPI_PACKED, prev, 0,
               MPI_COMM_WORLD, MPI_STATUS_IGNORE);

  double* received = calloc(kRows * kCols, sizeof(double));
  position = 0;
  MPI_Unpack(in, packed_size, &position, received + 3, 1, column, MPI_COMM_WORLD);
  int errors = 0;
  double checksum = 0;
  for (int r = 0; r < kRows; ++r) {
    const double expect = prev * 1e6 + r * kCols;
    if (received[3 + r * kCols] != expect) ++errors;
    checksum += received[3 + r * kCols];
  }
  int total_errors = 0;
  MPI_Reduce(&errors, &total_errors, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0)
    printf("pack_example: %d ranks, errors=%d checksum-rank0=%.0f %s\n", size, total_errors,
           checksum, total_errors ? "FAILED" : "OK");
  MPI_Type_free(&column);
  free(matrix), free(out), free(in), free(received);
  MPI_Finalize();
  return total_errors ? 1 : 0;
}
