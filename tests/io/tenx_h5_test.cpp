// 10x Genomics HDF5 reader: generated v3/v2 files against the generator's own matrix,
// and the real CellRanger / Space Ranger files against Scanpy 1.9.6's outputs.
#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>

#include "core/io/RowSource.hpp"
#include "core/io/ShardedCsrSource.hpp"
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

/// Per-cell sums of a shard in double.
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

class TenxH5Fixture : public ::testing::Test {
protected:
    void SetUp() override {
        fixture = make_tenx_fixture(57, 40, 11, 3);
        path = test::temp_dir("tenx-h5") / "filtered_feature_bc_matrix.h5";
        test::write_10x_h5_v3(path, test::tenx_h5_group(fixture));
    }
    test::TenxFixture fixture;
    std::filesystem::path path;
};

TEST_F(TenxH5Fixture, V3KeepsGeneExpressionLikeGexOnly) {
    auto opened = io::open_dataset(path.string());
    const Dataset& meta = opened.meta;
    const auto kept = test::kept_features(fixture, "Gene Expression");
    ASSERT_EQ(kept.size(), 37u);
    EXPECT_EQ(meta.format, DatasetFormat::TenxH5V3);
    EXPECT_EQ(meta.shape, (MatrixShape{57, 37}));
    EXPECT_EQ(meta.matrix_name, "/matrix");
    EXPECT_EQ(meta.stored_type, ValueType::Int32);
    EXPECT_TRUE(meta.integer_counts_known && meta.integer_counts);
    EXPECT_EQ(meta.obs.index(), fixture.barcodes);
    EXPECT_EQ(meta.var.index(), selected(fixture.feature_names, kept));
    EXPECT_EQ(meta.var.index()[1], meta.var.index()[2]) << "duplicate symbols are kept as scanpy does";
    EXPECT_EQ(strings(meta.var, "gene_ids"), selected(fixture.feature_ids, kept));
    EXPECT_EQ(strings(meta.var, "feature_types"), std::vector<std::string>(37, "Gene Expression"));
    EXPECT_EQ(strings(meta.var, "genome"), selected(fixture.genomes, kept));

    const CsrShard expected = expected_csr(fixture, "Gene Expression");
    EXPECT_EQ(meta.nnz, expected.nnz());
    EXPECT_EQ(opened.source->nnz(), expected.nnz());
    const CsrShard all = read_all(*opened.source);
    EXPECT_NO_THROW(all.check_invariants());
    EXPECT_TRUE(same_csr(all, expected));
    EXPECT_EQ(opened.source->row_offsets(), expected.row_offsets);
}

TEST_F(TenxH5Fixture, EmptyFeatureTypeKeepsEveryFeature) {
    io::ReadOptions options;
    options.feature_type = "";
    auto opened = io::open_dataset(path.string(), options);
    EXPECT_EQ(opened.meta.shape, (MatrixShape{57, 40}));
    EXPECT_EQ(opened.meta.var.index(), fixture.feature_names);
    EXPECT_EQ(strings(opened.meta.var, "feature_types"), fixture.feature_types);
    EXPECT_TRUE(same_csr(read_all(*opened.source), expected_csr(fixture, "")));
    EXPECT_EQ(opened.source->row_offsets(), expected_csr(fixture, "").row_offsets);
}

TEST_F(TenxH5Fixture, OtherFeatureTypeSelectsAntibodies) {
    io::ReadOptions options;
    options.feature_type = "Antibody Capture";
    auto opened = io::open_dataset(path.string(), options);
    EXPECT_EQ(opened.meta.shape, (MatrixShape{57, 3}));
    EXPECT_EQ(opened.meta.var.index(), (std::vector<std::string>{"CD37", "CD38", "CD39"}));
    EXPECT_TRUE(same_csr(read_all(*opened.source), expected_csr(fixture, "Antibody Capture")));
}

TEST_F(TenxH5Fixture, RowRangesAndShardCountsGiveTheSameMatrix) {
    auto opened = io::open_dataset(path.string());
    const CsrShard expected = expected_csr(fixture, "Gene Expression");
    const ShardedCsr whole(MatrixShape{57, 37}, {expected});
    io::ShardedCsrSource reference(whole);
    for (int shards : {1, 3, 7}) {
        for (const auto& ranges : {split_rows_evenly(57, shards), split_rows_by_nnz(opened.source->row_offsets(), shards)}) {
            const ShardedCsr sharded = io::load_shards(*opened.source, ranges);
            ASSERT_EQ(sharded.shards().size(), ranges.size());
            EXPECT_EQ(sharded.nnz(), expected.nnz());
            for (std::size_t shard = 0; shard < ranges.size(); ++shard) {
                const auto& piece = sharded.shards()[shard];
                EXPECT_EQ(piece.row_begin, ranges[shard].begin);
                EXPECT_TRUE(same_csr(piece, reference.read_rows(ranges[shard].begin, ranges[shard].end)));
            }
        }
    }
    // A clone reads independently and identically; an empty range is empty.
    auto clone = opened.source->clone();
    EXPECT_TRUE(same_csr(clone->read_rows(10, 20), opened.source->read_rows(10, 20)));
    EXPECT_EQ(opened.source->read_rows(5, 5).num_rows(), 0);
    EXPECT_THROW(opened.source->read_rows(50, 58), std::out_of_range);
}

