#!/usr/bin/env bash
# An unmodified Fortran MPI program under loomrun: OK from its own checks, the same output
# as natively, and LOOM_STATS lines matching every
# PATTERN on both ranks, started by MPI_INIT and by MPI_INIT_THREAD. LOOM_METHOD=pack
# makes every derived-type message Loom's, whatever the machine's calibration says.
#   check_fortran.sh LOOMRUN MPIEXEC PROGRAM [PATTERN...]
#   (default patterns: 'send packed=[1-9]' 'recv unpacked=[1-9]')
set -euo pipefail
loomrun=$1 mpiexec=$2 program=$3
shift 3
patterns=("$@")
((${#patterns[@]})) || patterns=('send packed=[1-9]' 'recv unpacked=[1-9]')
# LOOM_CHECK_NATIVE=0 skips the native run, for a host whose own binding fails the
# program's checks (MPICH 4.0.2's mpi_f08 MPI_Waitany/MPI_Waitsome return 0-based indices).
native=""
if [[ "${LOOM_CHECK_NATIVE:-1}" != 0 ]]; then
  native=$("$mpiexec" -n 2 "$program")
  echo "native: $native"
  [[ "$native" == *": OK"* ]] || { echo "FAIL: the native run reported errors"; exit 1; }
fi
stats_file=$(mktemp)
trap 'rm -f "$stats_file"' EXIT
for init in MPI_INIT MPI_INIT_THREAD; do
  thread_flag=""
  [[ $init == MPI_INIT_THREAD ]] && thread_flag=1
  loom=$(LOOM_TEST_INIT_THREAD=$thread_flag LOOM_STATS=1 LOOM_METHOD=pack \
    "$loomrun" -n 2 "$program" 2>"$stats_file")
  echo "loom ($init): $loom"
  cat "$stats_file"
  [[ "$loom" == *": OK"* ]] || { echo "FAIL ($init): the program reported errors"; exit 1; }
  [[ -z "$native" || "$native" == "$loom" ]] || { echo "FAIL: outputs differ"; exit 1; }
  for pattern in "${patterns[@]}"; do
    ranks=$(grep -c "$pattern" "$stats_file" || true)
    [[ "$ranks" == 2 ]] || { echo "FAIL ($init): '$pattern' on $ranks of 2 ranks"; exit 1; }
  done
done
echo "PASS: identical output, Loom served the Fortran calls on both ranks"
