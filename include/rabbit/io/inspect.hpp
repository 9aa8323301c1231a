#pragma once
// Human-readable summary and sanity diagnostics of a fit tensor (rabbit_inspect), the checks of
// upstream's rabbit_debug_inputdata.py plus a few more (zero or negative yields, data in bins
// without prediction, empty bins with data). See docs/tensor-writer.md.
#include <ostream>
#include <string>
#include <vector>

#include "rabbit/io/fit_input_data.hpp"

namespace rabbit::inspect {

struct DiagnoseOptions {
  double low_data_threshold = 10.0;  // observed count below which a bin is reported
  double low_yield_threshold = 1.0;  // total expected yield below which a bin is reported
  double rel_stat_threshold = 1.0;   // sqrt(sumw2)/sumw above which a bin is reported
  double extreme_ratio = 2.0;        // variation/nominal above this or below 1/this
  size_t max_listed = 10;            // details printed per check
};

/// One check: `ok` when nothing was found; otherwise `count` findings and up to max_listed lines.
struct Diagnostic {
  std::string title;
  bool ok = true;
  size_t count = 0;
  std::vector<std::string> details;
};

std::vector<Diagnostic> diagnose(const FitInputData& data, const DiagnoseOptions& options = {});

/// Channels (axes, bins, ranges), processes, systematics, groups, NOIs, pseudodata, externals.
void print_summary(std::ostream& out, const FitInputData& data);
void print_diagnostics(std::ostream& out, const std::vector<Diagnostic>& diagnostics);

/// "x[3]" style label of bin `bin` (full bin axis) within its channel: "ch1 (a=2, b=0)".
std::string bin_label(const FitInputData& data, int64_t bin);

}  // namespace rabbit::inspect
