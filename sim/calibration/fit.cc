#include "sim/calibration/fit.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <optional>

#include <boost/math/distributions/students_t.hpp>

namespace cpscale::calibration {

namespace {

using Matrix = std::vector<std::vector<double>>;  // row-major, rows = observations

// Ordinary least squares on the columns `cols` of `x` by Householder QR: the
// coefficients and the diagonal of (X'X)^-1, or the first column that depends on the
// ones before it.
struct Ols {
  std::vector<double> beta;
  std::vector<double> invDiag;  // diag((X'X)^-1)
  double ssr = 0;
  std::optional<std::size_t> dependent;  // index into cols
};

Ols solve(const Matrix& x, std::span<const double> y, const std::vector<std::size_t>& cols) {
  const std::size_t n = x.size(), p = cols.size();
  Ols out;
  if (p == 0) {
    for (double v : y) out.ssr += v * v;
    return out;
  }
  // a: n x p column-major copy of the chosen columns; b: y.
  std::vector<std::vector<double>> a(p, std::vector<double>(n));
  std::vector<double> norms(p, 0);
  for (std::size_t j = 0; j < p; ++j) {
    for (std::size_t i = 0; i < n; ++i) a[j][i] = x[i][cols[j]];
    for (double v : a[j]) norms[j] += v * v;
    norms[j] = std::sqrt(norms[j]);
  }
  std::vector<double> b(y.begin(), y.end());
  std::vector<double> rdiag(p);
  for (std::size_t k = 0; k < p; ++k) {
    double s = 0;
    for (std::size_t i = k; i < n; ++i) s += a[k][i] * a[k][i];
    s = std::sqrt(s);
    // What is left of column k once the earlier columns are projected out: nothing (to
    // rounding) means it is a combination of them, or zero.
    if (norms[k] == 0 || s <= 1e-9 * norms[k]) {
      out.dependent = k;
      return out;
    }
    const double alpha = a[k][k] > 0 ? -s : s;
    // Householder vector v = column - alpha e_k, stored in place.
    a[k][k] -= alpha;
    double vnorm2 = 0;
    for (std::size_t i = k; i < n; ++i) vnorm2 += a[k][i] * a[k][i];
    auto reflect = [&](std::vector<double>& c) {
      double dot = 0;
      for (std::size_t i = k; i < n; ++i) dot += a[k][i] * c[i];
      const double f = 2 * dot / vnorm2;
      for (std::size_t i = k; i < n; ++i) c[i] -= f * a[k][i];
    };
    for (std::size_t j = k + 1; j < p; ++j) reflect(a[j]);
    reflect(b);
    rdiag[k] = alpha;
  }
  // R: rdiag on the diagonal, a[j][i] (i < j) above it.
  auto r = [&](std::size_t i, std::size_t j) { return i == j ? rdiag[i] : a[j][i]; };
  out.beta.assign(p, 0);
  for (std::size_t k = p; k-- > 0;) {
    double s = b[k];
    for (std::size_t j = k + 1; j < p; ++j) s -= r(k, j) * out.beta[j];
    out.beta[k] = s / rdiag[k];
  }
  for (std::size_t i = p; i < n; ++i) out.ssr += b[i] * b[i];
  // (X'X)^-1 = R^-1 R^-T: its diagonal is the squared row norms of R^-1.
  std::vector<std::vector<double>> rinv(p, std::vector<double>(p, 0));
  for (std::size_t j = 0; j < p; ++j) {
    rinv[j][j] = 1 / rdiag[j];
    for (std::size_t i = j; i-- > 0;) {
      double s = 0;
      for (std::size_t m = i + 1; m <= j; ++m) s += r(i, m) * rinv[m][j];
      rinv[i][j] = -s / rdiag[i];
    }
  }
  out.invDiag.assign(p, 0);
  for (std::size_t i = 0; i < p; ++i)
    for (std::size_t j = i; j < p; ++j) out.invDiag[i] += rinv[i][j] * rinv[i][j];
  return out;
}

// The design, [1 | x] with an intercept. Throws FitError naming the observation whose
// row has the wrong length or a value that is not finite.
Matrix designMatrix(const std::vector<std::vector<double>>& x, std::span<const double> y,
                    const std::vector<std::string>& names, bool intercept) {
  const std::size_t n = y.size(), p = names.size() + (intercept ? 1 : 0);
  Matrix design(n, std::vector<double>(p));
  for (std::size_t i = 0; i < n; ++i) {
    if (x[i].size() != names.size())
      throw FitError("observation " + std::to_string(i) + " has " + std::to_string(x[i].size()) + " regressors, not " +
                     std::to_string(names.size()));
    if (!std::isfinite(y[i])) throw FitError("observation " + std::to_string(i) + " is not a finite number");
    std::size_t j = 0;
    if (intercept) design[i][j++] = 1;
    for (double v : x[i]) {
      if (!std::isfinite(v))
        throw FitError("regressor " + names[j - (intercept ? 1 : 0)] + " of observation " + std::to_string(i) +
                       " is not a finite number");
      design[i][j++] = v;
    }
  }
  return design;
}

// Exact NNLS over the constrained coefficients: every subset of them held at 0,
// fewest held first; the feasible fit with the least residual wins, with its free
// columns. `full` is the fit with none held.
std::pair<Ols, std::vector<std::size_t>> bestFeasible(const Matrix& design, std::span<const double> y, const Ols& full,
                                                      const std::vector<bool>& constrained) {
  const std::size_t p = constrained.size();
  std::vector<std::size_t> cIdx;
  for (std::size_t j = 0; j < p; ++j)
    if (constrained[j]) cIdx.push_back(j);
  if (cIdx.size() > 12)
    throw FitError(std::to_string(cIdx.size()) +
                   " non-negative coefficients: the exact fit enumerates their subsets "
                   "and is meant for a handful");
  std::vector<unsigned> masks(std::size_t{1} << cIdx.size());
  for (unsigned m = 0; m < masks.size(); ++m) masks[m] = m;
  std::stable_sort(masks.begin(), masks.end(),
                   [](unsigned a, unsigned b) { return std::popcount(a) < std::popcount(b); });
  std::optional<Ols> best;
  std::vector<std::size_t> bestFree;
  for (unsigned mask : masks) {
    std::vector<std::size_t> free;
    for (std::size_t j = 0; j < p; ++j) {
      auto it = std::find(cIdx.begin(), cIdx.end(), j);
      if (it != cIdx.end() && (mask >> (it - cIdx.begin()) & 1u)) continue;
      free.push_back(j);
    }
    Ols o = mask == 0 ? full : solve(design, y, free);
    if (o.dependent) continue;
    bool feasible = true;
    for (std::size_t f = 0; f < free.size(); ++f)
      if (constrained[free[f]] && o.beta[f] < 0) feasible = false;
    if (!feasible) continue;
    // A strictly better residual only: among equals, fewer clamped coefficients.
    if (!best || o.ssr < best->ssr * (1 - 1e-12) - 1e-300) {
      best = std::move(o);
      bestFree = free;
    }
  }
  if (!best) throw FitError("no fit satisfies the non-negativity constraints");
  return {std::move(*best), std::move(bestFree)};
}

}  // namespace

double tQuantile(double confidence, std::size_t dof) {
  if (dof == 0) throw FitError("a confidence interval needs at least one degree of freedom");
  if (!(confidence > 0 && confidence < 1)) throw FitError("confidence must be within (0, 1)");
  boost::math::students_t dist(static_cast<double>(dof));
  return boost::math::quantile(dist, 1 - (1 - confidence) / 2);
}

const Coefficient& FitResult::at(const std::string& name) const {
  for (const Coefficient& c : coefficients)
    if (c.name == name) return c;
  throw std::out_of_range("no coefficient '" + name + "' in the fit");
}

FitResult fitLeastSquares(const std::vector<std::vector<double>>& x, std::span<const double> y,
                          const std::vector<std::string>& names, const FitOptions& options) {
  const std::size_t n = y.size();
  if (x.size() != n)
    throw FitError(std::to_string(x.size()) + " rows of regressors for " + std::to_string(n) + " observations");
  if (!options.nonNegative.empty() && options.nonNegative.size() != names.size())
    throw FitError("nonNegative has " + std::to_string(options.nonNegative.size()) + " entries for " +
                   std::to_string(names.size()) + " regressors");
  // The design: [1 | x] with an intercept.
  std::vector<std::string> coefNames;
  std::vector<bool> constrained;
  if (options.intercept) {
    coefNames.push_back("intercept");
    constrained.push_back(options.interceptNonNegative);
  }
  for (std::size_t j = 0; j < names.size(); ++j) {
    coefNames.push_back(names[j]);
    constrained.push_back(!options.nonNegative.empty() && options.nonNegative[j]);
  }
  const std::size_t p = coefNames.size();
  if (p == 0) throw FitError("nothing to fit: no regressor and no intercept");
  if (n <= p)
    throw FitError(std::to_string(n) + " observation" + (n == 1 ? "" : "s") + " cannot fit " + std::to_string(p) +
                   " parameters (" +
                   [&] {
                     std::string s;
                     for (const auto& c : coefNames) s += (s.empty() ? "" : ", ") + c;
                     return s;
                   }() +
                   "): at least " + std::to_string(p + 1) + " are needed");
  const Matrix design = designMatrix(x, y, names, options.intercept);

  std::vector<std::size_t> all(p);
  for (std::size_t j = 0; j < p; ++j) all[j] = j;
  const Ols full = solve(design, y, all);
  if (full.dependent)
    throw FitError("regressor '" + coefNames[*full.dependent] + "' " +
                   (*full.dependent == 0 && options.intercept
                        ? "is zero in every observation"
                        : "does not vary independently of the others (or is always 0)"));

  double ySum = 0, yy = 0;
  for (double v : y) ySum += v, yy += v * v;
  const double sst = options.intercept ? yy - ySum * ySum / static_cast<double>(n) : yy;
  const double tFull = tQuantile(options.confidence, n - p);
  const double s2Full = full.ssr / static_cast<double>(n - p);

  const auto [bestFit, bestFree] = bestFeasible(design, y, full, constrained);
  const Ols* best = &bestFit;

  FitResult r;
  r.observations = n;
  r.parameters = bestFree.size();
  r.degreesOfFreedom = n - bestFree.size();
  const double s2 = best->ssr / static_cast<double>(r.degreesOfFreedom);
  const double t = tQuantile(options.confidence, r.degreesOfFreedom);
  r.residualStd = std::sqrt(s2);
  r.r2 = sst > 0 ? 1 - best->ssr / sst : (best->ssr <= 1e-24 ? 1 : 0);
  for (std::size_t j = 0; j < p; ++j) {
    Coefficient c;
    c.name = coefNames[j];
    auto f = std::find(bestFree.begin(), bestFree.end(), j);
    if (f != bestFree.end()) {
      const std::size_t k = static_cast<std::size_t>(f - bestFree.begin());
      c.value = best->beta[k];
      c.standardError = std::sqrt(s2 * best->invDiag[k]);
      c.low = c.value - t * c.standardError;
      c.high = c.value + t * c.standardError;
      if (bestFree.size() < p) {
        // The free set's interval takes the clamped coefficients as exactly 0, which
        // the data did not say: widen it to the unconstrained fit's as well.
        const double se = std::sqrt(s2Full * full.invDiag[j]);
        c.standardError = std::max(c.standardError, se);
        c.low = std::min(c.low, full.beta[j] - tFull * se);
        c.high = std::max(c.high, full.beta[j] + tFull * se);
      }
      if (constrained[j]) c.low = std::max(c.low, 0.0);
    } else {
      c.clamped = true;
      c.standardError = std::sqrt(s2Full * full.invDiag[j]);
      c.high = std::max(0.0, full.beta[j] + tFull * c.standardError);
      r.note += (r.note.empty() ? "" : "; ") + c.name + " held at 0 (unconstrained estimate " +
                std::to_string(full.beta[j]) + ")";
    }
    r.coefficients.push_back(std::move(c));
  }
  return r;
}

}  // namespace cpscale::calibration
