// The per-bin math of the CUDA backend (bin_math.hpp) runs on the host too, so it is checked here
// without a GPU: φ must be the derivative of the profiled bin value with respect to the process
// yields N, and the U M Uᵀ + diag(d) form must be the derivative of φ (the Schur-complement Ψ),
// for every data likelihood × BB mode × BB type.
#include "rabbit/backend/cuda/bin_math.hpp"

#include <gtest/gtest.h>

#include <array>
#include <random>
#include <vector>

#include "support/finite_differences.hpp"

namespace rabbit::bin_math {
namespace {

constexpr int P = 3;

// The cases as the test names them: data likelihood, BB off / lite / full, and the BB type.
enum CaseLikelihood : int { kPoisson = 0, kChisq = 1 };
enum CaseMode : int { kNoBB = 0, kLite = 1, kFull = 2 };
enum CaseType : int { kGamma = 0, kNormalMult = 1, kNormalAdd = 2 };

struct Case {
  int likelihood, bb, type;
  bool zero_var;  // lite: process 2 has no MC-stat uncertainty
  double n;
};

struct Fixture {
  Case c;
  std::array<double, P> k{}, beta0{}, sigma2{};
  std::array<unsigned char, P> masked{}, zero_var{};
  double v = 0;

  explicit Fixture(const Case& cs) : c(cs) {
    const double b0 = c.type == kNormalAdd ? 0.0 : 1.0;
    for (int p = 0; p < P; ++p) {
      k[p] = 40.0 + 15.0 * p;
      beta0[p] = b0;
      sigma2[p] = 0.8 + 0.3 * p;
      masked[p] = 0;
      zero_var[p] = (c.zero_var && p == 2) ? 1 : 0;
    }
    v = 1.3 * std::max(c.n, 1.0);
  }

  BinStats stats() const {
    BinStats st;
    st.kstat = k.data();
    st.beta0 = beta0.data();
    st.masked = masked.data();
    st.sigma2 = sigma2.data();
    st.zero_var = zero_var.data();
    return st;
  }
  BinConfig config() const {
    BinConfig cfg;
    cfg.likelihood = c.likelihood == kChisq ? DataLikelihood::chisq : DataLikelihood::poisson;
    cfg.bb = c.bb == kNoBB           ? BBKind::none
             : c.type == kGamma      ? BBKind::gamma
             : c.type == kNormalMult ? BBKind::normal_multiplicative
                                     : BBKind::normal_additive;
    cfg.mode = c.bb == kFull ? BBMode::full : BBMode::lite;
    cfg.nproc = P;
    return cfg;
  }
  // Lite stats live in element 0 (one value per bin).
  double eval(const std::array<double, P>& N, std::array<double, P>* phi = nullptr,
              std::array<double, P>* u1 = nullptr, std::array<double, P>* u2 = nullptr,
              std::array<double, P>* d = nullptr, BinResult* res = nullptr) const {
    std::array<double, P> beta{}, ph{}, a{}, b{}, dd{};
    BinResult r;
    const double lognobs = c.n > 0 ? std::log(c.n) : 0.0;
    profile_bin(config(), c.n, v, lognobs, N.data(), stats(), beta.data(), ph.data(), a.data(), b.data(),
                dd.data(), r);
    if (phi) *phi = ph;
    if (u1) *u1 = a;
    if (u2) *u2 = b;
    if (d) *d = dd;
    if (res) *res = r;
    return r.value;
  }
};

class BinMathTest : public ::testing::TestWithParam<Case> {};

void check_phi_and_psi(const Fixture& fx, const std::array<double, P>& N = {4.0, 2.5, 1.5}) {
  std::array<double, P> phi, u1, u2, d;
  BinResult r;
  const double f0 = fx.eval(N, &phi, &u1, &u2, &d, &r);
  ASSERT_TRUE(std::isfinite(f0));

  const double h = 1e-5;
  auto to_array = [](const Eigen::VectorXd& x) {
    std::array<double, P> a;
    for (int p = 0; p < P; ++p) a[p] = x[p];
    return a;
  };
  const Eigen::VectorXd Nv = Eigen::Map<const Eigen::VectorXd>(N.data(), P);
  const Eigen::VectorXd fd_phi =
      test::central_gradient([&](const Eigen::VectorXd& x) { return fx.eval(to_array(x)); }, Nv, h);
  for (int p = 0; p < P; ++p) {
    const double fd = fd_phi[p];
    EXPECT_NEAR(phi[p], fd, 1e-6 * std::max(1.0, std::abs(fd))) << "phi, process " << p;
  }

  const std::array<double, P> dir = {0.7, -0.4, 0.9};
  double s1 = 0, s2 = 0;
  for (int p = 0; p < P; ++p) {
    s1 += u1[p] * dir[p];
    s2 += u2[p] * dir[p];
  }
  const Eigen::VectorXd fd_psi = test::central_directional(
      [&](const Eigen::VectorXd& x) {
        std::array<double, P> ph;
        fx.eval(to_array(x), &ph);
        return Eigen::VectorXd(Eigen::Map<const Eigen::VectorXd>(ph.data(), P));
      },
      Nv, Eigen::Map<const Eigen::VectorXd>(dir.data(), P), h);
  for (int p = 0; p < P; ++p) {
    const double z = u1[p] * (r.m11 * s1 + r.m12 * s2) + u2[p] * (r.m12 * s1 + r.m22 * s2) + d[p] * dir[p];
    const double fd = fd_psi[p];
    EXPECT_NEAR(z, fd, 1e-6 * std::max(1.0, std::abs(fd))) << "Psi row " << p;
  }
}

TEST_P(BinMathTest, PhiAndPsiAreDerivativesOfTheProfiledValue) {
  check_phi_and_psi(Fixture(GetParam()));
}

std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (int lk : {kPoisson, kChisq})
    for (int type : {kGamma, kNormalMult, kNormalAdd}) {
      out.push_back({lk, kNoBB, type, false, 9.0});
      if (type == kGamma) out.push_back({lk, kNoBB, type, false, 0.0});
      for (bool zv : {false, true}) {
        out.push_back({lk, kLite, type, zv, 9.0});
        out.push_back({lk, kLite, type, zv, 5.0});
      }
      out.push_back({lk, kFull, type, false, 9.0});
      out.push_back({lk, kFull, type, false, 6.0});
    }
  // Empty bins where every closed form stays regular.
  out.push_back({kPoisson, kLite, kGamma, false, 0.0});
  out.push_back({kPoisson, kFull, kGamma, false, 0.0});
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllModes, BinMathTest, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           const Case& c = info.param;
                           const char* lk = c.likelihood == kPoisson ? "poisson" : "chisq";
                           const char* bb = c.bb == kNoBB ? "nobb" : (c.bb == kLite ? "lite" : "full");
                           const char* ty =
                               c.type == kGamma ? "gamma" : (c.type == kNormalMult ? "nmult" : "nadd");
                           return std::string(lk) + "_" + bb + "_" + ty + (c.zero_var ? "_zerovar" : "") +
                                  "_n" + std::to_string(static_cast<int>(c.n)) + "_" +
                                  std::to_string(info.index);
                         });

