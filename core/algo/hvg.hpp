#pragma once
/// Highly variable genes, as scanpy 1.9's pp.highly_variable_genes (flavours seurat,
/// cell_ranger, seurat_v3) and the deprecated pp.filter_genes_dispersion that
/// recipe_zheng17 calls (cell_ranger, log=False). Shards are never changed.
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "core/backend/ShardSet.hpp"
#include "core/types/JobContext.hpp"
#include "core/types/hvg_options.hpp"

namespace fathom {

/// Per-gene result, scanpy's var columns.
struct HvgResult {
    std::vector<double> means;              ///< per gene (log1p'd for seurat)
    std::vector<double> dispersions;        ///< per gene (log for seurat); empty for seurat_v3
    std::vector<double> dispersions_norm;   ///< per gene; NaN where undefined; empty for seurat_v3
    std::vector<double> variances;          ///< seurat_v3: per gene variance (ddof=1)
    std::vector<double> variances_norm;     ///< seurat_v3: normalised variance
    std::vector<double> highly_variable_rank; ///< seurat_v3: 0-based rank, NaN if not selected
    std::vector<std::uint8_t> highly_variable; ///< per gene, 1 = selected
    std::int64_t num_selected = 0;
    double cutoff = std::numeric_limits<double>::quiet_NaN(); ///< the top-n cut-off used, if any
};

/// Throws std::invalid_argument naming the field.
void validate(const HvgOptions& options, const MatrixShape& shape);

/// Computes mean and variance on the shards (transformed per the flavour) and selects.
HvgResult highly_variable_genes(const ShardSet& shards, const HvgOptions& options, JobContext& ctx);
/// The same for flavours seurat and cell_ranger from the column statistics that call
/// would take (ColumnStats of the num_cells rows, with the Expm1 transform where the
/// seurat flavour asks for it), e.g. taken on the fly with a ColumnStatsRequest row
/// scale instead of on a normalised copy. Throws std::invalid_argument for seurat_v3
/// (it needs the matrix) or when num_cells < 2.
HvgResult highly_variable_genes(const ColumnStats& stats, std::int64_t num_cells, const HvgOptions& options);

/// The selection alone (seurat / cell_ranger), from per-gene mean and variance
/// (ddof=1) of the data the flavour works on (expm1'd for seurat). Exposed for tests.
HvgResult select_by_dispersion(std::span<const double> means, std::span<const double> variances,
                               const HvgOptions& options);

/// Percentile with NumPy's default 'linear' method (numpy 1.24 np.percentile),
/// q in [0, 100]; `sorted` ascending, non-empty.
double numpy_percentile(std::span<const double> sorted, double q);

/// Local quadratic regression (LOESS) as skmisc.loess(x, y, span, degree=2) with
/// family='gaussian', surface='direct' (exact, no kd-tree interpolation): the fitted
/// value at every x. x and y have the same size >= 3.
std::vector<double> loess_fit(std::span<const double> x, std::span<const double> y, double span);

}  // namespace fathom
