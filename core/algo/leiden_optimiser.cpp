#include "core/algo/leiden_optimiser.hpp"

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cfloat>
#include <numeric>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "core/types/JobContext.hpp"
#include "core/memory/uninitialized.hpp"

#ifdef FATHOM_HAVE_IGRAPH
#include <igraph/igraph.h>
#endif

// Reference: leidenalg 0.9.1, src/leidenalg/{Optimiser,MutableVertexPartition,
// RBConfigurationVertexPartition,GraphHelper}.cpp, on igraph 0.10. Names below in
// comments (move_nodes, merge_nodes_constrained, collapse_graph, init_admin,
// renumber_communities, ...) are leidenalg's functions whose decisions are reproduced.
// The graph is directed (scanpy passes directed=True): every undirected edge is two
// directed edges, a node's strengths are its out- and in-strength, and the quality is
// directed modularity; on a symmetric graph it equals the undirected modularity.

namespace fathom::detail {

#ifdef FATHOM_HAVE_IGRAPH
namespace {

using Node = std::int32_t;

/// One level's graph as leidenalg's Graph holds it. Out-edges of a node are ordered by
/// target and in-edges by source, which is the order igraph_neighbors / igraph_incident
/// return them in (igraph's `oi` / `ii` indices; no parallel edges occur here).
struct LevelGraph {
    Node num_nodes = 0;
    std::vector<std::int64_t> out_offsets{0};
    // Edge arrays filled completely after a resize (by parallel loops when collapsing).
    UninitializedVector<Node> out_targets;
    UninitializedVector<double> out_weights;
    std::vector<std::int64_t> in_offsets{0};
    UninitializedVector<Node> in_sources;
    UninitializedVector<double> in_weights;
    std::vector<double> strength_out;  ///< summed in edge-id order (Graph::init_admin)
    std::vector<double> strength_in;
    std::vector<double> self_weight;   ///< weight of the self-loop (collapsed levels)
    std::vector<std::int64_t> node_size;
    double total_weight = 0.0;         ///< all edge weights summed in edge-id order
    /// Every node's in-edges come from exactly its out-neighbours (a symmetric matrix):
    /// igraph's IGRAPH_ALL order is then each neighbour's out-edge followed by its
    /// in-edge, and the merge of the two lists is a walk over one. A collapsed level
    /// with it keeps no in_sources (they are the out-edges' targets).
    bool symmetric_structure = false;
    /// Also equal weights both ways (the first level of a symmetric graph): a node's
    /// weights to and from a community are then the same sums. The first level then
    /// keeps no in-edge arrays (in_sources, in_weights empty; read the out-edges).
    bool symmetric_weights = false;
    /// The first level only, when it is renumbered for memory locality (see
    /// renumber_for_locality); empty otherwise (the node numbers are leidenalg's).
    /// to_original[internal] is leidenalg's number of a node, to_internal its inverse.
    std::vector<Node> to_original;
    std::vector<Node> to_internal;
};

/// A community's total_weight_from_comm and total_weight_to_comm, side by side (read
/// together for every candidate community).
struct CommunityWeights {
    double from = 0.0;
    double to = 0.0;
};

/// leidenalg's MutableVertexPartition administration that the RB configuration model
/// reads: per community the node count, size, and summed out- / in-weight. Arrays are
/// allocated for as many communities as nodes (leidenalg's upper bound).
struct Partition {
    std::vector<Node> membership;
    std::vector<std::int64_t> csize;
    std::vector<std::int64_t> cnodes;
    std::vector<CommunityWeights> weights;
    std::vector<Node> empty;          ///< _empty_communities (a stack; order matters)
    Node num_communities = 0;
    /// While the communities are still numbered as the nodes of a renumbered first level
    /// (a partition of singletons, until its first renumber()): community c is
    /// leidenalg's community original_id[c], which breaks renumber()'s ties. Null when
    /// community numbers are leidenalg's own.
    const Node* original_id = nullptr;
};

/// igraph's mt19937 with leidenalg's draw: igraph_rng_get_integer(rng, from, to).
class Rng {
public:
    explicit Rng(std::uint64_t seed) {
        if (igraph_rng_init(&m_rng, &igraph_rngtype_mt19937) != IGRAPH_SUCCESS)
            throw std::runtime_error("leiden: igraph_rng_init failed");
        igraph_rng_seed(&m_rng, static_cast<igraph_uint_t>(seed));
    }
    ~Rng() { igraph_rng_destroy(&m_rng); }
    Rng(const Rng&) = delete;
    Rng& operator=(const Rng&) = delete;
    std::int64_t integer(std::int64_t from, std::int64_t to) {
        return static_cast<std::int64_t>(igraph_rng_get_integer(&m_rng, from, to));
    }

private:
    igraph_rng_t m_rng;
};

/// GraphHelper's shuffle: Fisher-Yates from the back.
void shuffle(std::vector<Node>& nodes, Rng& rng) {
    for (std::size_t index = nodes.size(); index-- > 1;) {
        const auto other = static_cast<std::size_t>(rng.integer(0, static_cast<std::int64_t>(index)));
        std::swap(nodes[index], nodes[other]);
    }
}

/// One node's weights to and from its neighbouring communities (leidenalg's
/// cache_neigh_communities), sized for every community of the largest level and left
/// zeroed between nodes.
struct Gathered {
    std::vector<double> weight_to_comm;    ///< per community: weight of v's out-edges into it
    std::vector<double> weight_from_comm;  ///< per community: weight of v's in-edges from it
    std::vector<std::uint8_t> added;
    std::vector<Node> candidates;       ///< num_candidates used; room for every community
    std::size_t num_candidates = 0;

    explicit Gathered(Node num_nodes)
        : weight_to_comm(static_cast<std::size_t>(num_nodes), 0.0),
          weight_from_comm(static_cast<std::size_t>(num_nodes), 0.0),
          added(static_cast<std::size_t>(num_nodes), 0),
          candidates(static_cast<std::size_t>(num_nodes) + 1) {}
};

/// Buffers reused across levels and passes, sized for the largest (first) level.
struct Workspace {
    Gathered gathered;
    /// One per thread of the parallel refinement (created on first use).
    tbb::enumerable_thread_specific<Gathered> refine_gathered;
    std::vector<Node> order;
    std::vector<Node> queue;
    std::vector<std::uint8_t> stable;
    std::vector<std::int64_t> member_offsets;
    std::vector<Node> members;
    std::vector<Node> member_targets;    ///< collapse: members' edges, targets' communities
    std::vector<double> member_weights;  ///< collapse: members' edges, weights
    std::vector<Node> row_targets;       ///< collapse: aggregate rows by target, per chunk
    std::vector<double> row_weights;
    std::vector<std::uint32_t> row_sorted_index;  ///< collapse: see CollapseChunk
    std::vector<std::int64_t> row_degree;         ///< collapse: per aggregate node
    /// Levels >= 1 of a pass alternate between two graphs and partitions whose storage
    /// is kept across levels and passes (no fresh pages for every aggregate graph).
    LevelGraph level_graphs[2];
    Partition level_partitions[2];
    Partition refined;
    std::vector<Node> aggregate;

