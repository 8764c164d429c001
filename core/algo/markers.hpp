#pragma once
/// Marker genes, as scanpy 1.9.6 `tl.rank_genes_groups(adata, groupby, reference='rest')`
/// with method 't-test', 't-test_overestim_var' or 'wilcoxon': every group is tested
/// against all other labelled cells, gene by gene, and the genes are ranked by score.
///
/// The matrix is never gathered: the t-tests need only per-group sums and sums of
/// squares (ShardSet::group_column_stats), and the Wilcoxon test fetches a bounded block
/// of gene columns at a time (ShardSet::gene_columns) and ranks each gene on the host,
/// sorting only its non-zero values (the implicit zeros form one tied block whose rank
/// is known from the number of negative values).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/backend/ShardSet.hpp"
#include "core/types/markers_options.hpp"

namespace fathom {

class JobContext;

/// Throws std::invalid_argument naming the field, e.g.
/// "RankGenesGroupsOptions::log1p_base must be > 0 and != 1".
void validate(const RankGenesGroupsOptions& options);

/// One ranked gene of one group. Scores and fold changes are kept in double (scanpy
/// stores them as float32; the ranking itself uses scanpy's float64 scores).
struct MarkerGene {
    std::int32_t gene = 0;        ///< gene (column) index in the tested matrix
    /// Test statistic: Welch t, or the Wilcoxon z-score. NaN (0 / 0: equal means and no
    /// variance) is reported as 0, as scanpy does; +-infinity when the means differ and
    /// both variances are 0.
    double score = 0.0;
    /// scanpy 1.9.6: log2((expm1(mean_group) + 1e-9) / (expm1(mean_rest) + 1e-9)) on the
    /// means of the tested values (standardised values when a standardisation is given,
    /// exactly as scanpy does on a scaled adata.X); NaN where the ratio is negative or
    /// 0 / 0, +-infinity where it is infinite or 0 (IEEE / NumPy semantics).
    double logfoldchange = 0.0;
    double pval = 1.0;            ///< two-sided p-value of the test; a NaN p-value is reported as 1
    double pval_adj = 1.0;        ///< corrected p-value (corr_method), in [0, 1]
    /// Fraction of the group's cells with a non-zero (unstandardised) value: scanpy's
    /// `pts` on the unscaled values, nnz_group / n_group.
    double pct_group = 0.0;
    double pct_rest = 0.0;        ///< the same over the rest (scanpy `pts_rest`)
};

/// The ranked genes of one group.
struct GroupMarkers {
    std::string name;                 ///< the group's name as given
    std::int64_t num_cells = 0;       ///< cells labelled with the group (n_group)
    std::int64_t num_rest_cells = 0;  ///< labelled cells of every other group (n_rest)
    /// The top genes by score, descending (by |score| with rankby_abs); equal scores keep
    /// gene order (scanpy's order among exact ties is NumPy's unstable argsort).
    std::vector<MarkerGene> genes;
};

/// Result of rank_genes_groups.
struct RankGenesGroupsResult {
    MarkerMethod method = MarkerMethod::TTest;   ///< the test run
    MarkerCorrection corr_method = MarkerCorrection::BenjaminiHochberg;
    std::int64_t num_labelled_cells = 0;         ///< cells with a label >= 0 (N)
    std::int64_t num_genes_tested = 0;           ///< columns of the matrix
    std::vector<GroupMarkers> groups;            ///< one per group, in label order
};

/// Ranks the genes of every group against the rest (scanpy 1.9.6 rank_genes_groups,
/// reference='rest').
///
/// - `values`: the cells x genes matrix tested (e.g. the log-normalised HVG block).
/// - `standardization`: empty spans = none. Otherwise the tested values are
///   z = (x - mean[g]) * inv_std[g] (scanpy's adata.X after pp.scale without clipping;
///   implicit zeros become -mean * inv_std); mean and inv_std have one entry per gene,
///   inv_std finite and > 0. Clipped standardisations are rejected (the t-test takes
///   the moments of z analytically from those of x, which clipping breaks). The
///   Wilcoxon ranks do not change under this monotone map and are taken on x; the
///   fraction of expressing cells (pct) is always taken on x.
/// - `labels`: num_cells entries, each in [0, group_names.size()) or -1: a cell left out
///   of every group AND of every rest (as if the AnnData were subset to the labelled
///   cells; scanpy would count unlabelled cells in the rest).
/// - `group_names`: one name per group (at least 2 groups).
///
/// Every group needs at least 2 cells (scanpy raises for smaller groups too). Throws
/// std::invalid_argument naming the argument at fault, or the group. Cancellable
/// (Cancelled) between gene blocks.
RankGenesGroupsResult rank_genes_groups(const ShardSet& values, const Standardization& standardization,
                                        std::span<const std::int32_t> labels, std::span<const std::string> group_names,
                                        const RankGenesGroupsOptions& options, JobContext& ctx);

/// rank_genes_groups without a standardisation (the values are tested as they are).
RankGenesGroupsResult rank_genes_groups(const ShardSet& values, std::span<const std::int32_t> labels,
                                        std::span<const std::string> group_names, const RankGenesGroupsOptions& options,
                                        JobContext& ctx);

namespace detail {

/// Regularised incomplete beta function I_x(a, b) for a, b > 0 and x in [0, 1]
/// (continued fraction, modified Lentz, as Numerical Recipes' betai, with an accurate
/// log B(a, b) for large arguments). Relative accuracy about 1e-14 in the tail that is
/// returned directly. NaN for arguments out of range.
double regularized_incomplete_beta(double a, double b, double x);

/// Two-sided p-value of Student's t: P(|T| >= |t|) with `dof` (> 0, not necessarily
/// integer) degrees of freedom, i.e. scipy's 2 * stdtr(dof, -|t|) = I_{dof/(dof+t^2)}(dof/2, 1/2).
/// 1 at t = 0, 0 at t = +-infinity, NaN for NaN input or dof <= 0.
double student_t_two_sided_pvalue(double t, double dof);

/// Two-sided p-value of a standard normal z-score: 2 * scipy.stats.norm.sf(|z|) = erfc(|z| / sqrt 2).
double normal_two_sided_pvalue(double z);

/// Benjamini-Hochberg adjusted p-values in the input order, as statsmodels
/// multipletests(method='fdr_bh'): p_(i) * n / i made monotone from the largest p down,
/// clipped to <= 1. NaN inputs must have been replaced (scanpy replaces them by 1).
std::vector<double> benjamini_hochberg(std::span<const double> pvals);

/// scanpy 1.9.6's _select_top_n(scores, n_top) with NumPy 1.24's algorithms, so that
/// equal scores come out in Scanpy's order: np.argpartition(scores, -n_top)[-n_top:]
/// (introselect: median-of-3 pivots, the median of medians of 5 after 2 log2(n) steps,
/// unguarded partition, selection sort for kth within 3 of the low end) then np.argsort
/// of those scores (quicksort: median-of-3, insertion sort from 16 elements down,
/// heapsort past 2 log2(n) levels), reversed. NaN sorts last, as in NumPy. Equal scores
/// come out in NumPy's order for any number of them (NumPy 1.24 has no vectorised
/// float64 argsort or argpartition: its order does not depend on the CPU). Returns gene
/// indices, best first.
std::vector<std::int32_t> numpy_select_top_n(std::span<const double> scores, std::int64_t n_top);

}  // namespace detail

}  // namespace fathom
