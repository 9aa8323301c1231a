#pragma once
// The data sets that the fits of a run see (docs/user-guide.md "The list of fits"): the observed
// data, or with --pseudoData the selected pseudodata columns. Shared by rabbit_fit and rabbit_limit,
// which both loop over the fits of -t and, inside, over these sets.
#include <Eigen/Core>
#include <string>
#include <vector>

#include "rabbit/cli/options.hpp"
#include "rabbit/io/fit_input_data.hpp"

namespace rabbit::cli {

// One data set to fit: the observed data (name empty), or one pseudodata column.
struct DataSet {
  std::string name;
  Eigen::VectorXd values, variances;  // variances empty when the input has none
};

/// The observed data, or the selected pseudodata columns (in file order); throws InputError when
/// --pseudoData is given and the input has no pseudodata sets.
std::vector<DataSet> fit_data_sets(const FitOptions& o, const FitInputData& input);

/// The fits of -t in order: -1 (Asimov), 0 (data), N ≥ 1 expanded to the toys 1..N.
std::vector<int64_t> fit_indices(const std::vector<int64_t>& toys);

/// The result group of one fit of one data set: results, results_asimov, results_toyK, each with
/// _<pseudodata name> for a pseudodata set (docs/output-format.md "File tree").
std::string fit_group_name(int64_t fit, const DataSet& data);

}  // namespace rabbit::cli
