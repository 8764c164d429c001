#include "tests/support/simulate.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

namespace fathom::test {

namespace {

/// splitmix64: a small, well-mixed generator whose output is the same everywhere.
class Random {
public:
    explicit Random(std::uint64_t seed) : m_state(seed * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL) {}
    std::uint64_t next() {
        std::uint64_t z = (m_state += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }
    /// Uniform in [0, 1).
    double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

private:
    std::uint64_t m_state;
};

}  // namespace

CsrShard simulate_counts(const SimulationOptions& options) {
    if (options.num_cells < 0 || options.num_genes < 0) throw std::invalid_argument("simulate_counts: negative size");
    Random random(options.seed);
    std::vector<std::uint8_t> zero_gene(static_cast<std::size_t>(options.num_genes), 0);
    std::vector<double> gene_rate(static_cast<std::size_t>(options.num_genes), 1.0);
    for (std::int64_t gene = 0; gene < options.num_genes; ++gene) {
        zero_gene[static_cast<std::size_t>(gene)] = random.uniform() < options.zero_gene_fraction ? 1 : 0;
        // Genes differ in how often and how strongly they are expressed.
        gene_rate[static_cast<std::size_t>(gene)] = 0.2 + 1.6 * random.uniform();
    }
    CsrShard shard;
    shard.row_begin = 0;
    shard.num_genes = options.num_genes;
    shard.row_offsets.assign(1, 0);
    for (std::int64_t cell = 0; cell < options.num_cells; ++cell) {
        const bool empty = random.uniform() < options.empty_cell_fraction;
        const double depth = 0.5 + random.uniform();
        for (std::int64_t gene = 0; gene < options.num_genes && !empty; ++gene) {
            if (zero_gene[static_cast<std::size_t>(gene)]) continue;
            const double rate = gene_rate[static_cast<std::size_t>(gene)];
            if (random.uniform() >= std::min(1.0, options.density * rate * depth)) continue;
            const double u = random.uniform();
            float value;
            if (options.integer_counts) {
                // Skewed towards 1: floor(max * u^3) + 1.
                value = static_cast<float>(std::floor(options.max_count * u * u * u * rate / 1.8) + 1.0);
            } else {
                value = static_cast<float>(0.05 + options.max_count * u * u * rate / 1.8);
            }
            shard.gene_indices.push_back(static_cast<std::int32_t>(gene));
            shard.values.push_back(value);
        }
        shard.row_offsets.push_back(static_cast<std::int64_t>(shard.values.size()));
    }
    return shard;
}

ShardedCsr split_into_shards(const CsrShard& whole, const std::vector<RowRange>& ranges) {
    std::vector<CsrShard> shards;
    for (const auto& range : ranges) {
        CsrShard part;
        part.row_begin = range.begin;
        part.num_genes = whole.num_genes;
        const auto first = whole.row_offsets[static_cast<std::size_t>(range.begin)];
        const auto last = whole.row_offsets[static_cast<std::size_t>(range.end)];
        part.row_offsets.clear();
        for (auto row = range.begin; row <= range.end; ++row)
            part.row_offsets.push_back(whole.row_offsets[static_cast<std::size_t>(row)] - first);
        part.gene_indices.assign(whole.gene_indices.begin() + first, whole.gene_indices.begin() + last);
        part.values.assign(whole.values.begin() + first, whole.values.begin() + last);
        shards.push_back(std::move(part));
    }
    return ShardedCsr(MatrixShape{whole.num_rows(), whole.num_genes}, std::move(shards));
}

ShardedCsr split_evenly(const CsrShard& whole, int num_shards) {
    return split_into_shards(whole, split_rows_evenly(whole.num_rows(), num_shards));
}

DenseMatrix<double> to_dense(const CsrShard& shard) {
    DenseMatrix<double> dense(shard.num_rows(), shard.num_genes, 0.0);
    for (std::int64_t row = 0; row < shard.num_rows(); ++row)
        for (auto entry = shard.row_offsets[static_cast<std::size_t>(row)];
             entry < shard.row_offsets[static_cast<std::size_t>(row) + 1]; ++entry)
            dense(row, shard.gene_indices[static_cast<std::size_t>(entry)]) = shard.values[static_cast<std::size_t>(entry)];
    return dense;
}

DenseMatrix<double> to_dense(const ShardedCsr& matrix) {
    DenseMatrix<double> dense(matrix.num_cells(), matrix.num_genes(), 0.0);
    for (const auto& shard : matrix.shards()) {
        const auto part = to_dense(shard);
        for (std::int64_t row = 0; row < part.rows(); ++row)
            for (std::int64_t gene = 0; gene < part.cols(); ++gene) dense(shard.row_begin + row, gene) = part(row, gene);
    }
    return dense;
}

std::vector<std::string> simulated_gene_names(std::int64_t num_genes, const std::vector<std::int64_t>& mito) {
    std::vector<std::string> names;
    for (std::int64_t gene = 0; gene < num_genes; ++gene) {
        std::string name(1, 'G');
        name += std::to_string(gene);
        names.push_back(std::move(name));
    }
    for (auto gene : mito) names.at(static_cast<std::size_t>(gene)).insert(0, "MT-");
    return names;
}

double relative_difference(double a, double b, double floor) {
    if (a == b) return 0.0;
    return std::abs(a - b) / std::max({std::abs(a), std::abs(b), floor});
}

DenseMatrix<float> gaussian_mixture(std::int64_t cells, int dims, int clusters, std::uint64_t seed) {
    std::mt19937_64 generator(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    DenseMatrix<float> centres(clusters, dims);
    for (auto& value : centres.values()) value = 5.0f * normal(generator);
    DenseMatrix<float> points(cells, dims);
    for (std::int64_t cell = 0; cell < cells; ++cell) {
        const auto cluster = static_cast<std::int64_t>(generator() % static_cast<std::uint64_t>(clusters));
        for (int dim = 0; dim < dims; ++dim) points(cell, dim) = centres(cluster, dim) + normal(generator);
    }
    return points;
}

}  // namespace fathom::test
