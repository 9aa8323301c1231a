// The shared per-bin formulation (include/rabbit/likelihood) against the bits of the CPU backend's
// code before it was shared (docs/architecture.md "The per-bin likelihood"): the expected values
// below were recorded with the CPU shard's own interpolation, data-term derivatives and gamma + full
// Newton loop and with bin_profile.hpp as it was, on the same inputs; the shared code must reproduce
// them exactly (the rule that CPU results stay bit-identical). And the CUDA backend's adapter
// (bin_math.hpp), compiled for the host, gives the same bits as the CPU's hyper-dual evaluation of
// the lite and full normal-additive closed forms.
//
// The recording: this file's input loops run against the headers and the CPU shard's own
// interpolation / data_first / data_second / gamma + full Newton lambda of commit 6780d5c
// (include/rabbit/backend/cpu/bin_profile.hpp, src/backend/cpu/cpu_shard.cpp), printed with %a.
//
// Bits depend on the expressions and on whether the compiler fuses a·b + c into one FMA, which
// -march=native allows and decides per context; the recording and this file are compiled without
// contraction, so that the comparison is one of the expressions' operation order.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "rabbit/backend/cuda/bin_math.hpp"
#include "rabbit/likelihood/bin_profile.hpp"
#include "rabbit/likelihood/dyn_hyper_dual.hpp"
#include "rabbit/likelihood/gamma_full.hpp"
#include "rabbit/likelihood/interpolation.hpp"

