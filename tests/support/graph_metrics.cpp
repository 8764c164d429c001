#include "tests/support/graph_metrics.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <stdexcept>
#include <thread>
#include <utility>

#include "tests/support/npy.hpp"

namespace fathom::test {

namespace {

/// Runs body(row) for rows [0, count) on all hardware threads.
template <typename Body>
void parallel_rows(std::int64_t count, Body&& body) {
    const unsigned num_threads = std::max(1u, std::thread::hardware_concurrency());
    std::atomic<std::int64_t> next{0};
    std::vector<std::thread> threads;
    for (unsigned thread = 0; thread < num_threads; ++thread)
        threads.emplace_back([&] {
            for (std::int64_t row; (row = next.fetch_add(1)) < count;) body(row);
        });
    for (auto& thread : threads) thread.join();
}

}  // namespace

double trustworthiness(const DenseMatrix<float>& original, const DenseMatrix<float>& embedded, int num_neighbors) {
    const std::int64_t num_cells = original.rows();
    if (embedded.rows() != num_cells) throw std::invalid_argument("trustworthiness: row counts differ");
    const int k = num_neighbors;
    if (k < 1 || 2 * num_cells - 3 * k - 1 <= 0) throw std::invalid_argument("trustworthiness: k too large");
    const std::int64_t dims = original.cols();
    // Column-major copy so the distance loop vectorises over points.
    std::vector<float> columns(static_cast<std::size_t>(dims * num_cells));
    for (std::int64_t cell = 0; cell < num_cells; ++cell)
        for (std::int64_t dim = 0; dim < dims; ++dim) columns[dim * num_cells + cell] = original(cell, dim);
    std::vector<double> penalty(static_cast<std::size_t>(num_cells), 0.0);
    parallel_rows(num_cells, [&](std::int64_t cell) {
        // Embedded neighbours (self excluded), by brute force.
        std::vector<std::pair<double, std::int64_t>> low(static_cast<std::size_t>(num_cells - 1));
        std::size_t count = 0;
        for (std::int64_t other = 0; other < num_cells; ++other) {
            if (other == cell) continue;
            double sum = 0.0;
            for (std::int64_t dim = 0; dim < embedded.cols(); ++dim) {
                const double diff = static_cast<double>(embedded(cell, dim)) - embedded(other, dim);
                sum += diff * diff;
            }
            low[count++] = {sum, other};
        }
        std::nth_element(low.begin(), low.begin() + (k - 1), low.end());
        // Original-space squared distances from this cell to every cell.
        std::vector<float> distance(static_cast<std::size_t>(num_cells), 0.0f);
        for (std::int64_t dim = 0; dim < dims; ++dim) {
            const float centre = original(cell, dim);
            const float* column = columns.data() + dim * num_cells;
            for (std::int64_t other = 0; other < num_cells; ++other) {
                const float diff = column[other] - centre;
                distance[static_cast<std::size_t>(other)] += diff * diff;
            }
        }
        distance[static_cast<std::size_t>(cell)] = INFINITY;
        double total = 0.0;
        for (int neighbor = 0; neighbor < k; ++neighbor) {
            const float threshold = distance[static_cast<std::size_t>(low[static_cast<std::size_t>(neighbor)].second)];
            std::int64_t closer = 0;
            for (std::int64_t other = 0; other < num_cells; ++other) closer += distance[static_cast<std::size_t>(other)] < threshold;
            const std::int64_t rank = closer + 1;
            if (rank > k) total += static_cast<double>(rank - k);
        }
        penalty[static_cast<std::size_t>(cell)] = total;
    });
    double sum = 0.0;
    for (const double value : penalty) sum += value;
    const double n = static_cast<double>(num_cells);
    return 1.0 - sum * (2.0 / (n * k * (2.0 * n - 3.0 * k - 1.0)));
}

double adjusted_rand_index(std::span<const std::int64_t> labels_a, std::span<const std::int64_t> labels_b) {
    if (labels_a.size() != labels_b.size()) throw std::invalid_argument("adjusted_rand_index: sizes differ");
    const auto n = static_cast<double>(labels_a.size());
    std::map<std::pair<std::int64_t, std::int64_t>, double> table;
    std::map<std::int64_t, double> rows, cols;
    for (std::size_t cell = 0; cell < labels_a.size(); ++cell) {
        table[{labels_a[cell], labels_b[cell]}] += 1;
        rows[labels_a[cell]] += 1;
        cols[labels_b[cell]] += 1;
    }
    const auto pairs = [](double count) { return count * (count - 1) / 2; };
    double index = 0, sum_rows = 0, sum_cols = 0;
    for (const auto& [key, count] : table) index += pairs(count);
    for (const auto& [key, count] : rows) sum_rows += pairs(count);
    for (const auto& [key, count] : cols) sum_cols += pairs(count);
    const double expected = sum_rows * sum_cols / pairs(n);
    const double maximum = (sum_rows + sum_cols) / 2;
    if (maximum == expected) return 1.0;  // sklearn: both labelings trivial
    return (index - expected) / (maximum - expected);
}

ReferenceCsr read_reference_csr(const std::filesystem::path& folder, const std::string& name) {
    const auto data = read_npy(folder / (name + "_data.npy"));
    const auto indices = read_npy(folder / (name + "_indices.npy"));
    const auto indptr = read_npy(folder / (name + "_indptr.npy"));
    ReferenceCsr csr;
    csr.num_rows = static_cast<std::int64_t>(indptr.numbers.size()) - 1;
    csr.indptr.assign(indptr.numbers.begin(), indptr.numbers.end());
    csr.indices.assign(indices.numbers.begin(), indices.numbers.end());
    csr.data = data.numbers;
    if (csr.num_rows < 0 || csr.indptr.front() != 0 || csr.indptr.back() != static_cast<std::int64_t>(csr.indices.size()) ||
        csr.indices.size() != csr.data.size())
        throw std::runtime_error((folder / (name + "_indptr.npy")).string() + ": inconsistent CSR arrays");
    return csr;
}

double row_recall(const ReferenceCsr& found, const ReferenceCsr& truth) {
    if (found.num_rows != truth.num_rows) throw std::invalid_argument("row_recall: row counts differ");
    double total = 0.0;
    std::int64_t rows = 0;
    std::vector<std::int64_t> expected;
    for (std::int64_t row = 0; row < truth.num_rows; ++row) {
        expected.assign(truth.indices.begin() + truth.indptr[row], truth.indices.begin() + truth.indptr[row + 1]);
        if (expected.empty()) continue;
        std::sort(expected.begin(), expected.end());
        std::int64_t hits = 0;
        for (auto entry = found.indptr[row]; entry < found.indptr[row + 1]; ++entry)
            hits += std::binary_search(expected.begin(), expected.end(), found.indices[entry]);
        total += static_cast<double>(hits) / static_cast<double>(expected.size());
        ++rows;
    }
    return rows == 0 ? 1.0 : total / static_cast<double>(rows);
}

}  // namespace fathom::test
