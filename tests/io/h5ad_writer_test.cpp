// io::write_h5ad / H5adStreamWriter: round trips through Debian's anndata 0.8
// (/usr/bin/python3, `anndata.read_h5ad`) and our own reader, and atomicity (nothing
// at the destination after any failure, an existing file untouched).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/types/JobContext.hpp"
#include "core/io/ShardedCsrSource.hpp"
#include "core/io/h5ad_writer.hpp"
#include "core/io/detail/hdf5.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/python.hpp"

namespace fathom::io {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::int64_t kCells = 7;
constexpr std::int64_t kGenes = 5;

// A dense reference matrix with empty rows and columns.
std::vector<std::vector<float>> dense_matrix() {
    return {{1.0f, 0.0f, 2.5f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 3.0f, 0.0f, 0.0f, 7.25f},
            {4.0f, 0.0f, 0.0f, 0.0f, 1.0f}, {0.0f, 0.0f, 0.0f, 0.0f, 0.0f}, {0.5f, 0.5f, 0.5f, 0.0f, 0.5f},
            {0.0f, 0.0f, 9.0f, 0.0f, 0.0f}};
}

// Rows of `dense` as shards of `rows_per_shard` rows.
ShardedCsr sharded(const std::vector<std::vector<float>>& dense, std::int64_t rows_per_shard) {
    std::vector<CsrShard> shards;
    const auto num_rows = static_cast<std::int64_t>(dense.size());
    const auto num_cols = static_cast<std::int64_t>(dense.front().size());
    for (std::int64_t begin = 0; begin < num_rows; begin += rows_per_shard) {
        CsrShard shard;
        shard.row_begin = begin;
        shard.num_genes = num_cols;
        for (std::int64_t row = begin; row < std::min(num_rows, begin + rows_per_shard); ++row) {
            for (std::int64_t col = 0; col < num_cols; ++col) {
                const float value = dense[static_cast<std::size_t>(row)][static_cast<std::size_t>(col)];
                if (value != 0.0f) {
                    shard.gene_indices.push_back(static_cast<std::int32_t>(col));
                    shard.values.push_back(value);
                }
            }
            shard.row_offsets.push_back(static_cast<std::int64_t>(shard.values.size()));
        }
        shards.push_back(std::move(shard));
    }
    return ShardedCsr(MatrixShape{num_rows, num_cols}, std::move(shards));
}

Dataset annotated_dataset() {
    Dataset meta;
    meta.obs = Table({"AAAC-1", "AAAG-1", "AACT-1", "AAGT-1", "ACGT-1", "AGGT-1", "CCGT-1"});
    meta.obs.set("cell_type", CategoricalColumn{{0, 1, 2, 0, -1, 1, 2}, {"B", "T", "NK"}, false});
    meta.obs.set("donor", StringColumn{{"d1", "d1", "d2", "d2", "d3", "d3", "d\xc3\xa9"}});  // UTF-8
    meta.obs.set("n_counts", IntColumn{{3, 0, 10, 5, 0, 2, 9}, {}});
    meta.obs.set("score", FloatColumn{{0.5, -1.25, std::numeric_limits<double>::quiet_NaN(), 3.0, 0.0, 1e-3, 2.0}});
    meta.obs.set("is_doublet", BoolColumn{{0, 1, 0, 0, 1, 0, 0}, {}});
    meta.obs.set("batch", IntColumn{{1, 0, 2, 2, 0, 1, 1}, {0, 1, 0, 0, 1, 0, 0}});
    meta.obs.set("passed", BoolColumn{{1, 0, 1, 1, 0, 0, 1}, {0, 0, 1, 0, 0, 0, 0}});
    // 200 categories: pandas stores the codes as int16.
    CategoricalColumn many;
    for (int index = 0; index < 200; ++index) many.categories.push_back(std::string("c").append(std::to_string(index)));
    many.codes = {0, 199, 150, 3, 4, 5, 128};
    meta.obs.set("many", many);

    meta.var = Table({"CD3E", "MS4A1", "NKG7", "GNLY", "MT-CO1"}, "gene_symbols");
    meta.var.set("gene_ids", StringColumn{{"ENSG1", "ENSG2", "ENSG3", "ENSG4", "ENSG5"}});
    meta.var.set("highly_variable", BoolColumn{{1, 0, 1, 0, 0}, {}});
    meta.var.set("means", FloatColumn{{0.1, 0.2, 0.3, 0.4, 0.5}});
    meta.var.set("chrom", CategoricalColumn{{1, 0, 1, 2, 2}, {"chr1", "chr2", "chrM"}, true});

    DenseMatrix<float> pca(kCells, 3), umap(kCells, 2), loadings(kGenes, 3);
    for (std::int64_t row = 0; row < kCells; ++row) {
        for (std::int64_t col = 0; col < 3; ++col) pca(row, col) = 0.5f * static_cast<float>(row) - static_cast<float>(col);
        for (std::int64_t col = 0; col < 2; ++col) umap(row, col) = static_cast<float>(row * 2 + col) / 4.0f;
    }
    for (std::int64_t row = 0; row < kGenes; ++row)
        for (std::int64_t col = 0; col < 3; ++col) loadings(row, col) = static_cast<float>(row) - 0.25f * static_cast<float>(col);
    meta.obsm["X_pca"] = pca;
    meta.obsm["X_umap"] = umap;
    meta.varm["PCs"] = loadings;

    // A symmetric 7 x 7 graph with an isolated cell (row 4).
    CsrShard graph;
    graph.num_genes = kCells;
    graph.row_offsets = {0, 1, 3, 4, 5, 5, 6, 7};
    graph.gene_indices = {1, 0, 2, 1, 6, 6, 3};
    graph.values = {0.5f, 0.5f, 1.0f, 1.0f, 0.25f, 0.75f, 0.25f};
    meta.obsp["connectivities"] = graph;

    meta.uns["neighbors"]["params"]["n_neighbors"] = UnsNode::leaf(std::int64_t{15});
    meta.uns["neighbors"]["params"]["method"] = UnsNode::leaf(std::string("umap"));
    meta.uns["pca"]["variance_ratio"] = UnsNode::leaf(std::vector<double>{0.5, 0.3, 0.2});
    meta.uns["cell_type_colors"] = UnsNode::leaf(std::vector<std::string>{"#1f77b4", "#ff7f0e", "#279e68"});
    meta.uns["flag"] = UnsNode::leaf(true);
    meta.uns["scale"] = UnsNode::leaf(2.5);
    meta.uns["counts"] = UnsNode::leaf(std::vector<std::int64_t>{1, 2, 3});
    meta.uns["matrix"] = UnsNode::leaf(DenseMatrix<double>(2, 3, std::vector<double>{1, 2, 3, 4, 5, 6}));
    return meta;
}

// Reads h5ad files with anndata and prints, for each, everything as JSON (one list on
// the line after "FATHOM-JSON:").
const char* kReadScript = R"PY(
import sys, json, math, collections.abc
import numpy as np, pandas as pd, anndata as ad, h5py
def plain(v):
    if isinstance(v, collections.abc.Mapping): return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, np.ndarray): return [plain(x) for x in v.tolist()] if v.ndim else plain(v.item())
    if isinstance(v, (list, tuple)): return [plain(x) for x in v]
    if isinstance(v, np.generic): return plain(v.item())
    if isinstance(v, float) and math.isnan(v): return None
    return v
