#include "primitives_check.hpp"

#include <algorithm>
#include <cstdint>

#include <simkit/error.hpp>

namespace simkit::detail {

void primitive_fail(const char* fn, const std::string& msg) {
  throw Error(ErrorCode::invalid_argument, std::string(fn) + ": " + msg);
}

void check_length(const char* fn, const Raw& a, int64_t size, const char* name) {
  if (a.size != size)
    primitive_fail(
        fn, std::string(name) + " has " + std::to_string(a.size) + " elements, expected " + std::to_string(size));
  if (a.size > 0 && a.data == nullptr) primitive_fail(fn, std::string(name) + " has a null data pointer");
}

void check_apart(const char* fn, const Raw& out, const char* out_name, const Raw& in, const char* in_name,
                 bool same_ok) {
  if (out.where != in.where || out.size == 0 || in.size == 0) return;
  const auto o = reinterpret_cast<uintptr_t>(out.data), i = reinterpret_cast<uintptr_t>(in.data);
  if (same_ok && o == i && out.bytes() == in.bytes()) return;
  if (o < i + in.bytes() && i < o + out.bytes())
    primitive_fail(fn, std::string(out_name) + " overlaps " + in_name +
                           (same_ok ? " without being the same array" : " (they must be separate arrays)"));
}

const Backend& primitive_backend(const Context& ctx, const char* fn, std::initializer_list<Raw> arrays) {
  // An empty array holds nothing to move, wherever its pointer points.
  bool on_device = false;
  for (const Raw& a : arrays) on_device |= a.size > 0 && a.where == Memory::device;
  return backend_for(ctx, {on_device ? Memory::device : Memory::host}, fn);
}

template <class I>
void check_offsets(const char* fn, const I* offsets, int64_t count, int64_t end, const char* name) {
  const std::string n(name);
  if (count < 1) primitive_fail(fn, n + " is empty (it needs at least the entry 0)");
  if (offsets[0] != 0) primitive_fail(fn, n + "[0] is " + std::to_string(offsets[0]) + ", expected 0");
  if (int64_t(offsets[count - 1]) != end)
    primitive_fail(fn, n + " ends at " + std::to_string(offsets[count - 1]) + ", expected " + std::to_string(end));
  int64_t bad = count;
#pragma omp parallel for reduction(min : bad) if (count > (1 << 20))
  for (int64_t s = 0; s < count - 1; ++s)
    if (offsets[s + 1] < offsets[s]) bad = std::min(bad, s);
  if (bad < count)
    primitive_fail(fn, n + " fall at entry " + std::to_string(bad + 1) + " (" + std::to_string(offsets[bad]) +
                           " then " + std::to_string(offsets[bad + 1]) + "); they must not decrease");
}

template <class I>
void check_indices(const char* fn, const I* indices, int64_t count, int64_t bound, const char* name) {
  int64_t bad = count;
#pragma omp parallel for reduction(min : bad) if (count > (1 << 20))
  for (int64_t j = 0; j < count; ++j)
    if (indices[j] < 0 || int64_t(indices[j]) >= bound) bad = std::min(bad, j);
  if (bad < count)
    primitive_fail(fn, std::string(name) + "[" + std::to_string(bad) + "] = " + std::to_string(indices[bad]) +
                           " is outside [0, " + std::to_string(bound) + ")");
}

template void check_offsets(const char*, const int32_t*, int64_t, int64_t, const char*);
template void check_offsets(const char*, const int64_t*, int64_t, int64_t, const char*);
template void check_indices(const char*, const int32_t*, int64_t, int64_t, const char*);
template void check_indices(const char*, const int64_t*, int64_t, int64_t, const char*);

}  // namespace simkit::detail
