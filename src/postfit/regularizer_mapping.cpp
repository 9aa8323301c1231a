#include "rabbit/postfit/regularizer_mapping.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <string_view>

#include "rabbit/core/error.hpp"
#include "rabbit/postfit/mapping.hpp"

namespace rabbit::postfit {

ObservableMapping regularizer_mapping(const FitInputData& input, const std::vector<std::string>& tokens) {
  const std::string given = fmt::format("{}", fmt::join(tokens, " "));
  std::unique_ptr<Mapping> mapping;
  try {
    mapping = make_mapping(input, tokens);
  } catch (const OptionError& e) {
    // The mapping's own message names -m; the same mistake here is one of -r.
    std::string what = e.what();
    if (what.rfind("-m ", 0) == 0) what = what.substr(3);
    throw OptionError(fmt::format("-r/--regularization SVD {}", what));
  }
  // The penalty's curvature in ν is Aᵀ ∇²_y A only for a constant A (docs/model.md "The regularisation
  // term").
  static constexpr std::array<std::string_view, 3> linear = {"BaseMapping", "Select", "Project"};
  if (std::find(linear.begin(), linear.end(), mapping->name()) == linear.end())
    throw OptionError(
        fmt::format("-r/--regularization SVD {}: mapping {} is not linear in the yields; supported: {}",
                    given, mapping->name(), fmt::join(linear, ", ")));
  if (mapping->needs_processes() || !mapping->process_selection().empty())
    throw OptionError(
        fmt::format("-r/--regularization SVD {}: a mapping that selects processes is not supported (the "
                    "penalty reads the "
                    "yields summed over processes)",
                    given));
  const auto& channels = mapping->channels();
  if (channels.size() != 1)
    throw OptionError(fmt::format(
        "-r/--regularization SVD {}: the mapping gives {} channels; a regulariser takes one (use one -r per "
        "channel)",
        given, channels.size()));
  ObservableMapping out;
  out.description = given;
  const ChannelInfo& ch = channels.front();
  for (const auto& a : ch.axes) out.shape.push_back(ch.flow ? a.extent() : a.size);
  // A channel without axes is one axis of its bins (docs/model.md "Corner cases"); a Project onto no axis
  // keeps none, which the regulariser refuses (rabbit's SVD takes 1 to 3 dimensions).
  if (out.shape.empty() && mapping->name() != "Project") out.shape.push_back(ch.nbins());
  out.matrix = mapping->jacobian(Eigen::VectorXd::Ones(input.nbinsfull));
  out.matrix.makeCompressed();
  return out;
}

}  // namespace rabbit::postfit
