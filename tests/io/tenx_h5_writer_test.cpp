// io::write_10x_h5 / TenxH5Writer: CellRanger 3 layout, scanpy-style read-back with
// h5py, and failures that leave nothing behind.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/io/ShardedCsrSource.hpp"
#include "core/io/detail/hdf5.hpp"
#include "core/io/tenx_h5_writer.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/python.hpp"

namespace fathom::io {
namespace {

namespace fs = std::filesystem;

// 4 cells x 3 genes of counts, in two shards.
ShardedCsr counts_matrix(float odd_value = 3.0f) {
    CsrShard first;
    first.row_begin = 0;
    first.num_genes = 3;
    first.row_offsets = {0, 2, 2};
    first.gene_indices = {0, 2};
    first.values = {1.0f, odd_value};
    CsrShard second;
    second.row_begin = 2;
    second.num_genes = 3;
    second.row_offsets = {0, 3, 4};
    second.gene_indices = {0, 1, 2, 1};
    second.values = {5.0f, 6.0f, 7.0f, 120000.0f};
    std::vector<CsrShard> shards;
    shards.push_back(first);
    shards.push_back(second);
    return ShardedCsr(MatrixShape{4, 3}, std::move(shards));
}

Dataset counts_meta() {
    Dataset meta;
    meta.obs = Table({"AAACCCAAGGAGAGTA-1", "AAACGCTTCAGCCCAG-1", "AAAGAACAGACGACTG-1", "AAAGGTACAGGCAGTA-1"});
    meta.var = Table({"CD3E", "MS4A1", "CD3E"});  // duplicate names are kept, as in CellRanger output
    meta.var.set("gene_ids", StringColumn{{"ENSG00000198851", "ENSG00000156738", "ENSG00000000001"}});
    meta.var.set("feature_types", CategoricalColumn{{0, 0, 1}, {"Gene Expression", "Antibody Capture"}, false});
    meta.var.set("genome", StringColumn{{"GRCh38", "GRCh38", "GRCh38"}});
    return meta;
}

std::vector<fs::path> folder_entries(const fs::path& folder) {
    std::vector<fs::path> entries;
    for (const auto& entry : fs::directory_iterator(folder)) entries.push_back(entry.path());
    return entries;
}

TEST(TenxH5Writer, WritesTheCellRangerLayout) {
    const auto folder = test::temp_dir("tenx-writer");
    const auto path = folder / "out.h5";
    const ShardedCsr matrix = counts_matrix();
    ShardedCsrSource source(matrix);
    TenxH5WriteOptions options;
    options.rows_per_block = 3;  // blocks that straddle the shards
    write_10x_h5(path.string(), counts_meta(), source, options);
    ASSERT_EQ(folder_entries(folder), std::vector<fs::path>{path});

    const auto file = h5::File::open_read(path.string());
    EXPECT_EQ(file.read_all<std::int64_t>("/matrix/shape"), (std::vector<std::int64_t>{3, 4})) << "genes x cells";
    EXPECT_EQ(file.dataset_info("/matrix/shape").type_size, 4u);
    EXPECT_EQ(file.read_all<std::int64_t>("/matrix/indptr"), (std::vector<std::int64_t>{0, 2, 2, 5, 6}));
    EXPECT_EQ(file.read_all<std::int64_t>("/matrix/indices"), (std::vector<std::int64_t>{0, 2, 0, 1, 2, 1}));
    EXPECT_EQ(file.read_all<std::int64_t>("/matrix/data"), (std::vector<std::int64_t>{1, 3, 5, 6, 7, 120000}));
    EXPECT_EQ(file.dataset_info("/matrix/data").type_size, 4u);
    EXPECT_EQ(file.dataset_info("/matrix/indices").type_size, 8u);
    EXPECT_EQ(file.dataset_info("/matrix/barcodes").type_size, 18u);
    EXPECT_EQ(file.read_strings("/matrix/barcodes"), counts_meta().obs.index());
    EXPECT_EQ(file.read_strings("/matrix/features/name"), (std::vector<std::string>{"CD3E", "MS4A1", "CD3E"}));
    EXPECT_EQ(file.read_strings("/matrix/features/id").front(), "ENSG00000198851");
    EXPECT_EQ(file.read_strings("/matrix/features/feature_type"),
              (std::vector<std::string>{"Gene Expression", "Gene Expression", "Antibody Capture"}));
    EXPECT_EQ(file.read_strings("/matrix/features/genome").front(), "GRCh38");
    EXPECT_EQ(file.read_strings("/matrix/features/_all_tag_keys"), std::vector<std::string>{"genome"});
    EXPECT_EQ(file.attribute_string("/", "filetype"), "matrix");
    EXPECT_EQ(file.attribute_numbers<std::int64_t>("/", "version"), std::vector<std::int64_t>{2});
}

TEST(TenxH5Writer, ScanpyStyleReadWithH5py) {
    FATHOM_REQUIRE_PYTHON("h5py", "scipy");
    const auto folder = test::temp_dir("tenx-writer-py");
    const ShardedCsr matrix = counts_matrix();
    for (int gzip : {0, 4}) {
        ShardedCsrSource source(matrix);
        TenxH5WriteOptions options;
        options.gzip_level = gzip;
        options.int64_indices = gzip != 0;
        write_10x_h5((folder / ("g" + std::to_string(gzip) + ".h5")).string(), counts_meta(), source, options);
    }
    // scanpy 1.9 _read_v3_10x_h5: csr_matrix((data, indices, indptr), shape=(N, M)),
    // names and ids via .astype(str), filetype / shuffle / compression as CellRanger.
    const auto result = test::run_python(R"PY(
import sys, json, h5py, numpy as np, scipy.sparse as sp
out = []
for path in sys.argv[1:]:
    with h5py.File(path, "r") as f:
        m = f["matrix"]
        M, N = m["shape"][:]
        X = sp.csr_matrix((m["data"][:].astype(np.float32), m["indices"][:], m["indptr"][:]), shape=(N, M))
        out.append({"X": X.toarray().tolist(), "barcodes": m["barcodes"][:].astype(str).tolist(),
                    "ids": m["features"]["id"][:].astype(str).tolist(),
                    "types": m["features"]["feature_type"][:].astype(str).tolist(),
                    "compression": m["data"].compression, "shuffle": bool(m["data"].shuffle),
                    "barcode_dtype": str(m["barcodes"].dtype), "indices_dtype": str(m["indices"].dtype),
                    "library_ids": [x.decode() for x in f.attrs["library_ids"]]})
print("\nFATHOM-JSON:" + json.dumps(out))
)PY",
                                         {(folder / "g0.h5").string(), (folder / "g4.h5").string()});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    const auto marker = result.output.rfind("\nFATHOM-JSON:");
    ASSERT_NE(marker, std::string::npos) << result.output;
    const auto got = nlohmann::json::parse(result.output.substr(marker + 13));
    const auto expected_x = nlohmann::json::parse("[[1,0,3],[0,0,0],[5,6,7],[0,120000,0]]");
    for (int index = 0; index < 2; ++index) {
        EXPECT_EQ(got[index]["X"], expected_x);
        EXPECT_EQ(got[index]["barcodes"].get<std::vector<std::string>>(), counts_meta().obs.index());
        EXPECT_EQ(got[index]["ids"][2], "ENSG00000000001");
        EXPECT_EQ(got[index]["types"][2], "Antibody Capture");
        EXPECT_EQ(got[index]["barcode_dtype"], "|S18");
        EXPECT_EQ(got[index]["library_ids"], nlohmann::json::array({"fathom"}));
    }
    EXPECT_EQ(got[0]["compression"], nullptr);
    EXPECT_EQ(got[0]["indices_dtype"], "int32");
    EXPECT_EQ(got[1]["compression"], "gzip");
    EXPECT_EQ(got[1]["shuffle"], true);
    EXPECT_EQ(got[1]["indices_dtype"], "int64");
}

TEST(TenxH5Writer, NonIntegerCountsFailAndLeaveNothing) {
    const auto folder = test::temp_dir("tenx-writer-bad");
    const auto path = folder / "out.h5";
    const ShardedCsr matrix = counts_matrix(2.5f);
    ShardedCsrSource source(matrix);
    try {
        write_10x_h5(path.string(), counts_meta(), source, {});
        FAIL() << "expected WriteError";
    } catch (const WriteError& error) {
        EXPECT_EQ(error.file(), path.string());
        EXPECT_NE(std::string(error.what()).find("integer count"), std::string::npos) << error.what();
    }
    EXPECT_TRUE(folder_entries(folder).empty());
}

TEST(TenxH5Writer, RejectsMismatchesBeforeCreatingAnything) {
    const auto folder = test::temp_dir("tenx-writer-validate");
    const auto path = (folder / "out.h5").string();
    const ShardedCsr matrix = counts_matrix();
    ShardedCsrSource source(matrix);
    Dataset wrong = counts_meta();
    wrong.var = Table({"A", "B"});
    EXPECT_THROW(write_10x_h5(path, wrong, source, {}), std::invalid_argument);
    TenxH5WriteOptions bad;
    bad.gzip_level = 10;
    EXPECT_THROW(write_10x_h5(path, counts_meta(), source, bad), std::invalid_argument);
    TenxFeatures uneven;
    uneven.names = {"A", "B"};
    uneven.ids = {"A"};
    uneven.feature_types = {"Gene Expression", "Gene Expression"};
    uneven.genomes = {"", ""};
    EXPECT_THROW(TenxH5Writer(path, uneven, 18), std::invalid_argument);
    EXPECT_TRUE(folder_entries(folder).empty());
}

TEST(TenxH5Writer, LongBarcodeOrAbandonedWriterLeavesNothing) {
    const auto folder = test::temp_dir("tenx-writer-stream");
    const auto path = (folder / "out.h5").string();
    TenxFeatures features{{"g1", "g2", "g3"}, {"A", "B", "C"}, {"Gene Expression", "Gene Expression", "Gene Expression"},
                          {"", "", ""}};
    const ShardedCsr matrix = counts_matrix();
    {
        TenxH5Writer writer(path, features, 4);
        EXPECT_THROW(writer.append_cells(matrix.shard(0), {"AAAA", "TOO-LONG"}), WriteError);
    }
    EXPECT_TRUE(folder_entries(folder).empty());
    {
        TenxH5Writer writer(path, features, 4);
        writer.append_cells(matrix.shard(0), {"AAAA", "CCCC"});
    }
    EXPECT_TRUE(folder_entries(folder).empty()) << "abandoned without commit";
    {
        TenxH5Writer writer(path, features, 4);
        writer.append_cells(matrix.shard(0), {"AAAA", "CCCC"});
        writer.append_cells(matrix.shard(1), {"GGGG", "TTTT"});
        EXPECT_EQ(writer.cells_written(), 4);
        EXPECT_EQ(writer.nnz_written(), 6);
        writer.commit();
    }
    EXPECT_EQ(folder_entries(folder), std::vector<fs::path>{fs::path(path)});
}

}  // namespace
}  // namespace fathom::io
