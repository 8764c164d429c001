#include "core/backend/CpuBackend.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include "core/backend/log1p_float.hpp"
#include "core/backend/projection.hpp"
#include "core/backend/shard_checks.hpp"
#include "core/backend/project_kernel.hpp"
#include "core/backend/sparse_gram.hpp"
#include "core/data/ShardedCsr.hpp"
#include "core/data/counts.hpp"

namespace fathom {

namespace {

using backend_checks::block_map;
using backend_checks::check_size;
using backend_checks::check_standardization;

void check_request(const char* primitive, const ColumnStatsRequest& request, const CsrShard& shard) {
    backend_checks::check_request(primitive, request, shard.num_rows(), shard.num_genes);
}

// ---- deterministic work split ------------------------------------------------------
//
// A reduction over the rows of a shard runs on "lanes": contiguous row ranges chosen
// from the shard alone (its nnz and the partial's size), never from the thread count.
// Each lane accumulates its own partial sequentially in row order; the partials are
// then added in lane order. Threads only decide which lane runs when, so any number
// of threads gives bit-identical results.

constexpr std::int64_t kNnzPerLane = std::int64_t{1} << 15;
constexpr std::int64_t kMaxLanes = 16;
constexpr std::int64_t kLaneMemoryBudget = std::int64_t{256} << 20;  // bytes for all partials
// A lane checks for cancellation after this many stored entries (well under 50 ms).
constexpr std::int64_t kCheckpointNnz = std::int64_t{1} << 16;
constexpr std::int64_t kCheckpointRows = 4096;

std::vector<RowRange> make_lanes(const CsrShard& shard, std::int64_t bytes_per_lane) {
    const std::int64_t rows = shard.num_rows();
    if (rows == 0) return {};
    std::int64_t lanes = std::clamp<std::int64_t>(shard.nnz() / kNnzPerLane + 1, 1, kMaxLanes);
    if (bytes_per_lane > 0) lanes = std::min(lanes, std::max<std::int64_t>(1, kLaneMemoryBudget / bytes_per_lane));
    lanes = std::min(lanes, rows);
    return split_rows_by_nnz(shard.row_offsets, static_cast<int>(lanes));
}

/// Calls row_fn(row) for rows [begin, end) in order, checking for cancellation about
/// every kCheckpointNnz entries.
template <typename RowFn>
void for_rows_checked(const CsrShard& shard, std::int64_t begin, std::int64_t end, JobContext& ctx, RowFn&& row_fn) {
    std::int64_t since_check = 0;
    std::int64_t rows_since_check = 0;
    ctx.checkpoint();
    for (std::int64_t row = begin; row < end; ++row) {
        row_fn(row);
        since_check += shard.row_offsets[static_cast<std::size_t>(row) + 1] - shard.row_offsets[static_cast<std::size_t>(row)];
        if (since_check >= kCheckpointNnz || ++rows_since_check >= kCheckpointRows) {
            ctx.checkpoint();
            since_check = 0;
            rows_since_check = 0;
        }
    }
}

/// Runs make() once per lane, body(partial, lane_range) on each lane in parallel, and
/// combine(total, partial) in lane order. Returns make() for an empty shard.
template <typename Make, typename Body, typename Combine>
auto reduce_lanes(const CsrShard& shard, std::int64_t bytes_per_lane, Make&& make, Body&& body, Combine&& combine) {
    const auto lanes = make_lanes(shard, bytes_per_lane);
    using Partial = decltype(make());
    if (lanes.empty()) return make();
    std::vector<Partial> partials;
    partials.reserve(lanes.size());
    for (std::size_t lane = 0; lane < lanes.size(); ++lane) partials.push_back(make());
    tbb::parallel_for(std::size_t{0}, lanes.size(), [&](std::size_t lane) { body(partials[lane], lanes[lane]); });
    Partial total = std::move(partials[0]);
    for (std::size_t lane = 1; lane < partials.size(); ++lane) combine(total, partials[lane]);
    return total;
}

/// Parallel loop over rows for work that is independent per row (no reduction), with
/// cancellation checks between chunks.
template <typename RowFn>
void parallel_rows(const CsrShard& shard, JobContext& ctx, RowFn&& row_fn) {
    const std::int64_t rows = shard.num_rows();
    if (rows == 0) return;
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, rows, 256), [&](const tbb::blocked_range<std::int64_t>& range) {
        for_rows_checked(shard, range.begin(), range.end(), ctx, row_fn);
    });
}

// ---- argument checks ---------------------------------------------------------------

