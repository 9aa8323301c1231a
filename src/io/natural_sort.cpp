// rabbit.common.natural_sort_key: see rabbit/io/natural_sort.hpp.
#include "rabbit/io/natural_sort.hpp"

#include <algorithm>
#include <cctype>

namespace rabbit {

namespace {
struct NaturalPart {
  bool is_number;
  std::string text;  // lower-cased text, or the digit run without leading zeros
};

std::vector<NaturalPart> natural_key(const std::string& s) {
  // re.split(r"(\d+)") alternates text and digit runs, starting (possibly empty) with text.
  std::vector<NaturalPart> parts;
  std::string text;
  size_t i = 0;
  while (true) {
    text.clear();
    while (i < s.size() && !std::isdigit(static_cast<unsigned char>(s[i])))
      text.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(s[i++]))));
    parts.push_back({false, text});
    if (i >= s.size()) break;
    std::string digits;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) digits.push_back(s[i++]);
    const size_t nz = digits.find_first_not_of('0');
    parts.push_back({true, nz == std::string::npos ? "0" : digits.substr(nz)});
  }
  return parts;
}

int compare_part(const NaturalPart& a, const NaturalPart& b) {
  if (a.is_number) {  // positions alternate identically in both keys
    if (a.text.size() != b.text.size()) return a.text.size() < b.text.size() ? -1 : 1;
  }
  return a.text.compare(b.text) < 0 ? -1 : (a.text == b.text ? 0 : 1);
}
}  // namespace

bool natural_less(const std::string& a, const std::string& b) {
  const auto ka = natural_key(a), kb = natural_key(b);
  for (size_t i = 0; i < std::min(ka.size(), kb.size()); ++i) {
    const int c = compare_part(ka[i], kb[i]);
    if (c != 0) return c < 0;
  }
  return ka.size() < kb.size();
}

std::vector<std::string> natural_sorted(std::vector<std::string> names) {
  std::stable_sort(names.begin(), names.end(), natural_less);
  return names;
}

}  // namespace rabbit
