// Loom halo, C++: a thin RAII layer over the C API of loom/halo.h (docs/halo.md). Every call
// is the C call of the same name; an error code becomes a loom::halo::Error carrying the code
// and the library's message. The domain is move-only and destroyed with its object
// (collective, as loom_halo_destroy).
//
//   loom::halo::Domain d(MPI_COMM_WORLD, {64, 64, 64}, {2, 2, 2, 2, 2, 2}, {1, 1, 1});
//   const int rho = d.add_field<double>();
//   d.realize();
//   loom::halo::Field<double> u = d.field<double>(rho);
//   u(0, 0, 0) = 1.0;  // local cell (0,0,0); ghosts at negative indices and past extent()
//   d.start(); /* interior */ d.finish(); /* shell */
#pragma once

#include <loom/halo.h>

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

namespace loom::halo {

class Error : public std::runtime_error {
 public:
  Error(int code, const std::string& what)
      : std::runtime_error(std::string(loom_halo_error_string(code)) + ": " + what), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

inline void check(int code) {
  if (code != LOOM_HALO_SUCCESS) throw Error(code, loom_halo_error_message());
}

// A field's cells: (i, j, k) local coordinates, ghosts included.
template <class T>
struct Field {
  char* base = nullptr;
  std::array<int64_t, 3> stride{};  // bytes
  T& operator()(int64_t i, int64_t j, int64_t k) const {
    return *reinterpret_cast<T*>(base + i * stride[0] + j * stride[1] + k * stride[2]);
  }
};

class Domain {
 public:
  Domain(MPI_Comm comm, const std::array<int64_t, 3>& extent, const std::array<int, 6>& radius,
         const std::array<int, 3>& periodic, int stencil = LOOM_HALO_BOX, uint32_t mask = 0) {
    check(loom_halo_create(comm, extent.data(), radius.data(), periodic.data(), stencil, mask,
                           &domain_));
  }
  Domain(const Domain&) = delete;
  Domain& operator=(const Domain&) = delete;
  Domain(Domain&& other) noexcept : domain_(std::exchange(other.domain_, nullptr)) {}
  Domain& operator=(Domain&& other) noexcept {
    if (this != &other) {
      if (domain_) loom_halo_destroy(&domain_);
      domain_ = std::exchange(other.domain_, nullptr);
    }
    return *this;
  }
  ~Domain() {
    if (domain_) loom_halo_destroy(&domain_);
  }

  int add_field(size_t element_size) {
    int f = -1;
    check(loom_halo_add_field(domain_, element_size, &f));
    return f;
  }
  int add_field(MPI_Datatype named_type) {
    int f = -1;
    check(loom_halo_add_field_type(domain_, named_type, &f));
    return f;
  }
  template <class T>
  int add_field() {
    return add_field(sizeof(T));
  }
  // The caller's memory as a field (loom_halo_attach_field): base is local cell (0,0,0).
  int attach_field(size_t element_size, void* base, const std::array<int64_t, 3>& strides) {
    int f = -1;
    check(loom_halo_attach_field(domain_, element_size, base, strides.data(), &f));
    return f;
  }
  void set_methods(unsigned methods) { check(loom_halo_set_methods(domain_, methods)); }
  void realize() { check(loom_halo_realize(domain_)); }

  std::array<int64_t, 3> origin() const {
    std::array<int64_t, 3> o{};
    check(loom_halo_origin(domain_, o.data()));
    return o;
  }
  std::array<int64_t, 3> extent() const {
    std::array<int64_t, 3> n{};
    check(loom_halo_extent(domain_, n.data()));
    return n;
  }
  template <class T>
  Field<T> field(int index) const {
    Field<T> f;
    void* base = nullptr;
    check(loom_halo_field(domain_, index, &base, f.stride.data()));
    f.base = static_cast<char*>(base);
    return f;
  }

  void exchange() { check(loom_halo_exchange(domain_)); }
  void start() { check(loom_halo_start(domain_)); }
  void finish() { check(loom_halo_finish(domain_)); }

  loom_halo_domain get() const { return domain_; }  // for the C API

 private:
  loom_halo_domain domain_ = nullptr;
};

}  // namespace loom::halo