/// The element transform in float32, as NumPy applies it to a float32 array (log1p:
/// log1p_float.hpp).
inline float transform_value(float value, ElementTransform transform) noexcept {
    switch (transform) {
        case ElementTransform::Log1p: return log1p_float(value);
        case ElementTransform::Expm1: return std::expm1(value);
        case ElementTransform::None: break;
    }
    return value;
}

/// The value a statistic sees for entry `entry` of row `row` (see ColumnStatsRequest).
inline double request_value(const CsrShard& shard, const ColumnStatsRequest& request, std::int64_t row,
                            std::int64_t entry) noexcept {
    float value = shard.values[static_cast<std::size_t>(entry)];
    if (!request.row_scale.empty())
        value = static_cast<float>(static_cast<double>(value) * request.row_scale[static_cast<std::size_t>(row)]);
    double transformed = transform_value(value, request.transform);
    if (!request.column_max.empty())
        transformed = std::min(transformed,
                               request.column_max[static_cast<std::size_t>(shard.gene_indices[static_cast<std::size_t>(entry)])]);
    return transformed;
}

inline double clip(double z, const Standardization& standardization) noexcept {
    if (standardization.max_value && z > *standardization.max_value) z = *standardization.max_value;
    if (standardization.min_value && z < *standardization.min_value) z = *standardization.min_value;
    return z;
}

/// Rows per dense tile in the clipped Gram / projection.
constexpr std::int64_t kTileRows = 128;

/// Fills tile (rows x block) with the standardised, clipped values of rows
/// [begin, begin + rows).
void fill_tile(const CsrShard& shard, std::int64_t begin, std::int64_t rows, const std::vector<std::int32_t>& map,
               const Standardization& standardization, std::vector<double>& zero_value, std::vector<double>& tile,
               std::int64_t block_size) {
    for (std::int64_t local = 0; local < rows; ++local) {
        double* out = tile.data() + local * block_size;
        std::copy(zero_value.begin(), zero_value.end(), out);
        const auto row = begin + local;
        for (auto entry = shard.row_offsets[static_cast<std::size_t>(row)];
             entry < shard.row_offsets[static_cast<std::size_t>(row) + 1]; ++entry) {
            const auto column = map[static_cast<std::size_t>(shard.gene_indices[static_cast<std::size_t>(entry)])];
            if (column < 0) continue;
            const double value = shard.values[static_cast<std::size_t>(entry)];
            out[column] = clip((value - standardization.mean[static_cast<std::size_t>(column)]) *
                                   standardization.inv_std[static_cast<std::size_t>(column)],
                               standardization);
        }
    }
}

}  // namespace

CpuBackend::CpuBackend(CsrShard shard, int index) : m_shard(std::move(shard)), m_index(index) {
    backend_checks::check_shard(m_shard, "CpuBackend " + name());
}

std::string CpuBackend::name() const { return "cpu:" + std::to_string(m_index); }

std::unique_ptr<Backend> CpuBackend::clone() const {
    return std::unique_ptr<Backend>(new CpuBackend(m_shard, m_index, Trusted{}));
}

std::unique_ptr<Backend> CpuBackend::clone_columns(std::span<const std::uint8_t> keep, JobContext& ctx) const {
    check_size("clone_columns", "keep", keep.size(), m_shard.num_genes);
    return std::unique_ptr<Backend>(new CpuBackend(columns_kept(keep, ctx), m_index, Trusted{}));
}

RowStats CpuBackend::row_stats(std::span<const std::uint8_t> gene_mask, JobContext& ctx) const {
    if (!gene_mask.empty()) check_size("row_stats", "gene_mask", gene_mask.size(), m_shard.num_genes);
    const auto rows = static_cast<std::size_t>(m_shard.num_rows());
    RowStats stats;
    stats.total.assign(rows, 0.0);
    stats.nnz.assign(rows, 0);
    if (!gene_mask.empty()) stats.subset_total.assign(rows, 0.0);
    parallel_rows(m_shard, ctx, [&](std::int64_t row) {
        double total = 0.0;
        double subset = 0.0;
        std::int64_t nonzero = 0;
        for (auto entry = m_shard.row_offsets[static_cast<std::size_t>(row)];
             entry < m_shard.row_offsets[static_cast<std::size_t>(row) + 1]; ++entry) {
            const double value = m_shard.values[static_cast<std::size_t>(entry)];
            total += value;
            nonzero += value != 0.0 ? 1 : 0;
            if (!gene_mask.empty() && gene_mask[static_cast<std::size_t>(m_shard.gene_indices[static_cast<std::size_t>(entry)])])
                subset += value;
        }
        stats.total[static_cast<std::size_t>(row)] = total;
        stats.nnz[static_cast<std::size_t>(row)] = nonzero;
        if (!gene_mask.empty()) stats.subset_total[static_cast<std::size_t>(row)] = subset;
    });
    return stats;
}

