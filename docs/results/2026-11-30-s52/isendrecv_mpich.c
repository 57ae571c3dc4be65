/* MPI_Isendrecv and MPI_Isendrecv_replace of a derived type, three times each, around a ring:
 * on MPICH 4.0.2 natively the type is freed by the first call (pmodels/mpich#7098) and the
 * replace form misplaces the bytes (argument "replace": that form alone, on a fresh type). Prints,
 * per call on rank 0, how many of the 160 ints received are wrong and the type's size afterwards
 * (320 when intact). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int wrong_ints(const int* buf, int source) {
  int wrong = 0;
  for (int e = 0; e < 2; ++e)    /* 2 elements of extent 197 ints */
    for (int k = 0; k < 40; ++k) /* 40 blocks of 2 ints, stride 5 */
      for (int j = 0; j < 2; ++j) {
        const int i = e * 197 + 5 * k + j;
        wrong += buf[i] != source * 100000 + i;
      }
  return wrong;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  MPI_Datatype type;
  MPI_Type_vector(40, 2, 5, MPI_INT, &type);
  MPI_Type_commit(&type);
  static int out[4096], in[4096];
  const int first_form = argc > 1 && strcmp(argv[1], "replace") == 0 ? 1 : 0;
  for (int form = first_form; form < 2; ++form) {
    for (int call = 0; call < 3; ++call) {
      for (int i = 0; i < 4096; ++i) out[i] = rank * 100000 + i, in[i] = -1;
      MPI_Request request;
      if (form == 0)
        MPI_Isendrecv(out, 2, type, right, 1, in, 2, type, left, 1, MPI_COMM_WORLD, &request);
      else
        MPI_Isendrecv_replace(out, 2, type, right, 1, left, 1, MPI_COMM_WORLD, &request);
      MPI_Wait(&request, MPI_STATUS_IGNORE);
      int type_size = -1;
      MPI_Type_size(type, &type_size);
      if (rank == 0)
        printf("%s call %d: %d of 160 ints wrong, type size %d\n",
               form == 0 ? "MPI_Isendrecv" : "MPI_Isendrecv_replace", call + 1,
               wrong_ints(form == 0 ? in : out, left), type_size);
      fflush(stdout);
    }
  }
  MPI_Type_free(&type);
  MPI_Finalize();
  return 0;
}
