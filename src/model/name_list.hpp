#pragma once
// Comma-separated names of the --paramModel arguments, split as rabbit splits them: Python's
// `s.split(",")` (empty pieces kept), and for the Axis-type models each piece stripped as well
// (rabbit strips there and not in Mixture; docs/model.md "Param models").
#include <string>
#include <vector>

namespace rabbit {

enum class Blanks { keep, strip };

inline std::vector<std::string> split_commas(const std::string& s, Blanks blanks) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t pos = s.find(',', start);
    out.push_back(s.substr(start, pos == std::string::npos ? std::string::npos : pos - start));
    if (pos == std::string::npos) break;
    start = pos + 1;
  }
  if (blanks == Blanks::strip)
    for (auto& t : out) {
      const auto b = t.find_first_not_of(" \t"), e = t.find_last_not_of(" \t");
      t = b == std::string::npos ? std::string() : t.substr(b, e - b + 1);
    }
  return out;
}

}  // namespace rabbit
