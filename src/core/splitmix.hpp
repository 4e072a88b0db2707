#pragma once
// splitmix64: a small generator whose sequence is the same on every platform (the standard
// library's distributions are not), so a seed means the same clustering everywhere.

#include <cstdint>

namespace simkit::detail {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  int64_t below(int64_t n) { return int64_t(next() % uint64_t(n)); }

 private:
  uint64_t s_;
};

}  // namespace simkit::detail
