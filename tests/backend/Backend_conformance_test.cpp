// Conformance suite: every Backend primitive against a dense brute-force reference on
// small simulated matrices, for every backend present (backends.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>

#include <tbb/global_control.h>

#include "core/backend/log1p_float.hpp"
#include "tests/backend/backends.hpp"
#include "tests/support/simulate.hpp"

namespace fathom::test {
namespace {

constexpr double kTolerance = 1e-9;  // relative, for double accumulations of float data

double transformed(float value, double scale, ElementTransform transform) {
    const auto scaled = static_cast<float>(static_cast<double>(value) * scale);
    switch (transform) {
        case ElementTransform::Log1p: return log1p_float(scaled);
        case ElementTransform::Expm1: return std::expm1(scaled);
        case ElementTransform::None: break;
    }
    return scaled;
}

/// Representable floats between a and b (same sign assumed; 0 when equal).
std::int64_t ulp_distance(float a, float b) {
    std::int32_t bits_a = 0, bits_b = 0;
    std::memcpy(&bits_a, &a, sizeof(a));
    std::memcpy(&bits_b, &b, sizeof(b));
    return std::abs(static_cast<std::int64_t>(bits_a) - static_cast<std::int64_t>(bits_b));
}

class BackendConformance : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        const auto& factory = backend_factory(GetParam());
        const std::string reason = factory.unavailable_reason();
        if (!reason.empty()) GTEST_SKIP() << GetParam() << " backend unavailable: " << reason;
    }
    std::unique_ptr<Backend> make(CsrShard shard, int index = 0) const {
        return backend_factory(GetParam()).make(std::move(shard), index);
    }
    static CsrShard simulated(std::uint64_t seed = 7, std::int64_t cells = 120, std::int64_t genes = 40) {
        SimulationOptions options;
        options.num_cells = cells;
        options.num_genes = genes;
        options.seed = seed;
        options.empty_cell_fraction = 0.1;
        options.zero_gene_fraction = 0.15;
        return simulate_counts(options);
    }
    static CsrShard empty_shard(std::int64_t genes) {
        CsrShard shard;
        shard.num_genes = genes;
        return shard;
    }
    JobContext ctx;
};

void expect_near_relative(double actual, double expected, double tolerance, const std::string& what) {
    EXPECT_LE(relative_difference(actual, expected, 1e-12), tolerance) << what << ": " << actual << " vs " << expected;
}

TEST_P(BackendConformance, ShapeNameAndHostCopy) {
    const auto shard = simulated();
    const auto backend = make(shard, 3);
    EXPECT_EQ(backend->num_rows(), shard.num_rows());
    EXPECT_EQ(backend->num_genes(), shard.num_genes);
    EXPECT_EQ(backend->nnz(), shard.nnz());
    EXPECT_EQ(backend->row_begin(), 0);
    EXPECT_EQ(backend->name(), backend_factory(GetParam()).name_for(3));
    const auto host = backend->to_host();
    EXPECT_EQ(host.row_offsets, shard.row_offsets);
    EXPECT_EQ(host.gene_indices, shard.gene_indices);
    EXPECT_EQ(host.values, shard.values);
}