TEST(BinMath, QuadRootIsThePlusRoot) {
  // x² − 3x + 2 = 0 → roots 1, 2.
  EXPECT_DOUBLE_EQ(likelihood::plus_root(1.0, -3.0, 2.0), 2.0);
}

// ρ of the full normal-multiplicative closed form with S = 4 and b = S − Tu (no masked entries).
double full_rho(double n, double b) {
  double rho = 0.0;
  likelihood::full_multiplicative_bin_objective(4.0, 4.0 - b, 0.0, 0.0, BinObservation{n, 1.0, 0.0},
                                                DataLikelihood::poisson, &rho, static_cast<double*>(nullptr));
  return rho;
}

TEST(BinMath, PoissonFullEmptyBinHasAFiniteLimit) {
  // n → 0⁺ of n / Q(1, b, −nS) is b/S for b > 0 and 0 for b < 0 (rabbit: 0/0 = NaN at n = 0), so
  // ρ = n/ν̂ − 1 tends to b/S − 1 resp. −1.
  EXPECT_NEAR(full_rho(0.0, 2.0), full_rho(1e-7, 2.0), 1e-6);
  EXPECT_NEAR(full_rho(0.0, -2.0), full_rho(1e-7, -2.0), 1e-6);
  EXPECT_DOUBLE_EQ(full_rho(0.0, 2.0), -0.5);
}