ColumnStats CpuBackend::column_stats(const ColumnStatsRequest& request, JobContext& ctx) const {
    check_request("column_stats", request, m_shard);
    const auto genes = static_cast<std::size_t>(m_shard.num_genes);
    if (request.transform == ElementTransform::None && request.column_max.empty()) {
        // The common request (raw or row-scaled values): one gene's three sums side by
        // side, so an entry touches one cache line of the lane's partial. The same
        // additions in the same order as the general path below.
        struct GeneSums {
            double sum = 0.0;
            double sum_squares = 0.0;
            std::int64_t nnz = 0;
        };
        struct Partial {
            std::int64_t rows = 0;
            std::vector<GeneSums> genes;
        };
        auto make = [genes] { return Partial{0, std::vector<GeneSums>(genes)}; };
        auto body = [&](Partial& partial, const RowRange& lane) {
            for_rows_checked(m_shard, lane.begin, lane.end, ctx, [&](std::int64_t row) {
                if (!request.row_mask.empty() && !request.row_mask[static_cast<std::size_t>(row)]) return;
                ++partial.rows;
                const double scale = request.row_scale.empty() ? 1.0 : request.row_scale[static_cast<std::size_t>(row)];
                const auto end = m_shard.row_offsets[static_cast<std::size_t>(row) + 1];
                for (auto entry = m_shard.row_offsets[static_cast<std::size_t>(row)]; entry < end; ++entry) {
                    // float32(v * 1.0) is v: no scale is the same arithmetic.
                    const double value = static_cast<float>(static_cast<double>(m_shard.values[static_cast<std::size_t>(entry)]) * scale);
                    GeneSums& sums = partial.genes[static_cast<std::size_t>(m_shard.gene_indices[static_cast<std::size_t>(entry)])];
                    sums.sum += value;
                    sums.sum_squares += value * value;
                    sums.nnz += value != 0.0 ? 1 : 0;
                }
            });
        };
        auto combine = [](Partial& total, const Partial& part) {
            total.rows += part.rows;
            for (std::size_t gene = 0; gene < total.genes.size(); ++gene) {
                total.genes[gene].sum += part.genes[gene].sum;
                total.genes[gene].sum_squares += part.genes[gene].sum_squares;
                total.genes[gene].nnz += part.genes[gene].nnz;
            }
        };
        const Partial total = reduce_lanes(m_shard, static_cast<std::int64_t>(genes) * 24, make, body, combine);
        ColumnStats stats;
        stats.num_rows = total.rows;
        stats.sum.resize(genes);
        stats.sum_squares.resize(genes);
        stats.nnz.resize(genes);
        for (std::size_t gene = 0; gene < genes; ++gene) {
            stats.sum[gene] = total.genes[gene].sum;
            stats.sum_squares[gene] = total.genes[gene].sum_squares;
            stats.nnz[gene] = total.genes[gene].nnz;
        }
        return stats;
    }
    auto make = [genes] {
        ColumnStats stats;
        stats.sum.assign(genes, 0.0);
        stats.sum_squares.assign(genes, 0.0);
        stats.nnz.assign(genes, 0);
        return stats;
    };
    auto body = [&](ColumnStats& stats, const RowRange& lane) {
        for_rows_checked(m_shard, lane.begin, lane.end, ctx, [&](std::int64_t row) {
            if (!request.row_mask.empty() && !request.row_mask[static_cast<std::size_t>(row)]) return;
            ++stats.num_rows;
            for (auto entry = m_shard.row_offsets[static_cast<std::size_t>(row)];
                 entry < m_shard.row_offsets[static_cast<std::size_t>(row) + 1]; ++entry) {
                const double value = request_value(m_shard, request, row, entry);
                const auto gene = static_cast<std::size_t>(m_shard.gene_indices[static_cast<std::size_t>(entry)]);
                stats.sum[gene] += value;
                stats.sum_squares[gene] += value * value;
                stats.nnz[gene] += value != 0.0 ? 1 : 0;
            }
        });
    };
    auto combine = [](ColumnStats& total, const ColumnStats& part) {
        total.num_rows += part.num_rows;
        for (std::size_t gene = 0; gene < total.sum.size(); ++gene) {
            total.sum[gene] += part.sum[gene];
            total.sum_squares[gene] += part.sum_squares[gene];
            total.nnz[gene] += part.nnz[gene];
        }
    };
    return reduce_lanes(m_shard, static_cast<std::int64_t>(genes) * 24, make, body, combine);
}

