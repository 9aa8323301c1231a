#pragma once
// Channel axes as the reader decodes them (AxisInfo, docs/input-reader.md "Per axis"), built the
// way hist/boost-histogram build them, for the TensorWriter and tests (docs/tensor-writer.md).
#include <cstdint>
#include <string>
#include <vector>

#include "rabbit/io/fit_input_data.hpp"

namespace rabbit {

/// Factories for channel axes (AxisInfo as the reader decodes them). Flow flags follow
/// hist/boost-histogram defaults: regular/variable/integer axes have under- and overflow,
/// category axes an overflow bin, boolean axes none.
namespace axis {
AxisInfo regular(int64_t bins, double start, double stop, std::string name, bool underflow = true,
                 bool overflow = true, std::string label = "");
AxisInfo variable(std::vector<double> edges, std::string name, bool underflow = true, bool overflow = true,
                  std::string label = "");
AxisInfo integer(int64_t start, int64_t stop, std::string name, bool underflow = true, bool overflow = true,
                 std::string label = "");
AxisInfo str_category(std::vector<std::string> categories, std::string name, bool overflow = true,
                      std::string label = "");
AxisInfo int_category(std::vector<int64_t> categories, std::string name, bool overflow = true,
                      std::string label = "");
AxisInfo boolean(std::string name, std::string label = "");
/// Bin centres of the regular bins (regular, variable, integer, boolean axes).
std::vector<double> centers(const AxisInfo& axis);
}  // namespace axis

}  // namespace rabbit