TEST_P(BackendConformance, RowStatsMatchDense) {
    const auto shard = simulated();
    const auto dense = to_dense(shard);
    const auto backend = make(shard);
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(shard.num_genes), 0);
    for (std::size_t gene = 0; gene < mask.size(); gene += 3) mask[gene] = 1;
    const auto stats = backend->row_stats(mask, ctx);
    ASSERT_EQ(stats.total.size(), static_cast<std::size_t>(shard.num_rows()));
    ASSERT_EQ(stats.subset_total.size(), static_cast<std::size_t>(shard.num_rows()));
    bool saw_empty_row = false;
    for (std::int64_t row = 0; row < dense.rows(); ++row) {
        double total = 0, subset = 0;
        std::int64_t nonzero = 0;
        for (std::int64_t gene = 0; gene < dense.cols(); ++gene) {
            total += dense(row, gene);
            nonzero += dense(row, gene) != 0 ? 1 : 0;
            if (mask[static_cast<std::size_t>(gene)]) subset += dense(row, gene);
        }
        saw_empty_row = saw_empty_row || nonzero == 0;
        expect_near_relative(stats.total[static_cast<std::size_t>(row)], total, kTolerance, "total");
        expect_near_relative(stats.subset_total[static_cast<std::size_t>(row)], subset, kTolerance, "subset_total");
        EXPECT_EQ(stats.nnz[static_cast<std::size_t>(row)], nonzero);
    }
    EXPECT_TRUE(saw_empty_row) << "the simulation should contain empty rows";
    EXPECT_TRUE(backend->row_stats({}, ctx).subset_total.empty());
}

struct StatsCase {
    bool row_scale = false;
    ElementTransform transform = ElementTransform::None;
    bool column_max = false;
    bool row_mask = false;
};

TEST_P(BackendConformance, ColumnStatsMatchDenseForEveryRequestKind) {
    const auto shard = simulated(11);
    const auto rows = static_cast<std::size_t>(shard.num_rows());
    const auto genes = static_cast<std::size_t>(shard.num_genes);
    std::vector<double> scale(rows);
    std::vector<std::uint8_t> mask(rows);
    std::vector<double> column_max(genes);
    for (std::size_t row = 0; row < rows; ++row) {
        scale[row] = 0.25 + 0.0137 * static_cast<double>(row);
        mask[row] = row % 4 != 1 ? 1 : 0;
    }
    for (std::size_t gene = 0; gene < genes; ++gene) column_max[gene] = 1.5 + 0.3 * static_cast<double>(gene % 7);
    const std::vector<StatsCase> cases{{false, ElementTransform::None, false, false},
                                       {true, ElementTransform::Log1p, false, false},
                                       {false, ElementTransform::Expm1, false, true},
                                       {true, ElementTransform::None, true, true},
                                       {false, ElementTransform::Log1p, true, false}};
    for (const auto& test_case : cases) {
        ColumnStatsRequest request;
        if (test_case.row_scale) request.row_scale = scale;
        if (test_case.row_mask) request.row_mask = mask;
        if (test_case.column_max) request.column_max = column_max;
        request.transform = test_case.transform;
        // Expm1 of raw counts overflows float for large counts; use log data for it.
        auto input = shard;
        if (test_case.transform == ElementTransform::Expm1)
            for (auto& value : input.values) value = std::log1p(value);
        const auto input_backend = make(input);
        const auto input_dense = to_dense(input);
        const auto stats = input_backend->column_stats(request, ctx);
        std::int64_t included = 0;
        for (std::size_t row = 0; row < rows; ++row) included += (!test_case.row_mask || mask[row]) ? 1 : 0;
        EXPECT_EQ(stats.num_rows, included);
        for (std::size_t gene = 0; gene < genes; ++gene) {
            double sum = 0, squares = 0;
            std::int64_t nonzero = 0;
            for (std::size_t row = 0; row < rows; ++row) {
                if (test_case.row_mask && !mask[row]) continue;
                const double stored = input_dense(static_cast<std::int64_t>(row), static_cast<std::int64_t>(gene));
                if (stored == 0) continue;
                double value = transformed(static_cast<float>(stored), test_case.row_scale ? scale[row] : 1.0, test_case.transform);
                if (test_case.column_max) value = std::min(value, column_max[gene]);
                sum += value;
                squares += value * value;
                nonzero += value != 0 ? 1 : 0;
            }
            expect_near_relative(stats.sum[gene], sum, kTolerance, "sum");
            expect_near_relative(stats.sum_squares[gene], squares, kTolerance, "sum_squares");
            EXPECT_EQ(stats.nnz[gene], nonzero);
        }
    }
}

