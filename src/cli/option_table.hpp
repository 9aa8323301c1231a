#pragma once
// The table of rabbit_fit's options (docs/user-guide.md "Options"): one row per upstream option with
// its names, destination, how it takes values, its default as recorded in the result file, its
// choices, what this release does with it, and its help text. The parser, the help text and the
// recorded options are all generated from this table, in its order.
#include <string>
#include <vector>

namespace rabbit::cli::detail {

// How an option takes its values (argparse nargs/action, docs/user-guide.md "Command-line rules").
enum class Kind { flag, scalar, list_plus, list_star, append, append_pair, optional_scalar };
enum class Type { str, integer, real };
// implemented: works end to end; refused: parsed, then "not implemented yet"; ignored: TF-only.
enum class Tier { implemented, refused, ignored };

struct Spec {
  std::string names;  // CLI11 name string, e.g. "-o,--outpath"
  std::string dest;
  Kind kind;
  Type type;
  std::string default_json;
  std::vector<std::string> choices;
  Tier tier;
  std::string help;
};

/// Every option, in upstream's help order.
const std::vector<Spec>& specs();

/// The long name without dashes ("outpath" for "-o,--outpath").
std::string long_name(const Spec& s);

}  // namespace rabbit::cli::detail
