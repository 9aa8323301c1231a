#pragma once
// The rabbit_fit run (docs/user-guide.md "The run"): load, prefit outputs, the fits in the order of -t,
// postfit quantities, the plain-HDF5 result file.
#include "rabbit/cli/options.hpp"

namespace rabbit::cli {

/// Runs the whole program for parsed options; throws rabbit::Error (and subclasses) on failure.
/// The result file exists under its final name only if this returns normally.
void run_fit(const FitOptions& options);

/// argv → exit code, with rabbit_fit's error handling: "rabbit_fit: error: <msg>" on stderr.
int rabbit_fit_main(int argc, const char* const* argv);

}  // namespace rabbit::cli
