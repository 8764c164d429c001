// Malformed 10x HDF5 files and Matrix Market folders: each fixture breaks one thing
// and its test checks the exception type and that the message names the object.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include "core/io/RowSource.hpp"
#include "core/io/detail/matrix_market.hpp"
#include "core/io/readers.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/tenx_fixtures.hpp"

namespace fathom {
namespace {

namespace fs = std::filesystem;

/// Opens with content detection and reads every row (some problems show only there).
void open_and_load(const fs::path& path, const io::ReadOptions& options = {}) {
    auto opened = io::open_dataset(path.string(), options);
    opened.source->read_rows(0, opened.source->shape().num_cells);
}

/// Runs `body`, expects io::FormatError whose object() contains `object` (also in
/// what()) and whose what() contains `problem` and the file's name.
void expect_format_error(const std::function<void()>& body, const fs::path& file, const std::string& object,
                         const std::string& problem) {
    try {
        body();
        ADD_FAILURE() << "expected io::FormatError (" << object << ": " << problem << ")";
    } catch (const io::FormatError& error) {
        const std::string message = error.what();
        EXPECT_NE(error.object().find(object), std::string::npos) << "object '" << error.object() << "' in: " << message;
        EXPECT_NE(message.find(object), std::string::npos) << message;
        EXPECT_NE(message.find(problem), std::string::npos) << message;
        EXPECT_NE(message.find(file.filename().string()), std::string::npos) << message;
    }
}

// ---------------------------------------------------------------- 10x HDF5

class TenxH5Malformed : public ::testing::Test {
protected:
    void SetUp() override {
        fixture = test::make_tenx_fixture(12, 9, 1, 1, 0.5);
        group = test::tenx_h5_group(fixture);
        path = test::temp_dir("tenx-malformed") / "broken.h5";
    }
    void write() { test::write_10x_h5_v3(path, group); }
    test::TenxFixture fixture;
    test::TenxH5Group group;
    fs::path path;
};

TEST_F(TenxH5Malformed, MissingIndptr) {
    group.omit.insert("indptr");
    write();
    expect_format_error([&] { open_and_load(path); }, path, "/matrix/indptr", "missing");
}

TEST_F(TenxH5Malformed, IndptrNotMonotonic) {
    ASSERT_GT(group.indptr[6], 0);
    group.indptr[7] = group.indptr[6] - 1;
    write();
    expect_format_error([&] { open_and_load(path); }, path, "/matrix/indptr", "not monotonic");
}

TEST_F(TenxH5Malformed, IndptrEndDisagreesWithData) {
    group.data.push_back(1.0);
    group.indices.push_back(0);
    write();
    expect_format_error([&] { open_and_load(path); }, path, "/matrix/indptr", "ends at");
}

TEST_F(TenxH5Malformed, BarcodesDisagreeWithShape) {
    group.barcodes.pop_back();
    write();
    expect_format_error([&] { open_and_load(path); }, path, "/matrix/barcodes", "has 11 entries; expected 12");
}

TEST_F(TenxH5Malformed, ShapeDisagreesWithIndptr) {
    group.shape[1] = 13;
    write();
    expect_format_error([&] { open_and_load(path); }, path, "/matrix/indptr", "has 13 entries; expected 14");
}

TEST_F(TenxH5Malformed, FeatureTypeLengthMismatch) {
    group.feature_types.pop_back();
    write();
    expect_format_error([&] { open_and_load(path); }, path, "/matrix/features/feature_type", "has 8 entries; expected 9");
}

TEST_F(TenxH5Malformed, IndicesLengthDisagreesWithData) {
    group.indices.pop_back();
    write();
    expect_format_error([&] { open_and_load(path); }, path, "/matrix/indices", "expected");
}

TEST_F(TenxH5Malformed, FeatureIndexOutOfRange) {
    ASSERT_FALSE(group.indices.empty());
    group.indices[3] = 9;
    write();
    io::ReadOptions every;
    every.feature_type = "";  // no selection: the index is met by read_rows
    expect_format_error([&] { open_and_load(path, every); }, path, "/matrix/indices", "outside 0..8");
    // With the default selection the opening pass over the indices meets it.
    expect_format_error([&] { open_and_load(path); }, path, "/matrix/indices", "outside 0..8");
}

TEST_F(TenxH5Malformed, NegativeCount) {
    group.data[2] = -4;
    write();
    expect_format_error([&] { open_and_load(path); }, path, "/matrix/data", "negative");
}

TEST_F(TenxH5Malformed, NotFiniteCount) {
    group.data_as_float64 = true;
    group.data[1] = std::nan("");
    write();
    expect_format_error([&] { open_and_load(path); }, path, "/matrix/data", "not finite");
}

TEST_F(TenxH5Malformed, FeatureListedTwiceInABarcode) {
    // Cell 0 lists its first feature again.
    ASSERT_GE(group.indptr[1], 2);
    group.indices[1] = group.indices[0];
    write();
    expect_format_error([&] { open_and_load(path); }, path, "/matrix/indices", "twice");
}

TEST_F(TenxH5Malformed, MissingFeatureNames) {
    group.omit.insert("features/name");
    write();
    expect_format_error([&] { open_and_load(path); }, path, "/matrix/features/name", "missing");
}

TEST_F(TenxH5Malformed, ShapeOfWrongLength) {
    group.shape.push_back(1);
    write();
    expect_format_error([&] { open_and_load(path); }, path, "/matrix/shape", "has 3 entries; expected 2");
}

TEST_F(TenxH5Malformed, UnknownV2Genome) {
    test::write_10x_h5_v2(path, {{"hg19", group}});
    io::ReadOptions options;
    options.genome = "mm10";
    expect_format_error([&] { open_and_load(path, options); }, path, "/mm10", "the file holds: hg19");
}

TEST_F(TenxH5Malformed, NotHdf5) {
    {
        std::ofstream stream(path);
        stream << "this is not an HDF5 file\n";
    }
    // Content detection finds neither HDF5 nor Matrix Market.
    EXPECT_THROW(io::open_dataset(path.string()), io::FormatError);
    try {
        io::open_dataset(path.string());
    } catch (const io::FormatError& error) {
        EXPECT_EQ(error.file(), path.string());
        EXPECT_NE(std::string(error.what()).find("unrecognised format"), std::string::npos) << error.what();
    }
    // The 10x reader itself says why.
    try {
        io::open_10x_h5(path.string(), {});
        ADD_FAILURE() << "expected FormatError";
    } catch (const io::FormatError& error) {
        EXPECT_EQ(error.file(), path.string());
        EXPECT_NE(std::string(error.what()).find("not an HDF5 file"), std::string::npos) << error.what();
    }
}

TEST_F(TenxH5Malformed, TruncatedFile) {
    write();
    const auto size = fs::file_size(path);
    fs::resize_file(path, size / 2);
    try {
        open_and_load(path);
        ADD_FAILURE() << "expected FormatError";
    } catch (const io::FormatError& error) {
        const std::string message = error.what();
        EXPECT_EQ(error.file(), path.string());
        EXPECT_TRUE(message.find("truncated") != std::string::npos || message.find("unrecognised") != std::string::npos)
            << message;
    }
}

// ---------------------------------------------------------------- Matrix Market

std::vector<std::string> split_lines(const std::string& text) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start < text.size()) {
        const auto end = text.find('\n', start);
        lines.push_back(text.substr(start, end - start));
        start = end == std::string::npos ? text.size() : end + 1;
    }
    return lines;
}

