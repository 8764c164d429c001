#include "core/algo/leiden.hpp"

#include <algorithm>
#include <mutex>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

#include "core/algo/leiden_optimiser.hpp"
#include "core/algo/leiden_parallel.hpp"
#include "core/types/JobContext.hpp"

#ifdef FATHOM_HAVE_IGRAPH
#include <igraph/igraph.h>
#endif

namespace fathom {

namespace {

/// Relabels clusters by decreasing size (ties: the cluster whose first cell comes first).
int relabel_by_size(std::vector<std::int32_t>& labels, std::vector<std::int64_t>& sizes) {
    std::int32_t count = 0;
    for (const auto label : labels) count = std::max(count, label + 1);
    std::vector<std::int64_t> size(static_cast<std::size_t>(count), 0);
    std::vector<std::int64_t> first(static_cast<std::size_t>(count), -1);
    for (std::size_t cell = 0; cell < labels.size(); ++cell) {
        const auto label = static_cast<std::size_t>(labels[cell]);
        ++size[label];
        if (first[label] < 0) first[label] = static_cast<std::int64_t>(cell);
    }
    std::vector<std::int32_t> order;
    for (std::int32_t label = 0; label < count; ++label)
        if (size[static_cast<std::size_t>(label)] > 0) order.push_back(label);
    std::sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
        if (size[static_cast<std::size_t>(a)] != size[static_cast<std::size_t>(b)])
            return size[static_cast<std::size_t>(a)] > size[static_cast<std::size_t>(b)];
        return first[static_cast<std::size_t>(a)] < first[static_cast<std::size_t>(b)];
    });
    std::vector<std::int32_t> renamed(static_cast<std::size_t>(count), -1);
    sizes.clear();
    for (std::size_t rank = 0; rank < order.size(); ++rank) {
        renamed[static_cast<std::size_t>(order[rank])] = static_cast<std::int32_t>(rank);
        sizes.push_back(size[static_cast<std::size_t>(order[rank])]);
    }
    for (auto& label : labels) label = renamed[static_cast<std::size_t>(label)];
    return static_cast<int>(order.size());
}

#ifdef FATHOM_HAVE_IGRAPH
/// igraph keeps its error handler and default random generator in globals: one
/// Leiden call at a time.
std::mutex& igraph_mutex() {
    static std::mutex mutex;
    return mutex;
}

void check(igraph_error_t code, const char* call) {
    if (code != IGRAPH_SUCCESS)
        throw std::runtime_error(std::string("leiden: ") + call + " failed: " + igraph_strerror(code));
}

/// RAII holders for igraph objects.
struct IgraphVector {
    igraph_vector_t value;
    explicit IgraphVector(igraph_integer_t size) { check(igraph_vector_init(&value, size), "igraph_vector_init"); }
    ~IgraphVector() { igraph_vector_destroy(&value); }
    IgraphVector(const IgraphVector&) = delete;
    IgraphVector& operator=(const IgraphVector&) = delete;
};
struct IgraphIntVector {
    igraph_vector_int_t value;
    explicit IgraphIntVector(igraph_integer_t size) { check(igraph_vector_int_init(&value, size), "igraph_vector_int_init"); }
    ~IgraphIntVector() { igraph_vector_int_destroy(&value); }
    IgraphIntVector(const IgraphIntVector&) = delete;
    IgraphIntVector& operator=(const IgraphIntVector&) = delete;
};
struct IgraphGraph {
    igraph_t value;
    bool created = false;
    ~IgraphGraph() {
        if (created) igraph_destroy(&value);
    }
};
struct ErrorHandlerScope {
    igraph_error_handler_t* previous;
    ErrorHandlerScope() : previous(igraph_set_error_handler(igraph_error_handler_ignore)) {}
    ~ErrorHandlerScope() { igraph_set_error_handler(previous); }
};
#endif

}  // namespace

void validate(const LeidenOptions& options) {
    const auto fail = [](const std::string& message) { throw std::invalid_argument("LeidenOptions::" + message); };
    if (!(options.resolution > 0.0)) fail("resolution must be > 0, got " + std::to_string(options.resolution));
    if (options.num_iterations == 0) fail("num_iterations must be negative (until stable) or >= 1, got 0");
    if (!(options.beta > 0.0)) fail("beta must be > 0, got " + std::to_string(options.beta));
}

