#include "argparse_compat.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "rabbit/core/error.hpp"

namespace rabbit::cli::detail {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20)
          out += fmt::format("\\u{:04x}", c);
        else
          out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

int64_t to_int(const std::string& opt, const std::string& v) {
  int64_t out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || p != v.data() + v.size())
    throw OptionError(fmt::format("argument --{}: invalid int value: '{}'", opt, v));
  return out;
}

double to_real(const std::string& opt, const std::string& v) {
  try {
    size_t used = 0;
    double d = std::stod(v, &used);
    if (used == v.size()) return d;
  } catch (const std::exception&) {
    // An out-of-range or non-numeric value: the error below names it.
  }
  std::string lower = v;
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  if (lower == "nan") return std::nan("");
  if (lower == "inf" || lower == "+inf") return INFINITY;
  if (lower == "-inf") return -INFINITY;
  throw OptionError(fmt::format("argument --{}: invalid float value: '{}'", opt, v));
}

std::string json_number(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  std::string s = fmt::format("{}", d);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

std::string json_value(const Spec& s, const std::string& v) {
  switch (s.type) {
    case Type::integer:
      return std::to_string(to_int(long_name(s), v));
    case Type::real:
      return json_number(to_real(long_name(s), v));
    default:
      return json_string(v);
  }
}

std::string json_list(const Spec& s, const std::vector<std::string>& vs) {
  std::string out = "[";
  for (size_t i = 0; i < vs.size(); ++i) out += (i ? ", " : "") + json_value(s, vs[i]);
  return out + "]";
}

std::string quote_arg(const std::string& a) {
  if (!a.empty() &&
      a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=/.,:@%") ==
          std::string::npos)
    return a;
  std::string out = "'";
  for (char c : a) out += (c == '\'') ? std::string("'\"'\"'") : std::string(1, c);
  return out + "'";
}

std::vector<std::string> expand_prefixes(const std::vector<std::string>& args,
                                         const std::set<std::string>& longs) {
  std::vector<std::string> out;
  for (const auto& a : args) {
    if (a.size() > 2 && a.rfind("--", 0) == 0) {
      auto eq = a.find('=');
      std::string name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      if (!longs.count(name)) {
        std::vector<std::string> matches;
        for (const auto& l : longs)
          if (l.rfind(name, 0) == 0) matches.push_back(l);
        if (matches.size() > 1) {
          std::string list;
          for (const auto& m : matches) list += (list.empty() ? "--" : ", --") + m;
          throw OptionError(fmt::format("ambiguous option: --{} could match {}", name, list));
        }
        if (matches.size() == 1) {
          out.push_back("--" + matches[0] + (eq == std::string::npos ? "" : a.substr(eq)));
          continue;
        }
      }
    }
    out.push_back(a);
  }
  return out;
}

}  // namespace rabbit::cli::detail
