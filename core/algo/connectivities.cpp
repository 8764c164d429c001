#include "core/algo/connectivities.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/types/JobContext.hpp"

namespace fathom {

namespace {

// umap-learn 0.5.3 umap_.py constants.
constexpr double kSmoothKTolerance = 1e-5;
constexpr double kMinKDistScale = 1e-3;

void check_knn(const KnnGraph& knn, const char* what) {
    if (knn.num_cells < 1 || knn.num_neighbors < 1)
        throw std::invalid_argument(std::string(what) + ": empty kNN table");
    const auto size = static_cast<std::size_t>(knn.num_cells) * static_cast<std::size_t>(knn.num_neighbors);
    if (knn.indices.size() != size || knn.distances.size() != size)
        throw std::invalid_argument(std::string(what) + ": kNN table has " + std::to_string(knn.indices.size()) +
                                    " indices and " + std::to_string(knn.distances.size()) +
                                    " distances; expected num_cells x num_neighbors = " + std::to_string(size));
    for (const auto index : knn.indices)
        if (index < -1 || index >= knn.num_cells)
            throw std::invalid_argument(std::string(what) + ": kNN index " + std::to_string(index) + " outside [0, " +
                                        std::to_string(knn.num_cells) + ")");
}

/// One directed entry of the membership matrix.
struct Entry {
    std::int32_t column;
    float value;
};

}  // namespace

void validate(const ConnectivitiesOptions& options) {
    const auto fail = [](const std::string& message) { throw std::invalid_argument("ConnectivitiesOptions::" + message); };
    if (!(options.set_op_mix_ratio >= 0.0 && options.set_op_mix_ratio <= 1.0))
        fail("set_op_mix_ratio must be in [0, 1], got " + std::to_string(options.set_op_mix_ratio));
    if (!(options.local_connectivity >= 0.0))
        fail("local_connectivity must be >= 0, got " + std::to_string(options.local_connectivity));
    if (options.num_iterations < 1) fail("num_iterations must be >= 1, got " + std::to_string(options.num_iterations));
    if (!(options.bandwidth > 0.0)) fail("bandwidth must be > 0, got " + std::to_string(options.bandwidth));
}

ConnectivitiesResult fuzzy_simplicial_set(const KnnGraph& knn, const ConnectivitiesOptions& options, JobContext& ctx) {
    validate(options);
    check_knn(knn, "fuzzy_simplicial_set");
    const std::int64_t num_cells = knn.num_cells;
    const int k = knn.num_neighbors;
    ConnectivitiesResult result;
    result.sigmas.assign(static_cast<std::size_t>(num_cells), 0.0f);
    result.rhos.assign(static_cast<std::size_t>(num_cells), 0.0f);

    // smooth_knn_dist: the global mean distance (used when rho_i = 0).
    double total_distance = 0.0;
    for (const float distance : knn.distances) total_distance += distance;
    const double mean_distance = total_distance / static_cast<double>(knn.distances.size());
    const double target = std::log2(static_cast<double>(k)) * options.bandwidth;
    const int connectivity_index = static_cast<int>(std::floor(options.local_connectivity));
    const double interpolation = options.local_connectivity - connectivity_index;

    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, num_cells, 1024), [&](const tbb::blocked_range<std::int64_t>& range) {
        ctx.checkpoint();
        std::vector<float> positive;
        for (std::int64_t cell = range.begin(); cell != range.end(); ++cell) {
            const auto distances = knn.neighbor_distances(cell);
            positive.clear();
            for (const float distance : distances)
                if (distance > 0.0f) positive.push_back(distance);
            float rho = 0.0f;
            if (static_cast<double>(positive.size()) >= options.local_connectivity) {
                if (connectivity_index > 0) {
                    rho = positive[static_cast<std::size_t>(connectivity_index) - 1];
                    if (interpolation > kSmoothKTolerance)
                        rho += static_cast<float>(interpolation * (positive[static_cast<std::size_t>(connectivity_index)] -
                                                                   positive[static_cast<std::size_t>(connectivity_index) - 1]));
                } else {
                    rho = static_cast<float>(interpolation * positive[0]);
                }
            } else if (!positive.empty()) {
                rho = *std::max_element(positive.begin(), positive.end());
            }

            double lo = 0.0;
            double hi = std::numeric_limits<double>::infinity();
            double mid = 1.0;
            for (int iteration = 0; iteration < options.num_iterations; ++iteration) {
                double psum = 0.0;
                // umap skips column 0: the cell itself.
                for (int column = 1; column < k; ++column) {
                    const float shifted = distances[static_cast<std::size_t>(column)] - rho;
                    psum += shifted > 0.0f ? std::exp(-(static_cast<double>(shifted) / mid)) : 1.0;
                }
                if (std::fabs(psum - target) < kSmoothKTolerance) break;
                if (psum > target) {
                    hi = mid;
                    mid = (lo + hi) / 2.0;
                } else {
                    lo = mid;
                    mid = std::isinf(hi) ? mid * 2.0 : (lo + hi) / 2.0;
                }
            }
            auto sigma = static_cast<float>(mid);
            if (rho > 0.0f) {
                double row_total = 0.0;
                for (const float distance : distances) row_total += distance;
                const double row_mean = row_total / k;
                if (sigma < kMinKDistScale * row_mean) sigma = static_cast<float>(kMinKDistScale * row_mean);
            } else if (sigma < kMinKDistScale * mean_distance) {
                sigma = static_cast<float>(kMinKDistScale * mean_distance);
            }
            result.sigmas[static_cast<std::size_t>(cell)] = sigma;
            result.rhos[static_cast<std::size_t>(cell)] = rho;
        }
    });
    ctx.report(0.4);

    // compute_membership_strengths: directed weights, zeros (self) dropped.
    std::vector<std::int64_t> out_offsets(static_cast<std::size_t>(num_cells) + 1, 0);
    std::vector<Entry> out_entries(static_cast<std::size_t>(num_cells) * static_cast<std::size_t>(k));
    std::vector<std::int32_t> out_count(static_cast<std::size_t>(num_cells), 0);
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, num_cells, 1024), [&](const tbb::blocked_range<std::int64_t>& range) {
        for (std::int64_t cell = range.begin(); cell != range.end(); ++cell) {
            const auto neighbors = knn.neighbors(cell);
            const auto distances = knn.neighbor_distances(cell);
            const float rho = result.rhos[static_cast<std::size_t>(cell)];
            const float sigma = result.sigmas[static_cast<std::size_t>(cell)];
            Entry* row = out_entries.data() + cell * k;
            int count = 0;
            for (int column = 0; column < k; ++column) {
                const std::int32_t other = neighbors[static_cast<std::size_t>(column)];
                if (other == -1 || other == cell) continue;  // missing neighbour / self (weight 0)
                const float shifted = distances[static_cast<std::size_t>(column)] - rho;
                const float value = (shifted <= 0.0f || sigma == 0.0f) ? 1.0f : std::exp(-(shifted / sigma));
                if (value != 0.0f) row[count++] = {other, value};
            }
            std::sort(row, row + count, [](const Entry& a, const Entry& b) { return a.column < b.column; });
            out_count[static_cast<std::size_t>(cell)] = count;
        }
    });
    for (std::int64_t cell = 0; cell < num_cells; ++cell)
        out_offsets[static_cast<std::size_t>(cell) + 1] = out_offsets[static_cast<std::size_t>(cell)] + out_count[static_cast<std::size_t>(cell)];

    // The transpose A^T (incoming weights), rows sorted by column because sources are visited in order.
    std::vector<std::int64_t> in_offsets(static_cast<std::size_t>(num_cells) + 1, 0);
    for (std::int64_t cell = 0; cell < num_cells; ++cell)
        for (int entry = 0; entry < out_count[static_cast<std::size_t>(cell)]; ++entry)
            ++in_offsets[static_cast<std::size_t>(out_entries[static_cast<std::size_t>(cell * k + entry)].column) + 1];
    for (std::int64_t cell = 0; cell < num_cells; ++cell)
        in_offsets[static_cast<std::size_t>(cell) + 1] += in_offsets[static_cast<std::size_t>(cell)];
    std::vector<Entry> in_entries(static_cast<std::size_t>(in_offsets.back()));
    {
        std::vector<std::int64_t> cursor(in_offsets.begin(), in_offsets.end() - 1);
        for (std::int64_t cell = 0; cell < num_cells; ++cell)
            for (int entry = 0; entry < out_count[static_cast<std::size_t>(cell)]; ++entry) {
                const Entry& e = out_entries[static_cast<std::size_t>(cell * k + entry)];
                in_entries[static_cast<std::size_t>(cursor[static_cast<std::size_t>(e.column)]++)] = {
                    static_cast<std::int32_t>(cell), e.value};
            }
    }
    ctx.report(0.7);

    // Merge A and A^T row by row. scipy on float32 matrices: S = A + A^T, P = A.multiply(A^T),
    // result = mix * (S - P) + (1 - mix) * P, every operation rounded to float32.
    const auto mix = static_cast<float>(options.set_op_mix_ratio);
    const auto one_minus_mix = static_cast<float>(1.0 - options.set_op_mix_ratio);
    const bool pure_union = options.set_op_mix_ratio == 1.0;
    std::vector<std::vector<Entry>> merged_rows(static_cast<std::size_t>(num_cells));
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, num_cells, 1024), [&](const tbb::blocked_range<std::int64_t>& range) {
        ctx.checkpoint();
        for (std::int64_t cell = range.begin(); cell != range.end(); ++cell) {
            const Entry* out = out_entries.data() + cell * k;
            const Entry* out_end = out + out_count[static_cast<std::size_t>(cell)];
            const Entry* in = in_entries.data() + in_offsets[static_cast<std::size_t>(cell)];
            const Entry* in_end = in_entries.data() + in_offsets[static_cast<std::size_t>(cell) + 1];
            auto& merged = merged_rows[static_cast<std::size_t>(cell)];
            merged.reserve(static_cast<std::size_t>((out_end - out) + (in_end - in)));
            while (out != out_end || in != in_end) {
                std::int32_t column;
                float a = 0.0f;
                float b = 0.0f;
                if (in == in_end || (out != out_end && out->column < in->column)) {
                    column = out->column;
                    a = (out++)->value;
                } else if (out == out_end || in->column < out->column) {
                    column = in->column;
                    b = (in++)->value;
                } else {
                    column = out->column;
                    a = (out++)->value;
                    b = (in++)->value;
                }
                const float sum = a + b;
                const float product = a * b;
                const float value = pure_union ? sum - product : mix * (sum - product) + one_minus_mix * product;
                if (value != 0.0f) merged.push_back({column, value});
            }
        }
    });

    CsrGraph& graph = result.connectivities;
    graph.num_cells = num_cells;
    graph.row_offsets.assign(static_cast<std::size_t>(num_cells) + 1, 0);
    for (std::int64_t cell = 0; cell < num_cells; ++cell)
        graph.row_offsets[static_cast<std::size_t>(cell) + 1] =
            graph.row_offsets[static_cast<std::size_t>(cell)] + static_cast<std::int64_t>(merged_rows[static_cast<std::size_t>(cell)].size());
    graph.col_indices.resize(static_cast<std::size_t>(graph.row_offsets.back()));
    graph.values.resize(graph.col_indices.size());
    for (std::int64_t cell = 0; cell < num_cells; ++cell) {
        auto position = static_cast<std::size_t>(graph.row_offsets[static_cast<std::size_t>(cell)]);
        for (const Entry& entry : merged_rows[static_cast<std::size_t>(cell)]) {
            graph.col_indices[position] = entry.column;
            graph.values[position++] = entry.value;
        }
    }
    ctx.report(1.0);
    return result;
}

CsrGraph distances_graph(const KnnGraph& knn) {
    check_knn(knn, "distances_graph");
    CsrGraph graph;
    graph.num_cells = knn.num_cells;
    graph.row_offsets.assign(static_cast<std::size_t>(knn.num_cells) + 1, 0);
    graph.col_indices.reserve(knn.indices.size());
    graph.values.reserve(knn.indices.size());
    std::vector<std::pair<std::int32_t, float>> row;
    for (std::int64_t cell = 0; cell < knn.num_cells; ++cell) {
        const auto neighbors = knn.neighbors(cell);
        const auto distances = knn.neighbor_distances(cell);
        row.clear();
        for (std::size_t column = 0; column < neighbors.size(); ++column) {
            if (neighbors[column] == -1 || neighbors[column] == cell) continue;
            if (distances[column] != 0.0f) row.emplace_back(neighbors[column], distances[column]);
        }
        std::sort(row.begin(), row.end());
        for (const auto& [column, distance] : row) {
            graph.col_indices.push_back(column);
            graph.values.push_back(distance);
        }
        graph.row_offsets[static_cast<std::size_t>(cell) + 1] = static_cast<std::int64_t>(graph.col_indices.size());
    }
    return graph;
}

}  // namespace fathom