CpuBackend::CountStats CpuBackend::count_stats(std::span<const std::uint8_t> gene_mask, JobContext& ctx) const {
    if (!gene_mask.empty()) check_size("count_stats", "gene_mask", gene_mask.size(), m_shard.num_genes);
    const auto rows = static_cast<std::size_t>(m_shard.num_rows());
    const auto genes = static_cast<std::size_t>(m_shard.num_genes);
    CountStats stats;
    stats.rows.total.assign(rows, 0.0);
    stats.rows.nnz.assign(rows, 0);
    if (!gene_mask.empty()) stats.rows.subset_total.assign(rows, 0.0);
    // One gene's four sums side by side: an entry touches one cache line of the lane's
    // partial.
    struct GeneSums {
        double raw_sum = 0.0;
        std::int64_t raw_nnz = 0;
        double sum = 0.0;
        double sum_squares = 0.0;
    };
    struct Partial {
        std::vector<GeneSums> genes;
        bool counts = true;
    };
    auto make = [genes] { return Partial{std::vector<GeneSums>(genes), true}; };
    auto body = [&](Partial& partial, const RowRange& lane) {
        unsigned counts = 1;
        for_rows_checked(m_shard, lane.begin, lane.end, ctx, [&](std::int64_t row) {
            const auto begin = static_cast<std::size_t>(m_shard.row_offsets[static_cast<std::size_t>(row)]);
            const auto end = static_cast<std::size_t>(m_shard.row_offsets[static_cast<std::size_t>(row) + 1]);
            // row_stats' sums, in entry order.
            double total = 0.0, subset = 0.0;
            std::int64_t nonzero = 0;
            for (std::size_t entry = begin; entry < end; ++entry) {
                const float stored = m_shard.values[entry];
                const double value = stored;
                total += value;
                nonzero += value != 0.0 ? 1 : 0;
                counts &= is_count(stored) ? 1u : 0u;
                if (!gene_mask.empty() && gene_mask[static_cast<std::size_t>(m_shard.gene_indices[entry])]) subset += value;
            }
            stats.rows.total[static_cast<std::size_t>(row)] = total;
            stats.rows.nnz[static_cast<std::size_t>(row)] = nonzero;
            if (!gene_mask.empty()) stats.rows.subset_total[static_cast<std::size_t>(row)] = subset;
            // column_stats' sums: raw, and scaled as float32(value * (1 / total)).
            const double scale = total > 0.0 ? 1.0 / total : 0.0;
            for (std::size_t entry = begin; entry < end; ++entry) {
                const float stored = m_shard.values[entry];
                GeneSums& sums = partial.genes[static_cast<std::size_t>(m_shard.gene_indices[entry])];
                sums.raw_sum += static_cast<double>(stored);
                sums.raw_nnz += stored != 0.0f ? 1 : 0;
                const double scaled = static_cast<float>(static_cast<double>(stored) * scale);
                sums.sum += scaled;
                sums.sum_squares += scaled * scaled;
            }
        });
        partial.counts = counts != 0;
    };
    auto combine = [](Partial& total, const Partial& part) {
        for (std::size_t gene = 0; gene < total.genes.size(); ++gene) {
            total.genes[gene].raw_sum += part.genes[gene].raw_sum;
            total.genes[gene].raw_nnz += part.genes[gene].raw_nnz;
            total.genes[gene].sum += part.genes[gene].sum;
            total.genes[gene].sum_squares += part.genes[gene].sum_squares;
        }
        total.counts = total.counts && part.counts;
    };
    // column_stats' lanes (its partial's size), so the sums are added in its order.
    const Partial total = reduce_lanes(m_shard, static_cast<std::int64_t>(genes) * 24, make, body, combine);
    stats.raw_sum.resize(genes);
    stats.raw_nnz.resize(genes);
    stats.scaled_sum.resize(genes);
    stats.scaled_sum_squares.resize(genes);
    for (std::size_t gene = 0; gene < total.genes.size(); ++gene) {
        stats.raw_sum[gene] = total.genes[gene].raw_sum;
        stats.raw_nnz[gene] = total.genes[gene].raw_nnz;
        stats.scaled_sum[gene] = total.genes[gene].sum;
        stats.scaled_sum_squares[gene] = total.genes[gene].sum_squares;
    }
    stats.counts = total.counts;
    return stats;
}

