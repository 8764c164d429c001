// h5ad reader: hand-built files of every layout and encoding generation, then the
// real h5ad files in ../shared/data (expected numbers read with anndata 0.8.0 under
// /usr/bin/python3, `anndata.read_h5ad(path)`, quoted next to each assertion).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <set>
#include <thread>

#include "core/data/ShardedCsr.hpp"
#include "core/io/RowSource.hpp"
#include "core/io/detail/hdf5_ext.hpp"
#include "core/io/errors.hpp"
#include "core/io/detail/h5ad_matrix.hpp"
#include "core/io/readers.hpp"
#include "tests/support/h5ad_fixtures.hpp"
#include "tests/support/paths.hpp"

namespace fathom {
namespace {

/// The text of one field of a structured array read from uns.
const std::vector<std::string>& record_strings(const UnsRecords& records, const std::string& field) {
    const auto at = std::find(records.fields.begin(), records.fields.end(), field);
    if (at == records.fields.end()) throw std::out_of_range("no field " + field);
    return records.strings.at(static_cast<std::size_t>(at - records.fields.begin()));
}

using test::H5adGeneration;
using test::H5adLayout;

void expect_shards_equal(const CsrShard& actual, const CsrShard& expected) {
    EXPECT_NO_THROW(actual.check_invariants());
    EXPECT_EQ(actual.row_begin, expected.row_begin);
    EXPECT_EQ(actual.num_genes, expected.num_genes);
    EXPECT_EQ(actual.row_offsets, expected.row_offsets);
    EXPECT_EQ(actual.gene_indices, expected.gene_indices);
    EXPECT_EQ(actual.values, expected.values);
}

std::filesystem::path write_fixture(const test::H5adFixture& fixture, const std::string& label) {
    const auto path = test::temp_dir("h5ad-" + label) / "fixture.h5ad";
    test::write_h5ad_fixture(path, fixture);
    return path;
}

std::set<std::string> keys_of(const std::map<std::string, DenseMatrix<float>>& arrays) {
    std::set<std::string> keys;
    for (const auto& [key, value] : arrays) keys.insert(key);
    return keys;
}

std::set<std::string> keys_of(const UnsNode& node) {
    std::set<std::string> keys;
    for (const auto& [key, value] : node.children) keys.insert(key);
    return keys;
}

template <typename T>
const T& uns_value(const UnsNode& root, const std::vector<std::string>& path) {
    const UnsNode* node = &root;
    for (const auto& key : path) {
        node = node->find(key);
        if (!node) throw std::runtime_error("uns key missing: " + key);
    }
    return std::get<T>(node->value);
}

double total_of(io::RowSource& source) {
    const CsrShard all = source.read_rows(0, source.shape().num_cells);
    double total = 0;
    for (float value : all.values) total += value;
    return total;
}

// ---------------------------------------------------------------- layouts

struct LayoutCase {
    H5adLayout layout;
    std::string dtype;
    bool int64_index;
    const char* name;
};

TEST(H5adReader, CsrCscDenseGiveIdenticalShardsForEveryRange) {
    const auto base = test::make_h5ad_fixture(9, 7, H5adGeneration::Modern, 3);
    const std::int64_t cells = base.x.values.rows();
    const std::vector<std::pair<std::int64_t, std::int64_t>> ranges = {
        {0, 0}, {0, 1}, {1, 2}, {2, 5}, {4, 4}, {5, cells}, {0, cells}, {cells, cells}};
    const std::vector<LayoutCase> cases = {{H5adLayout::Csr, "float32", false, "csr"},
                                           {H5adLayout::Csr, "int64", true, "csr"},
                                           {H5adLayout::Csc, "int32", false, "csc"},
                                           {H5adLayout::Csc, "float64", true, "csc"},
                                           {H5adLayout::Dense, "float32", false, "dense"},
                                           {H5adLayout::Dense, "int32", false, "dense"}};
    const auto expected_offsets = test::dense_to_csr(base.x.values, 0, cells).row_offsets;
    for (const auto& layout_case : cases) {
        SCOPED_TRACE(std::string(layout_case.name) + " " + layout_case.dtype);
        auto fixture = base;
        fixture.x.layout = layout_case.layout;
        fixture.x.dtype = layout_case.dtype;
        fixture.x.int64_index = layout_case.int64_index;
        const auto path = write_fixture(fixture, layout_case.name);
        auto opened = io::open_h5ad(path.string(), {});
        EXPECT_EQ(opened.meta.matrix_layout, layout_case.name);
        EXPECT_EQ(opened.meta.matrix_name, "X");
        EXPECT_EQ(opened.meta.format, DatasetFormat::H5ad);
        EXPECT_EQ(opened.meta.path, path.string());
        EXPECT_EQ(opened.meta.shape, (MatrixShape{cells, 7}));
        EXPECT_EQ(opened.meta.nnz, expected_offsets.back());
        EXPECT_EQ(opened.source->nnz(), expected_offsets.back());
        EXPECT_EQ(opened.source->row_offsets(), expected_offsets);
        const ValueType type = layout_case.dtype == "float32"   ? ValueType::Float32
                               : layout_case.dtype == "float64" ? ValueType::Float64
                               : layout_case.dtype == "int32"   ? ValueType::Int32
                                                                : ValueType::Int64;
        EXPECT_EQ(opened.meta.stored_type, type);
        for (const auto& [begin, end] : ranges) {
            SCOPED_TRACE("rows [" + std::to_string(begin) + ", " + std::to_string(end) + ")");
            expect_shards_equal(opened.source->read_rows(begin, end), test::dense_to_csr(base.x.values, begin, end));
        }
        // A clone reads independently and identically.
        auto clone = opened.source->clone();
        expect_shards_equal(clone->read_rows(2, 6), test::dense_to_csr(base.x.values, 2, 6));
        EXPECT_THROW(opened.source->read_rows(3, cells + 1), std::out_of_range);
        EXPECT_THROW(opened.source->read_rows(4, 3), std::out_of_range);
    }
}

TEST(H5adReader, CscAndDenseStreamInSmallBlocks) {
    // Blocks far smaller than the matrix exercise the block boundaries, skipped data
    // blocks (CSC) and row slabs (dense).
    const auto base = test::make_h5ad_fixture(23, 11, H5adGeneration::Modern, 8);
    const std::int64_t cells = base.x.values.rows();
    for (auto layout : {H5adLayout::Csc, H5adLayout::Dense}) {
        auto fixture = base;
        fixture.x.layout = layout;
        const auto path = write_fixture(fixture, "blocks");
        const io::h5::File file = io::h5::File::open_read(path.string());
        auto info = std::make_shared<const io::h5ad::MatrixInfo>(io::h5ad::inspect_matrix(file, "/X", {}, false));
        for (std::int64_t block : {1, 3, 7, 1000}) {
            SCOPED_TRACE("block " + std::to_string(block));
            std::unique_ptr<io::RowSource> source;
            if (layout == H5adLayout::Csc) source = std::make_unique<io::h5ad::CscRowSource>(info, block);
            else source = std::make_unique<io::h5ad::DenseRowSource>(info, block);
            for (auto [begin, end] : std::vector<std::pair<std::int64_t, std::int64_t>>{{0, cells}, {3, 4}, {10, 17}, {22, 23}})
                expect_shards_equal(source->read_rows(begin, end), test::dense_to_csr(base.x.values, begin, end));
            EXPECT_EQ(source->row_offsets(), test::dense_to_csr(base.x.values, 0, cells).row_offsets);
        }
    }
}

TEST(H5adReader, LegacyH5sparseAttributesAreRead) {
    auto fixture = test::make_h5ad_fixture(6, 5, H5adGeneration::PreV07, 4);
    fixture.x.layout = H5adLayout::Csr;  // pre-0.7 X as h5sparse group
    const auto path = write_fixture(fixture, "h5sparse");
    auto opened = io::open_h5ad(path.string(), {});
    EXPECT_EQ(opened.meta.matrix_layout, "csr");
    expect_shards_equal(opened.source->read_rows(0, 6), test::dense_to_csr(fixture.x.values, 0, 6));
}

TEST(H5adReader, UnsortedIndicesWithinRowsAreSorted) {
    auto fixture = test::make_h5ad_fixture(8, 9, H5adGeneration::Modern, 5);
    fixture.x.reverse_rows = true;  // every row's entries stored in decreasing gene order
    const auto path = write_fixture(fixture, "unsorted");
    auto opened = io::open_h5ad(path.string(), {});
    for (auto [begin, end] : std::vector<std::pair<std::int64_t, std::int64_t>>{{0, 8}, {2, 3}, {5, 8}})
        expect_shards_equal(opened.source->read_rows(begin, end), test::dense_to_csr(fixture.x.values, begin, end));
}

TEST(H5adReader, ParallelClonesReadDisjointRanges) {
    const auto fixture = test::make_h5ad_fixture(40, 12, H5adGeneration::Modern, 6);
    const auto path = write_fixture(fixture, "threads");
    auto opened = io::open_h5ad(path.string(), {});
    const auto ranges = split_rows_evenly(40, 4);
    std::vector<CsrShard> shards(ranges.size());
    std::vector<std::thread> threads;
    for (std::size_t index = 0; index < ranges.size(); ++index) {
        threads.emplace_back([&, index, source = std::shared_ptr<io::RowSource>(opened.source->clone())] {
            shards[index] = source->read_rows(ranges[index].begin, ranges[index].end);
        });
    }
    for (auto& thread : threads) thread.join();
    for (std::size_t index = 0; index < ranges.size(); ++index)
        expect_shards_equal(shards[index], test::dense_to_csr(fixture.x.values, ranges[index].begin, ranges[index].end));
}

// ---------------------------------------------------------------- matrix selection

TEST(H5adReader, RawAndLayersSelection) {
    const auto fixture = test::make_h5ad_fixture(7, 6, H5adGeneration::Modern, 9);
    const auto path = write_fixture(fixture, "select");
    {
        io::ReadOptions options;
        options.matrix = "raw";
        auto opened = io::open_h5ad(path.string(), options);
        EXPECT_EQ(opened.meta.matrix_name, "raw/X");
        EXPECT_EQ(opened.meta.shape, (MatrixShape{7, 8}));
        test::expect_tables_equal(opened.meta.var, fixture.raw_var);
        test::expect_tables_equal(opened.meta.obs, fixture.obs);
        expect_shards_equal(opened.source->read_rows(0, 7), test::dense_to_csr(fixture.raw_x.values, 0, 7));
    }
    {
        io::ReadOptions options;
        options.matrix = "layers/counts";
        auto opened = io::open_h5ad(path.string(), options);
        EXPECT_EQ(opened.meta.matrix_name, "layers/counts");
        EXPECT_EQ(opened.meta.matrix_layout, "csc");
        EXPECT_EQ(opened.meta.stored_type, ValueType::Int32);
        test::expect_tables_equal(opened.meta.var, fixture.var);
        expect_shards_equal(opened.source->read_rows(1, 6), test::dense_to_csr(fixture.x.values, 1, 6));
    }
    {
        io::ReadOptions options;
        options.matrix = "layers/half";
        auto opened = io::open_h5ad(path.string(), options);
        EXPECT_EQ(opened.meta.matrix_layout, "dense");
        EXPECT_EQ(opened.meta.stored_type, ValueType::Float64);
        EXPECT_TRUE(opened.meta.integer_counts_known);
        EXPECT_FALSE(opened.meta.integer_counts);  // halves of odd counts
        expect_shards_equal(opened.source->read_rows(0, 7), test::dense_to_csr(fixture.layers.at("half").values, 0, 7));
    }
    io::ReadOptions missing;
    missing.matrix = "layers/nope";
    try {
        io::open_h5ad(path.string(), missing);
        ADD_FAILURE() << "expected FormatError";
    } catch (const io::FormatError& error) {
        EXPECT_EQ(error.object(), "/layers/nope");
        EXPECT_NE(std::string(error.what()).find("counts, half"), std::string::npos) << error.what();
    }
    io::ReadOptions bad;
    bad.matrix = "obsm/X_pca";
    EXPECT_THROW(io::open_h5ad(path.string(), bad), std::invalid_argument);

    auto no_raw = fixture;
    no_raw.write_raw = false;
    const auto no_raw_path = write_fixture(no_raw, "noraw");
    io::ReadOptions raw;
    raw.matrix = "raw";
    try {
        io::open_h5ad(no_raw_path.string(), raw);
        ADD_FAILURE() << "expected FormatError";
    } catch (const io::FormatError& error) {
        EXPECT_EQ(error.object(), "/raw/X");
    }
}

TEST(H5adReader, AbsentXOpensAsAnEmptyMatrix) {
    auto fixture = test::make_h5ad_fixture(5, 4, H5adGeneration::Modern, 2);
    fixture.write_x = false;
    const auto path = write_fixture(fixture, "nox");
    auto opened = io::open_h5ad(path.string(), {});
    EXPECT_EQ(opened.meta.matrix_layout, "none");
    EXPECT_EQ(opened.meta.shape, (MatrixShape{5, 4}));
    EXPECT_EQ(opened.meta.nnz, 0);
    const CsrShard shard = opened.source->read_rows(1, 4);
    EXPECT_EQ(shard.num_rows(), 3);
    EXPECT_EQ(shard.nnz(), 0);
    EXPECT_EQ(shard.num_genes, 4);
    test::expect_tables_equal(opened.meta.obs, fixture.obs);
}

TEST(H5adReader, OpenDatasetDetectsH5adAndMakesNamesUnique) {
    const auto fixture = test::make_h5ad_fixture(5, 4, H5adGeneration::Modern, 2);
    const auto path = write_fixture(fixture, "dispatch");
    EXPECT_EQ(io::detect_format(path.string()), DatasetFormat::H5ad);
    auto as_stored = io::open_dataset(path.string());
    EXPECT_EQ(as_stored.meta.var.index().back(), "gene0");  // duplicate kept as stored
    io::ReadOptions options;
    options.make_var_names_unique = true;
    auto unique = io::open_dataset(path.string(), options);
    EXPECT_EQ(unique.meta.var.index().back(), "gene0-1");  // anndata's var_names_make_unique
}

// ---------------------------------------------------------------- annotations

TEST(H5adReader, ModernEncodingsRoundTrip) {
    const auto fixture = test::make_h5ad_fixture(8, 6, H5adGeneration::Modern, 11);
    const auto path = write_fixture(fixture, "modern");
    auto opened = io::open_h5ad(path.string(), {});
    const Dataset& meta = opened.meta;
    // obs: categorical (with a -1 code), ordered categorical, string-array, int64,
    // uint8, float64, bool, nullable-integer, nullable-boolean; var adds a categorical.
    test::expect_tables_equal(meta.obs, fixture.obs);
    test::expect_tables_equal(meta.var, fixture.var);
    EXPECT_EQ(meta.obs.index().front(), "cell0-\xc3\xa9");
    // obsm: the CSR entry and the dataframe entry are skipped.
    EXPECT_EQ(keys_of(meta.obsm), (std::set<std::string>{"X_pca", "X_umap"}));
    EXPECT_EQ(meta.obsm.at("X_pca"), fixture.obsm.at("X_pca"));
    EXPECT_EQ(meta.obsm.at("X_umap"), fixture.obsm.at("X_umap"));
    EXPECT_EQ(meta.varm.at("PCs"), fixture.varm.at("PCs"));
    // uns: every leaf type; the sparse matrix and the categorical are skipped.
    EXPECT_EQ(keys_of(meta.uns), (std::set<std::string>{"alpha", "colors", "flag", "matrix", "neighbors", "params",
                                                        "sizes", "title", "version", "weights"}));
    EXPECT_EQ(uns_value<std::string>(meta.uns, {"title"}), "fixture \xc3\xa9");
    EXPECT_EQ(uns_value<std::int64_t>(meta.uns, {"version"}), 3);
    EXPECT_EQ(uns_value<double>(meta.uns, {"alpha"}), 0.5);
    EXPECT_EQ(uns_value<bool>(meta.uns, {"flag"}), true);
    EXPECT_EQ(uns_value<std::vector<std::string>>(meta.uns, {"colors"}), (std::vector<std::string>{"#ff0000", "#00ff00"}));
    EXPECT_EQ(uns_value<std::vector<std::int64_t>>(meta.uns, {"sizes"}), (std::vector<std::int64_t>{1, 2, 3}));
    EXPECT_EQ(uns_value<std::vector<double>>(meta.uns, {"weights"}), (std::vector<double>{0.5, 1.5}));
    EXPECT_EQ(uns_value<DenseMatrix<double>>(meta.uns, {"matrix"}), DenseMatrix<double>(2, 3, std::vector<double>{1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(uns_value<std::int64_t>(meta.uns, {"params", "n_neighbors"}), 15);
    EXPECT_EQ(uns_value<std::string>(meta.uns, {"params", "method"}), "umap");
    EXPECT_EQ(uns_value<double>(meta.uns, {"params", "nested", "deep"}), 1.25);
    EXPECT_TRUE(meta.uns.find("neighbors")->children.empty());
    // obsp: /obsp/distances plus uns/neighbors/connectivities moved there (anndata _move_adj_mtx).
    ASSERT_EQ(meta.obsp.size(), 2u);
    const std::int64_t cells = fixture.obs.num_rows();
    expect_shards_equal(meta.obsp.at("distances"), test::dense_to_csr(fixture.obsp.at("distances").values, 0, cells));
    expect_shards_equal(meta.obsp.at("connectivities"), test::dense_to_csr(fixture.uns_graph.values, 0, cells));

    io::ReadOptions lean;
    lean.read_annotations = false;
    auto skipped = io::open_h5ad(path.string(), lean);
    EXPECT_TRUE(skipped.meta.obsm.empty());
    EXPECT_TRUE(skipped.meta.varm.empty());
    EXPECT_TRUE(skipped.meta.uns.children.empty());
    EXPECT_TRUE(skipped.meta.obsp.empty());
    test::expect_tables_equal(skipped.meta.obs, fixture.obs);  // obs / var are always read
}

TEST(H5adReader, Legacy07EncodingsRoundTrip) {
    const auto fixture = test::make_h5ad_fixture(7, 5, H5adGeneration::Legacy07, 12);
    const auto path = write_fixture(fixture, "legacy07");
    auto opened = io::open_h5ad(path.string(), {});
    // Categoricals through object references to __categories (ordered attribute there).
    test::expect_tables_equal(opened.meta.obs, fixture.obs);
    test::expect_tables_equal(opened.meta.var, fixture.var);
    EXPECT_EQ(keys_of(opened.meta.obsm), (std::set<std::string>{"X_pca", "X_umap"}));
    EXPECT_EQ(uns_value<std::string>(opened.meta.uns, {"params", "method"}), "umap");
    io::ReadOptions raw;
    raw.matrix = "raw";
    auto raw_opened = io::open_h5ad(path.string(), raw);
    test::expect_tables_equal(raw_opened.meta.var, fixture.raw_var);
    expect_shards_equal(raw_opened.source->read_rows(0, 7), test::dense_to_csr(fixture.raw_x.values, 0, 7));
}

TEST(H5adReader, PreV07CompoundLayoutRoundTrips) {
    auto fixture = test::make_h5ad_fixture(6, 4, H5adGeneration::PreV07, 13);
    fixture.x.layout = H5adLayout::Dense;  // as scanpy's pbmc68k_reduced
    const auto path = write_fixture(fixture, "prev07");
    auto opened = io::open_h5ad(path.string(), {});
    EXPECT_EQ(opened.meta.matrix_layout, "dense");
    // cell_type comes back categorical from uns["cell_type_categories"] (anndata _clean_uns).
    test::expect_tables_equal(opened.meta.obs, fixture.obs);
    test::expect_tables_equal(opened.meta.var, fixture.var);
    EXPECT_EQ(opened.meta.obsm.at("X_pca"), fixture.obsm.at("X_pca"));
    EXPECT_EQ(opened.meta.obsm.at("X_umap"), fixture.obsm.at("X_umap"));
    EXPECT_EQ(opened.meta.varm.at("PCs"), fixture.varm.at("PCs"));
    EXPECT_EQ(keys_of(opened.meta.uns), (std::set<std::string>{"louvain_colors", "method", "neighbors", "random_state"}));
    EXPECT_EQ(uns_value<std::string>(opened.meta.uns, {"method"}), "logreg");  // one-element 'S' array -> scalar
    EXPECT_EQ(uns_value<std::vector<std::int64_t>>(opened.meta.uns, {"random_state"}), std::vector<std::int64_t>{0});
    expect_shards_equal(opened.source->read_rows(0, 6), test::dense_to_csr(fixture.x.values, 0, 6));
    ASSERT_EQ(opened.meta.obsp.size(), 1u);  // h5sparse uns/neighbors/connectivities
    expect_shards_equal(opened.meta.obsp.at("connectivities"), test::dense_to_csr(fixture.uns_graph.values, 0, 6));
    io::ReadOptions raw;
    raw.matrix = "raw";
    auto raw_opened = io::open_h5ad(path.string(), raw);  // /raw.X + /raw.var
    test::expect_tables_equal(raw_opened.meta.var, fixture.raw_var);
    expect_shards_equal(raw_opened.source->read_rows(2, 5), test::dense_to_csr(fixture.raw_x.values, 2, 5));
}

TEST(H5adReader, LzfDecoderHandlesLiteralsAndBackReferences) {
    // "abcabcabcX": literal run "abc" (control 2), back reference of length 6 at
    // distance 3 (control (6-2)<<5 | 0, offset byte 2), literal "X".
    const std::vector<std::uint8_t> compressed = {2, 'a', 'b', 'c', 4 << 5, 2, 0, 'X'};
    std::vector<std::uint8_t> output(10);
    EXPECT_EQ(io::h5::lzf_decompress(compressed.data(), compressed.size(), output.data(), output.size()), 10);
    EXPECT_EQ(std::string(output.begin(), output.end()), "abcabcabcX");
    std::vector<std::uint8_t> small(5);
    EXPECT_EQ(io::h5::lzf_decompress(compressed.data(), compressed.size(), small.data(), small.size()), 0);
    const std::vector<std::uint8_t> corrupt = {1 << 5, 9};  // reference before the start
    EXPECT_EQ(io::h5::lzf_decompress(corrupt.data(), corrupt.size(), output.data(), output.size()), -1);
}

// ---------------------------------------------------------------- real data

std::filesystem::path fixture_archive(const std::string& version) {
    return test::shared_data("anndata_format_fixtures/" + version + "/adata.h5ad");
}

nlohmann::json read_meta(const std::string& name) {
    std::ifstream stream(test::shared_reference(name + "/meta.json"));
    return nlohmann::json::parse(stream);
}

TEST(H5adRealData, AnndataArchive070LegacyCategoricalsAndLzf) {
    const auto path = fixture_archive("v0.7.0");
    FATHOM_REQUIRE_PATH(path);
    auto opened = io::open_h5ad(path.string(), {});
    const Dataset& meta = opened.meta;
    // anndata: 30 x 20, X csr_matrix float32 nnz=228, X.sum() = 285.0
    EXPECT_EQ(meta.shape, (MatrixShape{30, 20}));
    EXPECT_EQ(meta.nnz, 228);
    EXPECT_EQ(meta.stored_type, ValueType::Float32);
    EXPECT_DOUBLE_EQ(total_of(*opened.source), 285.0);
    EXPECT_EQ(meta.obs.index().front(), "cell0");
    EXPECT_EQ(meta.obs.index().back(), "cell29");
    EXPECT_EQ(meta.var.index().back(), "gene19");
    // obs_cat: 22 categories ['B', 'D', 'E', ...] ... 'z', codes [8, 10, 2, 21, 14] ... [16, 9]
    const auto& obs_cat = std::get<CategoricalColumn>(meta.obs.find("obs_cat")->data);
    ASSERT_EQ(obs_cat.categories.size(), 22u);
    EXPECT_EQ(obs_cat.categories[0], "B");
    EXPECT_EQ(obs_cat.categories[2], "E");
    EXPECT_EQ(obs_cat.categories.back(), "z");
    EXPECT_EQ(std::vector<std::int32_t>(obs_cat.codes.begin(), obs_cat.codes.begin() + 5),
              (std::vector<std::int32_t>{8, 10, 2, 21, 14}));
    EXPECT_EQ(obs_cat.codes.back(), 9);
    EXPECT_FALSE(obs_cat.ordered);
    // cat_ordered: ordered=True, 22 categories ['A', 'F', 'G', ...], codes [21, 4, 11, 6, 15]
    const auto& ordered = std::get<CategoricalColumn>(meta.obs.find("cat_ordered")->data);
    EXPECT_TRUE(ordered.ordered);
    EXPECT_EQ(ordered.categories.size(), 22u);
    EXPECT_EQ(ordered.codes[0], 21);
    // int64 [-29, -29, 34] ... [-8, 25]; uint8 [226, 69, 251]; float64[0] 0.7738259729172262
    EXPECT_EQ(std::get<IntColumn>(meta.obs.find("int64")->data).values[2], 34);
    EXPECT_EQ(std::get<IntColumn>(meta.obs.find("int64")->data).values.back(), 25);
    EXPECT_EQ(std::get<IntColumn>(meta.obs.find("uint8")->data).values[0], 226);
    EXPECT_DOUBLE_EQ(std::get<FloatColumn>(meta.obs.find("float64")->data).values[0], 0.7738259729172262);
    // var var_cat: 20 categories ['A', 'B', 'C', ...], codes [7, 8, 4, 5, 19]
    const auto& var_cat = std::get<CategoricalColumn>(meta.var.find("var_cat")->data);
    EXPECT_EQ(var_cat.categories.size(), 20u);
    EXPECT_EQ(var_cat.codes[4], 19);
    // obsm {'array': (30, 50), 'df': DataFrame, 'sparse': csr} -> only the dense one
    EXPECT_EQ(keys_of(meta.obsm), std::set<std::string>{"array"});
    EXPECT_EQ(meta.obsm.at("array").cols(), 50);
    EXPECT_EQ(keys_of(meta.varm), std::set<std::string>{"array"});
    // uns['O_recarray'][0] = ('IRRZ', 'Unqr', 'kSdc', 'IWzf', 'nHRR'), fields idCmW, ipisL, ...
    // (a structured array of text fields: read as UnsRecords, written back as one)
    const auto& recarray = std::get<UnsRecords>(meta.uns.find("O_recarray")->value);
    EXPECT_EQ(recarray.fields.size(), 5u);
    EXPECT_EQ(record_strings(recarray, "idCmW").front(), "IRRZ");
    EXPECT_EQ(record_strings(recarray, "QJgNd").back(), "Yqtf");
    // obsp: 'array' dense 30 x 30 (900 non-zeros), 'sparse' csr nnz=9 with sum 4.215272649802411
    ASSERT_EQ(meta.obsp.size(), 2u);
    EXPECT_EQ(meta.obsp.at("array").nnz(), 900);
    EXPECT_EQ(meta.obsp.at("sparse").nnz(), 9);
    double graph_total = 0;
    for (float value : meta.obsp.at("sparse").values) graph_total += value;
    EXPECT_NEAR(graph_total, 4.215272649802411, 1e-6);
    // row 0 non-zeros at genes [6, 8, 9, 15], all 1.0
    const CsrShard row0 = opened.source->read_rows(0, 1);
    EXPECT_EQ(std::vector<std::int32_t>(row0.gene_indices.begin(), row0.gene_indices.begin() + 4),
              (std::vector<std::int32_t>{6, 8, 9, 15}));

    io::ReadOptions raw;
    raw.matrix = "raw";
    auto raw_opened = io::open_h5ad(path.string(), raw);
    // raw: (30, 40) csr_matrix float32 nnz=480, raw var 'gene0' ... 'gene39'
    EXPECT_EQ(raw_opened.meta.shape, (MatrixShape{30, 40}));
    EXPECT_EQ(raw_opened.meta.nnz, 480);
    EXPECT_EQ(raw_opened.meta.var.index().back(), "gene39");
    io::ReadOptions layer;
    layer.matrix = "layers/sparse";  // csr float64 nnz=6, sum 3.466002232823232
    auto sparse_layer = io::open_h5ad(path.string(), layer);
    EXPECT_EQ(sparse_layer.meta.nnz, 6);
    EXPECT_NEAR(total_of(*sparse_layer.source), 3.466002232823232, 1e-6);
    layer.matrix = "layers/array";  // dense float64, 600 non-zeros, [0, :2] = [0.7223689307492914, 0.8371359049925561]
    auto dense_layer = io::open_h5ad(path.string(), layer);
    EXPECT_EQ(dense_layer.meta.nnz, 600);
    const CsrShard dense_row = dense_layer.source->read_rows(0, 1);
    EXPECT_FLOAT_EQ(dense_row.values[0], 0.7223689307492914f);
    EXPECT_FLOAT_EQ(dense_row.values[1], 0.8371359049925561f);
}

TEST(H5adRealData, AnndataArchive078NestedUns) {
    const auto path = fixture_archive("v0.7.8");
    FATHOM_REQUIRE_PATH(path);
    auto opened = io::open_h5ad(path.string(), {});
    const Dataset& meta = opened.meta;
    // anndata: X nnz=239, X.sum() = 302.0, raw nnz=453 raw.X.sum() = 568.0
    EXPECT_EQ(meta.nnz, 239);
    EXPECT_DOUBLE_EQ(total_of(*opened.source), 302.0);
    // obs_cat: 21 categories ['A', 'B', 'E', ...], codes [13, 0, 9, 1, 18] ... [10, 3]
    const auto& obs_cat = std::get<CategoricalColumn>(meta.obs.find("obs_cat")->data);
    EXPECT_EQ(obs_cat.categories.size(), 21u);
    EXPECT_EQ(obs_cat.categories[1], "B");
    EXPECT_EQ(obs_cat.codes[0], 13);
    EXPECT_EQ(obs_cat.codes.back(), 3);
    // uns nested: nested_further/array [0, 1, 2, 3, 4], scalar_float 3.0, scalar_int 42, scalar_str 'str'
    EXPECT_EQ(uns_value<std::vector<std::int64_t>>(meta.uns, {"nested", "nested_further", "array"}),
              (std::vector<std::int64_t>{0, 1, 2, 3, 4}));
    EXPECT_EQ(uns_value<double>(meta.uns, {"nested", "scalar_float"}), 3.0);
    EXPECT_EQ(uns_value<std::int64_t>(meta.uns, {"nested", "scalar_int"}), 42);
    EXPECT_EQ(uns_value<std::string>(meta.uns, {"nested", "scalar_str"}), "str");
    // obsm['array'][0, :3] = [0.045898810474264584, 0.4413973229180246, 0.1050390624280163]
    EXPECT_FLOAT_EQ(meta.obsm.at("array")(0, 1), 0.4413973229180246f);
    // varm['array'][19, 49] = 0.8299240295531449
    EXPECT_FLOAT_EQ(meta.varm.at("array")(19, 49), 0.8299240295531449f);
    io::ReadOptions raw;
    raw.matrix = "raw";
    auto raw_opened = io::open_h5ad(path.string(), raw);
    EXPECT_EQ(raw_opened.meta.nnz, 453);
    EXPECT_DOUBLE_EQ(total_of(*raw_opened.source), 568.0);
    // row 0 non-zeros at genes [0, 2, 7, 8, 10, ...]
    const CsrShard row0 = opened.source->read_rows(0, 1);
    EXPECT_EQ(std::vector<std::int32_t>(row0.gene_indices.begin(), row0.gene_indices.begin() + 5),
              (std::vector<std::int32_t>{0, 2, 7, 8, 10}));
}

TEST(H5adRealData, AnndataArchive0114WithoutX) {
    const auto path = fixture_archive("v0.11.4");
    FATHOM_REQUIRE_PATH(path);
    auto opened = io::open_h5ad(path.string(), {});
    // anndata: n_obs x n_vars = 10 x 20, X: None, obs_names '0' ... '9', var_names '0' ... '19'
    EXPECT_EQ(opened.meta.shape, (MatrixShape{10, 20}));
    EXPECT_EQ(opened.meta.matrix_layout, "none");
    EXPECT_EQ(opened.meta.nnz, 0);
    EXPECT_EQ(opened.meta.obs.index().front(), "0");
    EXPECT_EQ(opened.meta.obs.index().back(), "9");
    EXPECT_EQ(opened.meta.var.index().back(), "19");
    EXPECT_TRUE(opened.meta.obs.columns().empty());
    EXPECT_TRUE(opened.meta.obsm.empty());
    EXPECT_TRUE(opened.meta.uns.children.empty());
}

TEST(H5adRealData, Pbmc68kReducedPreV07Layout) {
    const auto path = test::shared_data("scanpy_pbmc68k_reduced/10x_pbmc68k_reduced.h5ad");
    FATHOM_REQUIRE_PATH(path);
    auto opened = io::open_h5ad(path.string(), {});
    const Dataset& meta = opened.meta;
    // anndata: 700 x 765, X dense float32 with 535433 non-zeros, X.sum() = -243.681057988666
    EXPECT_EQ(meta.shape, (MatrixShape{700, 765}));
    EXPECT_EQ(meta.matrix_layout, "dense");
    EXPECT_EQ(meta.nnz, 535433);
    EXPECT_NEAR(total_of(*opened.source), -243.681057988666, 0.05);
    // X[0, :5] = [-0.326, -0.191, -0.728, -0.301, 3.386]; X[699, 764] = -0.49
    const CsrShard first = opened.source->read_rows(0, 1);
    EXPECT_FLOAT_EQ(first.values[0], -0.32600000500679016f);
    EXPECT_FLOAT_EQ(first.values[4], 3.385999917984009f);
    const CsrShard last = opened.source->read_rows(699, 700);
    EXPECT_EQ(last.gene_indices.back(), 764);
    EXPECT_FLOAT_EQ(last.values.back(), -0.49000000953674316f);
    // obs_names 'AAAGCCTGGCTAAC-1' ... 'TTGAGGTGGAGAGC-8'; var_names 'HES4' ... 'MT-ND3'
    EXPECT_EQ(meta.obs.index().front(), "AAAGCCTGGCTAAC-1");
    EXPECT_EQ(meta.obs.index().back(), "TTGAGGTGGAGAGC-8");
    EXPECT_EQ(meta.var.index().front(), "HES4");
    EXPECT_EQ(meta.var.index().back(), "MT-ND3");
    // obs: bulk_labels, n_genes, percent_mito, n_counts, S_score, G2M_score, phase, louvain
    std::vector<std::string> obs_columns;
    for (const auto& column : meta.obs.columns()) obs_columns.push_back(column.name);
    EXPECT_EQ(obs_columns, (std::vector<std::string>{"bulk_labels", "n_genes", "percent_mito", "n_counts", "S_score",
                                                     "G2M_score", "phase", "louvain"}));
    // bulk_labels: 10 categories 'CD4+/CD25 T Reg' ... 'Dendritic', codes [5, 9, 8, 0, 9] ... [6, 9]
    const auto& bulk = std::get<CategoricalColumn>(meta.obs.find("bulk_labels")->data);
    ASSERT_EQ(bulk.categories.size(), 10u);
    EXPECT_EQ(bulk.categories.front(), "CD4+/CD25 T Reg");
    EXPECT_EQ(bulk.categories.back(), "Dendritic");
    EXPECT_EQ(std::vector<std::int32_t>(bulk.codes.begin(), bulk.codes.begin() + 5),
              (std::vector<std::int32_t>{5, 9, 8, 0, 9}));
    EXPECT_EQ(bulk.codes[698], 6);
    // louvain: 11 categories '0' ... '10', codes [1, 1, 3, 9, 2]; phase: G1, G2M, S, codes [0, 2, 0, 1, 0]
    const auto& louvain = std::get<CategoricalColumn>(meta.obs.find("louvain")->data);
    EXPECT_EQ(louvain.categories.size(), 11u);
    EXPECT_EQ(louvain.categories.back(), "10");
    EXPECT_EQ(louvain.codes[3], 9);
    const auto& phase = std::get<CategoricalColumn>(meta.obs.find("phase")->data);
    EXPECT_EQ(phase.categories, (std::vector<std::string>{"G1", "G2M", "S"}));
    EXPECT_EQ(phase.codes[1], 2);
    // n_genes int64 [1003, 1080, 1228]; n_counts float32 [2557.0, ...] ... 4685.0
    EXPECT_EQ(std::get<IntColumn>(meta.obs.find("n_genes")->data).values[2], 1228);
    EXPECT_EQ(std::get<FloatColumn>(meta.obs.find("n_counts")->data).values.back(), 4685.0);
    // var highly_variable: bool [True, True, False], 309 True
    const auto& highly_variable = std::get<BoolColumn>(meta.var.find("highly_variable")->data);
    EXPECT_EQ(std::count(highly_variable.values.begin(), highly_variable.values.end(), 1), 309);
    EXPECT_EQ(highly_variable.values[2], 0);
    // obsm X_pca (700, 50) [0, :2] = [-7.939618110656738, 5.024913787841797]; X_umap (700, 2)
    // [0] = [-1.9918625454649166, 8.57641706171008]; varm PCs (765, 50) [0, 0] = -0.06094132363796234
    EXPECT_EQ(keys_of(meta.obsm), (std::set<std::string>{"X_pca", "X_umap"}));
    EXPECT_EQ(meta.obsm.at("X_pca").rows(), 700);
    EXPECT_EQ(meta.obsm.at("X_pca").cols(), 50);
    EXPECT_FLOAT_EQ(meta.obsm.at("X_pca")(0, 1), 5.024913787841797f);
    EXPECT_FLOAT_EQ(meta.obsm.at("X_umap")(0, 0), -1.9918625454649166f);
    EXPECT_EQ(meta.varm.at("PCs").cols(), 50);
    EXPECT_FLOAT_EQ(meta.varm.at("PCs")(0, 0), -0.06094132363796234f);
    // uns keys (the *_categories entries were consumed by the categoricals):
    // bulk_labels_colors, louvain, louvain_colors, neighbors, pca, rank_genes_groups
    EXPECT_EQ(keys_of(meta.uns), (std::set<std::string>{"bulk_labels_colors", "louvain", "louvain_colors", "neighbors",
                                                        "pca", "rank_genes_groups"}));
    EXPECT_EQ(uns_value<std::vector<std::string>>(meta.uns, {"louvain_colors"}).back(), "#e07b91");
    EXPECT_FLOAT_EQ(static_cast<float>(uns_value<std::vector<double>>(meta.uns, {"pca", "variance"}).front()), 30.928047f);
    EXPECT_EQ(uns_value<std::string>(meta.uns, {"neighbors", "params", "method"}), "umap");
    EXPECT_EQ(uns_value<std::vector<std::int64_t>>(meta.uns, {"neighbors", "params", "n_neighbors"}),
              std::vector<std::int64_t>{10});
    EXPECT_EQ(uns_value<std::string>(meta.uns, {"rank_genes_groups", "params", "groupby"}), "bulk_labels");
    EXPECT_EQ(uns_value<bool>(meta.uns, {"rank_genes_groups", "params", "use_raw"}), true);
    // rank_genes_groups/names[0] = ('RGS19', 'ITM2A', ..., 'CST3') per group field
    // (field names hold '/': they are compound member names, not HDF5 link names)
    const auto& names = std::get<UnsRecords>(meta.uns.find("rank_genes_groups")->find("names")->value);
    EXPECT_EQ(record_strings(names, "CD4+/CD25 T Reg").front(), "RGS19");
    EXPECT_EQ(record_strings(names, "Dendritic").front(), "CST3");
    const auto& scores = std::get<UnsRecords>(meta.uns.find("rank_genes_groups")->find("scores")->value);
    EXPECT_TRUE(scores.single_precision);
    EXPECT_EQ(scores.fields, names.fields);

    // obsp: 'distances', 'connectivities' moved from uns['neighbors'] by anndata; in the
    // file uns/neighbors/distances/data has 6300 entries, connectivities/data 9992.
    ASSERT_EQ(meta.obsp.size(), 2u);
    EXPECT_EQ(meta.obsp.at("distances").nnz(), 6300);
    EXPECT_EQ(meta.obsp.at("connectivities").nnz(), 9992);
    EXPECT_EQ(meta.obsp.at("distances").num_genes, 700);
    io::ReadOptions raw;
    raw.matrix = "raw";
    auto raw_opened = io::open_h5ad(path.string(), raw);
    // raw: (700, 765) csr float32 nnz=174400, raw.X.sum() = 319044.23824107647, row 0 has 217 entries
    EXPECT_EQ(raw_opened.meta.matrix_layout, "csr");
    EXPECT_EQ(raw_opened.meta.nnz, 174400);
    EXPECT_NEAR(total_of(*raw_opened.source), 319044.23824107647, 0.5);
    EXPECT_EQ(raw_opened.source->read_rows(0, 1).nnz(), 217);
    EXPECT_EQ(raw_opened.meta.var.index().front(), "HES4");
    EXPECT_EQ(raw_opened.meta.var.index().back(), "MT-ND3");
}

TEST(H5adRealData, Neurons10kCsrWithDuplicateGeneNames) {
    const auto path = test::shared_data("scanpy_neurons10k_1000genes/neurons10k_1000genes.h5ad");
    FATHOM_REQUIRE_PATH(path);
    const auto reference = read_meta("scanpy_neurons10k_1000genes");
    auto opened = io::open_h5ad(path.string(), {});
    const Dataset& meta = opened.meta;
    EXPECT_EQ(meta.shape.num_cells, reference["n_obs_raw"].get<std::int64_t>());
    EXPECT_EQ(meta.shape.num_genes, reference["n_vars_raw"].get<std::int64_t>());
    EXPECT_EQ(meta.nnz, reference["nnz_raw"].get<std::int64_t>());
    EXPECT_EQ(meta.stored_type, ValueType::Float32);
    EXPECT_EQ(meta.matrix_layout, "csr");
    // obs_names 'AAACCTGAGATAGGAG-1' ... 'AAACGGGCACCGAAAG-2'; var_names 'Xkr4' ... 'Gm29630'
    EXPECT_EQ(meta.obs.index().front(), "AAACCTGAGATAGGAG-1");
    EXPECT_EQ(meta.obs.index().back(), "AAACGGGCACCGAAAG-2");
    EXPECT_EQ(meta.var.index().front(), "Xkr4");
    EXPECT_EQ(meta.var.index().back(), "Gm29630");
    // The only duplicate gene name: 'Rp1' at positions 3 and 4 (kept as stored).
    EXPECT_EQ(meta.var.index()[3], "Rp1");
    EXPECT_EQ(meta.var.index()[4], "Rp1");
    // gene_ids 'ENSMUSG00000051951' ... 'ENSMUSG00000101549'
    const auto& gene_ids = std::get<StringColumn>(meta.var.find("gene_ids")->data);
    EXPECT_EQ(gene_ids.values.front(), "ENSMUSG00000051951");
    EXPECT_EQ(gene_ids.values.back(), "ENSMUSG00000101549");
    // row 0 non-zeros at [13, 29, 37, 62, 130] = [1, 1, 1, 14, 1]; row 9999 has 72 entries
    const CsrShard row0 = opened.source->read_rows(0, 1);
    EXPECT_EQ(std::vector<std::int32_t>(row0.gene_indices.begin(), row0.gene_indices.begin() + 5),
              (std::vector<std::int32_t>{13, 29, 37, 62, 130}));
    EXPECT_EQ(row0.values[3], 14.0f);
    EXPECT_EQ(opened.source->read_rows(9999, 10000).nnz(), 72);
    // Sharded load: X.sum() = 1597698.0 whatever the split.
    const auto sharded = io::load_shards(*opened.source, split_rows_by_nnz(opened.source->row_offsets(), 3));
    EXPECT_EQ(sharded.nnz(), meta.nnz);
    double total = 0;
    for (const auto& shard : sharded.shards())
        for (float value : shard.values) total += value;
    EXPECT_DOUBLE_EQ(total, 1597698.0);
}

TEST(H5adRealData, Yeast844CellsInt32Counts) {
    const auto path = test::shared_data("yeast_844cells/yeast_844cells.h5ad");
    FATHOM_REQUIRE_PATH(path);
    const auto reference = read_meta("yeast_844cells");
    auto opened = io::open_h5ad(path.string(), {});
    const Dataset& meta = opened.meta;
    EXPECT_EQ(meta.shape.num_cells, reference["n_obs_raw"].get<std::int64_t>());
    EXPECT_EQ(meta.shape.num_genes, reference["n_vars_raw"].get<std::int64_t>());
    EXPECT_EQ(meta.nnz, reference["nnz_raw"].get<std::int64_t>());
    EXPECT_EQ(meta.stored_type, ValueType::Int32);  // meta.json dtype_raw "int32"
    // obs_names 'AAAAGATTATGA' ... 'TTGTTCCCCGGT'; var_names 'LSR1' ... 'tS(AGA)G'
    EXPECT_EQ(meta.obs.index().front(), "AAAAGATTATGA");
    EXPECT_EQ(meta.obs.index().back(), "TTGTTCCCCGGT");
    EXPECT_EQ(meta.var.index().front(), "LSR1");
    EXPECT_EQ(meta.var.index().back(), "tS(AGA)G");
    // sample: categories DMSO, Guanine, Guanine_MPA, MPA with 233, 258, 268, 85 cells
    const auto& sample = std::get<CategoricalColumn>(meta.obs.find("sample")->data);
    EXPECT_EQ(sample.categories, (std::vector<std::string>{"DMSO", "Guanine", "Guanine_MPA", "MPA"}));
    EXPECT_FALSE(sample.ordered);
    std::vector<std::int64_t> counts(4, 0);
    for (auto code : sample.codes) ++counts.at(static_cast<std::size_t>(code));
    EXPECT_EQ(counts, (std::vector<std::int64_t>{233, 258, 268, 85}));
    // row 0 non-zeros at [2, 3, 6, 12, 13] = [1, 1, 19, 4, 2]; X.sum() = 910561
    const CsrShard row0 = opened.source->read_rows(0, 1);
    EXPECT_EQ(std::vector<float>(row0.values.begin(), row0.values.begin() + 5), (std::vector<float>{1, 1, 19, 4, 2}));
    EXPECT_EQ(row0.gene_indices[2], 6);
    EXPECT_DOUBLE_EQ(total_of(*opened.source), 910561.0);
}

}  // namespace
}  // namespace fathom