def column(s):
    if isinstance(s.dtype, pd.CategoricalDtype):
        return {"kind": "categorical", "categories": [str(c) for c in s.cat.categories],
                "codes": s.cat.codes.tolist(), "ordered": bool(s.cat.ordered)}
    return {"kind": str(s.dtype), "values": [None if pd.isna(v) else plain(v) for v in s.tolist()]}
def describe(path):
    a = ad.read_h5ad(path)
    out = {"shape": list(a.shape), "obs_names": list(a.obs_names), "var_names": list(a.var_names),
           "var_index_name": a.var.index.name, "obs_columns": list(a.obs.columns), "var_columns": list(a.var.columns),
           "obs": {c: column(a.obs[c]) for c in a.obs.columns}, "var": {c: column(a.var[c]) for c in a.var.columns},
           "obsm": {k: plain(np.asarray(v)) for k, v in a.obsm.items()},
           "obsm_dtypes": {k: str(np.asarray(v).dtype) for k, v in a.obsm.items()},
           "varm": {k: plain(np.asarray(v)) for k, v in a.varm.items()}, "uns": plain(a.uns),
           "layers": list(a.layers.keys()), "obsp": list(a.obsp.keys()), "X_type": None,
           "obsp_dense": {k: v.toarray().tolist() for k, v in a.obsp.items()},
           "obsp_even_columns_sum": {k: float(v[:, np.arange(a.n_obs) % 2 == 0].sum()) for k, v in a.obsp.items()}}
    if a.X is not None:
        X = a.X
        out["X_type"] = type(X).__name__
        out["X_dtype"] = str(X.dtype)
        out["index_dtypes"] = [str(X.indices.dtype), str(X.indptr.dtype)]
        out["X"] = X.toarray().tolist()
        # Column slicing exercises scipy's index-dtype checks.
        out["even_columns_sum"] = float(X[:, np.arange(a.n_vars) % 2 == 0].sum())
    with h5py.File(path, "r") as f:
        out["root_attrs"] = {k: str(v) for k, v in f.attrs.items()}
        out["codes_dtypes"] = {c: str(f["obs"][c]["codes"].dtype) for c in f["obs"] if "codes" in f["obs"][c]}
    return out
