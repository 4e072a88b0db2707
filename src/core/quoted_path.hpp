#pragma once
// A file path in a message: simkit::quoted() (simkit/error.hpp) with room for a deep directory,
// so the file name at its end survives in every ordinary path, while a newline or an escape
// sequence in a hostile name is escaped and a path of any length stays one bounded line.
//
// Call quoted() qualified, as simkit::quoted: an unqualified quoted(some_std_string) also finds
// std::quoted by argument-dependent lookup, which wins overload resolution and escapes nothing.

#include <cstddef>
#include <string>
#include <string_view>

#include <simkit/error.hpp>

namespace simkit::detail {

inline constexpr size_t kPathChars = 256;

inline std::string quoted_path(std::string_view path) { return simkit::quoted(path, kPathChars); }

}  // namespace simkit::detail
