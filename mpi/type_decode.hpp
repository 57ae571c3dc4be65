// Decodes an MPI datatype into Loom's IR with MPI_Type_get_envelope/get_contents.
// This and the interposer are the only places that talk to MPI about types.
#pragma once

#include <mpi.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "types/ir.hpp"

namespace loom::mpi {

// What MPI_Type_get_envelope and MPI_Type_get_contents say of one type, in their classic form
// (counts as int, displacements as MPI_Aint) also for a type built by MPI-4's large-count
// constructors (MPI_Type_vector_c, ...), whose classic envelope MPICH 4 refuses, fatally under
// the default error handler (mpi4py 4 builds every type so). Owns the derived handles that
// get_contents returns. `why` not empty: the host could not describe the type, or one of its
// large counts does not fit an int; combiner is then -1 and the lists are empty.
struct TypeContents {
  int combiner = -1;
  std::vector<int> ints;
  std::vector<MPI_Aint> addrs;
  std::vector<MPI_Datatype> types;
  std::string why;

  explicit TypeContents(MPI_Datatype type);
  ~TypeContents();
  TypeContents(const TypeContents&) = delete;
  TypeContents& operator=(const TypeContents&) = delete;

 private:
  void release_types();
};

// The combiner of `type` (MPI_COMBINER_NAMED for a predefined one), from the envelope that
// also describes large-count types; -1 when the host cannot say.
int type_combiner(MPI_Datatype type);
// Whether `type` is predefined (MPI_COMBINER_NAMED).
inline bool is_named(MPI_Datatype type) {
  return type_combiner(type) == MPI_COMBINER_NAMED;
}

// The (uncanonicalised) layout of one element of `type`, or nullopt with a reason when
// Loom does not handle the type (it then goes to the host MPI). `mixed_basic_types`, if
// given, says whether the typemap holds more than one basic type (pair types count);
// `single_basic_type`, if given, is the one basic type of the typemap, or MPI_DATATYPE_NULL when
// it holds none, several, or a pair type (one-sided calls match origin and target by it).
// With `check_parts_over` > 0 the caller checks the whole type against the host's packing
// when its true extent is at most that many bytes; a larger type has its largest parts within
// that size packed by the host here, and any difference makes it unsupported (Open MPI 4.1
// packs the descending bytes of hvector(2, 1, -1, MPI_BYTE) in ascending order, also deep
// inside a type spanning megabytes).
std::optional<types::Layout> decode_datatype(MPI_Datatype type, std::string* why_not,
                                             bool* mixed_basic_types = nullptr,
                                             int64_t check_parts_over = 0,
                                             MPI_Datatype* single_basic_type = nullptr);

// Packs one element of `type` with the host from a patterned scratch copy of its true
// bounds, and with `loom_pack(base, packed)`; true when the bytes agree, or when no pointer
// can express the element's origin (a type of absolute addresses). False when the host fails.
bool host_packs_same(MPI_Datatype type, int64_t size, int64_t true_lb, int64_t true_extent,
                     const std::function<void(const void* base, void* packed)>& loom_pack);

// What the host says of a type in a handful of calls, whatever its size: its combiner, the
// lengths of its constructor's argument lists (MPI_Type_get_envelope), its size, bounds and true
// bounds. Types of equal signature (type_signature) have equal outlines; the converse is only
// likely.
struct TypeOutline {
  int combiner = -1;
  int64_t entries[4] = {};  // integers, addresses, large counts, datatypes
  int64_t size = 0, lb = 0, extent = 0, true_lb = 0, true_extent = 0;
  bool operator==(const TypeOutline&) const = default;
};
TypeOutline type_outline(MPI_Datatype type);

// The size of `type`'s description: the integers, addresses, large counts and datatypes of its
// constructor calls, summed down its tree of types. Only nodes of at most `node_limit` entries
// are opened (MPI_Type_get_contents), at most `max_nodes` of them; a larger node counts its own
// entries (MPI_Type_get_envelope) and stops there. A lower bound of what decoding the type
// reads, found in a bounded number of host calls whatever the type's size (an indexed type of
// a million blocks is one envelope). `*nodes_opened`, if given, counts the nodes opened.
//
// A type built through Loom's constructors (note_constructed) answers from what they recorded,
// the whole tree's sum, without a host call: MPI_Type_get_contents is what this avoids, since
// Open MPI's duplicates every derived type it returns, a cost proportional to those types.
int64_t description_size(MPI_Datatype type, int* nodes_opened = nullptr, int node_limit = 64,
                         int max_nodes = 16);

// Records, as a type constructor returns `made`, its description size: its own envelope plus
// what is known of `from`, the constructor's old types. Nothing is recorded when one of them is
// unknown (built where Loom did not see it): description_size then walks the type.
void note_constructed(MPI_Datatype made, const MPI_Datatype* from, int count);
// Drops what note_constructed recorded, as `type` is freed (its handle may be reused).
void forget_constructed(MPI_Datatype type);

// A byte string naming `type` exactly: its constructor calls (MPI_Type_get_envelope and
// get_contents) all the way down to predefined types. Types with equal signatures have the same
// typemap, bounds and extent, whatever their handles. False when it cannot be formed.
bool type_signature(MPI_Datatype type, std::string* out);

}  // namespace loom::mpi