GroupColumnStats CpuBackend::group_column_stats(std::span<const std::int32_t> labels, int num_groups,
                                                const ColumnStatsRequest& request, JobContext& ctx) const {
    if (num_groups < 0) throw std::invalid_argument("Backend::group_column_stats: num_groups must be >= 0");
    check_size("group_column_stats", "labels", labels.size(), m_shard.num_rows());
    ColumnStatsRequest unmasked = request;
    unmasked.row_mask = {};
    check_request("group_column_stats", unmasked, m_shard);
    for (std::size_t row = 0; row < labels.size(); ++row)
        if (labels[row] < -1 || labels[row] >= num_groups)
            throw std::invalid_argument("Backend::group_column_stats: label " + std::to_string(labels[row]) + " of row " +
                                        std::to_string(row) + " is outside [-1, " + std::to_string(num_groups) + ")");
    const std::int64_t genes = m_shard.num_genes;
    auto make = [genes, num_groups] {
        GroupColumnStats stats;
        stats.group_sizes.assign(static_cast<std::size_t>(num_groups), 0);
        stats.sum = DenseMatrix<double>(num_groups, genes, 0.0);
        stats.sum_squares = DenseMatrix<double>(num_groups, genes, 0.0);
        stats.nnz = DenseMatrix<std::int64_t>(num_groups, genes, 0);
        return stats;
    };
    auto body = [&](GroupColumnStats& stats, const RowRange& lane) {
        for_rows_checked(m_shard, lane.begin, lane.end, ctx, [&](std::int64_t row) {
            const auto group = labels[static_cast<std::size_t>(row)];
            if (group < 0) return;
            ++stats.group_sizes[static_cast<std::size_t>(group)];
            auto sum = stats.sum.row(group);
            auto sum_squares = stats.sum_squares.row(group);
            auto nnz = stats.nnz.row(group);
            for (auto entry = m_shard.row_offsets[static_cast<std::size_t>(row)];
                 entry < m_shard.row_offsets[static_cast<std::size_t>(row) + 1]; ++entry) {
                const double value = request_value(m_shard, unmasked, row, entry);
                const auto gene = static_cast<std::size_t>(m_shard.gene_indices[static_cast<std::size_t>(entry)]);
                sum[gene] += value;
                sum_squares[gene] += value * value;
                nnz[gene] += value != 0.0 ? 1 : 0;
            }
        });
    };
    auto combine = [](GroupColumnStats& total, const GroupColumnStats& part) {
        for (std::size_t group = 0; group < total.group_sizes.size(); ++group) total.group_sizes[group] += part.group_sizes[group];
        for (std::size_t index = 0; index < total.sum.values().size(); ++index) {
            total.sum.values()[index] += part.sum.values()[index];
            total.sum_squares.values()[index] += part.sum_squares.values()[index];
            total.nnz.values()[index] += part.nnz.values()[index];
        }
    };
    return reduce_lanes(m_shard, static_cast<std::int64_t>(num_groups) * genes * 24, make, body, combine);
}

std::vector<float> CpuBackend::gene_column(std::int32_t gene, JobContext& ctx) const {
    if (gene < 0 || gene >= m_shard.num_genes)
        throw std::invalid_argument("Backend::gene_column: gene " + std::to_string(gene) + " is outside [0, " +
                                    std::to_string(m_shard.num_genes) + ")");
    std::vector<float> column(static_cast<std::size_t>(m_shard.num_rows()), 0.0f);
    parallel_rows(m_shard, ctx, [&](std::int64_t row) {
        const auto first = m_shard.gene_indices.begin() + m_shard.row_offsets[static_cast<std::size_t>(row)];
        const auto last = m_shard.gene_indices.begin() + m_shard.row_offsets[static_cast<std::size_t>(row) + 1];
        const auto found = std::lower_bound(first, last, gene);
        if (found != last && *found == gene)
            column[static_cast<std::size_t>(row)] = m_shard.values[static_cast<std::size_t>(found - m_shard.gene_indices.begin())];
    });
    return column;
}

