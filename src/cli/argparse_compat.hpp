#pragma once
// What rabbit_fit takes over from Python's argparse and json so that rabbit command lines and
// recorded options read the same (docs/user-guide.md "Command-line rules"; docs/output-format.md
// "File tree"): unique prefixes of long options, argparse's value errors, the JSON spelling of the
// recorded values, and the shell quoting of the recorded command.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "option_table.hpp"

namespace rabbit::cli::detail {

/// A JSON string literal.
std::string json_string(const std::string& s);
/// The value as argparse's int(): OptionError "argument --OPT: invalid int value: 'V'" otherwise.
int64_t to_int(const std::string& opt, const std::string& v);
/// The value as argparse's float() (nan, inf, -inf included): OptionError otherwise.
double to_real(const std::string& opt, const std::string& v);
/// A number as Python's json.dumps writes it (NaN, Infinity, a ".0" for whole numbers).
std::string json_number(double d);
/// One value of option s in JSON, converted by the option's type.
std::string json_value(const Spec& s, const std::string& v);
/// A list of values of option s in JSON.
std::string json_list(const Spec& s, const std::vector<std::string>& vs);
/// The argument as typed into a POSIX shell (quoted when it holds special characters).
std::string quote_arg(const std::string& a);
/// argparse accepts unique prefixes of long options; CLI11 does not, so expand them first.
/// Ambiguous prefixes are an OptionError listing the candidates.
std::vector<std::string> expand_prefixes(const std::vector<std::string>& args,
                                         const std::set<std::string>& longs);

}  // namespace rabbit::cli::detail
