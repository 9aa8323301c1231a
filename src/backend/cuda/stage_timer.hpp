#pragma once
// Per-stage device times of a CUDA shard from CUDA events (docs/sharding-and-gpu.md "Benchmarks
// against the hardware"), on when RABBIT_CUDA_STAGE_TIMES=1: every kernel, cuBLAS call and copy on
// the shard's stream is bracketed by two events; at each synchronisation the intervals are added up
// per stage name, and the shard prints one table to stderr when it is destroyed. Off by default (an
// event pair per launch costs a few microseconds of host time).
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace rabbit::pipeline {

class StageTimer {
 public:
  explicit StageTimer(int ordinal) : ordinal_(ordinal) {
    const char* v = std::getenv("RABBIT_CUDA_STAGE_TIMES");
    on_ = v && std::string(v) == "1";
  }
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;
  ~StageTimer() {
    if (on_ && !totals_.empty()) std::fputs(table().c_str(), stderr);
    for (const Pending& p : pending_) free_.insert(free_.end(), {p.begin, p.end});
    for (cudaEvent_t e : free_) cudaEventDestroy(e);
  }

  bool on() const { return on_; }
  /// Before an operation on `s`.
  void begin(cudaStream_t s) {
    if (!on_) return;
    open_ = event();
    cudaEventRecord(open_, s);
  }
  /// After it: the interval since begin() counts for `stage`.
  void end(const char* stage, cudaStream_t s) {
    if (!on_ || !open_) return;
    cudaEvent_t e = event();
    cudaEventRecord(e, s);
    pending_.push_back({stage, open_, e});
    open_ = nullptr;
  }
  /// After the stream's synchronisation: every pending interval has completed.
  void collect() {
    if (!on_) return;
    ++synchronizations_;
    for (const Pending& p : pending_) {
      float ms = 0;
      if (cudaEventElapsedTime(&ms, p.begin, p.end) == cudaSuccess) {
        Total& t = totals_[p.stage];
        t.ms += ms;
        ++t.calls;
      }
      free_.insert(free_.end(), {p.begin, p.end});
    }
    pending_.clear();
  }
  std::string table() const {
    std::vector<std::pair<std::string, Total>> rows(totals_.begin(), totals_.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
    double all = 0;
    for (const auto& r : rows) all += r.second.ms;
    std::string s = fmt::format(
        "stage times on cuda:{} (RABBIT_CUDA_STAGE_TIMES=1, CUDA events, {} synchronisations, {:.3f} ms in "
        "all)\n  {:<28} {:>8} {:>12} {:>12} {:>6}\n",
        ordinal_, synchronizations_, all, "stage", "calls", "total ms", "mean us", "share");
    for (const auto& [name, t] : rows)
      s += fmt::format("  {:<28} {:>8} {:>12.3f} {:>12.2f} {:>5.1f}%\n", name, t.calls, t.ms,
                       1e3 * t.ms / t.calls, all > 0 ? 100.0 * t.ms / all : 0.0);
    return s;
  }

 private:
  struct Pending {
    std::string stage;
    cudaEvent_t begin, end;
  };
  struct Total {
    double ms = 0;
    long calls = 0;
  };
  cudaEvent_t event() {
    if (!free_.empty()) {
      cudaEvent_t e = free_.back();
      free_.pop_back();
      return e;
    }
    cudaEvent_t e = nullptr;
    cudaEventCreate(&e);
    return e;
  }
  int ordinal_;
  bool on_ = false;
  long synchronizations_ = 0;
  cudaEvent_t open_ = nullptr;
  std::vector<Pending> pending_;
  std::vector<cudaEvent_t> free_;
  std::map<std::string, Total> totals_;
};

}  // namespace rabbit::pipeline
