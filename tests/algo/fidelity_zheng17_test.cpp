// FIDELITY: recipe_zheng17 + PCA against Scanpy 1.9.6's outputs on every reference
// dataset that ran the recipe (shared/reference/<name>; README there). Skips only
// when the shared folder is absent; a reader that throws fails the test.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <set>

#include "core/algo/filter.hpp"
#include "core/algo/recipes.hpp"
#include "core/io/RowSource.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/reference.hpp"
#include "tests/support/simulate.hpp"

namespace fathom::test {
namespace {

struct Loaded {
    Dataset meta;
    ShardSet shards;
};

/// Opens the reference's input as scanpy read it and applies the pre-steps of meta.json.
Loaded load_input(const nlohmann::json& meta, int num_shards, JobContext& ctx) {
    io::ReadOptions options;
    options.make_var_names_unique = meta["params"].value("var_names_make_unique", false);
    options.read_annotations = false;
    io::OpenedDataset opened = io::open_dataset(reference_input_path(meta).string(), options);
    const auto offsets = opened.source->row_offsets();
    ShardSet shards = ShardSet::make_cpu(io::load_shards(*opened.source, plan_row_ranges(offsets, num_shards)));
    Loaded loaded{std::move(opened.meta), std::move(shards)};
    const double min_counts = meta["params"].value("min_counts_per_cell", 0.0);
    if (min_counts > 0) {
        // sc.pp.filter_cells(adata, min_counts=...) before the recipe.
        FilterCellsOptions filter;
        filter.min_counts = min_counts;
        const auto result = filter_cells(loaded.shards, filter, ctx);
        apply_cell_filter(loaded.shards, result, ctx);
        std::vector<std::string> names;
        for (std::size_t cell = 0; cell < result.keep.size(); ++cell)
            if (result.keep[cell]) names.push_back(loaded.meta.obs.index()[cell]);
        loaded.meta.obs = Table(std::move(names));
    }
    return loaded;
}

double cosine(const std::vector<double>& a, const std::vector<double>& b) {
    double dot = 0, norm_a = 0, norm_b = 0;
    for (std::size_t index = 0; index < a.size(); ++index) {
        dot += a[index] * b[index];
        norm_a += a[index] * a[index];
        norm_b += b[index] * b[index];
    }
    return dot / std::sqrt(norm_a * norm_b);
}

class Zheng17Fidelity : public ::testing::TestWithParam<std::string> {};

TEST_P(Zheng17Fidelity, MatchesScanpy) {
    const std::string name = GetParam();
    FATHOM_REQUIRE_PATH(reference_dir(name) / "meta.json");
    const auto meta = load_reference(name);
    const auto zheng17 = read_reference_json(name, "zheng17.json");
    const auto pca_reference = read_reference_json(name, "pca.json");
    JobContext ctx;
    Loaded input = load_input(meta, 3, ctx);
    const auto gene_names = input.meta.var.index();
    ASSERT_EQ(static_cast<std::int64_t>(gene_names.size()), input.shards.num_genes());

    Zheng17Options options;
    options.num_top_genes = meta["params"]["recipe_zheng17"]["n_top_genes"].get<std::int64_t>();
    // scanpy held X as integers only for an h5ad with integer X (yeast: int32).
    options.integer_dtype = meta.value("dtype_raw", std::string("float32")).rfind("int", 0) == 0;
    const Zheng17Result result = recipe_zheng17(input.shards, options, ctx);
    ASSERT_TRUE(result.pca.has_value());

    // ---- cells: n_counts_all and the cells kept ----
    const auto n_counts_all = read_reference_npy(name, "n_counts_all.npy");
    ASSERT_EQ(static_cast<std::int64_t>(result.kept_cells.size()), meta["n_obs"].get<std::int64_t>());
    ASSERT_EQ(n_counts_all.numbers.size(), result.kept_cells.size());
    double worst_counts = 0;
    for (std::size_t cell = 0; cell < result.kept_cells.size(); ++cell)
        worst_counts = std::max(worst_counts, relative_difference(result.first_normalization.counts_per_cell[static_cast<std::size_t>(result.kept_cells[cell])],
                                                                  n_counts_all.numbers[cell], 1.0));
    EXPECT_LE(worst_counts, 1e-7) << "n_counts_all";

    // ---- genes: the HVG set, exactly (ties reported) ----
    const auto reference_hvg = zheng17["hvg_names"].get<std::vector<std::string>>();
    std::vector<std::string> ours;
    for (auto gene : result.hvg_genes) ours.push_back(gene_names[static_cast<std::size_t>(gene)]);
    const std::set<std::string> ours_set(ours.begin(), ours.end()), reference_set(reference_hvg.begin(), reference_hvg.end());
    std::vector<std::string> only_ours, only_reference;
    for (const auto& gene : ours_set)
        if (!reference_set.count(gene)) only_ours.push_back(gene);
    for (const auto& gene : reference_set)
        if (!ours_set.count(gene)) only_reference.push_back(gene);
    std::string difference;
    for (const auto& gene : only_ours) difference += " +" + gene;
    for (const auto& gene : only_reference) difference += " -" + gene;
    EXPECT_TRUE(only_ours.empty() && only_reference.empty())
        << name << ": HVG sets differ (+ ours only, - scanpy only):" << difference << " (cut-off " << result.dispersion.cutoff << ")";
    EXPECT_EQ(ours, reference_hvg) << "HVG order (original var order)";

    // ---- the dispersion table (float32 in the CSV) ----
    const auto table = read_reference_csv(name, "dispersions.csv.gz");
    ASSERT_EQ(table.num_rows(), static_cast<std::int64_t>(result.dispersion.means.size()));
    const auto csv_mean = table.numbers("mean"), csv_dispersion = table.numbers("dispersion"),
               csv_norm = table.numbers("dispersion_norm");
    double worst_dispersion = 0;
    for (std::size_t gene = 0; gene < csv_mean.size(); ++gene) {
        worst_dispersion = std::max(worst_dispersion, relative_difference(result.dispersion.means[gene], csv_mean[gene], 1e-12));
        worst_dispersion = std::max(worst_dispersion, relative_difference(result.dispersion.dispersions[gene], csv_dispersion[gene], 1e-12));
        if (std::isnan(csv_norm[gene])) EXPECT_TRUE(std::isnan(result.dispersion.dispersions_norm[gene])) << gene;
        else worst_dispersion = std::max(worst_dispersion, relative_difference(result.dispersion.dispersions_norm[gene], csv_norm[gene], 1e-6));
    }
    EXPECT_LE(worst_dispersion, 1e-5) << "dispersion table";

    // ---- mean / std of the log-normalised HVGs ----
    const auto mean_reference = zheng17["mean_before_scaling"].get<std::vector<double>>();
    const auto std_reference = zheng17["std_before_scaling"].get<std::vector<double>>();
    double worst_mean = 0, worst_std = 0;
    if (result.scaling.mean.size() == mean_reference.size()) {
        for (std::size_t gene = 0; gene < mean_reference.size(); ++gene) {
            worst_mean = std::max(worst_mean, relative_difference(result.scaling.mean[gene], mean_reference[gene]));
            worst_std = std::max(worst_std, relative_difference(result.scaling.std[gene], std_reference[gene]));
        }
    } else {
        ADD_FAILURE() << "scaled gene count " << result.scaling.mean.size() << " vs " << mean_reference.size();
    }
    EXPECT_LE(worst_mean, 1e-5) << "mean_before_scaling";
    EXPECT_LE(worst_std, 1e-5) << "std_before_scaling";

    // ---- PCA ----
    const auto variance_ratio = pca_reference["variance_ratio"].get<std::vector<double>>();
    const auto& pca = *result.pca;
    ASSERT_EQ(pca.variance_ratio.size(), variance_ratio.size());
    double worst_ratio = 0;
    for (std::size_t component = 0; component < variance_ratio.size(); ++component)
        worst_ratio = std::max(worst_ratio, std::abs(pca.variance_ratio[component] - variance_ratio[component]));
    EXPECT_LE(worst_ratio, 1e-4) << "variance_ratio";
    const auto x_pca = read_reference_npy(name, "X_pca.npy");
    ASSERT_EQ(x_pca.rows(), pca.scores.rows());
    double min_cosine = 1, min_signed = 1;
    for (std::int64_t component = 0; component < 10; ++component) {
        std::vector<double> a, b;
        for (std::int64_t cell = 0; cell < x_pca.rows(); ++cell) {
            a.push_back(pca.scores(cell, component));
            b.push_back(x_pca.numbers[static_cast<std::size_t>(cell * x_pca.cols() + component)]);
        }
        const double value = cosine(a, b);
        min_cosine = std::min(min_cosine, std::abs(value));
        min_signed = std::min(min_signed, value);
    }
    EXPECT_GE(min_cosine, 0.9999) << "first 10 PCs";
    EXPECT_GE(min_signed, 0.9999) << "svd_flip signs of the first 10 PCs";
    std::cout.precision(10);
    std::cout << "[fidelity] " << name << ": cells " << result.kept_cells.size() << ", HVG " << ours.size() << "/"
              << reference_hvg.size() << (only_ours.empty() && only_reference.empty() ? " identical" : " DIFFER")
              << ", dispersion table max rel " << worst_dispersion << ", mean max rel " << worst_mean << ", std max rel "
              << worst_std << ", variance_ratio max abs " << worst_ratio << ", min |cos| PC1-10 " << min_cosine
              << " (signed " << min_signed << ")\n";
}

/// Shard-count invariance on real data: 2, 3 and 7 shards against 1.
class Zheng17ShardInvariance : public ::testing::TestWithParam<std::string> {};

TEST_P(Zheng17ShardInvariance, AgreesWithOneShard) {
    const std::string name = GetParam();
    FATHOM_REQUIRE_PATH(reference_dir(name) / "meta.json");
    const auto meta = load_reference(name);
    JobContext ctx;
    Loaded input = load_input(meta, 1, ctx);
    const CsrShard whole = input.shards.shard(0).to_host();
    Zheng17Options options;
    options.num_top_genes = meta["params"]["recipe_zheng17"]["n_top_genes"].get<std::int64_t>();
    auto run = [&](int shards) {
        ShardSet set = ShardSet::make_cpu(split_into_shards(whole, plan_row_ranges(whole.row_offsets, shards)));
        return recipe_zheng17(set, options, ctx);
    };
    const Zheng17Result reference = run(1);
    for (int shards : {2, 3, 7}) {
        const Zheng17Result other = run(shards);
        EXPECT_EQ(other.hvg_genes, reference.hvg_genes) << shards;
        double mean = 0, std = 0, ratio = 0, scores = 0;
        for (std::size_t gene = 0; gene < reference.scaling.mean.size(); ++gene) {
            mean = std::max(mean, relative_difference(reference.scaling.mean[gene], other.scaling.mean[gene]));
            std = std::max(std, relative_difference(reference.scaling.std[gene], other.scaling.std[gene]));
        }
        for (std::size_t component = 0; component < reference.pca->variance_ratio.size(); ++component)
            ratio = std::max(ratio, relative_difference(reference.pca->variance_ratio[component], other.pca->variance_ratio[component]));
        for (std::int64_t component = 0; component < 10; ++component) {
            double largest = 0, difference = 0;
            for (std::int64_t cell = 0; cell < reference.pca->scores.rows(); ++cell) {
                largest = std::max(largest, std::abs(static_cast<double>(reference.pca->scores(cell, component))));
                difference = std::max(difference, std::abs(static_cast<double>(reference.pca->scores(cell, component)) -
                                                           other.pca->scores(cell, component)));
            }
            scores = std::max(scores, difference / largest);
        }
        EXPECT_LE(mean, 1e-6);
        EXPECT_LE(std, 1e-6);
        EXPECT_LE(ratio, 1e-6);
        EXPECT_LE(scores, 1e-5) << "float32 scores of PC1-10, relative to the largest score";
        std::cout << "[shards] " << name << " 1 vs " << shards << ": mean " << mean << ", std " << std << ", variance_ratio "
                  << ratio << ", PC1-10 scores " << scores << "\n";
    }
}

INSTANTIATE_TEST_SUITE_P(References, Zheng17ShardInvariance,
                         ::testing::Values("scanpy_10x_v3_chr21", "scanpy_neurons10k_1000genes"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

INSTANTIATE_TEST_SUITE_P(References, Zheng17Fidelity, ::testing::ValuesIn(zheng17_reference_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace fathom::test
