// Staging buffers for pack-then-send. Large allocations are mmap-backed and page-faulted
// on first touch, which would cost more than the pack itself; buffers are therefore
// kept in a process-wide pool by power-of-two size class and reused.
#pragma once

#include <cstddef>

namespace loom::interpose {

class StagingBuffer {
 public:
  StagingBuffer() = default;
  explicit StagingBuffer(size_t bytes);
  ~StagingBuffer();
  StagingBuffer(StagingBuffer&& other) noexcept;
  StagingBuffer& operator=(StagingBuffer&& other) noexcept;
  StagingBuffer(const StagingBuffer&) = delete;
  StagingBuffer& operator=(const StagingBuffer&) = delete;

  char* data() const { return data_; }
  size_t size() const { return size_; }  // what was asked for

 private:
  void release();
  char* data_ = nullptr;
  size_t size_ = 0;
  int size_class_ = -1;
};

void release_staging_pool();  // at MPI_Finalize

}  // namespace loom::interpose