TEST_P(BackendConformance, GroupColumnStatsMatchDense) {
    const auto shard = simulated(5);
    const auto dense = to_dense(shard);
    const auto backend = make(shard);
    const int groups = 4;
    std::vector<std::int32_t> labels(static_cast<std::size_t>(shard.num_rows()));
    for (std::size_t row = 0; row < labels.size(); ++row) labels[row] = row % 9 == 8 ? -1 : static_cast<std::int32_t>((row * 7) % groups);
    ColumnStatsRequest request;
    request.transform = ElementTransform::Log1p;
    const auto stats = backend->group_column_stats(labels, groups, request, ctx);
    ASSERT_EQ(stats.sum.rows(), groups);
    ASSERT_EQ(stats.sum.cols(), shard.num_genes);
    for (int group = 0; group < groups; ++group) {
        std::int64_t size = 0;
        for (auto label : labels) size += label == group ? 1 : 0;
        EXPECT_EQ(stats.group_sizes[static_cast<std::size_t>(group)], size);
        for (std::int64_t gene = 0; gene < shard.num_genes; ++gene) {
            double sum = 0, squares = 0;
            std::int64_t nonzero = 0;
            for (std::int64_t row = 0; row < dense.rows(); ++row) {
                if (labels[static_cast<std::size_t>(row)] != group || dense(row, gene) == 0) continue;
                const double value = log1p_float(static_cast<float>(dense(row, gene)));
                sum += value;
                squares += value * value;
                ++nonzero;
            }
            expect_near_relative(stats.sum(group, gene), sum, kTolerance, "group sum");
            expect_near_relative(stats.sum_squares(group, gene), squares, kTolerance, "group sum_squares");
            EXPECT_EQ(stats.nnz(group, gene), nonzero);
        }
    }
    std::vector<std::int32_t> bad = labels;
    bad[0] = groups;
    EXPECT_THROW(backend->group_column_stats(bad, groups, request, ctx), std::invalid_argument);
}

TEST_P(BackendConformance, GeneColumnMatchesDense) {
    const auto shard = simulated(3);
    const auto dense = to_dense(shard);
    const auto backend = make(shard);
    for (std::int32_t gene = 0; gene < shard.num_genes; ++gene) {
        const auto column = backend->gene_column(gene, ctx);
        ASSERT_EQ(column.size(), static_cast<std::size_t>(shard.num_rows()));
        for (std::int64_t row = 0; row < dense.rows(); ++row)
            EXPECT_EQ(column[static_cast<std::size_t>(row)], static_cast<float>(dense(row, gene)));
    }
    EXPECT_THROW(backend->gene_column(static_cast<std::int32_t>(shard.num_genes), ctx), std::invalid_argument);
    EXPECT_THROW(backend->gene_column(-1, ctx), std::invalid_argument);
}

/// Dense standardised block of the shard.
DenseMatrix<double> dense_z(const DenseMatrix<double>& dense, const std::vector<std::int32_t>& genes,
                            const std::vector<double>& mean, const std::vector<double>& inv_std,
                            std::optional<double> max_value, std::optional<double> min_value) {
    DenseMatrix<double> z(dense.rows(), static_cast<std::int64_t>(genes.size()));
    for (std::int64_t row = 0; row < dense.rows(); ++row)
        for (std::size_t column = 0; column < genes.size(); ++column) {
            double value = (dense(row, genes[column]) - mean[column]) * inv_std[column];
            if (max_value) value = std::min(value, *max_value);
            if (min_value) value = std::max(value, *min_value);
            z(row, static_cast<std::int64_t>(column)) = value;
        }
    return z;
}

struct BlockSetup {
    std::vector<std::int32_t> genes;
    std::vector<double> mean, inv_std;
};