print("\nFATHOM-JSON:" + json.dumps([describe(p) for p in sys.argv[1:]]))
)PY";

std::vector<json> read_with_anndata(const std::vector<fs::path>& paths) {
    std::vector<std::string> args;
    for (const auto& path : paths) args.push_back(path.string());
    const auto result = test::run_python(kReadScript, args);
    const std::string marker = "\nFATHOM-JSON:";
    const auto position = result.output.rfind(marker);
    if (result.exit_code != 0 || position == std::string::npos) {
        ADD_FAILURE() << "anndata could not read the files: " << result.output;
        return std::vector<json>(paths.size(), json::object());
    }
    return json::parse(result.output.substr(position + marker.size())).get<std::vector<json>>();
}

std::vector<fs::path> folder_entries(const fs::path& folder) {
    std::vector<fs::path> entries;
    for (const auto& entry : fs::directory_iterator(folder)) entries.push_back(entry.path());
    return entries;
}

struct RoundTripCase {
    int gzip_level;
    std::int64_t rows_per_block;
    std::int64_t rows_per_shard;
};

// Uncompressed and gzip, one block or many, blocks that do and do not line up with
// the source's shards: anndata 0.8 reads back every element exactly.
TEST(H5adWriterRoundTrip, AnndataReadsBackEverything) {
    FATHOM_REQUIRE_PYTHON("anndata", "h5py", "scipy");
    const std::vector<RoundTripCase> cases{{0, 65536, 7}, {0, 3, 2}, {6, 2, 3}, {1, 1, 1}};
    const auto folder = test::temp_dir("h5ad-writer");
    const Dataset meta = annotated_dataset();
    const auto dense = dense_matrix();
    std::vector<fs::path> paths;
    for (const auto& layout : cases) {
        const auto path = folder / ("gzip" + std::to_string(layout.gzip_level) + "_block" +
                                    std::to_string(layout.rows_per_block) + "_shard" +
                                    std::to_string(layout.rows_per_shard) + ".h5ad");
        const ShardedCsr matrix = sharded(dense, layout.rows_per_shard);
        ShardedCsrSource source(matrix);
        H5adWriteOptions options;
        options.gzip_level = layout.gzip_level;
        options.rows_per_block = layout.rows_per_block;
        write_h5ad(path.string(), meta, &source, options);
        paths.push_back(path);
    }
    auto entries = folder_entries(folder);
    std::sort(entries.begin(), entries.end());
    auto expected_entries = paths;
    std::sort(expected_entries.begin(), expected_entries.end());
    ASSERT_EQ(entries, expected_entries) << "only the outputs, no temporary files";

    const std::vector<json> all = read_with_anndata(paths);
    for (std::size_t index = 0; index < paths.size(); ++index) {
        SCOPED_TRACE(paths[index].filename().string());
        const json& got = all[index];
        ASSERT_FALSE(got.empty());
        EXPECT_EQ(got["root_attrs"]["encoding-type"], "anndata");
        EXPECT_EQ(got["root_attrs"]["encoding-version"], "0.1.0");
        EXPECT_EQ(got["shape"], json::array({kCells, kGenes}));
        EXPECT_EQ(got["X_type"], "csr_matrix");
        EXPECT_EQ(got["X_dtype"], "float32");
        EXPECT_EQ(got["index_dtypes"], json::array({"int32", "int32"}));
        for (std::int64_t row = 0; row < kCells; ++row)
            for (std::int64_t col = 0; col < kGenes; ++col)
                EXPECT_EQ(got["X"][row][col].get<float>(), dense[static_cast<std::size_t>(row)][static_cast<std::size_t>(col)])
                    << "X[" << row << ", " << col << "]";
        double even_sum = 0.0;
        for (const auto& row : dense)
            for (std::size_t col = 0; col < row.size(); col += 2) even_sum += row[col];
        EXPECT_DOUBLE_EQ(got["even_columns_sum"].get<double>(), even_sum);

        EXPECT_EQ(got["obs_names"].get<std::vector<std::string>>(), meta.obs.index());
        EXPECT_EQ(got["var_names"].get<std::vector<std::string>>(), meta.var.index());
        EXPECT_EQ(got["var_index_name"], "gene_symbols");
        EXPECT_EQ(got["obs_columns"], json::array({"cell_type", "donor", "n_counts", "score", "is_doublet", "batch",
                                                   "passed", "many"}));
        EXPECT_EQ(got["var_columns"], json::array({"gene_ids", "highly_variable", "means", "chrom"}));

        const json& obs = got["obs"];
        EXPECT_EQ(obs["cell_type"]["kind"], "categorical");
        EXPECT_EQ(obs["cell_type"]["categories"], json::array({"B", "T", "NK"}));
        EXPECT_EQ(obs["cell_type"]["codes"], json::array({0, 1, 2, 0, -1, 1, 2}));
        EXPECT_EQ(obs["cell_type"]["ordered"], false);
        EXPECT_EQ(obs["donor"]["values"], json::array({"d1", "d1", "d2", "d2", "d3", "d3", "d\xc3\xa9"}));
        EXPECT_EQ(obs["n_counts"]["kind"], "int64");
        EXPECT_EQ(obs["n_counts"]["values"], json::array({3, 0, 10, 5, 0, 2, 9}));
        EXPECT_EQ(obs["score"]["kind"], "float64");
        EXPECT_EQ(obs["score"]["values"], json::parse("[0.5, -1.25, null, 3.0, 0.0, 0.001, 2.0]"));
        EXPECT_EQ(obs["is_doublet"]["kind"], "bool");
        EXPECT_EQ(obs["is_doublet"]["values"], json::array({false, true, false, false, true, false, false}));
        EXPECT_EQ(obs["batch"]["kind"], "Int64");
        EXPECT_EQ(obs["batch"]["values"], json::parse("[1, null, 2, 2, null, 1, 1]"));
        EXPECT_EQ(obs["passed"]["kind"], "boolean");
        EXPECT_EQ(obs["passed"]["values"], json::parse("[true, false, null, true, false, false, true]"));
        EXPECT_EQ(obs["many"]["codes"], json::array({0, 199, 150, 3, 4, 5, 128}));
        EXPECT_EQ(obs["many"]["categories"].size(), 200u);
        EXPECT_EQ(got["codes_dtypes"]["cell_type"], "int8");
        EXPECT_EQ(got["codes_dtypes"]["many"], "int16");

        const json& var = got["var"];
        EXPECT_EQ(var["gene_ids"]["values"], json::array({"ENSG1", "ENSG2", "ENSG3", "ENSG4", "ENSG5"}));
        EXPECT_EQ(var["highly_variable"]["values"], json::array({true, false, true, false, false}));
        EXPECT_EQ(var["means"]["values"], json::array({0.1, 0.2, 0.3, 0.4, 0.5}));
        EXPECT_EQ(var["chrom"]["categories"], json::array({"chr1", "chr2", "chrM"}));
        EXPECT_EQ(var["chrom"]["codes"], json::array({1, 0, 1, 2, 2}));
        EXPECT_EQ(var["chrom"]["ordered"], true);

        for (const auto& [key, matrix_value] : meta.obsm) {
            ASSERT_TRUE(got["obsm"].contains(key)) << key;
            EXPECT_EQ(got["obsm_dtypes"][key], "float32");
            ASSERT_EQ(got["obsm"][key].size(), static_cast<std::size_t>(matrix_value.rows()));
            for (std::int64_t row = 0; row < matrix_value.rows(); ++row)
                for (std::int64_t col = 0; col < matrix_value.cols(); ++col)
                    EXPECT_EQ(got["obsm"][key][row][col].get<float>(), matrix_value(row, col)) << key;
        }
        const auto& loadings = meta.varm.at("PCs");
        for (std::int64_t row = 0; row < kGenes; ++row)
            for (std::int64_t col = 0; col < 3; ++col) EXPECT_EQ(got["varm"]["PCs"][row][col].get<float>(), loadings(row, col));

        const json& uns = got["uns"];
        EXPECT_EQ(uns["neighbors"]["params"]["n_neighbors"], 15);
        EXPECT_EQ(uns["neighbors"]["params"]["method"], "umap");
        EXPECT_EQ(uns["pca"]["variance_ratio"], json::array({0.5, 0.3, 0.2}));
        EXPECT_EQ(uns["cell_type_colors"], json::array({"#1f77b4", "#ff7f0e", "#279e68"}));
        EXPECT_EQ(uns["flag"], true);
        EXPECT_EQ(uns["scale"], 2.5);
        EXPECT_EQ(uns["counts"], json::array({1, 2, 3}));
        EXPECT_EQ(uns["matrix"], json::parse("[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]"));
        EXPECT_EQ(got["layers"], json::array());
        EXPECT_EQ(got["obsp"], json::array({"connectivities"}));
        const auto& graph = meta.obsp.at("connectivities");
        std::vector<std::vector<float>> graph_dense(kCells, std::vector<float>(kCells, 0.0f));
        double graph_even_sum = 0.0;
        for (std::int64_t row = 0; row < kCells; ++row)
            for (auto entry = graph.row_offsets[static_cast<std::size_t>(row)];
                 entry < graph.row_offsets[static_cast<std::size_t>(row) + 1]; ++entry) {
                const auto col = graph.gene_indices[static_cast<std::size_t>(entry)];
                graph_dense[static_cast<std::size_t>(row)][static_cast<std::size_t>(col)] =
                    graph.values[static_cast<std::size_t>(entry)];
                if (col % 2 == 0) graph_even_sum += graph.values[static_cast<std::size_t>(entry)];
            }
        EXPECT_EQ(got["obsp_dense"]["connectivities"].get<std::vector<std::vector<float>>>(), graph_dense);
        EXPECT_DOUBLE_EQ(got["obsp_even_columns_sum"]["connectivities"].get<double>(), graph_even_sum);
    }
}