double modularity(const CsrGraph& graph, const std::vector<std::int32_t>& labels, double resolution) {
    if (static_cast<std::int64_t>(labels.size()) != graph.num_cells)
        throw std::invalid_argument("modularity: labels size differs from the graph");
    std::int32_t count = 0;
    for (const auto label : labels) count = std::max(count, label + 1);
    std::vector<double> inside(static_cast<std::size_t>(count), 0.0), strength(static_cast<std::size_t>(count), 0.0);
    double total = 0.0;  // 2W: every undirected edge is stored twice
    for (std::int64_t row = 0; row < graph.num_cells; ++row) {
        const auto columns = graph.row_indices(row);
        const auto values = graph.row_values(row);
        const auto label = static_cast<std::size_t>(labels[static_cast<std::size_t>(row)]);
        for (std::size_t entry = 0; entry < columns.size(); ++entry) {
            if (columns[entry] == row) continue;
            total += values[entry];
            strength[label] += values[entry];
            if (labels[static_cast<std::size_t>(columns[entry])] == labels[static_cast<std::size_t>(row)]) inside[label] += values[entry];
        }
    }
    if (total == 0.0) return 0.0;
    double quality = 0.0;
    for (std::size_t label = 0; label < inside.size(); ++label)
        quality += inside[label] / total - resolution * (strength[label] / total) * (strength[label] / total);
    return quality;
}

namespace {

/// modularity() of the labels on the graph as the options weigh it (unit weights
/// without use_weights).
double labels_modularity(const CsrGraph& graph, const std::vector<std::int32_t>& labels, const LeidenOptions& options) {
    if (options.use_weights) return modularity(graph, labels, options.resolution);
    CsrGraph unit = graph;
    std::fill(unit.values.begin(), unit.values.end(), 1.0f);
    return modularity(unit, labels, options.resolution);
}

}  // namespace