BlockSetup block_setup(const DenseMatrix<double>& dense) {
    BlockSetup setup;
    for (std::int32_t gene = 0; gene < dense.cols(); gene += 2) setup.genes.push_back(gene);
    for (auto gene : setup.genes) {
        double sum = 0, squares = 0;
        for (std::int64_t row = 0; row < dense.rows(); ++row) {
            sum += dense(row, gene);
            squares += dense(row, gene) * dense(row, gene);
        }
        const double mean = sum / static_cast<double>(dense.rows());
        const double var = (squares - sum * mean) / static_cast<double>(dense.rows() - 1);
        setup.mean.push_back(mean);
        setup.inv_std.push_back(var > 0 ? 1.0 / std::sqrt(var) : 1.0);
    }
    return setup;
}

TEST_P(BackendConformance, GramMatchesDenseWithAndWithoutClipping) {
    const auto shard = simulated(13, 150, 30);
    const auto dense = to_dense(shard);
    const auto backend = make(shard);
    const auto setup = block_setup(dense);
    const std::vector<std::pair<std::optional<double>, std::optional<double>>> clips{
        {std::nullopt, std::nullopt}, {1.0, std::nullopt}, {1.0, -0.5}};
    for (const auto& [max_value, min_value] : clips) {
        Standardization standardization{setup.mean, setup.inv_std, max_value, min_value};
        const auto result = backend->gram(setup.genes, standardization, ctx);
        const auto z = dense_z(dense, setup.genes, setup.mean, setup.inv_std, max_value, min_value);
        EXPECT_EQ(result.num_rows, shard.num_rows());
        const auto block = static_cast<std::int64_t>(setup.genes.size());
        ASSERT_EQ(result.gram.rows(), block);
        for (std::int64_t a = 0; a < block; ++a) {
            double column_sum = 0;
            for (std::int64_t row = 0; row < z.rows(); ++row) column_sum += z(row, a);
            EXPECT_NEAR(result.column_sums[static_cast<std::size_t>(a)], column_sum, 1e-9 * (1 + std::abs(column_sum)));
            for (std::int64_t b = 0; b < block; ++b) {
                double cross = 0;
                for (std::int64_t row = 0; row < z.rows(); ++row) cross += z(row, a) * z(row, b);
                EXPECT_NEAR(result.gram(a, b), cross, 1e-9 * (1 + std::abs(cross))) << a << "," << b;
            }
        }
    }
}

TEST_P(BackendConformance, GramOverAllGenesWithEmptyBlock) {
    const auto shard = simulated(17, 60, 12);
    const auto dense = to_dense(shard);
    const auto backend = make(shard);
    std::vector<double> mean(12, 0.5), inv_std(12, 2.0);
    const auto result = backend->gram({}, Standardization{mean, inv_std, {}, {}}, ctx);
    std::vector<std::int32_t> all(12);
    for (std::int32_t gene = 0; gene < 12; ++gene) all[static_cast<std::size_t>(gene)] = gene;
    const auto z = dense_z(dense, all, mean, inv_std, {}, {});
    for (std::int64_t a = 0; a < 12; ++a)
        for (std::int64_t b = 0; b < 12; ++b) {
            double cross = 0;
            for (std::int64_t row = 0; row < z.rows(); ++row) cross += z(row, a) * z(row, b);
            EXPECT_NEAR(result.gram(a, b), cross, 1e-9 * (1 + std::abs(cross)));
        }
    std::vector<std::int32_t> unsorted{3, 1};
    std::vector<double> two(2, 1.0);
    EXPECT_THROW(backend->gram(unsorted, Standardization{two, two, {}, {}}, ctx), std::invalid_argument);
    EXPECT_THROW(backend->gram({}, Standardization{two, two, {}, {}}, ctx), std::invalid_argument);
}

