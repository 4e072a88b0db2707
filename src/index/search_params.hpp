#pragma once
// How an index reads the search parameters it was given (index.hpp: a plain SearchParams for
// the defaults, or its own type's struct; another type's are refused, never half-read).

#include <typeinfo>

#include <simkit/index.hpp>

namespace simkit::detail {

/// The name of sp's struct as the public API spells it ("IvfSearchParams", ...).
const char* search_params_name(const SearchParams& sp);

/// Error(invalid_argument): `type` was given `given`'s parameters where it reads `expected`.
[[noreturn]] void refuse_search_params(const char* type, const SearchParams& given, const char* expected);

/// sp as P when it is exactly a P; nullptr for a plain SearchParams (the index's defaults);
/// anything else refused. `type` and `expected` name the index and P for the error.
template <class P>
const P* own_search_params(const SearchParams& sp, const char* type, const char* expected) {
  if (typeid(sp) == typeid(P)) return static_cast<const P*>(&sp);
  if (typeid(sp) == typeid(SearchParams)) return nullptr;
  refuse_search_params(type, sp, expected);
}

}  // namespace simkit::detail