    explicit Workspace(Node nodes)
        : gathered(nodes),
          refine_gathered(nodes),
          queue(static_cast<std::size_t>(nodes) + 1),
          stable(static_cast<std::size_t>(nodes), 0) {}
};

/// Counts visits and checks for cancellation every few thousand of them.
struct Cancellation {
    JobContext& ctx;
    std::uint32_t count = 0;
    void tick() {
        if ((++count & 0xFFFu) == 0) ctx.checkpoint();
    }
};

/// Hides memory latency of the random accesses ahead of use (no effect on results), at
/// the distances kPrefetchNode ... kPrefetchSums below.
inline void prefetch_node(const LevelGraph& graph, const std::vector<Node>& membership, Node v) {
    const auto node = static_cast<std::size_t>(v);
    __builtin_prefetch(graph.out_offsets.data() + node);
    __builtin_prefetch(membership.data() + node);
    __builtin_prefetch(graph.strength_out.data() + node);
    __builtin_prefetch(graph.strength_in.data() + node);
    __builtin_prefetch(graph.self_weight.data() + node);
}
inline void prefetch_row(const LevelGraph& graph, Node v) {
    constexpr std::size_t kLine = 64;
    const auto begin = static_cast<std::size_t>(graph.out_offsets[static_cast<std::size_t>(v)]);
    const auto end = static_cast<std::size_t>(graph.out_offsets[static_cast<std::size_t>(v) + 1]);
    if (end == begin) return;
    const char* const targets = reinterpret_cast<const char*>(graph.out_targets.data());
    const char* const weights = reinterpret_cast<const char*>(graph.out_weights.data());
    for (std::size_t byte = begin * sizeof(Node); byte < end * sizeof(Node); byte += kLine) __builtin_prefetch(targets + byte);
    __builtin_prefetch(targets + end * sizeof(Node) - 1);
    for (std::size_t byte = begin * sizeof(double); byte < end * sizeof(double); byte += kLine) __builtin_prefetch(weights + byte);
    __builtin_prefetch(weights + end * sizeof(double) - 1);
}
inline void prefetch_neighbour_communities(const LevelGraph& graph, const std::vector<Node>& membership, Node v) {
    const auto begin = static_cast<std::size_t>(graph.out_offsets[static_cast<std::size_t>(v)]);
    const auto end = static_cast<std::size_t>(graph.out_offsets[static_cast<std::size_t>(v) + 1]);
    for (std::size_t edge = begin; edge < end; ++edge) __builtin_prefetch(membership.data() + graph.out_targets[edge]);
}
/// The per-community entries that gathering v's neighbours will read: the running sums
/// and the communities' weights (their communities prefetched before).
/// With kShared the membership is being written by other tasks (see community_of).
/// `constraint` (the refinement's, indexed by community there): also its entries.
template <bool kShared, typename Weights>
inline void prefetch_neighbour_sums(const LevelGraph& graph, const std::vector<Node>& membership, const Weights* weights,
                                    const double* sums, Node v, const Node* constraint = nullptr) {
    const auto begin = static_cast<std::size_t>(graph.out_offsets[static_cast<std::size_t>(v)]);
    const auto end = static_cast<std::size_t>(graph.out_offsets[static_cast<std::size_t>(v) + 1]);
    for (std::size_t edge = begin; edge < end; ++edge) {
        const Node* const slot = membership.data() + graph.out_targets[edge];
        Node community_number;
        if constexpr (kShared) {
            community_number = std::atomic_ref<Node>(const_cast<Node&>(*slot)).load(std::memory_order_relaxed);
        } else {
            community_number = *slot;
        }
        const auto community = static_cast<std::size_t>(community_number);
        __builtin_prefetch(sums + community);
        __builtin_prefetch(weights + community);
        if (constraint != nullptr) __builtin_prefetch(constraint + community);
    }
}

/// Visits ahead at which the prefetches above are issued, each stage reading what the
/// one before it fetched: a node's own entries, its edge row, its neighbours'
/// communities, then (kPrefetchSums > 0) those communities' sums and weights; 0 turns
/// that stage off. A deeper pipeline (12, 8, 4, 2) measured slower on 1.3M nodes (13
/// interleaved copies of the 100k graph, shared 2-core machine, median of 3: 79.9 s of
/// CPU against 74.8 s with these; same labels) and no faster on 100k (1.95 against
/// 2.02 s, within noise).
constexpr std::size_t kPrefetchNode = 3;
constexpr std::size_t kPrefetchRow = 2;
constexpr std::size_t kPrefetchCommunities = 1;
constexpr std::size_t kPrefetchSums = 0;

/// Visits the edges of v in igraph's IGRAPH_ALL order for a directed graph: out- and
/// in-edges merged by neighbour, the out-edge first when both go to the same one.
template <typename OnOut, typename OnIn>
void for_all_edges(const LevelGraph& graph, Node v, OnOut&& on_out, OnIn&& on_in) {
    if (graph.symmetric_structure) {
        const auto begin = static_cast<std::size_t>(graph.out_offsets[static_cast<std::size_t>(v)]);
        const auto end = static_cast<std::size_t>(graph.out_offsets[static_cast<std::size_t>(v) + 1]);
        const auto& in_weights = graph.symmetric_weights ? graph.out_weights : graph.in_weights;
        for (std::size_t edge = begin; edge < end; ++edge) {
            on_out(graph.out_targets[edge], graph.out_weights[edge]);
            on_in(graph.out_targets[edge], in_weights[edge]);
        }
        return;
    }
    std::int64_t out = graph.out_offsets[static_cast<std::size_t>(v)];
    const std::int64_t out_end = graph.out_offsets[static_cast<std::size_t>(v) + 1];
    std::int64_t in = graph.in_offsets[static_cast<std::size_t>(v)];
    const std::int64_t in_end = graph.in_offsets[static_cast<std::size_t>(v) + 1];
    while (out < out_end && in < in_end) {
        const Node target = graph.out_targets[static_cast<std::size_t>(out)];
        const Node source = graph.in_sources[static_cast<std::size_t>(in)];
        if (target < source) {
            on_out(target, graph.out_weights[static_cast<std::size_t>(out++)]);
        } else if (source < target) {
            on_in(source, graph.in_weights[static_cast<std::size_t>(in++)]);
        } else {
            on_out(target, graph.out_weights[static_cast<std::size_t>(out++)]);
            on_in(source, graph.in_weights[static_cast<std::size_t>(in++)]);
        }
    }
    for (; out < out_end; ++out) on_out(graph.out_targets[static_cast<std::size_t>(out)], graph.out_weights[static_cast<std::size_t>(out)]);
    for (; in < in_end; ++in) on_in(graph.in_sources[static_cast<std::size_t>(in)], graph.in_weights[static_cast<std::size_t>(in)]);
}

/// Fills the in-edges (each node's by increasing source, i.e. in edge-id order) and the
/// in-strengths summed in that order from the out-edges.
void add_in_edges(LevelGraph& graph) {
    const auto num_nodes = static_cast<std::size_t>(graph.num_nodes);
    graph.in_offsets.assign(num_nodes + 1, 0);
    for (const Node target : graph.out_targets) ++graph.in_offsets[static_cast<std::size_t>(target) + 1];
    for (std::size_t v = 0; v < num_nodes; ++v) graph.in_offsets[v + 1] += graph.in_offsets[v];
    graph.in_sources.resize(graph.out_targets.size());
    graph.in_weights.resize(graph.out_weights.size());
    std::vector<std::int64_t> cursor(graph.in_offsets.begin(), graph.in_offsets.end() - 1);
    for (std::size_t v = 0; v < num_nodes; ++v) {
        for (auto edge = graph.out_offsets[v]; edge < graph.out_offsets[v + 1]; ++edge) {
            const auto target = static_cast<std::size_t>(graph.out_targets[static_cast<std::size_t>(edge)]);
            const auto slot = static_cast<std::size_t>(cursor[target]++);
            graph.in_sources[slot] = static_cast<Node>(v);
            graph.in_weights[slot] = graph.out_weights[static_cast<std::size_t>(edge)];
        }
    }
    graph.strength_in.assign(num_nodes, 0.0);
    for (std::size_t v = 0; v < num_nodes; ++v)
        for (auto edge = graph.in_offsets[v]; edge < graph.in_offsets[v + 1]; ++edge)
            graph.strength_in[v] += graph.in_weights[static_cast<std::size_t>(edge)];
}

/// Out-strengths and the total weight, summed in edge-id order (grouped by source,
/// ascending), as leidenalg sums them.
void sum_out_strengths(LevelGraph& graph) {
    const auto num_nodes = static_cast<std::size_t>(graph.num_nodes);
    graph.strength_out.assign(num_nodes, 0.0);
    graph.total_weight = 0.0;
    for (std::size_t v = 0; v < num_nodes; ++v) {
        for (auto edge = graph.out_offsets[v]; edge < graph.out_offsets[v + 1]; ++edge) {
            const double weight = graph.out_weights[static_cast<std::size_t>(edge)];
            graph.total_weight += weight;
            graph.strength_out[v] += weight;
        }
    }
}

/// Fills in-edges, strengths and the total weight from the out-edges, whose stored
/// order is the edge-id order (grouped by source, ascending).
void finish_graph(LevelGraph& graph) {
    sum_out_strengths(graph);
    add_in_edges(graph);
}

/// Sets the symmetry flags once out-edges are in target order.
void detect_symmetry(LevelGraph& graph) {
    graph.symmetric_structure = graph.in_offsets == graph.out_offsets && graph.in_sources == graph.out_targets;
    graph.symmetric_weights = graph.symmetric_structure && graph.in_weights == graph.out_weights;
}

/// Whether every edge u -> v has its reverse v -> u with the same weight, and node v's
/// in-edges, by increasing source, are exactly its out-edges by increasing target: one
/// walk over the edges in row order, matching each against the next unmatched entry of
/// its target's row.
bool mirrored(const LevelGraph& graph) {
    const auto num_nodes = static_cast<std::size_t>(graph.num_nodes);
    std::vector<std::int64_t> cursor(graph.out_offsets.begin(), graph.out_offsets.end() - 1);
    for (std::size_t v = 0; v < num_nodes; ++v) {
        for (auto edge = graph.out_offsets[v]; edge < graph.out_offsets[v + 1]; ++edge) {
            const auto target = static_cast<std::size_t>(graph.out_targets[static_cast<std::size_t>(edge)]);
            const auto reverse = cursor[target]++;
            if (reverse >= graph.out_offsets[target + 1] || graph.out_targets[static_cast<std::size_t>(reverse)] != static_cast<Node>(v) ||
                graph.out_weights[static_cast<std::size_t>(reverse)] != graph.out_weights[static_cast<std::size_t>(edge)])
                return false;
        }
    }
    for (std::size_t v = 0; v < num_nodes; ++v)
        if (cursor[v] != graph.out_offsets[v + 1]) return false;
    return true;
}

/// Renumbers the nodes of a first level with symmetric weights in breadth-first order
/// (each component from its lowest-numbered node, neighbours in row order), so that
/// neighbours get nearby numbers and the arrays read for a node's neighbours (their
/// communities, the sums per community, the rows of the nodes queued after a move)
/// lie close together in memory. Nothing leidenalg decides changes: each row keeps its
/// edges in leidenalg's order (by leidenalg's number of the target; only the targets
/// are renamed), the strengths and the total weight are already summed in edge-id order,
/// and the optimiser maps its node orders through to_internal, sums in edge-id order
/// through to_original and breaks ties between communities numbered as nodes by their
/// leidenalg numbers (Partition::original_id).
void renumber_for_locality(LevelGraph& graph) {
    const auto num_nodes = static_cast<std::size_t>(graph.num_nodes);
    if (num_nodes < 2) return;
    std::vector<Node> to_original(num_nodes);
    std::vector<Node> to_internal(num_nodes, -1);
    std::size_t head = 0, tail = 0;
    for (std::size_t root = 0; root < num_nodes; ++root) {
        if (to_internal[root] >= 0) continue;
        to_internal[root] = static_cast<Node>(tail);
        to_original[tail++] = static_cast<Node>(root);
        while (head < tail) {
            const auto v = static_cast<std::size_t>(to_original[head++]);
            for (auto edge = static_cast<std::size_t>(graph.out_offsets[v]); edge < static_cast<std::size_t>(graph.out_offsets[v + 1]); ++edge) {
                const auto u = static_cast<std::size_t>(graph.out_targets[edge]);
                if (to_internal[u] >= 0) continue;
                to_internal[u] = static_cast<Node>(tail);
                to_original[tail++] = static_cast<Node>(u);
            }
        }
    }
    std::vector<std::int64_t> offsets(num_nodes + 1, 0);
    for (std::size_t node = 0; node < num_nodes; ++node) {
        const auto v = static_cast<std::size_t>(to_original[node]);
        offsets[node + 1] = offsets[node] + (graph.out_offsets[v + 1] - graph.out_offsets[v]);
    }
    UninitializedVector<Node> targets(graph.out_targets.size());
    UninitializedVector<double> weights(graph.out_weights.size());
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, num_nodes, 4096), [&](const tbb::blocked_range<std::size_t>& range) {
        for (std::size_t node = range.begin(); node != range.end(); ++node) {
            const auto v = static_cast<std::size_t>(to_original[node]);
            auto out = static_cast<std::size_t>(offsets[node]);
            for (auto edge = static_cast<std::size_t>(graph.out_offsets[v]); edge < static_cast<std::size_t>(graph.out_offsets[v + 1]); ++edge, ++out) {
                targets[out] = to_internal[static_cast<std::size_t>(graph.out_targets[edge])];
                weights[out] = graph.out_weights[edge];
            }
        }
    });
    const auto permute = [&](auto& values) {
        auto copy = values;
        for (std::size_t node = 0; node < num_nodes; ++node) values[node] = copy[static_cast<std::size_t>(to_original[node])];
    };
    permute(graph.strength_out);
    permute(graph.strength_in);
    permute(graph.self_weight);
    permute(graph.node_size);
    graph.out_offsets = std::move(offsets);
    graph.out_targets = std::move(targets);
    graph.out_weights = std::move(weights);
    graph.in_offsets = graph.out_offsets;
    graph.to_original = std::move(to_original);
    graph.to_internal = std::move(to_internal);
}

