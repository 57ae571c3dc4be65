// The pack benchmark's datatype corpus as a reusable API (loom-bench pack and the tests use it).
//
// Each CorpusEntry names one datatype shape: a strided sweep (1-D/2-D/3-D), a face or edge of a
// 3-D grid, or an application type from the literature (DDTBench: Schneider, Gerstenberger and
// Hoefler, "Application-oriented ping-pong benchmarking: how to assess the real communication
// overheads", Computing 2014, and "Micro-applications for communication data access patterns and
// MPI datatypes", EuroMPI 2012; TEMPI: Pearson et al. 2021). Its builder scales the shape so that
// one MPI_Pack of `count` elements produces about `target_packed_bytes` (never more than twice
// that, never less than half, except where one element of the shape is already larger).
//
// Ownership: the builder COMMITS the returned type and frees every intermediate type; the caller
// frees the result with free_corpus_type() (or MPI_Type_free on .type). MPI must be initialised.
// Builders are deterministic (irregular index lists come from fixed seeds), so two processes that
// build the same (entry, size) get identical typemaps.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace loom::bench {

struct CorpusType {
  MPI_Datatype type = MPI_DATATYPE_NULL;  // committed; free with free_corpus_type()
  int count = 1;                          // count to pass to MPI_Pack / MPI_Unpack
  int64_t packed_bytes = 0;               // count * type size: the bytes MPI_Pack produces
  int64_t span_bytes = 0;                 // user-buffer bytes touched by `count` elements
  // inbuf = allocation + base_offset puts the lowest touched byte at allocation[0], so an
  // allocation of span_bytes is exactly large enough (handles negative true lower bounds).
  int64_t base_offset = 0;
  int64_t min_block_bytes = 0;  // shortest contiguous run in the typemap
  std::string shape;            // human-readable geometry, e.g. "n=512 blk=16B stride=32B"
};

struct CorpusEntry {
  const char* name;    // unique, e.g. "vec1d_b4"; the bench's --types filter matches substrings
  const char* family;  // "1d", "2d", "3d", "grid" (synthetic, regular) or "app"
  // Synthetic regular shapes, whose smallest block stands for all their blocks (the JSON's
  // "regular": readers group such cases by block size). Application types are mixed or irregular.
  bool regular;
  const char* origin;  // one line: what the type models and where it comes from
  CorpusType (*build)(int64_t target_packed_bytes);
};

// The corpus, in report order.
const std::vector<CorpusEntry>& pack_corpus();
// Entry by exact name, or nullptr.
const CorpusEntry* find_corpus_entry(const std::string& name);

// Commits `type` (unless already committed by the caller: pass committed=true) and fills the
// size/span/offset fields from MPI_Type_size_x, MPI_Type_get_extent_x and
// MPI_Type_get_true_extent_x. Builders use it; tests may too for their own types.
CorpusType finish_corpus_type(MPI_Datatype type, int count, int64_t min_block_bytes,
                              std::string shape, bool committed = false);
void free_corpus_type(CorpusType& t);

// Whether the builders and free_corpus_type commit and free through the host's own
// PMPI_Type_commit/PMPI_Type_free (true) or through MPI_Type_commit/MPI_Type_free, Loom's in
// loom-bench (false, the default): `loom-bench app` times the host's type life cycle against
// Loom's in one process. Not thread-safe; set it before building.
void use_host_type_calls(bool host);

}  // namespace loom::bench
