#include "core/algo/filter.hpp"

#include <stdexcept>
#include <string>

namespace fathom {

namespace {

void check_pair(const char* options, const char* low_name, const char* high_name, const std::optional<double>& low,
                const std::optional<double>& high) {
    if (low && !(*low >= 0.0))
        throw std::invalid_argument(std::string(options) + "::" + low_name + " must be >= 0");
    if (high && !(*high >= 0.0))
        throw std::invalid_argument(std::string(options) + "::" + high_name + " must be >= 0");
    if (low && high && *low > *high)
        throw std::invalid_argument(std::string(options) + "::" + low_name + " must be <= " + high_name);
}

std::optional<double> as_double(const std::optional<std::int64_t>& value) {
    return value ? std::optional<double>(static_cast<double>(*value)) : std::nullopt;
}

/// keep[i] = all set thresholds pass; counts / expressed are the statistics.
FilterResult make_filter(std::vector<double> counts, std::vector<std::int64_t> expressed,
                         const std::optional<double>& min_counts, const std::optional<double>& max_counts,
                         const std::optional<std::int64_t>& min_expressed, const std::optional<std::int64_t>& max_expressed) {
    FilterResult result;
    result.keep.assign(counts.size(), 0);
    for (std::size_t index = 0; index < counts.size(); ++index) {
        // scanpy 1.9 filter_cells / filter_genes: keep number >= min, number <= max.
        bool keep = true;
        if (min_counts) keep = keep && counts[index] >= *min_counts;
        if (max_counts) keep = keep && counts[index] <= *max_counts;
        if (min_expressed) keep = keep && expressed[index] >= *min_expressed;
        if (max_expressed) keep = keep && expressed[index] <= *max_expressed;
        result.keep[index] = keep ? 1 : 0;
        result.num_kept += keep ? 1 : 0;
    }
    result.num_removed = static_cast<std::int64_t>(counts.size()) - result.num_kept;
    result.counts = std::move(counts);
    result.num_expressed = std::move(expressed);
    return result;
}

}  // namespace

void validate(const FilterCellsOptions& options) {
    if (!options.min_counts && !options.max_counts && !options.min_genes && !options.max_genes)
        throw std::invalid_argument("FilterCellsOptions: set one of min_counts, max_counts, min_genes, max_genes");
    check_pair("FilterCellsOptions", "min_counts", "max_counts", options.min_counts, options.max_counts);
    check_pair("FilterCellsOptions", "min_genes", "max_genes", as_double(options.min_genes), as_double(options.max_genes));
}

void validate(const FilterGenesOptions& options) {
    if (!options.min_counts && !options.max_counts && !options.min_cells && !options.max_cells)
        throw std::invalid_argument("FilterGenesOptions: set one of min_counts, max_counts, min_cells, max_cells");
    check_pair("FilterGenesOptions", "min_counts", "max_counts", options.min_counts, options.max_counts);
    check_pair("FilterGenesOptions", "min_cells", "max_cells", as_double(options.min_cells), as_double(options.max_cells));
}

FilterResult filter_cells(const ShardSet& shards, const FilterCellsOptions& options, JobContext& ctx) {
    validate(options);
    ctx.begin_stage("filter_cells");
    RowStats stats = shards.row_stats({}, ctx);
    // scanpy sums a float32 matrix into float32 totals before comparing.
    for (auto& total : stats.total) total = static_cast<float>(total);
    ctx.report(1.0);
    return make_filter(std::move(stats.total), std::move(stats.nnz), options.min_counts, options.max_counts,
                       options.min_genes, options.max_genes);
}

FilterResult filter_genes(const ShardSet& shards, const FilterGenesOptions& options, JobContext& ctx) {
    validate(options);
    ctx.begin_stage("filter_genes");
    ColumnStats stats = shards.column_stats({}, ctx);
    ctx.report(1.0);
    return filter_genes(std::move(stats.sum), std::move(stats.nnz), options);
}

FilterResult filter_genes(std::vector<double> gene_totals, std::vector<std::int64_t> cells_per_gene,
                          const FilterGenesOptions& options) {
    validate(options);
    if (gene_totals.size() != cells_per_gene.size())
        throw std::invalid_argument("filter_genes: " + std::to_string(gene_totals.size()) + " gene totals but " +
                                    std::to_string(cells_per_gene.size()) + " cell counts");
    // scanpy sums a float32 matrix into float32 totals before comparing.
    for (auto& total : gene_totals) total = static_cast<float>(total);
    return make_filter(std::move(gene_totals), std::move(cells_per_gene), options.min_counts, options.max_counts,
                       options.min_cells, options.max_cells);
}

void apply_cell_filter(ShardSet& shards, const FilterResult& filter, JobContext& ctx) {
    if (static_cast<std::int64_t>(filter.keep.size()) != shards.num_cells())
        throw std::invalid_argument("apply_cell_filter: the filter has " + std::to_string(filter.keep.size()) +
                                    " flags for " + std::to_string(shards.num_cells()) + " cells");
    if (filter.num_removed == 0) return;
    shards.subset_rows(filter.keep, ctx);
}

void apply_gene_filter(ShardSet& shards, const FilterResult& filter, JobContext& ctx) {
    if (static_cast<std::int64_t>(filter.keep.size()) != shards.num_genes())
        throw std::invalid_argument("apply_gene_filter: the filter has " + std::to_string(filter.keep.size()) +
                                    " flags for " + std::to_string(shards.num_genes()) + " genes");
    if (filter.num_removed == 0) return;
    shards.subset_columns(filter.keep, ctx);
}

}  // namespace fathom
