// Throughput of the CPU likelihood: loss+grad and HVP evaluations per second on a synthetic dense
// tensor, bytes streamed per evaluation, achieved bandwidth, and the machine's streaming bandwidth
// measured in the same run with a STREAM-like triad on all cores; the dense Hessian's flop rate
// against this machine's DGEMM and DSYRK rates (Eigen, one product per thread, all threads at once)
// measured in the same run, interleaved with it.
//   likelihood_bench [nbins=10000] [nproc=10] [nsyst=1000] [seconds=3] [threads=all] [--contention
//   [rounds=6]]
// --contention: loss+grad time per evaluation with and without one competing busy process pinned to
// the last CPU of this process's affinity mask, in alternating rounds of `seconds` (docs/benchmarks.md
// "Threads"); prints both medians and their ratio instead of the other measurements.
#include <omp.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <Eigen/Core>
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "rabbit/backend/cpu/cpu_shard_evaluator.hpp"
#include "rabbit/model/model.hpp"
#include "rabbit/model/param_model.hpp"

namespace {

using rabbit::bench::Clock;
using rabbit::bench::median;
using rabbit::bench::seconds_since;
using rabbit::bench::Triad;

// Best of 5 passes.
double triad_bandwidth(Triad& triad) {
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) best = std::min(best, triad.pass());
  return Triad::bandwidth(best);
}

// A child process that spins on the last CPU of our affinity mask until it is killed.
pid_t start_busy_process() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  sched_getaffinity(0, sizeof(mask), &mask);
  int last = -1;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &mask)) last = c;
  const pid_t pid = fork();
  if (pid == 0) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(last, &one);
    sched_setaffinity(0, sizeof(one), &one);
    volatile unsigned long spin = 0;
    for (;;) spin = spin + 1;
  }
  return pid;
}

