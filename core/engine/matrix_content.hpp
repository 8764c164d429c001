#pragma once
/// What a matrix holds — raw integer counts, non-integer counts, log-normalised or scaled
/// values — decided in one place from its values, with the evidence in words, and the
/// recipe that fits it. The engine's dataset summary, `fathom-cli info`, the pipeline's
/// warnings and the explorer's recipe pre-choice all read it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/data/CsrShard.hpp"
#include "core/engine/PipelineSettings.hpp"

namespace fathom {

/// What X holds.
enum class MatrixContent {
    RawCounts,         ///< every value an integer >= 0
    NonIntegerCounts,  ///< >= 0, not integer, not log-like: corrected / down-sampled counts, TPM
    LogNormalized,     ///< >= 0, not integer, log scale (expm1 row sums near a constant, or small values)
    Scaled,            ///< negative values with per-gene means near 0 (pp.scale's output)
    Other,             ///< negative values otherwise
};

/// "raw integer counts", "non-integer counts", "log-normalised", "scaled", "other".
const char* matrix_content_name(MatrixContent content);

/// The decision and how it was reached ("integer and non-negative", "non-negative;
/// expm1 row sums near 10000", "negative values; per-gene means near 0", ...).
struct MatrixContentReport {
    MatrixContent content = MatrixContent::RawCounts;
    std::string evidence;
    std::int64_t rows_examined = 0;  ///< rows whose values were scanned
};

/// Accumulates rows of a cells x genes matrix (any subset of its rows, e.g. the first
/// thousands), then decides. Thresholds: expm1 row sums within 0.1% of their median
/// (rows with values) = normalised then log1p; otherwise all values <= log1p(1e5)
/// (11.5) = log scale; negative values with |mean| <= 0.25 std for >= 90% of the genes
/// that vary = scaled.
class MatrixContentScan {
public:
    explicit MatrixContentScan(std::int64_t num_genes);
    void add(const CsrShard& rows);
    /// The decision on the rows added. `all_integer` (when the caller scanned every
    /// value of the matrix) overrides the integer test of the scanned rows.
    MatrixContentReport report(std::optional<bool> all_integer = std::nullopt) const;

private:
    std::int64_t m_rows = 0;
    bool m_integer = true;
    bool m_negative = false;
    float m_max = 0.0f;
    std::vector<double> m_expm1_sums;  ///< per scanned row with values
    std::vector<double> m_sum, m_sum_squares;
};

/// The recipe that fits: zheng17 for counts (integer or not), none for processed data.
Recipe suggested_recipe(MatrixContent content);

/// The warning to give when `recipe` contradicts what X holds; empty when it fits.
std::string recipe_content_warning(Recipe recipe, const MatrixContentReport& report);

}  // namespace fathom
