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
// for y only when |y - c| <= r + rx_c. So over evaluated clusters |a| <= A = rx / h and
// |b| <= B = (r + rx) / h, with rx the largest cluster radius, and the term error is at most
// T_p = sup over [0, A] x [0, B] of delta_p. (Dropping the exp factor gives the looser textbook
// form (2^p / p!) (rx / h)^p ((r + rx) / h)^p; the sup is computed exactly instead, see
// truncation_bound.) A skipped cluster has |y - c| > r + rx_c, so each of its sources is farther
// than r from y and its whole term, exp(-|y - x_i|^2 / h^2), is below E_r = exp(-r^2 / h^2).
//
// Each source is either in an evaluated cluster (error <= T_p |q_i|) or in a skipped one (error
// <= E_r |q_i|), never both, hence for every target
//
//     |G_ifgt(y) - G(y)| <= max(T_p, E_r) * sum_i |q_i|.
//
// That max is IfgtChoice::error_bound. Floating-point rounding comes on top; it is tiny because
// the expansions' absolute terms are bounded (sum_alpha |C_alpha (b)^alpha| exp(-|b|^2) <=
// sum |q_i| exp(-(|a| - |b|)^2) <= sum |q_i| per cluster), and the parameters aim at 0.99 eps to
// leave it room (see ifgt_params.cpp).

#include <cstdint>

namespace simkit::detail::cpu {

/// T_p: sup of delta_p(a, b) over 0 <= a <= A, 0 <= b <= B (A = rx / h, B = ry / h), p >= 1.
double truncation_bound(int p, double A, double B);

/// E_r = exp(-(r / h)^2).
double cutoff_bound(double r_over_h);

/// max(T_p, E_r) for largest cluster radius rx, cut-off r and bandwidth h: the bound on
/// |G_ifgt(y) - G(y)| / sum|q| for every target.
double ifgt_error_bound(int p, double rx, double r, double h);

/// Number of multi-indices in d dimensions of total degree < p, C(p - 1 + d, d); saturates at
/// INT64_MAX / 2 so that callers can compare it with limits.
int64_t monomial_count(int64_t d, int p);

}  // namespace simkit::detail::cpu
