#pragma once
/// The arithmetic of the CUDA backend's kernels, written once as __host__ __device__
/// functions over raw CSR arrays (int64 row offsets, int32 gene indices, float32
/// values). The kernels in gpu/kernels.cu call these per row or per stored entry; the
/// host loops at the end of this file call the very same functions in the same order
/// per output element, so the logic is tested on the CPU (tests/gpu) against the CPU
/// backend without a GPU. The gpu library is compiled with --fmad=false so that the
/// device rounds exactly as these host loops do.
///
/// C++17; the only project header is core/backend/log1p_float.hpp (C++17, written for
/// nvcc too): nvcc compiles this file.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/backend/log1p_float.hpp"

#if defined(__CUDACC__)
#define FATHOM_HD __host__ __device__
#else
#define FATHOM_HD
#endif

namespace fathom::gpu::kernels {

/// The element transform (fathom::ElementTransform's values, as an int for nvcc).
enum Transform : int { kTransformNone = 0, kTransformLog1p = 1, kTransformExpm1 = 2 };

/// log1p in float32, the CPU backend's arithmetic bit for bit (core/backend/log1p_float.hpp:
/// NumPy's on AVX512_SKX CPUs). The device runs the inline routine (no contraction under
/// --fmad=false); host code calls the CPU backend's compiled one.
FATHOM_HD inline float log1p_value(float value) {
#if defined(__CUDA_ARCH__)
    return fathom::log1p_svml::log1p(value);
#else
    return fathom::log1p_float(value);
#endif
}

/// The transform in float32 as NumPy applies it: log1p as log1p_value; expm1 as the
/// double function rounded once to float32 (the correctly rounded result in all but rare
/// ties; within one ulp of libm's expm1f, which the CPU backend uses).
FATHOM_HD inline float transform_value(float value, int transform) {
    if (transform == kTransformLog1p) return log1p_value(value);
    if (transform == kTransformExpm1) return static_cast<float>(::expm1(static_cast<double>(value)));
    return value;
}

/// scipy's inplace_row_scale on float32: one rounding of the exact product.
FATHOM_HD inline float scale_value(float value, double factor) {
    return static_cast<float>(static_cast<double>(value) * factor);
}

/// A raw count: a non-negative integer value (NaN is not).
FATHOM_HD inline bool is_count(float value) { return value >= 0.0f && value == ::floorf(value); }

/// What a column statistic sees for one stored entry (Backend.hpp, ColumnStatsRequest):
/// scale (one float32 rounding), transform (float32), clip at column_max (double).
struct ValueRequest {
    const double* row_scale = nullptr;   ///< per local row; null = 1
    int transform = kTransformNone;
    const double* column_max = nullptr;  ///< per gene; null = no clipping
};

FATHOM_HD inline double request_value(const ValueRequest& request, float stored, std::int64_t row, std::int32_t gene) {
    float value = stored;
    if (request.row_scale != nullptr) value = scale_value(value, request.row_scale[row]);
    double transformed = transform_value(value, request.transform);
    if (request.column_max != nullptr && request.column_max[gene] < transformed) transformed = request.column_max[gene];
    return transformed;
}

/// Adds one entry's value to a partial (sum, sum of squares, non-zeros) of its gene.
FATHOM_HD inline void accumulate_entry(double value, std::int32_t gene, double* sum, double* sum_squares,
                                       std::int64_t* nnz) {
    sum[gene] += value;
    sum_squares[gene] += value * value;
    nnz[gene] += value != 0.0 ? 1 : 0;
}

/// Per-row totals: sum, non-zeros, and the sum over genes with gene_mask[g] = 1
/// (gene_mask null = no subset; subset_total is then not written).
FATHOM_HD inline void row_stats_one(const std::int64_t* offsets, const std::int32_t* genes, const float* values,
                                    const std::uint8_t* gene_mask, std::int64_t row, double* total, std::int64_t* nnz,
                                    double* subset_total) {
    double sum = 0.0, subset = 0.0;
    std::int64_t nonzero = 0;
    for (std::int64_t entry = offsets[row]; entry < offsets[row + 1]; ++entry) {
        const double value = values[entry];
        sum += value;
        nonzero += value != 0.0 ? 1 : 0;
        if (gene_mask != nullptr && gene_mask[genes[entry]] != 0) subset += value;
    }
    total[row] = sum;
    nnz[row] = nonzero;
    if (gene_mask != nullptr) subset_total[row] = subset;
}

/// The stored value of `gene` in `row` (binary search: genes are sorted in a row), or 0.
FATHOM_HD inline float gene_value(const std::int64_t* offsets, const std::int32_t* genes, const float* values,
                                  std::int64_t row, std::int32_t gene) {
    std::int64_t low = offsets[row], high = offsets[row + 1];
    while (low < high) {
        const std::int64_t middle = low + (high - low) / 2;
        if (genes[middle] < gene) low = middle + 1;
        else high = middle;
    }
    return low < offsets[row + 1] && genes[low] == gene ? values[low] : 0.0f;
}

/// Entries of `row` whose gene is kept (renumber[g] >= 0).
FATHOM_HD inline std::int64_t count_kept(const std::int64_t* offsets, const std::int32_t* genes,
                                         const std::int32_t* renumber, std::int64_t row) {
    std::int64_t count = 0;
    for (std::int64_t entry = offsets[row]; entry < offsets[row + 1]; ++entry) count += renumber[genes[entry]] >= 0 ? 1 : 0;
    return count;
}

/// Writes the kept entries of `row`, renumbered, from out_offsets[row] on.
FATHOM_HD inline void copy_kept(const std::int64_t* offsets, const std::int32_t* genes, const float* values,
                                const std::int32_t* renumber, std::int64_t row, const std::int64_t* out_offsets,
                                std::int32_t* out_genes, float* out_values) {
    std::int64_t position = out_offsets[row];
    for (std::int64_t entry = offsets[row]; entry < offsets[row + 1]; ++entry) {
        const std::int32_t gene = renumber[genes[entry]];
        if (gene < 0) continue;
        out_genes[position] = gene;
        out_values[position] = values[entry];
        ++position;
    }
}

/// Copies source row source_rows[row] of (offsets, genes, values) to out row `row`.
FATHOM_HD inline void copy_row(const std::int64_t* offsets, const std::int32_t* genes, const float* values,
                               const std::int64_t* source_rows, std::int64_t row, const std::int64_t* out_offsets,
                               std::int32_t* out_genes, float* out_values) {
    const std::int64_t source = source_rows[row];
    std::int64_t position = out_offsets[row];
    for (std::int64_t entry = offsets[source]; entry < offsets[source + 1]; ++entry, ++position) {
        out_genes[position] = genes[entry];
        out_values[position] = values[entry];
    }
}

/// How a block is standardised (Backend.hpp, Standardization), with an optional centre
/// subtracted after clipping (the projection's centre).
struct BlockTransform {
    const std::int32_t* block_column = nullptr;  ///< per gene: block column, or -1
    const double* mean = nullptr;                ///< per block column
    const double* inv_std = nullptr;             ///< per block column
    const double* center = nullptr;              ///< per block column; null = 0
    bool has_max = false, has_min = false;
    double max_value = 0.0, min_value = 0.0;
};

/// z = clip((value - mean) * inv_std) - center, for block column `column`.
FATHOM_HD inline double standardize(const BlockTransform& block, double value, std::int32_t column) {
    double z = (value - block.mean[column]) * block.inv_std[column];
    if (block.has_max && z > block.max_value) z = block.max_value;
    if (block.has_min && z < block.min_value) z = block.min_value;
    if (block.center != nullptr) z -= block.center[column];
    return z;
}

/// One dense row of the standardised block: out[c] for every block column c (implicit
/// zeros standardised too). `width` block columns.
FATHOM_HD inline void fill_standardized_row(const std::int64_t* offsets, const std::int32_t* genes, const float* values,
                                            const BlockTransform& block, std::int64_t row, std::int64_t width,
                                            double* out) {
    for (std::int64_t column = 0; column < width; ++column)
        out[column] = standardize(block, 0.0, static_cast<std::int32_t>(column));
    for (std::int64_t entry = offsets[row]; entry < offsets[row + 1]; ++entry) {
        const std::int32_t column = block.block_column[genes[entry]];
        if (column >= 0) out[column] = standardize(block, values[entry], column);
    }
}

// ---- lanes: the deterministic split of a reduction over rows --------------------------
//
// A column reduction runs on lanes: contiguous row ranges fixed by the shard alone. On
// the device one thread block owns a lane and walks its rows in order; the threads share
// a row's entries (a row never holds a gene twice, so no two threads touch the same
// gene at once) and synchronise between rows. Each gene's partial therefore adds its
// values in row order, exactly as the host loop below does, and the lane partials are
// added in lane order. No floating-point atomics: results are bit-identical run to run.

/// Lanes of a column reduction with `width` partial entries per lane (three 8-byte
/// arrays): at most 1024 lanes, and all partials within 256 MiB.
inline std::int64_t max_lanes_for_width(std::int64_t width) {
    if (width <= 0) return 1;
    const std::int64_t by_memory = (std::int64_t{256} << 20) / (width * 24);
    return by_memory < 1 ? 1 : (by_memory > 1024 ? 1024 : by_memory);
}

/// Lane boundaries (lanes + 1 entries) splitting rows into at most max_lanes ranges of
/// about equal non-zeros (at least one row each).
inline std::vector<std::int64_t> lane_bounds(const std::vector<std::int64_t>& offsets, std::int64_t max_lanes) {
    const std::int64_t rows = static_cast<std::int64_t>(offsets.size()) - 1;
    std::vector<std::int64_t> bounds{0};
    if (rows <= 0) return bounds;
    const std::int64_t lanes = max_lanes < 1 ? 1 : (max_lanes > rows ? rows : max_lanes);
    const std::int64_t total = offsets.back();
    std::int64_t row = 0;
    for (std::int64_t lane = 1; lane < lanes; ++lane) {
        const std::int64_t target = total / lanes * lane + (total % lanes) * lane / lanes;
        // First row whose start reaches the target, keeping at least one row per lane.
        std::int64_t low = row + 1, high = rows - (lanes - lane);
        while (low < high) {
            const std::int64_t middle = low + (high - low) / 2;
            if (offsets[middle] < target) low = middle + 1;
            else high = middle;
        }
        row = low;
        bounds.push_back(row);
    }
    bounds.push_back(rows);
    return bounds;
}

/// End of the block of rows that starts at `row` when reading at most `max_entries`
/// stored entries at once (at least one row, whatever its length). offsets: the
/// shard's row offsets (rows + 1 entries); row < rows.
inline std::int64_t read_block_end(const std::vector<std::int64_t>& offsets, std::int64_t row, std::int64_t max_entries) {
    const std::int64_t rows = static_cast<std::int64_t>(offsets.size()) - 1;
    const auto first = offsets.begin() + row;
    const std::int64_t end = (std::upper_bound(first, offsets.end(), *first + max_entries) - offsets.begin()) - 1;
    return end < row + 1 ? row + 1 : (end > rows ? rows : end);
}

/// Host loop of the column-statistics kernel: per lane, rows in order, entries in order;
/// then lanes added in order. Outputs have num_genes entries (zeroed here). Rows with
/// row_mask[row] == 0 are skipped (row_mask null = every row). Returns included rows.
inline std::int64_t column_stats_host(const std::int64_t* offsets, const std::int32_t* genes, const float* values,
                                      const std::vector<std::int64_t>& bounds, std::int64_t num_genes,
                                      const ValueRequest& request, const std::uint8_t* row_mask, double* sum,
                                      double* sum_squares, std::int64_t* nnz) {
    const auto width = static_cast<std::size_t>(num_genes);
    std::vector<double> lane_sum(width), lane_squares(width);
    std::vector<std::int64_t> lane_nnz(width);
    for (std::size_t gene = 0; gene < width; ++gene) sum[gene] = sum_squares[gene] = 0.0, nnz[gene] = 0;
    std::int64_t included = 0;
    for (std::size_t lane = 0; lane + 1 < bounds.size(); ++lane) {
        std::fill(lane_sum.begin(), lane_sum.end(), 0.0);
        std::fill(lane_squares.begin(), lane_squares.end(), 0.0);
        std::fill(lane_nnz.begin(), lane_nnz.end(), 0);
        for (std::int64_t row = bounds[lane]; row < bounds[lane + 1]; ++row) {
            if (row_mask != nullptr && row_mask[row] == 0) continue;
            ++included;
            for (std::int64_t entry = offsets[row]; entry < offsets[row + 1]; ++entry)
                accumulate_entry(request_value(request, values[entry], row, genes[entry]), genes[entry], lane_sum.data(),
                                 lane_squares.data(), lane_nnz.data());
        }
        for (std::size_t gene = 0; gene < width; ++gene) {
            sum[gene] += lane_sum[gene];
            sum_squares[gene] += lane_squares[gene];
            nnz[gene] += lane_nnz[gene];
        }
    }
    return included;
}

/// Host loop of the per-group kernel: as column_stats_host with one partial row per
/// group (labels[row] in [0, groups) or -1 = skipped). Outputs groups x num_genes,
/// row-major; group_sizes has `groups` entries.
inline void group_stats_host(const std::int64_t* offsets, const std::int32_t* genes, const float* values,
                             const std::vector<std::int64_t>& bounds, std::int64_t num_genes, const std::int32_t* labels,
                             int groups, const ValueRequest& request, std::int64_t* group_sizes, double* sum,
                             double* sum_squares, std::int64_t* nnz) {
    const auto cells = static_cast<std::size_t>(groups) * static_cast<std::size_t>(num_genes);
    std::vector<double> lane_sum(cells), lane_squares(cells);
    std::vector<std::int64_t> lane_nnz(cells);
    for (std::size_t index = 0; index < cells; ++index) sum[index] = sum_squares[index] = 0.0, nnz[index] = 0;
    for (int group = 0; group < groups; ++group) group_sizes[group] = 0;
    for (std::size_t lane = 0; lane + 1 < bounds.size(); ++lane) {
        std::fill(lane_sum.begin(), lane_sum.end(), 0.0);
        std::fill(lane_squares.begin(), lane_squares.end(), 0.0);
        std::fill(lane_nnz.begin(), lane_nnz.end(), 0);
        for (std::int64_t row = bounds[lane]; row < bounds[lane + 1]; ++row) {
            const std::int32_t group = labels[row];
            if (group < 0) continue;
            ++group_sizes[group];
            const std::size_t base = static_cast<std::size_t>(group) * static_cast<std::size_t>(num_genes);
            for (std::int64_t entry = offsets[row]; entry < offsets[row + 1]; ++entry)
                accumulate_entry(request_value(request, values[entry], row, genes[entry]), genes[entry],
                                 lane_sum.data() + base, lane_squares.data() + base, lane_nnz.data() + base);
        }
        for (std::size_t index = 0; index < cells; ++index) {
            sum[index] += lane_sum[index];
            sum_squares[index] += lane_squares[index];
            nnz[index] += lane_nnz[index];
        }
    }
}

// ---- projection onto loadings as a sparse product (unclipped; cuSPARSE SpMM) ----
//
// scores = X W_genes - 1 offset^T (core/backend/projection.hpp), X taken in row tiles
// of the shard converted to the 64-bit double CSR that cuSPARSE multiplies, W_genes
// the block weights spread over every gene (zero rows for genes outside the block).

/// Row offset `local` (0 .. rows) of the tile of rows starting at first_row, rebased to
/// the tile's first entry.
FATHOM_HD inline std::int64_t tile_row_offset(const std::int64_t* offsets, std::int64_t first_row, std::int64_t local) {
    return offsets[first_row + local] - offsets[first_row];
}

/// Stored entry `entry` of the tile whose first entry is first_entry: the gene index
/// widened to int64 and the value widened (exactly) to double.
FATHOM_HD inline void widen_tile_entry(const std::int32_t* genes, const float* values, std::int64_t first_entry,
                                       std::int64_t entry, std::int64_t* column, double* value) {
    *column = genes[first_entry + entry];
    *value = static_cast<double>(values[first_entry + entry]);
}

/// The block weights (block columns x components, row-major) spread over the genes:
/// num_genes x components, row-major, zero rows for genes with block_column -1.
inline std::vector<double> gene_weights(const std::int32_t* block_column, std::int64_t num_genes,
                                        const std::vector<double>& block_weights, std::int64_t components) {
    std::vector<double> out(static_cast<std::size_t>(num_genes * components), 0.0);
    for (std::int64_t gene = 0; gene < num_genes; ++gene) {
        const std::int32_t column = block_column[gene];
        if (column < 0) continue;
        for (std::int64_t component = 0; component < components; ++component)
            out[static_cast<std::size_t>(gene * components + component)] =
                block_weights[static_cast<std::size_t>(column * components + component)];
    }
    return out;
}

/// Row tiles for the SpMM: bounds (first rows, then rows) such that every tile holds at
/// most max_entries stored entries and max_rows rows (at least one row each).
inline std::vector<std::int64_t> projection_tiles(const std::vector<std::int64_t>& offsets, std::int64_t max_entries,
                                                  std::int64_t max_rows) {
    const std::int64_t rows = static_cast<std::int64_t>(offsets.size()) - 1;
    std::vector<std::int64_t> bounds{0};
    for (std::int64_t row = 0; row < rows;) {
        const std::int64_t end = std::min(read_block_end(offsets, row, max_entries), row + std::max<std::int64_t>(1, max_rows));
        bounds.push_back(end);
        row = end;
    }
    return bounds;
}

/// Host loop of the SpMM projection of one tile [first_row, first_row + rows): the tile
/// built entry by entry through the functions above, then each row's product in entry
/// order minus the offset. out: rows x components, row-major.
inline void project_tile_host(const std::int64_t* offsets, const std::int32_t* genes, const float* values,
                              std::int64_t first_row, std::int64_t rows, const std::vector<double>& weights_by_gene,
                              const std::vector<double>& offset, std::int64_t components, double* out) {
    std::vector<std::int64_t> tile_offsets(static_cast<std::size_t>(rows + 1));
    for (std::int64_t local = 0; local <= rows; ++local) tile_offsets[static_cast<std::size_t>(local)] = tile_row_offset(offsets, first_row, local);
    const std::int64_t entries = tile_offsets.back();
    std::vector<std::int64_t> columns(static_cast<std::size_t>(entries));
    std::vector<double> tile_values(static_cast<std::size_t>(entries));
    for (std::int64_t entry = 0; entry < entries; ++entry)
        widen_tile_entry(genes, values, offsets[first_row], entry, &columns[static_cast<std::size_t>(entry)],
                         &tile_values[static_cast<std::size_t>(entry)]);
    for (std::int64_t local = 0; local < rows; ++local)
        for (std::int64_t component = 0; component < components; ++component) {
            double sum = 0.0;
            for (std::int64_t entry = tile_offsets[static_cast<std::size_t>(local)]; entry < tile_offsets[static_cast<std::size_t>(local) + 1]; ++entry)
                sum += tile_values[static_cast<std::size_t>(entry)] *
                       weights_by_gene[static_cast<std::size_t>(columns[static_cast<std::size_t>(entry)] * components + component)];
            out[local * components + component] = sum - offset[static_cast<std::size_t>(component)];
        }
}

}  // namespace fathom::gpu::kernels
