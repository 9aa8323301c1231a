// The saturated model of a Project mapping as extra free systematics (saturated_projection.hpp;
// docs/output-format.md "Saturated projection tests").
#include "rabbit/postfit/saturated_projection.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "rabbit/core/error.hpp"

namespace rabbit::postfit {

BinGroups projection_groups(const FitInputData& input, const Mapping& mapping) {
  const std::string what = fmt::format("--computeSaturatedProjectionTests: -m {}", mapping.key());
  if (mapping.name() != "Project" || mapping.channels().size() != 1)
    throw OptionError(what + ": only Project mappings have a saturated test");
  const ChannelInfo& out = mapping.channels().front();
  // rabbit's SaturatedProjectModel leaves a masked channel's parameters out of the likelihood, and
  // fails for a projection without kept axes (a float slice) and for channels with flow bins (its
  // reshape counts regular bins only); each is refused here rather than run differently.
  if (out.masked)
    throw OptionError(what + ": channel " + out.name + " is masked (it has no data to saturate)");
  if (out.flow)
    throw OptionError(what + ": channel " + out.name +
                      " has flow bins, which rabbit's saturated model does not cover");
  if (out.axes.empty())
    throw OptionError(what + ": a projection without kept axes has no saturated test in rabbit");

  BinGroups groups;
  groups.group_of_bin.assign(static_cast<size_t>(input.nbinsfull), -1);
  // Project is linear: ∂y/∂ν has one 1 per channel bin, in the row of the output bin it is summed into.
  const MappingJacobian jac = mapping.jacobian(Eigen::VectorXd::Ones(input.nbinsfull));
  for (int64_t i = 0; i < jac.outerSize(); ++i)
    for (MappingJacobian::InnerIterator it(jac, i); it; ++it) groups.group_of_bin[it.col()] = i;

  // Output bins are row-major over the kept axes in the order given (project_mapping.cpp), as
  // itertools.product enumerates rabbit's names.
  const int64_t n = mapping.size();
  std::vector<int64_t> index(out.axes.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    std::string label;
    for (size_t a = 0; a < out.axes.size(); ++a)
      label += fmt::format("{}{}{}", a ? "_" : "", out.axes[a].name, index[a]);
    groups.names.push_back(fmt::format("saturated_{}_{}", out.name, label));
    for (size_t a = out.axes.size(); a-- > 0;) {
      if (++index[a] < out.axes[a].size) break;
      index[a] = 0;
    }
  }
  return groups;
}

FitInputData with_free_group_scales(const FitInputData& held, const BinGroups& groups) {
  // the extended tensor is built in double (docs/input-reader.md "Precision")
  FitInputData promoted;
  if (held.logk_float32) promoted = with_double_logk(held);
  const FitInputData& input = held.logk_float32 ? promoted : held;
  if (input.systematic_type == SystematicType::normal)
    throw OptionError(fmt::format(
        "--computeSaturatedProjectionTests: {} has systematic_type normal, whose additive variations a free "
        "normalisation per projected bin cannot be added to",
        input.filename));
  if (input.ranged)
    throw OptionError("--computeSaturatedProjectionTests needs a full read of " + input.filename);
  for (const auto& name : groups.names)
    if (std::find(input.systs.begin(), input.systs.end(), name) != input.systs.end() ||
        std::find(input.procs.begin(), input.procs.end(), name) != input.procs.end())
      throw OptionError(fmt::format("--computeSaturatedProjectionTests: {} already has a parameter named {}",
                                    input.filename, name));

  const int64_t G = groups.size(), S = input.nsyst, P = input.nproc;
  FitInputData out = input;
  out.systs.insert(out.systs.end(), groups.names.begin(), groups.names.end());
  out.systsnoconstraint.insert(out.systsnoconstraint.end(), groups.names.begin(), groups.names.end());
  out.constraintweights.conservativeResize(S + G);
  out.constraintweights.tail(G).setZero();  // unconstrained (docs/likelihood.md "Defaults, constraints...")
  out.nsyst = S + G;
  out.nsystnoconstraint = input.nsystnoconstraint + G;

  if (!input.sparse) {
    // [nbinsfull, nproc, (2,) nsyst] row-major: per (bin, process) the κᵃ (or κ) block, then κᵈ.
    const int64_t halves = input.symmetric_tensor ? 1 : 2;
    out.logk.assign(static_cast<size_t>(input.nbinsfull * P * halves * (S + G)), 0.0);
    for (int64_t b = 0; b < input.nbinsfull; ++b)
      for (int64_t p = 0; p < P; ++p) {
        const int64_t row = b * P + p;
        for (int64_t h = 0; h < halves; ++h)
          std::copy_n(input.logk.begin() + (row * halves + h) * S, S,
                      out.logk.begin() + (row * halves + h) * (S + G));
        const int64_t g = groups.group_of_bin[static_cast<size_t>(b)];
        if (g >= 0) out.logk[static_cast<size_t>(row * halves * (S + G) + S + g)] = 1.0;
      }
    return out;
  }
  // Sparse: per norm entry the κᵃ columns (< nsyst), the new one, then the κᵈ columns shifted by G.
  const SparseLogk& in = input.logk_sparse;
  SparseLogk& k = out.logk_sparse;
  k.rowptr.assign(1, 0);
  k.cols.clear();
  k.values.clear();
  for (size_t i = 0; i + 1 < in.rowptr.size(); ++i) {
    const int64_t b = input.norm_index[i] / P;
    const int64_t g = groups.group_of_bin[static_cast<size_t>(b)];
    for (int64_t e = in.rowptr[i]; e < in.rowptr[i + 1]; ++e)
      if (in.cols[e] < S) {
        k.cols.push_back(in.cols[e]);
        k.values.push_back(in.values[e]);
      }
    if (g >= 0) {
      k.cols.push_back(static_cast<int32_t>(S + g));
      k.values.push_back(1.0);
    }
    for (int64_t e = in.rowptr[i]; e < in.rowptr[i + 1]; ++e)
      if (in.cols[e] >= S) {
        k.cols.push_back(static_cast<int32_t>(in.cols[e] + G));
        k.values.push_back(in.values[e]);
      }
    k.rowptr.push_back(static_cast<int64_t>(k.cols.size()));
  }
  return out;
}

}  // namespace rabbit::postfit