// Lite, Poisson, n = 0: rabbit's quadratic factors into an interior root (β̂ stationary, ν > 0) and
// the root with ν = 0; its "+" root is the larger. On either one φ and Ψ are the derivatives of the
// profiled value (on the ν = 0 root those of the closed form, not the envelope/Schur forms) and β̂
// is rabbit's root. Edge side: nadd σ² = 30 > ν⁰; nmult k = 4 < A; gamma (zero-variance process
// with a negative yield, Z < 0) k = 4, β⁰ = 0.1.
TEST(BinMath, LitePoissonEmptyBinOnEitherRoot) {
  for (int type : {kGamma, kNormalMult, kNormalAdd})
    for (bool zv : {false, true})
      for (bool edge : {false, true}) {
        if (type == kGamma && edge && !zv) continue;  // needs Z < 0
        SCOPED_TRACE(::testing::Message() << "type " << type << " zero_var " << zv << " edge " << edge);
        Fixture fx({kPoisson, kLite, type, zv, 0.0});
        std::array<double, P> N = {4.0, 2.5, 1.5};
        if (edge) {
          fx.sigma2[0] = 30.0;
          fx.k[0] = 4.0;
          if (type == kGamma) {
            N[2] = -1.5;
            fx.beta0[0] = 0.1;
          }
        }
        check_phi_and_psi(fx, N);
        std::array<double, P> beta{}, phi{}, u1{}, u2{}, d{};
        BinResult r;
        profile_bin(fx.config(), 0.0, fx.v, 0.0, N.data(), fx.stats(), beta.data(), phi.data(), u1.data(),
                    u2.data(), d.data(), r);
        const double A = N[0] + N[1] + (zv ? 0.0 : N[2]), Z = zv ? N[2] : 0.0, k = fx.k[0], b0 = fx.beta0[0];
        const double s = std::sqrt(fx.sigma2[0]);
        using likelihood::plus_root;
        const double rabbit =
            type == kNormalAdd    ? plus_root(s, s * s + A + Z - s * b0, s * (A + Z) - (A + Z) * b0)
            : type == kNormalMult ? plus_root(k * A, A * A - k * b0 * A + k * Z, A * Z - k * b0 * Z)
                                  : plus_root(A * (A + k), A * (Z - b0 * k) + k * Z, -b0 * k * Z);
        EXPECT_NEAR(beta[0], rabbit, 1e-12 * std::max(1.0, std::abs(rabbit)));
        if (edge)
          EXPECT_NEAR(r.nu, 0.0, 1e-12);
        else
          EXPECT_GT(r.nu, 0.0);
      }
}

// At the double root (nadd σ² = ν⁰ = 8, β⁰ = 0; nmult k = A = 8, β⁰ = 1; gamma β⁰ = 0, Z = 0)
// rabbit's √(b² − 4ac) is √(< 0) by rounding or √0 (NaN derivative); the factored roots give
// β̂ = −s resp. 0, ν = 0, F = 4 (gamma: F = kβ̂ = 0, with Ψ = 0 instead of the Schur form's 1/0).
TEST(BinMath, LitePoissonEmptyBinAtTheDoubleRoot) {
  for (int type : {kNormalMult, kNormalAdd, kGamma}) {
    SCOPED_TRACE(type);
    Fixture fx({kPoisson, kLite, type, false, 0.0});
    fx.sigma2[0] = 8.0;
    fx.k[0] = 8.0;
    if (type == kGamma) fx.beta0[0] = 0.0;
    const std::array<double, P> N = {4.0, 2.5, 1.5};
    std::array<double, P> beta{}, phi{}, u1{}, u2{}, d{};
    BinResult r;
    profile_bin(fx.config(), 0.0, fx.v, 0.0, N.data(), fx.stats(), beta.data(), phi.data(), u1.data(),
                u2.data(), d.data(), r);
    EXPECT_NEAR(beta[0], type == kNormalAdd ? -std::sqrt(8.0) : 0.0, 1e-12);
    EXPECT_NEAR(r.nu, 0.0, 1e-12);
    EXPECT_NEAR(r.value, type == kGamma ? 0.0 : 4.0, 1e-12);
    for (int p = 0; p < P; ++p) EXPECT_NEAR(phi[p], type == kNormalAdd ? 1.0 : 0.0, 1e-12) << p;
    EXPECT_TRUE(std::isfinite(r.m11) && std::isfinite(r.m12) && std::isfinite(r.m22));
    if (type == kGamma) {
      EXPECT_EQ(r.m11, 0.0);
    }
  }
}

TEST(BinMath, MaskedLiteBinKeepsBeta0) {
  Fixture fx({kPoisson, kLite, kGamma, false, 7.0});
  fx.masked[0] = 1;
  std::array<double, P> beta{}, phi{}, u1{}, u2{}, d{};
  BinResult r;
  const std::array<double, P> N = {4.0, 2.5, 1.5};
  profile_bin(fx.config(), 7.0, fx.v, std::log(7.0), N.data(), fx.stats(), beta.data(), phi.data(), u1.data(),
              u2.data(), d.data(), r);
  EXPECT_EQ(beta[0], 1.0);
  EXPECT_NEAR(r.nu, 8.0, 1e-15);
  EXPECT_NEAR(r.value, -7.0 * (std::log(8.0) - std::log(7.0)) + 1.0, 1e-14);
}

}  // namespace
}  // namespace rabbit::bin_math
