// Native minimizer cost on a synthetic objective (no likelihood):
//   f(x) = ½xᵀAx + bᵀx + ε Σ x_i⁴,  A = GGᵀ/m + diag(logspace(−2, 2)),
// HVP O(n²), direct dense Hessian. Reports time per outer iteration and Cholesky factorisations
// per subproblem solve (trust-exact), HVPs per solve (trust-krylov, trust-ncg), and the raw
// Cholesky time of the two DenseLinalg implementations.
//
// usage: minimizer_bench [n ...]   (default: 2000 5000)
#include <Eigen/Dense>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "rabbit/core/logging.hpp"
#include "rabbit/minimize/dense_linalg.hpp"
#include "rabbit/minimize/minimizer.hpp"

namespace {

class SyntheticObjective : public rabbit::Objective {
 public:
  explicit SyntheticObjective(int64_t n) : n_(n) {
    std::mt19937 rng(42);
    std::normal_distribution<double> normal;
    const int64_t m = n / 2;
    Eigen::MatrixXd G(n, m);
    for (int64_t i = 0; i < n * m; ++i) G.data()[i] = normal(rng);
    A_ = G * G.transpose() / static_cast<double>(m);
    for (int64_t i = 0; i < n; ++i) A_(i, i) += std::pow(10.0, -2.0 + 4.0 * i / (n - 1));
    b_.resize(n);
    for (int64_t i = 0; i < n; ++i) b_[i] = normal(rng);
  }
  int64_t size() const override { return n_; }
  double value(const Eigen::VectorXd& x) override {
    return 0.5 * x.dot(A_ * x) + b_.dot(x) + eps_ * x.array().pow(4).sum();
  }
  double value_grad(const Eigen::VectorXd& x, Eigen::VectorXd& g) override {
    const Eigen::VectorXd Ax = A_ * x;
    g = Ax + b_ + (4 * eps_ * x.array().cube()).matrix();
    return 0.5 * x.dot(Ax) + b_.dot(x) + eps_ * x.array().pow(4).sum();
  }
  double value_grad_hvp(const Eigen::VectorXd& x, const Eigen::MatrixXd& V, Eigen::VectorXd& g,
                        Eigen::MatrixXd& HV) override {
    const double f = value_grad(x, g);
    hvp(x, V, HV);
    return f;
  }
  void hvp(const Eigen::VectorXd& x, const Eigen::MatrixXd& V, Eigen::MatrixXd& HV) override {
    HV = A_ * V;
    HV += (12 * eps_ * x.array().square()).matrix().asDiagonal() * V;
  }
  double value_grad_hess(const Eigen::VectorXd& x, Eigen::VectorXd& g, Eigen::MatrixXd& H) override {
    const double f = value_grad(x, g);
    H = A_;
    H.diagonal() += (12 * eps_ * x.array().square()).matrix();
    return f;
  }

 private:
  int64_t n_;
  double eps_ = 0.01;
  Eigen::MatrixXd A_;
  Eigen::VectorXd b_;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  rabbit::set_verbosity(2);
  std::vector<int64_t> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::atoll(argv[i]));
  if (sizes.empty()) sizes = {2000, 5000};
  Eigen::setNbThreads(1);
  std::printf("Eigen threads: %d\n", Eigen::nbThreads());
  for (int64_t n : sizes) {
    auto t0 = std::chrono::steady_clock::now();
    SyntheticObjective objective(n);
    std::printf("\nn = %lld (setup %.1f s)\n", static_cast<long long>(n), seconds_since(t0));

    Eigen::VectorXd g;
    Eigen::MatrixXd H, L;
    objective.value_grad_hess(Eigen::VectorXd::Zero(n), g, H);
    for (const auto& [name, la] :
         {std::pair<const char*, const rabbit::DenseLinalg*>{"Eigen", new rabbit::EigenLinalg},
          {"LAPACK dpotrf", new rabbit::LapackLinalg}}) {
      t0 = std::chrono::steady_clock::now();
      const int64_t info = la->cholesky(H, L);
      std::printf("  cholesky (%s): %.3f s (info %lld)\n", name, seconds_since(t0),
                  static_cast<long long>(info));
      delete la;
    }

    for (const char* method : {"trust-exact", "trust-krylov", "trust-ncg"}) {
      rabbit::MinimizerOptions options;
      options.method = method;
      // trust-exact is O(n³) per factorisation: a fixed number of outer iterations is enough to
      // time one; the Krylov methods run to convergence.
      if (std::string(method) == "trust-exact") options.maxiter = n >= 4000 ? 4 : 12;
      t0 = std::chrono::steady_clock::now();
      const rabbit::MinimizerResult r = rabbit::minimize(objective, Eigen::VectorXd::Zero(n), options);
      const double wall = seconds_since(t0);
      std::printf("  %-12s status %d, %lld iterations, f = %.10g, |g| = %.2e: %.3f s per outer iteration",
                  method, r.status, static_cast<long long>(r.iterations), r.f, r.grad.norm(),
                  wall / std::max<int64_t>(1, r.iterations));
      if (r.factorizations > 0)
        std::printf(", %.2f factorizations per solve",
                    static_cast<double>(r.factorizations) / r.subproblem_solves);
      // trust-exact's "HVPs" are the dense products of its Lanczos start (both runs).
      if (r.nhvp > 0)
        std::printf(r.factorizations > 0 ? ", %.1f Lanczos products per solve" : ", %.1f HVPs per solve",
                    static_cast<double>(r.nhvp) / r.subproblem_solves);
      std::printf(" (%lld solves, %lld dense Hessians)\n", static_cast<long long>(r.subproblem_solves),
                  static_cast<long long>(r.nhess));
    }
  }
  return 0;
}