namespace rabbit {
namespace {

namespace LK = rabbit::likelihood;

// Appends every output of the shared formulation on fixed inputs to `out`, in a fixed order.
inline void append_closed_forms(std::vector<double>& out) {
  using LK::BBKind;
  using LK::BinObservation;
  const DataLikelihood liks[] = {DataLikelihood::poisson, DataLikelihood::chisq};
  const BBKind kinds[] = {BBKind::none, BBKind::gamma, BBKind::normal_multiplicative, BBKind::normal_additive};
  const double counts[] = {0.0, 3.0, 11.0};
  for (DataLikelihood lik : liks)
    for (double n : counts) {
      const BinObservation o{n, n > 0 ? 1.3 * n : 1.0, n > 0 ? std::log(n) : 0.0};
      if (lik == DataLikelihood::chisq && n == 0.0) continue;
      for (BBKind kind : kinds)
        for (bool masked : {false, true})
          for (bool fixed : {false, true}) {
            using HD = LK::HyperDual<2>;
            LK::LiteEntry e;
            e.k = 7.5;
            e.beta0 = kind == BBKind::normal_additive ? 0.0 : 1.1;
            e.log_beta0 = e.beta0 > 0 ? std::log(e.beta0) : 0.0;
            e.sigma2 = 2.25;
            e.s = 1.5;
            e.masked = masked;
            HD beta, nu;
            const HD F = LK::lite_bin_objective(HD::variable(6.2, 0), HD::variable(1.7, 1), o, lik, kind, e, false,
                                                fixed, &beta, &nu);
            out.insert(out.end(), {F.v, F.g[0], F.g[1], F.h[0][0], F.h[0][1], F.h[1][1], beta.v, nu.v});
            double bd, nd;
            out.push_back(LK::lite_bin_objective(6.2, 1.7, o, lik, kind, e, true, fixed, &bd, &nd));
            out.insert(out.end(), {bd, nd});
          }
      {
        using HD = LK::HyperDual<4>;
        HD rho, nu;
        const HD F = LK::full_multiplicative_bin_objective(HD::variable(5.0, 0), HD::variable(4.1, 1),
                                                           HD::variable(0.6, 2), HD::variable(0.5, 3), o, lik, &rho, &nu);
        out.insert(out.end(), {F.v, rho.v, nu.v});
        for (int i = 0; i < 4; ++i) {
          out.push_back(F.g[i]);
          for (int j = 0; j < 4; ++j) out.push_back(F.h[i][j]);
        }
      }
      for (bool fixed : {false, true}) {
        using HD = LK::HyperDual<1>;
        HD rho, nu;
        const HD F = LK::full_additive_bin_objective(HD::variable(7.3, 0), 2.9, 0.4, o, lik, fixed, &rho, &nu);
        out.insert(out.end(), {F.v, F.g[0], F.h[0][0], rho.v, nu.v});
      }
      for (double nu : {0.5, 4.0, 12.5}) out.push_back(LK::data_term(nu, o, lik));
    }
}

// The interpolation at both regions and the border, then ℓ', ℓ'' for both likelihoods.
void append_interpolation_and_data(std::vector<double>& out) {
  for (double th : {-0.7, -0.3, 0.0, 0.2, 0.45, 0.5, 1.3}) {
    double h, hp, hpp;
    LK::interpolation(th, h, hp, hpp);
    out.insert(out.end(), {h, hp, hpp});
  }
  for (DataLikelihood lik : {DataLikelihood::poisson, DataLikelihood::chisq})
    for (double n : {0.0, 3.0, 11.0}) {
      const LK::BinObservation o{n, n > 0 ? 1.3 * n : 1.0, n > 0 ? std::log(n) : 0.0};
      for (double nu : {0.37, 4.3, 12.9})
        out.insert(out.end(), {LK::data_first(nu, o, lik), LK::data_second(nu, o, lik)});
    }
}

// gamma + full, three entries (the third masked with β⁰ = 1.3 or free): the Newton point u0, β̂,
// F'(X) and F''(X) at X = X_thr + e^0.3, and rabbit's composite at u0 (value, gradient, Hessian).
void append_gamma_full(std::vector<double>& out, std::vector<double>& composite) {
  for (DataLikelihood lik : {DataLikelihood::poisson, DataLikelihood::chisq})
    for (double n : {0.0, 3.0, 9.0})
      for (int masked : {0, 1}) {
        if (lik == DataLikelihood::chisq && n == 0.0) continue;
        const LK::BinObservation o{n, n > 0 ? 1.3 * n : 1.0, n > 0 ? std::log(n) : 0.0};
        const double N[3] = {4.0, 2.5, 0.7}, k[3] = {30.0, 12.0, 5.0}, b0[3] = {1.0, 0.8, masked ? 1.3 : 1.1};
        LK::GammaFullEntry e[3];
        for (int a = 0; a < 3; ++a) e[a] = {k[a], b0[a], std::log(b0[a]), a == 2 && masked};
        const LK::GammaFullEntries<double> bin{N, e, 3};
        const LK::GammaFullSolution s = LK::gamma_full_solve(bin, o, lik);
        out.push_back(s.u0);
        for (int a = 0; a < 3; ++a)
          out.push_back(e[a].masked ? b0[a]
                                    : LK::gamma_full_beta(s.X, N[a], k[a], b0[a], o, lik == DataLikelihood::chisq));
        double Xthr = 0.0, F1 = 0.0, F2 = 0.0;  // F', F'' away from the solution: every rounding shows
        LK::gamma_full_threshold(bin, o, lik == DataLikelihood::chisq, Xthr);
        LK::gamma_full_derivatives(bin, o, lik, Xthr + std::exp(0.3), F1, F2);
        out.insert(out.end(), {F1, F2});
        std::vector<LK::DynHyperDual> Nd;
        for (int a = 0; a < 3; ++a) Nd.push_back(LK::DynHyperDual::variable(N[a], a, 3));
        const LK::DynHyperDual F = LK::gamma_full_bin_composite(Nd.data(), e, 3, o, lik, s.u0);
        composite.push_back(F.v);
        for (int a = 0; a < 3; ++a) {
          composite.push_back(F.g[a]);
          for (int c = 0; c < 3; ++c) composite.push_back(F.h(a, c));
        }
      }
}

// Recorded from the CPU code before the formulation was shared (see the file comment), with
// -ffp-contract=off.
const std::vector<double> kRecorded = {
    0x1.f99999999999ap+2, 0x1p+0, 0x1p+0, 0x0p+0,
    0x0p+0, 0x0p+0, 0x1p+0, 0x1.f99999999999ap+2,
    0x1.f99999999999ap+2, 0x1p+0, 0x1.f99999999999ap+2, 0x1.f99999999999ap+2,
    0x1p+0, 0x1p+0, 0x0p+0, 0x0p+0,
    0x0p+0, 0x1p+0, 0x1.f99999999999ap+2, 0x1.f99999999999ap+2,
    0x1p+0, 0x1.f99999999999ap+2, 0x1.f99999999999ap+2, 0x1p+0,
    0x1p+0, 0x0p+0, 0x0p+0, 0x0p+0,
    0x1p+0, 0x1.f99999999999ap+2, 0x1.f99999999999ap+2, 0x1p+0,
    0x1.f99999999999ap+2, 0x1.f99999999999ap+2, 0x1p+0, 0x1p+0,
    0x0p+0, 0x0p+0, 0x0p+0, 0x1p+0,
    0x1.f99999999999ap+2, 0x1.f99999999999ap+2, 0x1p+0, 0x1.f99999999999ap+2,
    0x1.aaea8c675752p+2, 0x1.3452380ef2eb8p-1, 0x1p+0, -0x1.6815471353c2bp-5,
    0x0p+0, 0x0p+0, 0x1.3452380ef2eb8p-1, 0x1.5bbfb83ec9102p+2,
    0x1.aaea8c675752p+2, 0x1.3452380ef2eb7p-1, 0x1.5bbfb83ec9101p+2, 0x1.aaea8c675752p+2,
    0x1.3452380ef2eb8p-1, 0x1p+0, 0x0p+0, 0x0p+0,
    0x0p+0, 0x1.3452380ef2eb8p-1, 0x1.5bbfb83ec9102p+2, 0x1.aaea8c675752p+2,
    0x1.3452380ef2eb7p-1, 0x1.5bbfb83ec9101p+2, 0x1.f99999999999ap+2, 0x1p+0,
    0x1p+0, 0x0p+0, 0x0p+0, 0x0p+0,
    0x1.199999999999ap+0, 0x1.f99999999999ap+2, 0x1.f99999999999ap+2, 0x1.199999999999ap+0,
    0x1.f99999999999ap+2, 0x1.f99999999999ap+2, 0x1p+0, 0x1p+0,
    0x0p+0, 0x0p+0, 0x0p+0, 0x1.199999999999ap+0,
    0x1.f99999999999ap+2, 0x1.f99999999999ap+2, 0x1.199999999999ap+0, 0x1.f99999999999ap+2,
    0x1.7d44f3078263bp+2, 0x1.17e4b17e4b18p-2, 0x1p+0, -0x1.1111111111111p-3,
    0x0p+0, 0x0p+0, 0x1.17e4b17e4b18p-2, 0x1.b2846ff513cc3p+1,
    0x1.7d44f3078263bp+2, 0x1.17e4b17e4b18p-2, 0x1.b2846ff513cc3p+1, 0x1.7d44f3078263bp+2,
    0x1.17e4b17e4b18p-2, 0x1p+0, 0x0p+0, 0x0p+0,
    0x0p+0, 0x1.17e4b17e4b18p-2, 0x1.b2846ff513cc3p+1, 0x1.7d44f3078263bp+2,
    0x1.17e4b17e4b18p-2, 0x1.b2846ff513cc3p+1, 0x1.f99999999999ap+2, 0x1p+0,
    0x1p+0, 0x0p+0, 0x0p+0, 0x0p+0,
    0x1.199999999999ap+0, 0x1.f99999999999ap+2, 0x1.f99999999999ap+2, 0x1.199999999999ap+0,
    0x1.f99999999999ap+2, 0x1.f99999999999ap+2, 0x1p+0, 0x1p+0,
    0x0p+0, 0x0p+0, 0x0p+0, 0x1.199999999999ap+0,
    0x1.f99999999999ap+2, 0x1.f99999999999ap+2, 0x1.199999999999ap+0, 0x1.f99999999999ap+2,
    0x1.b19999999999ap+2, 0x1p+0, 0x1p+0, 0x0p+0,
    0x0p+0, 0x0p+0, -0x1.8p+0, 0x1.699999999999ap+2,
    0x1.b19999999999ap+2, -0x1.8p+0, 0x1.699999999999ap+2, 0x1.b19999999999ap+2,
    0x1p+0, 0x1p+0, 0x0p+0, 0x0p+0,
    0x0p+0, -0x1.8p+0, 0x1.699999999999ap+2, 0x1.b19999999999ap+2,
    -0x1.8p+0, 0x1.699999999999ap+2, 0x1.b19999999999ap+2, 0x1p+0,
    0x1p+0, 0x0p+0, 0x0p+0, 0x0p+0,
    -0x1.8p+0, 0x1.699999999999ap+2, 0x1.b19999999999ap+2, -0x1.8p+0,
    0x1.699999999999ap+2, 0x1.b19999999999ap+2, 0x1p+0, 0x1p+0,
    0x0p+0, 0x0p+0, 0x0p+0, -0x1.8p+0,
    0x1.699999999999ap+2, 0x1.b19999999999ap+2, -0x1.8p+0, 0x1.699999999999ap+2,
    0x1.0df3b645a1cabp+1, -0x1.e147ae147ae13p-1, -0x1.999999999998p-4, -0x1.c467381d7dbf2p-2,
    0x1.69ec2ce46498ep-3, -0x1.810624dd2f1a8p-3, -0x1.810624dd2f1a8p-3, 0x0p+0,
    0x1.e147ae147ae13p-1, -0x1.810624dd2f1a8p-3, 0x1.999999999999bp-3, 0x1.999999999999bp-3,
    0x0p+0, -0x1.eb851eb851edp-5, -0x1.810624dd2f1a8p-3, 0x1.999999999999bp-3,
    0x1.999999999999bp-3, 0x0p+0, 0x1p+0, 0x0p+0,
    0x0p+0, 0x0p+0, 0x0p+0, 0x1.9000000000001p+2,
    0x1p+0, 0x0p+0, -0x1p+0, 0x1.3333333333334p+2,
    0x1.9000000000001p+2, 0x1p+0, 0x0p+0, -0x1p+0,
    0x1.3333333333334p+2, 0x1p-1, 0x1p+2, 0x1.9p+3,
    0x1.fec89c8711ca4p+0, 0x1.3d91d2a2067b2p-1, 0x1.3d91d2a2067b2p-1, 0x1.89c875ce87efep-5,
    0x1.89c875ce87efep-5, 0x1.89c875ce87efep-5, 0x1p+0, 0x1.f99999999999ap+2,
    0x1.fec89c8711ca4p+0, 0x1p+0, 0x1.f99999999999ap+2, 0x1.fec89c8711ca4p+0,
    0x1.3d91d2a2067b2p-1, 0x1.3d91d2a2067b2p-1, 0x1.89c875ce87efep-5, 0x1.89c875ce87efep-5,
    0x1.89c875ce87efep-5, 0x1p+0, 0x1.f99999999999ap+2, 0x1.fec89c8711ca4p+0,
    0x1p+0, 0x1.f99999999999ap+2, 0x1.fec89c8711ca4p+0, 0x1.3d91d2a2067b2p-1,
    0x1.3d91d2a2067b2p-1, 0x1.89c875ce87efep-5, 0x1.89c875ce87efep-5, 0x1.89c875ce87efep-5,
    0x1p+0, 0x1.f99999999999ap+2, 0x1.fec89c8711ca4p+0, 0x1p+0,
    0x1.f99999999999ap+2, 0x1.fec89c8711ca4p+0, 0x1.3d91d2a2067b2p-1, 0x1.3d91d2a2067b2p-1,
    0x1.89c875ce87efep-5, 0x1.89c875ce87efep-5, 0x1.89c875ce87efep-5, 0x1p+0,
    0x1.f99999999999ap+2, 0x1.fec89c8711ca4p+0, 0x1p+0, 0x1.f99999999999ap+2,
    0x1.a2367bff6ed98p+0, 0x1.a114641b0c7f1p-2, 0x1.1135c0ce42322p-1, -0x1.981ac5935d9d8p-9,
    0x1.06dbbf93f3e02p-5, 0x1.f04882dbc7a63p-5, 0x1.86ce9c98a8ea4p-1, 0x1.9bacec8fe94f3p+2,
    0x1.a2367bff6ed96p+0, 0x1.86ce9c98a8ea5p-1, 0x1.9bacec8fe94f3p+2, 0x1.a2367bff6ed98p+0,
    0x1.a114641b0c7f3p-2, 0x1.1135c0ce42323p-1, 0x1.5a0e44bc4976ep-5, 0x1.c55ef01476947p-5,
    0x1.28fb91b5b404fp-4, 0x1.86ce9c98a8ea4p-1, 0x1.9bacec8fe94f3p+2, 0x1.a2367bff6ed96p+0,
    0x1.86ce9c98a8ea5p-1, 0x1.9bacec8fe94f3p+2, 0x1.fec89c8711ca4p+0, 0x1.3d91d2a2067b2p-1,
    0x1.3d91d2a2067b2p-1, 0x1.89c875ce87efep-5, 0x1.89c875ce87efep-5, 0x1.89c875ce87efep-5,
    0x1.199999999999ap+0, 0x1.f99999999999ap+2, 0x1.fec89c8711ca4p+0, 0x1.199999999999ap+0,
    0x1.f99999999999ap+2, 0x1.fec89c8711ca4p+0, 0x1.3d91d2a2067b2p-1, 0x1.3d91d2a2067b2p-1,
    0x1.89c875ce87efep-5, 0x1.89c875ce87efep-5, 0x1.89c875ce87efep-5, 0x1.199999999999ap+0,
    0x1.f99999999999ap+2, 0x1.fec89c8711ca4p+0, 0x1.199999999999ap+0, 0x1.f99999999999ap+2,
    0x1.8a39d700e8ae8p+0, 0x1.5ede46b0160c3p-2, 0x1.fd7099a18f414p-2, -0x1.d283a5db22704p-6,
    0x1.0b50a4c49c9f8p-6, 0x1.e1b4c2faf08c2p-5, 0x1.60a1ac04e6ebep-1, 0x1.7e16e550995d4p+2,
    0x1.8a39d700e8ae8p+0, 0x1.60a1ac04e6ebep-1, 0x1.7e16e550995d4p+2, 0x1.8a39d700e8ae8p+0,
    0x1.5ede46b0160c2p-2, 0x1.fd7099a18f413p-2, 0x1.4712729736da2p-5, 0x1.dae3a0abe429fp-5,
    0x1.58c1627796652p-4, 0x1.60a1ac04e6ebep-1, 0x1.7e16e550995d4p+2, 0x1.8a39d700e8ae8p+0,
    0x1.60a1ac04e6ebep-1, 0x1.7e16e550995d4p+2, 0x1.fec89c8711ca4p+0, 0x1.3d91d2a2067b2p-1,
    0x1.3d91d2a2067b2p-1, 0x1.89c875ce87efep-5, 0x1.89c875ce87efep-5, 0x1.89c875ce87efep-5,
    0x1.199999999999ap+0, 0x1.f99999999999ap+2, 0x1.fec89c8711ca4p+0, 0x1.199999999999ap+0,
    0x1.f99999999999ap+2, 0x1.fec89c8711ca4p+0, 0x1.3d91d2a2067b2p-1, 0x1.3d91d2a2067b2p-1,
    0x1.89c875ce87efep-5, 0x1.89c875ce87efep-5, 0x1.89c875ce87efep-5, 0x1.199999999999ap+0,
    0x1.f99999999999ap+2, 0x1.fec89c8711ca4p+0, 0x1.199999999999ap+0, 0x1.f99999999999ap+2,
    0x1.9bf23b7213eaap+0, 0x1.197994d9a6268p-1, 0x1.197994d9a6268p-1, 0x1.e0812ebff55d2p-5,
    0x1.e0812ebff55dp-5, 0x1.e0812ebff55dp-5, -0x1.a6365f467939dp-1, 0x1.aa6f67bc62decp+2,
    0x1.9bf23b7213eaap+0, -0x1.a6365f467939dp-1, 0x1.aa6f67bc62decp+2, 0x1.9bf23b7213eaap+0,
    0x1.197994d9a6268p-1, 0x1.197994d9a6268p-1, 0x1.14c7bed1aded4p-4, 0x1.14c7bed1aded3p-4,
    0x1.14c7bed1aded3p-4, -0x1.a6365f467939dp-1, 0x1.aa6f67bc62decp+2, 0x1.9bf23b7213eaap+0,
    -0x1.a6365f467939dp-1, 0x1.aa6f67bc62decp+2, 0x1.9bf23b7213eaap+0, 0x1.197994d9a6268p-1,
    0x1.197994d9a6268p-1, 0x1.e0812ebff55d2p-5, 0x1.e0812ebff55dp-5, 0x1.e0812ebff55dp-5,
    -0x1.a6365f467939dp-1, 0x1.aa6f67bc62decp+2, 0x1.9bf23b7213eaap+0, -0x1.a6365f467939dp-1,
    0x1.aa6f67bc62decp+2, 0x1.9bf23b7213eaap+0, 0x1.197994d9a6268p-1, 0x1.197994d9a6268p-1,
    0x1.14c7bed1aded4p-4, 0x1.14c7bed1aded3p-4, 0x1.14c7bed1aded3p-4, -0x1.a6365f467939dp-1,
    0x1.aa6f67bc62decp+2, 0x1.9bf23b7213eaap+0, -0x1.a6365f467939dp-1, 0x1.aa6f67bc62decp+2,
    0x1.37f1c8c79bfaep-3, -0x1.8eff26dcc4ec8p-3, 0x1.d01d10a7cf42ep+1, -0x1.14dd65e1ddb8fp-6,
    0x1.d2e6c45498608p-9, -0x1.3dbb867773928p-6, 0x1.02dd8f030748p-9, -0x1.5e173857d47b8p-6,
    0x1.79232d2162b29p-3, -0x1.3dbb867773928p-6, 0x1.af076906fbfep-4, -0x1.236c78febd6p-8,
    0x1.c13e3096e7d3fp-4, 0x1.79e8d0250955p-7, 0x1.02dd8f030748p-9, -0x1.236c78febd6p-8,
    0x1.d33372e0adddp-4, -0x1.e56a3a7099b2fp-4, 0x1.6184a01f121d4p-3, -0x1.5e173857d47b8p-6,
    0x1.c13e3096e7d3fp-4, -0x1.e56a3a7099b2fp-4, 0x1.d3543583c0c37p-3, 0x1.68fd87b01c8d5p+0,
    0x1.085cf68ec238bp-1, 0x1.047d73e38ec0cp-4, -0x1.085cf68ec238bp-1, 0x1.8cf7e69f7331ep+2,
    0x1.68fd87b01c8d5p+0, 0x1.085cf68ec238bp-1, 0x1.3f655abcba5b4p-4, -0x1.085cf68ec238bp-1,
    0x1.8cf7e69f7331ep+2, 0x1.70091f73f3004p+1, 0x1.187b398c2da94p-3, 0x1.4dfe607bb4435p+2,
    0x1.152cd456feep-1, -0x1.91d2a2067b239p-2, -0x1.91d2a2067b239p-2, 0x1.68f7c152a7469p-3,
    0x1.68f7c152a7469p-3, 0x1.68f7c152a7469p-3, 0x1p+0, 0x1.f99999999999ap+2,
    0x1.152cd456feep-1, 0x1p+0, 0x1.f99999999999ap+2, 0x1.152cd456feep-1,
    -0x1.91d2a2067b239p-2, -0x1.91d2a2067b239p-2, 0x1.68f7c152a7469p-3, 0x1.68f7c152a7469p-3,
    0x1.68f7c152a7469p-3, 0x1p+0, 0x1.f99999999999ap+2, 0x1.152cd456feep-1,
    0x1p+0, 0x1.f99999999999ap+2, 0x1.152cd456feep-1, -0x1.91d2a2067b239p-2,
    -0x1.91d2a2067b239p-2, 0x1.68f7c152a7469p-3, 0x1.68f7c152a7469p-3, 0x1.68f7c152a7469p-3,
    0x1p+0, 0x1.f99999999999ap+2, 0x1.152cd456feep-1, 0x1p+0,
    0x1.f99999999999ap+2, 0x1.152cd456feep-1, -0x1.91d2a2067b239p-2, -0x1.91d2a2067b239p-2,
    0x1.68f7c152a7469p-3, 0x1.68f7c152a7469p-3, 0x1.68f7c152a7469p-3, 0x1p+0,
    0x1.f99999999999ap+2, 0x1.152cd456feep-1, 0x1p+0, 0x1.f99999999999ap+2,
    0x1.85e2cc256e928p-3, -0x1.90c9af4717efp-3, -0x1.3da34556c457dp-3, 0x1.08681f655f9b9p-3,
    0x1.7a8150d613988p-4, 0x1.0584518d08482p-4, 0x1.4303c62a553f2p+0, 0x1.30bc8660ceddcp+3,
    0x1.85e2cc256e928p-3, 0x1.4303c62a553f2p+0, 0x1.30bc8660ceddcp+3, 0x1.85e2cc256e928p-3,
    -0x1.90c9af4717eeap-3, -0x1.3da34556c4577p-3, 0x1.8b7e2a118a65ap-3, 0x1.3970f9c01ef73p-3,
    0x1.f0d351fbc8e2dp-4, 0x1.4303c62a553f2p+0, 0x1.30bc8660ceddcp+3, 0x1.85e2cc256e928p-3,
    0x1.4303c62a553f2p+0, 0x1.30bc8660ceddcp+3, 0x1.152cd456feep-1, -0x1.91d2a2067b239p-2,
    -0x1.91d2a2067b239p-2, 0x1.68f7c152a7469p-3, 0x1.68f7c152a7469p-3, 0x1.68f7c152a7469p-3,
    0x1.199999999999ap+0, 0x1.f99999999999ap+2, 0x1.152cd456feep-1, 0x1.199999999999ap+0,
    0x1.f99999999999ap+2, 0x1.152cd456feep-1, -0x1.91d2a2067b239p-2, -0x1.91d2a2067b239p-2,
    0x1.68f7c152a7469p-3, 0x1.68f7c152a7469p-3, 0x1.68f7c152a7469p-3, 0x1.199999999999ap+0,
    0x1.f99999999999ap+2, 0x1.152cd456feep-1, 0x1.199999999999ap+0, 0x1.f99999999999ap+2,
    0x1.a2fd1599fa3b4p-3, -0x1.b224478512e0cp-3, -0x1.5dc78a38f400cp-3, 0x1.21a5acb9a1d83p-3,
    0x1.ae94e09c05254p-4, 0x1.377ad271e8e86p-4, 0x1.3dbe6eb5abfcbp+0, 0x1.2ca6c8fffee3dp+3,
    0x1.a2fd1599fa3acp-3, 0x1.3dbe6eb5abfcap+0, 0x1.2ca6c8fffee3dp+3, 0x1.a2fd1599fa3b4p-3,
    -0x1.b224478512e0cp-3, -0x1.5dc78a38f400cp-3, 0x1.89292e6018a12p-3, 0x1.3cc31173e9b08p-3,
    0x1.fe6af622b2bd2p-4, 0x1.3dbe6eb5abfcbp+0, 0x1.2ca6c8fffee3dp+3, 0x1.a2fd1599fa3acp-3,
    0x1.3dbe6eb5abfcap+0, 0x1.2ca6c8fffee3dp+3, 0x1.152cd456feep-1, -0x1.91d2a2067b239p-2,
    -0x1.91d2a2067b239p-2, 0x1.68f7c152a7469p-3, 0x1.68f7c152a7469p-3, 0x1.68f7c152a7469p-3,
    0x1.199999999999ap+0, 0x1.f99999999999ap+2, 0x1.152cd456feep-1, 0x1.199999999999ap+0,
    0x1.f99999999999ap+2, 0x1.152cd456feep-1, -0x1.91d2a2067b239p-2, -0x1.91d2a2067b239p-2,
    0x1.68f7c152a7469p-3, 0x1.68f7c152a7469p-3, 0x1.68f7c152a7469p-3, 0x1.199999999999ap+0,
    0x1.f99999999999ap+2, 0x1.152cd456feep-1, 0x1.199999999999ap+0, 0x1.f99999999999ap+2,
    0x1.a975bbafdd938p-2, -0x1.2608702b6a1dcp-2, -0x1.2608702b6a1dcp-2, 0x1.ccc3bdb066ea2p-4,
    0x1.ccc3bdb066ea2p-4, 0x1.ccc3bdb066ea2p-4, 0x1.b90ca8411f2cap-2, 0x1.117964afda42ep+3,
    0x1.a975bbafdd939p-2, 0x1.b90ca8411f2cbp-2, 0x1.117964afda42ep+3, 0x1.a975bbafdd938p-2,
    -0x1.2608702b6a1dcp-2, -0x1.2608702b6a1dcp-2, 0x1.3474219a771d6p-3, 0x1.3474219a771d6p-3,
    0x1.3474219a771d6p-3, 0x1.b90ca8411f2cap-2, 0x1.117964afda42ep+3, 0x1.a975bbafdd939p-2,
    0x1.b90ca8411f2cbp-2, 0x1.117964afda42ep+3, 0x1.a975bbafdd938p-2, -0x1.2608702b6a1dcp-2,
    -0x1.2608702b6a1dcp-2, 0x1.ccc3bdb066ea2p-4, 0x1.ccc3bdb066ea2p-4, 0x1.ccc3bdb066ea2p-4,
    0x1.b90ca8411f2cap-2, 0x1.117964afda42ep+3, 0x1.a975bbafdd939p-2, 0x1.b90ca8411f2cbp-2,
    0x1.117964afda42ep+3, 0x1.a975bbafdd938p-2, -0x1.2608702b6a1dcp-2, -0x1.2608702b6a1dcp-2,
    0x1.3474219a771d6p-3, 0x1.3474219a771d6p-3, 0x1.3474219a771d6p-3, 0x1.b90ca8411f2cap-2,
    0x1.117964afda42ep+3, 0x1.a975bbafdd939p-2, 0x1.b90ca8411f2cbp-2, 0x1.117964afda42ep+3,
    0x1.89d6165cb1e88p+0, 0x1.06ef1d901811cp-1, 0x1.cabbd8e075718p+2, -0x1.18ef86a136a24p-3,
    0x1.cd94a9ba4dcf8p-6, 0x1.b8c32b018e61ep-5, -0x1.fecdd0f543ap-15, 0x1.b942de75cbb2cp-5,
    -0x1.0c3aff35053ebp-1, 0x1.b8c32b018e61ep-5, 0x1.a4b896ed38dbbp-4, -0x1.1ce7d62fbc3cp-9,
    0x1.ad9fd59eb6bd9p-4, 0x1.60f66813561cp-7, -0x1.fecdd0f543ap-15, -0x1.1ce7d62fbc3cp-9,
    0x1.b6748d2b02f2bp-4, -0x1.bf5bcbdc80d49p-4, -0x1.11bed8d552972p-1, 0x1.b942de75cbb2cp-5,
    0x1.ad9fd59eb6bd9p-4, -0x1.bf5bcbdc80d49p-4, 0x1.b67dd0bd9bc91p-3, 0x1.c8d62c82bf99p-2,
    -0x1.2777c9ef1da49p-2, 0x1.ae05200ada5eap-4, 0x1.2777c9ef1da48p-2, 0x1.112d418011e2fp+3,
    0x1.c8d62c82bf99p-2, -0x1.2777c9ef1da49p-2, 0x1.352029f36d0c4p-3, 0x1.2777c9ef1da48p-2,
    0x1.112d418011e2fp+3, 0x1.7806023f4eff6p+4, 0x1.082ac340b90cep+2, 0x1.8056f0e4dcbbp-4,
    0x1.8a02a02a02a03p+1, 0x1.41a41a41a41a4p+0, 0x1.41a41a41a41a4p+0, 0x1.069069069069p-2,
    0x1.069069069069p-2, 0x1.069069069069p-2, 0x1p+0, 0x1.f99999999999ap+2,
    0x1.8a02a02a02a03p+1, 0x1p+0, 0x1.f99999999999ap+2, 0x1.8a02a02a02a03p+1,
    0x1.41a41a41a41a4p+0, 0x1.41a41a41a41a4p+0, 0x1.069069069069p-2, 0x1.069069069069p-2,
    0x1.069069069069p-2, 0x1p+0, 0x1.f99999999999ap+2, 0x1.8a02a02a02a03p+1,
    0x1p+0, 0x1.f99999999999ap+2, 0x1.8a02a02a02a03p+1, 0x1.41a41a41a41a4p+0,
    0x1.41a41a41a41a4p+0, 0x1.069069069069p-2, 0x1.069069069069p-2, 0x1.069069069069p-2,
    0x1p+0, 0x1.f99999999999ap+2, 0x1.8a02a02a02a03p+1, 0x1p+0,
    0x1.f99999999999ap+2, 0x1.8a02a02a02a03p+1, 0x1.41a41a41a41a4p+0, 0x1.41a41a41a41a4p+0,
    0x1.069069069069p-2, 0x1.069069069069p-2, 0x1.069069069069p-2, 0x1p+0,
    0x1.f99999999999ap+2, 0x1.8a02a02a02a03p+1, 0x1p+0, 0x1.f99999999999ap+2,
    0x1.e87d26550ea9bp+0, 0x1.0434255b118aap-1, 0x1.7eb8683eb69f6p-1, -0x1.182dd4d28801p-9,
    0x1.1c51e830b20c6p-4, 0x1.524da2f198222p-3, 0x1.5c1928cc9c2a6p-1, 0x1.7a937f9e92a0ep+2,
    0x1.e87d26550ea9dp+0, 0x1.5c1928cc9c2a7p-1, 0x1.7a937f9e92a0fp+2, 0x1.e87d26550ea9bp+0,
    0x1.0434255b118a8p-1, 0x1.7eb8683eb69f5p-1, 0x1.e5776588b1e32p-4, 0x1.65061cb7999bp-3,
    0x1.069069069069p-2, 0x1.5c1928cc9c2a6p-1, 0x1.7a937f9e92a0ep+2, 0x1.e87d26550ea9dp+0,
    0x1.5c1928cc9c2a7p-1, 0x1.7a937f9e92a0fp+2, 0x1.8a02a02a02a03p+1, 0x1.41a41a41a41a4p+0,
    0x1.41a41a41a41a4p+0, 0x1.069069069069p-2, 0x1.069069069069p-2, 0x1.069069069069p-2,
    0x1.199999999999ap+0, 0x1.f99999999999ap+2, 0x1.8a02a02a02a03p+1, 0x1.199999999999ap+0,
    0x1.f99999999999ap+2, 0x1.8a02a02a02a03p+1, 0x1.41a41a41a41a4p+0, 0x1.41a41a41a41a4p+0,
    0x1.069069069069p-2, 0x1.069069069069p-2, 0x1.069069069069p-2, 0x1.199999999999ap+0,
    0x1.f99999999999ap+2, 0x1.8a02a02a02a03p+1, 0x1.199999999999ap+0, 0x1.f99999999999ap+2,
    0x1.b023f1916e55bp+0, 0x1.744483722ff72p-2, 0x1.39252d31bb8cp-1, -0x1.916ce5930da3cp-5,
    0x1.426908f46c558p-7, 0x1.c5d56a4f7f1c8p-4, 0x1.3055521b27857p-1, 0x1.58a886083ea1p+2,
    0x1.b023f1916e55bp+0, 0x1.3055521b27857p-1, 0x1.58a886083ea1p+2, 0x1.b023f1916e55bp+0,
    0x1.744483722ff6fp-2, 0x1.39252d31bb8bep-1, 0x1.73119665dd5cep-4, 0x1.3822fee0c612bp-3,
    0x1.069069069069p-2, 0x1.3055521b27857p-1, 0x1.58a886083ea1p+2, 0x1.b023f1916e55bp+0,
    0x1.3055521b27857p-1, 0x1.58a886083ea1p+2, 0x1.8a02a02a02a03p+1, 0x1.41a41a41a41a4p+0,
    0x1.41a41a41a41a4p+0, 0x1.069069069069p-2, 0x1.069069069069p-2, 0x1.069069069069p-2,
    0x1.199999999999ap+0, 0x1.f99999999999ap+2, 0x1.8a02a02a02a03p+1, 0x1.199999999999ap+0,
    0x1.f99999999999ap+2, 0x1.8a02a02a02a03p+1, 0x1.41a41a41a41a4p+0, 0x1.41a41a41a41a4p+0,
    0x1.069069069069p-2, 0x1.069069069069p-2, 0x1.069069069069p-2, 0x1.199999999999ap+0,
    0x1.f99999999999ap+2, 0x1.8a02a02a02a03p+1, 0x1.199999999999ap+0, 0x1.f99999999999ap+2,
    0x1.f3b8673b8673bp+0, 0x1.97ef597ef598p-1, 0x1.97ef597ef598p-1, 0x1.4d0214d0214dp-3,
    0x1.4d0214d0214d1p-3, 0x1.4d0214d0214d1p-3, -0x1.31f3831f3831fp+0, 0x1.86de486de486ep+2,
    0x1.f3b8673b8673bp+0, -0x1.31f3831f3831fp+0, 0x1.86de486de486ep+2, 0x1.f3b8673b8673bp+0,
    0x1.97ef597ef597fp-1, 0x1.97ef597ef597fp-1, 0x1.069069069069p-2, 0x1.069069069069p-2,
    0x1.069069069069p-2, -0x1.31f3831f3831fp+0, 0x1.86de486de486ep+2, 0x1.f3b8673b8673bp+0,
    -0x1.31f3831f3831fp+0, 0x1.86de486de486ep+2, 0x1.f3b8673b8673bp+0, 0x1.97ef597ef598p-1,
    0x1.97ef597ef598p-1, 0x1.4d0214d0214dp-3, 0x1.4d0214d0214d1p-3, 0x1.4d0214d0214d1p-3,
    -0x1.31f3831f3831fp+0, 0x1.86de486de486ep+2, 0x1.f3b8673b8673bp+0, -0x1.31f3831f3831fp+0,
    0x1.86de486de486ep+2, 0x1.f3b8673b8673bp+0, 0x1.97ef597ef597fp-1, 0x1.97ef597ef597fp-1,
    0x1.069069069069p-2, 0x1.069069069069p-2, 0x1.069069069069p-2, -0x1.31f3831f3831fp+0,
    0x1.86de486de486ep+2, 0x1.f3b8673b8673bp+0, -0x1.31f3831f3831fp+0, 0x1.86de486de486ep+2,
    0x1.2804d69832dc2p-3, -0x1.8730e61cc3985p-3, 0x1.d28d84e3cfad2p+1, -0x1.07b96a3ba9412p-6,
    0x1.da1c6e710241ap-9, -0x1.4af2b78215a75p-6, 0x1.4af2b78215a74p-10, -0x1.5fa1e2fa3701bp-6,
    0x1.702e05c0b816ep-3, -0x1.4af2b78215a75p-6, 0x1.cc398730e61cbp-4, 0x0p+0,
    0x1.cc398730e61cbp-4, 0x1.d8067d877c6c8p-7, 0x1.4af2b78215a74p-10, 0x0p+0,
    0x1.27040e74adc3ap-3, -0x1.27040e74adc3bp-3, 0x1.52ad9de840501p-3, -0x1.5fa1e2fa3701bp-6,
    0x1.cc398730e61cbp-4, -0x1.27040e74adc3bp-3, 0x1.069069069069p-2, 0x1.9fcfcfcfcfcfep+0,
    0x1.61e1e1e1e1e1ep-1, 0x1.2d2d2d2d2d2d2p-3, -0x1.61e1e1e1e1e1dp-1, 0x1.6c84848484849p+2,
    0x1.9fcfcfcfcfcfep+0, 0x1.61e1e1e1e1e1fp-1, 0x1.069069069069p-2, -0x1.61e1e1e1e1e1dp-1,
    0x1.6c84848484849p+2, 0x1.9a41a41a41a41p-1, 0x1.069069069069p-3, 0x1.7241a41a41a41p+3,
    0x1.58140ce3b6f58p-2, -0x1.bbf8d6d33ea83p-3, -0x1.bbf8d6d33ea83p-3, 0x1.1e6efe35b4cfap-4,
    0x1.1e6efe35b4cfap-4, 0x1.1e6efe35b4cfap-4, 0x1p+0, 0x1.f99999999999ap+2,
    0x1.58140ce3b6f58p-2, 0x1p+0, 0x1.f99999999999ap+2, 0x1.58140ce3b6f58p-2,
    -0x1.bbf8d6d33ea83p-3, -0x1.bbf8d6d33ea83p-3, 0x1.1e6efe35b4cfap-4, 0x1.1e6efe35b4cfap-4,
    0x1.1e6efe35b4cfap-4, 0x1p+0, 0x1.f99999999999ap+2, 0x1.58140ce3b6f58p-2,
    0x1p+0, 0x1.f99999999999ap+2, 0x1.58140ce3b6f58p-2, -0x1.bbf8d6d33ea83p-3,
    -0x1.bbf8d6d33ea83p-3, 0x1.1e6efe35b4cfap-4, 0x1.1e6efe35b4cfap-4, 0x1.1e6efe35b4cfap-4,
    0x1p+0, 0x1.f99999999999ap+2, 0x1.58140ce3b6f58p-2, 0x1p+0,
    0x1.f99999999999ap+2, 0x1.58140ce3b6f58p-2, -0x1.bbf8d6d33ea83p-3, -0x1.bbf8d6d33ea83p-3,
    0x1.1e6efe35b4cfap-4, 0x1.1e6efe35b4cfap-4, 0x1.1e6efe35b4cfap-4, 0x1p+0,
    0x1.f99999999999ap+2, 0x1.58140ce3b6f58p-2, 0x1p+0, 0x1.f99999999999ap+2,
    0x1.358e0292149d1p-3, -0x1.2dccaf03297cfp-3, -0x1.ee042dedbda44p-4, 0x1.5822c10965a4fp-4,
    0x1.0585312afa498p-4, 0x1.8166cebe5de44p-5, 0x1.38c93437cb1d2p+0, 0x1.28cf2211a3d03p+3,
    0x1.358e0292149d2p-3, 0x1.38c93437cb1d2p+0, 0x1.28cf2211a3d03p+3, 0x1.358e0292149d1p-3,
    -0x1.2dccaf03297d3p-3, -0x1.ee042dedbda4cp-4, 0x1.ab99cafc3c979p-4, 0x1.5df8656405462p-4,
    0x1.1e6efe35b4cfap-4, 0x1.38c93437cb1d2p+0, 0x1.28cf2211a3d03p+3, 0x1.358e0292149d2p-3,
    0x1.38c93437cb1d2p+0, 0x1.28cf2211a3d03p+3, 0x1.58140ce3b6f58p-2, -0x1.bbf8d6d33ea83p-3,
    -0x1.bbf8d6d33ea83p-3, 0x1.1e6efe35b4cfap-4, 0x1.1e6efe35b4cfap-4, 0x1.1e6efe35b4cfap-4,
    0x1.199999999999ap+0, 0x1.f99999999999ap+2, 0x1.58140ce3b6f58p-2, 0x1.199999999999ap+0,
    0x1.f99999999999ap+2, 0x1.58140ce3b6f58p-2, -0x1.bbf8d6d33ea83p-3, -0x1.bbf8d6d33ea83p-3,
    0x1.1e6efe35b4cfap-4, 0x1.1e6efe35b4cfap-4, 0x1.1e6efe35b4cfap-4, 0x1.199999999999ap+0,
    0x1.f99999999999ap+2, 0x1.58140ce3b6f58p-2, 0x1.199999999999ap+0, 0x1.f99999999999ap+2,
    0x1.44375f19cc6e2p-3, -0x1.3b34bc60df0e8p-3, -0x1.0576fa1d1037ep-3, 0x1.618c8aa04c3b1p-4,
    0x1.1473c592fa6ap-4, 0x1.a5b7a3eccfd61p-5, 0x1.349e36dbbff83p+0, 0x1.25943750b4c6cp+3,
    0x1.44375f19cc6e2p-3, 0x1.349e36dbbff83p+0, 0x1.25943750b4c6cp+3, 0x1.44375f19cc6e2p-3,
    -0x1.3b34bc60df0e6p-3, -0x1.0576fa1d1037bp-3, 0x1.a047ed686e4p-4, 0x1.594e8fbacc0cbp-4,
    0x1.1e6efe35b4cfap-4, 0x1.349e36dbbff83p+0, 0x1.25943750b4c6cp+3, 0x1.44375f19cc6e2p-3,
    0x1.349e36dbbff83p+0, 0x1.25943750b4c6cp+3, 0x1.58140ce3b6f58p-2, -0x1.bbf8d6d33ea83p-3,
    -0x1.bbf8d6d33ea83p-3, 0x1.1e6efe35b4cfap-4, 0x1.1e6efe35b4cfap-4, 0x1.1e6efe35b4cfap-4,
    0x1.199999999999ap+0, 0x1.f99999999999ap+2, 0x1.58140ce3b6f58p-2, 0x1.199999999999ap+0,
    0x1.f99999999999ap+2, 0x1.58140ce3b6f58p-2, -0x1.bbf8d6d33ea83p-3, -0x1.bbf8d6d33ea83p-3,
    0x1.1e6efe35b4cfap-4, 0x1.1e6efe35b4cfap-4, 0x1.1e6efe35b4cfap-4, 0x1.199999999999ap+0,
    0x1.f99999999999ap+2, 0x1.58140ce3b6f58p-2, 0x1.199999999999ap+0, 0x1.f99999999999ap+2,
    0x1.294ce09972005p-2, -0x1.7f9d00c5fe74p-3, -0x1.7f9d00c5fe74p-3, 0x1.eefc2207bbf08p-5,
    0x1.eefc2207bbf08p-5, 0x1.eefc2207bbf08p-5, 0x1.1fb5c0947ed6fp-2, 0x1.0a4951d3c2beep+3,
    0x1.294ce09972005p-2, 0x1.1fb5c0947ed6fp-2, 0x1.0a4951d3c2beep+3, 0x1.294ce09972005p-2,
    -0x1.7f9d00c5fe74p-3, -0x1.7f9d00c5fe74p-3, 0x1.1e6efe35b4cfap-4, 0x1.1e6efe35b4cfap-4,
    0x1.1e6efe35b4cfap-4, 0x1.1fb5c0947ed6fp-2, 0x1.0a4951d3c2beep+3, 0x1.294ce09972005p-2,
    0x1.1fb5c0947ed6fp-2, 0x1.0a4951d3c2beep+3, 0x1.294ce09972005p-2, -0x1.7f9d00c5fe74p-3,
    -0x1.7f9d00c5fe74p-3, 0x1.eefc2207bbf08p-5, 0x1.eefc2207bbf08p-5, 0x1.eefc2207bbf08p-5,
    0x1.1fb5c0947ed6fp-2, 0x1.0a4951d3c2beep+3, 0x1.294ce09972005p-2, 0x1.1fb5c0947ed6fp-2,
    0x1.0a4951d3c2beep+3, 0x1.294ce09972005p-2, -0x1.7f9d00c5fe74p-3, -0x1.7f9d00c5fe74p-3,
    0x1.1e6efe35b4cfap-4, 0x1.1e6efe35b4cfap-4, 0x1.1e6efe35b4cfap-4, 0x1.1fb5c0947ed6fp-2,
    0x1.0a4951d3c2beep+3, 0x1.294ce09972005p-2, 0x1.1fb5c0947ed6fp-2, 0x1.0a4951d3c2beep+3,
    0x1.0facccfa64546p+0, 0x1.4e42523d03faap-2, 0x1.8edb201977a4bp+2, -0x1.c24c14972bd3ap-5,
    0x1.754da99bd4bf4p-8, 0x1.198124f0ca70fp-6, 0x1.198124f0ca76p-12, 0x1.151b205d07472p-6,
    -0x1.5390948f40feap-2, 0x1.198124f0ca70fp-6, 0x1.a874b9b3113e4p-5, 0x1p-58,
    0x1.a874b9b3113e4p-5, 0x1.daea6f1ab47p-10, 0x1.198124f0ca76p-12, 0x1p-58,
    0x1.28d28570b0c1fp-6, -0x1.28d28570b0c1ep-6, -0x1.556b7efe5bb32p-2, 0x1.151b205d07472p-6,
    0x1.a874b9b3113e4p-5, -0x1.28d28570b0c1ep-6, 0x1.1e6efe35b4cfap-4, 0x1.442add7842adcp-2,
    -0x1.88ee23b88ee22p-3, 0x1.dc47711dc477p-5, 0x1.88ee23b88ee23p-3, 0x1.08346404c3464p+3,
    0x1.442add7842adcp-2, -0x1.88ee23b88ee23p-3, 0x1.1e6efe35b4cfap-4, 0x1.88ee23b88ee23p-3,
    0x1.08346404c3464p+3, 0x1.ed6d33ea8479bp+1, 0x1.b699f5423cddfp+0, 0x1.423cddfc6b69ap-4,
    0x1.6666666666666p-1, -0x1p+0, 0x0p+0, 0x1.0f9d2bf551505p-2,
    -0x1.584f4c6e6d9bep+0, -0x1.89374bc6a7eep-2, 0x0p+0, 0x0p+0,
    0x1.ep+2, 0x1.14013ec460ed8p-3, 0x1.33fa6defc7a3ap+0, 0x1.a353f7ced9168p+1,
    0x1.cbbb906466b1ep-2, 0x1.0f0092ccf6be2p+0, -0x1.04d4fdf3b6458p+1, 0x1p-1,
    0x1p+0, 0x0p+0, 0x1.4cccccccccccdp+0, 0x1p+0,
    0x0p+0, 0x1p+0, 0x0p+0, 0x1p+0,
    0x0p+0, 0x1p+0, 0x0p+0, -0x1.c6eb3e45306ecp+2,
    0x1.5e9ef2b920b98p+4, 0x1.3594d653594d6p-2, 0x1.4c49a8387d297p-3, 0x1.88ee23b88ee24p-1,
    0x1.275deadce1086p-6, -0x1.cbacf914c1badp+4, 0x1.41670929b354cp+6, -0x1.8ee23b88ee23cp+0,
    0x1.3098da33c810ap-1, 0x1.2da4b692da4b8p-3, 0x1.0ec0c1f5239dp-4, 0x1.7ae147ae147aep-2,
    0x1p+0, 0x1.1333333333333p+2, 0x1p+0, 0x1.9cccccccccccdp+3,
    0x1p+0, -0x1.5945945945945p-1, 0x1.069069069069p-2, 0x1.5555555555554p-2,
    0x1.069069069069p-2, 0x1.44ec4ec4ec4ecp+1, 0x1.069069069069p-2, -0x1.7c993df0f6554p-1,
    0x1.1e6efe35b4cfap-4, -0x1.dfc6b699f5424p-2, 0x1.1e6efe35b4cfap-4, 0x1.101ca4b3055efp-3,
    0x1.1e6efe35b4cfap-4, 0x0p+0, 0x1.c3c3c3c3c3c3cp-1, 0x1.52fab4152fab5p-1,
    0x1.ee08fb823ee09p-1, 0x0p+0, 0x0p+0, 0x1.92b499833af02p+2,
    0x1.c3c3c3c3c3c3cp-1, -0x1.a930b83fc74ecp-6, 0x0p+0, 0x0p+0,
    0x1.52fab4152fab6p-1, 0x0p+0, -0x1.760bcf8a22f1fp-5, 0x0p+0,
    0x1.ee08fb823ee08p-1, 0x0p+0, 0x0p+0, -0x1.5ab0f85b66827p-3,
    0x0p+0, 0x1.c3c3c3c3c3c3cp-1, 0x1.52fab4152fab5p-1, 0x1.4cccccccccccdp+0,
    0x0p+0, 0x0p+0, 0x1.91622e4def708p+2, 0x1.c3c3c3c3c3c3cp-1,
    -0x1.a930b83fc74ecp-6, 0x0p+0, 0x0p+0, 0x1.52fab4152fab6p-1,
    0x0p+0, -0x1.760bcf8a22f1fp-5, 0x0p+0, 0x1p+0,
    0x0p+0, 0x0p+0, 0x0p+0, 0x1.bf90a7b50a655p+0,
    0x1.debf6bdcdfd5bp-1, 0x1.717fe7423097fp-1, 0x1.06757f75221fbp+0, -0x1.5af85a4ed55a7p+0,
    0x1.7583e7d16b5f4p+1, 0x1.2eded59dc5cbbp+0, 0x1.f2c8ae0ee27a7p-2, 0x1.7f79db2534f38p-5,
    0x1.4dc74713f4d2dp-5, 0x1.e9e742d04b1a4p-5, 0x1.80f6b013f0108p-2, 0x1.4dc74713f4d2cp-5,
    0x1.ffb78fa150efcp-7, 0x1.6cc886f6c8384p-5, 0x1.11717576aacd2p-1, 0x1.e9e742d04b1a2p-5,
    0x1.6cc886f6c8384p-5, 0x1.ba4c4e7cf1a94p-7, 0x1.c787101dae7f9p+0, 0x1.ddf194ed008c8p-1,
    0x1.70909ffbe6805p-1, 0x1.4cccccccccccdp+0, -0x1.39b636003d0cp+0, 0x1.5165a591c4f92p+1,
    0x1.2922477bee2d5p+0, 0x1.f19dae09a6d03p-2, 0x1.8316024e16f4dp-5, 0x1.50b77a7675ba6p-5,
    0x1.017f6f2f37208p-4, 0x1.801a62f454e3ap-2, 0x1.50b77a7675ba7p-5, 0x1.0604f6b0500eap-6,
    0x1.806dc4358ea14p-5, 0x1.0a2a019929a0ap-1, 0x1.017f6f2f37209p-4, 0x1.806dc4358ea14p-5,
    0x1.264b2e0d1e786p-4, 0x1.b55a47fadedfp+0, 0x1.09a8443b85fb9p+0, 0x1.b24442d96f764p-1,
    0x1.24c676c743504p+0, -0x1.857d351dc34c7p+2, 0x1.6e0fa5186ee36p+3, 0x1.225900d4d24f1p-2,
    -0x1.21b7fef9b37b6p-2, 0x1.5c28c12977d92p-3, 0x1.274c60fd2297fp-3, 0x1.867531e004babp-3,
    -0x1.d9997e633d599p-3, 0x1.274c60fd2298p-3, 0x1.d65e7e4ebaeeap-4, 0x1.460e9a41846fap-3,
    -0x1.3f4af8865eacep-2, 0x1.867531e004bacp-3, 0x1.460e9a41846fap-3, 0x1.8aece1acc7fb3p-3,
    0x1.b999f5b4f57ecp+0, 0x1.090e32b57730fp+0, 0x1.b0b2c02b6eb14p-1, 0x1.4cccccccccccdp+0,
    -0x1.620f84eadf59bp+2, 0x1.4f73765225ca3p+3, 0x1.3b88801b3b7c8p-2, -0x1.32e67bd6f0939p-2,
    0x1.672490a80d9ccp-3, 0x1.347b182c3b703p-3, 0x1.4f65ef784382ap-3, -0x1.f62d50dfad3fp-3,
    0x1.347b182c3b704p-3, 0x1.ec8f4746a625p-4, 0x1.1c9719e14cf6ep-3, -0x1.2575c102b5a3p-2,
    0x1.4f65ef784382ap-3, 0x1.1c9719e14cf6ep-3, 0x1.36b5784f906acp-3, 0x1.8a3da9892cfe5p+1,
    0x1.cfd152c9bab15p-1, 0x1.6066635b28911p-1, 0x1.fbcf5e73ea311p-1, -0x1.2aaf6b61da2ddp+8,
    0x1.126a1b903a6e4p+9, 0x1.7513de5afa6b8p+0, 0x1.695e131707cedp-1, 0x1.015b56dc68d42p-3,
    0x1.a47ca981be368p-4, 0x1.3d814e903eb26p-3, 0x1.128f6ac551c2ep-1, 0x1.a47ca981be366p-4,
    0x1.6971fb648b718p-5, 0x1.ca36a4467719p-4, 0x1.8ba481e89bc5ep-1, 0x1.3d814e903eb26p-3,
    0x1.ca36a4467719p-4, 0x1.ee934c0f585a8p-5, 0x1.8b4d89512d135p+1, 0x1.cd3a68769e51dp-1,
    0x1.5d7cfb34e1ddp-1, 0x1.4cccccccccccdp+0, -0x1.21c2eb640034p+8, 0x1.0c9b312455b14p+9,
    0x1.6f28fd2d689d4p+0, 0x1.69f7f90374432p-1, 0x1.0664094e40549p-3, 0x1.b0749a8ec9b34p-4,
    0x1.6a3c6b89f2398p-3, 0x1.130782d8617e8p-1, 0x1.b0749a8ec9b32p-4, 0x1.17ef76cbe821p-5,
    0x1.09907f8ea0d2fp-3, 0x1.90d3d8adf120cp-1, 0x1.6a3c6b89f2398p-3, 0x1.09907f8ea0d2fp-3,
    0x1.bf250cf47d7e9p-3, 0x1.fedfb034deee6p+1, 0x1.0617ef7f497d8p+0, 0x1.a90a5ccd97449p-1,
    0x1.20a578ef16e2p+0, -0x1.784597e2a4361p+9, 0x1.6899c81abb2ap+10, 0x1.8e8147d2f04b2p-3,
    -0x1.6d9c21d539688p-3, 0x1.5aa58b3905a7cp-4, 0x1.2078a87f24e3cp-4, 0x1.8304b3836093p-4,
    -0x1.28750a4ca002fp-3, 0x1.2078a87f24e3cp-4, 0x1.c849266f6fd26p-5, 0x1.3e133a496f7fdp-4,
    -0x1.92a66c39addedp-3, 0x1.8304b3836093p-4, 0x1.3e133a496f7fcp-4, 0x1.8df2d597b1269p-4,
    0x1.ff22ee6a4cc1ep+1, 0x1.05c104e24d8a4p+0, 0x1.a82b4d6af0175p-1, 0x1.4cccccccccccdp+0,
    -0x1.7448f617e630ep+9, 0x1.65c9181db0ee7p+10, 0x1.abdcc621a5c45p-3, -0x1.7ca16aeeff8cdp-3,
    0x1.5eb218d780064p-4, 0x1.2528ec01b65cap-4, 0x1.52ccf6c1bb0d8p-4, -0x1.34c551a214946p-3,
    0x1.2528ec01b65c9p-4, 0x1.ac35b6d3ab5e4p-5, 0x1.17ef8c5d69da6p-4, -0x1.72a17073f63d5p-3,
    0x1.52ccf6c1bb0d8p-4, 0x1.17ef8c5d69da6p-4, 0x1.449a4e107425cp-4,
};
constexpr size_t kClosedForms = 1060, kInterpolationAndData = 1117;

TEST(SharedFormulation, ClosedFormsInterpolationAndDataTermKeepTheCpuBits) {
  std::vector<double> got;
  append_closed_forms(got);
  ASSERT_EQ(got.size(), kClosedForms);
  append_interpolation_and_data(got);
  ASSERT_EQ(got.size(), kInterpolationAndData);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], kRecorded[i]) << "output " << i;
}

