#pragma once
/// Generators of small 10x Genomics inputs (HDF5 v3 / v2, Matrix Market folders and
/// files, gzip or plain) for the reader tests, valid or deliberately malformed.
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "core/data/CsrShard.hpp"

namespace fathom::test {

/// A small features x barcodes count matrix with its 10x annotations, held per cell.
struct TenxFixture {
    std::vector<std::string> barcodes;       ///< one per cell
    std::vector<std::string> feature_ids;    ///< one per feature
    std::vector<std::string> feature_names;  ///< one per feature (duplicates allowed)
    std::vector<std::string> feature_types;  ///< "Gene Expression" or "Antibody Capture"
    std::vector<std::string> genomes;        ///< one per feature
    /// Per cell: (feature index, count) in the order they are written (not sorted).
    std::vector<std::vector<std::pair<std::int64_t, double>>> cells;

    std::int64_t num_cells() const { return static_cast<std::int64_t>(barcodes.size()); }
    std::int64_t num_features() const { return static_cast<std::int64_t>(feature_ids.size()); }
};

/// Random counts (1..20, about `density` of the cells x features), entries of a cell in
/// shuffled feature order, some empty cells, the last `num_antibody` features of type
/// "Antibody Capture", one duplicated gene name, features split between two genomes
/// ("GRCh38" then "mm10", the second half) when `two_genomes`.
TenxFixture make_tenx_fixture(std::int64_t num_cells, std::int64_t num_features, std::uint64_t seed,
                              std::int64_t num_antibody = 2, double density = 0.3, bool two_genomes = false);

/// Stored feature indices kept by a feature-type (empty = all) and genome (empty = all) selection.
std::vector<std::int64_t> kept_features(const TenxFixture& fixture, const std::string& feature_type,
                                        const std::string& genome = {});

/// The cells x genes CSR the readers must return for that selection (sorted rows).
CsrShard expected_csr(const TenxFixture& fixture, const std::string& feature_type, const std::string& genome = {});

/// Raw datasets of one 10x HDF5 matrix group, editable before writing so that tests
/// can break one thing at a time.
struct TenxH5Group {
    std::vector<double> data;                ///< written as int32 unless data_as_float64
    bool data_as_float64 = false;            ///< Space Ranger 1.0 writes float64 data
    std::vector<std::int64_t> indices;       ///< int64
    std::vector<std::int64_t> indptr;        ///< int64
    std::vector<std::int64_t> shape;         ///< int32 [features, barcodes]
    std::vector<std::string> barcodes, ids, names, feature_types, genomes;
    /// Datasets (relative to the group, e.g. "indptr", "features/feature_type") not written.
    std::set<std::string> omit;
};

/// The group content of a fixture (all features).
TenxH5Group tenx_h5_group(const TenxFixture& fixture);

/// CellRanger v3 layout: /matrix/{data, indices, indptr, shape, barcodes, features/...}.
void write_10x_h5_v3(const std::filesystem::path& path, const TenxH5Group& group);

/// CellRanger v2 layout: one group per genome with {data, indices, indptr, shape,
/// barcodes, genes (= ids), gene_names (= names)}.
void write_10x_h5_v2(const std::filesystem::path& path, const std::vector<std::pair<std::string, TenxH5Group>>& genomes);

/// How to write a Matrix Market folder.
struct MtxFolderOptions {
    bool gzip = true;              ///< *.gz files (CellRanger 3+); plain for v2
    bool legacy_genes_tsv = false; ///< genes.tsv (id, name) instead of features.tsv (id, name, type)
    bool shuffle_entries = false;  ///< entries not grouped by cell
    bool real_field = false;       ///< "real" banner, values written with a decimal point
};

/// matrix.mtx text for the fixture (features x barcodes, as CellRanger writes it).
std::string mtx_text(const TenxFixture& fixture, const MtxFolderOptions& options, std::uint64_t seed = 1);

/// Writes matrix.mtx[.gz], barcodes.tsv[.gz], features.tsv[.gz] / genes.tsv into `folder`.
void write_mtx_folder(const std::filesystem::path& folder, const TenxFixture& fixture, const MtxFolderOptions& options);

/// Writes `text` to `path`, gzip-compressed when `gzip`.
void write_text(const std::filesystem::path& path, const std::string& text, bool gzip);

/// `path`'s content (gunzipped when gzip) as one string.
std::string read_text(const std::filesystem::path& path);

/// Replaces the first occurrence of `from` in `text` (throws when absent).
std::string replace_once(std::string text, const std::string& from, const std::string& to);

/// Success when both shards have the same rows, offsets, gene indices and values
/// (exactly); otherwise names the first difference. row_begin is not compared.
::testing::AssertionResult same_csr(const CsrShard& actual, const CsrShard& expected);

}  // namespace fathom::test
