#pragma once
/// Graph types shared by the post-PCA steps: the k-nearest-neighbour table that kNN
/// search produces, and the square cells x cells CSR graphs stored as obsp entries
/// (scanpy's obsp['distances'] and obsp['connectivities']).
#include <cstdint>
#include <span>
#include <vector>

namespace fathom {

/// The k nearest neighbours of every cell, the cell itself included as scanpy and
/// umap-learn count it (`n_neighbors=15` means self + 14 others). Row-major
/// num_cells x num_neighbors tables; column 0 is the cell itself at distance 0, the
/// others follow in increasing euclidean distance (ties by increasing cell index).
struct KnnGraph {
    std::int64_t num_cells = 0;         ///< rows
    int num_neighbors = 0;              ///< k, self included
    std::vector<std::int32_t> indices;  ///< num_cells x num_neighbors cell indices
    std::vector<float> distances;       ///< num_cells x num_neighbors euclidean distances

    /// Neighbour indices of one cell (self first).
    std::span<const std::int32_t> neighbors(std::int64_t cell) const noexcept {
        return {indices.data() + cell * num_neighbors, static_cast<std::size_t>(num_neighbors)};
    }
    /// Neighbour distances of one cell (0 first), matching neighbors(cell).
    std::span<const float> neighbor_distances(std::int64_t cell) const noexcept {
        return {distances.data() + cell * num_neighbors, static_cast<std::size_t>(num_neighbors)};
    }
};

/// A square num_cells x num_cells sparse graph in CSR form (an obsp entry). int64 row
/// offsets (a million cells x 30 entries passes 2^31 easily in later steps), int32
/// column indices sorted and unique within each row (scipy's canonical CSR, which
/// is what scanpy writes), float32 values as scanpy stores them.
struct CsrGraph {
    std::int64_t num_cells = 0;                ///< rows = columns
    std::vector<std::int64_t> row_offsets{0};  ///< num_cells + 1 entries, starts at 0
    std::vector<std::int32_t> col_indices;     ///< nnz entries, sorted within each row
    std::vector<float> values;                 ///< nnz entries

    /// Number of stored entries.
    std::int64_t nnz() const noexcept { return row_offsets.empty() ? 0 : row_offsets.back(); }
    /// Column indices of one row.
    std::span<const std::int32_t> row_indices(std::int64_t row) const noexcept {
        return {col_indices.data() + row_offsets[row],
                static_cast<std::size_t>(row_offsets[row + 1] - row_offsets[row])};
    }
    /// Values of one row, matching row_indices(row).
    std::span<const float> row_values(std::int64_t row) const noexcept {
        return {values.data() + row_offsets[row], static_cast<std::size_t>(row_offsets[row + 1] - row_offsets[row])};
    }
};

/// Throws std::invalid_argument naming `what` and the broken invariant when `graph`
/// is not a well-formed square CSR graph (offsets monotone from 0, indices in range,
/// sorted and unique within rows, sizes consistent). For inputs of public functions.
void check_csr_graph(const CsrGraph& graph, const char* what);

}  // namespace fathom