TEST_P(BackendConformance, GramOfAWideBlockMatchesDenseAndIgnoresTheThreadCount) {
    // Wider than a few cache panels of the CPU Gram (256 columns), the last one narrow;
    // every gene, then every other gene as the block.
    SimulationOptions options;
    options.num_cells = 300;
    options.num_genes = 700;
    options.density = 0.3;
    options.integer_counts = false;
    options.seed = 61;
    const auto shard = simulate_counts(options);
    const auto dense = to_dense(shard);
    const auto backend = make(shard);
    std::vector<std::int32_t> every_other;
    for (std::int32_t gene = 1; gene < 700; gene += 2) every_other.push_back(gene);
    for (const bool all_genes : {true, false}) {
        std::vector<std::int32_t> genes = every_other;
        if (all_genes) {
            genes.clear();
            for (std::int32_t gene = 0; gene < 700; ++gene) genes.push_back(gene);
        }
        const auto block = static_cast<std::int64_t>(genes.size());
        std::vector<double> mean(genes.size()), inv_std(genes.size());
        for (std::size_t column = 0; column < genes.size(); ++column) {
            mean[column] = 0.1 + 0.01 * static_cast<double>(column % 7);
            inv_std[column] = 0.5 + 0.1 * static_cast<double>(column % 5);
        }
        const Standardization standardization{mean, inv_std, {}, {}};
        const GeneBlock requested = all_genes ? GeneBlock{} : GeneBlock{genes};
        const auto result = backend->gram(requested, standardization, ctx);
        const auto z = dense_z(dense, genes, mean, inv_std, {}, {});
        ASSERT_EQ(result.gram.rows(), block);
        double worst = 0;
        for (std::int64_t a = 0; a < block; ++a) {
            double column_sum = 0;
            for (std::int64_t row = 0; row < z.rows(); ++row) column_sum += z(row, a);
            EXPECT_NEAR(result.column_sums[static_cast<std::size_t>(a)], column_sum, 1e-9 * (1 + std::abs(column_sum)));
            for (std::int64_t b = 0; b < block; ++b) {
                double cross = 0;
                for (std::int64_t row = 0; row < z.rows(); ++row) cross += z(row, a) * z(row, b);
                worst = std::max(worst, std::abs(result.gram(a, b) - cross) / (1 + std::abs(cross)));
            }
        }
        EXPECT_LE(worst, 1e-9) << (all_genes ? "every gene" : "every other gene");
        tbb::global_control one_thread(tbb::global_control::max_allowed_parallelism, 1);
        const auto single = backend->gram(requested, standardization, ctx);
        EXPECT_EQ(single.gram, result.gram) << "the thread count changed the Gram matrix";
        EXPECT_EQ(single.column_sums, result.column_sums);
    }
}

TEST_P(BackendConformance, ProjectMatchesDense) {
    const auto shard = simulated(19, 90, 26);
    const auto dense = to_dense(shard);
    const auto backend = make(shard);
    const auto setup = block_setup(dense);
    const auto block = static_cast<std::int64_t>(setup.genes.size());
    DenseMatrix<double> loadings(block, 4);
    for (std::int64_t gene = 0; gene < block; ++gene)
        for (std::int64_t component = 0; component < 4; ++component)
            loadings(gene, component) = std::sin(1.0 + static_cast<double>(gene * 4 + component));
    std::vector<double> center(static_cast<std::size_t>(block));
    for (std::size_t column = 0; column < center.size(); ++column) center[column] = 0.01 * static_cast<double>(column);
    for (const std::optional<double> max_value : {std::optional<double>{}, std::optional<double>{0.8}}) {
        ProjectionRequest request;
        request.genes = setup.genes;
        request.standardization = Standardization{setup.mean, setup.inv_std, max_value, {}};
        request.center = center;
        request.loadings = &loadings;
        const auto scores = backend->project(request, ctx);
        const auto z = dense_z(dense, setup.genes, setup.mean, setup.inv_std, max_value, {});
        ASSERT_EQ(scores.rows(), shard.num_rows());
        ASSERT_EQ(scores.cols(), 4);
        for (std::int64_t row = 0; row < z.rows(); ++row)
            for (std::int64_t component = 0; component < 4; ++component) {
                double expected = 0;
                for (std::int64_t column = 0; column < block; ++column)
                    expected += (z(row, column) - center[static_cast<std::size_t>(column)]) * loadings(column, component);
                EXPECT_NEAR(scores(row, component), expected, 1e-9 * (1 + std::abs(expected)));
            }
    }
    ProjectionRequest missing;
    EXPECT_THROW(backend->project(missing, ctx), std::invalid_argument);
}

