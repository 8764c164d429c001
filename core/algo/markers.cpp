#include "core/algo/markers.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "core/types/JobContext.hpp"

namespace fathom {

namespace detail {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// Stirling series remainder: lgamma(z) - [(z - 0.5) ln z - z + 0.5 ln(2 pi)], z >= 10
/// (seven terms; the first omitted one is below 1e-16 there).
double stirling_remainder(double z) {
    const double inv = 1.0 / z;
    const double inv2 = inv * inv;
    return inv * (1.0 / 12.0 -
                  inv2 * (1.0 / 360.0 -
                          inv2 * (1.0 / 1260.0 - inv2 * (1.0 / 1680.0 - inv2 * (1.0 / 1188.0 - inv2 * (691.0 / 360360.0 - inv2 / 156.0))))));
}

/// lgamma(a) - lgamma(a + b) for a >= 10, b > 0, from Stirling's series (see
/// stirling_remainder) without the cancellation of the plain difference.
double log_gamma_ratio(double a, double b) {
    const double sum = a + b;
    return -(a - 0.5) * std::log1p(b / a) - b * std::log(sum) + b + stirling_remainder(a) - stirling_remainder(sum);
}

/// log B(a, b) = lgamma(a) + lgamma(b) - lgamma(a + b), without the cancellation of the
/// plain formula when an argument is large (Student's t with many cells: a = dof / 2
/// in the millions, b = 1/2).
double log_beta(double a, double b) {
    const double big = std::max(a, b);
    const double small = std::min(a, b);
    if (big < 10.0) return std::lgamma(a) + std::lgamma(b) - std::lgamma(a + b);
    const double sum = big + small;
    if (small < 10.0) {
        return std::lgamma(small) + log_gamma_ratio(big, small);
    }
    // Both large: the full Stirling form.
    return 0.5 * std::log(2.0 * std::numbers::pi) + (a - 0.5) * std::log(a / sum) + (b - 0.5) * std::log(b / sum) -
           0.5 * std::log(sum) + stirling_remainder(a) + stirling_remainder(b) - stirling_remainder(sum);
}

/// Continued fraction of I_x(a, b) (Numerical Recipes betacf, modified Lentz);
/// converges fast for x < (a + 1) / (a + b + 2), in O(sqrt(max(a, b))) terms.
double beta_continued_fraction(double a, double b, double x) {
    constexpr int kMaxTerms = 1'000'000;
    constexpr double kEpsilon = 1e-16;
    constexpr double kTiny = 1e-300;
    const double qab = a + b;
    const double qap = a + 1.0;
    const double qam = a - 1.0;
    double c = 1.0;
    double d = 1.0 - qab * x / qap;
    if (std::abs(d) < kTiny) d = kTiny;
    d = 1.0 / d;
    double h = d;
    for (int term = 1; term <= kMaxTerms; ++term) {
        const double m = term;
        const double m2 = 2.0 * m;
        double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if (std::abs(d) < kTiny) d = kTiny;
        c = 1.0 + aa / c;
        if (std::abs(c) < kTiny) c = kTiny;
        d = 1.0 / d;
        h *= d * c;
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if (std::abs(d) < kTiny) d = kTiny;
        c = 1.0 + aa / c;
        if (std::abs(c) < kTiny) c = kTiny;
        d = 1.0 / d;
        const double delta = d * c;
        h *= delta;
        if (std::abs(delta - 1.0) < kEpsilon) break;
    }
    return h;
}

/// Regularised upper incomplete gamma Q(s, u) for 0 < s <= 1, u >= 0 (Numerical
/// Recipes gser / gcf; erfc for s = 1/2, the Student-t case).
double upper_incomplete_gamma(double s, double u) {
    if (u <= 0.0) return 1.0;
    if (s == 0.5) return std::erfc(std::sqrt(u));
    if (s == 1.0) return std::exp(-u);
    constexpr double kEpsilon = 1e-17;
    constexpr double kTiny = 1e-300;
    const double log_prefix = s * std::log(u) - u - std::lgamma(s);
    if (u < s + 1.0) {
        // P(s, u) by its series; Q = 1 - P is not small here.
        double term = 1.0 / s;
        double sum = term;
        for (int n = 1; n < 10'000; ++n) {
            term *= u / (s + n);
            sum += term;
            if (std::abs(term) < std::abs(sum) * kEpsilon) break;
        }
        return 1.0 - sum * std::exp(log_prefix);
    }
    double b = u + 1.0 - s;
    double c = 1.0 / kTiny;
    double d = 1.0 / b;
    double h = d;
    for (int n = 1; n < 10'000; ++n) {
        const double an = -n * (n - s);
        b += 2.0;
        d = an * d + b;
        if (std::abs(d) < kTiny) d = kTiny;
        c = b + an / c;
        if (std::abs(c) < kTiny) c = kTiny;
        d = 1.0 / d;
        const double delta = d * c;
        h *= delta;
        if (std::abs(delta - 1.0) < kEpsilon) break;
    }
    return std::exp(log_prefix) * h;
}

/// I_x(a, b) for a >= 15, b <= 1 by the asymptotic expansion of DiDonato and Morris
/// (1992, TOMS 708 BGRAT, Eqs. 9-9.6; the form Boost.Math uses): where x is close to 1
/// and a is large (Student's t with many degrees of freedom) the continued fraction
/// needs O(sqrt(a)) terms and stalls in double precision, while this series converges
/// in a few terms. log_x = ln x computed without cancellation.
double incomplete_beta_large_a(double a, double b, double log_x) {
    const double bm1 = b - 1.0;
    const double t = a + bm1 / 2.0;
    const double u = -t * log_x;
    // h = u^b e^-u / Gamma(b) (9.2); prefix = h Gamma(a + b) / (Gamma(a) t^b).
    const double log_h = b * std::log(u) - u - std::lgamma(b);
    if (log_h < -745.0) return 0.0;  // below the smallest double
    const double h = std::exp(log_h);
    const double prefix = std::exp(log_h - log_gamma_ratio(a, b) - b * std::log(t));
    double j = upper_incomplete_gamma(b, u) / h;  // J_0 (9.6)
    double sum = prefix * j;
    constexpr int kTerms = 30;
    double p[kTerms] = {1.0};  // p_n (9.3, 9.4)
    double factorial[2 * kTerms + 2];
    factorial[0] = 1.0;
    for (int n = 1; n < 2 * kTerms + 2; ++n) factorial[n] = factorial[n - 1] * n;
    const double half_log_x_squared = (log_x / 2.0) * (log_x / 2.0);
    double log_x_power = 1.0;
    const double four_t_squared = 4.0 * t * t;
    double b2n = b;
    for (int n = 1; n < kTerms; ++n) {
        p[n] = 0.0;
        for (int m = 1; m < n; ++m) p[n] += (m * b - n) * p[n - m] / factorial[2 * m + 1];
        p[n] = p[n] / n + bm1 / factorial[2 * n + 1];
        j = (b2n * (b2n + 1.0) * j + (u + b2n + 1.0) * log_x_power) / four_t_squared;
        log_x_power *= half_log_x_squared;
        b2n += 2.0;
        const double term = prefix * p[n] * j;
        sum += term;
        if (std::abs(term) <= std::abs(sum) * 1e-17) break;
    }
    return sum;
}

/// I_x(a, b) given x, y = 1 - x and their logarithms, each computed without
/// cancellation by the caller.
double incomplete_beta(double a, double b, double x, double y, double log_x, double log_y) {
    if (x <= 0.0) return 0.0;
    if (y <= 0.0) return 1.0;
    if (b <= 1.0 && a >= 15.0 && x > 0.5) return incomplete_beta_large_a(a, b, log_x);
    const bool direct = x < (a + 1.0) / (a + b + 2.0);
    if (!direct && a <= 1.0 && b >= 15.0 && y > 0.5) return 1.0 - incomplete_beta_large_a(b, a, log_y);
    const double log_front = a * log_x + b * log_y - log_beta(a, b);
    if (direct) return std::exp(log_front) * beta_continued_fraction(a, b, x) / a;
    return 1.0 - std::exp(log_front) * beta_continued_fraction(b, a, y) / b;
}

}  // namespace

double regularized_incomplete_beta(double a, double b, double x) {
    if (!(a > 0.0) || !(b > 0.0) || !(x >= 0.0) || !(x <= 1.0)) return kNaN;
    const double y = 1.0 - x;
    return incomplete_beta(a, b, x, y, std::log(x), std::log1p(-x));
}

double student_t_two_sided_pvalue(double t, double dof) {
    if (std::isnan(t) || std::isnan(dof) || !(dof > 0.0)) return kNaN;
    if (std::isinf(t)) return 0.0;
    const double t2 = t * t;
    if (t2 == 0.0) return 1.0;
    if (std::isinf(dof)) return normal_two_sided_pvalue(t);
    // P(|T| >= |t|) = I_x(dof / 2, 1 / 2) with x = dof / (dof + t^2); y = 1 - x = t^2 / (dof + t^2).
    const double x = dof / (dof + t2);
    const double y = t2 / (dof + t2);
    const double log_x = -std::log1p(t2 / dof);
    const double log_y = -std::log1p(dof / t2);
    return incomplete_beta(0.5 * dof, 0.5, x, y, log_x, log_y);
}

double normal_two_sided_pvalue(double z) { return std::erfc(std::abs(z) / std::numbers::sqrt2); }

namespace {

/// NumPy's float ordering: NaN after every number.
inline bool numpy_less(double a, double b) { return a < b || (b != b && a == a); }

int msb(std::int64_t value) {
    int depth = 0;
    while (value >>= 1) ++depth;
    return depth;
}

/// numpy/core/src/npysort/selection.cpp (1.24), arg variant: dumb_select_.
void dumb_select(const double* v, std::int64_t* tosort, std::int64_t num, std::int64_t kth) {
    for (std::int64_t i = 0; i <= kth; ++i) {
        std::int64_t min_index = i;
        double min_value = v[tosort[i]];
        for (std::int64_t k = i + 1; k < num; ++k)
            if (numpy_less(v[tosort[k]], min_value)) {
                min_index = k;
                min_value = v[tosort[k]];
            }
        std::swap(tosort[i], tosort[min_index]);
    }
}

void introselect(const double* v, std::int64_t* tosort, std::int64_t num, std::int64_t kth);

/// median5_: the position (1, 2 or 3) of the median of tosort[0..4], after NumPy's swaps.
std::int64_t median5(const double* v, std::int64_t* tosort) {
    if (numpy_less(v[tosort[1]], v[tosort[0]])) std::swap(tosort[1], tosort[0]);
    if (numpy_less(v[tosort[4]], v[tosort[3]])) std::swap(tosort[4], tosort[3]);
    if (numpy_less(v[tosort[3]], v[tosort[0]])) std::swap(tosort[3], tosort[0]);
    if (numpy_less(v[tosort[4]], v[tosort[1]])) std::swap(tosort[4], tosort[1]);
    if (numpy_less(v[tosort[2]], v[tosort[1]])) std::swap(tosort[2], tosort[1]);
    if (numpy_less(v[tosort[3]], v[tosort[2]])) return numpy_less(v[tosort[3]], v[tosort[1]]) ? 1 : 3;
    return 2;
}

/// median_of_median5_: medians of blocks of 5 moved to the front, then their median
/// selected (introselect on them); returns its position.
std::int64_t median_of_median5(const double* v, std::int64_t* tosort, std::int64_t num) {
    const std::int64_t num_medians = num / 5;
    for (std::int64_t block = 0, left = 0; block < num_medians; ++block, left += 5) {
        const std::int64_t median = median5(v, tosort + left);
        std::swap(tosort[left + median], tosort[block]);
    }
    if (num_medians > 2) introselect(v, tosort, num_medians, num_medians / 2);
    return num_medians / 2;
}

/// introselect_ (arg variant, float: np.argpartition with one kth, whose pivot stack
/// then changes nothing). Median-of-3 pivots, falling back to the median of medians of 5
/// after 2 log2(num) steps, as NumPy does; the selection is NumPy's, ties included.
void introselect(const double* v, std::int64_t* tosort, std::int64_t num, std::int64_t kth) {
    std::int64_t low = 0, high = num - 1;
    if (kth - low < 3) {
        dumb_select(v, tosort + low, high - low + 1, kth - low);
        return;
    }
    if (kth == num - 1) {
        // The maximum to the end (NumPy's shortcut for floats).
        std::int64_t max_index = low;
        double max_value = v[tosort[low]];
        for (std::int64_t k = low + 1; k < num; ++k)
            if (!numpy_less(v[tosort[k]], max_value)) {  // the last of equal maxima
                max_index = k;
                max_value = v[tosort[k]];
            }
        std::swap(tosort[kth], tosort[max_index]);
        return;
    }
    int depth_limit = msb(num) * 2;
    for (; low + 1 < high;) {
        std::int64_t ll = low + 1, hh = high;
        if (depth_limit > 0 || hh - ll < 5) {
            // median3_swap_: the pivot to low, the 3-lowest element to low + 1
            const std::int64_t mid = low + (high - low) / 2;
            if (numpy_less(v[tosort[high]], v[tosort[mid]])) std::swap(tosort[high], tosort[mid]);
            if (numpy_less(v[tosort[high]], v[tosort[low]])) std::swap(tosort[high], tosort[low]);
            if (numpy_less(v[tosort[low]], v[tosort[mid]])) std::swap(tosort[low], tosort[mid]);
            std::swap(tosort[mid], tosort[low + 1]);
        } else {
            // Not enough progress: the median of medians of 5 as the pivot (linear worst case).
            const std::int64_t mid = ll + median_of_median5(v, tosort + ll, hh - ll);
            std::swap(tosort[mid], tosort[low]);
            --ll;  // a larger partition than after median3_swap_
            ++hh;
        }
        --depth_limit;
        // unguarded_partition_
        const double pivot = v[tosort[low]];
        for (;;) {
            do ++ll;
            while (numpy_less(v[tosort[ll]], pivot));
            do --hh;
            while (numpy_less(pivot, v[tosort[hh]]));
            if (hh < ll) break;
            std::swap(tosort[ll], tosort[hh]);
        }
        std::swap(tosort[low], tosort[hh]);
        if (hh >= kth) high = hh - 1;
        if (hh <= kth) low = ll;
    }
    if (low + 1 == high && numpy_less(v[tosort[high]], v[tosort[low]])) std::swap(tosort[high], tosort[low]);
}

/// numpy/core/src/npysort/heapsort.cpp (1.24): aheapsort_.
void aheapsort(const double* v, std::int64_t* tosort, std::int64_t n) {
    std::int64_t* a = tosort - 1;  // 1-based heap
    std::int64_t i = 0, j = 0, tmp = 0;
    for (std::int64_t l = n >> 1; l > 0; --l) {
        tmp = a[l];
        for (i = l, j = l << 1; j <= n;) {
            if (j < n && numpy_less(v[a[j]], v[a[j + 1]])) j += 1;
            if (numpy_less(v[tmp], v[a[j]])) {
                a[i] = a[j];
                i = j;
                j += j;
            } else {
                break;
            }
        }
        a[i] = tmp;
    }
    for (; n > 1;) {
        tmp = a[n];
        a[n] = a[1];
        n -= 1;
        for (i = 1, j = 2; j <= n;) {
            if (j < n && numpy_less(v[a[j]], v[a[j + 1]])) j++;
            if (numpy_less(v[tmp], v[a[j]])) {
                a[i] = a[j];
                i = j;
                j += j;
            } else {
                break;
            }
        }
        a[i] = tmp;
    }
}

/// numpy/core/src/npysort/quicksort.cpp (1.24): aquicksort_ (np.argsort's default).
void aquicksort(const double* v, std::int64_t* tosort, std::int64_t num) {
    // SMALL_QUICKSORT of npysort_common.h: partitions while more than 16 elements remain.
    constexpr std::int64_t small_quicksort = 15;
    std::int64_t* pl = tosort;
    std::int64_t* pr = tosort + num - 1;
    std::vector<std::int64_t*> stack;
    std::vector<int> depths;
    int depth = msb(num) * 2;
    for (;;) {
        if (depth < 0) {
            aheapsort(v, pl, pr - pl + 1);
        } else {
            while ((pr - pl) > small_quicksort) {
                std::int64_t* pm = pl + ((pr - pl) >> 1);
                if (numpy_less(v[*pm], v[*pl])) std::swap(*pm, *pl);
                if (numpy_less(v[*pr], v[*pm])) std::swap(*pr, *pm);
                if (numpy_less(v[*pm], v[*pl])) std::swap(*pm, *pl);
                const double vp = v[*pm];
                std::int64_t* pi = pl;
                std::int64_t* pj = pr - 1;
                std::swap(*pm, *pj);
                for (;;) {
                    do ++pi;
                    while (numpy_less(v[*pi], vp));
                    do --pj;
                    while (numpy_less(vp, v[*pj]));
                    if (pi >= pj) break;
                    std::swap(*pi, *pj);
                }
                std::swap(*pi, *(pr - 1));
                if (pi - pl < pr - pi) {
                    stack.push_back(pi + 1);
                    stack.push_back(pr);
                    pr = pi - 1;
                } else {
                    stack.push_back(pl);
                    stack.push_back(pi - 1);
                    pl = pi + 1;
                }
                depths.push_back(--depth);
            }
            for (std::int64_t* pi = pl + 1; pi <= pr; ++pi) {
                const std::int64_t vi = *pi;
                const double vp = v[vi];
                std::int64_t* pj = pi;
                std::int64_t* pk = pi - 1;
                while (pj > pl && numpy_less(vp, v[*pk])) *pj-- = *pk--;
                *pj = vi;
            }
        }
        if (stack.empty()) break;
        pr = stack.back();
        stack.pop_back();
        pl = stack.back();
        stack.pop_back();
        depth = depths.back();
        depths.pop_back();
    }
}

}  // namespace

std::vector<std::int32_t> numpy_select_top_n(std::span<const double> scores, std::int64_t n_top) {
    const auto num = static_cast<std::int64_t>(scores.size());
    n_top = std::clamp<std::int64_t>(n_top, 0, num);
    if (n_top == 0) return {};
    // partition = np.argpartition(scores, -n_top)[-n_top:]
    std::vector<std::int64_t> tosort(static_cast<std::size_t>(num));
    std::iota(tosort.begin(), tosort.end(), 0);
    introselect(scores.data(), tosort.data(), num, num - n_top);
    const std::vector<std::int64_t> partition(tosort.end() - n_top, tosort.end());
    // partial_indices = np.argsort(scores[partition])[::-1]
    std::vector<double> selected(static_cast<std::size_t>(n_top));
    for (std::int64_t index = 0; index < n_top; ++index)
        selected[static_cast<std::size_t>(index)] = scores[static_cast<std::size_t>(partition[static_cast<std::size_t>(index)])];
    std::vector<std::int64_t> order(static_cast<std::size_t>(n_top));
    std::iota(order.begin(), order.end(), 0);
    aquicksort(selected.data(), order.data(), n_top);
    std::vector<std::int32_t> out;
    out.reserve(static_cast<std::size_t>(n_top));
    for (auto position = order.rbegin(); position != order.rend(); ++position)
        out.push_back(static_cast<std::int32_t>(partition[static_cast<std::size_t>(*position)]));
    return out;
}

std::vector<double> benjamini_hochberg(std::span<const double> pvals) {
    const std::size_t count = pvals.size();
    std::vector<std::size_t> order(count);
    std::iota(order.begin(), order.end(), std::size_t{0});
    // Tied p-values all end with the adjusted value of the last of them, so the order
    // among ties (NumPy's argsort is not stable) does not matter.
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return pvals[a] < pvals[b]; });
    std::vector<double> adjusted(count);
    double running = std::numeric_limits<double>::infinity();
    for (std::size_t rank = count; rank-- > 0;) {
        // statsmodels: pvals_sorted / (arange(1, n + 1) / n), then a reversed running minimum.
        const double factor = static_cast<double>(rank + 1) / static_cast<double>(count);
        running = std::min(running, pvals[order[rank]] / factor);
        adjusted[order[rank]] = std::min(running, 1.0);
    }
    return adjusted;
}

}  // namespace detail

