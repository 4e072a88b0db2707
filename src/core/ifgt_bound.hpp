#pragma once
// The IFGT's error bound, and the size of its expansions.
//
// Write a = (x_i - c) / h and b = (y - c) / h for a source x_i of a cluster with centre c and a
// target y. The kernel factors exactly as
//
//     exp(-|y - x_i|^2 / h^2) = exp(-|a|^2) exp(-|b|^2) exp(2 a.b),
//
// and the IFGT replaces exp(2 a.b) by its Taylor polynomial of degree p - 1 (expanded over
// multi-indices |alpha| < p). With t = 2 a.b, Lagrange's remainder is t^p / p! exp(xi) for some
// xi between 0 and t, so |remainder| <= (2|a||b|)^p / p! exp(2|a||b|) (Cauchy-Schwarz), and
// the error of one term is at most
//
//     exp(-|a|^2 - |b|^2) (2|a||b|)^p / p! exp(2|a||b|)  =  (2|a||b|)^p / p! exp(-(|a| - |b|)^2)
//                                                     =: delta_p(|a|, |b|).
//
// Every source lies within its cluster's radius rx_c of the centre, and a cluster is evaluated
// for y only when |y - c| <= r + rx_c. Every target also lies in the targets' bounding box, so
// |y - c| <= f_c, the distance from c to the box's farthest corner. Over the evaluated targets
// of cluster c, then, |a| <= A_c = rx_c / h and |b| <= B_c = min(r + rx_c, f_c) / h, and the
// term error is at most T_p(A_c, B_c) = sup over [0, A_c] x [0, B_c] of delta_p. (Dropping the
// exp factor gives the looser textbook form (2^p / p!) (rx / h)^p ((r + rx) / h)^p; the sup is
// computed exactly instead, see truncation_bound. The box matters when h is large next to the
// data: with r + rx past the data's extent, f_c is what bounds |b|.) A skipped cluster has
// |y - c| > r + rx_c, so each of its sources is farther than r from y and its whole term,
// exp(-|y - x_i|^2 / h^2), is below E_r = exp(-r^2 / h^2).
//
// Each source is either in an evaluated cluster (error <= T_p |q_i|) or in a skipped one (error
// <= E_r |q_i|), never both, hence for every target
//
//     |G_ifgt(y) - G(y)| <= max(max_c T_p(A_c, B_c), E_r) * sum_i |q_i|,
//
// where E_r enters only if some cluster has f_c > r + rx_c (else no target is ever skipped).
//
// That max is the error bound reported (ifgt_plan.hpp). Floating-point rounding comes on top; it is tiny because
// the expansions' absolute terms are bounded (sum_alpha |C_alpha (b)^alpha| exp(-|b|^2) <=
// sum |q_i| exp(-(|a| - |b|)^2) <= sum |q_i| per cluster), and the parameters aim at 0.99 eps to
// leave it room (see ifgt_plan.hpp).

#include <cstdint>
#include <vector>

namespace simkit::detail {

/// T_p: sup of delta_p(a, b) over 0 <= a <= A, 0 <= b <= B (A = rx / h, B = ry / h), p >= 1.
double truncation_bound(int p, double A, double B);

/// E_r = exp(-(r / h)^2).
double cutoff_bound(double r_over_h);

/// Distance from c to the farthest point of the box [lo, hi] (d coordinates each).
double farthest_in_box(const double* c, const double* lo, const double* hi, int64_t d);

/// The smallest p in [1, max_p] with T_p(A[k], B[k]) <= target for every k, or 0 if none.
int smallest_order(const std::vector<double>& A, const std::vector<double>& B, double target, int max_p);

/// max over k of T_p(A[k], B[k]).
double clusters_truncation_bound(int p, const std::vector<double>& A, const std::vector<double>& B);

/// Number of multi-indices in d dimensions of total degree < p, C(p - 1 + d, d); saturates at
/// INT64_MAX / 2 so that callers can compare it with limits.
int64_t monomial_count(int64_t d, int p);

}  // namespace simkit::detail