void stop_busy_process(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

// Flop rate of `threads` concurrent products (one per thread, as the Hessian's threads each update
// their own sum), repeated until they have done `work` flops in all, so that a rate is taken over as
// long as the Hessian it is compared with (the machine is shared: its load drifts). DGEMM
// C += A Bᵀ (n × n × k, 2n²k flops) or, syrk = true, the lower triangle of C += A Aᵀ (n(n+1)k flops),
// the shape of one of the Hessian's blocked rank updates.
double product_rate(int64_t n, int64_t k, bool syrk, int threads, double work) {
  const double flops = syrk ? static_cast<double>(n) * (n + 1) * k : 2.0 * n * n * k;
  const int reps = std::max(1, static_cast<int>(std::ceil(work / (flops * threads))));
  const auto t0 = Clock::now();
#pragma omp parallel num_threads(threads)
  {
    const Eigen::MatrixXd A = Eigen::MatrixXd::Random(n, k), B = Eigen::MatrixXd::Random(n, k);
    Eigen::MatrixXd C = Eigen::MatrixXd::Zero(n, n);
    for (int rep = 0; rep < reps; ++rep) {
      if (syrk) {
        C.selfadjointView<Eigen::Lower>().rankUpdate(A, 1.0);
      } else {
        C.noalias() += A * B.transpose();
      }
    }
    if (!std::isfinite(C(n - 1, 0))) std::printf("product check failed\n");
  }
  return reps * threads * flops / seconds_since(t0);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> pos;
  int contention_rounds = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--contention") == 0) {
      contention_rounds = 6;
      if (i + 1 < argc && std::isdigit(static_cast<unsigned char>(argv[i + 1][0])))
        contention_rounds = std::atoi(argv[++i]);
    } else {
      pos.emplace_back(argv[i]);
    }
  }
  auto arg = [&](size_t i) { return i < pos.size() ? pos[i].c_str() : nullptr; };
  const int64_t B = arg(0) ? std::atoll(arg(0)) : 10000;
  const int64_t P = arg(1) ? std::atoll(arg(1)) : 10;
  const int64_t S = arg(2) ? std::atoll(arg(2)) : 1000;
  const double seconds = arg(3) ? std::atof(arg(3)) : 3.0;
  const int threads = arg(4) ? std::atoi(arg(4)) : omp_get_max_threads();

  auto in = rabbit::bench::lognormal_input(B, P, S, threads,
                                           [](auto& rng, auto& u) { return 0.01 * (u(rng) - 0.5); });
  auto model = rabbit::bench::bb_lite_model(in);

  rabbit::CpuShardEvaluator shard(model, 0, B, threads);
  Eigen::VectorXd xi = Eigen::VectorXd::Zero(1 + S), grad;
  xi[0] = 1.1;
  for (int64_t s = 0; s < S; ++s) xi[1 + s] = 0.3 * std::sin(0.1 * s);

  const double tensor_bytes = 8.0 * static_cast<double>(in->logk.size());
  const double other_bytes = 8.0 * (3.0 * B * P);  // norm plus the per-entry BB/stat arrays touched
  const double bytes = tensor_bytes + other_bytes;

  auto measure = [&](auto&& fn) { return rabbit::bench::calls_per_second(fn, seconds); };
  // a new point for every call (a repeated point is served by the shard's per-point cache)
  Eigen::VectorXd xmove = xi;
  int moves = 0;
  auto loss_grad = [&] {
    xmove[1] = xi[1] + 1e-9 * (++moves);
    shard.value_grad(xmove, grad);
  };
  if (contention_rounds > 0) {
    // alternating quiet and contended rounds, so that a change of the machine's load hits both
    std::vector<double> quiet, busy;
    for (int r = 0; r < contention_rounds; ++r) {
      quiet.push_back(1e3 / measure(loss_grad));
      const pid_t pid = start_busy_process();
      busy.push_back(1e3 / measure(loss_grad));
      stop_busy_process(pid);
      std::printf("round %d: quiet %.3f ms, with a busy process %.3f ms per loss+grad\n", r + 1, quiet.back(),
                  busy.back());
    }
    std::printf(
        "tensor: %lld bins x %lld procs x %lld systs, %d threads: loss+grad median quiet %.3f ms, contended "
        "%.3f ms, ratio %.2f\n",
        static_cast<long long>(B), static_cast<long long>(P), static_cast<long long>(S), threads,
        median(quiet), median(busy), median(busy) / median(quiet));
    return 0;
  }
  const double rate_grad = measure(loss_grad);
  Eigen::MatrixXd V = Eigen::MatrixXd::Random(1 + S, 1), HV;
  // HVP at a new point every call (the first HVP of an outer iteration) ...
  const double rate_hvp = measure([&] {
    xmove[1] = xi[1] + 1e-9 * (++moves);
    shard.value_grad_hvp(xmove, V, grad, HV);
  });
  // ... and repeated HVPs at one point (trust-region inner iterations: per-point cache)
  shard.value_grad(xi, grad);
  const double rate_hvp_same = measure([&] { shard.value_grad_hvp(xi, V, grad, HV); });
  Triad triad_run(threads);
  const double triad = triad_bandwidth(triad_run);
  // The same two interleaved, one evaluation and one triad pass per round: the host's memory bandwidth
  // drifts with other tenants' load between the 2-s measurements above, and the triad above is a best
  // of 5 against a mean rate. Here like is compared with like, best with best and median with median.
  std::vector<double> lg_s, triad_s;
  for (int r = 0; r < 15; ++r) {
    const auto t0 = Clock::now();
    loss_grad();
    lg_s.push_back(seconds_since(t0));
    triad_s.push_back(triad_run.pass());
  }
  // the dense Hessian and its useful flops: a rank-1 update of the θθ triangle per tensor entry
  // (S(S+1)) and one of the whole triangle per bin for the BB-lite β column (n(n+1)),
  // docs/likelihood.md "Derivative structure"; three times, each followed by DGEMM and DSYRK runs of
  // the same flops, and the ratios taken per repetition (interleaved: the machine's load drifts)
  Eigen::MatrixXd H;
  const double n = 1.0 + S;
  const double hess_flops = static_cast<double>(B) * P * S * (S + 1.0) + B * n * (n + 1.0);
  std::vector<double> hess_s, dgemm, dsyrk;
  for (int rep = 0; rep < 3; ++rep) {
    const auto th = Clock::now();
    shard.value_grad_hess(xi, grad, H, true);
    hess_s.push_back(seconds_since(th));
    dgemm.push_back(product_rate(1 + S, 256, false, threads, hess_flops));
    dsyrk.push_back(product_rate(1 + S, 256, true, threads, hess_flops));
  }
  std::printf(
      "tensor: %lld bins x %lld procs x %lld systs (asymmetric, log_normal, BB lite gamma), %d threads\n",
      static_cast<long long>(B), static_cast<long long>(P), static_cast<long long>(S), threads);
  std::printf("bytes streamed per evaluation: %.3f GB (logk %.3f GB)\n", bytes / 1e9, tensor_bytes / 1e9);
  std::printf("loss+grad: %.2f eval/s, %.2f GB/s\n", rate_grad, rate_grad * bytes / 1e9);
  std::printf("loss+grad+HVP(1 column): %.2f eval/s, %.2f GB/s\n", rate_hvp, rate_hvp * bytes / 1e9);
  std::printf("HVP(1 column) repeated at one point: %.2f eval/s, %.2f GB/s\n", rate_hvp_same,
              rate_hvp_same * bytes / 1e9);
  std::printf("STREAM-like triad: %.2f GB/s\n", triad / 1e9);
  std::printf("ratio loss+grad / triad: %.1f%%   HVP / triad: %.1f%%\n", 100.0 * rate_grad * bytes / triad,
              100.0 * rate_hvp * bytes / triad);
  const double best_lg = *std::min_element(lg_s.begin(), lg_s.end());
  const double best_triad = *std::min_element(triad_s.begin(), triad_s.end());
  std::printf(
      "interleaved, 15 rounds of one loss+grad and one triad pass: loss+grad %.2f GB/s best, %.2f median; "
      "triad %.2f best, %.2f median; ratio best/best %.1f%%, median/median %.1f%%\n",
      bytes / best_lg / 1e9, bytes / median(lg_s) / 1e9, Triad::bandwidth(best_triad) / 1e9,
      Triad::bandwidth(median(triad_s)) / 1e9, 100.0 * (bytes / best_lg) / Triad::bandwidth(best_triad),
      100.0 * (bytes / median(lg_s)) / Triad::bandwidth(median(triad_s)));
  for (int rep = 0; rep < 3; ++rep) {
    const double rate = hess_flops / hess_s[rep];
    std::printf(
        "dense Hessian (%lld x %lld): %.2f s, %.2f GFLOP/s; DGEMM (n = %lld, k = 256, one per thread) "
        "%.2f GFLOP/s, DSYRK %.2f GFLOP/s; Hessian / DGEMM %.1f%%, / DSYRK %.1f%%\n",
        static_cast<long long>(1 + S), static_cast<long long>(1 + S), hess_s[rep], rate / 1e9,
        static_cast<long long>(1 + S), dgemm[rep] / 1e9, dsyrk[rep] / 1e9, 100.0 * rate / dgemm[rep],
        100.0 * rate / dsyrk[rep]);
  }
  return 0;
}