std::string join_lines(const std::vector<std::string>& lines) {
    std::string text;
    for (const auto& line : lines) text += line + "\n";
    return text;
}

/// `line` ("row col value") with its value replaced.
std::string replace_once_value(const std::string& line, const std::string& value) {
    return line.substr(0, line.rfind(' ') + 1) + value;
}

/// A valid CellRanger 3 folder (10 barcodes x 8 features, gzip) whose files tests break.
/// matrix.mtx.gz: line 1 banner, line 2 comment, line 3 size line "8 10 N", entries from line 4.
class MtxMalformed : public ::testing::Test {
protected:
    void SetUp() override {
        fixture = test::make_tenx_fixture(10, 8, 2, 0, 0.5);
        folder = test::temp_dir("mtx-malformed") / "filtered_feature_bc_matrix";
        test::write_mtx_folder(folder, fixture, {});
        lines = split_lines(test::mtx_text(fixture, {}));
        ASSERT_GT(lines.size(), 6u);
    }
    void write_matrix() { test::write_text(folder / "matrix.mtx.gz", join_lines(lines), true); }
    void expect_matrix_error(const std::string& object, const std::string& problem, std::int64_t cache_limit = 64 << 20) {
        expect_format_error(
            [&] {
                io::detail::MatrixMarketTuning tuning;
                tuning.cache_limit_bytes = cache_limit;
                auto opened = io::detail::open_matrix_market(folder.string(), {}, tuning);
                opened.source->read_rows(0, opened.source->shape().num_cells);
            },
            folder, object, problem);
    }
    test::TenxFixture fixture;
    fs::path folder;
    std::vector<std::string> lines;
};

TEST_F(MtxMalformed, BadBanner) {
    lines[0] = "%%MatrixMarket matrix coordinate integer";
    write_matrix();
    expect_matrix_error("matrix.mtx.gz: line 1", "expected the banner");
    lines[0] = "row,col,value";
    write_matrix();
    expect_matrix_error("matrix.mtx.gz: line 1", "found 'row,col,value'");
}

