# Runs examples/jacobi_halo (the library; it also checks itself against one process) and
# examples/jacobi_mpi (hand-written MPI) on the same grid and ranks and fails unless both print
# the same checksum. -D MPIEXEC (with its flags) and ARGS are lists separated by |; RANKS, HALO,
# PLAIN.
string(REPLACE "|" ";" MPIEXEC "${MPIEXEC}")
string(REPLACE "|" ";" ARGS "${ARGS}")
foreach(program HALO PLAIN)
  execute_process(COMMAND ${MPIEXEC} -n ${RANKS} ${${program}} ${ARGS}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${${program}} exited with ${rc}")
  endif()
  if(NOT out MATCHES "checksum ([0-9a-f]+)")
    message(FATAL_ERROR "${${program}} printed no checksum")
  endif()
  set(sum_${program} ${CMAKE_MATCH_1})
endforeach()
if(NOT sum_HALO STREQUAL sum_PLAIN)
  message(FATAL_ERROR "checksums DIFFER: ${sum_HALO} (library) ${sum_PLAIN} (plain MPI)")
endif()
message("checksums equal: ${sum_HALO}")