// Our own reader (core/io) reads the writer's output back: shape, names, values.
TEST(H5adWriter, OwnReaderReadsItBack) {
    const auto folder = test::temp_dir("h5ad-writer-own");
    const auto path = folder / "out.h5ad";
    const Dataset meta = annotated_dataset();
    const auto dense = dense_matrix();
    const ShardedCsr matrix = sharded(dense, 3);
    ShardedCsrSource source(matrix);
    write_h5ad(path.string(), meta, &source, {});
    OpenedDataset opened = open_dataset(path.string());
    EXPECT_EQ(opened.meta.format, DatasetFormat::H5ad);
    EXPECT_EQ(opened.meta.shape, (MatrixShape{kCells, kGenes}));
    EXPECT_EQ(opened.meta.obs.index(), meta.obs.index());
    EXPECT_EQ(opened.meta.var.index(), meta.var.index());
    const CsrShard rows = opened.source->read_rows(0, kCells);
    for (std::int64_t row = 0; row < kCells; ++row) {
        std::vector<float> dense_row(kGenes, 0.0f);
        for (auto entry = rows.row_offsets[static_cast<std::size_t>(row)];
             entry < rows.row_offsets[static_cast<std::size_t>(row) + 1]; ++entry)
            dense_row[static_cast<std::size_t>(rows.gene_indices[static_cast<std::size_t>(entry)])] =
                rows.values[static_cast<std::size_t>(entry)];
        EXPECT_EQ(dense_row, dense[static_cast<std::size_t>(row)]) << "row " << row;
    }
    const Column* cell_type = opened.meta.obs.find("cell_type");
    ASSERT_NE(cell_type, nullptr);
    const auto* categorical = std::get_if<CategoricalColumn>(&cell_type->data);
    ASSERT_NE(categorical, nullptr);
    EXPECT_EQ(categorical->codes, (std::vector<std::int32_t>{0, 1, 2, 0, -1, 1, 2}));
    ASSERT_TRUE(opened.meta.obsm.count("X_pca"));
    EXPECT_EQ(opened.meta.obsm.at("X_pca"), meta.obsm.at("X_pca"));
}

