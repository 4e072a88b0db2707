#pragma once
// Manhattan (l1) distances for a block of query rows against a block of base rows.

#include <cstdint>

namespace simkit::detail::cpu {

/// out[i * ldo + j] = sum_t |q[i * d + t] - x[j * d + t]| for i < tq, j < tx.
///
/// Cache blocking: the base rows are taken in slices of about 256 KiB so a slice stays in
/// L2 while every group of 4 query rows (a few KiB, L1-resident) sweeps it. The micro-kernel
/// computes a 4 x 2 patch of outputs at once, vectorised along d in 8-float lanes: each
/// loaded query vector is used twice and each base vector four times, with 8 accumulators
/// live (of 16 AVX2 registers).
///
/// Accuracy: every lane adds at most 16 non-negative float terms before the lane sums are
/// folded into a double total, so the relative error stays near 16 x 2^-24 ~ 1e-6 whatever
/// d is (plain float accumulation over d = 1000 would drift towards 1e-5).
void l1_block(const float* q, int64_t tq, const float* x, int64_t tx, int64_t d, float* out, int64_t ldo);

}  // namespace simkit::detail::cpu
