#pragma once
// The launchers of the six GPU strategies (gpu_s*.cu), gathered with their sweeps by
// gpu_registry.cpp. Device pointers in `p` and `out`; they launch on the default stream.

#include "strategies.hpp"

namespace simkit::strategies {

void run_s1(const Problem& p, StudyMetric metric, int block, float* out);
void run_s2(const Problem& p, StudyMetric metric, int block, float* out);
void run_s3(const Problem& p, StudyMetric metric, int block, float* out);
void run_s5(const Problem& p, StudyMetric metric, int block, float* out);
void run_s6(const Problem& p, StudyMetric metric, int block, float* out);
void run_s7(const Problem& p, StudyMetric metric, int tile, float* out);

}  // namespace simkit::strategies
