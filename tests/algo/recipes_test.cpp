// Recipes end to end on simulated counts: shard-count invariance (1/2/3/7 shards),
// thread-count and run-to-run bit identity, the recipe in parts, cancellation at every
// stage from the stage callback.
#include <gtest/gtest.h>

#include <tbb/global_control.h>

#include <mutex>
#include <set>

#include "core/algo/recipes.hpp"
#include "core/backend/CpuBackend.hpp"
#include "tests/algo/algo_helpers.hpp"

namespace fathom::test {
namespace {

CsrShard recipe_counts(std::uint64_t seed = 51) {
    SimulationOptions options;
    options.num_cells = 2500;
    options.num_genes = 120;
    options.density = 0.25;
    options.empty_cell_fraction = 0.01;
    options.zero_gene_fraction = 0.05;
    options.seed = seed;
    return simulate_counts(options);
}

Zheng17Options zheng17_options() {
    Zheng17Options options;
    options.num_top_genes = 40;
    options.pca = PcaOptions{};
    options.pca->num_components = 20;
    return options;
}

Zheng17Result run_zheng17(const CsrShard& whole, int shards) {
    auto set = simulated_set(whole, shards);
    JobContext ctx;
    return recipe_zheng17(set, zheng17_options(), ctx);
}

/// Largest |a - b| relative to the largest |a| of every column (up to sign per column).
double max_score_difference(const DenseMatrix<float>& a, const DenseMatrix<float>& b) {
    double worst = 0;
    for (std::int64_t component = 0; component < a.cols(); ++component) {
        double scale = 0, plus = 0, minus = 0;
        for (std::int64_t row = 0; row < a.rows(); ++row) {
            scale = std::max(scale, std::abs(static_cast<double>(a(row, component))));
            plus = std::max(plus, std::abs(static_cast<double>(a(row, component)) - b(row, component)));
            minus = std::max(minus, std::abs(static_cast<double>(a(row, component)) + b(row, component)));
        }
        worst = std::max(worst, std::min(plus, minus) / scale);
    }
    return worst;
}

TEST(Recipes, Zheng17AgreesAcrossShardCounts) {
    const auto whole = recipe_counts();
    const auto reference = run_zheng17(whole, 1);
    ASSERT_TRUE(reference.pca.has_value());
    EXPECT_GE(static_cast<std::int64_t>(reference.hvg_genes.size()), 39);
    for (int shards : {2, 3, 7}) {
        const auto other = run_zheng17(whole, shards);
        EXPECT_EQ(other.hvg_genes, reference.hvg_genes) << shards;
        EXPECT_LE(max_relative_difference(reference.scaling.mean, other.scaling.mean), 1e-6) << shards;
        EXPECT_LE(max_relative_difference(reference.scaling.std, other.scaling.std), 1e-6) << shards;
        EXPECT_LE(max_relative_difference(reference.dispersion.dispersions_norm, other.dispersion.dispersions_norm), 1e-6);
        EXPECT_LE(max_relative_difference(reference.pca->variance_ratio, other.pca->variance_ratio), 1e-6) << shards;
        // Float32 scores: agreement to float32 rounding of the largest score.
        EXPECT_LE(max_score_difference(reference.pca->scores, other.pca->scores), 1e-5) << shards;
        EXPECT_EQ(other.first_normalization.counts_per_cell, reference.first_normalization.counts_per_cell);
    }
}

TEST(Recipes, Zheng17ThreadCountAndRunToRunBitIdentical) {
    const auto whole = recipe_counts(52);
    Zheng17Result single, several, again;
    {
        tbb::global_control control(tbb::global_control::max_allowed_parallelism, 1);
        single = run_zheng17(whole, 3);
    }
    {
        tbb::global_control control(tbb::global_control::max_allowed_parallelism, 2);
        several = run_zheng17(whole, 3);
        again = run_zheng17(whole, 3);
    }
    for (const auto* other : {&several, &again}) {
        EXPECT_EQ(single.hvg_genes, other->hvg_genes);
        EXPECT_EQ(single.dispersion.dispersions_norm, other->dispersion.dispersions_norm);
        EXPECT_EQ(single.scaling.mean, other->scaling.mean);
        EXPECT_EQ(single.scaling.std, other->scaling.std);
        EXPECT_EQ(single.pca->variance, other->pca->variance);
        EXPECT_EQ(single.pca->scores, other->pca->scores);
        EXPECT_EQ(single.pca->loadings, other->pca->loadings);
    }
}

TEST(Recipes, Zheng17InPartsEqualsWhole) {
    const auto whole = recipe_counts(53);
    const auto options = zheng17_options();
    auto set = simulated_set(whole, 2);
    JobContext ctx;
    const auto pre = zheng17_preprocess(set, options, ctx);
    const auto hvg = highly_variable_genes(set, zheng17_hvg_options(options), ctx);
    set.subset_columns(hvg.highly_variable, ctx);
    const auto finished = zheng17_finish(set, options, ctx);
    const auto full = run_zheng17(whole, 2);
    EXPECT_EQ(pre.normalization.counts_per_cell, full.first_normalization.counts_per_cell);
    EXPECT_EQ(hvg.highly_variable, full.dispersion.highly_variable);
    EXPECT_EQ(finished.scaling.mean, full.scaling.mean);
    EXPECT_EQ(full.kept_cells.size(), static_cast<std::size_t>(whole.num_rows())) << "normalize_total keeps every cell";
}

TEST(Recipes, Zheng17MomentsEqualTheNormalisedCopyWithOrWithoutTheQc) {
    const auto whole = recipe_counts(57);
    const auto options = zheng17_options();
    auto raw = simulated_set(whole, 3);
    JobContext ctx;
    const Zheng17Moments passes = zheng17_moments(raw, options, ctx);
    std::vector<std::string> names;
    for (std::int64_t gene = 0; gene < raw.num_genes(); ++gene) names.push_back("G" + std::to_string(gene));
    const QcResult qc = calculate_qc_metrics(raw, names, QcOptions{}, ctx);
    const Zheng17Moments from_qc = zheng17_moments(raw, options, ctx, &qc);
    ASSERT_GT(passes.gene_filter.num_removed, 0) << "the simulation has all-zero genes to filter";

    // The normalised copy the moments stand for: filter, normalise, column statistics.
    auto copy = simulated_set(whole, 3);
    const auto pre = zheng17_preprocess(copy, options, ctx);
    const ColumnStats stats = copy.column_stats({}, ctx);
    for (const Zheng17Moments* moments : {&passes, &from_qc}) {
        EXPECT_EQ(moments->gene_filter.keep, pre.gene_filter.keep);
        EXPECT_EQ(moments->normalization.counts_per_cell, pre.normalization.counts_per_cell);
        EXPECT_EQ(moments->normalization.target_sum, pre.normalization.target_sum);
        EXPECT_EQ(moments->normalization.factors, pre.normalization.factors);
        EXPECT_EQ(moments->normalized_stats.num_rows, stats.num_rows);
        EXPECT_EQ(moments->normalized_stats.sum, stats.sum);
        EXPECT_EQ(moments->normalized_stats.sum_squares, stats.sum_squares);
        EXPECT_EQ(moments->normalized_stats.nnz, stats.nnz);
    }
    // The HVG block copied from the raw shards equals the normalised copy's columns.
    const HvgResult hvg = zheng17_select(passes, raw.num_cells(), options);
    EXPECT_EQ(hvg.highly_variable, highly_variable_genes(copy, zheng17_hvg_options(options), ctx).highly_variable);
    const ShardSet block = zheng17_hvg_block(raw, passes, hvg, ctx);
    const ShardSet expected = copy.clone_columns(hvg.highly_variable, ctx);
    ASSERT_EQ(block.num_shards(), expected.num_shards());
    for (int shard = 0; shard < block.num_shards(); ++shard) {
        const CsrShard ours = block.shard(shard).to_host(), theirs = expected.shard(shard).to_host();
        EXPECT_EQ(ours.row_offsets, theirs.row_offsets);
        EXPECT_EQ(ours.gene_indices, theirs.gene_indices);
        EXPECT_EQ(ours.values, theirs.values);
    }
    EXPECT_EQ(raw.nnz(), whole.nnz()) << "the raw shards are left unchanged";

    // A QC of another matrix is refused.
    QcResult other = qc;
    other.total_counts.pop_back();
    EXPECT_THROW(zheng17_moments(raw, options, ctx, &other), std::invalid_argument);
}

TEST(Recipes, SeuratRecipeRunsAndAgreesAcrossShards) {
    const auto whole = recipe_counts(54);
    SeuratRecipeOptions options;
    options.min_genes = 20;  // simulated cells have few genes
    // 120 genes normalised to 1e4 have means far above max_mean=3: take the top 30.
    options.hvg.num_top_genes = 30;
    options.pca = PcaOptions{};
    options.pca->num_components = 10;
    auto one = simulated_set(whole, 1);
    auto seven = simulated_set(whole, 7);
    JobContext ctx;
    const auto a = recipe_seurat(one, options, ctx);
    const auto b = recipe_seurat(seven, options, ctx);
    EXPECT_GT(a.cell_filter.num_removed, 0);
    EXPECT_GE(a.dispersion.num_selected, 2);
    EXPECT_EQ(a.hvg_genes, b.hvg_genes);
    EXPECT_EQ(a.kept_cells, b.kept_cells);
    EXPECT_EQ(a.scaling.max_value, 10.0);
    ASSERT_TRUE(a.pca && b.pca);
    EXPECT_LE(max_relative_difference(a.pca->variance_ratio, b.pca->variance_ratio), 1e-6);
    EXPECT_LE(max_score_difference(a.pca->scores, b.pca->scores), 1e-5);
}

/// A CpuBackend that requests cancellation on its n-th primitive call (counted over
/// every shard of a set), so a recipe can be cancelled at each of its primitive calls
/// without timing. Records the progress stage at the moment it cancelled.
class CancellingBackend final : public Backend {
public:
    struct Trigger {
        std::int64_t calls = 0;
        std::int64_t cancel_at = -1;
        std::string stage;
    };
    CancellingBackend(CsrShard shard, int index, Trigger* trigger)
        : m_inner(std::move(shard), index), m_trigger(trigger) {}
    std::string name() const override { return m_inner.name(); }
    BackendKind kind() const noexcept override { return BackendKind::Cpu; }
    std::int64_t row_begin() const noexcept override { return m_inner.row_begin(); }
    std::int64_t num_rows() const noexcept override { return m_inner.num_rows(); }
    std::int64_t num_genes() const noexcept override { return m_inner.num_genes(); }
    std::int64_t nnz() const noexcept override { return m_inner.nnz(); }
    std::unique_ptr<Backend> clone() const override {
        return std::make_unique<CancellingBackend>(m_inner.to_host(), 0, m_trigger);
    }
    CsrShard to_host() const override { return m_inner.to_host(); }
    RowStats row_stats(std::span<const std::uint8_t> mask, JobContext& ctx) const override {
        tick(ctx);
        return m_inner.row_stats(mask, ctx);
    }
    ColumnStats column_stats(const ColumnStatsRequest& request, JobContext& ctx) const override {
        tick(ctx);
        return m_inner.column_stats(request, ctx);
    }
    GroupColumnStats group_column_stats(std::span<const std::int32_t> labels, int groups, const ColumnStatsRequest& request,
                                        JobContext& ctx) const override {
        tick(ctx);
        return m_inner.group_column_stats(labels, groups, request, ctx);
    }
    std::vector<float> gene_column(std::int32_t gene, JobContext& ctx) const override {
        tick(ctx);
        return m_inner.gene_column(gene, ctx);
    }
    GramResult gram(GeneBlock genes, const Standardization& standardization, JobContext& ctx) const override {
        tick(ctx);
        return m_inner.gram(genes, standardization, ctx);
    }
    DenseMatrix<double> project(const ProjectionRequest& request, JobContext& ctx) const override {
        tick(ctx);
        return m_inner.project(request, ctx);
    }
    void scale_rows(std::span<const double> factors, JobContext& ctx) override {
        tick(ctx);
        m_inner.scale_rows(factors, ctx);
    }
    void log1p(JobContext& ctx) override {
        tick(ctx);
        m_inner.log1p(ctx);
    }
    void subset_columns(std::span<const std::uint8_t> keep, JobContext& ctx) override {
        tick(ctx);
        m_inner.subset_columns(keep, ctx);
    }
    void subset_rows(std::span<const std::uint8_t> keep, std::int64_t begin, JobContext& ctx) override {
        tick(ctx);
        m_inner.subset_rows(keep, begin, ctx);
    }

private:
    void tick(JobContext& ctx) const {
        // Shards may run concurrently: a mutex keeps the count exact.
        std::lock_guard lock(m_mutex);
        if (m_trigger->calls++ == m_trigger->cancel_at) {
            m_trigger->stage = ctx.progress().stage;
            ctx.cancel();
        }
    }
    CpuBackend m_inner;
    Trigger* m_trigger;
    static inline std::mutex m_mutex;
};

ShardSet cancelling_set(const CsrShard& whole, int shards, CancellingBackend::Trigger* trigger) {
    const auto split = split_evenly(whole, shards);
    std::vector<std::unique_ptr<Backend>> backends;
    for (int index = 0; index < split.num_shards(); ++index)
        backends.push_back(std::make_unique<CancellingBackend>(split.shard(index), index, trigger));
    return ShardSet(std::move(backends), whole.num_genes);
}

template <typename Run>
void expect_cancellable_everywhere(const CsrShard& whole, Run&& run, const std::vector<std::string>& stages) {
    // Count the primitive calls of a full run, then cancel at each of them in turn.
    CancellingBackend::Trigger counting;
    {
        auto set = cancelling_set(whole, 3, &counting);
        JobContext ctx;
        ASSERT_NO_THROW(run(set, ctx));
    }
    ASSERT_GT(counting.calls, 0);
    std::set<std::string> seen;
    for (std::int64_t call = 0; call < counting.calls; ++call) {
        CancellingBackend::Trigger trigger;
        trigger.cancel_at = call;
        auto set = cancelling_set(whole, 3, &trigger);
        JobContext ctx;
        EXPECT_THROW(run(set, ctx), Cancelled) << "cancel at primitive call " << call << " (" << trigger.stage << ")";
        seen.insert(trigger.stage);
    }
    for (const auto& stage : stages) EXPECT_TRUE(seen.count(stage)) << "never cancelled during " << stage;
}

TEST(Recipes, Zheng17StopsAtEveryPrimitiveCall) {
    const auto whole = recipe_counts(55);
    expect_cancellable_everywhere(
        whole, [](ShardSet& set, JobContext& ctx) { recipe_zheng17(set, zheng17_options(), ctx); },
        {"filter_genes", "normalize_total", "highly_variable_genes", "log1p", "scale", "pca"});
}

TEST(Recipes, SeuratStopsAtEveryPrimitiveCall) {
    const auto whole = recipe_counts(56);
    SeuratRecipeOptions options;
    options.min_genes = 20;
    options.hvg.num_top_genes = 30;
    expect_cancellable_everywhere(
        whole, [&](ShardSet& set, JobContext& ctx) { recipe_seurat(set, options, ctx); },
        {"filter_cells", "filter_genes", "normalize_total", "highly_variable_genes", "log1p", "scale", "pca"});
}

TEST(Recipes, ValidationNamesTheField) {
    Zheng17Options options;
    options.num_top_genes = 0;
    try {
        validate(options, MatrixShape{100, 10});
        FAIL();
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find("Zheng17Options::num_top_genes"), std::string::npos);
    }
    SeuratRecipeOptions seurat;
    seurat.max_value = -1;
    EXPECT_THROW(validate(seurat, MatrixShape{100, 10}), std::invalid_argument);
}

}  // namespace
}  // namespace fathom::test