TEST(H5adWriter, LayoutMatchesAnndata) {
    // Checked with our HDF5 layer: the encodings anndata 0.8 itself writes.
    const auto folder = test::temp_dir("h5ad-writer-layout");
    const auto path = folder / "out.h5ad";
    const Dataset meta = annotated_dataset();
    const ShardedCsr matrix = sharded(dense_matrix(), 7);
    ShardedCsrSource source(matrix);
    write_h5ad(path.string(), meta, &source, {});
    const auto file = h5::File::open_read(path.string());
    EXPECT_EQ(file.attribute_string("/X", "encoding-type"), "csr_matrix");
    EXPECT_EQ(file.attribute_string("/X", "encoding-version"), "0.1.0");
    EXPECT_EQ(file.attribute_numbers<std::int64_t>("/X", "shape"), (std::vector<std::int64_t>{kCells, kGenes}));
    EXPECT_EQ(file.dataset_info("/X/data").type_class, h5::TypeClass::Float);
    EXPECT_EQ(file.dataset_info("/X/data").type_size, 4u);
    EXPECT_EQ(file.read_all<std::int64_t>("/X/indptr"), (std::vector<std::int64_t>{0, 2, 2, 4, 6, 6, 10, 11}));
    EXPECT_EQ(file.attribute_string("/obs", "encoding-type"), "dataframe");
    EXPECT_EQ(file.attribute_string("/obs", "encoding-version"), "0.2.0");
    EXPECT_EQ(file.attribute_string("/obs", "_index"), "_index");
    EXPECT_EQ(file.attribute_string("/var", "_index"), "gene_symbols");
    EXPECT_EQ(file.attribute_string("/obs/_index", "encoding-type"), "string-array");
    EXPECT_EQ(file.attribute_string("/obs/cell_type", "encoding-type"), "categorical");
    EXPECT_EQ(file.attribute_bool("/obs/cell_type", "ordered"), false);
    EXPECT_EQ(file.attribute_string("/obs/batch", "encoding-type"), "nullable-integer");
    EXPECT_EQ(file.attribute_string("/obs/passed", "encoding-type"), "nullable-boolean");
    EXPECT_EQ(file.attribute_string("/uns/scale", "encoding-type"), "numeric-scalar");
    EXPECT_EQ(file.attribute_string("/uns/neighbors/params/method", "encoding-type"), "string");
    EXPECT_TRUE(file.dataset_info("/uns/scale").dims.empty()) << "scalars are rank-0";
    for (const char* group : {"/layers", "/obsp", "/varp", "/obsm", "/varm", "/uns"}) {
        EXPECT_TRUE(file.is_group(group)) << group;
        EXPECT_EQ(file.attribute_string(group, "encoding-type"), "dict") << group;
    }
}

