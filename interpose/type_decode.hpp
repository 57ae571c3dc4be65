// Decodes an MPI datatype into Loom's IR with MPI_Type_get_envelope/get_contents.
// This and the interposer are the only places that talk to MPI about types.
#pragma once

#include <mpi.h>

#include <optional>
#include <string>

#include "types/ir.hpp"

namespace loom::interpose {

// The (uncanonicalised) layout of one element of `type`, or nullopt with a reason when
// Loom does not handle the type (it then goes to the host MPI). `mixed_basic_types`, if
// given, says whether the typemap holds more than one basic type (pair types count).
std::optional<types::Layout> decode_datatype(MPI_Datatype type, std::string* why_not,
                                             bool* mixed_basic_types = nullptr);

}  // namespace loom::interpose
