#pragma once
// --computeSaturatedProjectionTests (docs/output-format.md "Saturated projection tests"): after each
// postfit, for every -m Project mapping, a second fit with a free normalisation per projected bin
// (postfit/saturated_projection.hpp) and chi2 = 2·(nllvalreduced − its reduced NLL), written into
// the mapping's group as rabbit does (ndf_saturated, chi2_saturated, edmval_saturated).
#include <Eigen/Core>
#include <map>
#include <memory>
#include <string>

#include "fit_context.hpp"
#include "fit_session.hpp"
#include "rabbit/postfit/mapping.hpp"
#include "rabbit/postfit/result_tree.hpp"

namespace rabbit::cli {

class SaturatedProjectionTests {
 public:
  /// Builds one saturated model and fitter per distinct Project mapping of -m, before any fit, so
  /// that what rabbit cannot fit is refused up front (OptionError naming the option and mapping).
  explicit SaturatedProjectionTests(FitContext& nominal);
  ~SaturatedProjectionTests();

  /// After the nominal fit of the current data set ended at x: the saturated fit of `mapping`
  /// (nothing for a mapping that is not one of the Project mappings), written into `group`.
  void write(const postfit::Mapping& mapping, result::Group group, const Eigen::VectorXd& x);

 private:
  struct Saturated;  // the saturated model's context, fit session and number of free normalisations
  void copy_fit_state(Saturated& s) const;

  FitContext& nominal_;
  std::map<std::string, std::unique_ptr<Saturated>> by_key_;
};

}  // namespace rabbit::cli
