#pragma once
/// Options of the marker-gene tests (core/algo/markers.hpp).
#include <optional>
#include <string_view>

namespace fathom {

/// The test (scanpy's `method`).
enum class MarkerMethod {
    TTest,             ///< 't-test': Welch's t-test, group against rest
    TTestOverestimVar, ///< 't-test_overestim_var': as TTest with the rest's n replaced by the group's n
    Wilcoxon,          ///< 'wilcoxon': Mann-Whitney U as a normal z-score (rank sums over all labelled cells)
};

/// scanpy's name of `method` ("t-test", "t-test_overestim_var", "wilcoxon").
constexpr const char* marker_method_name(MarkerMethod method) noexcept {
    switch (method) {
        case MarkerMethod::TTest: return "t-test";
        case MarkerMethod::TTestOverestimVar: return "t-test_overestim_var";
        case MarkerMethod::Wilcoxon: return "wilcoxon";
    }
    return "?";
}

/// The method scanpy names `name`; unset when none.
constexpr std::optional<MarkerMethod> marker_method_named(std::string_view name) noexcept {
    for (const auto method : {MarkerMethod::TTest, MarkerMethod::TTestOverestimVar, MarkerMethod::Wilcoxon})
        if (name == marker_method_name(method)) return method;
    return std::nullopt;
}

/// The multiple-testing correction of the p-values (scanpy's `corr_method`), applied per
/// group over ALL tested genes, before the top genes are selected.
enum class MarkerCorrection {
    BenjaminiHochberg, ///< 'benjamini-hochberg' (statsmodels fdr_bh), clipped to <= 1
    Bonferroni,        ///< 'bonferroni': min(p * num_genes, 1)
};

/// Options of rank_genes_groups (scanpy names; defaults as scanpy 1.9.6 except num_genes).
struct RankGenesGroupsOptions {
    MarkerMethod method = MarkerMethod::TTest;              ///< scanpy `method` (scanpy 1.9 default 't-test')
    /// Genes kept per group, the top by score (scanpy `n_genes`). 0 or negative = every
    /// gene (scanpy's default n_genes=None); capped at the number of genes tested.
    /// 100 here so that a result stays small on a full gene set.
    int num_genes = 100;
    MarkerCorrection corr_method = MarkerCorrection::BenjaminiHochberg;  ///< scanpy `corr_method`
    bool tie_correct = false;  ///< Wilcoxon only: tie-corrected variance (scanpy `tie_correct`)
    bool rankby_abs = false;   ///< rank by |score| (scanpy `rankby_abs`); the stored score keeps its sign
    /// Base of the logarithm the values were logged with (scanpy reads uns['log1p']['base']):
    /// fold changes undo it with expm1(mean * ln(base)). Unset = natural log (expm1(mean)).
    /// > 0 and != 1 when set.
    std::optional<double> log1p_base;
    /// t-tests with a standardisation only. scanpy tests its dense float32 scaled
    /// matrix, where a group (or rest) whose values are all zero before scaling holds
    /// copies of one float32 value c = float32(float32(-mean) / std); scanpy's variance
    /// of it, mean(float32(c^2)) - c^2, is rounding noise instead of 0, and negative
    /// about half the time, which scanpy turns into score 0 and p-value 1 (so scanpy
    /// drops, e.g., half of the genes expressed only in one group). Unset (the default),
    /// such a group has variance 0 and the exact Welch statistic: those genes rank as
    /// the strong markers they are. Set, scanpy's variance is reproduced, so that such
    /// genes, and through Benjamini-Hochberg the adjusted p-values of all genes, follow
    /// scanpy wherever c rounds as in scanpy (exactly, given scanpy's own mean and std);
    /// for side-by-side comparisons with scanpy.
    bool emulate_scanpy_float32 = false;
    /// Equal when every field is equal.
    friend bool operator==(const RankGenesGroupsOptions&, const RankGenesGroupsOptions&) = default;
};

}  // namespace fathom
