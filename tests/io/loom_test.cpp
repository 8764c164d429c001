// Loom files (loom 3.0, written here with h5py as loompy writes them: dense chunked
// genes x cells /matrix, /layers, fixed-length ASCII attributes with XML character
// references) read as scanpy's read_loom reads them.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "core/io/RowSource.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/python.hpp"

namespace fathom {
namespace {

const char* k_write_loom = R"(
import json, sys
import h5py, numpy as np
path, expected_path, with_spliced = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
rng = np.random.default_rng(4)
genes, cells = 150, 70
matrix = (rng.poisson(0.4, size=(genes, cells)) * (rng.random((genes, cells)) < 0.5)).astype(np.float32)
spliced = (matrix * 2 + (rng.random((genes, cells)) < 0.1)).astype(np.float32)
gene_names = ["Gene%d" % g for g in range(genes)]
gene_names[3] = "Caf\u00e9"
with h5py.File(path, "w") as f:
    f.attrs["LOOM_SPEC_VERSION"] = "3.0.0"
    f.create_dataset("matrix", data=matrix, chunks=(64, 64), compression="gzip")
    f.create_group("layers")
    if with_spliced:
        f["layers"].create_dataset("spliced", data=spliced, chunks=(64, 64), compression="gzip")
        f["layers"].create_dataset("unspliced", data=matrix + 1, chunks=(64, 64))
    rows, cols = f.create_group("row_attrs"), f.create_group("col_attrs")
    # loompy: non-ASCII as XML character references in fixed-length ASCII strings.
    rows["Gene"] = np.array([n.encode("ascii", "xmlcharrefreplace") for n in gene_names])
    rows["Accession"] = np.array([("ENSG%05d" % g).encode() for g in range(genes)])
    cols["CellID"] = np.array([("cell%d" % c).encode() for c in range(cells)])
    cols["cluster"] = np.arange(cells, dtype=np.int64) % 4
    cols["n_counts"] = matrix.sum(axis=0).astype(np.float64)
    cols["X_umap"] = rng.random((cells, 2)).astype(np.float32)
    f.create_group("row_graphs"); f.create_group("col_graphs")
X = (spliced if with_spliced else matrix).T
json.dump({"X": X.tolist(), "matrix": matrix.T.tolist(), "genes": gene_names,
           "accession": ["ENSG%05d" % g for g in range(genes)], "cells": ["cell%d" % c for c in range(cells)],
           "cluster": (np.arange(cells) % 4).tolist(), "n_counts": matrix.sum(axis=0).astype(np.float64).tolist()},
          open(expected_path, "w"))
)";

struct LoomFixture {
    std::filesystem::path path;
    nlohmann::json expected;
};

LoomFixture write_loom(const std::string& label, bool with_spliced) {
    const auto folder = test::temp_dir("loom-" + label);
    LoomFixture fixture{folder / "data.loom", {}};
    const auto expected = folder / "expected.json";
    const auto result =
        test::run_python(k_write_loom, {fixture.path.string(), expected.string(), with_spliced ? "1" : "0"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    std::ifstream in(expected);
    fixture.expected = nlohmann::json::parse(in);
    return fixture;
}

void expect_matrix(io::RowSource& source, const nlohmann::json& dense) {
    const auto rows = static_cast<std::int64_t>(dense.size());
    ASSERT_EQ(source.shape().num_cells, rows);
    // Two ranges, so that reads start inside the file's chunks.
    for (const auto& [begin, end] : {std::pair<std::int64_t, std::int64_t>{0, 13}, {13, rows}}) {
        const CsrShard shard = source.read_rows(begin, end);
        ASSERT_EQ(shard.num_rows(), end - begin);
        for (std::int64_t row = begin; row < end; ++row) {
            std::vector<float> values(static_cast<std::size_t>(source.shape().num_genes), 0.0f);
            for (auto entry = shard.row_offsets[row - begin]; entry < shard.row_offsets[row - begin + 1]; ++entry)
                values[static_cast<std::size_t>(shard.gene_indices[entry])] = shard.values[entry];
            EXPECT_EQ(values, dense[row].get<std::vector<float>>()) << "cell " << row;
        }
    }
    std::int64_t nnz = 0;
    for (const auto& row : dense)
        for (const auto& value : row) nnz += value.get<float>() != 0.0f;
    EXPECT_EQ(source.nnz(), nnz);
    EXPECT_EQ(source.row_offsets().back(), nnz);
}

TEST(Loom, ReadsMatrixNamesAndAttributesAsScanpy) {
    FATHOM_REQUIRE_PYTHON("h5py", "numpy");
    const auto fixture = write_loom("plain", false);
    EXPECT_EQ(io::detect_format(fixture.path.string()), DatasetFormat::Loom);
    io::OpenedDataset opened = io::open_dataset(fixture.path.string());
    const Dataset& meta = opened.meta;
    EXPECT_EQ(meta.format, DatasetFormat::Loom);
    EXPECT_EQ(meta.shape, (MatrixShape{70, 150}));
    EXPECT_EQ(meta.matrix_name, "matrix");
    EXPECT_TRUE(meta.integer_counts_known && meta.integer_counts);
    // obs_names = CellID, var_names = Gene (XML references decoded), other attributes as columns.
    EXPECT_EQ(meta.obs.index(), fixture.expected["cells"].get<std::vector<std::string>>());
    EXPECT_EQ(meta.var.index(), fixture.expected["genes"].get<std::vector<std::string>>());
    EXPECT_EQ(meta.var.index()[3], "Caf\xc3\xa9");
    EXPECT_EQ(std::get<StringColumn>(meta.var.find("Accession")->data).values,
              fixture.expected["accession"].get<std::vector<std::string>>());
    EXPECT_EQ(std::get<IntColumn>(meta.obs.find("cluster")->data).values,
              fixture.expected["cluster"].get<std::vector<std::int64_t>>());
    EXPECT_EQ(std::get<FloatColumn>(meta.obs.find("n_counts")->data).values,
              fixture.expected["n_counts"].get<std::vector<double>>());
    EXPECT_EQ(meta.obs.find("CellID"), nullptr);
    ASSERT_EQ(meta.obsm.count("X_umap"), 1u);
    EXPECT_EQ(meta.obsm.at("X_umap").cols(), 2);
    EXPECT_EQ(meta.obs.find("X_umap"), nullptr);
    expect_matrix(*opened.source, fixture.expected["X"]);
    expect_matrix(*opened.source->clone(), fixture.expected["X"]);
}

TEST(Loom, SplicedLayerIsXAndLayersCanBeChosen) {
    FATHOM_REQUIRE_PYTHON("h5py", "numpy");
    const auto fixture = write_loom("velocyto", true);
    io::OpenedDataset opened = io::open_dataset(fixture.path.string());
    EXPECT_EQ(opened.meta.matrix_name, "layers/spliced");
    expect_matrix(*opened.source, fixture.expected["X"]);
    io::ReadOptions options;
    options.matrix = "layers/matrix";  // read_loom keeps /matrix as the layer 'matrix'
    io::OpenedDataset main = io::open_dataset(fixture.path.string(), options);
    expect_matrix(*main.source, fixture.expected["matrix"]);
    options.matrix = "layers/absent";
    try {
        io::open_dataset(fixture.path.string(), options);
        ADD_FAILURE() << "expected FormatError";
    } catch (const FormatError& error) {
        EXPECT_EQ(error.object(), "/layers/absent");
    }
}

}  // namespace
}  // namespace fathom
