#pragma once
// rabbit_compare: two fit results (result files in any layout ResultReader reads, or upstream's
// results as reference JSON) compared quantity by quantity with the tolerances of
// docs/validation.md; options in docs/user-guide.md "rabbit_compare".
#include <ostream>

namespace rabbit::cli {

/// Exit codes: 0 every compared entry within tolerance, 1 something beyond tolerance or present on
/// one side only, 2 bad input (options, unreadable or unrecognised files, nothing to compare).
int compare_main(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace rabbit::cli