GramResult CpuBackend::gram(GeneBlock genes, const Standardization& standardization, JobContext& ctx) const {
    std::int64_t block_size = 0;
    const auto map = block_map("gram", genes, m_shard.num_genes, block_size);
    check_standardization("gram", standardization, block_size);
    const auto block = static_cast<std::size_t>(block_size);
    // One partial per lane: X^T X (upper triangle used) or Z^T Z, plus column sums.
    struct Partial {
        std::int64_t rows = 0;
        std::vector<double> cross;
        std::vector<double> sums;
    };
    auto make = [block] {
        Partial partial;
        partial.cross.assign(block * block, 0.0);
        partial.sums.assign(block, 0.0);
        return partial;
    };
    auto combine = [](Partial& total, const Partial& part) {
        total.rows += part.rows;
        for (std::size_t index = 0; index < total.cross.size(); ++index) total.cross[index] += part.cross[index];
        for (std::size_t index = 0; index < total.sums.size(); ++index) total.sums[index] += part.sums[index];
    };
    const auto bytes = static_cast<std::int64_t>(block * block + block) * 8;
    GramResult result;
    result.gram = DenseMatrix<double>(block_size, block_size, 0.0);
    result.column_sums.assign(block, 0.0);

    if (!standardization.clipped()) {
        // Z^T Z = D (X^T X - mu s^T - s mu^T + n mu mu^T) D with D = diag(inv_std) and s
        // the block's column sums: only the stored entries are visited.
        // X^T X by panel pairs over the stored entries (backend/sparse_gram.cpp).
        const detail::SparseGram total = detail::sparse_gram(m_shard, map, block_size, ctx);
        result.num_rows = m_shard.num_rows();
        const double rows = static_cast<double>(result.num_rows);
        if (result.num_rows == 0 || block == 0) return result;
        for (std::size_t a = 0; a < block; ++a) {
            const double mean_a = standardization.mean[a];
            const double inv_a = standardization.inv_std[a];
            result.column_sums[a] = inv_a * (total.sums[a] - rows * mean_a);
            for (std::size_t b = a; b < block; ++b) {
                const double mean_b = standardization.mean[b];
                const double centred = total.cross[a * block + b] - mean_a * total.sums[b] - total.sums[a] * mean_b +
                                       rows * mean_a * mean_b;
                const double value = inv_a * standardization.inv_std[b] * centred;
                result.gram(static_cast<std::int64_t>(a), static_cast<std::int64_t>(b)) = value;
                result.gram(static_cast<std::int64_t>(b), static_cast<std::int64_t>(a)) = value;
            }
        }
        return result;
    }

    // Clipped: Z is formed tile by tile (kTileRows x block, dense) and Z^T Z accumulated.
    std::vector<double> zero_value(block);
    for (std::size_t column = 0; column < block; ++column)
        zero_value[column] = clip(-standardization.mean[column] * standardization.inv_std[column], standardization);
    auto body = [&](Partial& partial, const RowRange& lane) {
        std::vector<double> tile(static_cast<std::size_t>(kTileRows) * block);
        for (std::int64_t begin = lane.begin; begin < lane.end; begin += kTileRows) {
            ctx.checkpoint();
            const std::int64_t rows = std::min(kTileRows, lane.end - begin);
            fill_tile(m_shard, begin, rows, map, standardization, zero_value, tile, block_size);
            partial.rows += rows;
            for (std::int64_t local = 0; local < rows; ++local) {
                // A dense row costs block^2 / 2 multiply-adds: check every row.
                ctx.checkpoint();
                const double* z = tile.data() + static_cast<std::size_t>(local) * block;
                for (std::size_t a = 0; a < block; ++a) {
                    const double z_a = z[a];
                    partial.sums[a] += z_a;
                    double* cross_row = partial.cross.data() + a * block;
                    for (std::size_t b = a; b < block; ++b) cross_row[b] += z_a * z[b];
                }
            }
        }
    };
    const Partial total = reduce_lanes(m_shard, bytes, make, body, combine);
    result.num_rows = total.rows;
    if (total.cross.empty()) return result;
    result.column_sums = total.sums;
    for (std::size_t a = 0; a < block; ++a)
        for (std::size_t b = a; b < block; ++b) {
            const double value = total.cross[a * block + b];
            result.gram(static_cast<std::int64_t>(a), static_cast<std::int64_t>(b)) = value;
            result.gram(static_cast<std::int64_t>(b), static_cast<std::int64_t>(a)) = value;
        }
    return result;
}

