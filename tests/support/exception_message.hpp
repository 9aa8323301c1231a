#pragma once
// The message of the exception a call throws, for tests that check an error's one line.
#include <functional>
#include <string>
#include <typeinfo>

namespace rabbit::test {

/// What fn throws as an E, or "no " + the name of E's type when it throws nothing (another exception
/// passes through).
template <class E>
std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  return "no " + std::string(typeid(E).name());
}

}  // namespace rabbit::test
