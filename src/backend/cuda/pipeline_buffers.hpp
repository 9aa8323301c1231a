#pragma once
// Memory of the CUDA shard's pipeline (shard_pipeline.hpp), owned through its Ops policy: device
// buffers, and the page-locked host staging of the per-call copies.
#include <fmt/format.h>

#include <cstddef>

#include "rabbit/core/error.hpp"

namespace rabbit::pipeline {

/// A device buffer owned through the Ops policy.
template <class Ops, class T>
class Buffer {
 public:
  explicit Buffer(Ops* ops) : ops_(ops) {}
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { release(); }
  void allocate(size_t n, const char* what) {
    if (n == size_) return;
    release();
    if (n == 0) return;
    ptr_ = static_cast<T*>(ops_->alloc(n * sizeof(T), what));
    size_ = n;
  }
  void upload(const T* host, size_t n, const char* what) {
    allocate(n, what);
    if (n) ops_->to_device(ptr_, host, n * sizeof(T), what);
  }
  void upload(const std::vector<T>& host, const char* what) { upload(host.data(), host.size(), what); }
  void zero() {
    if (size_) ops_->zero(ptr_, size_ * sizeof(T));
  }
  // The first n elements only (a batch of fewer columns than the buffer was sized for).
  void zero(size_t n) {
    if (n) ops_->zero(ptr_, n * sizeof(T));
  }
  // Into the first n elements of a buffer allocated before: no reallocation.
  void copy_in(const T* host, size_t n, const char* what) {
    if (n > size_) throw Error(fmt::format("{}: {} elements into a buffer of {}", what, n, size_));
    if (n) ops_->to_device(ptr_, host, n * sizeof(T), what);
  }
  T* get() const { return ptr_; }
  size_t size() const { return size_; }

 private:
  void release() {
    if (ptr_) ops_->release(ptr_);
    ptr_ = nullptr;
    size_ = 0;
  }
  Ops* ops_;
  T* ptr_ = nullptr;
  size_t size_ = 0;
};

/// Page-locked host memory owned through the Ops policy: the per-call staging of parameters and
/// results, so that copies run asynchronously and a call waits for the device once.
template <class Ops>
class Pinned {
 public:
  explicit Pinned(Ops* ops) : ops_(ops) {}
  Pinned(const Pinned&) = delete;
  Pinned& operator=(const Pinned&) = delete;
  ~Pinned() {
    if (ptr_) ops_->release_pinned(ptr_);
  }
  // At least n doubles; contents are not kept. Only between calls (nothing in flight).
  void reserve(size_t n, const char* what) {
    if (n <= size_) return;
    if (ptr_) ops_->release_pinned(ptr_);
    ptr_ = nullptr;
    ptr_ = static_cast<double*>(ops_->alloc_pinned(n * sizeof(double), what));
    size_ = n;
  }
  double* get() const { return ptr_; }

 private:
  Ops* ops_;
  double* ptr_ = nullptr;
  size_t size_ = 0;
};

}  // namespace rabbit::pipeline
