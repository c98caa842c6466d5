// Scalar special functions the threshold estimators need, in double precision,
// written from their mathematical definitions (host only).
#pragma once

namespace sparsefuse::kernels {

// Standard normal CDF Phi(x) = erfc(-x / sqrt 2) / 2.
double normal_cdf(double x);
// Phi^-1(p) for 0 < p < 1: a rational starting guess refined by Halley steps on
// normal_cdf, accurate to a few ulps of double.
double normal_quantile(double p);

// Regularised lower incomplete gamma P(a, x) for a > 0, x >= 0 (series for
// x < a + 1, Lentz continued fraction for Q otherwise).
double gamma_p(double a, double x);
// The x with P(a, x) = p, 0 <= p < 1: bracketing then bisection with Newton
// steps, to relative 1e-14.
double gamma_p_inverse(double a, double p);

}  // namespace sparsefuse::kernels