/// The nodes of `graph` in leidenalg's numbering order, as this level numbers them
/// (the identity unless the level was renumbered for locality).
void leidenalg_node_order(const LevelGraph& graph, std::vector<Node>& order) {
    order.resize(static_cast<std::size_t>(graph.num_nodes));
    if (graph.to_internal.empty()) {
        std::iota(order.begin(), order.end(), 0);
    } else {
        std::copy(graph.to_internal.begin(), graph.to_internal.end(), order.begin());
    }
}

/// The first level: scanpy's graph, edges numbered in row-major order of the CSR
/// (adjacency.nonzero()); rows are sorted, so that is also igraph's target order.
LevelGraph base_graph(const CsrGraph& csr, bool use_weights, bool renumber) {
    LevelGraph graph;
    graph.num_nodes = static_cast<Node>(csr.num_cells);
    const auto num_nodes = static_cast<std::size_t>(csr.num_cells);
    graph.out_offsets.assign(num_nodes + 1, 0);
    graph.out_targets.reserve(csr.col_indices.size());
    graph.out_weights.reserve(csr.values.size());
    for (std::size_t row = 0; row < num_nodes; ++row) {
        for (auto entry = csr.row_offsets[row]; entry < csr.row_offsets[row + 1]; ++entry) {
            const Node column = csr.col_indices[static_cast<std::size_t>(entry)];
            const float value = csr.values[static_cast<std::size_t>(entry)];
            if (static_cast<std::size_t>(column) == row || value == 0.0f) continue;
            // leidenalg refuses these ("Cannot accept negative / NaN / infinite weights").
            if (use_weights && !(value > 0.0f && value <= FLT_MAX))
                throw std::invalid_argument("leiden graph: row " + std::to_string(row) + ", column " + std::to_string(column) +
                                            " has weight " + std::to_string(value) + "; weights must be finite and >= 0");
            graph.out_targets.push_back(column);
            graph.out_weights.push_back(use_weights ? static_cast<double>(value) : 1.0);
        }
        graph.out_offsets[row + 1] = static_cast<std::int64_t>(graph.out_targets.size());
    }
    graph.self_weight.assign(num_nodes, 0.0);
    graph.node_size.assign(num_nodes, 1);
    if (mirrored(graph)) {
        // In-edges are the out-edges (in the same order, with the same weights): no
        // second copy; strengths in and out are the same sums, and so is the total.
        graph.symmetric_structure = true;
        graph.symmetric_weights = true;
        graph.in_offsets = graph.out_offsets;
        sum_out_strengths(graph);
        graph.strength_in = graph.strength_out;
        if (renumber) renumber_for_locality(graph);
        return graph;
    }
    finish_graph(graph);
    detect_symmetry(graph);
    return graph;
}

void allocate(Partition& partition, Node num_nodes) {
    const auto size = static_cast<std::size_t>(num_nodes);
    partition.csize.assign(size, 0);
    partition.cnodes.assign(size, 0);
    partition.weights.assign(size, CommunityWeights{});
    partition.empty.clear();
    partition.original_id = nullptr;
}

/// The node part of MutableVertexPartition::init_admin for the current membership:
/// community count, sizes and node counts; weights zeroed.
void init_admin_nodes(const LevelGraph& graph, Partition& partition) {
    allocate(partition, graph.num_nodes);
    Node count = 0;
    for (const Node community : partition.membership) count = std::max(count, community + 1);
    partition.num_communities = count;
    for (std::size_t v = 0; v < partition.membership.size(); ++v) {
        const auto community = static_cast<std::size_t>(partition.membership[v]);
        partition.csize[community] += graph.node_size[v];
        partition.cnodes[community] += 1;
    }
}

/// The empty communities below the community count, once node counts are known.
void init_admin_empty(Partition& partition) {
    partition.empty.clear();
    for (Node community = 0; community < partition.num_communities; ++community)
        if (partition.cnodes[static_cast<std::size_t>(community)] == 0) partition.empty.push_back(community);
}

/// MutableVertexPartition::init_admin for the current membership: sums over edges in
/// edge-id order, which is the stored order of the base graph's out-edges.
void init_admin(const LevelGraph& graph, Partition& partition) {
    init_admin_nodes(graph, partition);
    const bool renumbered = !graph.to_original.empty();
    const auto num_nodes = static_cast<std::size_t>(graph.num_nodes);
    for (std::size_t position = 0; position < num_nodes; ++position) {
        const std::size_t v = renumbered ? static_cast<std::size_t>(graph.to_original[position]) : position;
        if (renumbered) {
            // Rows in leidenalg's order lie scattered on a renumbered level.
            if (position + kPrefetchNode < num_nodes) prefetch_node(graph, partition.membership, graph.to_original[position + kPrefetchNode]);
            if (position + kPrefetchRow < num_nodes) prefetch_row(graph, graph.to_original[position + kPrefetchRow]);
        }
        const auto from = static_cast<std::size_t>(partition.membership[v]);
        for (auto edge = graph.out_offsets[v]; edge < graph.out_offsets[v + 1]; ++edge) {
            const double weight = graph.out_weights[static_cast<std::size_t>(edge)];
            partition.weights[from].from += weight;
            partition.weights[static_cast<std::size_t>(partition.membership[static_cast<std::size_t>(graph.out_targets[static_cast<std::size_t>(edge)])])].to += weight;
        }
    }
    init_admin_empty(partition);
}

