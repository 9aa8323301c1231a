#pragma once
// An in-memory input for the smooth and IsoMT members of the ABCD family (docs/model.md "Smooth ABCD"):
// one channel "ch" with axes mt(3) × relIso(2) × pt(3) × eta(2) (pt, the smoothing axis, is not the last
// axis, so outer × smooth order differs from the channel's row-major order), pt edges 25, 35, 45, 55;
// processes signal (only where relIso = 0 and mt is the signal bin), nonprompt (everywhere, factorising
// in mt × relIso so that the ABCD relations hold roughly) and ewk; two systematics. Deterministic.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "abcd_input.hpp"
#include "rabbit/io/fit_input_data.hpp"

namespace rabbit::test {

inline std::shared_ptr<FitInputData> isomt_input(bool sparse = false) {
  auto in = std::make_shared<FitInputData>();
  in->filename = "isomt.hdf5";
  in->procs = {"signal", "nonprompt", "ewk"};
  in->signals = {"signal"};
  in->systs = {"lumi", "shape"};
  in->constraintweights = Eigen::Vector2d(1.0, 1.0);
  const int64_t NMT = 3, NISO = 2, NPT = 3, NETA = 2;
  const int64_t B = NMT * NISO * NPT * NETA, P = 3, S = 2, W = 2 * S;
  in->nbins = B;
  in->nbinsmasked = 0;
  in->nbinsfull = B;
  in->nproc = P;
  in->nsyst = S;
  in->nsignals = 1;
  in->sparse = sparse;
  auto axis = [](const std::string& name, std::vector<double> edges) {
    AxisInfo a;
    a.kind = "variable";
    a.name = name;
    a.size = static_cast<int64_t>(edges.size()) - 1;
    a.edges = std::move(edges);
    return a;
  };
  ChannelInfo ch;
  ch.name = "ch";
  ch.axes = {axis("mt", {0, 20, 40, 80}), axis("relIso", {0, 0.15, 1}), axis("pt", {25, 35, 45, 55}),
             axis("eta", {-2.4, 0, 2.4})};
  ch.start = 0;
  ch.stop = B;
  in->channels = {ch};
  const double mt_scale[] = {1.0, 0.7, 0.5}, iso_scale[] = {0.4, 1.0};
  std::vector<double> norm(B * P), logk(B * P * W, 0.0);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t eta = b % NETA, pt = (b / NETA) % NPT, iso = (b / (NETA * NPT)) % NISO,
                  mt = b / (NETA * NPT * NISO);
    norm[b * P + 0] = mt == NMT - 1 && iso == 0 ? 60.0 - 8.0 * pt + 3.0 * eta : 0.0;
    norm[b * P + 1] = 200.0 * mt_scale[mt] * iso_scale[iso] * std::exp(-0.3 * pt) * (1.0 + 0.2 * eta) *
                      (1.0 + 0.03 * mt * pt);
    norm[b * P + 2] = 5.0 + 0.5 * b;
    for (int64_t p = 0; p < P; ++p) {
      if (norm[b * P + p] == 0.0) continue;
      // [bin, process, 2, syst]: the average then the half-difference of each systematic
      logk[(b * P + p) * W + 0] = 0.02 * (1 + p) + 0.01 * (b % 3);
      logk[(b * P + p) * W + 1] = 0.03 * (p == 1 ? 1.0 : -0.5) * (1 + 0.05 * b);
      logk[(b * P + p) * W + 2] = -0.015 * (1 + p) + 0.002 * b;
      logk[(b * P + p) * W + 3] = 0.01 * (b % 2);
    }
  }
  in->sumw = norm;
  in->sumw2.resize(norm.size());
  for (size_t i = 0; i < norm.size(); ++i) in->sumw2[i] = 0.1 * norm[i];
  in->data_obs.resize(B);
  for (int64_t b = 0; b < B; ++b) {
    double tot = 0.0;
    for (int64_t p = 0; p < P; ++p) tot += norm[b * P + p];
    in->data_obs[b] = std::round(tot * (1.0 + 0.1 * std::sin(1.7 * b)));
  }
  store_norm_logk(*in, norm, logk, W, sparse);
  in->has_meta = true;
  return in;
}

/// SmoothABCD on isomt_input() as the IsoMT variant places its regions, written out: A = relIso 1 at
/// mt 1, B = relIso 0 at mt 1, C = relIso 1 at mt 2, D = relIso 0 at mt 2; smoothing axis pt.
inline std::vector<std::string> smooth_abcd_arguments() {
  return {"pt",   "nonprompt", "ch",       "relIso:1", "mt:1", "ch",       "relIso:0",
          "mt:1", "ch",        "relIso:1", "mt:2",     "ch",   "relIso:0", "mt:2"};
}

/// SmoothExtendedABCD likewise (the command line gives Ax Bx A B C D; Ax, Bx at mt 0).
inline std::vector<std::string> smooth_extended_abcd_arguments() {
  return {"pt",   "nonprompt", "ch",       "relIso:1", "mt:0",     "ch",       "relIso:0",
          "mt:0", "ch",        "relIso:1", "mt:1",     "ch",       "relIso:0", "mt:1",
          "ch",   "relIso:1",  "mt:2",     "ch",       "relIso:0", "mt:2"};
}

}  // namespace rabbit::test