TEST_F(MtxMalformed, UnsupportedFormatAndSymmetry) {
    lines[0] = "%%MatrixMarket matrix array integer general";
    write_matrix();
    expect_matrix_error("matrix.mtx.gz: line 1", "format 'array' is not supported");
    lines[0] = "%%MatrixMarket matrix coordinate integer symmetric";
    write_matrix();
    expect_matrix_error("matrix.mtx.gz: line 1", "symmetry 'symmetric' is not supported");
}

TEST_F(MtxMalformed, BadSizeLine) {
    lines[2] = "8 10";
    write_matrix();
    expect_matrix_error("matrix.mtx.gz: line 3", "expected the size line");
    lines[2] = "8 ten 5";
    write_matrix();
    expect_matrix_error("matrix.mtx.gz: line 3", "expected the size line");
}

TEST_F(MtxMalformed, FewerEntriesThanDeclared) {
    lines.pop_back();
    write_matrix();
    expect_matrix_error("matrix.mtx.gz: line 3", "entries but the file holds");
}

TEST_F(MtxMalformed, MoreEntriesThanDeclared) {
    lines.push_back("1 10 1");
    write_matrix();
    expect_matrix_error("matrix.mtx.gz: line " + std::to_string(lines.size()), "more entries than the");
}

TEST_F(MtxMalformed, IndicesOutOfRange) {
    lines[3] = "40000 1 3";
    write_matrix();
    expect_matrix_error("matrix.mtx.gz: line 4", "row index 40000 outside 1..8");
    lines[3] = "1 11 3";
    write_matrix();
    expect_matrix_error("matrix.mtx.gz: line 4", "column index 11 outside 1..10");
    lines[3] = "0 1 3";
    write_matrix();
    expect_matrix_error("matrix.mtx.gz: line 4", "row index 0 outside 1..8");
}

TEST_F(MtxMalformed, NonNumericValue) {
    lines[4] = "2 1 abc";
    write_matrix();
    expect_matrix_error("matrix.mtx.gz: line 5", "value 'abc' is not a number");
    lines[4] = "2 1 2.5";
    write_matrix();
    expect_matrix_error("matrix.mtx.gz: line 5", "is not an integer");
}

TEST_F(MtxMalformed, WrongFieldCount) {
    lines[5] = "2 1";
    write_matrix();
    expect_matrix_error("matrix.mtx.gz: line 6", "expected 3 fields");
    lines[5] = "2 1 4 4";
    write_matrix();
    expect_matrix_error("matrix.mtx.gz: line 6", "found more");
}

TEST_F(MtxMalformed, NotFiniteValue) {
    lines[0] = "%%MatrixMarket matrix coordinate real general";
    lines[3] = "1 1 nan";
    write_matrix();
    expect_matrix_error("matrix.mtx.gz: line 4", "'nan' is not finite");
    lines[3] = "1 1 -inf";
    write_matrix();
    expect_matrix_error("matrix.mtx.gz: line 4", "'-inf' is not finite");
    lines[3] = "1 1 1e400";
    write_matrix();
    expect_matrix_error("matrix.mtx.gz: line 4", "is not finite");
}

TEST_F(MtxMalformed, NegativeValueInIntegerMatrix) {
    lines[6] = replace_once_value(lines[6], "-3");
    write_matrix();
    expect_matrix_error("matrix.mtx.gz: line 7", "negative value -3");
}

TEST_F(MtxMalformed, DuplicateEntrySortedFileAtOpen) {
    lines.push_back(lines.back());
    lines[2] = "8 10 " + std::to_string(lines.size() - 3);
    write_matrix();
    const auto last = std::to_string(lines.size());
    expect_matrix_error("matrix.mtx.gz: line " + last, "duplicate entry");
    expect_matrix_error("matrix.mtx.gz: line " + last, "also on line " + std::to_string(lines.size() - 1), 0);
}

TEST_F(MtxMalformed, DuplicateEntryShuffledFileStreaming) {
    // Unsorted by cell: the duplicate is found when the rows are gathered.
    lines.insert(lines.begin() + 3, lines.back());
    lines[2] = "8 10 " + std::to_string(lines.size() - 3);
    write_matrix();
    for (std::int64_t cache : {0, 64 << 20}) {
        expect_matrix_error("matrix.mtx.gz: line " + std::to_string(lines.size()), "duplicate entry", cache);
        expect_matrix_error("matrix.mtx.gz: line", "also on line 4", cache);
    }
}

