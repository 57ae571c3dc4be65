// Decodes an MPI datatype into Loom's IR with MPI_Type_get_envelope/get_contents.
// This and the interposer are the only places that talk to MPI about types.
#pragma once

#include <mpi.h>

#include <optional>
#include <string>

#include "types/ir.hpp"

namespace loom::mpi {

// The (uncanonicalised) layout of one element of `type`, or nullopt with a reason when
// Loom does not handle the type (it then goes to the host MPI). `mixed_basic_types`, if
// given, says whether the typemap holds more than one basic type (pair types count).
std::optional<types::Layout> decode_datatype(MPI_Datatype type, std::string* why_not,
                                             bool* mixed_basic_types = nullptr);

// A byte string naming `type` exactly: its constructor calls (MPI_Type_get_envelope and
// get_contents) all the way down to predefined types. Types with equal signatures have the same
// typemap, bounds and extent, whatever their handles. False when it cannot be formed.
bool type_signature(MPI_Datatype type, std::string* out);

}  // namespace loom::mpi