DenseMatrix<double> CpuBackend::project(const ProjectionRequest& request, JobContext& ctx) const {
    if (request.loadings == nullptr) throw std::invalid_argument("Backend::project: loadings is required");
    std::int64_t block_size = 0;
    const auto map = block_map("project", request.genes, m_shard.num_genes, block_size);
    const auto& standardization = request.standardization;
    check_standardization("project", standardization, block_size);
    const auto& loadings = *request.loadings;
    if (loadings.rows() != block_size)
        throw std::invalid_argument("Backend::project: loadings has " + std::to_string(loadings.rows()) +
                                    " rows; expected one per block gene (" + std::to_string(block_size) + ")");
    if (!request.center.empty()) check_size("project", "center", request.center.size(), block_size);
    const std::int64_t components = loadings.cols();
    const auto block = static_cast<std::size_t>(block_size);
    const auto width = static_cast<std::size_t>(components);
    DenseMatrix<double> scores(m_shard.num_rows(), components, 0.0);
    auto center = [&](std::size_t column) { return request.center.empty() ? 0.0 : request.center[column]; };

    if (!standardization.clipped()) {
        // score = sum over stored x of x * inv_std * L  -  sum over genes of (mean * inv_std + center) * L.
        const auto projection = backend_detail::sparse_projection(request, block_size);
        // Row blocks through the SIMD kernel (backend/project_kernel.cpp).
        const std::int64_t rows = m_shard.num_rows();
        tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, rows, 256), [&](const tbb::blocked_range<std::int64_t>& range) {
            ctx.checkpoint();
            detail::project_rows(m_shard, range.begin(), range.end(), map.data(), projection.weights.data(),
                                 projection.offset.data(), components, scores.values().data());
        });
        return scores;
    }

    // Clipped: dense tiles of Z, minus the centre, times the loadings.
    std::vector<double> zero_value(block);
    for (std::size_t column = 0; column < block; ++column)
        zero_value[column] = clip(-standardization.mean[column] * standardization.inv_std[column], standardization);
    const std::int64_t rows = m_shard.num_rows();
    const std::int64_t tiles = (rows + kTileRows - 1) / kTileRows;
    tbb::parallel_for(std::int64_t{0}, tiles, [&](std::int64_t tile_index) {
        ctx.checkpoint();
        std::vector<double> tile(static_cast<std::size_t>(kTileRows) * block);
        const std::int64_t begin = tile_index * kTileRows;
        const std::int64_t count = std::min(kTileRows, rows - begin);
        fill_tile(m_shard, begin, count, map, standardization, zero_value, tile, block_size);
        for (std::int64_t local = 0; local < count; ++local) {
            const double* z = tile.data() + static_cast<std::size_t>(local) * block;
            auto out = scores.row(begin + local);
            for (std::size_t column = 0; column < block; ++column) {
                const double value = z[column] - center(column);
                const auto loading_row = loadings.row(static_cast<std::int64_t>(column));
                for (std::size_t component = 0; component < width; ++component) out[component] += value * loading_row[component];
            }
        }
    });
    return scores;
}

bool CpuBackend::values_are_counts(JobContext& ctx) const {
    ctx.checkpoint();
    return all_counts(m_shard.values);
}

void CpuBackend::scale_rows(std::span<const double> factors, JobContext& ctx) {
    check_size("scale_rows", "factors", factors.size(), m_shard.num_rows());
    parallel_rows(m_shard, ctx, [&](std::int64_t row) {
        const double factor = factors[static_cast<std::size_t>(row)];
        for (auto entry = m_shard.row_offsets[static_cast<std::size_t>(row)];
             entry < m_shard.row_offsets[static_cast<std::size_t>(row) + 1]; ++entry) {
            float& value = m_shard.values[static_cast<std::size_t>(entry)];
            value = static_cast<float>(static_cast<double>(value) * factor);
        }
    });
}

void CpuBackend::log1p(JobContext& ctx) {
    parallel_rows(m_shard, ctx, [&](std::int64_t row) {
        const auto begin = m_shard.row_offsets[static_cast<std::size_t>(row)];
        const auto end = m_shard.row_offsets[static_cast<std::size_t>(row) + 1];
        log1p_float_in_place(m_shard.values.data() + begin, static_cast<std::size_t>(end - begin));
    });
}