/// A partition of singletons (MutableVertexPartition(graph)): its community weights are
/// the strengths, summed in the same order.
void singletons(const LevelGraph& graph, Partition& partition) {
    allocate(partition, graph.num_nodes);
    partition.membership.resize(static_cast<std::size_t>(graph.num_nodes));
    std::iota(partition.membership.begin(), partition.membership.end(), 0);
    partition.num_communities = graph.num_nodes;
    std::copy(graph.node_size.begin(), graph.node_size.end(), partition.csize.begin());
    std::fill(partition.cnodes.begin(), partition.cnodes.end(), 1);
    for (std::size_t v = 0; v < static_cast<std::size_t>(graph.num_nodes); ++v)
        partition.weights[v] = CommunityWeights{graph.strength_out[v], graph.strength_in[v]};
    partition.original_id = graph.to_original.empty() ? nullptr : graph.to_original.data();
}

/// MutableVertexPartition::get_empty_community (adds one when there is none).
Node empty_community(Partition& partition, Node num_nodes) {
    if (partition.empty.empty()) {
        if (partition.num_communities >= num_nodes)
            throw std::logic_error("leiden: more communities than nodes");
        const Node community = partition.num_communities++;
        const auto index = static_cast<std::size_t>(community);
        partition.csize[index] = 0;
        partition.cnodes[index] = 0;
        partition.weights[index].from = 0.0;
        partition.weights[index].to = 0.0;
        partition.empty.push_back(community);
    }
    return partition.empty.back();
}

/// The community of node `u`. With kShared the membership is being written by other
/// tasks of the refinement (for nodes of other constraint communities; what is read
/// for those is only ever discarded), so it is read atomically.
template <bool kShared>
inline Node community_of(const Node* membership, Node u) {
    if constexpr (kShared) {
        return std::atomic_ref<Node>(const_cast<Node&>(membership[u])).load(std::memory_order_relaxed);
    } else {
        return membership[u];
    }
}

/// MutableVertexPartition::move_node without its bookkeeping of empty communities:
/// node counts, sizes and community weights, in leidenalg's order of updates.
template <bool kShared>
void move_node_admin(const LevelGraph& graph, Partition& partition, Node v, Node new_comm) {
    const auto node = static_cast<std::size_t>(v);
    const Node old_comm = partition.membership[node];
    const auto old_index = static_cast<std::size_t>(old_comm);
    const auto new_index = static_cast<std::size_t>(new_comm);
    const std::int64_t size = graph.node_size[node];
    partition.cnodes[old_index] -= 1;
    partition.csize[old_index] -= size;
    partition.cnodes[new_index] += 1;
    partition.csize[new_index] += size;
    const auto set_membership = [&] {
        if constexpr (kShared) {
            std::atomic_ref<Node>(partition.membership[node]).store(new_comm, std::memory_order_relaxed);
        } else {
            partition.membership[node] = new_comm;
        }
    };
    // Edge by edge, as leidenalg updates them (the rounding follows the same steps).
    if (graph.symmetric_weights) {
        // In-edges carry the out-edges' weights in the same order: one walk.
        double from_old = partition.weights[old_index].from, from_new = partition.weights[new_index].from;
        double to_old = partition.weights[old_index].to, to_new = partition.weights[new_index].to;
        for (auto edge = graph.out_offsets[node]; edge < graph.out_offsets[node + 1]; ++edge) {
            const double weight = graph.out_weights[static_cast<std::size_t>(edge)];
            from_old -= weight;
            from_new += weight;
            to_old -= weight;
            to_new += weight;
        }
        partition.weights[old_index].from = from_old;
        partition.weights[new_index].from = from_new;
        partition.weights[old_index].to = to_old;
        partition.weights[new_index].to = to_new;
        set_membership();
        return;
    }
    double from_old = partition.weights[old_index].from, from_new = partition.weights[new_index].from;
    for (auto edge = graph.out_offsets[node]; edge < graph.out_offsets[node + 1]; ++edge) {
        const double weight = graph.out_weights[static_cast<std::size_t>(edge)];
        from_old -= weight;
        from_new += weight;
    }
    partition.weights[old_index].from = from_old;
    partition.weights[new_index].from = from_new;
    double to_old = partition.weights[old_index].to, to_new = partition.weights[new_index].to;
    for (auto edge = graph.in_offsets[node]; edge < graph.in_offsets[node + 1]; ++edge) {
        const double weight = graph.in_weights[static_cast<std::size_t>(edge)];
        to_old -= weight;
        to_new += weight;
    }
    partition.weights[old_index].to = to_old;
    partition.weights[new_index].to = to_new;
    set_membership();
}

/// MutableVertexPartition::move_node, in its order of updates (the stack of empty
/// communities first: it does not depend on the rest).
void move_node(const LevelGraph& graph, Partition& partition, Node v, Node new_comm) {
    const Node old_comm = partition.membership[static_cast<std::size_t>(v)];
    if (partition.cnodes[static_cast<std::size_t>(old_comm)] == 1) partition.empty.push_back(old_comm);
    if (partition.cnodes[static_cast<std::size_t>(new_comm)] == 0) {
        const auto found = std::find(partition.empty.rbegin(), partition.empty.rend(), new_comm);
        if (found != partition.empty.rend()) partition.empty.erase(std::next(found).base());
    }
    move_node_admin<false>(graph, partition, v, new_comm);
}

/// MutableVertexPartition::renumber_communities: by decreasing size, then decreasing
/// node count, then increasing old number; empty communities dropped.
void renumber(Partition& partition, std::vector<Node>& scratch) {
    const Node count = partition.num_communities;
    // Only non-empty communities are ranked: the empty ones would rank last and are
    // dropped (no node refers to them).
    scratch.clear();
    for (Node community = 0; community < count; ++community)
        if (partition.csize[static_cast<std::size_t>(community)] > 0) scratch.push_back(community);
    const Node* const original_id = partition.original_id;
    std::sort(scratch.begin(), scratch.end(), [&](Node a, Node b) {
        const auto ia = static_cast<std::size_t>(a), ib = static_cast<std::size_t>(b);
        if (partition.csize[ia] != partition.csize[ib]) return partition.csize[ia] > partition.csize[ib];
        if (partition.cnodes[ia] != partition.cnodes[ib]) return partition.cnodes[ia] > partition.cnodes[ib];
        return original_id != nullptr ? original_id[ia] < original_id[ib] : a < b;
    });
    partition.original_id = nullptr;
    std::vector<Node> new_id(static_cast<std::size_t>(count), 0);
    for (std::size_t rank = 0; rank < scratch.size(); ++rank) new_id[static_cast<std::size_t>(scratch[rank])] = static_cast<Node>(rank);
    Node used = 0;
    for (auto& community : partition.membership) {
        community = new_id[static_cast<std::size_t>(community)];
        used = std::max(used, community + 1);
    }
    // Communities of size 0 are not carried over (relabel_communities copies csize > 0).
    std::vector<std::uint8_t> keep(static_cast<std::size_t>(count));
    for (Node old = 0; old < count; ++old) keep[static_cast<std::size_t>(old)] = partition.csize[static_cast<std::size_t>(old)] > 0;
    const auto permute_kept = [&](auto& values) {
        const auto end = values.begin() + count;
        using Value = typename std::decay_t<decltype(values)>::value_type;
        const std::vector<Value> copy(values.begin(), end);
        std::fill(values.begin(), end, Value{});
        for (Node old = 0; old < count; ++old)
            if (keep[static_cast<std::size_t>(old)])
                values[static_cast<std::size_t>(new_id[static_cast<std::size_t>(old)])] = copy[static_cast<std::size_t>(old)];
    };
    permute_kept(partition.weights);
    permute_kept(partition.cnodes);
    permute_kept(partition.csize);
    partition.num_communities = used;
    partition.empty.clear();
    for (Node community = 0; community < used; ++community)
        if (partition.csize[static_cast<std::size_t>(community)] == 0) partition.empty.push_back(community);
}

/// RBConfigurationVertexPartition::diff_move, term by term in leidenalg's order. The
/// old community's terms depend on v only and are computed once per node (the same
/// operations, so the same value).
class DiffMove {
public:
    DiffMove(double resolution, double total_weight, double k_out, double k_in, double self_weight, double w_to_old,
             double w_from_old, double K_out_old, double K_in_old)
        : m_resolution(resolution), m_total_weight(total_weight), m_k_out(k_out), m_k_in(k_in), m_self_weight(self_weight),
          m_diff_old((w_to_old - resolution * k_out * K_in_old / total_weight) +
                     (w_from_old - resolution * k_in * K_out_old / total_weight)) {}

