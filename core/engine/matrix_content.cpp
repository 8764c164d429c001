#include "core/engine/matrix_content.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace fathom {

namespace {

std::string number(double value) {
    std::ostringstream out;
    out.precision(value >= 100.0 ? 6 : 3);
    out << value;
    return out.str();
}

}  // namespace

const char* matrix_content_name(MatrixContent content) {
    switch (content) {
        case MatrixContent::RawCounts: return "raw integer counts";
        case MatrixContent::NonIntegerCounts: return "non-integer counts";
        case MatrixContent::LogNormalized: return "log-normalised";
        case MatrixContent::Scaled: return "scaled";
        case MatrixContent::Other: return "other";
    }
    return "other";
}

MatrixContentScan::MatrixContentScan(std::int64_t num_genes)
    : m_sum(static_cast<std::size_t>(std::max<std::int64_t>(0, num_genes)), 0.0),
      m_sum_squares(static_cast<std::size_t>(std::max<std::int64_t>(0, num_genes)), 0.0) {}

void MatrixContentScan::add(const CsrShard& rows) {
    for (std::int64_t row = 0; row < rows.num_rows(); ++row) {
        double expm1_sum = 0.0;
        const auto begin = rows.row_offsets[static_cast<std::size_t>(row)];
        const auto end = rows.row_offsets[static_cast<std::size_t>(row) + 1];
        for (auto entry = begin; entry < end; ++entry) {
            const float value = rows.values[static_cast<std::size_t>(entry)];
            const auto gene = static_cast<std::size_t>(rows.gene_indices[static_cast<std::size_t>(entry)]);
            if (value < 0.0f) m_negative = true;
            if (value != std::floor(value)) m_integer = false;
            m_max = std::max(m_max, value);
            expm1_sum += std::expm1(static_cast<double>(value));
            if (gene < m_sum.size()) {
                m_sum[gene] += value;
                m_sum_squares[gene] += static_cast<double>(value) * value;
            }
        }
        if (end > begin) m_expm1_sums.push_back(expm1_sum);
    }
    m_rows += rows.num_rows();
}

MatrixContentReport MatrixContentScan::report(std::optional<bool> all_integer) const {
    MatrixContentReport out;
    out.rows_examined = m_rows;
    const std::string scanned = " (in the " + std::to_string(m_rows) + " cells scanned)";
    if (m_negative) {
        // pp.scale's output: every gene centred (mean 0), unit variance.
        std::int64_t varying = 0, centred = 0;
        const double rows = static_cast<double>(std::max<std::int64_t>(1, m_rows));
        for (std::size_t gene = 0; gene < m_sum.size(); ++gene) {
            const double mean = m_sum[gene] / rows;
            const double variance = std::max(0.0, m_sum_squares[gene] / rows - mean * mean);
            if (variance <= 0.0) continue;
            ++varying;
            centred += std::abs(mean) <= 0.25 * std::sqrt(variance);
        }
        if (varying > 0 && static_cast<double>(centred) >= 0.9 * static_cast<double>(varying)) {
            out.content = MatrixContent::Scaled;
            out.evidence = "negative values; per-gene means near 0 (" + std::to_string(centred) + " of " +
                           std::to_string(varying) + " genes)" + scanned;
        } else {
            out.content = MatrixContent::Other;
            out.evidence = "negative values, genes not centred" + scanned;
        }
        return out;
    }
    if (all_integer.value_or(m_integer)) {
        out.content = MatrixContent::RawCounts;
        out.evidence = all_integer ? "integer and non-negative" : "integer and non-negative" + scanned;
        return out;
    }
    if (!m_expm1_sums.empty()) {
        std::vector<double> sums = m_expm1_sums;
        std::nth_element(sums.begin(), sums.begin() + static_cast<std::ptrdiff_t>(sums.size() / 2), sums.end());
        const double median = sums[sums.size() / 2];
        const auto [low, high] = std::minmax_element(m_expm1_sums.begin(), m_expm1_sums.end());
        if (median > 0.0 && m_max <= 30.0f && (*high - *low) <= 1e-3 * median) {
            out.content = MatrixContent::LogNormalized;
            out.evidence = "non-negative; expm1 row sums near " + number(median) + scanned;
            return out;
        }
    }
    if (m_max <= std::log1p(1e5)) {
        out.content = MatrixContent::LogNormalized;
        out.evidence = "non-negative, not integer, every value <= " + number(m_max) + " (log scale)" + scanned;
        return out;
    }
    out.content = MatrixContent::NonIntegerCounts;
    out.evidence = "non-negative, not integer, values up to " + number(m_max) + scanned;
    return out;
}

Recipe suggested_recipe(MatrixContent content) {
    return content == MatrixContent::RawCounts || content == MatrixContent::NonIntegerCounts ? Recipe::Zheng17
                                                                                             : Recipe::None;
}

std::string recipe_content_warning(Recipe recipe, const MatrixContentReport& report) {
    const std::string found = std::string(matrix_content_name(report.content)) + ": " + report.evidence;
    if (recipe != Recipe::None && report.content != MatrixContent::RawCounts)
        return std::string("X holds non-integer values: ") + (recipe == Recipe::Zheng17 ? "Zheng17" : "Seurat") +
               " expects raw counts (X looks " + found + "; the recipe ran on X as stored, as Scanpy runs it" +
               (suggested_recipe(report.content) == Recipe::None ? "; recipe none fits processed data" : "") + ")";
    if (recipe == Recipe::None && report.content == MatrixContent::RawCounts)
        return "X holds raw integer counts, and recipe none runs PCA on them as they are (no normalisation, log or "
               "gene selection): choose recipe zheng17 or seurat unless X is meant to be used as stored";
    if (recipe == Recipe::None && report.content == MatrixContent::NonIntegerCounts)
        return "X looks like counts (" + found +
               "), and recipe none runs PCA on them as they are (no normalisation, log or gene selection): choose "
               "recipe zheng17 or seurat unless X is meant to be used as stored";
    return {};
}

}  // namespace fathom