TEST_P(BackendConformance, InPlaceTransformsMatchDense) {
    const auto shard = simulated(23);
    const auto dense = to_dense(shard);
    auto backend = make(shard);
    std::vector<double> factors(static_cast<std::size_t>(shard.num_rows()));
    for (std::size_t row = 0; row < factors.size(); ++row) factors[row] = 0.5 + 0.1371 * static_cast<double>(row % 5);
    backend->scale_rows(factors, ctx);
    backend->log1p(ctx);
    const auto host = backend->to_host();
    const auto result = to_dense(host);
    for (std::int64_t row = 0; row < dense.rows(); ++row)
        for (std::int64_t gene = 0; gene < dense.cols(); ++gene) {
            // One rounding of the exact product to float32, then log1p in float32.
            const auto scaled = static_cast<float>(dense(row, gene) * factors[static_cast<std::size_t>(row)]);
            const float expected = log1p_float(scaled);
            // The CPU matches NumPy's float32 log1p exactly. A CUDA device runs the same
            // routine (gpu/shard_kernels.hpp); one ulp is allowed until a GPU run shows 0.
            EXPECT_LE(ulp_distance(static_cast<float>(result(row, gene)), expected), GetParam() == "cpu" ? 0 : 1)
                << result(row, gene) << " vs " << expected;
        }
    EXPECT_THROW(backend->scale_rows(std::vector<double>(3, 1.0), ctx), std::invalid_argument);
}

TEST_P(BackendConformance, SubsetColumnsAndRowsMatchDense) {
    const auto shard = simulated(29);
    const auto dense = to_dense(shard);
    auto backend = make(shard);
    std::vector<std::uint8_t> keep_genes(static_cast<std::size_t>(shard.num_genes));
    std::vector<std::int64_t> kept_genes;
    for (std::size_t gene = 0; gene < keep_genes.size(); ++gene) {
        keep_genes[gene] = gene % 3 != 0 ? 1 : 0;
        if (keep_genes[gene]) kept_genes.push_back(static_cast<std::int64_t>(gene));
    }
    std::vector<std::uint8_t> keep_rows(static_cast<std::size_t>(shard.num_rows()));
    std::vector<std::int64_t> kept_rows;
    for (std::size_t row = 0; row < keep_rows.size(); ++row) {
        keep_rows[row] = row % 5 != 2 ? 1 : 0;
        if (keep_rows[row]) kept_rows.push_back(static_cast<std::int64_t>(row));
    }
    backend->subset_columns(keep_genes, ctx);
    backend->subset_rows(keep_rows, 42, ctx);
    EXPECT_EQ(backend->num_genes(), static_cast<std::int64_t>(kept_genes.size()));
    EXPECT_EQ(backend->num_rows(), static_cast<std::int64_t>(kept_rows.size()));
    EXPECT_EQ(backend->row_begin(), 42);
    const auto host = backend->to_host();
    EXPECT_NO_THROW(host.check_invariants());
    const auto result = to_dense(host);
    for (std::size_t row = 0; row < kept_rows.size(); ++row)
        for (std::size_t gene = 0; gene < kept_genes.size(); ++gene)
            EXPECT_EQ(result(static_cast<std::int64_t>(row), static_cast<std::int64_t>(gene)), dense(kept_rows[row], kept_genes[gene]));
}

