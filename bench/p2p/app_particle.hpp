// The particle exchange of `loom-bench app`: a molecular-dynamics code's message of the atoms
// that left a subdomain, as such codes send it. Six per-atom arrays (x, v, f of 3 doubles; q,
// type, mass of 1) are described by a struct of six indexed_block types at absolute addresses
// (MPI_Get_address), sent from MPI_BOTTOM; the receiver's type is a struct of six contiguous
// runs at its own arrays' addresses. The atoms that leave change every step, so the types are
// built, committed and freed every step with new displacements (`rebuilt`), or built once and
// kept (`absolute`, the same struct of absolute addresses with a fixed atom list).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bench/common/report.hpp"
#include "bench/p2p/p2p_pingpong.hpp"

namespace loom::bench::particle {

class Exchange {
 public:
  // `leaving` atoms of 4x as many leave per step; `rank` is 0 or 1 of a two-rank job.
  Exchange(int leaving, int rank, const char* tool);
  int leaving() const { return n_; }
  int64_t packed_bytes() const { return 12 * int64_t{8} * n_; }  // 3 x 3 + 3 doubles an atom
  std::string shape() const;

  // One round of `messages` round trips on the host's calls (PMPI_Send/PMPI_Recv,
  // PMPI_Type_commit/PMPI_Type_free) or Loom's (MPI_*): a step is `life` round trips with one
  // pair of types, built, committed and freed inside the time; `rebuilt`: each step's atoms are
  // new (drawn from `seed` and the step), else every step keeps the round's first list and the
  // types are built once, outside the time. Returns seconds per one-way message; the received
  // arrays of the last step are checked against the peer's, and any difference appended to
  // `errors` (rank 0 gathers every rank's).
  double run_round(bool host, bool rebuilt, int messages, int life, uint64_t seed,
                   std::string* errors);

  // The fastest pack of the send type and the fastest unpack into the receive type, host's or
  // Loom's, of one step's types (p2p::Floor).
  p2p::Floor floor(bool quick);

 private:
  struct Types {
    MPI_Datatype send = MPI_DATATYPE_NULL, recv = MPI_DATATYPE_NULL;
  };
  void choose_atoms(uint64_t seed);  // fills atoms_ with n_ distinct ascending indices
  Types build(bool host);            // the send and receive types of atoms_
  void release(Types& t, bool host);
  void fill(uint64_t seed);  // this rank's arrays from its pattern, the receive arrays cleared
  std::string check(uint64_t seed) const;  // the receive arrays against the peer's pattern

  int n_, natoms_, rank_;
  std::vector<int> atoms_, atoms3_;
  // Per-atom arrays (x, v, f: 3 doubles an atom; q, type, mass: 1) and what arrives.
  std::vector<double> fields_[6], received_[6];
};

}  // namespace loom::bench::particle
