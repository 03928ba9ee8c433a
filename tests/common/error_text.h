// error_text<E>(f): the message of the exception of type E that f throws ("<no error>" if none),
// for tests that check what an error says.
#pragma once
#include <string>

namespace loom::test {

template <typename E, typename F>
std::string error_text(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace loom::test