    /// Quality change of moving v into a community other than its own, given v's
    /// weights to and from it and the community's total out- and in-weight.
    double operator()(double w_to_new, double w_from_new, double K_out_new_comm, double K_in_new_comm) const {
        if (m_total_weight == 0.0) return 0.0;
        const double K_out_new = K_out_new_comm + m_k_out;
        const double K_in_new = K_in_new_comm + m_k_in;
        const double diff_new = (w_to_new + m_self_weight - m_resolution * m_k_out * K_in_new / m_total_weight) +
                                (w_from_new + m_self_weight - m_resolution * m_k_in * K_out_new / m_total_weight);
        return diff_new - m_diff_old;
    }

private:
    double m_resolution, m_total_weight, m_k_out, m_k_in, m_self_weight, m_diff_old;
};

/// Accumulates v's weights to and from each neighbouring community (leidenalg's
/// cache_neigh_communities for IGRAPH_OUT and IGRAPH_IN) and lists the communities in
/// order of first appearance among v's neighbours in igraph's IGRAPH_ALL order.
template <bool kShared = false>
void gather(const LevelGraph& graph, const Partition& partition, Node v, Gathered& ws) {
    Node* const candidates = ws.candidates.data();
    std::size_t count = 0;
    if (graph.symmetric_weights) {
        // The weights from each community are the same sums as those to it; only
        // weight_to_comm is filled (see weight_from()). Weights are > 0, so a zero sum
        // marks a community not met yet; the candidate is written unconditionally and
        // kept by advancing the count (no hard-to-predict branch between the loads).
        const auto begin = static_cast<std::size_t>(graph.out_offsets[static_cast<std::size_t>(v)]);
        const auto end = static_cast<std::size_t>(graph.out_offsets[static_cast<std::size_t>(v) + 1]);
        const Node* const targets = graph.out_targets.data();
        const double* const weights = graph.out_weights.data();
        const Node* const membership = partition.membership.data();
        double* const sums = ws.weight_to_comm.data();
        for (std::size_t edge = begin; edge < end; ++edge) {
            const Node community = community_of<kShared>(membership, targets[edge]);
            const double sum = sums[community];
            candidates[count] = community;
            count += sum == 0.0 ? 1 : 0;
            sums[community] = sum + weights[edge];
        }
        ws.num_candidates = count;
        return;
    }
    const auto touch = [&](Node community) {
        auto& added = ws.added[static_cast<std::size_t>(community)];
        if (!added) {
            added = 1;
            candidates[count++] = community;
        }
    };
    for_all_edges(
        graph, v,
        [&](Node target, double weight) {
            const Node community = community_of<kShared>(partition.membership.data(), target);
            ws.weight_to_comm[static_cast<std::size_t>(community)] += weight;
            touch(community);
        },
        [&](Node source, double weight) {
            const Node community = community_of<kShared>(partition.membership.data(), source);
            ws.weight_from_comm[static_cast<std::size_t>(community)] += weight;
            touch(community);
        });
    ws.num_candidates = count;
}

/// v's weight from `community` as gathered (leidenalg's weight_from_comm).
inline double weight_from(const LevelGraph& graph, const Gathered& ws, std::size_t community) {
    return graph.symmetric_weights ? ws.weight_to_comm[community] : ws.weight_from_comm[community];
}

void clear_gathered(const LevelGraph& graph, Gathered& ws) {
    if (graph.symmetric_weights) {
        // gather() filled only the weights to each community.
        for (std::size_t slot = 0; slot < ws.num_candidates; ++slot) ws.weight_to_comm[static_cast<std::size_t>(ws.candidates[slot])] = 0.0;
        return;
    }
    for (std::size_t slot = 0; slot < ws.num_candidates; ++slot) {
        const auto index = static_cast<std::size_t>(ws.candidates[slot]);
        ws.weight_to_comm[index] = 0.0;
        ws.weight_from_comm[index] = 0.0;
        ws.added[index] = 0;
    }
}

DiffMove diff_for(const LevelGraph& graph, const Partition& partition, Node v, double resolution, const Gathered& ws) {
    const auto node = static_cast<std::size_t>(v);
    const auto old_index = static_cast<std::size_t>(partition.membership[node]);
    return DiffMove(resolution, graph.total_weight, graph.strength_out[node], graph.strength_in[node], graph.self_weight[node],
                    ws.weight_to_comm[old_index], weight_from(graph, ws, old_index), partition.weights[old_index].from,
                    partition.weights[old_index].to);
}

/// Optimiser::move_nodes with ALL_NEIGH_COMMS and the empty community considered: the
/// queue-based fast local move. Returns the summed improvement; renumbers at the end.
double move_nodes(const LevelGraph& graph, Partition& partition, double resolution, Rng& rng, Workspace& ws,
                  Cancellation& cancel) {
    const Node num_nodes = graph.num_nodes;
    // leidenalg shuffles its node numbers 0..n-1; the same swaps on those numbers mapped
    // to this level's give the same visiting order.
    leidenalg_node_order(graph, ws.order);
    shuffle(ws.order, rng);
    // Ring buffer: a node is queued only while it is not stable, so at most once.
    const auto capacity = static_cast<std::size_t>(num_nodes) + 1;
    std::size_t head = 0, tail = 0;
    for (const Node v : ws.order) ws.queue[tail++] = v;
    std::fill(ws.stable.begin(), ws.stable.begin() + num_nodes, 0);
    double total_improvement = 0.0;
    Gathered& gathered = ws.gathered;
    while (head != tail) {
        const Node v = ws.queue[head];
        head = head + 1 == capacity ? 0 : head + 1;
        cancel.tick();
        {
            // The node visited `ahead` visits after v is queue[head + ahead - 1] while
            // the queue holds that many (nodes queued later are not prefetched).
            const std::size_t queued = tail >= head ? tail - head : tail + capacity - head;
            const auto visit = [&](std::size_t ahead) {
                const std::size_t slot = head + ahead - 1;
                return ws.queue[slot >= capacity ? slot - capacity : slot];
            };
            if (queued >= kPrefetchNode) prefetch_node(graph, partition.membership, visit(kPrefetchNode));
            if (queued >= kPrefetchRow) prefetch_row(graph, visit(kPrefetchRow));
            if (queued >= kPrefetchCommunities) prefetch_neighbour_communities(graph, partition.membership, visit(kPrefetchCommunities));
            if (kPrefetchSums > 0 && queued >= kPrefetchSums)
                prefetch_neighbour_sums<false>(graph, partition.membership, partition.weights.data(),
                                               gathered.weight_to_comm.data(), visit(kPrefetchSums));
        }
        const auto node = static_cast<std::size_t>(v);
        const Node v_comm = partition.membership[node];
        gather(graph, partition, v, gathered);
        const std::size_t num_neighbour_comms = gathered.num_candidates;
        Node empty = -1;
        if (partition.cnodes[static_cast<std::size_t>(v_comm)] > 1) empty = empty_community(partition, num_nodes);
        const DiffMove diff = diff_for(graph, partition, v, resolution, gathered);
        Node max_comm = v_comm;
        double max_improvement = 10 * DBL_EPSILON;
        for (std::size_t index = 0; index <= num_neighbour_comms; ++index) {
            Node community;
            if (index < num_neighbour_comms) {
                community = gathered.candidates[index];
            } else {
                if (empty < 0) break;
                community = empty;
            }
            if (community == v_comm) continue;  // diff_move is 0 there
            const auto c = static_cast<std::size_t>(community);
            const double improvement =
                diff(gathered.weight_to_comm[c], weight_from(graph, gathered, c), partition.weights[c].from, partition.weights[c].to);
            if (improvement > max_improvement) {
                max_comm = community;
                max_improvement = improvement;
            }
        }
        clear_gathered(graph, gathered);
        ws.stable[node] = 1;
        if (max_comm != v_comm) {
            total_improvement += max_improvement;
            move_node(graph, partition, v, max_comm);
            const auto requeue = [&](Node u, double) {
                const auto neighbour = static_cast<std::size_t>(u);
                if (ws.stable[neighbour] && partition.membership[neighbour] != max_comm) {
                    ws.queue[tail] = u;
                    tail = tail + 1 == capacity ? 0 : tail + 1;
                    ws.stable[neighbour] = 0;
                }
            };
            if (graph.symmetric_structure) {
                // igraph lists each neighbour twice (out- and in-edge) in a row; the
                // second visit finds it queued or in max_comm, so one visit decides.
                for (auto edge = graph.out_offsets[node]; edge < graph.out_offsets[node + 1]; ++edge)
                    requeue(graph.out_targets[static_cast<std::size_t>(edge)], 0.0);
            } else {
                for_all_edges(graph, v, requeue, requeue);
            }
        }
    }
    renumber(partition, ws.order);
    return total_improvement;
}