TEST_F(MtxMalformed, BarcodesCountDisagrees) {
    std::string barcodes;
    for (std::size_t cell = 0; cell + 1 < fixture.barcodes.size(); ++cell) barcodes += fixture.barcodes[cell] + "\n";
    test::write_text(folder / "barcodes.tsv.gz", barcodes, true);
    expect_matrix_error("barcodes.tsv.gz", "has 9 barcodes; matrix.mtx.gz declares 8 x 10");
}

TEST_F(MtxMalformed, FeaturesCountDisagrees) {
    test::write_text(folder / "features.tsv.gz", "ENSG1\tA\tGene Expression\n", true);
    expect_matrix_error("features.tsv.gz", "has 1 features");
}

TEST_F(MtxMalformed, FeaturesLineWithTooFewColumns) {
    auto features = split_lines(test::read_text(folder / "features.tsv.gz"));
    features[4] = "ENSG_ONLY";
    test::write_text(folder / "features.tsv.gz", join_lines(features), true);
    expect_matrix_error("features.tsv.gz: line 5", "expected at least 2 tab-separated columns");
}

TEST_F(MtxMalformed, MissingBarcodesFile) {
    fs::remove(folder / "barcodes.tsv.gz");
    expect_matrix_error("barcodes.tsv.gz", "missing");
}

TEST_F(MtxMalformed, MissingFeaturesFile) {
    fs::remove(folder / "features.tsv.gz");
    expect_matrix_error("features.tsv.gz", "missing");
}

TEST_F(MtxMalformed, TruncatedGzip) {
    // Enough entries that the cut falls inside the deflate stream.
    fixture = test::make_tenx_fixture(400, 200, 3, 0, 0.3);
    test::write_mtx_folder(folder, fixture, {});
    const auto path = folder / "matrix.mtx.gz";
    fs::resize_file(path, fs::file_size(path) * 2 / 3);
    expect_matrix_error("matrix.mtx.gz", "truncated gzip stream");
}

TEST_F(MtxMalformed, CorruptGzip) {
    fixture = test::make_tenx_fixture(400, 200, 3, 0, 0.3);
    test::write_mtx_folder(folder, fixture, {});
    const auto path = folder / "matrix.mtx.gz";
    std::fstream stream(path, std::ios::in | std::ios::out | std::ios::binary);
    stream.seekp(static_cast<std::streamoff>(fs::file_size(path) / 2));
    const char garbage[64] = "garbage garbage garbage garbage garbage garbage garbage garbag";
    stream.write(garbage, sizeof garbage);
    stream.close();
    try {
        auto opened = io::open_dataset(folder.string());
        opened.source->read_rows(0, opened.source->shape().num_cells);
        ADD_FAILURE() << "expected FormatError";
    } catch (const io::FormatError& error) {
        // zlib hands back garbled text before it detects the damage; the reader then
        // reports the damage, not the parse error it caused.
        EXPECT_NE(error.object().find("matrix.mtx.gz"), std::string::npos) << error.what();
        EXPECT_NE(std::string(error.what()).find("corrupt gzip stream"), std::string::npos) << error.what();
    }
}

TEST(MtxFileMalformed, GzipFileWithBadBannerIsRejectedClearly) {
    const auto folder = test::temp_dir("mtx-file-malformed");
    const auto named = folder / "counts.mtx.gz";
    test::write_text(named, "%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 1 1 0\n", true);
    expect_format_error([&] { open_and_load(named); }, named, "line 1", "field 'complex' is not supported");
    test::write_text(named, "gene,cell,count\n1,1,1\n", true);
    expect_format_error([&] { open_and_load(named); }, named, "line 1", "expected the banner");
    // Not named .mtx and no banner: content detection gives up with a clear message.
    const auto anonymous = folder / "counts.gz";
    test::write_text(anonymous, "gene,cell,count\n1,1,1\n", true);
    try {
        io::open_dataset(anonymous.string());
        ADD_FAILURE() << "expected FormatError";
    } catch (const io::FormatError& error) {
        EXPECT_EQ(error.file(), anonymous.string());
        EXPECT_NE(std::string(error.what()).find("neither HDF5"), std::string::npos) << error.what();
    }
}

TEST(MtxFileMalformed, EmptyFileAndMissingSizeLine) {
    const auto folder = test::temp_dir("mtx-file-empty");
    const auto empty = folder / "empty.mtx";
    test::write_text(empty, "", false);
    expect_format_error([&] { open_and_load(empty); }, empty, "line 1", "empty file");
    const auto headless = folder / "headless.mtx";
    test::write_text(headless, "%%MatrixMarket matrix coordinate integer general\n% only comments\n", false);
    expect_format_error([&] { open_and_load(headless); }, headless, "line 3", "file ends before the size line");
}

}  // namespace
}  // namespace fathom
