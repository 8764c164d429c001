// Every step's Options (core/types/*_options.hpp) is a plain comparable value: the
// headers stand alone below the algorithms, defaults compare equal, and changing any
// one field makes the options differ.
#include <gtest/gtest.h>

#include <concepts>
#include <type_traits>

#include "core/types/connectivities_options.hpp"
#include "core/types/filter_options.hpp"
#include "core/types/gene_filter_options.hpp"
#include "core/types/gene_set_options.hpp"
#include "core/types/hvg_options.hpp"
#include "core/types/knn_options.hpp"
#include "core/types/leiden_options.hpp"
#include "core/types/markers_options.hpp"
#include "core/types/neighbors_options.hpp"
#include "core/types/normalize_options.hpp"
#include "core/types/pca_options.hpp"
#include "core/types/qc_options.hpp"
#include "core/types/recipes_options.hpp"
#include "core/types/scale_options.hpp"
#include "core/types/spectral_options.hpp"
#include "core/types/umap_options.hpp"

namespace fathom::test {
namespace {

/// Comparable, copyable values.
template <typename Options>
constexpr bool plain_value = std::equality_comparable<Options> && std::is_copy_constructible_v<Options> &&
                             std::is_default_constructible_v<Options>;

static_assert(plain_value<ConnectivitiesOptions>);
static_assert(plain_value<FilterCellsOptions>);
static_assert(plain_value<FilterGenesOptions>);
static_assert(plain_value<GeneFilterOptions>);
static_assert(plain_value<GeneSetScoreOptions>);
static_assert(plain_value<HvgOptions>);
static_assert(plain_value<KnnOptions>);
static_assert(plain_value<LeidenOptions>);
static_assert(plain_value<RankGenesGroupsOptions>);
static_assert(plain_value<NeighborsOptions>);
static_assert(plain_value<NormalizeTotalOptions>);
static_assert(plain_value<NormalizePerCellOptions>);
static_assert(plain_value<PcaOptions>);
static_assert(plain_value<QcOptions>);
static_assert(plain_value<Zheng17Options>);
static_assert(plain_value<SeuratRecipeOptions>);
static_assert(plain_value<ScaleOptions>);
static_assert(plain_value<SpectralOptions>);
static_assert(plain_value<UmapOptions>);

/// Defaults compare equal; `change` applied to a copy makes it differ.
template <typename Options, typename Change>
void expect_field_counts(Change change, const char* what) {
    const Options defaults;
    EXPECT_TRUE(defaults == Options{}) << what;
    Options changed = defaults;
    change(changed);
    EXPECT_FALSE(changed == defaults) << what;
    EXPECT_TRUE(changed != defaults) << what;
}

TEST(Options, DefaultsCompareEqualAndEveryKindOfFieldCounts) {
    expect_field_counts<PcaOptions>([](PcaOptions& options) { options.solver = PcaSolver::Lanczos; }, "PcaOptions::solver");
    expect_field_counts<KnnOptions>([](KnnOptions& options) { options.method = KnnMethod::Hnsw; }, "KnnOptions::method");
    expect_field_counts<KnnOptions>([](KnnOptions& options) { options.nndescent_delta = 0.5; }, "KnnOptions::nndescent_delta");
    expect_field_counts<NeighborsOptions>([](NeighborsOptions& options) { options.knn.num_neighbors = 30; },
                                          "NeighborsOptions::knn");
    expect_field_counts<NeighborsOptions>([](NeighborsOptions& options) { options.connectivities.bandwidth = 2.0; },
                                          "NeighborsOptions::connectivities");
    expect_field_counts<UmapOptions>([](UmapOptions& options) { options.publish_every = 5; }, "UmapOptions::publish_every");
    expect_field_counts<UmapOptions>([](UmapOptions& options) { options.init = UmapInit::Random; }, "UmapOptions::init");
    expect_field_counts<SpectralOptions>([](SpectralOptions& options) { options.seed = 7; }, "SpectralOptions::seed");
    expect_field_counts<LeidenOptions>([](LeidenOptions& options) { options.resolution = 0.5; }, "LeidenOptions::resolution");
    expect_field_counts<RankGenesGroupsOptions>([](RankGenesGroupsOptions& options) { options.log1p_base = 2.0; },
                                                "RankGenesGroupsOptions::log1p_base");
    expect_field_counts<HvgOptions>([](HvgOptions& options) { options.num_top_genes = 500; }, "HvgOptions::num_top_genes");
    expect_field_counts<ScaleOptions>([](ScaleOptions& options) { options.max_value = 10.0; }, "ScaleOptions::max_value");
    expect_field_counts<NormalizeTotalOptions>([](NormalizeTotalOptions& options) { options.integer_dtype = true; },
                                               "NormalizeTotalOptions::integer_dtype");
    expect_field_counts<NormalizePerCellOptions>([](NormalizePerCellOptions& options) { options.min_counts = 0.0; },
                                                 "NormalizePerCellOptions::min_counts");
    expect_field_counts<FilterCellsOptions>([](FilterCellsOptions& options) { options.min_genes = 200; },
                                            "FilterCellsOptions::min_genes");
    expect_field_counts<FilterGenesOptions>([](FilterGenesOptions& options) { options.min_cells = 3; },
                                            "FilterGenesOptions::min_cells");
    expect_field_counts<QcOptions>([](QcOptions& options) { options.mito_prefixes.push_back("Mt-"); },
                                   "QcOptions::mito_prefixes");
    expect_field_counts<Zheng17Options>([](Zheng17Options& options) { options.pca->num_components = 20; },
                                        "Zheng17Options::pca");
    expect_field_counts<Zheng17Options>([](Zheng17Options& options) { options.pca.reset(); }, "Zheng17Options::pca unset");
    expect_field_counts<SeuratRecipeOptions>([](SeuratRecipeOptions& options) { options.hvg.min_mean = 0.1; },
                                             "SeuratRecipeOptions::hvg");
    expect_field_counts<GeneFilterOptions>([](GeneFilterOptions& options) { options.layer = FilterLayer::Counts; },
                                           "GeneFilterOptions::layer");
    expect_field_counts<GeneSetScoreOptions>([](GeneSetScoreOptions& options) { options.subtract_control = true; },
                                             "GeneSetScoreOptions::subtract_control");
    expect_field_counts<ConnectivitiesOptions>([](ConnectivitiesOptions& options) { options.num_iterations = 32; },
                                               "ConnectivitiesOptions::num_iterations");
}

}  // namespace
}  // namespace fathom::test
