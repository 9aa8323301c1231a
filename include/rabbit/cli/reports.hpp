#pragma once
// Text reports on a result file (docs/user-guide.md "Reports"), with upstream's columns and the
// number format of Python's str(round(v, 5)).
#include <string>

namespace rabbit::cli {

/// Python's str(round(v, ndigits)): correctly rounded, then the shortest repr in Python's style
/// ("1.0", "1e-05", "nan", "-inf").
std::string python_round_str(double v, int ndigits = 5);
/// Python's repr of a float (shortest round-trip, Python's exponent rules).
std::string python_repr(double v);

int print_pulls_main(int argc, const char* const* argv);
int print_impacts_main(int argc, const char* const* argv);

}  // namespace rabbit::cli
