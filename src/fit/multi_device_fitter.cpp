#include "rabbit/fit/multi_device_fitter.hpp"

#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

namespace rabbit {

// Persistent workers 1..N-1; the caller runs task 0. One generation counter per dispatch: each
// worker runs its own index once per generation and reports back.
class MultiDeviceFitter::ShardPool {
 public:
  explicit ShardPool(size_t n) : errors_(n) {
    for (size_t i = 1; i < n; ++i) workers_.emplace_back([this, i] { work(i); });
  }
  ~ShardPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    start_.notify_all();
    for (auto& t : workers_) t.join();
  }

  void run(const std::function<void(size_t)>& fn) {
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

 private:
  void work(size_t index) {
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

  std::mutex mutex_;
  std::condition_variable start_, done_;
  std::vector<std::thread> workers_;
  std::vector<std::exception_ptr> errors_;
  const std::function<void(size_t)>* task_ = nullptr;
  size_t pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

MultiDeviceFitter::MultiDeviceFitter(std::shared_ptr<Model> model,
                                     std::vector<std::unique_ptr<ShardEvaluator>> shards)
    : Fitter(std::move(model), std::move(shards)),
      pool_(std::make_unique<ShardPool>(this->shards().size())) {}

// The pool goes first (members before the base), so no worker touches a shard being destroyed.
MultiDeviceFitter::~MultiDeviceFitter() = default;

void MultiDeviceFitter::for_each_shard(const std::function<void(size_t)>& fn) {
  if (!pool_ || shards().size() == 1) {
    Fitter::for_each_shard(fn);
    return;
  }
  pool_->run(fn);
}

}  // namespace rabbit
