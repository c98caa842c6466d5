#include "kernels/stats_math.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace sparsefuse::kernels {

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

double normal_quantile(double p) {
  if (!(p > 0.0 && p < 1.0)) throw std::domain_error("normal_quantile: p outside (0, 1)");
  // Work in the lower tail, reflect at the end.
  const bool upper = p > 0.5;
  const double q = upper ? 1.0 - p : p;
  // Starting guess: the classic rational approximation in t = sqrt(-2 ln q)
  // (Abramowitz & Stegun 26.2.23, |error| < 4.5e-4).
  const double t = std::sqrt(-2.0 * std::log(q));
  double x = -(t - (2.515517 + 0.802853 * t + 0.010328 * t * t) /
                       (1.0 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t));
  // Halley refinement on f(x) = Phi(x) - q; f' = phi(x), f'' = -x phi(x).
  for (int it = 0; it < 4; ++it) {
    const double f = normal_cdf(x) - q;
    const double phi = std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
    if (phi == 0.0) break;
    const double u = f / phi;
    x -= u / (1.0 + 0.5 * x * u);
  }
  return upper ? -x : x;
}

namespace {

// P(a, x) by its power series: x^a e^-x / Gamma(a+1) * sum_n x^n / ((a+1)...(a+n)).
double gamma_p_series(double a, double x) {
  double term = 1.0 / a;
  double sum = term;
  for (int n = 1; n < 1000; ++n) {
    term *= x / (a + n);
    sum += term;
    if (std::fabs(term) < std::fabs(sum) * 1e-16) break;
  }
  return sum * std::exp(-x + a * std::log(x) - std::lgamma(a));
}

// Q(a, x) = 1 - P(a, x) by the continued fraction
// Q = e^-x x^a / Gamma(a) * 1/(x+1-a- 1(1-a)/(x+3-a- 2(2-a)/(x+5-a- ...))),
// evaluated with the modified Lentz method.
double gamma_q_fraction(double a, double x) {
  constexpr double kTiny = 1e-300;
  double b = x + 1.0 - a;
  double c = 1.0 / kTiny;
  double d = 1.0 / b;
  double h = d;
  for (int i = 1; i < 1000; ++i) {
    const double an = -i * (i - a);
    b += 2.0;
    d = an * d + b;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = b + an / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1.0) < 1e-16) break;
  }
  return std::exp(-x + a * std::log(x) - std::lgamma(a)) * h;
}

}  // namespace

double gamma_p(double a, double x) {
  if (!(a > 0.0) || x < 0.0) throw std::domain_error("gamma_p: need a > 0, x >= 0");
  if (x == 0.0) return 0.0;
  if (x < a + 1.0) return gamma_p_series(a, x);
  return 1.0 - gamma_q_fraction(a, x);
}

double gamma_p_inverse(double a, double p) {
  if (!(a > 0.0) || !(p >= 0.0 && p < 1.0))
    throw std::domain_error("gamma_p_inverse: need a > 0, 0 <= p < 1");
  if (p == 0.0) return 0.0;
  // Bracket [lo, hi] with P(lo) <= p < P(hi).
  double lo = 0.0;
  double hi = std::max(1.0, a);
  while (gamma_p(a, hi) < p) {
    lo = hi;
    hi *= 2.0;
    if (hi > 1e300) return hi;
  }
  double x = 0.5 * (lo + hi);
  for (int it = 0; it < 200; ++it) {
    const double f = gamma_p(a, x) - p;
    if (f == 0.0) return x;
    if (f < 0.0) lo = x; else hi = x;
    // Newton step with the density x^(a-1) e^-x / Gamma(a); fall back to
    // bisection when it leaves the bracket.
    const double dens = std::exp((a - 1.0) * std::log(x) - x - std::lgamma(a));
    double next = dens > 0.0 ? x - f / dens : 0.5 * (lo + hi);
    if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
    if (std::fabs(next - x) <= 1e-14 * std::fabs(x) || hi - lo <= 1e-14 * hi) return next;
    x = next;
  }
  return x;
}

}  // namespace sparsefuse::kernels
