// Matrix Market reader: generated CellRanger folders and single files against the
// generator's own matrix (cached and streaming paths, sorted and shuffled files), and
// the real folders against Scanpy 1.9.6's outputs; 10x h5 == its mtx folder.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "core/io/RowSource.hpp"
#include "core/io/ShardedCsrSource.hpp"
#include "core/io/detail/matrix_market.hpp"
#include "core/io/readers.hpp"
#include "tests/support/npy.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/tenx_fixtures.hpp"

namespace fathom {
namespace {

using test::expected_csr;
using test::make_tenx_fixture;
using test::same_csr;

const std::vector<std::string>& strings(const Table& table, const std::string& name) {
    const Column* column = table.find(name);
    if (!column) throw std::runtime_error("no column " + name);
    return std::get<StringColumn>(column->data).values;
}

std::vector<std::string> selected(const std::vector<std::string>& values, const std::vector<std::int64_t>& keep) {
    std::vector<std::string> out;
    for (auto index : keep) out.push_back(values[static_cast<std::size_t>(index)]);
    return out;
}

CsrShard read_all(io::RowSource& source) { return source.read_rows(0, source.shape().num_cells); }

std::vector<double> row_totals(const CsrShard& shard) {
    std::vector<double> totals;
    for (std::int64_t row = 0; row < shard.num_rows(); ++row) {
        double total = 0.0;
        for (auto entry = shard.row_offsets[static_cast<std::size_t>(row)];
             entry < shard.row_offsets[static_cast<std::size_t>(row) + 1]; ++entry)
            total += shard.values[static_cast<std::size_t>(entry)];
        totals.push_back(total);
    }
    return totals;
}

io::OpenedDataset open_tuned(const std::filesystem::path& path, std::int64_t cache_limit_bytes,
                             const io::ReadOptions& options = {}) {
    io::detail::MatrixMarketTuning tuning;
    tuning.cache_limit_bytes = cache_limit_bytes;
    return io::detail::open_matrix_market(path.string(), options, tuning);
}

/// Every row range of several shardings equals the reference; clones agree.
void expect_rows_match(io::RowSource& source, const CsrShard& expected) {
    const auto num_cells = expected.num_rows();
    const ShardedCsr whole(MatrixShape{num_cells, expected.num_genes}, {expected});
    io::ShardedCsrSource reference(whole);
    EXPECT_EQ(source.row_offsets(), expected.row_offsets);
    for (int shards : {1, 3, 7}) {
        for (const auto& ranges : {split_rows_evenly(num_cells, shards), split_rows_by_nnz(source.row_offsets(), shards)}) {
            const ShardedCsr sharded = io::load_shards(source, ranges);
            for (std::size_t shard = 0; shard < ranges.size(); ++shard) {
                EXPECT_EQ(sharded.shards()[shard].row_begin, ranges[shard].begin);
                EXPECT_TRUE(same_csr(sharded.shards()[shard], reference.read_rows(ranges[shard].begin, ranges[shard].end)))
                    << shards << " shards, range " << shard;
            }
        }
    }
    // Backward and single-row reads after forward ones (the reader seeks back).
    EXPECT_TRUE(same_csr(source.read_rows(num_cells - 2, num_cells), reference.read_rows(num_cells - 2, num_cells)));
    EXPECT_TRUE(same_csr(source.read_rows(0, 1), reference.read_rows(0, 1)));
    EXPECT_TRUE(same_csr(source.read_rows(3, 4), reference.read_rows(3, 4))) << "an empty cell";
    auto clone = source.clone();
    EXPECT_TRUE(same_csr(clone->read_rows(2, num_cells - 1), reference.read_rows(2, num_cells - 1)));
    EXPECT_EQ(source.read_rows(4, 4).num_rows(), 0);
    EXPECT_THROW(source.read_rows(0, num_cells + 1), std::out_of_range);
}

TEST(MatrixMarketFolder, V3GzipFolderAsReadTenxMtx) {
    const auto fixture = make_tenx_fixture(61, 45, 7, 3);
    const auto folder = test::temp_dir("mtx-v3") / "filtered_feature_bc_matrix";
    test::write_mtx_folder(folder, fixture, {});
    auto opened = io::open_dataset(folder.string());
    const Dataset& meta = opened.meta;
    const auto kept = test::kept_features(fixture, "Gene Expression");
    EXPECT_EQ(meta.format, DatasetFormat::MatrixMarketFolder);
    EXPECT_EQ(meta.matrix_name, "matrix.mtx.gz");
    EXPECT_EQ(meta.shape, (MatrixShape{61, 42}));
    EXPECT_EQ(meta.stored_type, ValueType::Int32);
    EXPECT_TRUE(meta.integer_counts_known && meta.integer_counts);
    EXPECT_EQ(meta.obs.index(), fixture.barcodes);
    EXPECT_EQ(meta.var.index(), selected(fixture.feature_names, kept));
    EXPECT_EQ(strings(meta.var, "gene_ids"), selected(fixture.feature_ids, kept));
    EXPECT_EQ(strings(meta.var, "feature_types"), std::vector<std::string>(42, "Gene Expression"));
    const CsrShard expected = expected_csr(fixture, "Gene Expression");
    EXPECT_EQ(meta.nnz, expected.nnz());
    const CsrShard all = read_all(*opened.source);
    EXPECT_NO_THROW(all.check_invariants());
    EXPECT_TRUE(same_csr(all, expected));
    expect_rows_match(*opened.source, expected);

    io::ReadOptions every;
    every.feature_type = "";
    auto unfiltered = io::open_dataset(folder.string(), every);
    EXPECT_EQ(unfiltered.meta.var.index(), fixture.feature_names);
    EXPECT_TRUE(same_csr(read_all(*unfiltered.source), expected_csr(fixture, "")));
}

TEST(MatrixMarketFolder, StreamingPathEqualsCachedPathSortedAndShuffled) {
    const auto fixture = make_tenx_fixture(73, 38, 9, 2);
    const CsrShard expected = expected_csr(fixture, "Gene Expression");
    for (bool shuffle : {false, true}) {
        for (bool gzip : {true, false}) {
            const auto folder = test::temp_dir(shuffle ? "mtx-shuffled" : "mtx-sorted");
            test::MtxFolderOptions options;
            options.shuffle_entries = shuffle;
            options.gzip = gzip;
            test::write_mtx_folder(folder, fixture, options);
            for (std::int64_t limit : {std::int64_t{0}, std::int64_t{64} << 20}) {
                SCOPED_TRACE(std::string(shuffle ? "shuffled" : "sorted") + (gzip ? ", gzip" : ", plain") +
                             (limit ? ", cached" : ", streaming"));
                auto opened = open_tuned(folder, limit);
                EXPECT_EQ(opened.meta.nnz, expected.nnz());
                EXPECT_TRUE(same_csr(read_all(*opened.source), expected));
                expect_rows_match(*opened.source, expected);
            }
        }
    }
}

TEST(MatrixMarketFolder, LegacyGenesTsvPlainTextKeepsAllFeatures) {
    const auto fixture = make_tenx_fixture(19, 22, 4, 2);
    const auto folder = test::temp_dir("mtx-v2") / "hg19";
    test::MtxFolderOptions options;
    options.gzip = false;
    options.legacy_genes_tsv = true;
    test::write_mtx_folder(folder, fixture, options);
    auto opened = io::open_dataset(folder.string());
    // scanpy's legacy reader: no feature types, so gex_only does not apply.
    EXPECT_EQ(opened.meta.matrix_name, "matrix.mtx");
    EXPECT_EQ(opened.meta.shape, (MatrixShape{19, 22}));
    EXPECT_EQ(opened.meta.var.index(), fixture.feature_names);
    EXPECT_EQ(strings(opened.meta.var, "gene_ids"), fixture.feature_ids);
    EXPECT_EQ(opened.meta.var.find("feature_types"), nullptr);
    EXPECT_TRUE(same_csr(read_all(*opened.source), expected_csr(fixture, "")));
}

TEST(MatrixMarketFolder, RealFieldAndNumberedTwoColumnFiles) {
    // yeast_844cells' quirk: features and barcodes files are "<row number>\t<name>".
    const auto fixture = make_tenx_fixture(14, 10, 8, 0);
    const auto folder = test::temp_dir("mtx-numbered");
    test::MtxFolderOptions options;
    options.real_field = true;
    test::write_mtx_folder(folder, fixture, options);
    std::string features, barcodes;
    for (std::size_t feature = 0; feature < fixture.feature_names.size(); ++feature)
        features += std::to_string(feature + 1) + "\t" + fixture.feature_names[feature] + "\n";
    for (std::size_t cell = 0; cell < fixture.barcodes.size(); ++cell)
        barcodes += std::to_string(cell + 1) + "\t" + fixture.barcodes[cell] + "\n";
    test::write_text(folder / "features.tsv.gz", features, true);
    test::write_text(folder / "barcodes.tsv.gz", barcodes, true);
    auto opened = io::open_dataset(folder.string());
    EXPECT_EQ(opened.meta.stored_type, ValueType::Float64);
    EXPECT_TRUE(opened.meta.integer_counts);
    EXPECT_EQ(opened.meta.obs.index(), fixture.barcodes);
    EXPECT_EQ(opened.meta.var.index(), fixture.feature_names);
    EXPECT_EQ(strings(opened.meta.var, "gene_ids").front(), "1");
    EXPECT_EQ(opened.meta.var.find("feature_types"), nullptr);
    EXPECT_TRUE(same_csr(read_all(*opened.source), expected_csr(fixture, "")));
}

TEST(MatrixMarketFile, SingleFileIsNotTransposed) {
    // scanpy.read_mtx: rows are obs as stored; names "0", "1", ...
    const auto folder = test::temp_dir("mtx-file");
    const std::string text =
        "%%MatrixMarket matrix coordinate real general\n"
        "% a comment\n"
        "3 4 5\n"
        "1 4 2.5\n"
        "3 1 -1e-3\n"
        "1 2 1\n"
        "\n"
        "3 3 0\n"
        "2 2 7\n";
    test::write_text(folder / "values.mtx", text, false);
    test::write_text(folder / "values.mtx.gz", text, true);
    for (const char* name : {"values.mtx", "values.mtx.gz"}) {
        for (std::int64_t limit : {std::int64_t{0}, std::int64_t{1} << 20}) {
            auto opened = open_tuned(folder / name, limit);
            EXPECT_EQ(opened.meta.format, DatasetFormat::MatrixMarketFile);
            EXPECT_EQ(opened.meta.shape, (MatrixShape{3, 4}));
            EXPECT_EQ(opened.meta.nnz, 5) << "explicit zeros are stored entries, as scipy keeps them";
            EXPECT_FALSE(opened.meta.integer_counts);
            EXPECT_EQ(opened.meta.obs.index(), (std::vector<std::string>{"0", "1", "2"}));
            EXPECT_EQ(opened.meta.var.index(), (std::vector<std::string>{"0", "1", "2", "3"}));
            const CsrShard all = read_all(*opened.source);
            EXPECT_EQ(all.row_offsets, (std::vector<std::int64_t>{0, 2, 3, 5}));
            EXPECT_EQ(all.gene_indices, (std::vector<std::int32_t>{1, 3, 1, 0, 2}));
            EXPECT_EQ(all.values, (std::vector<float>{1.0f, 2.5f, 7.0f, -1e-3f, 0.0f}));
            EXPECT_TRUE(same_csr(opened.source->read_rows(1, 3), [&] {
                CsrShard tail;
                tail.num_genes = 4;
                tail.row_offsets = {0, 1, 3};
                tail.gene_indices = {1, 0, 2};
                tail.values = {7.0f, -1e-3f, 0.0f};
                return tail;
            }()));
        }
    }
}

TEST(MatrixMarketFile, PatternFieldAndContentDetection) {
    const auto folder = test::temp_dir("mtx-pattern");
    const std::string text = "%%MatrixMarket matrix coordinate pattern general\n2 3 3\n2 3\n1 1\n2 1\n";
    // Named without .mtx: found by its (gunzipped) banner.
    test::write_text(folder / "adjacency.data.gz", text, true);
    EXPECT_EQ(io::detect_format((folder / "adjacency.data.gz").string()), DatasetFormat::MatrixMarketFile);
    auto opened = io::open_dataset((folder / "adjacency.data.gz").string());
    EXPECT_EQ(opened.meta.stored_type, ValueType::Other);
    EXPECT_TRUE(opened.meta.integer_counts);
    const CsrShard all = read_all(*opened.source);
    EXPECT_EQ(all.row_offsets, (std::vector<std::int64_t>{0, 1, 3}));
    EXPECT_EQ(all.gene_indices, (std::vector<std::int32_t>{0, 0, 2}));
    EXPECT_EQ(all.values, (std::vector<float>{1.0f, 1.0f, 1.0f}));
    // Gzip of something else is not Matrix Market.
    test::write_text(folder / "notes.gz", "hello\n", true);
    EXPECT_THROW(io::detect_format((folder / "notes.gz").string()), io::FormatError);
}

// ---- real data (Scanpy 1.9.6 references in ../shared) ----

struct RealCase {
    const char* data;        ///< folder under shared/data
    const char* reference;   ///< folder under shared/reference
    std::int64_t n_obs, n_vars, nnz;  ///< meta.json n_obs_raw, n_vars_raw, nnz_raw
};

void PrintTo(const RealCase& real, std::ostream* out) { *out << real.data; }

class MatrixMarketReal : public ::testing::TestWithParam<RealCase> {};

TEST_P(MatrixMarketReal, ShapeNamesAndTotalsMatchScanpy) {
    const RealCase& real = GetParam();
    const auto path = test::shared_data(real.data);
    const auto reference = test::shared_reference(real.reference);
    FATHOM_REQUIRE_PATH(path);
    FATHOM_REQUIRE_PATH(reference);
    auto opened = io::open_dataset(path.string());
    EXPECT_EQ(opened.meta.format, DatasetFormat::MatrixMarketFolder);
    EXPECT_EQ(opened.meta.shape, (MatrixShape{real.n_obs, real.n_vars}));
    EXPECT_EQ(opened.meta.nnz, real.nnz);
    EXPECT_TRUE(opened.meta.integer_counts);
    const CsrShard all = read_all(*opened.source);
    EXPECT_NO_THROW(all.check_invariants());
    EXPECT_EQ(all.nnz(), real.nnz);
    const auto totals = row_totals(all);
    const auto obs_names = test::read_npy(reference / "obs_names.npy").strings;
    const auto reference_totals = test::read_npy(reference / "n_counts_all.npy").numbers;
    if (static_cast<std::int64_t>(obs_names.size()) == real.n_obs) {
        EXPECT_EQ(opened.meta.obs.index(), obs_names);
        EXPECT_EQ(totals, reference_totals);
    } else {
        // geo: the reference ran sc.pp.filter_cells(min_counts=200) first.
        std::vector<std::string> kept_names;
        std::vector<double> kept_totals;
        for (std::size_t cell = 0; cell < totals.size(); ++cell) {
            if (totals[cell] < 200.0) continue;
            kept_names.push_back(opened.meta.obs.index()[cell]);
            kept_totals.push_back(totals[cell]);
        }
        EXPECT_EQ(kept_names, obs_names);
        EXPECT_EQ(kept_totals, reference_totals);
    }
    // The streaming path (no cache) gives the same matrix.
    auto streaming = open_tuned(path, 0);
    const auto ranges = split_rows_by_nnz(streaming.source->row_offsets(), 3);
    const ShardedCsr sharded = io::load_shards(*streaming.source, ranges);
    const ShardedCsr whole(opened.meta.shape, {all});
    io::ShardedCsrSource cached(whole);
    for (std::size_t shard = 0; shard < ranges.size(); ++shard)
        EXPECT_TRUE(same_csr(sharded.shards()[shard], cached.read_rows(ranges[shard].begin, ranges[shard].end)));
}

INSTANTIATE_TEST_SUITE_P(
    Shared, MatrixMarketReal,
    ::testing::Values(RealCase{"scanpy_10x_v3_chr21/filtered_feature_bc_matrix", "scanpy_10x_v3_chr21_mtx", 1107, 507, 23866},
                      RealCase{"visium_cytassist_mouse_2898/filtered_feature_bc_matrix", "visium_cytassist_mouse_2898",
                               2898, 19465, 1069459},
                      RealCase{"geo_GSM6544281_raw_barcodes/matrix", "geo_GSM6544281_min200", 83683, 36601, 670199},
                      RealCase{"yeast_844cells/matrix", "yeast_844cells", 844, 4777, 460503}),
    [](const auto& info) {
        std::string name = info.param.reference;
        for (auto& c : name)
            if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
        return name;
    });

TEST(MatrixMarketRealTiming, GeoRawBarcodesOpenAndLoadQuickly) {
    const auto path = test::shared_data("geo_GSM6544281_raw_barcodes/matrix");
    FATHOM_REQUIRE_PATH(path);
    const auto start = std::chrono::steady_clock::now();
    auto opened = io::open_dataset(path.string());
    const ShardedCsr sharded = io::load_shards(*opened.source, split_rows_evenly(opened.meta.shape.num_cells, 2));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(sharded.nnz(), 670199);
    RecordProperty("open_and_load_seconds", std::to_string(seconds));
    std::cout << "[ timing ] geo 83683 x 36601 open + load: " << seconds << " s\n";
    // A generous bound for a loaded 2-core machine; typical runs take a fraction of a second.
    EXPECT_LT(seconds, 10.0);
}

TEST(MatrixMarketYeast, FeatureIdsAreRowNumbers) {
    const auto path = test::shared_data("yeast_844cells/matrix");
    FATHOM_REQUIRE_PATH(path);
    auto opened = io::open_dataset(path.string());
    EXPECT_EQ(opened.meta.var.index().front(), "LSR1");
    EXPECT_EQ(opened.meta.var.index()[2], "RUF20");
    EXPECT_EQ(strings(opened.meta.var, "gene_ids")[2], "3");
    EXPECT_EQ(opened.meta.obs.index().front(), "AAAAGATTATGA");
}

/// The 10x h5 and the mtx folder CellRanger wrote from the same run.
void expect_same_dataset(const std::filesystem::path& h5, const std::filesystem::path& folder) {
    auto from_h5 = io::open_dataset(h5.string());
    auto from_mtx = io::open_dataset(folder.string());
    EXPECT_EQ(from_h5.meta.shape, from_mtx.meta.shape);
    EXPECT_EQ(from_h5.meta.nnz, from_mtx.meta.nnz);
    EXPECT_EQ(from_h5.meta.obs.index(), from_mtx.meta.obs.index());
    EXPECT_EQ(from_h5.meta.var.index(), from_mtx.meta.var.index());
    EXPECT_EQ(strings(from_h5.meta.var, "gene_ids"), strings(from_mtx.meta.var, "gene_ids"));
    if (from_h5.meta.var.find("feature_types")) {
        EXPECT_EQ(strings(from_h5.meta.var, "feature_types"), strings(from_mtx.meta.var, "feature_types"));
    }
    EXPECT_EQ(from_h5.source->row_offsets(), from_mtx.source->row_offsets());
    for (int shards : {1, 3}) {
        const auto ranges = split_rows_evenly(from_h5.meta.shape.num_cells, shards);
        const ShardedCsr a = io::load_shards(*from_h5.source, ranges);
        const ShardedCsr b = io::load_shards(*from_mtx.source, ranges);
        for (std::size_t shard = 0; shard < ranges.size(); ++shard)
            EXPECT_TRUE(same_csr(a.shards()[shard], b.shards()[shard])) << shards << " shards, shard " << shard;
    }
}

TEST(TenxH5VersusMtx, V3Chr21Identical) {
    const auto h5 = test::shared_data("scanpy_10x_v3_chr21/filtered_feature_bc_matrix.h5");
    const auto folder = test::shared_data("scanpy_10x_v3_chr21/filtered_feature_bc_matrix");
    FATHOM_REQUIRE_PATH(h5);
    FATHOM_REQUIRE_PATH(folder);
    expect_same_dataset(h5, folder);
}

TEST(TenxH5VersusMtx, V2Chr21Identical) {
    const auto h5 = test::shared_data("scanpy_10x_v2_chr21/filtered_gene_bc_matrices_h5.h5");
    const auto folder = test::shared_data("scanpy_10x_v2_chr21/filtered_gene_bc_matrices/hg19_chr21");
    FATHOM_REQUIRE_PATH(h5);
    FATHOM_REQUIRE_PATH(folder);
    expect_same_dataset(h5, folder);
}

}  // namespace
}  // namespace fathom
