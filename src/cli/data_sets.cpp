// docs/user-guide.md "The list of fits": the data sets and the fits of a run, in upstream's order.
#include "data_sets.hpp"

#include <algorithm>

#include "rabbit/core/error.hpp"

namespace rabbit::cli {

std::vector<DataSet> fit_data_sets(const FitOptions& o, const FitInputData& input) {
  std::vector<DataSet> datasets;
  if (!o.pseudo_data) {
    datasets.push_back({"", input.data_obs, input.data_var ? *input.data_var : Eigen::VectorXd()});
    return datasets;
  }
  std::vector<int64_t> cols;
  if (o.pseudo_data->empty()) {
    for (size_t i = 0; i < input.pseudodatanames.size(); ++i) cols.push_back(static_cast<int64_t>(i));
  } else {
    for (const auto& n : *o.pseudo_data) cols.push_back(input.pseudodata_index(n));
    std::sort(cols.begin(), cols.end());
  }
  if (cols.empty())
    throw InputError(o.filename + ": --pseudoData given but the input has no pseudodata sets");
  for (size_t j = 0; j < cols.size(); ++j) {
    DataSet d{input.pseudodatanames[cols[j]], input.pseudodata.col(cols[j]), Eigen::VectorXd()};
    if (input.pseudodatavar) d.variances = input.pseudodatavar->col(cols[j]);
    datasets.push_back(d);
  }
  return datasets;
}

std::vector<int64_t> fit_indices(const std::vector<int64_t>& toys) {
  std::vector<int64_t> fits;
  for (auto t : toys) {
    if (t <= 0) fits.push_back(t);
    for (int64_t k = 1; k <= t; ++k) fits.push_back(k);
  }
  return fits;
}

std::string fit_group_name(int64_t fit, const DataSet& data) {
  std::string name = "results";
  if (fit == -1) name += "_asimov";
  if (fit >= 1) name += "_toy" + std::to_string(fit);
  if (!data.name.empty()) name += "_" + data.name;
  return name;
}

}  // namespace rabbit::cli
