#pragma once
/// Dataset metadata and the small host-side annotations (obs, var, obsm, varm, uns).
#include <cstdint>
#include <map>
#include <string>

#include "core/data/CsrShard.hpp"
#include "core/data/Table.hpp"
#include "core/data/Uns.hpp"
#include "core/types/DenseMatrix.hpp"

namespace fathom {

/// On-disk formats Fathom reads.
enum class DatasetFormat { H5ad, TenxH5V3, TenxH5V2, MatrixMarketFolder, MatrixMarketFile, Loom };

/// "h5ad", "10x-h5 (v3)", "10x-h5 (v2)", "10x-mtx", "mtx", "loom".
const char* format_name(DatasetFormat format) noexcept;

/// How the matrix values are stored in the file.
enum class ValueType { Float32, Float64, Int32, Int64, Other };
const char* value_type_name(ValueType type) noexcept;

/// Everything about a dataset except the expression matrix, which stays in shards
/// (see io::RowSource and ShardedCsr). Cells x genes.
struct Dataset {
    std::string path;                 ///< file or folder the dataset was read from
    DatasetFormat format = DatasetFormat::H5ad;
    MatrixShape shape;                ///< cells x genes of the matrix that was opened
    std::int64_t nnz = 0;             ///< stored non-zeros of that matrix
    ValueType stored_type = ValueType::Float32;
    bool integer_counts = false;      ///< every stored value is a non-negative integer (when known)
    bool integer_counts_known = false;///< false when the reader did not scan the values
    std::string matrix_layout;        ///< "csr", "csc" or "dense" as stored
    std::string matrix_name;          ///< "X", "raw/X", "layers/<name>", "/matrix", "/<genome>"
    /// Var names that io::ReadOptions::make_var_names_unique renamed (anndata's
    /// var_names_make_unique: the second LTB became LTB-1); 0 when off or none repeated.
    std::int64_t num_var_names_made_unique = 0;

    Table obs;                        ///< one row per cell; index = barcodes
    Table var;                        ///< one row per gene; index = gene names
    std::map<std::string, DenseMatrix<float>> obsm;  ///< cells x k each (X_pca, X_umap, ...)
    std::map<std::string, DenseMatrix<float>> varm;  ///< genes x k each (PCs, ...)
    /// cells x cells sparse graphs (obsp['distances'], obsp['connectivities']) as square
    /// CSR (num_genes of the shard = number of cells).
    std::map<std::string, CsrShard> obsp;
    UnsNode uns;                      ///< unstructured annotations (a dictionary)
};

}  // namespace fathom