/// The refinement's decisions for the nodes `order[0, count)` (in that order), which
/// are all the nodes of some constraint communities: a node's candidates, the weights
/// it compares and the communities it can join lie in its own constraint community, so
/// groups of constraint communities are refined independently, each in the shuffled
/// order, with the same decisions and sums as one pass over all nodes. With kShared,
/// other groups run at the same time (the stack of empty communities is not kept; the
/// renumbering that follows rebuilds it).
template <bool kShared>
void refine_nodes(const LevelGraph& graph, Partition& partition, const std::vector<Node>& constraint, double resolution,
                  const Node* order, std::size_t count, Gathered& gathered, JobContext& ctx) {
    // The partition starts as singletons and merges stay inside a constraint community.
    // Community c starts as {c}; while non-empty it still holds node c (only singletons
    // move), so node c's constraint is the community's.
    const std::vector<Node>& community_constraint = constraint;
    for (std::size_t position = 0; position < count; ++position) {
        const Node v = order[position];
        if ((position & 0xFFFu) == 0xFFFu) ctx.checkpoint();
        if (position + kPrefetchNode < count) prefetch_node(graph, partition.membership, order[position + kPrefetchNode]);
        if (position + kPrefetchRow < count) prefetch_row(graph, order[position + kPrefetchRow]);
        if (position + kPrefetchCommunities < count) {
            const Node ahead = order[position + kPrefetchCommunities];
            prefetch_neighbour_communities(graph, partition.membership, ahead);
            // Its own community's node count, read first to skip it.
            __builtin_prefetch(partition.cnodes.data() + community_of<kShared>(partition.membership.data(), ahead));
        }
        if (kPrefetchSums > 0 && position + kPrefetchSums < count)
            prefetch_neighbour_sums<kShared>(graph, partition.membership, partition.weights.data(), gathered.weight_to_comm.data(),
                                             order[position + kPrefetchSums], constraint.data());
        const auto node = static_cast<std::size_t>(v);
        const Node v_comm = partition.membership[node];
        if (partition.cnodes[static_cast<std::size_t>(v_comm)] != 1) continue;
        const Node v_constraint = constraint[node];
        // Weights of v to every neighbouring community (all of v's edges, as
        // cache_neigh_communities), candidates restricted to v's constraint community.
        gather<kShared>(graph, partition, v, gathered);
        const DiffMove diff = diff_for(graph, partition, v, resolution, gathered);
        Node max_comm = v_comm;
        double max_improvement = 0.0;
        const auto consider = [&](Node community) {
            const auto c = static_cast<std::size_t>(community);
            const double improvement =
                community == v_comm
                    ? 0.0
                    : diff(gathered.weight_to_comm[c], weight_from(graph, gathered, c), partition.weights[c].from, partition.weights[c].to);
            if (improvement >= max_improvement) {
                max_comm = community;
                max_improvement = improvement;
            }
        };
        // Distinct communities of neighbours in v's constraint community, in order of
        // first appearance: the neighbouring communities restricted to the constraint
        // (refined communities never straddle two constraint ones).
        for (std::size_t slot = 0; slot < gathered.num_candidates; ++slot)
            if (const Node community = gathered.candidates[slot]; community_constraint[static_cast<std::size_t>(community)] == v_constraint)
                consider(community);
        clear_gathered(graph, gathered);
        if (max_comm != v_comm) move_node_admin<kShared>(graph, partition, v, max_comm);
    }
}

/// Optimiser::merge_nodes_constrained with leidenalg's refine_consider_comms default,
/// ALL_NEIGH_COMMS: one pass over the nodes in random order; a node still alone in its
/// community merges into the neighbouring community (within its community of
/// `constraint`, which has `num_constraint_comms` communities) that improves the
/// quality most, ties going to the later candidate (`>=`), provided the quality does
/// not drop. Groups of constraint communities run in parallel (refine_nodes).
void merge_nodes_constrained(const LevelGraph& graph, Partition& partition, const std::vector<Node>& constraint,
                             Node num_constraint_comms, double resolution, Rng& rng, Workspace& ws, JobContext& ctx) {
    const Node num_nodes = graph.num_nodes;
    // leidenalg shuffles its node numbers 0..n-1; the same swaps on those numbers mapped
    // to this level's give the same visiting order.
    leidenalg_node_order(graph, ws.order);
    shuffle(ws.order, rng);
    // A few groups per thread, so that a thread that gets less processor time (a busy
    // machine) holds up the others less.
    constexpr Node kMinParallelNodes = 4096;
    const int threads = tbb::this_task_arena::max_concurrency();
    const auto num_tasks = static_cast<std::size_t>(std::min<Node>(std::min<Node>(threads > 1 ? 4 * threads : 1, num_constraint_comms), 64));
    if (num_tasks <= 1 || num_nodes < kMinParallelNodes) {
        refine_nodes<false>(graph, partition, constraint, resolution, ws.order.data(), ws.order.size(), ws.gathered, ctx);
    } else {
        // Constraint communities to tasks, largest first to the task with fewest nodes.
        const auto num_comms = static_cast<std::size_t>(num_constraint_comms);
        std::vector<std::int64_t> comm_nodes(num_comms, 0);
        for (const Node community : constraint) ++comm_nodes[static_cast<std::size_t>(community)];
        std::vector<Node> by_size(num_comms);
        std::iota(by_size.begin(), by_size.end(), 0);
        std::sort(by_size.begin(), by_size.end(), [&](Node a, Node b) {
            return comm_nodes[static_cast<std::size_t>(a)] > comm_nodes[static_cast<std::size_t>(b)];
        });
        std::vector<std::int64_t> task_nodes(num_tasks, 0);
        std::vector<std::uint32_t> task_of(num_comms, 0);
        for (const Node community : by_size) {
            const auto lightest = static_cast<std::size_t>(std::min_element(task_nodes.begin(), task_nodes.end()) - task_nodes.begin());
            task_of[static_cast<std::size_t>(community)] = static_cast<std::uint32_t>(lightest);
            task_nodes[lightest] += comm_nodes[static_cast<std::size_t>(community)];
        }
        // Each task's nodes in the shuffled order.
        std::vector<std::size_t> task_offsets(num_tasks + 1, 0);
        for (std::size_t task = 0; task < num_tasks; ++task) task_offsets[task + 1] = task_offsets[task] + static_cast<std::size_t>(task_nodes[task]);
        ws.members.resize(static_cast<std::size_t>(num_nodes));
        {
            std::vector<std::size_t> cursor(task_offsets.begin(), task_offsets.end() - 1);
            for (const Node v : ws.order)
                ws.members[cursor[task_of[static_cast<std::size_t>(constraint[static_cast<std::size_t>(v)])]]++] = v;
        }
        tbb::parallel_for(tbb::blocked_range<std::size_t>(0, num_tasks, 1), [&](const tbb::blocked_range<std::size_t>& range) {
            for (std::size_t task = range.begin(); task != range.end(); ++task)
                refine_nodes<true>(graph, partition, constraint, resolution, ws.members.data() + task_offsets[task],
                                   task_offsets[task + 1] - task_offsets[task], ws.refine_gathered.local(), ctx);
        });
    }
    ctx.checkpoint();
    renumber(partition, ws.order);
}

/// A run of consecutive refined communities whose collapsed out-edges one task of
/// collapse() builds, into Workspace's row buffers from `edge_begin` on (the rows are
/// no longer than the members' edges, which start there): each community's edges in
/// igraph's order (by target), and for each edge in edge-id order (first appearance,
/// the order leidenalg creates them in) its index within its community's row.
struct CollapseChunk {
    Node first = 0, last = 0;  ///< communities [first, last)
    std::size_t edge_begin = 0;
    std::size_t num_edges = 0;  ///< collapsed edges written
};

/// The first `size` elements of a buffer reused across levels; grows only (no
/// zero-filling of what an earlier level already allocated).
template <typename T>
T* reuse(std::vector<T>& buffer, std::size_t size) {
    if (buffer.size() < size) buffer.resize(size);
    return buffer.data();
}

/// Per thread of collapse(), for the row being built: a sum per community, the
/// communities met in order of first appearance, and a two-level bitmap of them from
/// which the row is read back by increasing community (igraph's order) without a sort.
/// Sums and bitmaps are left zeroed after each row.
struct CollapseScratch {
    std::vector<double> sums;
    std::vector<Node> appearance;
    std::vector<std::uint64_t> bits;     ///< bit u: community u met
    std::vector<std::uint64_t> summary;  ///< bit w: bits[w] != 0
    std::vector<std::uint32_t> position;  ///< community -> index in the sorted row
};

