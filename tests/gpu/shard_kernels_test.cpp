// The CUDA kernels' arithmetic (gpu/shard_kernels.hpp) run by its host loops on the
// CPU, against the CPU backend: the same functions the kernels call per row or entry,
// so this checks the device logic without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>

#include "core/backend/CpuBackend.hpp"
#include "core/backend/log1p_float.hpp"
#include "core/backend/projection.hpp"
#include "gpu/shard_kernels.hpp"
#include "tests/support/simulate.hpp"

namespace fathom::test {
namespace {

namespace k = gpu::kernels;

CsrShard simulated(std::uint64_t seed, std::int64_t cells = 300, std::int64_t genes = 45, bool integer = true) {
    SimulationOptions options;
    options.num_cells = cells;
    options.num_genes = genes;
    options.seed = seed;
    options.density = 0.25;
    options.empty_cell_fraction = 0.1;
    options.zero_gene_fraction = 0.15;
    options.integer_counts = integer;
    return simulate_counts(options);
}

void expect_relative(double actual, double expected, double tolerance, const std::string& what) {
    EXPECT_LE(relative_difference(actual, expected, 1e-12), tolerance) << what << ": " << actual << " vs " << expected;
}

int transform_code(ElementTransform transform) {
    switch (transform) {
        case ElementTransform::Log1p: return k::kTransformLog1p;
        case ElementTransform::Expm1: return k::kTransformExpm1;
        case ElementTransform::None: break;
    }
    return k::kTransformNone;
}

TEST(ShardKernels, LaneBoundsCoverEveryRowOnceAndBalanceNonZeros) {
    const auto shard = simulated(3, 1000);
    for (const std::int64_t lanes : {1, 2, 7, 64, 1000, 5000}) {
        const auto bounds = k::lane_bounds(shard.row_offsets, lanes);
        ASSERT_EQ(bounds.front(), 0);
        ASSERT_EQ(bounds.back(), shard.num_rows());
        EXPECT_EQ(static_cast<std::int64_t>(bounds.size()) - 1, std::min<std::int64_t>(lanes, shard.num_rows()));
        std::int64_t largest = 0;
        for (std::size_t lane = 0; lane + 1 < bounds.size(); ++lane) {
            EXPECT_LT(bounds[lane], bounds[lane + 1]) << "every lane has at least one row";
            largest = std::max(largest, shard.row_offsets[static_cast<std::size_t>(bounds[lane + 1])] -
                                            shard.row_offsets[static_cast<std::size_t>(bounds[lane])]);
        }
        // By non-zeros: no lane holds much more than its share plus one row.
        std::int64_t widest_row = 0;
        for (std::int64_t row = 0; row < shard.num_rows(); ++row)
            widest_row = std::max(widest_row, shard.row_offsets[static_cast<std::size_t>(row) + 1] -
                                                  shard.row_offsets[static_cast<std::size_t>(row)]);
        const auto used = static_cast<std::int64_t>(bounds.size()) - 1;
        EXPECT_LE(largest, shard.nnz() / used + 2 * widest_row) << lanes << " lanes";
    }
    EXPECT_EQ(k::lane_bounds({0}, 16), (std::vector<std::int64_t>{0}));
    EXPECT_EQ(k::max_lanes_for_width(0), 1);
    EXPECT_EQ(k::max_lanes_for_width(10), 1024);
    EXPECT_EQ(k::max_lanes_for_width(28000), (std::int64_t{256} << 20) / (28000 * 24));
    EXPECT_EQ(k::max_lanes_for_width(std::int64_t{1} << 40), 1);
}

TEST(ShardKernels, ReadBlocksCoverTheRowsWithinTheEntryLimit) {
    const std::vector<std::int64_t> offsets{0, 3, 3, 10, 11, 30, 31, 32};  // row 4 alone holds 19
    for (const std::int64_t limit : {1, 5, 8, 20, 100}) {
        std::int64_t row = 0, blocks = 0;
        while (row < 7) {
            const auto end = k::read_block_end(offsets, row, limit);
            ASSERT_GT(end, row);
            // Within the limit unless the block is one long row; maximal otherwise.
            if (end - row > 1) {
                EXPECT_LE(offsets[static_cast<std::size_t>(end)] - offsets[static_cast<std::size_t>(row)], limit);
            }
            if (end < 7) {
                EXPECT_GT(offsets[static_cast<std::size_t>(end) + 1] - offsets[static_cast<std::size_t>(row)], limit);
            }
            row = end;
            ++blocks;
        }
        EXPECT_EQ(row, 7);
        if (limit == 100) {
            EXPECT_EQ(blocks, 1);
        }
    }
}

TEST(ShardKernels, IsCountAcceptsNonNegativeIntegersOnly) {
    for (const float value : {0.0f, 1.0f, 17.0f, 16777216.0f}) EXPECT_TRUE(k::is_count(value)) << value;
    for (const float value : {0.5f, -1.0f, -0.25f, std::nanf(""), 1e-30f}) EXPECT_FALSE(k::is_count(value)) << value;
    EXPECT_TRUE(k::is_count(-0.0f)) << "-0 equals 0, as the CPU check says";
}

TEST(ShardKernels, RowStatsHostLoopMatchesCpuBackend) {
    const auto shard = simulated(5);
    JobContext ctx;
    const CpuBackend cpu(shard, 0);
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(shard.num_genes), 0);
    for (std::size_t gene = 1; gene < mask.size(); gene += 4) mask[gene] = 1;
    const auto expected = cpu.row_stats(mask, ctx);
    const auto rows = static_cast<std::size_t>(shard.num_rows());
    std::vector<double> total(rows), subset(rows);
    std::vector<std::int64_t> nnz(rows);
    for (std::int64_t row = 0; row < shard.num_rows(); ++row)
        k::row_stats_one(shard.row_offsets.data(), shard.gene_indices.data(), shard.values.data(), mask.data(), row,
                         total.data(), nnz.data(), subset.data());
    EXPECT_EQ(total, expected.total);
    EXPECT_EQ(nnz, expected.nnz);
    EXPECT_EQ(subset, expected.subset_total);
}

TEST(ShardKernels, ColumnStatsHostLoopMatchesCpuBackendForEveryRequestKind) {
    const auto counts = simulated(7, 400, 50);
    auto logs = counts;
    for (auto& value : logs.values) value = std::log1p(value);
    const auto rows = static_cast<std::size_t>(counts.num_rows());
    const auto genes = static_cast<std::size_t>(counts.num_genes);
    std::vector<double> scale(rows), column_max(genes);
    std::vector<std::uint8_t> mask(rows);
    for (std::size_t row = 0; row < rows; ++row) {
        scale[row] = 0.3 + 0.0171 * static_cast<double>(row % 37);
        mask[row] = row % 3 != 2 ? 1 : 0;
    }
    for (std::size_t gene = 0; gene < genes; ++gene) column_max[gene] = 1.2 + 0.25 * static_cast<double>(gene % 5);
    struct Case {
        bool scale, clip, mask;
        ElementTransform transform;
    };
    JobContext ctx;
    for (const Case& test_case : {Case{false, false, false, ElementTransform::None}, Case{true, false, false, ElementTransform::Log1p},
                                  Case{false, false, true, ElementTransform::Expm1}, Case{true, true, true, ElementTransform::None},
                                  Case{false, true, false, ElementTransform::Log1p}}) {
        const CsrShard& shard = test_case.transform == ElementTransform::Expm1 ? logs : counts;
        ColumnStatsRequest request;
        request.transform = test_case.transform;
        if (test_case.scale) request.row_scale = scale;
        if (test_case.clip) request.column_max = column_max;
        if (test_case.mask) request.row_mask = mask;
        const auto expected = CpuBackend(shard, 0).column_stats(request, ctx);

        k::ValueRequest value_request;
        value_request.transform = transform_code(test_case.transform);
        value_request.row_scale = test_case.scale ? scale.data() : nullptr;
        value_request.column_max = test_case.clip ? column_max.data() : nullptr;
        for (const std::int64_t lanes : {std::int64_t{1}, std::int64_t{13}, k::max_lanes_for_width(shard.num_genes)}) {
            std::vector<double> sum(genes), squares(genes);
            std::vector<std::int64_t> nnz(genes);
            const auto bounds = k::lane_bounds(shard.row_offsets, lanes);
            const auto included = k::column_stats_host(shard.row_offsets.data(), shard.gene_indices.data(),
                                                       shard.values.data(), bounds, shard.num_genes, value_request,
                                                       test_case.mask ? mask.data() : nullptr, sum.data(), squares.data(),
                                                       nnz.data());
            EXPECT_EQ(included, expected.num_rows);
            EXPECT_EQ(nnz, expected.nnz);
            // The expm1 transform rounds through double (within one float ulp of libm's
            // expm1f) and lanes change the order of additions: close, not identical.
            for (std::size_t gene = 0; gene < genes; ++gene) {
                expect_relative(sum[gene], expected.sum[gene], 1e-6, "sum");
                expect_relative(squares[gene], expected.sum_squares[gene], 1e-6, "sum_squares");
            }
        }
    }
}

TEST(ShardKernels, ColumnStatsWithoutTransformIsExactUpToAdditionOrder) {
    const auto shard = simulated(9, 500, 30);
    JobContext ctx;
    const auto expected = CpuBackend(shard, 0).column_stats({}, ctx);
    std::vector<double> sum(30), squares(30);
    std::vector<std::int64_t> nnz(30);
    k::column_stats_host(shard.row_offsets.data(), shard.gene_indices.data(), shard.values.data(),
                         k::lane_bounds(shard.row_offsets, 8), 30, {}, nullptr, sum.data(), squares.data(), nnz.data());
    // Integer counts: every partial sum is an exact integer, so the order cannot matter.
    EXPECT_EQ(sum, expected.sum);
    EXPECT_EQ(squares, expected.sum_squares);
    EXPECT_EQ(nnz, expected.nnz);
}

TEST(ShardKernels, GroupStatsHostLoopMatchesCpuBackend) {
    const auto shard = simulated(11, 350, 40);
    JobContext ctx;
    const int groups = 5;
    std::vector<std::int32_t> labels(static_cast<std::size_t>(shard.num_rows()));
    for (std::size_t row = 0; row < labels.size(); ++row) labels[row] = row % 11 == 4 ? -1 : static_cast<std::int32_t>((row * 3) % groups);
    ColumnStatsRequest request;
    request.transform = ElementTransform::Log1p;
    const auto expected = CpuBackend(shard, 0).group_column_stats(labels, groups, request, ctx);
    const auto width = static_cast<std::size_t>(groups * shard.num_genes);
    std::vector<double> sum(width), squares(width);
    std::vector<std::int64_t> nnz(width), sizes(groups);
    k::ValueRequest value_request;
    value_request.transform = k::kTransformLog1p;
    k::group_stats_host(shard.row_offsets.data(), shard.gene_indices.data(), shard.values.data(),
                        k::lane_bounds(shard.row_offsets, k::max_lanes_for_width(static_cast<std::int64_t>(width))),
                        shard.num_genes, labels.data(), groups, value_request, sizes.data(), sum.data(), squares.data(),
                        nnz.data());
    EXPECT_EQ(sizes, expected.group_sizes);
    EXPECT_EQ(nnz, expected.nnz.values());
    for (std::size_t index = 0; index < width; ++index) {
        expect_relative(sum[index], expected.sum.values()[index], 1e-6, "group sum");
        expect_relative(squares[index], expected.sum_squares.values()[index], 1e-6, "group sum_squares");
    }
}

TEST(ShardKernels, GeneValueFindsEveryStoredEntryAndZeroElsewhere) {
    const auto shard = simulated(13);
    JobContext ctx;
    const CpuBackend cpu(shard, 0);
    for (std::int32_t gene = 0; gene < shard.num_genes; ++gene) {
        const auto expected = cpu.gene_column(gene, ctx);
        for (std::int64_t row = 0; row < shard.num_rows(); ++row)
            ASSERT_EQ(k::gene_value(shard.row_offsets.data(), shard.gene_indices.data(), shard.values.data(), row, gene),
                      expected[static_cast<std::size_t>(row)])
                << "row " << row << " gene " << gene;
    }
}

TEST(ShardKernels, ScaleAndLog1pEqualCpuBackend) {
    const auto shard = simulated(17, 300, 40, false);
    JobContext ctx;
    CpuBackend cpu(shard, 0);
    std::vector<double> factors(static_cast<std::size_t>(shard.num_rows()));
    for (std::size_t row = 0; row < factors.size(); ++row) factors[row] = 1e4 / (37.0 + 13.0 * static_cast<double>(row % 17));
    cpu.scale_rows(factors, ctx);
    const auto scaled = cpu.shard().values;
    cpu.log1p(ctx);
    auto values = shard.values;
    for (std::int64_t row = 0; row < shard.num_rows(); ++row)
        for (auto entry = shard.row_offsets[static_cast<std::size_t>(row)]; entry < shard.row_offsets[static_cast<std::size_t>(row) + 1]; ++entry) {
            auto& value = values[static_cast<std::size_t>(entry)];
            value = k::scale_value(value, factors[static_cast<std::size_t>(row)]);
            ASSERT_EQ(value, scaled[static_cast<std::size_t>(entry)]) << "the scaling is exact";
            // log1p: the same routine (core/backend/log1p_float.hpp) on host and device.
            const float expected = cpu.shard().values[static_cast<std::size_t>(entry)];
            ASSERT_EQ(k::log1p_value(value), expected) << value;
            ASSERT_EQ(k::transform_value(value, k::kTransformLog1p), expected) << value;
            ASSERT_EQ(fathom::log1p_svml::log1p(value), expected) << value << " (the device's inline routine)";
        }
}

TEST(ShardKernels, SubsetColumnsAndRowsHostLoopsEqualCpuBackend) {
    const auto shard = simulated(19);
    JobContext ctx;
    std::vector<std::uint8_t> keep_genes(static_cast<std::size_t>(shard.num_genes));
    std::vector<std::int32_t> renumber(keep_genes.size(), -1);
    std::int32_t kept = 0;
    for (std::size_t gene = 0; gene < keep_genes.size(); ++gene) {
        keep_genes[gene] = gene % 3 == 1 || gene == 0 ? 1 : 0;
        if (keep_genes[gene]) renumber[gene] = kept++;
    }
    CpuBackend cpu(shard, 0);
    cpu.subset_columns(keep_genes, ctx);
    const auto rows = static_cast<std::size_t>(shard.num_rows());
    std::vector<std::int64_t> offsets(rows + 1, 0);
    for (std::int64_t row = 0; row < shard.num_rows(); ++row)
        offsets[static_cast<std::size_t>(row) + 1] =
            offsets[static_cast<std::size_t>(row)] + k::count_kept(shard.row_offsets.data(), shard.gene_indices.data(), renumber.data(), row);
    std::vector<std::int32_t> genes(static_cast<std::size_t>(offsets.back()));
    std::vector<float> values(genes.size());
    for (std::int64_t row = 0; row < shard.num_rows(); ++row)
        k::copy_kept(shard.row_offsets.data(), shard.gene_indices.data(), shard.values.data(), renumber.data(), row,
                     offsets.data(), genes.data(), values.data());
    EXPECT_EQ(offsets, cpu.shard().row_offsets);
    EXPECT_EQ(genes, cpu.shard().gene_indices);
    EXPECT_EQ(values, cpu.shard().values);

    std::vector<std::uint8_t> keep_rows(rows);
    std::vector<std::int64_t> sources, row_offsets{0};
    for (std::size_t row = 0; row < rows; ++row) {
        keep_rows[row] = row % 4 != 3 ? 1 : 0;
        if (!keep_rows[row]) continue;
        sources.push_back(static_cast<std::int64_t>(row));
        row_offsets.push_back(row_offsets.back() + offsets[row + 1] - offsets[row]);
    }
    cpu.subset_rows(keep_rows, 0, ctx);
    std::vector<std::int32_t> kept_genes(static_cast<std::size_t>(row_offsets.back()));
    std::vector<float> kept_values(kept_genes.size());
    for (std::int64_t row = 0; row < static_cast<std::int64_t>(sources.size()); ++row)
        k::copy_row(offsets.data(), genes.data(), values.data(), sources.data(), row, row_offsets.data(), kept_genes.data(),
                    kept_values.data());
    EXPECT_EQ(row_offsets, cpu.shard().row_offsets);
    EXPECT_EQ(kept_genes, cpu.shard().gene_indices);
    EXPECT_EQ(kept_values, cpu.shard().values);
}

/// Block setup shared by the Gram and projection checks: every other gene, moments
/// from the data.
struct Block {
    std::vector<std::int32_t> genes, map;
    std::vector<double> mean, inv_std;
};

Block make_block(const CsrShard& shard) {
    Block block;
    block.map.assign(static_cast<std::size_t>(shard.num_genes), -1);
    const auto dense = to_dense(shard);
    for (std::int32_t gene = 1; gene < shard.num_genes; gene += 2) {
        block.map[static_cast<std::size_t>(gene)] = static_cast<std::int32_t>(block.genes.size());
        block.genes.push_back(gene);
        double sum = 0, squares = 0;
        for (std::int64_t row = 0; row < dense.rows(); ++row) {
            sum += dense(row, gene);
            squares += dense(row, gene) * dense(row, gene);
        }
        const double mean = sum / static_cast<double>(dense.rows());
        const double variance = (squares - sum * mean) / static_cast<double>(dense.rows() - 1);
        block.mean.push_back(mean);
        block.inv_std.push_back(variance > 0 ? 1.0 / std::sqrt(variance) : 1.0);
    }
    return block;
}

/// The dense tiles the Gram and projection kernels build, row by row.
std::vector<double> host_tile(const CsrShard& shard, const k::BlockTransform& transform, std::int64_t width) {
    std::vector<double> tile(static_cast<std::size_t>(shard.num_rows() * width));
    for (std::int64_t row = 0; row < shard.num_rows(); ++row)
        k::fill_standardized_row(shard.row_offsets.data(), shard.gene_indices.data(), shard.values.data(), transform, row,
                                 width, tile.data() + row * width);
    return tile;
}

TEST(ShardKernels, StandardizedTilesGiveTheCpuGramWithAndWithoutClipping) {
    const auto shard = simulated(23, 260, 36);
    const auto block = make_block(shard);
    const auto width = static_cast<std::int64_t>(block.genes.size());
    JobContext ctx;
    const CpuBackend cpu(shard, 0);
    for (const auto& [max_value, min_value] : std::vector<std::pair<std::optional<double>, std::optional<double>>>{
             {std::nullopt, std::nullopt}, {1.5, std::nullopt}, {1.5, -0.7}}) {
        const auto expected = cpu.gram(block.genes, Standardization{block.mean, block.inv_std, max_value, min_value}, ctx);
        k::BlockTransform transform;
        transform.block_column = block.map.data();
        transform.mean = block.mean.data();
        transform.inv_std = block.inv_std.data();
        transform.has_max = max_value.has_value();
        transform.max_value = max_value.value_or(0.0);
        transform.has_min = min_value.has_value();
        transform.min_value = min_value.value_or(0.0);
        const auto tile = host_tile(shard, transform, width);
        for (std::int64_t a = 0; a < width; ++a) {
            double column_sum = 0;
            for (std::int64_t row = 0; row < shard.num_rows(); ++row) column_sum += tile[static_cast<std::size_t>(row * width + a)];
            EXPECT_NEAR(column_sum, expected.column_sums[static_cast<std::size_t>(a)], 1e-9 * (1 + std::abs(column_sum)));
            for (std::int64_t b = 0; b < width; ++b) {
                double cross = 0;
                for (std::int64_t row = 0; row < shard.num_rows(); ++row)
                    cross += tile[static_cast<std::size_t>(row * width + a)] * tile[static_cast<std::size_t>(row * width + b)];
                EXPECT_NEAR(cross, expected.gram(a, b), 1e-9 * (1 + std::abs(cross))) << a << "," << b;
            }
        }
    }
}

TEST(ShardKernels, CentredTilesGiveTheCpuProjection) {
    const auto shard = simulated(29, 200, 30);
    const auto block = make_block(shard);
    const auto width = static_cast<std::int64_t>(block.genes.size());
    DenseMatrix<double> loadings(width, 3);
    for (std::int64_t gene = 0; gene < width; ++gene)
        for (std::int64_t component = 0; component < 3; ++component) loadings(gene, component) = std::cos(0.7 * static_cast<double>(gene * 3 + component));
    std::vector<double> center(static_cast<std::size_t>(width));
    for (std::size_t column = 0; column < center.size(); ++column) center[column] = 0.02 * static_cast<double>(column) - 0.1;
    JobContext ctx;
    const CpuBackend cpu(shard, 0);
    for (const std::optional<double> max_value : {std::optional<double>{}, std::optional<double>{0.9}}) {
        ProjectionRequest request;
        request.genes = block.genes;
        request.standardization = Standardization{block.mean, block.inv_std, max_value, {}};
        request.center = center;
        request.loadings = &loadings;
        const auto expected = cpu.project(request, ctx);
        k::BlockTransform transform;
        transform.block_column = block.map.data();
        transform.mean = block.mean.data();
        transform.inv_std = block.inv_std.data();
        transform.center = center.data();
        transform.has_max = max_value.has_value();
        transform.max_value = max_value.value_or(0.0);
        const auto tile = host_tile(shard, transform, width);
        for (std::int64_t row = 0; row < shard.num_rows(); ++row)
            for (std::int64_t component = 0; component < 3; ++component) {
                double score = 0;
                for (std::int64_t column = 0; column < width; ++column)
                    score += tile[static_cast<std::size_t>(row * width + column)] * loadings(column, component);
                EXPECT_NEAR(score, expected(row, component), 1e-9 * (1 + std::abs(score)));
            }
    }
}

TEST(ShardKernels, SparseProjectionTilesGiveTheCpuProjection) {
    const auto shard = simulated(31, 240, 35);
    const auto block = make_block(shard);
    const auto width = static_cast<std::int64_t>(block.genes.size());
    DenseMatrix<double> loadings(width, 4);
    for (std::int64_t gene = 0; gene < width; ++gene)
        for (std::int64_t component = 0; component < 4; ++component) loadings(gene, component) = std::sin(0.3 * static_cast<double>(gene * 4 + component) + 0.2);
    std::vector<double> center(static_cast<std::size_t>(width));
    for (std::size_t column = 0; column < center.size(); ++column) center[column] = 0.03 * static_cast<double>(column) - 0.2;
    ProjectionRequest request;
    request.genes = block.genes;
    request.standardization = Standardization{block.mean, block.inv_std, {}, {}};
    request.center = center;
    request.loadings = &loadings;
    JobContext ctx;
    const auto expected = CpuBackend(shard, 0).project(request, ctx);
    const auto projection = backend_detail::sparse_projection(request, width);
    const auto weights = k::gene_weights(block.map.data(), shard.num_genes, projection.weights, 4);
    // Small tiles (at most 37 entries or 9 rows), as the device takes the shard in tiles.
    const auto bounds = k::projection_tiles(shard.row_offsets, 37, 9);
    ASSERT_EQ(bounds.front(), 0);
    ASSERT_EQ(bounds.back(), shard.num_rows());
    ASSERT_GT(bounds.size(), 20u);
    DenseMatrix<double> scores(shard.num_rows(), 4, 0.0);
    for (std::size_t tile = 0; tile + 1 < bounds.size(); ++tile) {
        const std::int64_t rows = bounds[tile + 1] - bounds[tile];
        ASSERT_GE(rows, 1);
        ASSERT_LE(rows, 9);
        if (rows > 1) {
            EXPECT_LE(shard.row_offsets[static_cast<std::size_t>(bounds[tile + 1])] - shard.row_offsets[static_cast<std::size_t>(bounds[tile])], 37);
        }
        k::project_tile_host(shard.row_offsets.data(), shard.gene_indices.data(), shard.values.data(), bounds[tile], rows, weights,
                             projection.offset, 4, scores.row(bounds[tile]).data());
    }
    for (std::int64_t row = 0; row < shard.num_rows(); ++row)
        for (std::int64_t component = 0; component < 4; ++component)
            EXPECT_NEAR(scores(row, component), expected(row, component), 1e-12 * (1 + std::abs(expected(row, component))))
                << row << ", " << component;
}

}  // namespace
}  // namespace fathom::test
