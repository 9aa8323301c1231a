#include "rabbit/fit/shard_pool.hpp"

namespace rabbit {

// Persistent workers 1..N-1; the caller runs task 0. One generation counter per dispatch: each
// worker runs its own index once per generation and reports back.
ShardPool::ShardPool(size_t n) : errors_(n) {
  for (size_t i = 1; i < n; ++i) workers_.emplace_back([this, i] { work(i); });
}

ShardPool::~ShardPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  start_.notify_all();
  for (auto& t : workers_) t.join();
}

void ShardPool::run(const std::function<void(size_t)>& fn) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    task_ = &fn;
    pending_ = workers_.size();
    for (auto& e : errors_) e = nullptr;
    ++generation_;
  }
  start_.notify_all();
  try {
    fn(0);
  } catch (...) {
    errors_[0] = std::current_exception();
  }
  {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return pending_ == 0; });
    task_ = nullptr;
  }
  for (auto& e : errors_)
    if (e) std::rethrow_exception(e);
}

void ShardPool::work(size_t index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(size_t)>* task = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      task = task_;
    }
    try {
      (*task)(index);
    } catch (...) {
      errors_[index] = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
}

}  // namespace rabbit
