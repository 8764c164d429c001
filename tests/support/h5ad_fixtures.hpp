#pragma once
/// Generators of small h5ad files (HDF5 C API) for the reader tests: valid files in
/// the three generations of anndata's layout (0.8+ encoding-type elements, 0.7.x with
/// referenced __categories, pre-0.7 compound datasets) and in-place mutations that
/// break one thing at a time for the malformed corpus.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/data/CsrShard.hpp"
#include "core/data/Table.hpp"
#include "core/data/Uns.hpp"
#include "core/types/DenseMatrix.hpp"

namespace fathom::test {

/// How a matrix element is stored.
enum class H5adLayout { Csr, Csc, Dense };

/// Which generation of anndata's encodings the writer uses.
enum class H5adGeneration {
    Modern,    ///< anndata 0.8+: encoding-type / encoding-version on every element
    Legacy07,  ///< anndata 0.7.x: categoricals as codes + reference to __categories/<name>
    PreV07     ///< anndata < 0.7: obs / var / obsm / varm as compound datasets, raw.X with
               ///< h5sparse attributes, categories in uns["<column>_categories"]
};

/// One matrix element to write.
struct H5adMatrix {
    DenseMatrix<float> values;            ///< cells x genes; zeros are not stored by sparse layouts
    H5adLayout layout = H5adLayout::Csr;
    std::string dtype = "float32";        ///< data dtype: float32, float64, int32, int64
    bool int64_index = false;             ///< indptr / indices as int64 (else int32)
    bool reverse_rows = false;            ///< CSR: entries of each row written in decreasing gene order
};

/// A small AnnData to write.
struct H5adFixture {
    H5adGeneration generation = H5adGeneration::Modern;
    bool write_x = true;                  ///< false: no X at all (anndata X = None)
    H5adMatrix x;
    Table obs;                            ///< index + columns (types decide the encodings)
    Table var;
    /// Column dtype overrides for IntColumn (no missing): "uint8", "int8", "int32".
    std::map<std::string, std::string> int_dtypes;
    bool write_raw = false;
    H5adMatrix raw_x;                     ///< written as CSR (h5sparse for PreV07)
    Table raw_var;
    std::map<std::string, H5adMatrix> layers;  ///< not for PreV07
    std::map<std::string, DenseMatrix<float>> obsm;
    std::map<std::string, DenseMatrix<float>> varm;
    /// Non-dense obsm entries the reader must skip (a CSR group and a dataframe);
    /// not for PreV07.
    bool obsm_extras = true;
    /// cells x cells graphs written under /obsp (not for PreV07).
    std::map<std::string, H5adMatrix> obsp;
    UnsNode uns;                          ///< written recursively (dict -> group)
    /// Entries the reader must skip in uns: `uns_graph` at uns/neighbors/connectivities
    /// (the pre-0.8 place of the kNN graph, which anndata moves to obsp) and a
    /// categorical (Modern).
    bool uns_extras = true;
    H5adMatrix uns_graph;                 ///< cells x cells, CSR
};

/// Deterministic cells x genes integer counts (about 30% non-zero, values 1..9):
/// row 1 and the last gene are all zeros.
DenseMatrix<float> make_counts(std::int64_t num_cells, std::int64_t num_genes, std::uint64_t seed);

/// A complete fixture of that generation: X (CSR by default), obs / var with one
/// column of every encoding that generation can store, obsm X_pca / X_umap, varm PCs,
/// a small uns tree (Modern / Legacy07). `num_cells` >= 4, `num_genes` >= 3.
H5adFixture make_h5ad_fixture(std::int64_t num_cells, std::int64_t num_genes, H5adGeneration generation,
                              std::uint64_t seed = 1);

/// Writes the fixture (truncating `path`).
void write_h5ad_fixture(const std::filesystem::path& path, const H5adFixture& fixture);

/// The CSR (sorted rows) of rows [begin, end) of a dense matrix, zeros dropped.
CsrShard dense_to_csr(const DenseMatrix<float>& values, std::int64_t begin, std::int64_t end);

// ---- mutations for malformed fixtures (open the file read-write, change one thing) ----

/// Deletes the link `object` (dataset or group).
void h5_remove(const std::filesystem::path& path, const std::string& object);
/// Replaces (or creates) a dataset with the given dims (empty dims = scalar) and values;
/// T is float, double, std::int32_t or std::int64_t.
template <typename T>
void h5_replace_dataset(const std::filesystem::path& path, const std::string& object,
                        const std::vector<std::int64_t>& dims, const std::vector<T>& values);
/// Replaces (or creates) an int64 array attribute.
void h5_replace_int64_attribute(const std::filesystem::path& path, const std::string& object, const std::string& name,
                                const std::vector<std::int64_t>& values);
/// Replaces (or creates) a scalar string attribute.
void h5_replace_string_attribute(const std::filesystem::path& path, const std::string& object,
                                 const std::string& name, const std::string& value);
/// Cuts the file to `size` bytes.
void truncate_file(const std::filesystem::path& path, std::uintmax_t size);

/// gtest expectations that two tables have the same index and the same typed columns
/// in the same order (floats compared exactly: they round-trip through the file).
void expect_tables_equal(const Table& actual, const Table& expected);

}  // namespace fathom::test
