// The host MPI's quirks that Loom's library code must match or avoid, in one place: each is a
// named question about the running host, answered from its identity (mpi/host_identity.hpp) or
// probed once. The tests keep theirs in tests/mpi/host_quirks.hpp.
#pragma once

#include "model/model.hpp"

namespace loom::mpi {

// After MPI_ERR_TRUNCATE, whether the host delivers the bytes that fit into a receive buffer
// (Open MPI, its status saying how many) or nothing (MPICH 4.0, whose status count is then
// undefined for a derived receive). Loom unpacks what the host would have delivered.
bool host_delivers_truncated_bytes();
// The host's part of the method model's built-in rule (model::BuiltInRule), where the host's own
// engine is as fast as Loom's pack path (docs/model.md, "Without a calibration"): MPICH's on
// long blocks of larger messages, and its weak ground from 4 KiB, where MPICH packs straight
// into its shared-memory cells. Open MPI has none.
model::BuiltInRule builtin_rule_for_host();
// Whether the host sends a contiguous message between processes of one node above its eager limit
// by single-copy rendezvous, and a non-contiguous one by copy-in/copy-out: Open MPI's vader
// transport with its single-copy mechanism on (OMPI_MCA_btl_vader_single_copy_mechanism not
// "none") and the ob1 pml (OMPI_MCA_pml not asking for UCX). For Loom's packed bytes the second
// is the faster (docs/p2p.md, "Packed messages under Open MPI").
bool host_sends_contiguous_by_single_copy();
// Whether the host moves contiguous bytes between processes of one node by copying them in and
// out of its own shared-memory queue, fragment by fragment, at every size: Open MPI's vader
// transport with its single-copy mechanism off (OMPI_MCA_btl_vader_single_copy_mechanism=none)
// and the ob1 pml. Two whole copies through Loom's same-node window then beat it from a few KiB
// (docs/collectives.md, "Same-node transport"); MPICH 4.0 and Open MPI's single copy do not lose
// to them.
bool host_copies_contiguous_through_its_queue();
// How many messages of a non-contiguous type the host sends before its typed path runs at speed,
// which an online trial must not time before them. MPICH 4.0's typed ping-pong of a grid face
// runs several times slower for its first 15-16 messages than after (counted in messages, not
// time: waiting between them changes nothing; docs/model.md, "Online trials"); Open MPI runs at
// speed from its second message.
int host_typed_warmup_messages();
// Whether the host's collectives move a block that is one element of a type whose data is one
// contiguous run (its extent may be larger) as fast as the same bytes of MPI_BYTE: Open MPI's
// convertor copies such an element whole. MPICH 4.0's typed collectives of one such int a block
// cost more than its byte ones (docs/collectives.md, "Small calls").
bool host_moves_one_run_elements_as_bytes();
// Whether the host receives a contiguous message of over ~8 KiB into a datatype with more than
// one basic type. MPICH 4.0 cannot, so Loom does not send such types packed there.
bool host_receives_packed_into_mixed_types();
// Whether the host's MPI_Isendrecv and MPI_Isendrecv_replace release the send side's derived
// datatype once too often, freeing it when the request completes (its next use crashes): MPICH
// before 4.3 (pmodels/mpich#7098, fixed by #7106; measured on 4.0.2, docs/p2p.md).
bool host_isendrecv_releases_derived_types();
// Whether the host's persistent MPI_Gather_init, MPI_Scatter_init and MPI_Allgather_init deliver
// wrong data while their v forms are right: MPICH (4.0.2 measured in docs/collectives.md: a gather
// sends what the send buffer held at init, pmodels/mpich#7078; a scatter's second start
// delivers nothing or fails, #7550, still open in 2025; an allgather's second start on a
// power-of-two communicator leaves peers' blocks alone, #6423). Every MPICH version counts.
bool host_persistent_uniform_collectives_misdeliver();

// Whether the host reports a too small buffer in MPI_Pack / MPI_Unpack as an error, leaving the
// buffer and *position alone (MPICH 4.0 instead packs past `outsize`, and unpacks a short input
// and says success). Probed once, on the first call that does not fit; needs MPI initialised.
struct HostTruncation {
  bool pack_reports = false;
  bool unpack_reports = false;
};
const HostTruncation& host_truncation();

// Whether the host MPI reads and writes GPU memory itself (is CUDA-aware): LOOM_CUDA_AWARE=1 or
// 0 says so; otherwise the host's MPIX_Query_cuda_support (Open MPI, MPICH) answers, and a
// host without it is not. Debian's Open MPI and MPICH say 0. Needs MPI initialised.
bool host_reads_device_memory();

}  // namespace loom::mpi
