"""mpi4py all-to-all of strided data, as a Python FFT or transpose code writes it.

Each rank owns n*n*p doubles and sends every rank a strided strip of them through
Comm.Alltoallv with a vector type (n*n/stride doubles, every `stride`-th one; rank j's strip
starts j*n doubles in), receiving contiguous doubles.
mpi4py 4 calls MPI_Alltoallv_c on an MPI-4 host. One run = `iters` calls, the first included
(the type is created, committed and freed inside the run, as an application does); rank 0
prints the median over `trials` runs in microseconds per call and a checksum.
Usage: mpi4py_alltoallv.py N STRIDE ITERS TRIALS
"""
import sys
import time

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
p, me = comm.size, comm.rank
n, stride, iters, trials = (int(a) for a in sys.argv[1:5])
cols = n // stride  # columns per strip sent
src = np.arange(n * n * p, dtype=np.float64).reshape(n, n * p) + 1e6 * me
dst = np.empty(p * n * cols, dtype=np.float64)
times = []
for _ in range(trials):
    comm.Barrier()
    t0 = time.perf_counter()
    strip = MPI.DOUBLE.Create_vector(n * cols, 1, stride).Commit()
    block = strip.Create_resized(0, n * 8).Commit()  # displacement j: j*n doubles in
    strip.Free()
    for _ in range(iters):
        comm.Alltoallv([src, ([1] * p, list(range(p))), block],
                       [dst, ([n * cols] * p, [j * n * cols for j in range(p)]), MPI.DOUBLE])
    block.Free()
    times.append((time.perf_counter() - t0) / iters)
    comm.Barrier()
check = comm.allreduce(float(dst.sum()))
if me == 0:
    times.sort()
    print(f"n={n} stride={stride} iters={iters} median_us={1e6 * times[len(times) // 2]:.1f} "
          f"checksum={check:.6e}", flush=True)
