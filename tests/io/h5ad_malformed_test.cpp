// Malformed h5ad corpus: each fixture is a valid small file with one thing broken
// (tests/support/h5ad_fixtures), and each test checks the error type and that the
// message names the file and the object at fault.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <limits>

#include "core/io/RowSource.hpp"
#include "core/io/errors.hpp"
#include "core/io/readers.hpp"
#include "tests/support/h5ad_fixtures.hpp"
#include "tests/support/paths.hpp"

namespace fathom {
namespace {

using test::H5adGeneration;
using test::H5adLayout;

constexpr std::int64_t kCells = 6;
constexpr std::int64_t kGenes = 5;

/// A valid file and the CSR arrays of its X, ready to be broken.
struct Baseline {
    std::filesystem::path path;
    test::H5adFixture fixture;
    std::vector<std::int64_t> indptr;
    std::vector<std::int32_t> indices;
    std::vector<float> data;
};

Baseline make_baseline(const std::string& label, H5adLayout layout = H5adLayout::Csr) {
    Baseline baseline;
    baseline.fixture = test::make_h5ad_fixture(kCells, kGenes, H5adGeneration::Modern, 21);
    baseline.fixture.x.layout = layout;
    baseline.path = test::temp_dir("h5ad-bad-" + label) / "bad.h5ad";
    test::write_h5ad_fixture(baseline.path, baseline.fixture);
    const CsrShard csr = test::dense_to_csr(baseline.fixture.x.values, 0, kCells);
    baseline.indptr = csr.row_offsets;
    baseline.indices = csr.gene_indices;
    baseline.data = csr.values;
    return baseline;
}

/// Opens the file and reads every row; must throw FormatError naming `object`, with
/// `fragment` in the message.
void expect_format_error(const std::filesystem::path& path, const std::string& object, const std::string& fragment,
                         const io::ReadOptions& options = {}) {
    try {
        auto opened = io::open_h5ad(path.string(), options);
        opened.source->read_rows(0, opened.meta.shape.num_cells);
        ADD_FAILURE() << "expected a FormatError naming " << object;
    } catch (const io::FormatError& error) {
        const std::string message = error.what();
        EXPECT_EQ(error.file(), path.string());
        EXPECT_EQ(error.object(), object) << message;
        EXPECT_NE(message.find(path.string()), std::string::npos) << message;
        if (!object.empty()) {
            EXPECT_NE(message.find(object), std::string::npos) << message;
        }
        EXPECT_NE(message.find(fragment), std::string::npos) << "missing '" << fragment << "' in: " << message;
    }
}

// A row of the baseline with at least two stored entries.
std::int64_t row_with_two_entries(const Baseline& baseline) {
    for (std::int64_t row = 0; row < kCells; ++row)
        if (baseline.indptr[static_cast<std::size_t>(row + 1)] - baseline.indptr[static_cast<std::size_t>(row)] >= 2)
            return row;
    throw std::logic_error("fixture has no row with two entries");
}

// ---------------------------------------------------------------- CSR structure

TEST(H5adMalformed, MissingIndptr) {
    auto baseline = make_baseline("no-indptr");
    test::h5_remove(baseline.path, "/X/indptr");
    expect_format_error(baseline.path, "/X/indptr", "missing");
}

TEST(H5adMalformed, MissingData) {
    auto baseline = make_baseline("no-data");
    test::h5_remove(baseline.path, "/X/data");
    expect_format_error(baseline.path, "/X/data", "missing");
}

TEST(H5adMalformed, IndptrWrongRank) {
    auto baseline = make_baseline("indptr-rank");
    test::h5_replace_dataset(baseline.path, "/X/indptr", {kCells + 1, 1}, baseline.indptr);
    expect_format_error(baseline.path, "/X/indptr", "rank 2");
}

TEST(H5adMalformed, DenseXWrongRank) {
    auto baseline = make_baseline("dense-rank");
    test::h5_remove(baseline.path, "/X");
    test::h5_replace_dataset(baseline.path, "/X", {kCells, kGenes, 1},
                             std::vector<float>(static_cast<std::size_t>(kCells * kGenes), 1.0f));
    expect_format_error(baseline.path, "/X", "rank 3");
}

TEST(H5adMalformed, IndptrWrongDtype) {
    auto baseline = make_baseline("indptr-dtype");
    test::h5_replace_dataset(baseline.path, "/X/indptr", {kCells + 1},
                             std::vector<double>(baseline.indptr.begin(), baseline.indptr.end()));
    expect_format_error(baseline.path, "/X/indptr", "integer dtype");
}

TEST(H5adMalformed, IndptrTooLong) {
    auto baseline = make_baseline("indptr-long");
    auto indptr = baseline.indptr;
    indptr.push_back(indptr.back());
    test::h5_replace_dataset(baseline.path, "/X/indptr", {kCells + 2}, indptr);
    expect_format_error(baseline.path, "/X/indptr", "has 8 entries; expected n_obs + 1 = 7");
}

TEST(H5adMalformed, IndptrTooShort) {
    auto baseline = make_baseline("indptr-short");
    auto indptr = baseline.indptr;
    indptr.pop_back();
    test::h5_replace_dataset(baseline.path, "/X/indptr", {kCells}, indptr);
    expect_format_error(baseline.path, "/X/indptr", "expected n_obs + 1");
}

TEST(H5adMalformed, IndptrNotStartingAtZero) {
    auto baseline = make_baseline("indptr-start");
    auto indptr = baseline.indptr;
    indptr[0] = 1;
    test::h5_replace_dataset(baseline.path, "/X/indptr", {kCells + 1}, indptr);
    expect_format_error(baseline.path, "/X/indptr", "starts at 1");
}

TEST(H5adMalformed, IndptrNotMonotonic) {
    auto baseline = make_baseline("indptr-order");
    auto indptr = baseline.indptr;
    // Row 1 is empty (indptr[1] == indptr[2]); raising indptr[1] makes entry 2 decrease.
    ASSERT_EQ(indptr[1], indptr[2]);
    indptr[1] += 1;
    test::h5_replace_dataset(baseline.path, "/X/indptr", {kCells + 1}, indptr);
    expect_format_error(baseline.path, "/X/indptr", "decreases at entry 2");
}

TEST(H5adMalformed, IndptrNotEndingAtNnz) {
    auto baseline = make_baseline("indptr-end");
    auto indptr = baseline.indptr;
    indptr.back() -= 1;
    test::h5_replace_dataset(baseline.path, "/X/indptr", {kCells + 1}, indptr);
    expect_format_error(baseline.path, "/X/indptr", "ends at " + std::to_string(indptr.back()));
}

TEST(H5adMalformed, HugeInt64IndptrIsRejectedNotOverflowed) {
    // indptr values beyond 2^31 (int64 offsets) without that many stored values: the
    // check compares int64 offsets with len(indices) and allocates nothing for them.
    auto baseline = make_baseline("indptr-huge");
    const std::int64_t huge = (std::int64_t{1} << 31) + 5;
    std::vector<std::int64_t> indptr(kCells + 1, huge);
    indptr[0] = 0;
    test::h5_replace_dataset(baseline.path, "/X/indptr", {kCells + 1}, indptr);
    expect_format_error(baseline.path, "/X/indptr",
                        "ends at 2147483653; expected len(/X/indices) = " + std::to_string(baseline.indices.size()));
    // Near INT64_MAX: still a clean rejection.
    indptr.assign(kCells + 1, std::numeric_limits<std::int64_t>::max());
    indptr[0] = 0;
    test::h5_replace_dataset(baseline.path, "/X/indptr", {kCells + 1}, indptr);
    expect_format_error(baseline.path, "/X/indptr", "ends at 9223372036854775807");
}

TEST(H5adMalformed, DataShorterThanIndices) {
    auto baseline = make_baseline("data-short");
    auto data = baseline.data;
    data.pop_back();
    test::h5_replace_dataset(baseline.path, "/X/data", {static_cast<std::int64_t>(data.size())}, data);
    expect_format_error(baseline.path, "/X/data", "expected len(/X/indices)");
}

// ---------------------------------------------------------------- entries (checked in read_rows)

TEST(H5adMalformed, IndexOutOfRange) {
    auto baseline = make_baseline("index-range");
    auto indices = baseline.indices;
    indices[1] = static_cast<std::int32_t>(kGenes);
    test::h5_replace_dataset(baseline.path, "/X/indices", {static_cast<std::int64_t>(indices.size())}, indices);
    expect_format_error(baseline.path, "/X/indices", "outside [0, n_vars = 5)");
}

TEST(H5adMalformed, NegativeIndex) {
    auto baseline = make_baseline("index-negative");
    auto indices = baseline.indices;
    indices[0] = -1;
    test::h5_replace_dataset(baseline.path, "/X/indices", {static_cast<std::int64_t>(indices.size())}, indices);
    expect_format_error(baseline.path, "/X/indices", "is -1, outside");
}

TEST(H5adMalformed, Int64IndexBeyondInt32) {
    auto baseline = make_baseline("index-int64");
    std::vector<std::int64_t> indices(baseline.indices.begin(), baseline.indices.end());
    indices[2] = std::int64_t{1} << 33;
    test::h5_replace_dataset(baseline.path, "/X/indices", {static_cast<std::int64_t>(indices.size())}, indices);
    expect_format_error(baseline.path, "/X/indices", "outside [0, n_vars = 5)");
}

TEST(H5adMalformed, DuplicateIndexInRow) {
    auto baseline = make_baseline("index-duplicate");
    auto indices = baseline.indices;
    const std::int64_t row = row_with_two_entries(baseline);
    const auto first = static_cast<std::size_t>(baseline.indptr[static_cast<std::size_t>(row)]);
    indices[first + 1] = indices[first];
    test::h5_replace_dataset(baseline.path, "/X/indices", {static_cast<std::int64_t>(indices.size())}, indices);
    expect_format_error(baseline.path, "/X/indices", "row " + std::to_string(row) + " holds gene index");
}

TEST(H5adMalformed, NaNValue) {
    auto baseline = make_baseline("nan");
    auto data = baseline.data;
    data[3] = std::numeric_limits<float>::quiet_NaN();
    test::h5_replace_dataset(baseline.path, "/X/data", {static_cast<std::int64_t>(data.size())}, data);
    expect_format_error(baseline.path, "/X/data", "value NaN at entry 3");
}

TEST(H5adMalformed, InfValue) {
    auto baseline = make_baseline("inf");
    auto data = baseline.data;
    data.back() = -std::numeric_limits<float>::infinity();
    test::h5_replace_dataset(baseline.path, "/X/data", {static_cast<std::int64_t>(data.size())}, data);
    expect_format_error(baseline.path, "/X/data", "value Inf");
}

TEST(H5adMalformed, Float64BeyondFloat32RangeIsRejectedAsInf) {
    auto baseline = make_baseline("f64-range");
    std::vector<double> data(baseline.data.begin(), baseline.data.end());
    data[0] = 1e300;
    test::h5_replace_dataset(baseline.path, "/X/data", {static_cast<std::int64_t>(data.size())}, data);
    expect_format_error(baseline.path, "/X/data", "value Inf at entry 0");
}

TEST(H5adMalformed, CscRowIndexOutOfRange) {
    auto baseline = make_baseline("csc-range", H5adLayout::Csc);
    // CSC indices are cells, stored column by column; the first becomes n_obs.
    std::vector<std::int32_t> cells;
    for (std::int64_t gene = 0; gene < kGenes; ++gene)
        for (std::int64_t cell = 0; cell < kCells; ++cell)
            if (baseline.fixture.x.values(cell, gene) != 0.0f) cells.push_back(static_cast<std::int32_t>(cell));
    cells[0] = static_cast<std::int32_t>(kCells);
    test::h5_replace_dataset(baseline.path, "/X/indices", {static_cast<std::int64_t>(cells.size())}, cells);
    expect_format_error(baseline.path, "/X/indices", "outside [0, n_obs = 6)");
}

TEST(H5adMalformed, CscDuplicateCellInColumn) {
    auto baseline = make_baseline("csc-duplicate", H5adLayout::Csc);
    std::vector<std::int32_t> cells;
    std::vector<std::int64_t> column_offsets{0};
    for (std::int64_t gene = 0; gene < kGenes; ++gene) {
        for (std::int64_t cell = 0; cell < kCells; ++cell)
            if (baseline.fixture.x.values(cell, gene) != 0.0f) cells.push_back(static_cast<std::int32_t>(cell));
        column_offsets.push_back(static_cast<std::int64_t>(cells.size()));
    }
    // The first column with two entries gets its first cell twice.
    for (std::int64_t gene = 0; gene < kGenes; ++gene) {
        const auto lo = static_cast<std::size_t>(column_offsets[static_cast<std::size_t>(gene)]);
        if (column_offsets[static_cast<std::size_t>(gene + 1)] - column_offsets[static_cast<std::size_t>(gene)] >= 2) {
            cells[lo + 1] = cells[lo];
            break;
        }
    }
    test::h5_replace_dataset(baseline.path, "/X/indices", {static_cast<std::int64_t>(cells.size())}, cells);
    expect_format_error(baseline.path, "/X/indices", "twice");
}

TEST(H5adMalformed, DenseNaNValue) {
    auto baseline = make_baseline("dense-nan", H5adLayout::Dense);
    std::vector<float> values = baseline.fixture.x.values.values();
    values[7] = std::numeric_limits<float>::quiet_NaN();
    test::h5_replace_dataset(baseline.path, "/X", {kCells, kGenes}, values);
    expect_format_error(baseline.path, "/X", "value NaN at row 1, column 2");
}

// ---------------------------------------------------------------- shape

TEST(H5adMalformed, NegativeShape) {
    auto baseline = make_baseline("shape-negative");
    test::h5_replace_int64_attribute(baseline.path, "/X", "shape", {-6, 5});
    expect_format_error(baseline.path, "/X", "negative shape (-6, 5)");
}

TEST(H5adMalformed, ShapeDisagreesWithObs) {
    auto baseline = make_baseline("shape-obs");
    test::h5_replace_int64_attribute(baseline.path, "/X", "shape", {kCells + 1, kGenes});
    expect_format_error(baseline.path, "/X", "disagrees with /obs: 6 cells there, 7 rows");
}

TEST(H5adMalformed, ShapeDisagreesWithVar) {
    auto baseline = make_baseline("shape-var");
    test::h5_replace_int64_attribute(baseline.path, "/X", "shape", {kCells, kGenes - 1});
    expect_format_error(baseline.path, "/X", "disagrees with /var");
}

TEST(H5adMalformed, ShapeProductOverflows) {
    auto baseline = make_baseline("shape-overflow");
    test::h5_replace_int64_attribute(baseline.path, "/X", "shape", {std::int64_t{1} << 62, 4});
    expect_format_error(baseline.path, "/X", "cells x genes overflows int64");
}

TEST(H5adMalformed, ShapeAttributeWrongLength) {
    auto baseline = make_baseline("shape-missing");
    test::h5_replace_int64_attribute(baseline.path, "/X", "shape", {kCells});
    expect_format_error(baseline.path, "/X", "attribute 'shape' has 1 entries");
}

TEST(H5adMalformed, EmptyMatrixZeroCells) {
    auto baseline = make_baseline("empty-cells");
    test::h5_replace_int64_attribute(baseline.path, "/X", "shape", {0, kGenes});
    expect_format_error(baseline.path, "/X", "empty matrix: 0 cells x 5 genes");
}

TEST(H5adMalformed, EmptyMatrixZeroGenesDense) {
    auto baseline = make_baseline("empty-genes");
    test::h5_remove(baseline.path, "/X");
    test::h5_replace_dataset(baseline.path, "/X", {kCells, 0}, std::vector<float>{});
    expect_format_error(baseline.path, "/X", "empty matrix: 6 cells x 0 genes");
}

TEST(H5adMalformed, UnsupportedMatrixEncoding) {
    auto baseline = make_baseline("encoding");
    test::h5_replace_string_attribute(baseline.path, "/X", "encoding-type", "coo_matrix");
    expect_format_error(baseline.path, "/X", "unsupported matrix encoding-type 'coo_matrix'");
}

// ---------------------------------------------------------------- annotations

TEST(H5adMalformed, CategoricalCodesOutOfRange) {
    auto baseline = make_baseline("codes");
    std::vector<std::int32_t> codes(kCells, 0);
    codes[4] = 3;  // three categories: B, T, NK
    test::h5_replace_dataset(baseline.path, "/obs/cell_type/codes", {kCells}, codes);
    expect_format_error(baseline.path, "/obs/cell_type/codes", "code 3 at row 4 outside [-1, 3)");
}

TEST(H5adMalformed, ColumnLengthDiffersFromIndex) {
    auto baseline = make_baseline("column-length");
    test::h5_replace_dataset(baseline.path, "/obs/score", {kCells - 1}, std::vector<double>(kCells - 1, 0.5));
    expect_format_error(baseline.path, "/obs/score", "has 5 rows; expected 6");
}

TEST(H5adMalformed, ColumnListedButMissing) {
    auto baseline = make_baseline("column-missing");
    test::h5_remove(baseline.path, "/obs/label");
    expect_format_error(baseline.path, "/obs/label", "missing (listed in the column-order of /obs)");
}

TEST(H5adMalformed, IndexDatasetMissing) {
    auto baseline = make_baseline("index-missing");
    test::h5_remove(baseline.path, "/var/_index");
    expect_format_error(baseline.path, "/var/_index", "missing");
}

TEST(H5adMalformed, ObsmEntryWithWrongRowCount) {
    auto baseline = make_baseline("obsm-rows");
    test::h5_replace_dataset(baseline.path, "/obsm/X_pca", {kCells - 1, 2}, std::vector<float>((kCells - 1) * 2, 1.0f));
    expect_format_error(baseline.path, "/obsm/X_pca", "has 5 rows; expected 6");
    io::ReadOptions lean;
    lean.read_annotations = false;  // obsm is not read: the file opens
    EXPECT_NO_THROW(io::open_h5ad(baseline.path.string(), lean));
}

TEST(H5adMalformed, ObspGraphNotSquare) {
    auto baseline = make_baseline("obsp-shape");
    test::h5_replace_int64_attribute(baseline.path, "/obsp/distances", "shape", {kCells, kCells - 1});
    expect_format_error(baseline.path, "/obsp/distances", "obsp graphs are cells x cells");
}

// ---------------------------------------------------------------- whole file

TEST(H5adMalformed, TruncatedFile) {
    auto baseline = make_baseline("truncated");
    const auto size = std::filesystem::file_size(baseline.path);
    test::truncate_file(baseline.path, size / 2);
    expect_format_error(baseline.path, "", "truncated");
}

TEST(H5adMalformed, NotAnHdf5File) {
    const auto path = test::temp_dir("h5ad-bad-text") / "fake.h5ad";
    std::ofstream(path) << "this is not HDF5\n";
    expect_format_error(path, "", "not an HDF5 file");
    EXPECT_THROW(io::open_dataset(path.string()), io::FormatError);
}

TEST(H5adMalformed, MissingFileIsAReadError) {
    const auto path = test::temp_dir("h5ad-bad-missing") / "absent.h5ad";
    EXPECT_THROW(io::open_h5ad(path.string(), {}), io::ReadError);
}

}  // namespace
}  // namespace fathom
