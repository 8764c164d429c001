#include "core/algo/qc.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace fathom {

void validate(const QcOptions& options, const MatrixShape& shape, std::size_t num_gene_names) {
    for (const auto& prefix : options.mito_prefixes)
        if (prefix.empty()) throw std::invalid_argument("QcOptions::mito_prefixes must not contain an empty prefix");
    if (static_cast<std::int64_t>(num_gene_names) != shape.num_genes)
        throw std::invalid_argument("calculate_qc_metrics: " + std::to_string(num_gene_names) +
                                    " gene names for a matrix with " + std::to_string(shape.num_genes) + " genes");
}

QcResult calculate_qc_metrics(const ShardSet& shards, std::span<const std::string> gene_names, const QcOptions& options,
                              JobContext& ctx) {
    validate(options, shards.shape(), gene_names.size());
    ctx.begin_stage("qc");
    QcResult result;
    const auto genes = static_cast<std::size_t>(shards.num_genes());
    result.mito_genes.assign(genes, 0);
    for (std::size_t gene = 0; gene < genes; ++gene)
        for (const auto& prefix : options.mito_prefixes)
            if (gene_names[gene].starts_with(prefix)) {
                result.mito_genes[gene] = 1;
                ++result.num_mito_genes;
                break;
            }
    const RowStats rows = shards.row_stats(result.mito_genes, ctx);
    ctx.report(0.5);
    const ColumnStats columns = shards.column_stats({}, ctx);
    ctx.report(1.0);

    result.total_counts = rows.total;
    result.n_genes_by_counts = rows.nnz;
    result.total_counts_mt = rows.subset_total;
    result.pct_counts_mt.resize(rows.total.size());
    for (std::size_t cell = 0; cell < rows.total.size(); ++cell)
        // scanpy: total_counts_mt / total_counts * 100 (NaN for an empty cell).
        result.pct_counts_mt[cell] = rows.total[cell] == 0.0 ? std::numeric_limits<double>::quiet_NaN()
                                                             : rows.subset_total[cell] / rows.total[cell] * 100.0;
    const auto cells = static_cast<double>(shards.num_cells());
    result.n_cells_by_counts = columns.nnz;
    result.gene_total_counts = columns.sum;
    result.mean_counts.resize(genes);
    result.pct_dropout_by_counts.resize(genes);
    for (std::size_t gene = 0; gene < genes; ++gene) {
        result.mean_counts[gene] = cells > 0 ? columns.sum[gene] / cells : std::numeric_limits<double>::quiet_NaN();
        result.pct_dropout_by_counts[gene] =
            cells > 0 ? (1.0 - static_cast<double>(columns.nnz[gene]) / cells) * 100.0 : std::numeric_limits<double>::quiet_NaN();
    }
    return result;
}

}  // namespace fathom
