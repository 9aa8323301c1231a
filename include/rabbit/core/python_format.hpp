#pragma once
// Python's text form of a float, for output that Python tools write the same way: rabbit's
// printed reports (docs/user-guide.md "Reports") and the category labels rabbit makes from float values
// with numpy's astype(str) (docs/output-format.md).
#include <string>

namespace rabbit {

/// Python's repr of a float (numpy's str of a float64 is the same): the shortest round-trip
/// digits, fixed notation for decimal exponents -4..15, else "1e-05" style; "nan", "inf", "-inf".
std::string python_repr(double value);

/// Python's str(datetime.datetime.now()): local time as "YYYY-MM-DD HH:MM:SS.ffffff".
std::string python_datetime_now();

}  // namespace rabbit
