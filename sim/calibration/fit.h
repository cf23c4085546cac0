// Least-squares fits of the calibration: y = b0 + b1 x1 + ... + bk xk over a handful of
// regressors (k <= 6 or so; the solver is a small dense QR), with standard errors,
// Student-t confidence intervals, R² and the residual standard deviation.
//
// Non-negative coefficients: a CPU cost per request or a heap cost per object cannot be
// negative, but noise can make the unconstrained estimate so. Coefficients marked
// nonNegative are fitted by exact non-negative least squares over those few
// coefficients: every subset of them held at 0 is fitted by ordinary least squares on
// the remaining ones, and the feasible fit (every constrained coefficient >= 0) with the
// smallest residual sum of squares wins. That is the NNLS optimum (its free set's OLS
// solution), found by enumeration, which is cheap for k <= 6 (at most 64 fits). A
// coefficient held at 0 is reported `clamped`, with the interval [0, max(0, high)] of
// its unconstrained fit so the report still says how large it could be. The others'
// values come from the fit on the free set, with its degrees of freedom; their
// intervals are the union of that fit's and the unconstrained fit's (and their
// standard errors the larger), because the free set's alone would take the clamped
// coefficients as known to be 0 and be narrower than the data allow. A constrained
// coefficient's interval is clipped at 0.
#pragma once

#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace cpscale::calibration {

// A fit that cannot be made: too few observations, a regressor that does not vary or
// is a combination of the others, observations that are not finite.
class FitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct FitOptions {
  bool intercept = true;     // fit b0 (named "intercept", first in the result)
  double confidence = 0.95;  // two-sided, of every coefficient's interval
  // Per regressor (not the intercept), in the order of the columns; empty: none.
  std::vector<bool> nonNegative;
  bool interceptNonNegative = false;
};

struct Coefficient {
  std::string name;
  double value = 0;
  double standardError = 0;
  double low = 0;  // confidence interval
  double high = 0;
  bool clamped = false;  // held at 0 by its non-negativity constraint
};

struct FitResult {
  std::vector<Coefficient> coefficients;  // intercept first when fitted, then the regressors
  std::size_t observations = 0;
  std::size_t parameters = 0;  // coefficients fitted freely (not clamped)
  std::size_t degreesOfFreedom = 0;
  double r2 = 0;           // 1 - SSres/SStot (SStot about the mean with an intercept, about 0 without)
  double residualStd = 0;  // sqrt(SSres / degrees of freedom)
  std::string note;        // which coefficients were clamped, in words; empty if none

  const Coefficient& at(const std::string& name) const;  // throws std::out_of_range
};

// Fits y on the columns of x: x[i] is observation i's regressors (all rows the same
// length, named by `names`). Throws FitError when observations <= parameters, when a
// row's length differs from names', when a value is not finite, or when the columns
// are linearly dependent (the error names the regressor).
FitResult fitLeastSquares(const std::vector<std::vector<double>>& x, std::span<const double> y,
                          const std::vector<std::string>& names, const FitOptions& options = {});

// The two-sided Student-t quantile for `confidence` with `dof` degrees of freedom
// (2.0739 for 0.95 and 22): the half-width of an interval in standard errors.
double tQuantile(double confidence, std::size_t dof);

}  // namespace cpscale::calibration
