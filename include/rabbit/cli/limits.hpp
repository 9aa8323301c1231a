#pragma once
// The rabbit_limit run (docs/user-guide.md "rabbit_limit"): asymptotic CLs upper limits on parameters,
// expected bands from the Asimov dataset and observed limits from data, in rabbit_limit.py's layout.
namespace rabbit::cli {

/// argv → exit code, with rabbit_fit's error handling: "rabbit_limit: error: <msg>" on stderr.
int rabbit_limit_main(int argc, const char* const* argv);

}  // namespace rabbit::cli
