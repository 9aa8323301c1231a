#pragma once
// What a regulariser on the predicted yields reads (docs/model.md "The regularisation term"): y = A ν_full
// with A constant [cells × B_f], the cells in row-major order of `shape`. Built outside the model library
// from a postfit mapping (src/postfit/regularizer_mapping.cpp, handed over by the CLI as
// ModelOptions::regularizer_mapping), because the model library sits below src/postfit.
#include <Eigen/SparseCore>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace rabbit {

struct FitInputData;

struct ObservableMapping {
  std::string description;     // the mapping as given on the command line, for messages
  std::vector<int64_t> shape;  // the output histogram's axes (flow bins included where the channel has them)
  Eigen::SparseMatrix<double, Eigen::RowMajor> matrix;  // A [cells × nbinsfull]
};

/// Builds the mapping of one -r occurrence from its tokens (mapping name and arguments); throws OptionError
/// naming -r/--regularization for mappings a regulariser cannot read.
using ObservableMappingBuilder =
    std::function<ObservableMapping(const FitInputData& input, const std::vector<std::string>& tokens)>;

}  // namespace rabbit
