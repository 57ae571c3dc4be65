// Loom's environment variables, declared by the component that reads them: name, default (in
// words, as the README's table gives it) and one line of documentation. Every LOOM_* variable a
// library layer reads is read through an EnvVar; tests/layering/check_env.py checks the README's
// table against these declarations, and that no layer reads a LOOM_* variable around them.
// Header-only and below every other folder: engines declare theirs too.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace loom::base {

struct EnvVar {
  const char* name;
  const char* default_text;
  const char* doc;
};

// The variable's value, or null when it is unset or empty.
inline const char* read(const EnvVar& var) {
  const char* value = std::getenv(var.name);
  return value && *value ? value : nullptr;
}

// Set and not "0" (unset or empty: `otherwise`).
inline bool read_flag(const EnvVar& var, bool otherwise = false) {
  const char* value = read(var);
  return value ? std::strcmp(value, "0") != 0 : otherwise;
}

// Whether this process is its job's first rank, as the launcher says (Open MPI's mpiexec,
// MPICH's Hydra, PMIx): a setting every rank reads alike is reported once per job, even before
// MPI starts. A process no launcher started counts as the first.
inline bool first_rank_of_job() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (const char* rank = std::getenv(name); rank && *rank) return std::strcmp(rank, "0") == 0;
  return true;
}

// A bad value of `var`, said once per job on stderr: "loom: LOOM_X=value <problem>; <outcome>".
inline void warn_bad_value(const EnvVar& var, const char* value, const char* problem,
                           const char* outcome) {
  if (first_rank_of_job())
    std::fprintf(stderr, "loom: %s=%s %s; %s\n", var.name, value, problem, outcome);
}

}  // namespace loom::base