LeidenResult leiden(const CsrGraph& graph, const LeidenOptions& options, JobContext& ctx) {
    validate(options);
    check_csr_graph(graph, "leiden graph");
    LeidenResult result;
    if (options.implementation == LeidenImplementation::Parallel) {
        detail::ParallelLeidenPartition partition =
            detail::parallel_leiden_optimise(graph, options.resolution, options.num_iterations, options.use_weights, ctx);
        result.passes = partition.passes;
        result.labels = std::move(partition.membership);
        result.num_clusters = relabel_by_size(result.labels, result.cluster_sizes);
        result.modularity = labels_modularity(graph, result.labels, options);
        ctx.report(1.0);
        return result;
    }
    if (options.implementation == LeidenImplementation::Leidenalg) {
        detail::LeidenalgPartition partition = detail::leidenalg_optimise(
            graph, options.resolution, options.num_iterations, options.use_weights, options.seed, ctx);
        // leidenalg already numbers communities by decreasing size; its numbers are
        // scanpy's labels, kept as they are.
        result.passes = partition.passes;
        result.num_clusters = partition.num_communities;
        result.cluster_sizes.assign(static_cast<std::size_t>(partition.num_communities), 0);
        for (const auto label : partition.membership) ++result.cluster_sizes[static_cast<std::size_t>(label)];
        result.labels = std::move(partition.membership);
        result.modularity = labels_modularity(graph, result.labels, options);
        ctx.report(1.0);
        return result;
    }
#ifndef FATHOM_HAVE_IGRAPH
    (void)ctx;
    throw std::runtime_error("leiden: this build of fathom has no igraph (install libigraph-dev and reconfigure)");
#else
    const std::int64_t num_cells = graph.num_cells;
    // Undirected edges i < j with their weights; strengths over both directions.
    std::vector<igraph_integer_t> endpoints;
    std::vector<double> weights, strengths(static_cast<std::size_t>(num_cells), 0.0);
    for (std::int64_t row = 0; row < num_cells; ++row) {
        const auto columns = graph.row_indices(row);
        const auto values = graph.row_values(row);
        for (std::size_t entry = 0; entry < columns.size(); ++entry) {
            if (columns[entry] == row) continue;
            const double weight = options.use_weights ? static_cast<double>(values[entry]) : 1.0;
            strengths[static_cast<std::size_t>(row)] += weight;
            if (columns[entry] > row) {
                endpoints.push_back(row);
                endpoints.push_back(columns[entry]);
                weights.push_back(weight);
            }
        }
    }
    const double total_strength = std::accumulate(strengths.begin(), strengths.end(), 0.0);  // 2m
    ctx.checkpoint();

    std::lock_guard lock(igraph_mutex());
    ErrorHandlerScope handler;
    IgraphIntVector edge_vector(static_cast<igraph_integer_t>(endpoints.size()));
    std::copy(endpoints.begin(), endpoints.end(), VECTOR(edge_vector.value));
    IgraphGraph igraph_graph;
    check(igraph_create(&igraph_graph.value, &edge_vector.value, static_cast<igraph_integer_t>(num_cells), IGRAPH_UNDIRECTED),
          "igraph_create");
    igraph_graph.created = true;
    IgraphVector edge_weights(static_cast<igraph_integer_t>(weights.size()));
    std::copy(weights.begin(), weights.end(), VECTOR(edge_weights.value));
    IgraphVector node_weights(static_cast<igraph_integer_t>(num_cells));
    std::copy(strengths.begin(), strengths.end(), VECTOR(node_weights.value));
    IgraphIntVector membership(static_cast<igraph_integer_t>(num_cells));
    check(igraph_rng_seed(igraph_rng_default(), static_cast<igraph_uint_t>(options.seed)), "igraph_rng_seed");

    // Modularity: CPM objective with node weights k_i and resolution gamma / 2m.
    const double resolution = total_strength > 0.0 ? options.resolution / total_strength : options.resolution;
    igraph_integer_t num_clusters = 0;
    igraph_real_t quality = 0.0;
    std::vector<std::int32_t> labels(static_cast<std::size_t>(num_cells), 0);
    if (options.num_iterations < 0) {
        // Until a pass no longer improves the objective (leidenalg's n_iterations=-1:
        // `while improv > 0`) or leaves the partition unchanged; passes continue from
        // the previous membership. On large graphs a few nodes can keep moving between
        // communities of equal quality, so an unchanged partition alone may never come.
        std::vector<igraph_integer_t> previous;
        double previous_quality = -std::numeric_limits<double>::infinity();
        for (int pass = 0; pass < 1000; ++pass) {
            ctx.checkpoint();
            check(igraph_community_leiden(&igraph_graph.value, &edge_weights.value, &node_weights.value, resolution, options.beta,
                                          pass > 0, 1, &membership.value, &num_clusters, &quality),
                  "igraph_community_leiden");
            ++result.passes;
            std::vector<igraph_integer_t> current(VECTOR(membership.value), VECTOR(membership.value) + num_cells);
            ctx.report(std::min(0.95, 0.2 * result.passes), "pass " + std::to_string(result.passes));
            const bool improved = pass == 0 || quality > previous_quality + 1e-12 * std::fabs(previous_quality);
            if (current == previous || !improved) break;
            previous = std::move(current);
            previous_quality = quality;
        }
    } else {
        check(igraph_community_leiden(&igraph_graph.value, &edge_weights.value, &node_weights.value, resolution, options.beta,
                                      false, options.num_iterations, &membership.value, &num_clusters, &quality),
              "igraph_community_leiden");
        result.passes = options.num_iterations;
    }
    for (std::int64_t cell = 0; cell < num_cells; ++cell)
        labels[static_cast<std::size_t>(cell)] = static_cast<std::int32_t>(VECTOR(membership.value)[cell]);
    igraph_real_t igraph_q = 0.0;
    check(igraph_modularity(&igraph_graph.value, &membership.value, &edge_weights.value, options.resolution, IGRAPH_UNDIRECTED,
                            &igraph_q),
          "igraph_modularity");
    result.modularity = igraph_q;
    result.num_clusters = relabel_by_size(labels, result.cluster_sizes);
    result.labels = std::move(labels);
    ctx.report(1.0);
    return result;
#endif
}

}  // namespace fathom