TEST(H5adWriter, EmptyTablesGetAnndataDefaultNamesAndNoMatrixIsAllowed) {
    FATHOM_REQUIRE_PYTHON("anndata", "h5py", "scipy");
    const auto folder = test::temp_dir("h5ad-writer-empty");
    const ShardedCsr matrix = sharded(dense_matrix(), 4);
    ShardedCsrSource source(matrix);
    Dataset bare;  // no names at all: anndata's AnnData(X) gives "0", "1", ...
    write_h5ad((folder / "bare.h5ad").string(), bare, &source, {});
    H5adWriteOptions no_matrix;
    no_matrix.write_matrix = false;
    write_h5ad((folder / "meta.h5ad").string(), annotated_dataset(), &source, no_matrix);
    const std::vector<json> both = read_with_anndata({folder / "bare.h5ad", folder / "meta.h5ad"});
    const json& got = both[0];
    EXPECT_EQ(got["obs_names"], json::array({"0", "1", "2", "3", "4", "5", "6"}));
    EXPECT_EQ(got["var_names"], json::array({"0", "1", "2", "3", "4"}));
    EXPECT_EQ(got["shape"], json::array({kCells, kGenes}));

    const json& meta_only = both[1];
    EXPECT_EQ(meta_only["X_type"], nullptr);
    EXPECT_EQ(meta_only["shape"], json::array({kCells, kGenes}));
    EXPECT_EQ(meta_only["obs"]["cell_type"]["codes"], json::array({0, 1, 2, 0, -1, 1, 2}));
}

// A source that fails after serving `good_rows` rows.
class FailingSource final : public RowSource {
public:
    FailingSource(const ShardedCsr& matrix, std::int64_t good_rows) : m_inner(matrix), m_good_rows(good_rows) {}
    MatrixShape shape() const override { return m_inner.shape(); }
    std::int64_t nnz() const override { return m_inner.nnz(); }
    CsrShard read_rows(std::int64_t begin, std::int64_t end) override {
        if (end > m_good_rows) throw std::runtime_error("disk went away");
        return m_inner.read_rows(begin, end);
    }
    std::vector<std::int64_t> row_offsets() override { return m_inner.row_offsets(); }
    std::unique_ptr<RowSource> clone() const override { return nullptr; }

private:
    ShardedCsrSource m_inner;
    std::int64_t m_good_rows;
};

TEST(H5adWriterAtomicity, FailureMidwayLeavesNothingAndKeepsTheOldFile) {
    const auto folder = test::temp_dir("h5ad-writer-atomic");
    const auto path = folder / "out.h5ad";
    const ShardedCsr matrix = sharded(dense_matrix(), 7);
    H5adWriteOptions options;
    options.rows_per_block = 2;

    FailingSource failing(matrix, 4);
    try {
        write_h5ad(path.string(), annotated_dataset(), &failing, options);
        FAIL() << "expected WriteError";
    } catch (const WriteError& error) {
        EXPECT_EQ(error.file(), path.string());
        EXPECT_NE(std::string(error.what()).find("disk went away"), std::string::npos) << error.what();
    }
    EXPECT_TRUE(folder_entries(folder).empty()) << "neither the output nor a temporary file";

    {
        std::ofstream previous(path);
        previous << "previous content";
    }
    FailingSource failing_again(matrix, 4);
    EXPECT_THROW(write_h5ad(path.string(), annotated_dataset(), &failing_again, options), WriteError);
    EXPECT_EQ(folder_entries(folder), std::vector<fs::path>{path});
    std::ifstream kept(path);
    std::string content((std::istreambuf_iterator<char>(kept)), std::istreambuf_iterator<char>());
    EXPECT_EQ(content, "previous content");

    // A successful write then replaces it.
    ShardedCsrSource good(matrix);
    write_h5ad(path.string(), annotated_dataset(), &good, options);
    EXPECT_EQ(folder_entries(folder), std::vector<fs::path>{path});
    EXPECT_NO_THROW(h5::File::open_read(path.string()));
}

