#include "core/io/csv_writer.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/io/errors.hpp"
#include "core/types/JobContext.hpp"
#include "tests/support/paths.hpp"

namespace fathom::io {
namespace {

std::string read_all(const std::filesystem::path& path) {
    std::ifstream stream(path, std::ios::binary);
    std::ostringstream text;
    text << stream.rdbuf();
    return text.str();
}

TEST(CsvWriter, FieldsAreQuotedOnlyWhenNeeded) {
    EXPECT_EQ(csv_field("AAACCTG-1"), "AAACCTG-1");
    EXPECT_EQ(csv_field("B cells"), "B cells");
    EXPECT_EQ(csv_field("CD4+, naive"), "\"CD4+, naive\"");
    EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
    EXPECT_EQ(csv_field(" padded"), "\" padded\"");
    EXPECT_EQ(csv_field(""), "");
}

TEST(CsvWriter, NumbersAreShortestRoundTripText) {
    for (float value : {0.1f, -3.25f, 1e-8f, 123456.79f, 0.0f}) EXPECT_EQ(std::stof(csv_number(value)), value);
    for (double value : {0.1, 1.0 / 3.0, -2.5e-300}) EXPECT_EQ(std::stod(csv_number(value)), value);
    EXPECT_EQ(csv_number(0.1f), "0.1");
    EXPECT_EQ(csv_number(std::numeric_limits<float>::quiet_NaN()), "nan");
    EXPECT_EQ(csv_number(-std::numeric_limits<double>::infinity()), "-inf");
}

TEST(CsvWriter, ProjectionAndCategoryFilesInLoupeLayout) {
    const auto folder = test::temp_dir("csv-writer");
    const std::vector<std::string> barcodes{"AAA-1", "CCC-1", "GGG-1"};
    DenseMatrix<float> coordinates(3, 3, std::vector<float>{1.5f, -2.0f, 9.0f, 0.25f, 3.0f, 9.0f, -0.5f, 0.0f, 9.0f});
    write_projection_csv((folder / "umap.csv").string(), barcodes, coordinates, "UMAP");
    EXPECT_EQ(read_all(folder / "umap.csv"), "Barcode,UMAP-1,UMAP-2\nAAA-1,1.5,-2\nCCC-1,0.25,3\nGGG-1,-0.5,0\n");

    CategoricalColumn clusters{{1, -1, 0}, {"T cells", "B, naive"}, false};
    write_category_csv((folder / "clusters.csv").string(), barcodes, "clusters", clusters);
    EXPECT_EQ(read_all(folder / "clusters.csv"), "Barcode,clusters\nAAA-1,\"B, naive\"\nCCC-1,\nGGG-1,T cells\n");
}

TEST(CsvWriter, MismatchedInputIsRejectedBeforeWriting) {
    const auto folder = test::temp_dir("csv-writer-bad");
    const std::vector<std::string> barcodes{"AAA-1", "CCC-1"};
    EXPECT_THROW(write_projection_csv((folder / "a.csv").string(), barcodes, DenseMatrix<float>(3, 2), "UMAP"),
                 std::invalid_argument);
    EXPECT_THROW(write_projection_csv((folder / "b.csv").string(), barcodes, DenseMatrix<float>(2, 1), "UMAP"),
                 std::invalid_argument);
    CategoricalColumn bad_code{{0, 2}, {"x", "y"}, false};
    try {
        write_category_csv((folder / "c.csv").string(), barcodes, "groups", bad_code);
        FAIL() << "an out-of-range code was accepted";
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find("'groups' has code 2"), std::string::npos) << error.what();
    }
    EXPECT_TRUE(std::filesystem::is_empty(folder));
}

TEST(CsvWriter, FailureLeavesNothingAndKeepsAnExistingFile) {
    const auto folder = test::temp_dir("csv-writer-atomic");
    const auto path = folder / "table.csv";
    std::ofstream(path) << "old\n";
    EXPECT_THROW(write_csv(path.string(), {"a"}, 3,
                           [](std::int64_t row, std::vector<std::string>& fields) {
                               if (row == 2) throw std::runtime_error("source failed");
                               fields.push_back(std::to_string(row));
                           }),
                 WriteError);
    EXPECT_EQ(read_all(path), "old\n");
    std::size_t files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(folder)) {
        (void)entry;
        ++files;
    }
    EXPECT_EQ(files, 1u);
    try {
        write_csv((folder / "missing" / "t.csv").string(), {"a"}, 0, {});
        FAIL() << "a missing folder was accepted";
    } catch (const WriteError& error) {
        EXPECT_NE(std::string(error.what()).find("missing/t.csv"), std::string::npos) << error.what();
    }
}

}  // namespace
}  // namespace fathom::io