// The composite's expected values interleave with the Newton's in kRecorded: per case 6 values (u0,
// β̂, F', F''), then 13 composite values (every case has a free entry). The composite sums in the
// CPU Newton's order now (it had its own: same to ~1e-16 relative, not to the bit).
TEST(SharedFormulation, GammaFullNewtonKeepsTheCpuBits) {
  std::vector<double> newton, composite;
  append_gamma_full(newton, composite);
  size_t r = kInterpolationAndData;
  for (size_t c = 0; c < newton.size() / 6; ++c) {
    for (int i = 0; i < 6; ++i, ++r) EXPECT_EQ(newton[6 * c + i], kRecorded[r]) << "case " << c << " output " << i;
    for (int i = 0; i < 13; ++i, ++r)
      EXPECT_NEAR(composite[13 * c + i], kRecorded[r], 1e-12 * std::max(1.0, std::abs(kRecorded[r])))
          << "case " << c << " composite output " << i;
  }
  EXPECT_EQ(r, kRecorded.size());
}

// The CUDA adapter runs the CPU's evaluation: lite on HyperDual<2> over (A, Z), full normal-additive
// on HyperDual<1> over ν⁰; φ, M, β̂, ν and the value carry the same bits.
TEST(SharedFormulation, CudaAdapterGivesTheCpuBits) {
  using HD2 = LK::HyperDual<2>;
  using HD1 = LK::HyperDual<1>;
  const double N[3] = {4.0, 2.5, 1.5};
  const double k = 7.5, b0 = 1.1, sigma2 = 2.25;
  for (DataLikelihood lik : {DataLikelihood::poisson, DataLikelihood::chisq})
    for (LK::BBKind kind : {LK::BBKind::none, LK::BBKind::gamma, LK::BBKind::normal_multiplicative,
                            LK::BBKind::normal_additive})
      for (bool profile : {true, false}) {
        SCOPED_TRACE(::testing::Message() << "likelihood " << static_cast<int>(lik) << " kind "
                                          << static_cast<int>(kind) << " profile " << profile);
        const LK::BinObservation o{5.0, 6.5, std::log(5.0)};
        const double beta0 = kind == LK::BBKind::normal_additive ? 0.0 : b0;
        // lite, process 2 without MC statistics
        const double kk[3] = {k, k, k}, bb0[3] = {beta0, beta0, beta0}, s2[3] = {sigma2, 0.8, 0.3};
        const unsigned char masked[3] = {0, 0, 0}, zero_var[3] = {0, 0, 1};
        bin_math::BinConfig cfg;
        cfg.likelihood = lik;
        cfg.bb = kind;
        cfg.nproc = 3;
        cfg.profile = profile;
        bin_math::BinStats st{kk, bb0, masked, s2, zero_var};
        double beta[3] = {}, phi[3], u1[3], u2[3], d[3];
        bin_math::BinResult r;
        bin_math::profile_bin(cfg, o.n, o.v, o.log_n, N, st, beta, phi, u1, u2, d, r);
        LK::LiteEntry e;
        if (kind != LK::BBKind::none) {
          e.k = k;
          e.beta0 = beta0;
          e.log_beta0 = beta0 > 0.0 ? std::log(beta0) : 0.0;
          e.sigma2 = sigma2;
          e.s = std::sqrt(sigma2);
        }
        const double A = kind == LK::BBKind::none ? N[0] + N[1] + N[2] : N[0] + N[1];
        const double Z = kind == LK::BBKind::none ? 0.0 : N[2];
        HD2 b, nu;
        const HD2 F = LK::lite_bin_objective(HD2::variable(A, 0), HD2::variable(Z, 1), o, lik, kind, e, false,
                                             !profile, &b, &nu);
        EXPECT_EQ(r.value, F.v);
        EXPECT_EQ(r.nu, nu.v);
        EXPECT_EQ(r.m11, F.h[0][0]);
        EXPECT_EQ(r.m12, F.h[0][1]);
        EXPECT_EQ(r.m22, F.h[1][1]);
        EXPECT_EQ(phi[0], F.g[0]);
        EXPECT_EQ(phi[2], kind == LK::BBKind::none ? F.g[0] : F.g[1]);
        if (kind != LK::BBKind::none) EXPECT_EQ(beta[0], b.v);
        if (kind != LK::BBKind::normal_additive) continue;
        // full normal-additive
        cfg.mode = BBMode::full;
        bin_math::profile_bin(cfg, o.n, o.v, o.log_n, N, st, beta, phi, u1, u2, d, r);
        double V = 0.0, W0 = 0.0;
        for (int p = 0; p < 3; ++p) {
          V += s2[p];
          W0 += std::sqrt(s2[p]) * bb0[p];
        }
        HD1 rho, nuf;
        const HD1 Ff = LK::full_additive_bin_objective(HD1::variable(N[0] + N[1] + N[2], 0), V, W0, o, lik, !profile,
                                                       &rho, &nuf);
        EXPECT_EQ(r.value, Ff.v);
        EXPECT_EQ(r.m11, Ff.h[0][0]);
        for (int p = 0; p < 3; ++p) {
          EXPECT_EQ(phi[p], Ff.g[0]);
          EXPECT_EQ(beta[p], bb0[p] + rho.v * std::sqrt(s2[p]));
        }
      }
}

}  // namespace
}  // namespace rabbit