TEST(H5adWriterAtomicity, CancelledAndInputErrorsPropagateAndCleanUp) {
    const auto folder = test::temp_dir("h5ad-writer-cancel");
    const auto path = folder / "out.h5ad";
    const ShardedCsr matrix = sharded(dense_matrix(), 7);
    class Throwing final : public RowSource {
    public:
        Throwing(const ShardedCsr& matrix, int kind) : m_inner(matrix), m_kind(kind) {}
        MatrixShape shape() const override { return m_inner.shape(); }
        std::int64_t nnz() const override { return m_inner.nnz(); }
        CsrShard read_rows(std::int64_t begin, std::int64_t end) override {
            if (begin >= 3) {
                if (m_kind == 0) throw Cancelled();
                throw FormatError("in.h5ad", "/X/data", "truncated");
            }
            return m_inner.read_rows(begin, end);
        }
        std::vector<std::int64_t> row_offsets() override { return m_inner.row_offsets(); }
        std::unique_ptr<RowSource> clone() const override { return nullptr; }

    private:
        ShardedCsrSource m_inner;
        int m_kind;
    };
    H5adWriteOptions options;
    options.rows_per_block = 3;
    Throwing cancel(matrix, 0), malformed(matrix, 1);
    EXPECT_THROW(write_h5ad(path.string(), annotated_dataset(), &cancel, options), Cancelled);
    EXPECT_TRUE(folder_entries(folder).empty());
    try {
        write_h5ad(path.string(), annotated_dataset(), &malformed, options);
        FAIL() << "expected FormatError";
    } catch (const FormatError& error) {
        EXPECT_EQ(error.file(), "in.h5ad");
    }
    EXPECT_TRUE(folder_entries(folder).empty());
}

TEST(H5adWriterAtomicity, ACancelledJobContextStopsTheWriteAndKeepsTheOldFile) {
    const auto folder = test::temp_dir("h5ad-writer-ctx");
    const auto path = folder / "out.h5ad";
    { std::ofstream(path) << "previous content"; }
    const ShardedCsr matrix = sharded(dense_matrix(), 7);
    H5adWriteOptions options;
    options.rows_per_block = 2;
    // Cancelled while the blocks are written (as fathom-cli convert's Ctrl-C does): the
    // source cancels the job when its second block is read.
    class CancellingSource final : public RowSource {
    public:
        CancellingSource(const ShardedCsr& matrix, JobContext& ctx) : m_inner(matrix), m_ctx(ctx) {}
        MatrixShape shape() const override { return m_inner.shape(); }
        std::int64_t nnz() const override { return m_inner.nnz(); }
        CsrShard read_rows(std::int64_t begin, std::int64_t end) override {
            if (begin > 0) m_ctx.cancel();
            return m_inner.read_rows(begin, end);
        }
        std::vector<std::int64_t> row_offsets() override { return m_inner.row_offsets(); }
        std::unique_ptr<RowSource> clone() const override { return nullptr; }

    private:
        ShardedCsrSource m_inner;
        JobContext& m_ctx;
    };
    JobContext ctx;
    CancellingSource source(matrix, ctx);
    EXPECT_THROW(write_h5ad(path.string(), annotated_dataset(), &source, options, &ctx), Cancelled);
    EXPECT_EQ(folder_entries(folder), std::vector<fs::path>{path});
    std::ifstream kept(path);
    EXPECT_EQ(std::string((std::istreambuf_iterator<char>(kept)), std::istreambuf_iterator<char>()), "previous content");
    // Progress reaches the context block by block.
    JobContext progress;
    ShardedCsrSource good(matrix);
    write_h5ad(path.string(), annotated_dataset(), &good, options, &progress);
    EXPECT_DOUBLE_EQ(progress.progress().fraction, 1.0);
}

TEST(H5adWriterAtomicity, UnwritableDestinationNamesThePath) {
    const auto folder = test::temp_dir("h5ad-writer-dest");
    const ShardedCsr matrix = sharded(dense_matrix(), 7);
    ShardedCsrSource source(matrix);
    const auto missing_folder = folder / "no-such-folder" / "out.h5ad";
    try {
        write_h5ad(missing_folder.string(), annotated_dataset(), &source, {});
        FAIL() << "expected WriteError";
    } catch (const WriteError& error) {
        EXPECT_EQ(error.file(), missing_folder.string());
        EXPECT_NE(std::string(error.what()).find("does not exist"), std::string::npos) << error.what();
    }
    // A regular file where the folder should be.
    { std::ofstream(folder / "plain-file") << "x"; }
    EXPECT_THROW(write_h5ad((folder / "plain-file" / "out.h5ad").string(), annotated_dataset(), &source, {}),
                 WriteError);
    // The destination is a folder.
    fs::create_directories(folder / "a-folder.h5ad");
    EXPECT_THROW(write_h5ad((folder / "a-folder.h5ad").string(), annotated_dataset(), &source, {}), WriteError);
    EXPECT_EQ(folder_entries(folder).size(), 2u) << "only the two fixtures";
}

