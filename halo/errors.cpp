// The halo library's errors: codes returned, and the calling thread's last error in words.
#include <string>
#include <utility>

#include "halo/domain.hpp"
#include "loom/halo.h"

namespace loom::halo {
namespace {
thread_local std::string last_error;
}  // namespace

int fail(int code, std::string message) {
  last_error = std::move(message);
  return code;
}

int mpi_fail(int rc, const char* what) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(rc, text, &length);
  return fail(LOOM_HALO_ERR_MPI, std::string(what) + ": " + text);
}

}  // namespace loom::halo

extern "C" {

const char* loom_halo_error_string(int code) {
  switch (code) {
    case LOOM_HALO_SUCCESS:
      return "LOOM_HALO_SUCCESS";
    case LOOM_HALO_ERR_ARG:
      return "LOOM_HALO_ERR_ARG";
    case LOOM_HALO_ERR_EXTENT:
      return "LOOM_HALO_ERR_EXTENT";
    case LOOM_HALO_ERR_RADIUS:
      return "LOOM_HALO_ERR_RADIUS";
    case LOOM_HALO_ERR_STATE:
      return "LOOM_HALO_ERR_STATE";
    case LOOM_HALO_ERR_MISMATCH:
      return "LOOM_HALO_ERR_MISMATCH";
    case LOOM_HALO_ERR_MPI:
      return "LOOM_HALO_ERR_MPI";
    case LOOM_HALO_ERR_NOMEM:
      return "LOOM_HALO_ERR_NOMEM";
    default:
      return "unknown loom_halo error";
  }
}

const char* loom_halo_error_message(void) {
  return loom::halo::last_error.c_str();
}

}  // extern "C"
