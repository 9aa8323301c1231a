#pragma once
// The options that change the model or the NLL (docs/model.md "Entry point"). Filled by the CLI, consumed by
// build_model(); defaults are rabbit's.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "rabbit/model/observable_mapping.hpp"

namespace rabbit {

enum class DataLikelihood { poisson, chisq, covariance };
enum class BBType { automatic, gamma, normal_additive, normal_multiplicative };
enum class BBMode { lite, full };

/// One --paramModel occurrence: a name and its arguments (e.g. Mixture "a1,a2" "c1,c2").
struct ParamModelSpec {
  std::string name = "Mu";
  std::vector<std::string> args;
};

/// One -r/--regularization occurrence: the regulariser name and its mapping arguments.
struct RegularizationSpec {
  std::string name;
  std::vector<std::string> mapping;
};

struct ModelOptions {
  std::vector<ParamModelSpec> param_models;  // empty means {Mu}
  std::vector<std::pair<std::string, double>> expect_signal;
  bool allow_negative_param = false;
  std::vector<std::pair<std::string, double>> set_constraint_minimum;
  std::vector<std::string> freeze_parameters;  // exact names or full-match regexes
  double prefit_unconstrained_nuisance_uncertainty = 0.0;

  DataLikelihood likelihood = DataLikelihood::poisson;
  bool bin_by_bin_stat = true;
  BBType bb_type = BBType::automatic;
  BBMode bb_mode = BBMode::lite;
  double min_bb_kstat = 0.0;

  std::vector<RegularizationSpec> regularization;
  double regularization_strength = 0.0;  // tau
  // Builds the mapping of each -r occurrence (the CLI hands over postfit::regularizer_mapping); needed
  // when `regularization` is not empty.
  ObservableMappingBuilder regularizer_mapping;

  /// Blinding (docs/model.md "Blinding"): whether any fit of the run is blinded, what to unblind and
  /// which groups share offsets. Offsets are only switched on for blinded fits.
  bool blinding_active = false;
  std::vector<std::string> unblind;
  std::vector<std::string> blinding_groups;
};

}  // namespace rabbit