TEST(TenxH5, V3GenomeOptionSelectsFeaturesOfThatGenome) {
    const auto fixture = make_tenx_fixture(20, 30, 5, 0, 0.4, true);
    const auto path = test::temp_dir("tenx-h5-genome") / "two_genomes.h5";
    test::write_10x_h5_v3(path, test::tenx_h5_group(fixture));
    for (const std::string genome : {"GRCh38", "mm10"}) {
        io::ReadOptions options;
        options.genome = genome;
        auto opened = io::open_dataset(path.string(), options);
        const auto kept = test::kept_features(fixture, "Gene Expression", genome);
        EXPECT_EQ(opened.meta.shape, (MatrixShape{20, static_cast<std::int64_t>(kept.size())}));
        EXPECT_EQ(opened.meta.var.index(), selected(fixture.feature_names, kept));
        EXPECT_EQ(strings(opened.meta.var, "genome"), std::vector<std::string>(kept.size(), genome));
        EXPECT_TRUE(same_csr(read_all(*opened.source), expected_csr(fixture, "Gene Expression", genome)));
    }
    io::ReadOptions options;
    options.genome = "hg19";
    try {
        io::open_dataset(path.string(), options);
        FAIL() << "expected FormatError";
    } catch (const io::FormatError& error) {
        EXPECT_EQ(error.object(), "/matrix/features/genome");
        EXPECT_NE(std::string(error.what()).find("GRCh38, mm10"), std::string::npos) << error.what();
    }
}

TEST(TenxH5, Float64DataAsSpaceRanger1) {
    const auto fixture = make_tenx_fixture(15, 12, 3, 0);
    auto group = test::tenx_h5_group(fixture);
    group.data_as_float64 = true;
    const auto path = test::temp_dir("tenx-h5-float") / "spots.h5";
    test::write_10x_h5_v3(path, group);
    auto opened = io::open_dataset(path.string());
    EXPECT_EQ(opened.meta.stored_type, ValueType::Float64);
    EXPECT_FALSE(opened.meta.integer_counts_known);
    EXPECT_TRUE(same_csr(read_all(*opened.source), expected_csr(fixture, "")));
}

TEST(TenxH5, V2PicksTheGenomeGroup) {
    const auto first = make_tenx_fixture(25, 18, 21, 0);
    const auto second = make_tenx_fixture(25, 9, 22, 0);
    const auto folder = test::temp_dir("tenx-h5-v2");
    test::write_10x_h5_v2(folder / "one.h5", {{"hg19", test::tenx_h5_group(first)}});
    test::write_10x_h5_v2(folder / "two.h5", {{"hg19", test::tenx_h5_group(first)}, {"mm10", test::tenx_h5_group(second)}});

    auto single = io::open_dataset((folder / "one.h5").string());
    EXPECT_EQ(single.meta.format, DatasetFormat::TenxH5V2);
    EXPECT_EQ(single.meta.matrix_name, "/hg19");
    EXPECT_EQ(single.meta.var.index(), first.feature_names);
    EXPECT_EQ(strings(single.meta.var, "gene_ids"), first.feature_ids);
    EXPECT_EQ(single.meta.var.find("feature_types"), nullptr) << "v2 has no feature types (scanpy legacy reader)";
    EXPECT_TRUE(same_csr(read_all(*single.source), expected_csr(first, "")));

    io::ReadOptions options;
    options.genome = "mm10";
    auto chosen = io::open_dataset((folder / "two.h5").string(), options);
    EXPECT_EQ(chosen.meta.shape, (MatrixShape{25, 9}));
    EXPECT_TRUE(same_csr(read_all(*chosen.source), expected_csr(second, "")));

    try {
        io::open_dataset((folder / "two.h5").string());
        FAIL() << "expected FormatError";
    } catch (const io::FormatError& error) {
        EXPECT_NE(std::string(error.what()).find("hg19, mm10"), std::string::npos) << error.what();
    }
}

TEST_F(TenxH5Fixture, DetectedByContentWhateverTheName) {
    const auto renamed = path.parent_path() / "matrix.bin";
    std::filesystem::copy_file(path, renamed);
    EXPECT_EQ(io::detect_format(renamed.string()), DatasetFormat::TenxH5V3);
    auto opened = io::open_dataset(renamed.string());
    EXPECT_TRUE(same_csr(read_all(*opened.source), expected_csr(fixture, "Gene Expression")));

    const auto v2 = path.parent_path() / "legacy.data";
    test::write_10x_h5_v2(v2, {{"hg19", test::tenx_h5_group(fixture)}});
    EXPECT_EQ(io::detect_format(v2.string()), DatasetFormat::TenxH5V2);
}

// ---- real data (Scanpy 1.9.6 references in ../shared) ----

