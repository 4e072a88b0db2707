#pragma once
// An environment variable set for a scope: the tests that force a planner's choice
// (SIMKIT_FILTER_PLAN, filtered_search.hpp) or a kernel path through the environment.

#include <cstdlib>

namespace simkit::test {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

}  // namespace simkit::test
