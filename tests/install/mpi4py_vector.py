"""Python users' path: mpi4py sends numpy views through derived datatypes under loomrun.

Run as `loomrun -n 2 python3 mpi4py_vector.py` with LOOM_STATS=1. Rank 0 sends strided
views of a matrix (every other element of a row, a column) described by
MPI.DOUBLE.Create_vector; rank 1 receives them into strided views of its own and checks
every element. Then each rank sends every rank a strided row through Comm.Alltoallv (which
mpi4py 4 calls as MPI_Alltoallv_c on an MPI-4 host), and through a persistent
Comm.Alltoallv_init where mpi4py has it. Prints "mpi4py_vector: OK" on rank 0 when both ranks
agree.
"""
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
if comm.Get_size() != 2:
    sys.exit("mpi4py_vector: needs exactly 2 ranks")

rows, cols, rounds = 64, 96, 40
# Every other element of a row, and one column of the matrix. mpi4py takes contiguous
# buffers, so a column starts at a view of the flat matrix from that column's offset.
row_stride = MPI.DOUBLE.Create_vector(cols // 2, 1, 2).Commit()
column = MPI.DOUBLE.Create_vector(rows, 1, cols).Commit()

failures = 0
for r in range(rounds):
    expected = np.arange(rows * cols, dtype=np.float64).reshape(rows, cols) + 1000.0 * r
    if rank == 0:
        comm.Send([expected, 1, row_stride], dest=1, tag=r)
        comm.Send([expected.ravel()[5:], 1, column], dest=1, tag=1000 + r)
    else:
        got = np.full((rows, cols), -1.0)
        comm.Recv([got[3, :], 1, row_stride], source=0, tag=r)
        if not np.array_equal(got[3, 0::2], expected[0, 0::2]) or np.any(got[3, 1::2] != -1.0):
            failures += 1
        got = np.full((rows, cols), -1.0)
        comm.Recv([got.ravel()[7:], 1, column], source=0, tag=1000 + r)
        if not np.array_equal(got[:, 7], expected[:, 5]) or np.count_nonzero(got != -1.0) != rows:
            failures += 1

# Row j of each rank's matrix, every other element, goes to rank j: one element of a
# strided-row type resized to a row's extent, at displacement j.
row_type = row_stride.Create_resized(0, cols * 8).Commit()
half = cols // 2
for r in range(rounds // 4):
    mine = np.arange(rows * cols, dtype=np.float64).reshape(rows, cols) + 1000.0 * (rank + r)
    got = np.full(2 * half, -1.0)
    comm.Alltoallv([mine, ([1, 1], [0, 1]), row_type], [got, ([half, half], [0, half]), MPI.DOUBLE])
    for sender in range(2):
        theirs = np.arange(rows * cols, dtype=np.float64).reshape(rows, cols) + 1000.0 * (sender + r)
        if not np.array_equal(got[sender * half:(sender + 1) * half], theirs[rank, 0::2]):
            failures += 1

# The same exchange as a persistent request, made once and started with new data each
# round (Comm.Alltoallv_init: MPI_Alltoallv_init_c on an MPI-4 host; mpi4py has none on Open
# MPI 4.1, which names the call MPIX_Alltoallv_init).
mine = np.zeros((rows, cols))
got = np.full(2 * half, -1.0)
try:
    request = comm.Alltoallv_init([mine, ([1, 1], [0, 1]), row_type],
                                  [got, ([half, half], [0, half]), MPI.DOUBLE])
except NotImplementedError:
    request = None
for r in range(rounds // 4 if request else 0):
    mine[:] = np.arange(rows * cols, dtype=np.float64).reshape(rows, cols) + 1000.0 * (rank + r)
    got[:] = -1.0
    request.Start()
    request.Wait()
    for sender in range(2):
        theirs = np.arange(rows * cols, dtype=np.float64).reshape(rows, cols) + 1000.0 * (sender + r)
        if not np.array_equal(got[sender * half:(sender + 1) * half], theirs[rank, 0::2]):
            failures += 1
if request:
    request.Free()

row_type.Free()
row_stride.Free()
column.Free()
failures = comm.allreduce(failures)
if rank == 0:
    # Open MPI's version string ends in a NUL byte.
    library = MPI.Get_library_version().split("\0")[0].splitlines()[0].strip()
    print(f"mpi4py_vector: {'OK' if failures == 0 else f'{failures} FAILED checks'} ({library})",
          flush=True)
sys.exit(1 if failures else 0)