/// Graph::collapse_graph on the refined partition into `next` (its storage reused), then
/// the partition of the collapsed graph with `membership`
/// (MutableVertexPartition::create(graph, membership)).
/// Each community's row (its neighbour communities in order of first appearance over
/// its members' out-edges by increasing member, and the summed weights) depends on the
/// refined membership only, so the rows are built in parallel; every sum whose order
/// is leidenalg's edge-id order (total weight, out-strengths, the collapsed partition's
/// community weights) is then taken in that order, so the result is the same for any
/// number of threads.
void collapse(const LevelGraph& graph, const Partition& refined, Partition& collapsed_partition, LevelGraph& next,
              Workspace& ws, JobContext& ctx) {
    const Node count = refined.num_communities;
    const auto num_nodes = static_cast<std::size_t>(graph.num_nodes);
    const auto num_comms = static_cast<std::size_t>(count);
    // Members of each community by increasing node (get_communities), and each node's
    // slot in that order.
    ws.member_offsets.assign(num_comms + 1, 0);
    for (const Node community : refined.membership) ++ws.member_offsets[static_cast<std::size_t>(community) + 1];
    for (std::size_t c = 0; c < num_comms; ++c) ws.member_offsets[c + 1] += ws.member_offsets[c];
    ws.members.resize(num_nodes);
    std::vector<std::int64_t> slot_of(num_nodes);
    {
        // By leidenalg's node number on a renumbered level.
        std::vector<std::int64_t> cursor(ws.member_offsets.begin(), ws.member_offsets.end() - 1);
        const bool renumbered = !graph.to_original.empty();
        for (std::size_t position = 0; position < num_nodes; ++position) {
            const std::size_t v = renumbered ? static_cast<std::size_t>(graph.to_original[position]) : position;
            const auto slot = cursor[static_cast<std::size_t>(refined.membership[v])]++;
            ws.members[static_cast<std::size_t>(slot)] = static_cast<Node>(v);
            slot_of[v] = slot;
        }
    }
    // The members' out-edges laid out in that order, each target replaced by its
    // community: the rows below then read one contiguous run per community instead of
    // one random row per member. Copied row by row in node order (parallel).
    std::vector<std::int64_t> member_edge_offsets(num_nodes + 1, 0);
    for (std::size_t slot = 0; slot < num_nodes; ++slot) {
        const auto v = static_cast<std::size_t>(ws.members[slot]);
        member_edge_offsets[slot + 1] = member_edge_offsets[slot] + (graph.out_offsets[v + 1] - graph.out_offsets[v]);
    }
    Node* const member_targets_out = reuse(ws.member_targets, graph.out_targets.size());
    double* const member_weights_out = reuse(ws.member_weights, graph.out_weights.size());
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, num_nodes, 4096), [&](const tbb::blocked_range<std::size_t>& range) {
        ctx.checkpoint();
        const Node* const refined_membership = refined.membership.data();
        for (std::size_t v = range.begin(); v != range.end(); ++v) {
            auto out = static_cast<std::size_t>(member_edge_offsets[static_cast<std::size_t>(slot_of[v])]);
            for (auto edge = static_cast<std::size_t>(graph.out_offsets[v]); edge < static_cast<std::size_t>(graph.out_offsets[v + 1]); ++edge, ++out) {
                member_targets_out[out] = refined_membership[graph.out_targets[edge]];
                member_weights_out[out] = graph.out_weights[edge];
            }
        }
    });
    next.num_nodes = count;
    next.self_weight.assign(num_comms, 0.0);
    next.node_size.assign(num_comms, 0);
    next.strength_out.assign(num_comms, 0.0);
    next.strength_in.assign(num_comms, 0.0);

    // The edges of community c's members: [comm_edges(c), comm_edges(c + 1)).
    const auto comm_edges = [&](Node c) {
        return static_cast<std::size_t>(member_edge_offsets[static_cast<std::size_t>(ws.member_offsets[static_cast<std::size_t>(c)])]);
    };
    // Chunks of about equal numbers of members' edges, several per thread.
    constexpr std::size_t kChunkEdges = 1 << 16;
    std::vector<CollapseChunk> chunks;
    {
        Node first = 0;
        for (Node c = 0; c < count; ++c) {
            const std::size_t edges = comm_edges(c + 1) - comm_edges(first) + static_cast<std::size_t>(c + 1 - first);
            if (edges >= kChunkEdges || c + 1 == count) {
                chunks.push_back(CollapseChunk{first, c + 1, comm_edges(first), 0});
                first = c + 1;
            }
        }
    }
    Node* const row_targets = reuse(ws.row_targets, graph.out_targets.size());
    double* const row_weights = reuse(ws.row_weights, graph.out_targets.size());
    std::uint32_t* const row_sorted_index = reuse(ws.row_sorted_index, graph.out_targets.size());
    std::int64_t* const row_degree = reuse(ws.row_degree, num_comms);
    tbb::enumerable_thread_specific<CollapseScratch> scratch;
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, chunks.size(), 1), [&](const tbb::blocked_range<std::size_t>& range) {
        CollapseScratch& local = scratch.local();
        if (local.sums.size() < num_comms) {
            local.sums.assign(num_comms, 0.0);
            local.appearance.resize(num_comms + 1);
            local.bits.assign((num_comms + 63) / 64, 0);
            local.summary.assign((local.bits.size() + 63) / 64, 0);
            local.position.resize(num_comms);
        }
        double* const sums = local.sums.data();
        Node* const appearance = local.appearance.data();
        std::uint64_t* const bits = local.bits.data();
        std::uint64_t* const summary = local.summary.data();
        std::uint32_t* const position = local.position.data();
        const std::size_t num_summary = local.summary.size();
        const Node* const member_targets = member_targets_out;
        const double* const member_weights = member_weights_out;
        for (std::size_t chunk_index = range.begin(); chunk_index != range.end(); ++chunk_index) {
            ctx.checkpoint();
            CollapseChunk& chunk = chunks[chunk_index];
            Node* const chunk_targets = row_targets + chunk.edge_begin;
            double* const chunk_weights = row_weights + chunk.edge_begin;
            std::uint32_t* const chunk_sorted_index = row_sorted_index + chunk.edge_begin;
            std::size_t row = 0;
            for (Node c = chunk.first; c < chunk.last; ++c) {
                std::size_t num_neighbours = 0;
                const std::size_t end = comm_edges(c + 1);
                for (std::size_t edge = comm_edges(c); edge < end; ++edge) {
                    const Node u_comm = member_targets[edge];
                    const auto u = static_cast<std::uint32_t>(u_comm);
                    // Weights are > 0: a zero sum marks a community not met yet (kept
                    // without a branch, as in gather).
                    const double sum = sums[u];
                    appearance[num_neighbours] = u_comm;
                    num_neighbours += sum == 0.0 ? 1 : 0;
                    sums[u] = sum + member_weights[edge];
                    bits[u >> 6] |= std::uint64_t{1} << (u & 63);
                    summary[u >> 12] |= std::uint64_t{1} << ((u >> 6) & 63);
                }
                const auto index = static_cast<std::size_t>(c);
                // Graph::init_admin's strength: the row's weights in edge-id order.
                double strength = 0.0;
                for (std::size_t rank = 0; rank < num_neighbours; ++rank) strength += sums[appearance[rank]];
                next.strength_out[index] = strength;
                next.self_weight[index] = sums[index];
                next.node_size[index] = refined.csize[index];
                Node* const targets_out = chunk_targets + row;
                double* const weights_out = chunk_weights + row;
                std::uint32_t sorted = 0;
                for (std::size_t summary_word = 0; summary_word < num_summary; ++summary_word) {
                    std::uint64_t words = summary[summary_word];
                    if (words == 0) continue;
                    summary[summary_word] = 0;
                    for (; words != 0; words &= words - 1) {
                        const std::size_t word = summary_word * 64 + static_cast<std::size_t>(std::countr_zero(words));
                        for (std::uint64_t members = bits[word]; members != 0; members &= members - 1) {
                            const std::size_t target = word * 64 + static_cast<std::size_t>(std::countr_zero(members));
                            targets_out[sorted] = static_cast<Node>(target);
                            weights_out[sorted] = sums[target];
                            sums[target] = 0.0;
                            position[target] = sorted++;
                        }
                        bits[word] = 0;
                    }
                }
                for (std::size_t rank = 0; rank < num_neighbours; ++rank)
                    chunk_sorted_index[row + rank] = position[static_cast<std::size_t>(appearance[rank])];
                row_degree[index] = static_cast<std::int64_t>(num_neighbours);
                row += num_neighbours;
            }
            chunk.num_edges = row;
        }
    });
    ctx.checkpoint();
    next.out_offsets.assign(num_comms + 1, 0);
    std::vector<std::int64_t> chunk_offsets(chunks.size() + 1, 0);
    for (std::size_t chunk_index = 0; chunk_index < chunks.size(); ++chunk_index) {
        const CollapseChunk& chunk = chunks[chunk_index];
        for (Node c = chunk.first; c < chunk.last; ++c)
            next.out_offsets[static_cast<std::size_t>(c) + 1] = next.out_offsets[static_cast<std::size_t>(c)] + row_degree[static_cast<std::size_t>(c)];
        chunk_offsets[chunk_index + 1] = chunk_offsets[chunk_index] + static_cast<std::int64_t>(chunk.num_edges);
    }
    const auto num_edges = static_cast<std::size_t>(chunk_offsets.back());
    next.out_targets.resize(num_edges);
    next.out_weights.resize(num_edges);
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, chunks.size(), 1), [&](const tbb::blocked_range<std::size_t>& range) {
        for (std::size_t chunk_index = range.begin(); chunk_index != range.end(); ++chunk_index) {
            const CollapseChunk& chunk = chunks[chunk_index];
            const auto offset = static_cast<std::ptrdiff_t>(chunk_offsets[chunk_index]);
            std::copy_n(row_targets + chunk.edge_begin, chunk.num_edges, next.out_targets.begin() + offset);
            std::copy_n(row_weights + chunk.edge_begin, chunk.num_edges, next.out_weights.begin() + offset);
        }
    });

    // Sums in edge-id order: the total weight (Graph::init_admin) and the collapsed
    // partition's community weights (MutableVertexPartition::init_admin).
    init_admin_nodes(next, collapsed_partition);
    {
        const Node* const membership = collapsed_partition.membership.data();
        CommunityWeights* const weights = collapsed_partition.weights.data();
        double total = 0.0;
        for (const CollapseChunk& chunk : chunks) {
            std::size_t row = chunk.edge_begin;
            for (Node c = chunk.first; c < chunk.last; ++c) {
                const auto degree = static_cast<std::size_t>(row_degree[static_cast<std::size_t>(c)]);
                const std::size_t from = static_cast<std::size_t>(membership[static_cast<std::size_t>(c)]);
                for (std::size_t rank = 0; rank < degree; ++rank) {
                    const std::size_t edge = row + row_sorted_index[row + rank];
                    const double weight = row_weights[edge];
                    total += weight;
                    weights[from].from += weight;
                    weights[static_cast<std::size_t>(membership[static_cast<std::size_t>(row_targets[edge])])].to += weight;
                }
                row += degree;
            }
        }
        next.total_weight = total;
        init_admin_empty(collapsed_partition);
    }
    chunks.clear();
    chunks.shrink_to_fit();

    if (graph.symmetric_structure) {
        // c -> d is an edge exactly when d -> c is: the in-edges of c, by increasing
        // source, come from its out-edges' targets (in_sources is not kept); they carry
        // the reverse edges' weights, taken source by source, and its in-strength sums
        // them in that (edge-id) order. Blocks of targets in parallel: rows are sorted,
        // so a block's edges in each row are one run.
        next.symmetric_structure = true;
        next.in_offsets = next.out_offsets;
        next.in_sources.clear();
        next.in_weights.resize(num_edges);
        std::vector<std::int64_t> cursor(next.out_offsets.begin(), next.out_offsets.end() - 1);
        // One block per thread: every block reads the rows' boundaries once more.
        const std::size_t num_blocks = std::min<std::size_t>(static_cast<std::size_t>(tbb::this_task_arena::max_concurrency()), 64);
        tbb::parallel_for(tbb::blocked_range<std::size_t>(0, num_blocks, 1), [&](const tbb::blocked_range<std::size_t>& range) {
            for (std::size_t block = range.begin(); block != range.end(); ++block) {
                ctx.checkpoint();
                const auto block_begin = static_cast<Node>(num_comms * block / num_blocks);
                const auto block_end = static_cast<Node>(num_comms * (block + 1) / num_blocks);
                if (block_begin == block_end) continue;
                const Node* const targets = next.out_targets.data();
                for (std::size_t c = 0; c < num_comms; ++c) {
                    const Node* const row_end = targets + next.out_offsets[c + 1];
                    const Node* target = std::lower_bound(targets + next.out_offsets[c], row_end, block_begin);
                    for (; target != row_end && *target < block_end; ++target) {
                        const auto edge = static_cast<std::size_t>(target - targets);
                        const auto index = static_cast<std::size_t>(*target);
                        const double weight = next.out_weights[edge];
                        next.in_weights[static_cast<std::size_t>(cursor[index]++)] = weight;
                        next.strength_in[index] += weight;
                    }
                }
            }
        });
        next.symmetric_weights = next.in_weights == next.out_weights;
    } else {
        add_in_edges(next);
        detect_symmetry(next);
    }
}