TEST_P(BackendConformance, EmptyShardGivesEmptyOrZeroResults) {
    const auto backend = make(empty_shard(8));
    EXPECT_EQ(backend->num_rows(), 0);
    EXPECT_TRUE(backend->row_stats({}, ctx).total.empty());
    const auto stats = backend->column_stats({}, ctx);
    ASSERT_EQ(stats.sum.size(), 8u);
    EXPECT_EQ(stats.num_rows, 0);
    for (double value : stats.sum) EXPECT_EQ(value, 0.0);
    std::vector<double> mean(8, 1.0), inv_std(8, 1.0);
    const auto gram = backend->gram({}, Standardization{mean, inv_std, {}, {}}, ctx);
    EXPECT_EQ(gram.num_rows, 0);
    ASSERT_EQ(gram.gram.rows(), 8);
    for (double value : gram.gram.values()) EXPECT_EQ(value, 0.0);
    const auto clipped = backend->gram({}, Standardization{mean, inv_std, 2.0, {}}, ctx);
    for (double value : clipped.gram.values()) EXPECT_EQ(value, 0.0);
    DenseMatrix<double> loadings(8, 2, 1.0);
    ProjectionRequest request;
    request.standardization = Standardization{mean, inv_std, {}, {}};
    request.loadings = &loadings;
    EXPECT_EQ(backend->project(request, ctx).rows(), 0);
    EXPECT_TRUE(backend->gene_column(3, ctx).empty());
    const auto groups = backend->group_column_stats({}, 3, {}, ctx);
    EXPECT_EQ(groups.sum.rows(), 3);
    auto mutable_backend = make(empty_shard(8));
    mutable_backend->log1p(ctx);
    mutable_backend->subset_rows({}, 5, ctx);
    EXPECT_EQ(mutable_backend->row_begin(), 5);
    std::vector<std::uint8_t> keep(8, 1);
    keep[0] = 0;
    mutable_backend->subset_columns(keep, ctx);
    EXPECT_EQ(mutable_backend->num_genes(), 7);
}

TEST_P(BackendConformance, RejectsMalformedShards) {
    auto out_of_range = simulated(41, 20, 6);
    ASSERT_GT(out_of_range.nnz(), 0);
    out_of_range.gene_indices.back() = 6;
    EXPECT_THROW(make(out_of_range), std::invalid_argument);
    auto unsorted = simulated(41, 20, 6);
    for (std::int64_t row = 0; row < unsorted.num_rows(); ++row) {
        const auto begin = unsorted.row_offsets[static_cast<std::size_t>(row)];
        if (unsorted.row_offsets[static_cast<std::size_t>(row) + 1] - begin >= 2) {
            std::swap(unsorted.gene_indices[static_cast<std::size_t>(begin)], unsorted.gene_indices[static_cast<std::size_t>(begin) + 1]);
            break;
        }
    }
    EXPECT_THROW(make(unsorted), std::invalid_argument);
    auto short_values = simulated(41, 20, 6);
    short_values.values.pop_back();
    EXPECT_THROW(make(short_values), std::invalid_argument);
}

TEST_P(BackendConformance, ValuesAreCountsOnlyForNonNegativeIntegers) {
    auto shard = simulated(43);
    ASSERT_GT(shard.nnz(), 10);
    EXPECT_TRUE(make(shard)->values_are_counts(ctx));
    EXPECT_TRUE(make(empty_shard(5))->values_are_counts(ctx));
    for (const float bad : {2.5f, -1.0f, std::nanf("")}) {
        auto changed = shard;
        changed.values[static_cast<std::size_t>(shard.nnz() / 2)] = bad;
        EXPECT_FALSE(make(changed)->values_are_counts(ctx)) << bad;
    }
}

