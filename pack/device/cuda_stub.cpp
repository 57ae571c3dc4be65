// The CUDA executor of a build without CUDA: never available, every call says why.
#include "pack/device/executor.hpp"

namespace loom::pack::device {

namespace {

class CudaStub final : public Executor {
 public:
  const char* name() const override { return "cuda"; }
  bool available() const override { return false; }
  std::string device_name() const override { return "none (Loom was built without CUDA)"; }
  Memory locate(const void*) const override { return Memory::Host; }
  Status pack(const Program&, const void*, int64_t, void*, Stream) override { return missing(); }
  Status unpack(const Program&, const void*, int64_t, void*, Stream) override { return missing(); }
  Status synchronize(Stream) override { return missing(); }
  void* allocate(int64_t) override { return nullptr; }
  void release(void*) override {}
  Status to_device(void*, const void*, int64_t) override { return missing(); }
  Status to_host(void*, const void*, int64_t) override { return missing(); }
  Status copy_rows(void*, int64_t, const void*, int64_t, int64_t, int64_t) override {
    return missing();
  }
  Status pin(void*, int64_t) override { return missing(); }
  void unpin(void*) override {}

 private:
  static Status missing() {
    return Status::error("Loom was built without CUDA (configure with -DLOOM_CUDA=ON)");
  }
};

}  // namespace

Executor& cuda_executor() {
  static CudaStub stub;
  return stub;
}

bool cuda_built() {
  return false;
}

}  // namespace loom::pack::device
