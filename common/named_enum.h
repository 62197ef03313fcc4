// Settings that take one of a few named values (agent, replay, exploration):
// one table of names per enum gives its parse and name functions, and a bad
// name is refused with the valid ones listed.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace tensortier {

template <typename E>
struct EnumName {
  E value;
  const char* name;
};

// "a, b or c": the names of `table`, for help texts and errors.
template <typename E, size_t N>
std::string EnumChoices(const EnumName<E> (&table)[N]) {
  std::string out;
  for (size_t i = 0; i < N; ++i) out += std::string(i == 0 ? "" : i + 1 == N ? " or " : ", ") + table[i].name;
  return out;
}

// The value named `text`; throws std::invalid_argument naming `what` and the
// valid choices.
template <typename E, size_t N>
E ParseEnumName(const EnumName<E> (&table)[N], const std::string& what, const std::string& text) {
  for (const EnumName<E>& e : table)
    if (text == e.name) return e.value;
  throw std::invalid_argument(what + " must be " + EnumChoices(table) + ", not '" + text + "'");
}

// The name of `value`, or `unknown` for a value outside the table (one cast
// from a corrupt integer): for messages and logs, which must not throw.
template <typename E, size_t N>
const char* NameOfEnumOr(const EnumName<E> (&table)[N], E value, const char* unknown) {
  for (const EnumName<E>& e : table)
    if (e.value == value) return e.name;
  return unknown;
}

template <typename E, size_t N>
std::string NameOfEnum(const EnumName<E> (&table)[N], E value) {
  for (const EnumName<E>& e : table)
    if (e.value == value) return e.name;
  throw std::invalid_argument("no name for value " + std::to_string(static_cast<long long>(value)));
}

}  // namespace tensortier