TEST(H5adWriterValidation, MismatchedMetaIsRejectedBeforeAnythingIsCreated) {
    const auto folder = test::temp_dir("h5ad-writer-validate");
    const auto path = (folder / "out.h5ad").string();
    const ShardedCsr matrix = sharded(dense_matrix(), 7);
    ShardedCsrSource source(matrix);

    Dataset wrong_obs = annotated_dataset();
    wrong_obs.obs = Table({"a", "b"});
    EXPECT_THROW(write_h5ad(path, wrong_obs, &source, {}), std::invalid_argument);
    Dataset wrong_obsm = annotated_dataset();
    wrong_obsm.obsm["X_pca"] = DenseMatrix<float>(3, 2);
    try {
        write_h5ad(path, wrong_obsm, &source, {});
        FAIL() << "expected invalid_argument";
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find("obsm/X_pca"), std::string::npos) << error.what();
    }
    Dataset bad_codes = annotated_dataset();
    bad_codes.obs.set("cell_type", CategoricalColumn{{0, 1, 5, 0, 0, 0, 0}, {"B", "T"}, false});
    EXPECT_THROW(write_h5ad(path, bad_codes, &source, {}), std::invalid_argument);
    Dataset wrong_graph = annotated_dataset();
    wrong_graph.obsp["distances"] = CsrShard{0, 3, {0, 0, 0, 0}, {}, {}};
    try {
        write_h5ad(path, wrong_graph, &source, {});
        FAIL() << "expected invalid_argument";
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find("obsp/distances"), std::string::npos) << error.what();
    }
    Dataset slash = annotated_dataset();
    slash.uns["a/b"] = UnsNode::leaf(1.0);
    EXPECT_THROW(write_h5ad(path, slash, &source, {}), std::invalid_argument);
    H5adWriteOptions bad_gzip;
    bad_gzip.gzip_level = 12;
    try {
        write_h5ad(path, annotated_dataset(), &source, bad_gzip);
        FAIL() << "expected invalid_argument";
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find("H5adWriteOptions::gzip_level"), std::string::npos);
    }
    EXPECT_TRUE(folder_entries(folder).empty());
}

TEST(H5adStreamWriter, IncompleteOrAbandonedWritesLeaveNothing) {
    const auto folder = test::temp_dir("h5ad-stream");
    const auto path = (folder / "out.h5ad").string();
    const ShardedCsr matrix = sharded(dense_matrix(), 3);
    {
        H5adStreamWriter writer(path, matrix.shape());
        writer.append_rows(matrix.shard(0));
        EXPECT_EQ(writer.rows_written(), 3);
        EXPECT_EQ(folder_entries(folder).size(), 1u) << "the temporary file while writing";
        EXPECT_THROW(writer.commit(annotated_dataset()), std::invalid_argument) << "4 rows missing";
    }
    EXPECT_TRUE(folder_entries(folder).empty());
    {
        H5adStreamWriter writer(path, matrix.shape());
        writer.append_rows(matrix.shard(0));
        EXPECT_THROW(writer.append_rows(matrix.shard(2)), WriteError) << "rows out of order";
        EXPECT_THROW(writer.append_rows(matrix.shard(1)), WriteError) << "unusable after a failure";
    }
    EXPECT_TRUE(folder_entries(folder).empty());
    {
        H5adStreamWriter writer(path, matrix.shape());
        writer.append_rows(matrix.shard(0));
    }  // abandoned without commit
    EXPECT_TRUE(folder_entries(folder).empty());
    {
        H5adStreamWriter writer(path, matrix.shape());
        for (const auto& shard : matrix.shards()) writer.append_rows(shard);
        EXPECT_EQ(writer.nnz_written(), matrix.nnz());
        writer.commit(annotated_dataset());
    }
    EXPECT_EQ(folder_entries(folder), std::vector<fs::path>{fs::path(path)});
}

TEST(H5adStreamWriter, RejectsBadBlocks) {
    const auto folder = test::temp_dir("h5ad-stream-bad");
    const auto path = (folder / "out.h5ad").string();
    CsrShard unsorted;
    unsorted.num_genes = 5;
    unsorted.gene_indices = {3, 1};
    unsorted.values = {1.0f, 2.0f};
    unsorted.row_offsets = {0, 2};
    H5adStreamWriter writer(path, MatrixShape{1, 5});
    try {
        writer.append_rows(unsorted);
        FAIL() << "expected WriteError";
    } catch (const WriteError& error) {
        EXPECT_EQ(error.file(), path);
        EXPECT_NE(std::string(error.what()).find("/X"), std::string::npos) << error.what();
        EXPECT_NE(std::string(error.what()).find("sorted"), std::string::npos) << error.what();
    }
    EXPECT_TRUE(folder_entries(folder).empty());
}

}  // namespace
}  // namespace fathom::io
