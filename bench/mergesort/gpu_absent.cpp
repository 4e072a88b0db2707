// A build without CUDA has no GPU versions of the study: both refuse, after the same argument
// checks, so a sweep fails the same way on bad input in every build.

#include <string>

#include <simkit/error.hpp>

#include "mergesort_study.hpp"
#include "mergesort_timing.hpp"
#include "study_args.hpp"

namespace simkit::mergesort {
namespace {

[[noreturn]] void refuse(const int32_t* host, int64_t n, int64_t size_i, int block, const char* version) {
  detail::check_sort_args(host, n, size_i);
  (void)detail::blocks_for((n + size_i - 1) / size_i, block);
  throw Error(ErrorCode::unsupported, std::string(version) + ": this simkit was built without CUDA");
}

}  // namespace

StudyTiming naive_merge_sort_cuda(int32_t* host, int64_t n, int64_t size_i, int block) {
  refuse(host, n, size_i, block, "naive_merge_sort_cuda");
}

StudyTiming merge_path_sort_cuda(int32_t* host, int64_t n, int64_t size_i, int block) {
  refuse(host, n, size_i, block, "merge_path_sort_cuda");
}

double device_copy_gbps(const std::string&) { return host_copy_gbps(); }  // no card: the host's

}  // namespace simkit::mergesort
