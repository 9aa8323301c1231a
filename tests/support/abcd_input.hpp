#pragma once
// An in-memory input laid out as rabbit's ABCD tests lay theirs out (docs/model.md "Bin-dependent param
// models"): channel "fakes" with axes iso(2) × pt(2) (regions A = iso:0 and B = iso:1), channels "ch_C" and
// "ch_D" with axis pt(2), and a masked channel "ch_D_masked" pt(2); processes signal (in C and D),
// nonprompt (everywhere) and ewk; two systematics. Everything deterministic.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "rabbit/io/fit_input_data.hpp"

namespace rabbit::test {

/// Stores norm [rows × P] and logk [rows × P × W] in `in`: as they are, or (sparse) in rabbit's sparse
/// layout with the entries of zero norm and the zero logk values left out.
inline void store_norm_logk(FitInputData& in, const std::vector<double>& norm,
                            const std::vector<double>& logk, int64_t W, bool sparse) {
  if (!sparse) {
    in.norm = norm;
    in.logk = logk;
    return;
  }
  in.logk_sparse.rowptr.push_back(0);
  for (int64_t i = 0; i < static_cast<int64_t>(norm.size()); ++i) {
    if (norm[i] == 0.0) continue;
    in.norm.push_back(norm[i]);
    in.norm_index.push_back(i);
    for (int64_t w = 0; w < W; ++w) {
      if (logk[i * W + w] == 0.0) continue;
      in.logk_sparse.cols.push_back(static_cast<int32_t>(w));
      in.logk_sparse.values.push_back(logk[i * W + w]);
    }
    in.logk_sparse.rowptr.push_back(static_cast<int64_t>(in.logk_sparse.cols.size()));
  }
}

/// sparse: the same input with sparse tensors (the zero signal entries of A and B left out).
inline std::shared_ptr<FitInputData> abcd_input(bool sparse = false) {
  auto in = std::make_shared<FitInputData>();
  in->filename = "abcd.hdf5";
  in->procs = {"signal", "nonprompt", "ewk"};
  in->signals = {"signal"};
  in->systs = {"lumi", "shape"};
  in->constraintweights = Eigen::Vector2d(1.0, 1.0);
  const int64_t B = 8, Bf = 10, P = 3, S = 2, W = 2 * S;
  in->nbins = B;
  in->nbinsmasked = Bf - B;
  in->nbinsfull = Bf;
  in->nproc = P;
  in->nsyst = S;
  in->nsignals = 1;
  in->sparse = sparse;
  auto axis = [](const std::string& name, int64_t size) {
    AxisInfo a;
    a.kind = "regular";
    a.name = name;
    a.size = size;
    return a;
  };
  auto channel = [&](const std::string& name, std::vector<AxisInfo> axes, int64_t start, bool masked) {
    ChannelInfo c;
    c.name = name;
    c.axes = std::move(axes);
    c.start = start;
    int64_t n = 1;
    for (const auto& a : c.axes) n *= a.size;
    c.stop = start + n;
    c.masked = masked;
    return c;
  };
  in->channels = {channel("fakes", {axis("iso", 2), axis("pt", 2)}, 0, false),
                  channel("ch_C", {axis("pt", 2)}, 4, false), channel("ch_D", {axis("pt", 2)}, 6, false),
                  channel("ch_D_masked", {axis("pt", 2)}, 8, true)};
  // nonprompt: A ~ 40, B ~ 80, C ~ 30, D ~ 15 (A·C/B ≈ D); signal in C and D; ewk everywhere
  const double nonprompt[] = {40, 44, 80, 86, 30, 27, 15, 14, 15, 14};
  std::vector<double> norm(Bf * P), logk(Bf * P * W, 0.0);
  for (int64_t b = 0; b < Bf; ++b) {
    norm[b * P + 0] = b >= 4 ? 20.0 + 3.0 * b : 0.0;
    norm[b * P + 1] = nonprompt[b];
    norm[b * P + 2] = 5.0 + 0.5 * b;
    for (int64_t p = 0; p < P; ++p) {
      if (norm[b * P + p] == 0.0) continue;
      const double up = 0.02 * (1 + p) + 0.01 * (b % 3), down = -0.015 * (1 + p) + 0.004 * b;
      // [bin, process, 2, syst]: the average then the half-difference of each systematic
      logk[(b * P + p) * W + 0] = up;
      logk[(b * P + p) * W + 1] = 0.03 * (p == 1 ? 1.0 : -0.5) * (1 + 0.1 * b);
      logk[(b * P + p) * W + 2] = down;
      logk[(b * P + p) * W + 3] = 0.01 * (b % 2);
    }
  }
  in->sumw = norm;
  in->sumw2.resize(norm.size());
  for (size_t i = 0; i < norm.size(); ++i) in->sumw2[i] = 0.1 * norm[i];
  in->data_obs.resize(B);
  const double pull[] = {1.1, 0.9, 1.05, 0.97, 1.2, 0.8, 1.1, 1.3};
  for (int64_t b = 0; b < B; ++b) {
    double tot = 0.0;
    for (int64_t p = 0; p < P; ++p) tot += norm[b * P + p];
    in->data_obs[b] = std::round(tot * pull[b]);
  }
  store_norm_logk(*in, norm, logk, W, sparse);
  in->has_meta = true;
  return in;
}

/// The ABCD arguments of rabbit's tests for abcd_input(): nonprompt, A = fakes iso:0, B = fakes iso:1,
/// C = ch_C, D = ch_D.
inline std::vector<std::string> abcd_arguments() {
  return {"nonprompt", "fakes", "iso:0", "fakes", "iso:1", "ch_C", "ch_D"};
}

}  // namespace rabbit::test