TEST(TenxH5Real, V3Chr21MatchesScanpy) {
    const auto path = test::shared_data("scanpy_10x_v3_chr21/filtered_feature_bc_matrix.h5");
    FATHOM_REQUIRE_PATH(path);
    const auto reference = test::shared_reference("scanpy_10x_v3_chr21");
    FATHOM_REQUIRE_PATH(reference);
    auto opened = io::open_dataset(path.string());
    // meta.json: n_obs_raw 1107, n_vars_raw 507, nnz_raw 23866.
    EXPECT_EQ(opened.meta.format, DatasetFormat::TenxH5V3);
    EXPECT_EQ(opened.meta.shape, (MatrixShape{1107, 507}));
    EXPECT_EQ(opened.meta.nnz, 23866);
    EXPECT_EQ(opened.meta.obs.index(), test::read_npy(reference / "obs_names.npy").strings);
    EXPECT_EQ(opened.meta.var.index().front(), "CH507-9B2.2");
    EXPECT_EQ(strings(opened.meta.var, "gene_ids")[457], "ENSG00000160255");
    EXPECT_EQ(opened.meta.var.index()[457], "ITGB2");
    EXPECT_EQ(strings(opened.meta.var, "genome").front(), "GRCh38_chr21");
    const CsrShard all = read_all(*opened.source);
    EXPECT_NO_THROW(all.check_invariants());
    EXPECT_EQ(row_totals(all), test::read_npy(reference / "n_counts_all.npy").numbers);
}

TEST(TenxH5Real, VisiumV1) {
    const auto path = test::shared_data("scanpy_visium_v1/filtered_feature_bc_matrix.h5");
    FATHOM_REQUIRE_PATH(path);
    auto opened = io::open_dataset(path.string());
    // h5py + scipy.sparse as scanpy's _read_v3_10x_h5: 100 x 100, 656 stored, sum 932.
    EXPECT_EQ(opened.meta.shape, (MatrixShape{100, 100}));
    EXPECT_EQ(opened.meta.nnz, 656);
    EXPECT_EQ(opened.meta.stored_type, ValueType::Float64);
    EXPECT_EQ(opened.meta.obs.index().back(), "AACCTTTACGACGTCT-1");
    EXPECT_EQ(opened.meta.var.index().back(), "ENSG00000197921");
    const CsrShard all = read_all(*opened.source);
    const auto totals = row_totals(all);
    EXPECT_EQ(std::accumulate(totals.begin(), totals.end(), 0.0), 932.0);
    EXPECT_EQ(std::vector<double>(totals.begin(), totals.begin() + 5), (std::vector<double>{10, 9, 11, 3, 3}));
    const CsrShard row = opened.source->read_rows(3, 4);
    EXPECT_EQ(row.gene_indices, (std::vector<std::int32_t>{55, 66, 93}));
}

TEST(TenxH5Real, V2Chr21AndMultipleGenomes) {
    const auto single = test::shared_data("scanpy_10x_v2_chr21/filtered_gene_bc_matrices_h5.h5");
    const auto multiple = test::shared_data("scanpy_10x_v2_chr21/multiple_genomes.h5");
    FATHOM_REQUIRE_PATH(single);
    FATHOM_REQUIRE_PATH(multiple);
    auto opened = io::open_dataset(single.string());
    EXPECT_EQ(opened.meta.format, DatasetFormat::TenxH5V2);
    EXPECT_EQ(opened.meta.shape, (MatrixShape{12, 343}));
    EXPECT_EQ(opened.meta.nnz, 12);
    EXPECT_EQ(opened.meta.var.index()[200], "LINC00649");
    EXPECT_EQ(opened.meta.obs.index()[11], "TTTATGCCATCCGTGG-1");
    EXPECT_EQ(row_totals(read_all(*opened.source)), std::vector<double>(12, 1.0));

    try {
        io::open_dataset(multiple.string());
        FAIL() << "expected FormatError: several genomes";
    } catch (const io::FormatError& error) {
        const std::string message = error.what();
        EXPECT_NE(message.find("another_genome"), std::string::npos) << message;
        EXPECT_NE(message.find("hg19_chr21"), std::string::npos) << message;
    }
    io::ReadOptions options;
    options.genome = "hg19_chr21";
    auto hg19 = io::open_dataset(multiple.string(), options);
    EXPECT_EQ(hg19.meta.var.index()[200], "LINC00649");
    EXPECT_TRUE(same_csr(read_all(*hg19.source), read_all(*opened.source)));
    options.genome = "another_genome";
    auto other = io::open_dataset(multiple.string(), options);
    EXPECT_EQ(other.meta.matrix_name, "/another_genome");
    EXPECT_EQ(other.meta.var.index()[200], "gene_200");
    const auto totals = row_totals(read_all(*other.source));
    EXPECT_EQ(std::accumulate(totals.begin(), totals.end(), 0.0), 13.0);
    EXPECT_EQ(totals[2], 2.0);
}

}  // namespace
}  // namespace fathom
