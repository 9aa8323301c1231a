#include "rabbit/io/json.hpp"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "rabbit/core/error.hpp"

namespace rabbit::io {

class JsonParser {
 public:
  explicit JsonParser(const std::string& text) : s_(text) {}

  Json document() {
    Json v = value();
    skip_ws();
    if (i_ != s_.size()) fail("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError("JSON: " + what + " at offset " + std::to_string(i_));
  }
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) ++i_;
  }
  char peek() {
    skip_ws();
    if (i_ >= s_.size()) fail("unexpected end");
    return s_[i_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  bool literal(const char* word) {
    const std::string w(word);
    if (s_.compare(i_, w.size(), w) != 0) return false;
    i_ += w.size();
    return true;
  }

  Json value() {
    const char c = peek();
    Json v;
    if (c == '{') {
      v.kind_ = Json::Kind::object;
      ++i_;
      if (peek() == '}') return ++i_, v;
      while (true) {
        if (peek() != '"') fail("expected a key");
        std::string key = string_literal();
        expect(':');
        v.object_.emplace_back(std::move(key), value());
        if (peek() == ',') {
          ++i_;
          continue;
        }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.kind_ = Json::Kind::array;
      ++i_;
      if (peek() == ']') return ++i_, v;
      while (true) {
        v.array_.push_back(value());
        if (peek() == ',') {
          ++i_;
          continue;
        }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.kind_ = Json::Kind::string;
      v.string_ = string_literal();
      return v;
    }
    if (literal("true")) {
      v.kind_ = Json::Kind::boolean;
      v.bool_ = true;
      return v;
    }
    if (literal("false")) {
      v.kind_ = Json::Kind::boolean;
      return v;
    }
    if (literal("null")) return v;
    v.kind_ = Json::Kind::number;
    if (literal("NaN")) {
      v.number_ = std::numeric_limits<double>::quiet_NaN();
    } else if (literal("Infinity")) {
      v.number_ = std::numeric_limits<double>::infinity();
    } else if (literal("-Infinity")) {
      v.number_ = -std::numeric_limits<double>::infinity();
    } else {
      const char* begin = s_.c_str() + i_;
      char* end = nullptr;
      v.number_ = std::strtod(begin, &end);
      if (end == begin) fail("unexpected character");
      i_ += static_cast<std::size_t>(end - begin);
    }
    return v;
  }

  void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  unsigned hex4() {
    if (i_ + 4 > s_.size()) fail("short \\u escape");
    unsigned cp = 0;
    for (int k = 0; k < 4; ++k) {
      const char h = s_[i_++];
      cp <<= 4;
      if (h >= '0' && h <= '9')
        cp |= static_cast<unsigned>(h - '0');
      else if (h >= 'a' && h <= 'f')
        cp |= static_cast<unsigned>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F')
        cp |= static_cast<unsigned>(h - 'A' + 10);
      else
        fail("bad \\u escape");
    }
    return cp;
  }
  std::string string_literal() {
    expect('"');
    std::string out;
    while (true) {
      if (i_ >= s_.size()) fail("unterminated string");
      const char c = s_[i_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) fail("unterminated escape");
      const char e = s_[i_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00 && s_.compare(i_, 2, "\\u") == 0) {  // surrogate pair
            i_ += 2;
            const unsigned low = hex4();
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          append_utf8(out, cp);
          break;
        }
        default:
          fail("bad escape");
      }
    }
  }

  const std::string& s_;
  std::size_t i_ = 0;
};

Json Json::parse(const std::string& text) {
  return JsonParser(text).document();
}

Json Json::parse_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("JSON: cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return parse(ss.str());
  } catch (const std::runtime_error& e) {
    throw InputError(path + ": " + e.what());
  }
}

namespace {
[[noreturn]] void kind_error(const char* wanted) {
  throw InputError(std::string("JSON: not a ") + wanted);
}
}  // namespace

double Json::number() const {
  if (kind_ != Kind::number) kind_error("number");
  return number_;
}
bool Json::boolean() const {
  if (kind_ != Kind::boolean) kind_error("boolean");
  return bool_;
}
const std::string& Json::string() const {
  if (kind_ != Kind::string) kind_error("string");
  return string_;
}
const std::vector<Json>& Json::array() const {
  if (kind_ != Kind::array) kind_error("array");
  return array_;
}
const std::vector<std::pair<std::string, Json>>& Json::object() const {
  if (kind_ != Kind::object) kind_error("object");
  return object_;
}

const Json* Json::find(const std::string& key) const {
  for (const auto& [k, v] : object())
    if (k == key) return &v;
  return nullptr;
}

const Json& Json::at(const std::string& key) const {
  if (const Json* v = find(key)) return *v;
  throw InputError("JSON: no member '" + key + "'");
}

std::size_t Json::size() const {
  if (kind_ == Kind::array) return array_.size();
  if (kind_ == Kind::object) return object_.size();
  kind_error("array or object");
}

std::vector<double> Json::flatten_numbers() const {
  std::vector<double> out;
  auto walk = [&out](const Json& j, auto&& self) -> void {
    if (j.kind_ == Kind::array) {
      for (const auto& e : j.array_) self(e, self);
    } else if (j.kind_ == Kind::null) {
      out.push_back(std::numeric_limits<double>::quiet_NaN());
    } else {
      out.push_back(j.number());
    }
  };
  walk(*this, walk);
  return out;
}

std::vector<std::string> Json::strings() const {
  std::vector<std::string> out;
  for (const auto& e : array()) out.push_back(e.string());
  return out;
}

}  // namespace rabbit::io