TEST_P(BackendConformance, CloneIsIndependent) {
    const auto shard = simulated(31);
    auto backend = make(shard);
    const auto copy = backend->clone();
    backend->log1p(ctx);
    EXPECT_EQ(copy->to_host().values, shard.values);
    EXPECT_NE(backend->to_host().values, shard.values);
}

TEST_P(BackendConformance, CloneColumnsEqualsCloneThenSubsetAndLeavesTheSource) {
    const auto shard = simulated(37);
    const auto backend = make(shard);
    std::vector<std::uint8_t> keep(static_cast<std::size_t>(shard.num_genes));
    for (std::size_t gene = 0; gene < keep.size(); ++gene) keep[gene] = gene % 4 == 1 || gene == keep.size() - 1 ? 1 : 0;
    const auto copy = backend->clone_columns(keep, ctx);
    auto reference = backend->clone();
    reference->subset_columns(keep, ctx);
    const auto got = copy->to_host(), expected = reference->to_host();
    EXPECT_NO_THROW(got.check_invariants());
    EXPECT_EQ(got.num_genes, expected.num_genes);
    EXPECT_EQ(got.row_offsets, expected.row_offsets);
    EXPECT_EQ(got.gene_indices, expected.gene_indices);
    EXPECT_EQ(got.values, expected.values);
    EXPECT_EQ(copy->row_begin(), backend->row_begin());
    EXPECT_EQ(backend->to_host().values, shard.values) << "the source is unchanged";
    // Keeping every gene is a full copy; keeping none leaves empty rows.
    const auto all = backend->clone_columns(std::vector<std::uint8_t>(keep.size(), 1), ctx)->to_host();
    EXPECT_EQ(all.values, shard.values);
    EXPECT_EQ(all.gene_indices, shard.gene_indices);
    const auto none = backend->clone_columns(std::vector<std::uint8_t>(keep.size(), 0), ctx);
    EXPECT_EQ(none->num_genes(), 0);
    EXPECT_EQ(none->nnz(), 0);
    EXPECT_EQ(none->num_rows(), backend->num_rows());
    EXPECT_THROW(backend->clone_columns(std::vector<std::uint8_t>(3, 1), ctx), std::invalid_argument);
}

TEST_P(BackendConformance, CancelledContextStopsPrimitives) {
    const auto shard = simulated(37);
    auto backend = make(shard);
    JobContext cancelled;
    cancelled.cancel();
    EXPECT_THROW(backend->row_stats({}, cancelled), Cancelled);
    EXPECT_THROW(backend->column_stats({}, cancelled), Cancelled);
    std::vector<double> mean(static_cast<std::size_t>(shard.num_genes), 0.0), inv(mean.size(), 1.0);
    EXPECT_THROW(backend->gram({}, Standardization{mean, inv, {}, {}}, cancelled), Cancelled);
    EXPECT_THROW(backend->log1p(cancelled), Cancelled);
}

TEST_P(BackendConformance, RepeatedCallsAreBitIdentical) {
    SimulationOptions options;
    options.num_cells = 3000;
    options.num_genes = 60;
    options.density = 0.3;
    options.integer_counts = false;
    const auto shard = simulate_counts(options);
    const auto backend = make(shard);
    ColumnStatsRequest request;
    request.transform = ElementTransform::Log1p;
    const auto first = backend->column_stats(request, ctx);
    const auto second = backend->column_stats(request, ctx);
    EXPECT_EQ(first.sum, second.sum);
    EXPECT_EQ(first.sum_squares, second.sum_squares);
    std::vector<double> mean(60, 0.3), inv(60, 1.7);
    EXPECT_EQ(backend->gram({}, Standardization{mean, inv, {}, {}}, ctx).gram,
              backend->gram({}, Standardization{mean, inv, {}, {}}, ctx).gram);
}

INSTANTIATE_TEST_SUITE_P(Backends, BackendConformance, ::testing::ValuesIn(backend_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace fathom::test
