#pragma once
/// Per-format entry points behind io::open_dataset. Prefer open_dataset, which
/// detects the format by content.
#include <string>

#include "core/io/RowSource.hpp"

namespace fathom::io {

/// An HDF5 file: loom (a /matrix dataset with /row_attrs or /col_attrs), h5ad (has /X
/// or encoding-type at the root or obs/var groups), 10x v3 (/matrix group) or 10x v2
/// (top-level genome groups with indptr).
/// Throws FormatError when the layout is none of these.
DatasetFormat detect_hdf5_layout(const std::string& path);

/// h5ad as written by anndata 0.7 to 0.11 (and the pre-0.7 legacy layouts).
/// Unsorted gene indices within a row are sorted at read time; a gene repeated within
/// a row is rejected (FormatError). An absent X (anndata X = None) opens with
/// matrix_layout "none" and no entries. Details in core/io/detail/h5ad_matrix.hpp.
OpenedDataset open_h5ad(const std::string& path, const ReadOptions& options);

/// 10x Genomics HDF5: CellRanger v3+ (/matrix) and v2 (per-genome groups).
OpenedDataset open_10x_h5(const std::string& path, const ReadOptions& options);

/// Loom 3.0 (/matrix genes x cells, /layers, /row_attrs, /col_attrs), read as scanpy's
/// read_loom: X = layers/spliced when present, else /matrix; obs names col_attrs/CellID,
/// var names row_attrs/Gene. ReadOptions::matrix "layers/<name>" picks a layer.
OpenedDataset open_loom(const std::string& path, const ReadOptions& options);

/// A CellRanger Matrix Market folder (matrix.mtx[.gz], barcodes.tsv[.gz],
/// features.tsv[.gz] or genes.tsv) or a single .mtx[.gz] file.
OpenedDataset open_matrix_market(const std::string& path, const ReadOptions& options);

}  // namespace fathom::io
