#pragma once
// A small JSON reader for what Python tools write (upstream rabbit's results dumped as JSON, read by
// rabbit_compare and the tests): objects, arrays, strings (with \uXXXX escapes, encoded as UTF-8),
// numbers, true/false/null, and the non-standard NaN / Infinity / -Infinity that Python's json
// module writes. Object keys keep file order.
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace rabbit::io {

class Json {
 public:
  enum class Kind { null, boolean, number, string, array, object };

  /// Parses a whole document; InputError (a std::runtime_error) naming the offset on malformed input.
  static Json parse(const std::string& text);
  static Json parse_file(const std::string& path);

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::null; }
  bool is_number() const { return kind_ == Kind::number; }
  bool is_string() const { return kind_ == Kind::string; }
  bool is_array() const { return kind_ == Kind::array; }
  bool is_object() const { return kind_ == Kind::object; }

  /// Typed access; InputError on a kind mismatch.
  double number() const;
  bool boolean() const;
  const std::string& string() const;
  const std::vector<Json>& array() const;
  const std::vector<std::pair<std::string, Json>>& object() const;

  /// Object member or nullptr.
  const Json* find(const std::string& key) const;
  /// Object member; InputError naming the key if absent.
  const Json& at(const std::string& key) const;
  const Json& operator[](std::size_t index) const { return array().at(index); }
  std::size_t size() const;

  /// All numbers of a nested array in row-major order (null entries become NaN).
  std::vector<double> flatten_numbers() const;
  /// A flat array of strings.
  std::vector<std::string> strings() const;

 private:
  friend class JsonParser;
  Kind kind_ = Kind::null;
  bool bool_ = false;
  double number_ = 0.0;
  std::string string_;
  std::vector<Json> array_;
  std::vector<std::pair<std::string, Json>> object_;
};

}  // namespace rabbit::io
