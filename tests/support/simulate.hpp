#pragma once
/// Small simulated sparse count matrices for brute-force tests, reproducible from a
/// seed (the generator does not depend on the standard library's distributions).
#include <cstdint>
#include <string>
#include <vector>

#include "core/data/ShardedCsr.hpp"
#include "core/types/DenseMatrix.hpp"

namespace fathom::test {

/// What to simulate.
struct SimulationOptions {
    std::int64_t num_cells = 200;
    std::int64_t num_genes = 50;
    double density = 0.2;              ///< probability that an entry is stored (before the modifiers below)
    int max_count = 20;                ///< counts are 1 .. max_count, skewed to small values
    double empty_cell_fraction = 0.05; ///< cells with no stored entry
    double zero_gene_fraction = 0.1;   ///< genes never stored (all-zero columns)
    bool integer_counts = true;        ///< false: non-integer positive values
    std::uint64_t seed = 1;
};

/// A cells x genes matrix as one shard (row_begin 0), sorted gene indices.
CsrShard simulate_counts(const SimulationOptions& options);

/// The same matrix split into shards over the given ranges (which must cover the rows).
ShardedCsr split_into_shards(const CsrShard& whole, const std::vector<RowRange>& ranges);
/// split_into_shards over split_rows_evenly(num_cells, num_shards).
ShardedCsr split_evenly(const CsrShard& whole, int num_shards);

/// Dense copy (cells x genes, double) for brute-force references.
DenseMatrix<double> to_dense(const CsrShard& shard);
DenseMatrix<double> to_dense(const ShardedCsr& matrix);

/// Gene names "G0", "G1", ...; the genes listed in `mito` are renamed "MT-G<k>".
std::vector<std::string> simulated_gene_names(std::int64_t num_genes, const std::vector<std::int64_t>& mito = {});

/// Gaussian mixture in `dims` dimensions: `clusters` centres with spread 5, unit noise
/// (points for neighbour searches; std::normal_distribution, so reproducible for one
/// standard library).
DenseMatrix<float> gaussian_mixture(std::int64_t cells, int dims, int clusters, std::uint64_t seed);

/// Relative difference |a - b| / max(|a|, |b|, floor).
double relative_difference(double a, double b, double floor = 1e-300);

}  // namespace fathom::test
