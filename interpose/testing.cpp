// Loom's test-only C API (include/loom/testing.h): what loom-bench and the tests ask of this
// library's own state, over the layers below.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "interpose/text_out.hpp"
#include "loom/testing.h"
#include "model/model.hpp"
#include "mpi/host_identity.hpp"
#include "mpi/type_decode.hpp"
#include "mpi/type_registry.hpp"
#include "ops/method.hpp"
#include "types/ir.hpp"

using loom::interpose::text_out;

extern "C" void loom_testing_pin_method(int method) {
  std::optional<loom::model::Method> pinned;
  if (method == LOOM_METHOD_HOST) pinned = loom::model::Method::Host;
  if (method == LOOM_METHOD_PACK) pinned = loom::model::Method::Pack;
  loom::ops::pin_method(pinned);
}

extern "C" int loom_testing_calibration_path(char* buf, int buflen) {
  return text_out(loom::ops::calibration_path(), buf, buflen);
}

extern "C" int loom_testing_host_mpi(char* buf, int buflen) {
  return text_out(loom::mpi::host_mpi_version(), buf, buflen);
}

extern "C" int loom_testing_host_settings(char* buf, int buflen) {
  return text_out(loom::mpi::host_transport_settings(), buf, buflen);
}

extern "C" int loom_testing_type_layout(MPI_Datatype type, int64_t* words, int capacity) {
  std::string why_not;
  const std::optional<loom::types::Layout> layout = loom::mpi::decode_datatype(type, &why_not);
  if (!layout) return -1;
  const std::vector<int64_t> encoded = loom::types::to_words(*layout);
  const int n = static_cast<int>(encoded.size());
  if (words && n <= capacity) std::copy(encoded.begin(), encoded.end(), words);
  return n;
}

extern "C" int loom_testing_unplanned_host_time(MPI_Datatype type, double* host_us) {
  const loom::mpi::TypeUse use = loom::mpi::use_type(type);
  if (!use.unplanned) return 0;
  if (host_us)
    *host_us = 1e-3 * static_cast<double>(use.unplanned->host_ticks.load()) /
               loom::mpi::clock_ticks_per_ns();
  return 1;
}
