// What X holds, decided from its values: raw counts, non-integer counts, log-normalised,
// scaled; the recipe that fits and the warning when the chosen one contradicts it.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/engine/Engine.hpp"
#include "core/engine/matrix_content.hpp"
#include "tests/engine/engine_jobs.hpp"
#include "tests/support/paths.hpp"

namespace fathom {
namespace {

constexpr std::int64_t k_cells = 300, k_genes = 50;

/// Poisson-like counts (dense, zeros dropped) with `transform` applied per cell row.
template <typename Transform>
CsrShard make_rows(Transform transform) {
    std::mt19937 random(5);
    std::poisson_distribution<int> counts(3.0);
    CsrShard shard;
    shard.num_genes = k_genes;
    for (std::int64_t cell = 0; cell < k_cells; ++cell) {
        std::vector<float> row(k_genes);
        for (auto& value : row) value = static_cast<float>(counts(random));
        transform(row);
        for (std::int64_t gene = 0; gene < k_genes; ++gene) {
            if (row[static_cast<std::size_t>(gene)] == 0.0f) continue;
            shard.gene_indices.push_back(static_cast<std::int32_t>(gene));
            shard.values.push_back(row[static_cast<std::size_t>(gene)]);
        }
        shard.row_offsets.push_back(static_cast<std::int64_t>(shard.values.size()));
    }
    return shard;
}

MatrixContentReport decide(const CsrShard& rows) {
    MatrixContentScan scan(k_genes);
    scan.add(rows);
    return scan.report();
}

TEST(MatrixContent, TellsCountsLogNormalisedAndScaledApart) {
    const auto counts = decide(make_rows([](std::vector<float>&) {}));
    EXPECT_EQ(counts.content, MatrixContent::RawCounts);
    EXPECT_EQ(counts.evidence, "integer and non-negative (in the 300 cells scanned)");
    EXPECT_EQ(counts.rows_examined, k_cells);

    std::mt19937 random(9);
    std::uniform_real_distribution<float> factor(0.3f, 1.7f);
    const auto corrected = decide(make_rows([&](std::vector<float>& row) {
        for (auto& value : row) value *= 40.0f * factor(random);
    }));
    EXPECT_EQ(corrected.content, MatrixContent::NonIntegerCounts) << corrected.evidence;

    // normalize_total(target_sum=1e4) then log1p: expm1 row sums are 1e4.
    const auto lognorm = decide(make_rows([](std::vector<float>& row) {
        double total = 0;
        for (float value : row) total += value;
        for (auto& value : row) value = static_cast<float>(std::log1p(value * 1e4 / total));
    }));
    EXPECT_EQ(lognorm.content, MatrixContent::LogNormalized);
    EXPECT_EQ(lognorm.evidence.rfind("non-negative; expm1 row sums near 10000", 0), 0u) << lognorm.evidence;

    // Scaled per gene (z-scores over the cells): negative values, means 0.
    CsrShard raw = make_rows([](std::vector<float>&) {});
    std::vector<double> sum(k_genes, 0), squares(k_genes, 0);
    std::vector<std::vector<float>> dense(k_cells, std::vector<float>(k_genes, 0.0f));
    for (std::int64_t cell = 0; cell < k_cells; ++cell)
        for (auto entry = raw.row_offsets[cell]; entry < raw.row_offsets[cell + 1]; ++entry)
            dense[cell][raw.gene_indices[entry]] = raw.values[entry];
    for (const auto& row : dense)
        for (std::int64_t gene = 0; gene < k_genes; ++gene) {
            sum[gene] += row[gene];
            squares[gene] += row[gene] * row[gene];
        }
    CsrShard scaled;
    scaled.num_genes = k_genes;
    for (const auto& row : dense) {
        for (std::int64_t gene = 0; gene < k_genes; ++gene) {
            const double mean = sum[gene] / k_cells;
            const double sd = std::sqrt(squares[gene] / k_cells - mean * mean);
            scaled.gene_indices.push_back(static_cast<std::int32_t>(gene));
            scaled.values.push_back(static_cast<float>((row[gene] - mean) / sd));
        }
        scaled.row_offsets.push_back(static_cast<std::int64_t>(scaled.values.size()));
    }
    const auto z = decide(scaled);
    EXPECT_EQ(z.content, MatrixContent::Scaled);
    EXPECT_EQ(z.evidence.rfind("negative values; per-gene means near 0 (50 of 50 genes)", 0), 0u) << z.evidence;

    // Shifted negative values that are not centred.
    for (auto& value : scaled.values) value += 3.0f;
    scaled.values[0] = -1.0f;
    EXPECT_EQ(decide(scaled).content, MatrixContent::Other);

    // The whole matrix's integer test overrides the scanned rows'.
    MatrixContentScan scan(k_genes);
    scan.add(make_rows([](std::vector<float>&) {}));
    EXPECT_EQ(scan.report(false).content, MatrixContent::NonIntegerCounts);
}

TEST(MatrixContent, RecipeThatFitsAndWarnings) {
    EXPECT_EQ(suggested_recipe(MatrixContent::RawCounts), Recipe::Zheng17);
    EXPECT_EQ(suggested_recipe(MatrixContent::NonIntegerCounts), Recipe::Zheng17);
    EXPECT_EQ(suggested_recipe(MatrixContent::LogNormalized), Recipe::None);
    EXPECT_EQ(suggested_recipe(MatrixContent::Scaled), Recipe::None);
    MatrixContentReport report{MatrixContent::RawCounts, "integer and non-negative", 10};
    EXPECT_EQ(recipe_content_warning(Recipe::Zheng17, report), "");
    EXPECT_EQ(recipe_content_warning(Recipe::Seurat, report), "");
    EXPECT_EQ(recipe_content_warning(Recipe::None, report).rfind("X holds raw integer counts, and recipe none", 0), 0u);
    report = {MatrixContent::LogNormalized, "non-negative; expm1 row sums near 10000", 10};
    EXPECT_EQ(recipe_content_warning(Recipe::None, report), "");
    EXPECT_EQ(recipe_content_warning(Recipe::Seurat, report),
              "X holds non-integer values: Seurat expects raw counts (X looks log-normalised: non-negative; expm1 row "
              "sums near 10000; the recipe ran on X as stored, as Scanpy runs it; recipe none fits processed data)");
    report = {MatrixContent::NonIntegerCounts, "non-negative, not integer, values up to 977", 10};
    EXPECT_EQ(recipe_content_warning(Recipe::Zheng17, report).rfind("X holds non-integer values: Zheng17 expects raw counts", 0),
              0u);
    EXPECT_EQ(recipe_content_warning(Recipe::None, report).rfind("X looks like counts (non-integer counts: ", 0), 0u);
}

// Scanpy's processed pbmc68k_reduced (X scaled): what the engine says it holds, a recipe
// refused with the reason (its log1p of negative values gives NaN), recipe none without
// a warning.
TEST(MatrixContent, ScaledXOpensAsScaledAndRefusesTheRecipes) {
    const auto path = test::shared_data("scanpy_pbmc68k_reduced/10x_pbmc68k_reduced.h5ad");
    FATHOM_REQUIRE_PATH(path);
    Engine engine(EngineConfig{"cpu:2"});
    ASSERT_EQ(test::finish(engine.open(path.string())).state, JobState::Succeeded);
    const auto& content = engine.snapshot()->dataset->content;
    EXPECT_EQ(content.content, MatrixContent::Scaled) << content.evidence;
    PipelineSettings settings;
    settings.run_neighbors = settings.run_umap = settings.run_leiden = settings.run_markers = false;
    settings.pca.num_components = 10;
    const auto refused = test::finish(engine.run(settings));
    EXPECT_EQ(refused.state, JobState::Failed);
    EXPECT_EQ(refused.failure, FailureKind::Option);
    EXPECT_NE(refused.message.find("recipe zheng17 needs non-negative counts, and X holds negative values (X looks scaled: "
                                   "negative values; per-gene means near 0"),
              std::string::npos)
        << refused.message;
    settings.recipe = Recipe::None;
    const auto ran = test::finish(engine.run(settings));
    ASSERT_EQ(ran.state, JobState::Succeeded) << ran.message;
    EXPECT_TRUE(engine.snapshot()->warnings.empty());
}

}  // namespace
}  // namespace fathom
