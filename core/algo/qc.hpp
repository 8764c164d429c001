#pragma once
/// Quality-control metrics per cell and per gene, as scanpy's
/// pp.calculate_qc_metrics(adata, qc_vars=['mt'], percent_top=None, log1p=False).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/backend/ShardSet.hpp"
#include "core/types/JobContext.hpp"
#include "core/types/qc_options.hpp"

namespace fathom {

/// Per-cell and per-gene QC metrics, named as scanpy's obs / var columns.
struct QcResult {
    // ---- per cell (num_cells entries) ----
    std::vector<double> total_counts;            ///< sum of counts
    std::vector<std::int64_t> n_genes_by_counts; ///< genes with a non-zero count
    std::vector<double> total_counts_mt;         ///< sum over mitochondrial genes
    std::vector<double> pct_counts_mt;           ///< 100 * total_counts_mt / total_counts; NaN for empty cells (0/0 as scanpy)
    // ---- per gene (num_genes entries) ----
    std::vector<std::int64_t> n_cells_by_counts; ///< cells with a non-zero count
    std::vector<double> mean_counts;             ///< total_counts / num_cells
    std::vector<double> gene_total_counts;       ///< scanpy var['total_counts']
    std::vector<double> pct_dropout_by_counts;   ///< 100 * (1 - n_cells_by_counts / num_cells)
    std::vector<std::uint8_t> mito_genes;        ///< 1 for genes matching a mito prefix (var['mt'])
    std::int64_t num_mito_genes = 0;
};

/// Throws std::invalid_argument naming the field ("QcOptions::mito_prefixes ...") or
/// the gene-name count when it differs from the matrix's genes.
void validate(const QcOptions& options, const MatrixShape& shape, std::size_t num_gene_names);

/// Computes the metrics on the current values of the shards (raw counts expected).
/// gene_names has num_genes entries (var_names).
QcResult calculate_qc_metrics(const ShardSet& shards, std::span<const std::string> gene_names,
                              const QcOptions& options, JobContext& ctx);

}  // namespace fathom