CsrShard CpuBackend::columns_kept(std::span<const std::uint8_t> keep, JobContext& ctx) const {
    std::vector<std::int32_t> renumber(keep.size(), -1);
    std::int32_t kept = 0;
    for (std::size_t gene = 0; gene < keep.size(); ++gene)
        if (keep[gene]) renumber[gene] = kept++;
    const std::int64_t rows = m_shard.num_rows();
    CsrShard out;
    out.row_begin = m_shard.row_begin;
    out.num_genes = kept;
    std::vector<std::int64_t>& offsets = out.row_offsets;
    offsets.assign(static_cast<std::size_t>(rows) + 1, 0);
    // One pass over the shard: each block of rows keeps its entries in its own arrays
    // (row counts into offsets), then the blocks are concatenated in order. Entries are
    // compacted without a branch (written, then kept by advancing the cursor) into a
    // scratch reused by the thread, and copied out at their kept size.
    constexpr std::int64_t kBlockRows = 512;
    const std::int64_t blocks = (rows + kBlockRows - 1) / kBlockRows;
    struct Part {
        std::vector<std::int32_t> gene_indices;
        std::vector<float> values;
    };
    std::vector<Part> parts(static_cast<std::size_t>(blocks));
    tbb::enumerable_thread_specific<Part> scratch;
    tbb::parallel_for(std::int64_t{0}, blocks, [&](std::int64_t block) {
        const std::int64_t begin = block * kBlockRows;
        const std::int64_t end = std::min(rows, begin + kBlockRows);
        const auto first = m_shard.row_offsets[static_cast<std::size_t>(begin)];
        const auto entries = static_cast<std::size_t>(m_shard.row_offsets[static_cast<std::size_t>(end)] - first);
        Part& buffer = scratch.local();
        if (buffer.gene_indices.size() < entries) {
            buffer.gene_indices.resize(entries);
            buffer.values.resize(entries);
        }
        std::size_t cursor = 0;
        for_rows_checked(m_shard, begin, end, ctx, [&](std::int64_t row) {
            const std::size_t before = cursor;
            for (auto entry = m_shard.row_offsets[static_cast<std::size_t>(row)];
                 entry < m_shard.row_offsets[static_cast<std::size_t>(row) + 1]; ++entry) {
                const auto gene = renumber[static_cast<std::size_t>(m_shard.gene_indices[static_cast<std::size_t>(entry)])];
                buffer.gene_indices[cursor] = gene;
                buffer.values[cursor] = m_shard.values[static_cast<std::size_t>(entry)];
                cursor += gene >= 0 ? 1 : 0;
            }
            offsets[static_cast<std::size_t>(row) + 1] = static_cast<std::int64_t>(cursor - before);
        });
        Part& part = parts[static_cast<std::size_t>(block)];
        part.gene_indices.assign(buffer.gene_indices.begin(), buffer.gene_indices.begin() + static_cast<std::ptrdiff_t>(cursor));
        part.values.assign(buffer.values.begin(), buffer.values.begin() + static_cast<std::ptrdiff_t>(cursor));
    });
    for (std::size_t row = 0; row < static_cast<std::size_t>(rows); ++row) offsets[row + 1] += offsets[row];
    out.gene_indices.resize(static_cast<std::size_t>(offsets.back()));
    out.values.resize(static_cast<std::size_t>(offsets.back()));
    tbb::parallel_for(std::int64_t{0}, blocks, [&](std::int64_t block) {
        Part& part = parts[static_cast<std::size_t>(block)];
        const auto position = static_cast<std::ptrdiff_t>(offsets[static_cast<std::size_t>(block * kBlockRows)]);
        std::copy(part.gene_indices.begin(), part.gene_indices.end(), out.gene_indices.begin() + position);
        std::copy(part.values.begin(), part.values.end(), out.values.begin() + position);
        part = Part{};
    });
    return out;
}

void CpuBackend::subset_columns(std::span<const std::uint8_t> keep, JobContext& ctx) {
    check_size("subset_columns", "keep", keep.size(), m_shard.num_genes);
    if (std::all_of(keep.begin(), keep.end(), [](std::uint8_t flag) { return flag != 0; })) return;  // nothing dropped
    CsrShard kept = columns_kept(keep, ctx);
    m_shard.row_offsets = std::move(kept.row_offsets);
    m_shard.gene_indices = std::move(kept.gene_indices);
    m_shard.values = std::move(kept.values);
    m_shard.num_genes = kept.num_genes;
}

void CpuBackend::subset_rows(std::span<const std::uint8_t> keep, std::int64_t new_row_begin, JobContext& ctx) {
    check_size("subset_rows", "keep", keep.size(), m_shard.num_rows());
    if (new_row_begin < 0) throw std::invalid_argument("Backend::subset_rows: new_row_begin must be >= 0");
    ctx.checkpoint();
    std::vector<std::int64_t> offsets{0};
    std::vector<std::int64_t> source_rows;
    for (std::size_t row = 0; row < keep.size(); ++row) {
        if (!keep[row]) continue;
        source_rows.push_back(static_cast<std::int64_t>(row));
        offsets.push_back(offsets.back() + m_shard.row_offsets[row + 1] - m_shard.row_offsets[row]);
    }
    std::vector<std::int32_t> indices(static_cast<std::size_t>(offsets.back()));
    std::vector<float> values(static_cast<std::size_t>(offsets.back()));
    const auto kept_rows = static_cast<std::int64_t>(source_rows.size());
    if (kept_rows > 0) {
        tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, kept_rows, 256), [&](const tbb::blocked_range<std::int64_t>& range) {
            ctx.checkpoint();
            for (auto row = range.begin(); row < range.end(); ++row) {
                const auto source = static_cast<std::size_t>(source_rows[static_cast<std::size_t>(row)]);
                const auto first = m_shard.row_offsets[source];
                const auto last = m_shard.row_offsets[source + 1];
                std::copy(m_shard.gene_indices.begin() + first, m_shard.gene_indices.begin() + last,
                          indices.begin() + offsets[static_cast<std::size_t>(row)]);
                std::copy(m_shard.values.begin() + first, m_shard.values.begin() + last,
                          values.begin() + offsets[static_cast<std::size_t>(row)]);
            }
        });
    }
    m_shard.row_offsets = std::move(offsets);
    m_shard.gene_indices = std::move(indices);
    m_shard.values = std::move(values);
    m_shard.row_begin = new_row_begin;
}

}  // namespace fathom
