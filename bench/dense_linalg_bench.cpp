// Eigen against OpenBLAS for the dense linear algebra of a fit (docs/benchmarks.md "Dense linear
// algebra"): Cholesky (the trust-exact solver, the covariance), the inverse of a symmetric
// positive-definite matrix (the postfit covariance, minimize/spd_inverse.hpp) and the rank-k
// update of the dense Hessian, with DGEMM as the machine's reference rate. Runs are interleaved (Eigen,
// OpenBLAS, Eigen, ...) and repeated; each line gives the best and the median time.
//   dense_linalg_bench [reps=5] [threads=1,2] [n ...=200 1000 3000]
// OpenBLAS is opened at run time from its explicit path (never the system's libblas/liblapack
// alternative, which points at the reference implementation on purpose), with RTLD_DEEPBIND so
// that its LAPACK routines call its own BLAS. Without it, only Eigen is measured.
#include <dlfcn.h>

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "rabbit/minimize/spd_inverse.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using Eigen::MatrixXd;

constexpr const char* kOpenBlasPath = "/usr/lib/x86_64-linux-gnu/libopenblas.so.0";
constexpr int kSyrkDepth = 256;  // the Hessian's rank-update block (src/backend/cpu/shard_evaluation.hpp)

struct OpenBlas {
  using Potrf = void (*)(const char*, const int*, double*, const int*, int*);
  using Potri = void (*)(const char*, const int*, double*, const int*, int*);
  using Syrk = void (*)(const char*, const char*, const int*, const int*, const double*, const double*,
                        const int*, const double*, double*, const int*);
  using Gemm = void (*)(const char*, const char*, const int*, const int*, const int*, const double*,
                        const double*, const int*, const double*, const int*, const double*, double*,
                        const int*);
  using SetThreads = void (*)(int);
  Potrf potrf = nullptr;
  Potri potri = nullptr;
  Syrk syrk = nullptr;
  Gemm gemm = nullptr;
  SetThreads set_threads = nullptr;
  bool open() {
    void* h = dlopen(kOpenBlasPath, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!h) return false;
    potrf = reinterpret_cast<Potrf>(dlsym(h, "dpotrf_"));
    potri = reinterpret_cast<Potri>(dlsym(h, "dpotri_"));
    syrk = reinterpret_cast<Syrk>(dlsym(h, "dsyrk_"));
    gemm = reinterpret_cast<Gemm>(dlsym(h, "dgemm_"));
    set_threads = reinterpret_cast<SetThreads>(dlsym(h, "openblas_set_num_threads"));
    return potrf && potri && syrk && gemm && set_threads;
  }
};

double seconds(const std::function<void()>& fn) {
  const auto t0 = Clock::now();
  fn();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

MatrixXd spd(int n) {
  const MatrixXd A = MatrixXd::Random(n, n);
  MatrixXd S = A * A.transpose() / n;
  S.diagonal().array() += 1.0;
  return S;
}

struct Timing {
  std::vector<double> t;
  double best() const { return *std::min_element(t.begin(), t.end()); }
  double median() const {
    std::vector<double> s = t;
    std::sort(s.begin(), s.end());
    return s[s.size() / 2];
  }
};

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 5;
  std::vector<int> thread_counts = {1, 2};
  if (argc > 2) {
    thread_counts.clear();
    for (const char* p = argv[2]; *p;) {
      thread_counts.push_back(std::atoi(p));
      while (*p && *p != ',') ++p;
      if (*p == ',') ++p;
    }
  }
  std::vector<int> sizes;
  for (int i = 3; i < argc; ++i) sizes.push_back(std::atoi(argv[i]));
  if (sizes.empty()) sizes = {200, 1000, 3000};
  OpenBlas ob;
  const bool have_ob = ob.open();
  if (!have_ob) std::printf("OpenBLAS not found at %s: Eigen only\n", kOpenBlasPath);

  std::printf("%-9s %5s %3s  %-8s %12s %12s %10s\n", "op", "n", "thr", "impl", "best s", "median s",
              "GFLOP/s");
  for (const int n : sizes) {
    const MatrixXd A = spd(n);
    const MatrixXd K = MatrixXd::Random(n, kSyrkDepth), G = MatrixXd::Random(n, n);
    const double nd = n;
    struct Op {
      const char* name;
      double flops;
      std::function<double()> eigen, openblas;
    };
    MatrixXd W;
    int info = 0;
    const char lo = 'L', no = 'N';
    const double one = 1.0, zero = 0.0;
    const int k = kSyrkDepth;
    std::vector<Op> ops = {
        {"cholesky", nd * nd * nd / 3.0,
         [&] {
           W = A;
           return seconds([&] { Eigen::internal::llt_inplace<double, Eigen::Lower>::blocked(W); });
         },
         [&] {
           W = A;
           return seconds([&] { ob.potrf(&lo, &n, W.data(), &n, &info); });
         }},
        // the postfit covariance's inverse (minimize/spd_inverse.hpp) against potrf + potri
        {"inverse", nd * nd * nd, [&] { return seconds([&] { rabbit::spd_inverse(A, W); }); },
         [&] {
           W = A;
           return seconds([&] {
             ob.potrf(&lo, &n, W.data(), &n, &info);
             ob.potri(&lo, &n, W.data(), &n, &info);
             W.triangularView<Eigen::StrictlyUpper>() = W.transpose();
           });
         }},
        {"syrk256", nd * (nd + 1) * k,
         [&] {
           W.setZero(n, n);
           return seconds([&] { W.selfadjointView<Eigen::Lower>().rankUpdate(K, 1.0); });
         },
         [&] {
           W.setZero(n, n);
           return seconds([&] { ob.syrk(&lo, &no, &n, &k, &one, K.data(), &n, &one, W.data(), &n); });
         }},
        {"dgemm", 2.0 * nd * nd * nd,
         [&] {
           W.setZero(n, n);
           return seconds([&] { W.noalias() += G * G.transpose(); });
         },
         [&] {
           W.setZero(n, n);
           const char tr = 'T';
           return seconds(
               [&] { ob.gemm(&no, &tr, &n, &n, &n, &one, G.data(), &n, G.data(), &n, &zero, W.data(), &n); });
         }},
    };
    for (const int threads : thread_counts) {
      Eigen::setNbThreads(threads);
      if (have_ob) ob.set_threads(threads);
      for (const Op& op : ops) {
        Timing te, to;
        for (int r = 0; r < reps; ++r) {
          te.t.push_back(op.eigen());
          if (have_ob) to.t.push_back(op.openblas());
        }
        std::printf("%-9s %5d %3d  %-8s %12.5f %12.5f %10.2f\n", op.name, n, threads, "eigen", te.best(),
                    te.median(), op.flops / te.best() / 1e9);
        if (have_ob)
          std::printf("%-9s %5d %3d  %-8s %12.5f %12.5f %10.2f\n", op.name, n, threads, "openblas", to.best(),
                      to.median(), op.flops / to.best() / 1e9);
        if (info != 0) std::printf("OpenBLAS info %d\n", info);
      }
    }
  }
  return 0;
}
