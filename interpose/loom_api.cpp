// Loom's own C API (include/loom/loom.h): entry points over the layers below.
#include "exec/device_memory.hpp"
#include "loom/loom.h"
#include "ops/method.hpp"
#include "ops/report.hpp"
#include "runtime/runtime.hpp"

extern "C" int loom_is_active(void) {
  return loom::runtime::config().disabled ? 0 : 1;
}

extern "C" void loom_get_stats(loom_stats* out) {
  loom::ops::fill_stats(out);
}

extern "C" int loom_get_counter(const char* name, uint64_t* value) {
  return loom::ops::counter_value(name, value);
}

extern "C" int loom_method_for(MPI_Datatype type, int count, int peer_same_node) {
  return loom::ops::method_for(type, count, peer_same_node);
}

extern "C" void* loom_emulated_device_alloc(size_t bytes) {
  return loom::exec::emulated_device_allocate(static_cast<int64_t>(bytes));
}

extern "C" void loom_emulated_device_free(void* p) {
  loom::exec::emulated_device_release(p);
}

extern "C" int loom_emulated_device_copy(void* dst, const void* src, size_t bytes) {
  return loom::exec::emulated_device_copy(dst, src, static_cast<int64_t>(bytes)) ? 0 : 1;
}