/// Optimiser::optimise_partition: one Leiden iteration from the current partition of
/// the base graph. Returns the improvement of its move_nodes calls.
double optimise_partition(const LevelGraph& base, Partition& base_partition, bool& base_needs_init, double resolution, Rng& rng,
                          Workspace& ws, Cancellation& cancel) {
    const auto num_cells = static_cast<std::size_t>(base.num_nodes);
    if (base_needs_init) {
        init_admin(base, base_partition);
        base_needs_init = false;
    }
    std::vector<Node>& aggregate = ws.aggregate;
    aggregate.resize(num_cells);
    std::iota(aggregate.begin(), aggregate.end(), 0);
    const LevelGraph* graph = &base;
    Partition* partition = &base_partition;
    double improvement = 0.0;
    Partition& refined = ws.refined;
    for (int level = 0;; ++level) {
        improvement += move_nodes(*graph, *partition, resolution, rng, ws, cancel);
        if (level > 0) {
            // from_coarse_partition: the cells take their aggregate's community; the
            // base administration is rebuilt (init_admin) before it is next used.
            for (std::size_t cell = 0; cell < num_cells; ++cell)
                base_partition.membership[cell] = partition->membership[static_cast<std::size_t>(aggregate[cell])];
            base_needs_init = true;
        }
        singletons(*graph, refined);
        merge_nodes_constrained(*graph, refined, partition->membership, partition->num_communities, resolution, rng, ws, cancel.ctx);
        for (auto& node : aggregate) node = refined.membership[static_cast<std::size_t>(node)];
        const bool aggregate_further =
            refined.num_communities < graph->num_nodes && graph->num_nodes > partition->num_communities;
        if (!aggregate_further) break;
        // Level + 1 goes to the slot that level - 1 used (the current level's is read).
        Partition& next_partition = ws.level_partitions[(level + 1) % 2];
        LevelGraph& next_graph = ws.level_graphs[(level + 1) % 2];
        next_partition.membership.assign(static_cast<std::size_t>(refined.num_communities), 0);
        for (std::size_t v = 0; v < static_cast<std::size_t>(graph->num_nodes); ++v)
            next_partition.membership[static_cast<std::size_t>(refined.membership[v])] = partition->membership[v];
        collapse(*graph, refined, next_partition, next_graph, ws, cancel.ctx);
        graph = &next_graph;
        partition = &next_partition;
        cancel.ctx.checkpoint();
    }
    if (base_needs_init) {
        // renumber_communities needs the sizes; the weights are rebuilt lazily.
        std::fill(base_partition.csize.begin(), base_partition.csize.end(), 0);
        std::fill(base_partition.cnodes.begin(), base_partition.cnodes.end(), 0);
        Node count = 0;
        for (const Node community : base_partition.membership) {
            ++base_partition.csize[static_cast<std::size_t>(community)];
            ++base_partition.cnodes[static_cast<std::size_t>(community)];
            count = std::max(count, community + 1);
        }
        base_partition.num_communities = count;
    }
    renumber(base_partition, ws.order);
    return improvement;
}

}  // namespace
#endif

LeidenalgPartition leidenalg_optimise(const CsrGraph& graph, double resolution, int num_iterations, bool use_weights,
                                      std::uint64_t seed, JobContext& ctx, int max_passes, bool renumber_for_locality) {
#ifndef FATHOM_HAVE_IGRAPH
    (void)graph, (void)resolution, (void)num_iterations, (void)use_weights, (void)seed, (void)ctx, (void)max_passes,
        (void)renumber_for_locality;
    throw std::runtime_error("leiden: this build of fathom has no igraph (install libigraph-dev and reconfigure)");
#else
    if (graph.num_cells > static_cast<std::int64_t>(INT32_MAX) - 1)
        throw std::invalid_argument("leiden: more than 2^31 - 2 cells");
    const LevelGraph base = base_graph(graph, use_weights, renumber_for_locality);
    Partition partition;
    singletons(base, partition);
    bool needs_init = false;
    Workspace ws(base.num_nodes);
    Rng rng(seed);
    Cancellation cancel{ctx};
    LeidenalgPartition result;
    // Optimiser.optimise_partition (Python): `while continue_iteration`, with
    // continue_iteration = diff > 0 for n_iterations < 0.
    while (true) {
        ctx.checkpoint();
        const double improvement = optimise_partition(base, partition, needs_init, resolution, rng, ws, cancel);
        result.improvement += improvement;
        ++result.passes;
        ctx.report(std::min(0.95, 0.15 * result.passes), "pass " + std::to_string(result.passes));
        const bool more = num_iterations < 0 ? improvement > 0 : result.passes < num_iterations;
        if (!more || result.passes >= max_passes) break;
    }
    if (base.to_internal.empty()) {
        result.membership = std::move(partition.membership);
    } else {
        result.membership.resize(partition.membership.size());
        for (std::size_t cell = 0; cell < result.membership.size(); ++cell)
            result.membership[cell] = partition.membership[static_cast<std::size_t>(base.to_internal[cell])];
    }
    result.num_communities = partition.num_communities;
    return result;
#endif
}

}  // namespace fathom::detail
