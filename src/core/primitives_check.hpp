#pragma once
// Argument checks shared by the primitives' public entry points (scan, spmv_csr, merge, sort).
// Each throws Error(invalid_argument) with a message that starts with the function's name.

#include <cstdint>
#include <initializer_list>
#include <string>

#include <simkit/context.hpp>

#include "core/backend.hpp"

namespace simkit::detail {

[[noreturn]] void primitive_fail(const char* fn, const std::string& msg);

/// a.size == size, and a non-null pointer unless it is empty.
void check_length(const char* fn, const Raw& a, int64_t size, const char* name);

/// out (written) shares no byte with in (read), unless `same_ok` and they are the same array.
void check_apart(const char* fn, const Raw& out, const char* out_name, const Raw& in, const char* in_name,
                 bool same_ok = false);

/// The backend that runs the call (backend_for); refuses non-empty device arrays on the CPU.
const Backend& primitive_backend(const Context& ctx, const char* fn, std::initializer_list<Raw> arrays);

/// Offsets of `count` entries that rise from 0 to `end`, never falling; host memory.
template <class I>
void check_offsets(const char* fn, const I* offsets, int64_t count, int64_t end, const char* name);

/// Every index in [0, bound); host memory.
template <class I>
void check_indices(const char* fn, const I* indices, int64_t count, int64_t bound, const char* name);

}  // namespace simkit::detail