namespace {

/// Floats per block of gene columns fetched for the Wilcoxon test (64 MiB), and the
/// most genes per block.
constexpr std::int64_t kMaxBlockValues = std::int64_t{1} << 24;
constexpr std::int64_t kMaxBlockGenes = 64;

const char* method_name(MarkerMethod method) {
    switch (method) {
        case MarkerMethod::TTest: return "t-test";
        case MarkerMethod::TTestOverestimVar: return "t-test_overestim_var";
        case MarkerMethod::Wilcoxon: return "wilcoxon";
    }
    return "?";
}

/// Per group and gene: moments of the tested values of the group and of the rest, and
/// the non-zero fractions of the unstandardised values.
struct GroupMoments {
    std::vector<std::int64_t> group_sizes;
    std::int64_t num_labelled = 0;
    DenseMatrix<double> mean_group, var_group, mean_rest, var_rest, pct_group, pct_rest;
};

/// The variance scanpy 1.9.6 computes for `cells` copies of the scaled zero in its
/// dense float32 matrix: pp.scale stores c = float32(float32(-mean) / std), and
/// _get_mean_var takes mean(float32(c * c)) - mean(c)^2 (sums of identical values are
/// exact in float64), scaled by n / (n - 1). Negative about half the time: scanpy's
/// sqrt then gives NaN, which ends as score 0 and p-value 1; NaN is returned for that.
double scanpy_constant_variance(double mean, double inv_std, double cells) {
    const float shifted = static_cast<float>(-mean);
    const float scaled = static_cast<float>(static_cast<double>(shifted) / (1.0 / inv_std));
    const double value = scaled;
    const double variance = (static_cast<double>(static_cast<float>(scaled * scaled)) - value * value) * (cells / (cells - 1.0));
    return variance < 0.0 ? std::numeric_limits<double>::quiet_NaN() : variance;
}

/// scanpy 1.9.6 _RankGenes._basic_stats with reference='rest': _get_mean_var of the
/// group and of ~group (mean, and var = (E[x^2] - mean^2) * n / (n - 1)), from sums and
/// sums of squares. With a standardisation z = (x - m) s: mean_z = (mean_x - m) s and
/// var_z = var_x s^2 (scanpy takes them on the float32 scaled matrix; the difference is
/// float32 rounding, ~1e-7 relative).
///
/// emulate_float32: scanpy's variance of a group whose values are all zero before
/// scaling (see RankGenesGroupsOptions::emulate_scanpy_float32).
GroupMoments group_moments(const ShardSet& values, const Standardization& standardization,
                           std::span<const std::int32_t> labels, int num_groups, bool emulate_float32, JobContext& ctx) {
    const GroupColumnStats stats = values.group_column_stats(labels, num_groups, ColumnStatsRequest{}, ctx);
    const std::int64_t genes = values.num_genes();
    GroupMoments out;
    out.group_sizes = stats.group_sizes;
    for (const auto size : stats.group_sizes) out.num_labelled += size;
    std::vector<double> total_sum(static_cast<std::size_t>(genes), 0.0), total_squares(static_cast<std::size_t>(genes), 0.0);
    std::vector<std::int64_t> total_nnz(static_cast<std::size_t>(genes), 0);
    for (int group = 0; group < num_groups; ++group) {
        for (std::int64_t gene = 0; gene < genes; ++gene) {
            total_sum[static_cast<std::size_t>(gene)] += stats.sum(group, gene);
            total_squares[static_cast<std::size_t>(gene)] += stats.sum_squares(group, gene);
            total_nnz[static_cast<std::size_t>(gene)] += stats.nnz(group, gene);
        }
    }
    for (auto* matrix : {&out.mean_group, &out.var_group, &out.mean_rest, &out.var_rest, &out.pct_group, &out.pct_rest})
        *matrix = DenseMatrix<double>(num_groups, genes, 0.0);
    const bool standardised = !standardization.mean.empty();
    auto moments = [](double sum, double squares, double cells, double& mean, double& var) {
        mean = sum / cells;
        var = (squares / cells - mean * mean) * (cells / (cells - 1.0));
        if (var < 0.0) var = 0.0;  // rounding of a constant column
    };
    for (int group = 0; group < num_groups; ++group) {
        const double cells = static_cast<double>(out.group_sizes[static_cast<std::size_t>(group)]);
        const double rest = static_cast<double>(out.num_labelled) - cells;
        for (std::int64_t gene = 0; gene < genes; ++gene) {
            const auto index = static_cast<std::size_t>(gene);
            double mean_group = 0, var_group = 0, mean_rest = 0, var_rest = 0;
            moments(stats.sum(group, gene), stats.sum_squares(group, gene), cells, mean_group, var_group);
            moments(total_sum[index] - stats.sum(group, gene), total_squares[index] - stats.sum_squares(group, gene), rest,
                    mean_rest, var_rest);
            if (standardised) {
                const double center = standardization.mean[index];
                const double inv_std = standardization.inv_std[index];
                mean_group = (mean_group - center) * inv_std;
                mean_rest = (mean_rest - center) * inv_std;
                var_group *= inv_std * inv_std;
                var_rest *= inv_std * inv_std;
                if (emulate_float32) {
                    if (stats.nnz(group, gene) == 0) var_group = scanpy_constant_variance(center, inv_std, cells);
                    if (total_nnz[index] == stats.nnz(group, gene)) var_rest = scanpy_constant_variance(center, inv_std, rest);
                }
            }
            out.mean_group(group, gene) = mean_group;
            out.var_group(group, gene) = var_group;
            out.mean_rest(group, gene) = mean_rest;
            out.var_rest(group, gene) = var_rest;
            out.pct_group(group, gene) = static_cast<double>(stats.nnz(group, gene)) / cells;
            out.pct_rest(group, gene) = static_cast<double>(total_nnz[index] - stats.nnz(group, gene)) / rest;
        }
    }
    return out;
}

/// scanpy 1.9.6 _RankGenes.t_test: scipy.stats.ttest_ind_from_stats(equal_var=False).
/// t = (mean_g - mean_r) / sqrt(var_g / n_g + var_r / n_r), Welch-Satterthwaite dof
/// (NaN dof -> 1, as scipy), p = 2 stdtr(dof, -|t|); NaN t -> score 0, NaN p -> 1.
/// 't-test_overestim_var' uses n_g in place of n_r for the rest.
void t_test(const GroupMoments& moments, bool overestimate_variance, DenseMatrix<double>& scores, DenseMatrix<double>& pvals) {
    const auto num_groups = static_cast<int>(moments.group_sizes.size());
    const std::int64_t genes = scores.cols();
    for (int group = 0; group < num_groups; ++group) {
        const double cells = static_cast<double>(moments.group_sizes[static_cast<std::size_t>(group)]);
        const double rest = overestimate_variance ? cells : static_cast<double>(moments.num_labelled) - cells;
        for (std::int64_t gene = 0; gene < genes; ++gene) {
            const double scaled_group = moments.var_group(group, gene) / cells;
            const double scaled_rest = moments.var_rest(group, gene) / rest;
            double dof = (scaled_group + scaled_rest) * (scaled_group + scaled_rest) /
                         (scaled_group * scaled_group / (cells - 1.0) + scaled_rest * scaled_rest / (rest - 1.0));
            if (std::isnan(dof)) dof = 1.0;
            const double t = (moments.mean_group(group, gene) - moments.mean_rest(group, gene)) / std::sqrt(scaled_group + scaled_rest);
            const double p = detail::student_t_two_sided_pvalue(t, dof);
            scores(group, gene) = std::isnan(t) ? 0.0 : t;
            pvals(group, gene) = std::isnan(p) ? 1.0 : p;
        }
    }
}

/// Ranks one gene's values over the labelled cells (average ranks for ties, as pandas'
/// DataFrame.rank()) and adds each group's rank sum into rank_sums(group, gene).
/// Only the non-zero values are sorted: the zeros are one tied block whose ranks follow
/// the negative values. Returns sum(t^3 - t) over the tie blocks (zeros included).
double rank_gene(std::span<const float> column, std::span<const std::int32_t> labels, const std::vector<std::int64_t>& group_sizes,
                 std::int64_t num_labelled, std::int64_t gene, DenseMatrix<double>& rank_sums) {
    std::vector<std::pair<float, std::int32_t>> nonzero;
    for (std::size_t cell = 0; cell < column.size(); ++cell) {
        const std::int32_t label = labels[cell];
        const float value = column[cell];
        if (label < 0 || value == 0.0f) continue;
        if (std::isnan(value))
            throw std::invalid_argument("rank_genes_groups: gene " + std::to_string(gene) + " has a NaN value (cell " +
                                        std::to_string(cell) + ")");
        nonzero.emplace_back(value, label);
    }
    std::sort(nonzero.begin(), nonzero.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    const auto num_nonzero = static_cast<std::int64_t>(nonzero.size());
    const std::int64_t num_zeros = num_labelled - num_nonzero;
    const auto num_negative = static_cast<std::int64_t>(
        std::partition_point(nonzero.begin(), nonzero.end(), [](const auto& entry) { return entry.first < 0.0f; }) - nonzero.begin());
    const auto num_groups = group_sizes.size();
    std::vector<std::int64_t> nonzero_in_group(num_groups, 0);
    std::vector<double> sums(num_groups, 0.0);
    double ties = 0.0;
    for (std::int64_t begin = 0; begin < num_nonzero;) {
        std::int64_t end = begin + 1;
        while (end < num_nonzero && nonzero[static_cast<std::size_t>(end)].first == nonzero[static_cast<std::size_t>(begin)].first) ++end;
        // 1-based ranks begin+1 .. end among the non-zeros; positive values come after the zero block.
        const double rank = 0.5 * static_cast<double>(begin + end + 1) + (begin >= num_negative ? static_cast<double>(num_zeros) : 0.0);
        for (std::int64_t position = begin; position < end; ++position) {
            const auto label = static_cast<std::size_t>(nonzero[static_cast<std::size_t>(position)].second);
            sums[label] += rank;
            ++nonzero_in_group[label];
        }
        const double tied = static_cast<double>(end - begin);
        ties += tied * tied * tied - tied;
        begin = end;
    }
    const double zero_rank = static_cast<double>(num_negative) + 0.5 * static_cast<double>(num_zeros + 1);
    const double zeros = static_cast<double>(num_zeros);
    ties += zeros * zeros * zeros - zeros;
    for (std::size_t group = 0; group < num_groups; ++group)
        rank_sums(static_cast<std::int64_t>(group), gene) =
            sums[group] + static_cast<double>(group_sizes[group] - nonzero_in_group[group]) * zero_rank;
    return ties;
}

/// scanpy 1.9.6 _RankGenes.wilcoxon with reference='rest': rank sums over all (labelled)
/// cells, z = (R_g - n_g (N + 1) / 2) / sqrt(T n_g n_r (N + 1) / 12) with T = 1, or
/// T = 1 - sum(t^3 - t) / (N^3 - N) when tie_correct; NaN z -> 0; p = 2 norm.sf(|z|).
void wilcoxon(const ShardSet& values, std::span<const std::int32_t> labels, const GroupMoments& moments, bool tie_correct,
              DenseMatrix<double>& scores, DenseMatrix<double>& pvals, JobContext& ctx) {
    const std::int64_t genes = values.num_genes();
    const std::int64_t cells = std::max<std::int64_t>(values.num_cells(), 1);
    const std::int64_t block_genes = std::clamp<std::int64_t>(kMaxBlockValues / cells, 1, kMaxBlockGenes);
    const auto num_groups = static_cast<std::int64_t>(moments.group_sizes.size());
    DenseMatrix<double> rank_sums(num_groups, genes, 0.0);
    std::vector<double> ties(static_cast<std::size_t>(genes), 0.0);
    std::vector<std::int32_t> block;
    for_each_block(ctx, genes, block_genes, [&](std::int64_t begin, std::int64_t end) {
        block.clear();
        for (std::int64_t gene = begin; gene < end; ++gene) block.push_back(static_cast<std::int32_t>(gene));
        const auto columns = values.gene_columns(block, ctx);
        tbb::parallel_for(tbb::blocked_range<std::int64_t>(begin, end, 1), [&](const tbb::blocked_range<std::int64_t>& range) {
            for (std::int64_t gene = range.begin(); gene < range.end(); ++gene) {
                ctx.checkpoint();
                ties[static_cast<std::size_t>(gene)] = rank_gene(columns[static_cast<std::size_t>(gene - begin)], labels,
                                                                 moments.group_sizes, moments.num_labelled, gene, rank_sums);
            }
        });
    });
    const double total = static_cast<double>(moments.num_labelled);
    for (std::int64_t group = 0; group < num_groups; ++group) {
        const double active = static_cast<double>(moments.group_sizes[static_cast<std::size_t>(group)]);
        for (std::int64_t gene = 0; gene < genes; ++gene) {
            const double correction = tie_correct ? 1.0 - ties[static_cast<std::size_t>(gene)] / (total * total * total - total) : 1.0;
            const double std_dev = std::sqrt(correction * active * (total - active) * (total + 1.0) / 12.0);
            double z = (rank_sums(group, gene) - active * ((total + 1.0) / 2.0)) / std_dev;
            if (std::isnan(z)) z = 0.0;
            scores(group, gene) = z;
            pvals(group, gene) = detail::normal_two_sided_pvalue(z);
        }
    }
}

void check_inputs(const ShardSet& values, const Standardization& standardization, std::span<const std::int32_t> labels,
                  std::span<const std::string> group_names) {
    const std::int64_t cells = values.num_cells();
    const std::int64_t genes = values.num_genes();
    if (static_cast<std::int64_t>(labels.size()) != cells)
        throw std::invalid_argument("rank_genes_groups: labels has " + std::to_string(labels.size()) +
                                    " entries; expected one per cell (" + std::to_string(cells) + ")");
    if (group_names.size() < 2)
        throw std::invalid_argument("rank_genes_groups: group_names has " + std::to_string(group_names.size()) +
                                    " entries; testing against the rest needs at least 2 groups");
    if (group_names.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
        throw std::invalid_argument("rank_genes_groups: too many groups");
    if (genes > std::numeric_limits<std::int32_t>::max())
        throw std::invalid_argument("rank_genes_groups: the matrix has too many genes for int32 gene indices");
    const auto num_groups = static_cast<std::int32_t>(group_names.size());
    std::vector<std::int64_t> sizes(group_names.size(), 0);
    for (std::size_t cell = 0; cell < labels.size(); ++cell) {
        const std::int32_t label = labels[cell];
        if (label < -1 || label >= num_groups)
            throw std::invalid_argument("rank_genes_groups: labels[" + std::to_string(cell) + "] = " + std::to_string(label) +
                                        " is outside [-1, " + std::to_string(num_groups) + ")");
        if (label >= 0) ++sizes[static_cast<std::size_t>(label)];
    }
    for (std::size_t group = 0; group < sizes.size(); ++group)
        if (sizes[group] < 2)
            throw std::invalid_argument("rank_genes_groups: group '" + group_names[group] + "' has " + std::to_string(sizes[group]) +
                                        " cell(s); every group needs at least 2 (as in scanpy)");
    const bool has_mean = !standardization.mean.empty();
    const bool has_inv_std = !standardization.inv_std.empty();
    if (!has_mean && !has_inv_std) return;
    if (static_cast<std::int64_t>(standardization.mean.size()) != genes ||
        static_cast<std::int64_t>(standardization.inv_std.size()) != genes)
        throw std::invalid_argument("rank_genes_groups: standardization.mean and standardization.inv_std need one entry per gene (" +
                                    std::to_string(genes) + "); they have " + std::to_string(standardization.mean.size()) +
                                    " and " + std::to_string(standardization.inv_std.size()));
    if (standardization.clipped())
        throw std::invalid_argument("rank_genes_groups: a clipped standardization (max_value / min_value) is not supported");
    for (std::int64_t gene = 0; gene < genes; ++gene) {
        const auto index = static_cast<std::size_t>(gene);
        if (!std::isfinite(standardization.mean[index]))
            throw std::invalid_argument("rank_genes_groups: standardization.mean[" + std::to_string(gene) + "] is not finite");
        if (!std::isfinite(standardization.inv_std[index]) || !(standardization.inv_std[index] > 0.0))
            throw std::invalid_argument("rank_genes_groups: standardization.inv_std[" + std::to_string(gene) +
                                        "] must be finite and > 0");
    }
}

}  // namespace

void validate(const RankGenesGroupsOptions& options) {
    switch (options.method) {
        case MarkerMethod::TTest:
        case MarkerMethod::TTestOverestimVar:
        case MarkerMethod::Wilcoxon: break;
        default: throw std::invalid_argument("RankGenesGroupsOptions::method is not a known MarkerMethod");
    }
    switch (options.corr_method) {
        case MarkerCorrection::BenjaminiHochberg:
        case MarkerCorrection::Bonferroni: break;
        default: throw std::invalid_argument("RankGenesGroupsOptions::corr_method is not a known MarkerCorrection");
    }
    if (options.log1p_base) {
        const double base = *options.log1p_base;
        if (!std::isfinite(base) || !(base > 0.0) || base == 1.0)
            throw std::invalid_argument("RankGenesGroupsOptions::log1p_base must be finite, > 0 and != 1");
    }
}

RankGenesGroupsResult rank_genes_groups(const ShardSet& values, const Standardization& standardization,
                                        std::span<const std::int32_t> labels, std::span<const std::string> group_names,
                                        const RankGenesGroupsOptions& options, JobContext& ctx) {
    validate(options);
    check_inputs(values, standardization, labels, group_names);
    const auto num_groups = static_cast<int>(group_names.size());
    const std::int64_t genes = values.num_genes();

    ctx.begin_stage(std::string("rank_genes_groups: ") + method_name(options.method));
    const GroupMoments moments = group_moments(values, standardization, labels, num_groups, options.emulate_scanpy_float32, ctx);
    DenseMatrix<double> scores(num_groups, genes, 0.0), pvals(num_groups, genes, 1.0);
    if (options.method == MarkerMethod::Wilcoxon)
        wilcoxon(values, labels, moments, options.tie_correct, scores, pvals, ctx);
    else
        t_test(moments, options.method == MarkerMethod::TTestOverestimVar, scores, pvals);
    ctx.checkpoint();

    RankGenesGroupsResult result;
    result.method = options.method;
    result.corr_method = options.corr_method;
    result.num_labelled_cells = moments.num_labelled;
    result.num_genes_tested = genes;
    const std::int64_t keep = options.num_genes <= 0 ? genes : std::min<std::int64_t>(options.num_genes, genes);
    const double log_base = options.log1p_base ? std::log(*options.log1p_base) : 1.0;
    auto expm1 = [&](double mean) { return options.log1p_base ? std::expm1(mean * log_base) : std::expm1(mean); };
    for (int group = 0; group < num_groups; ++group) {
        const auto group_scores = scores.row(group);
        const auto group_pvals = pvals.row(group);
        std::vector<double> adjusted;
        if (options.corr_method == MarkerCorrection::BenjaminiHochberg) {
            adjusted = detail::benjamini_hochberg(group_pvals);
        } else {
            adjusted.resize(group_pvals.size());
            for (std::size_t gene = 0; gene < group_pvals.size(); ++gene)
                adjusted[gene] = std::min(group_pvals[gene] * static_cast<double>(genes), 1.0);
        }
        // scanpy's _select_top_n on the float64 scores (rounded to float32 only when
        // stored), with NumPy's partition and sort orders among equal scores.
        std::vector<double> keys(group_scores.begin(), group_scores.end());
        if (options.rankby_abs)
            for (auto& key : keys) key = std::abs(key);
        const std::vector<std::int32_t> order = detail::numpy_select_top_n(keys, keep);
        GroupMarkers markers;
        markers.name = group_names[static_cast<std::size_t>(group)];
        markers.num_cells = moments.group_sizes[static_cast<std::size_t>(group)];
        markers.num_rest_cells = moments.num_labelled - markers.num_cells;
        markers.genes.reserve(static_cast<std::size_t>(keep));
        for (std::int64_t position = 0; position < keep; ++position) {
            const std::int32_t gene = order[static_cast<std::size_t>(position)];
            const auto index = static_cast<std::size_t>(gene);
            MarkerGene marker;
            marker.gene = gene;
            marker.score = group_scores[index];
            // scanpy 1.9.6: np.log2((expm1(mean_group) + 1e-9) / (expm1(mean_rest) + 1e-9)).
            marker.logfoldchange = std::log2((expm1(moments.mean_group(group, gene)) + 1e-9) / (expm1(moments.mean_rest(group, gene)) + 1e-9));
            marker.pval = group_pvals[index];
            marker.pval_adj = adjusted[index];
            marker.pct_group = moments.pct_group(group, gene);
            marker.pct_rest = moments.pct_rest(group, gene);
            markers.genes.push_back(marker);
        }
        result.groups.push_back(std::move(markers));
    }
    ctx.report(1.0);
    return result;
}

RankGenesGroupsResult rank_genes_groups(const ShardSet& values, std::span<const std::int32_t> labels,
                                        std::span<const std::string> group_names, const RankGenesGroupsOptions& options,
                                        JobContext& ctx) {
    return rank_genes_groups(values, Standardization{}, labels, group_names, options, ctx);
}

}  // namespace fathom
