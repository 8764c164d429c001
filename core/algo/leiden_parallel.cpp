#include "core/algo/leiden_parallel.hpp"

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cfloat>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/types/JobContext.hpp"
#include "core/memory/uninitialized.hpp"

// After GVE-Leiden (Sahu 2023, arXiv:2312.13936; puzzlef/leiden-communities-openmp):
// local moving with vertex pruning, greedy refinement (only singletons move, within
// their community of the local moving), aggregation by the refined communities. Unlike
// GVE-Leiden, whose threads apply moves as they find them (the result depends on the
// schedule), moves here are decided in parallel against a frozen partition and applied
// in node order (see leiden_parallel.hpp), so the labels are the same for any number of
// threads.

namespace fathom::detail {
namespace {

using Node = std::int32_t;

/// Nodes whose moves are decided against one frozen partition. Fixed, not derived from
/// the thread count, so that the labels are the same on any machine; large enough to keep
/// every thread busy, small against the graph so that few decisions go stale.
constexpr std::size_t kBatch = 4096;
/// Nodes per parallel task within a batch, and aggregate nodes per aggregation task.
constexpr std::size_t kGrain = 256;
constexpr int kMaxMoveSweeps = 20;    ///< local moving sweeps per level (GVE-Leiden: 20)
constexpr int kMaxRefineSweeps = 20;  ///< refinement sweeps per level
constexpr int kMaxLevels = 100;       ///< aggregation levels per pass

/// One level's graph: both directions of every edge stored, rows sorted by target, no
/// self-loops in the rows (an aggregate node's internal weight counts only in its
/// strength).
struct Level {
    Node num_nodes = 0;
    std::vector<std::int64_t> offsets{0};
    // Filled completely after a resize (by parallel loops).
    UninitializedVector<Node> targets;
    UninitializedVector<double> weights;
    std::vector<double> strength;  ///< k_v: the row's sum plus the internal weight
};

/// A partition of one level with its per-community totals.
struct Communities {
    std::vector<Node> membership;  ///< per node
    std::vector<double> total;     ///< per community: summed strength K_c
    std::vector<Node> count;       ///< per community: nodes
};

/// One node's best move, decided against the frozen partition.
struct Proposal {
    Node target = -1;        ///< community to move to; -1: stay
    double to_target = 0.0;  ///< the node's weight to it
    double to_own = 0.0;     ///< the node's weight to its own community (itself excluded)
};

/// Per thread: running sums per community and the communities touched, in first-touch order.
struct Scratch {
    std::vector<double> sum;
    std::vector<Node> touched;
};

/// Buffers sized for the first (largest) level, reused by every level and pass.
struct Workspace {
    tbb::enumerable_thread_specific<Scratch> scratch;
    std::vector<Proposal> proposals = std::vector<Proposal>(kBatch);
    std::vector<std::uint8_t> conflict = std::vector<std::uint8_t>(kBatch);
    /// Per node: the batch sequence number it was last decided in (see `stamp`).
    std::vector<std::int64_t> slot;
    std::int64_t stamp = 0;  ///< sequence number of the current batch's first node
    std::vector<std::uint8_t> active;
    std::vector<Node> nodes;
    std::vector<Node> moved;
    /// Aggregate levels alternate between these two, whose storage is kept across levels
    /// and passes, as is the aggregation's per-task output: no fresh pages (each zeroed
    /// by the kernel) for every aggregate graph.
    Level levels[2];
    std::vector<std::vector<Node>> chunk_targets;
    std::vector<std::vector<double>> chunk_weights;

    explicit Workspace(Node num_nodes)
        : scratch([num_nodes] {
              Scratch fresh;
              fresh.sum.assign(static_cast<std::size_t>(num_nodes), 0.0);
              return fresh;
          }),
          slot(static_cast<std::size_t>(num_nodes), -1),
          active(static_cast<std::size_t>(num_nodes), 0) {}
};

template <typename Visit>
inline void for_edges(const Level& graph, Node v, Visit&& visit) {
    const auto begin = static_cast<std::size_t>(graph.offsets[static_cast<std::size_t>(v)]);
    const auto end = static_cast<std::size_t>(graph.offsets[static_cast<std::size_t>(v) + 1]);
    for (std::size_t edge = begin; edge < end; ++edge) visit(graph.targets[edge], graph.weights[edge]);
}

/// The first level: `graph` without its diagonal and zero entries, symmetrised as
/// (A + A^T) / 2 when its weights are not symmetric. Weights checked as leidenalg checks them.
Level first_level(const CsrGraph& graph, bool use_weights) {
    const auto num_nodes = static_cast<std::size_t>(graph.num_cells);
    const auto weight_of = [&](std::size_t entry) -> double {
        const float value = graph.values[entry];
        return value == 0.0f ? 0.0 : (use_weights ? static_cast<double>(value) : 1.0);
    };
    if (use_weights) {
        for (std::size_t row = 0; row < num_nodes; ++row) {
            for (auto entry = static_cast<std::size_t>(graph.row_offsets[row]); entry < static_cast<std::size_t>(graph.row_offsets[row + 1]); ++entry) {
                const float value = graph.values[entry];
                if (static_cast<std::size_t>(graph.col_indices[entry]) == row || value == 0.0f) continue;
                if (!(value > 0.0f && value <= FLT_MAX))
                    throw std::invalid_argument("leiden graph: row " + std::to_string(row) + ", column " +
                                                std::to_string(graph.col_indices[entry]) + " has weight " + std::to_string(value) +
                                                "; weights must be finite and >= 0");
            }
        }
    }
    // Symmetric weights, checked without reading any row but the one scanned: the
    // entries above the diagonal and the mirrored entries below it are the same multiset
    // of (smaller node, larger node, weight) iff the graph is symmetric; two sums of
    // 64-bit hashes (wrapping, so the same in any order) compare the multisets (unequal
    // ones agreeing in both sums are vanishingly unlikely). A binary search for every
    // mirrored entry took as long as a sweep of the local moving.
    struct Sums {
        std::uint64_t above[2] = {0, 0};
        std::uint64_t below[2] = {0, 0};
    };
    const auto mix = [](std::uint64_t value) {  // splitmix64's finaliser
        value = (value ^ (value >> 30)) * 0xBF58476D1CE4E5B9ull;
        value = (value ^ (value >> 27)) * 0x94D049BB133111EBull;
        return value ^ (value >> 31);
    };
    const Sums sums = tbb::parallel_reduce(
        tbb::blocked_range<std::size_t>(0, num_nodes, 4096), Sums{},
        [&](const tbb::blocked_range<std::size_t>& range, Sums partial) {
            for (std::size_t row = range.begin(); row != range.end(); ++row)
                for (auto entry = static_cast<std::size_t>(graph.row_offsets[row]); entry < static_cast<std::size_t>(graph.row_offsets[row + 1]); ++entry) {
                    const auto column = static_cast<std::size_t>(graph.col_indices[entry]);
                    const double weight = weight_of(entry);
                    if (column == row || weight == 0.0) continue;
                    const std::uint64_t low = std::min(row, column), high = std::max(row, column);
                    const std::uint64_t key = mix(mix(low * 0x9E3779B97F4A7C15ull + high) ^ std::bit_cast<std::uint64_t>(weight));
                    auto* target = column > row ? partial.above : partial.below;
                    target[0] += key;
                    target[1] += mix(key ^ 0xD6E8FEB86659FD93ull);
                }
            return partial;
        },
        [](Sums left, const Sums& right) {
            for (int index = 0; index < 2; ++index) {
                left.above[index] += right.above[index];
                left.below[index] += right.below[index];
            }
            return left;
        });
    const bool asymmetric = sums.above[0] != sums.below[0] || sums.above[1] != sums.below[1];
    // The rows of A^T (by increasing source) when A is asymmetric.
    std::vector<std::int64_t> transposed_offsets;
    std::vector<Node> transposed_sources;
    std::vector<double> transposed_weights;
    if (asymmetric) {
        transposed_offsets.assign(num_nodes + 1, 0);
        for (const Node column : graph.col_indices) ++transposed_offsets[static_cast<std::size_t>(column) + 1];
        for (std::size_t node = 0; node < num_nodes; ++node) transposed_offsets[node + 1] += transposed_offsets[node];
        transposed_sources.resize(graph.col_indices.size());
        transposed_weights.resize(graph.col_indices.size());
        std::vector<std::int64_t> cursor(transposed_offsets.begin(), transposed_offsets.end() - 1);
        for (std::size_t row = 0; row < num_nodes; ++row)
            for (auto entry = static_cast<std::size_t>(graph.row_offsets[row]); entry < static_cast<std::size_t>(graph.row_offsets[row + 1]); ++entry) {
                const auto slot = static_cast<std::size_t>(cursor[static_cast<std::size_t>(graph.col_indices[entry])]++);
                transposed_sources[slot] = static_cast<Node>(row);
                transposed_weights[slot] = weight_of(entry);
            }
    }
    // Visits row `row` of the level: A's row, or the merge of A's and A^T's rows halved.
    const auto visit_row = [&](std::size_t row, auto&& visit) {
        auto entry = static_cast<std::size_t>(graph.row_offsets[row]);
        const auto entry_end = static_cast<std::size_t>(graph.row_offsets[row + 1]);
        if (!asymmetric) {
            for (; entry < entry_end; ++entry) {
                const double weight = weight_of(entry);
                if (static_cast<std::size_t>(graph.col_indices[entry]) != row && weight != 0.0) visit(graph.col_indices[entry], weight);
            }
            return;
        }
        auto other = static_cast<std::size_t>(transposed_offsets[row]);
        const auto other_end = static_cast<std::size_t>(transposed_offsets[row + 1]);
        while (entry < entry_end || other < other_end) {
            const Node column = entry < entry_end ? graph.col_indices[entry] : std::numeric_limits<Node>::max();
            const Node source = other < other_end ? transposed_sources[other] : std::numeric_limits<Node>::max();
            const Node target = std::min(column, source);
            double weight = 0.0;
            if (column == target) weight += 0.5 * weight_of(entry++);
            if (source == target) weight += 0.5 * transposed_weights[other++];
            if (static_cast<std::size_t>(target) != row && weight != 0.0) visit(target, weight);
        }
    };
    Level level;
    level.num_nodes = static_cast<Node>(num_nodes);
    level.offsets.assign(num_nodes + 1, 0);
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, num_nodes, 1024), [&](const tbb::blocked_range<std::size_t>& range) {
        for (std::size_t row = range.begin(); row != range.end(); ++row) {
            std::int64_t degree = 0;
            visit_row(row, [&](Node, double) { ++degree; });
            level.offsets[row + 1] = degree;
        }
    });
    for (std::size_t node = 0; node < num_nodes; ++node) level.offsets[node + 1] += level.offsets[node];
    level.targets.resize(static_cast<std::size_t>(level.offsets.back()));
    level.weights.resize(static_cast<std::size_t>(level.offsets.back()));
    level.strength.assign(num_nodes, 0.0);
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, num_nodes, 1024), [&](const tbb::blocked_range<std::size_t>& range) {
        for (std::size_t row = range.begin(); row != range.end(); ++row) {
            auto out = static_cast<std::size_t>(level.offsets[row]);
            double strength = 0.0;
            visit_row(row, [&](Node target, double weight) {
                level.targets[out] = target;
                level.weights[out++] = weight;
                strength += weight;
            });
            level.strength[row] = strength;
        }
    });
    return level;
}

/// Totals and counts of `partition.membership` (community numbers < the level's nodes),
/// summed in node order.
void init_totals(const Level& graph, Communities& partition) {
    const auto num_nodes = static_cast<std::size_t>(graph.num_nodes);
    partition.total.assign(num_nodes, 0.0);
    partition.count.assign(num_nodes, 0);
    for (std::size_t v = 0; v < num_nodes; ++v) {
        const auto community = static_cast<std::size_t>(partition.membership[v]);
        partition.total[community] += graph.strength[v];
        ++partition.count[community];
    }
}

/// v's best move against the current partition: the neighbouring community with the
/// largest modularity gain (ties: the first touched in row order), if it gains.
/// kRefine: only a singleton moves, and only to communities of neighbours within its
/// `bound` community.
template <bool kRefine>
Proposal propose(const Level& graph, const Communities& partition, const std::vector<Node>* bound, Node v, double scale,
                 Scratch& scratch) {
    Proposal proposal;
    const Node own = partition.membership[static_cast<std::size_t>(v)];
    if constexpr (kRefine) {
        if (partition.count[static_cast<std::size_t>(own)] != 1) return proposal;
    }
    for_edges(graph, v, [&](Node u, double weight) {
        if constexpr (kRefine) {
            if ((*bound)[static_cast<std::size_t>(u)] != (*bound)[static_cast<std::size_t>(v)]) return;
        }
        const auto community = static_cast<std::size_t>(partition.membership[static_cast<std::size_t>(u)]);
        if (scratch.sum[community] == 0.0) scratch.touched.push_back(static_cast<Node>(community));  // weights are > 0
        scratch.sum[community] += weight;
    });
    const double strength = graph.strength[static_cast<std::size_t>(v)];
    const double to_own = scratch.sum[static_cast<std::size_t>(own)];
    const double stay = to_own - scale * strength * (partition.total[static_cast<std::size_t>(own)] - strength);
    double best = 0.0;
    for (const Node community : scratch.touched) {
        const auto index = static_cast<std::size_t>(community);
        if (community != own) {
            const double gain = scratch.sum[index] - scale * strength * partition.total[index] - stay;
            if (gain > best) {
                best = gain;
                proposal.target = community;
                proposal.to_target = scratch.sum[index];
            }
        }
    }
    proposal.to_own = to_own;
    for (const Node community : scratch.touched) scratch.sum[static_cast<std::size_t>(community)] = 0.0;
    scratch.touched.clear();
    return proposal;
}

/// Decides and applies the moves of `nodes` (in this order) in batches; returns the
/// moves made. Local moving (`active` given): a node whose neighbour earlier in its batch
/// proposed a move has its weights summed again before its own move is checked, and the
/// neighbours of moved nodes are marked active. Refinement: a node moves only while it
/// is alone, and only into a community that still has members (so that each refined
/// community stays connected); its weight to that community can only have grown since
/// the batch began, so the frozen one is a safe lower bound.
template <bool kRefine>
std::int64_t sweep(const Level& graph, Communities& partition, const std::vector<Node>* bound, const std::vector<Node>& nodes,
                   double scale, Workspace& ws, JobContext& ctx) {
    std::int64_t moves = 0;
    for (std::size_t start = 0; start < nodes.size(); start += kBatch) {
        ctx.checkpoint();
        const std::size_t count = std::min(kBatch, nodes.size() - start);
        tbb::parallel_for(tbb::blocked_range<std::size_t>(0, count, kGrain), [&](const tbb::blocked_range<std::size_t>& range) {
            Scratch& scratch = ws.scratch.local();
            for (std::size_t index = range.begin(); index != range.end(); ++index)
                ws.proposals[index] = propose<kRefine>(graph, partition, bound, nodes[start + index], scale, scratch);
        });
        if constexpr (!kRefine) {
            const std::int64_t stamp = ws.stamp;
            tbb::parallel_for(tbb::blocked_range<std::size_t>(0, count, kGrain), [&](const tbb::blocked_range<std::size_t>& range) {
                for (std::size_t index = range.begin(); index != range.end(); ++index)
                    ws.slot[static_cast<std::size_t>(nodes[start + index])] = stamp + static_cast<std::int64_t>(index);
            });
            tbb::parallel_for(tbb::blocked_range<std::size_t>(0, count, kGrain), [&](const tbb::blocked_range<std::size_t>& range) {
                for (std::size_t index = range.begin(); index != range.end(); ++index) {
                    ws.conflict[index] = 0;
                    if (ws.proposals[index].target < 0) continue;
                    for_edges(graph, nodes[start + index], [&](Node u, double) {
                        const std::int64_t slot = ws.slot[static_cast<std::size_t>(u)];
                        if (slot >= stamp && slot < stamp + static_cast<std::int64_t>(index) &&
                            ws.proposals[static_cast<std::size_t>(slot - stamp)].target >= 0)
                            ws.conflict[index] = 1;
                    });
                }
            });
            ws.stamp += static_cast<std::int64_t>(count);
        }
        ws.moved.clear();
        for (std::size_t index = 0; index < count; ++index) {
            const Proposal& proposal = ws.proposals[index];
            if (proposal.target < 0) continue;
            const Node v = nodes[start + index];
            const auto own = static_cast<std::size_t>(partition.membership[static_cast<std::size_t>(v)]);
            const auto target = static_cast<std::size_t>(proposal.target);
            const double strength = graph.strength[static_cast<std::size_t>(v)];
            double gain = 0.0;
            if constexpr (kRefine) {
                if (partition.count[own] != 1 || partition.count[target] == 0) continue;
                gain = proposal.to_target - scale * strength * partition.total[target];
            } else {
                double to_target = proposal.to_target, to_own = proposal.to_own;
                if (ws.conflict[index]) {
                    to_target = 0.0;
                    to_own = 0.0;
                    for_edges(graph, v, [&](Node u, double weight) {
                        const auto community = static_cast<std::size_t>(partition.membership[static_cast<std::size_t>(u)]);
                        if (community == target) to_target += weight;
                        if (community == own) to_own += weight;
                    });
                }
                gain = (to_target - to_own) - scale * strength * (partition.total[target] - partition.total[own] + strength);
            }
            if (!(gain > 0.0)) continue;
            partition.total[own] -= strength;
            partition.total[target] += strength;
            --partition.count[own];
            ++partition.count[target];
            partition.membership[static_cast<std::size_t>(v)] = proposal.target;
            ws.moved.push_back(v);
        }
        moves += static_cast<std::int64_t>(ws.moved.size());
        if constexpr (!kRefine) {
            tbb::parallel_for(tbb::blocked_range<std::size_t>(0, ws.moved.size(), kGrain), [&](const tbb::blocked_range<std::size_t>& range) {
                for (std::size_t index = range.begin(); index != range.end(); ++index)
                    for_edges(graph, ws.moved[index], [&](Node u, double) {
                        std::atomic_ref<std::uint8_t>(ws.active[static_cast<std::size_t>(u)]).store(1, std::memory_order_relaxed);
                    });
            });
        }
    }
    return moves;
}

/// Local moving: sweeps over the active nodes (all at first; then the neighbours of the
/// nodes that moved) until none moves.
void move_nodes(const Level& graph, Communities& partition, double scale, Workspace& ws, JobContext& ctx) {
    const auto num_nodes = static_cast<std::size_t>(graph.num_nodes);
    std::fill(ws.active.begin(), ws.active.begin() + static_cast<std::ptrdiff_t>(num_nodes), std::uint8_t{1});
    for (int round = 0; round < kMaxMoveSweeps; ++round) {
        ws.nodes.clear();
        for (std::size_t v = 0; v < num_nodes; ++v)
            if (ws.active[v]) {
                ws.nodes.push_back(static_cast<Node>(v));
                ws.active[v] = 0;
            }
        if (ws.nodes.empty() || sweep<false>(graph, partition, nullptr, ws.nodes, scale, ws, ctx) == 0) break;
    }
}

/// Refinement: singletons within each community of `bound`, merged greedily.
Communities refine(const Level& graph, const std::vector<Node>& bound, double scale, Workspace& ws, JobContext& ctx) {
    const auto num_nodes = static_cast<std::size_t>(graph.num_nodes);
    Communities refined;
    refined.membership.resize(num_nodes);
    std::iota(refined.membership.begin(), refined.membership.end(), 0);
    refined.total = graph.strength;
    refined.count.assign(num_nodes, 1);
    for (int round = 0; round < kMaxRefineSweeps; ++round) {
        ws.nodes.clear();
        for (std::size_t v = 0; v < num_nodes; ++v)
            if (refined.count[static_cast<std::size_t>(refined.membership[v])] == 1) ws.nodes.push_back(static_cast<Node>(v));
        if (ws.nodes.empty() || sweep<true>(graph, refined, &bound, ws.nodes, scale, ws, ctx) == 0) break;
    }
    return refined;
}

/// Renumbers communities to [0, k) by their first node; returns k.
Node renumber(std::vector<Node>& membership, std::size_t num_communities) {
    std::vector<Node> renamed(num_communities, -1);
    Node next = 0;
    for (auto& community : membership) {
        auto& name = renamed[static_cast<std::size_t>(community)];
        if (name < 0) name = next++;
        community = name;
    }
    return next;
}

/// The graph of the communities of `membership` (numbered [0, num_communities)): an
/// edge between two communities weighs the edges between their members; a community's
/// strength is its members'. Each aggregate row is summed on one thread in member and
/// edge order, then sorted by target.
void aggregate(const Level& graph, const std::vector<Node>& membership, Node num_communities, Workspace& ws, Level& out) {
    const auto count = static_cast<std::size_t>(num_communities);
    std::vector<std::int64_t> member_offsets(count + 1, 0);
    for (const Node community : membership) ++member_offsets[static_cast<std::size_t>(community) + 1];
    for (std::size_t community = 0; community < count; ++community) member_offsets[community + 1] += member_offsets[community];
    std::vector<Node> members(membership.size());
    {
        std::vector<std::int64_t> cursor(member_offsets.begin(), member_offsets.end() - 1);
        for (std::size_t v = 0; v < membership.size(); ++v)
            members[static_cast<std::size_t>(cursor[static_cast<std::size_t>(membership[v])]++)] = static_cast<Node>(v);
    }
    out.num_nodes = num_communities;
    out.strength.resize(count);
    out.offsets.resize(count + 1);
    out.offsets[0] = 0;
    const std::size_t num_chunks = (count + kGrain - 1) / kGrain;
    if (ws.chunk_targets.size() < num_chunks) {
        ws.chunk_targets.resize(num_chunks);
        ws.chunk_weights.resize(num_chunks);
    }
    auto& chunk_targets = ws.chunk_targets;
    auto& chunk_weights = ws.chunk_weights;
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, num_chunks, 1), [&](const tbb::blocked_range<std::size_t>& range) {
        Scratch& scratch = ws.scratch.local();
        for (std::size_t chunk = range.begin(); chunk != range.end(); ++chunk) {
            auto& targets = chunk_targets[chunk];
            auto& weights = chunk_weights[chunk];
            targets.clear();
            weights.clear();
            const std::size_t chunk_end = std::min(count, (chunk + 1) * kGrain);
            std::int64_t bound = 0;  // the members' edges: at least the chunk's aggregate edges
            for (auto member = member_offsets[chunk * kGrain]; member < member_offsets[chunk_end]; ++member) {
                const auto v = static_cast<std::size_t>(members[static_cast<std::size_t>(member)]);
                bound += graph.offsets[v + 1] - graph.offsets[v];
            }
            targets.reserve(static_cast<std::size_t>(bound));
            weights.reserve(static_cast<std::size_t>(bound));
            for (std::size_t community = chunk * kGrain; community < chunk_end; ++community) {
                double strength = 0.0;
                for (auto member = member_offsets[community]; member < member_offsets[community + 1]; ++member) {
                    const Node v = members[static_cast<std::size_t>(member)];
                    strength += graph.strength[static_cast<std::size_t>(v)];
                    for_edges(graph, v, [&](Node u, double weight) {
                        const auto other = static_cast<std::size_t>(membership[static_cast<std::size_t>(u)]);
                        if (other == community) return;
                        if (scratch.sum[other] == 0.0) scratch.touched.push_back(static_cast<Node>(other));
                        scratch.sum[other] += weight;
                    });
                }
                std::sort(scratch.touched.begin(), scratch.touched.end());
                for (const Node other : scratch.touched) {
                    targets.push_back(other);
                    weights.push_back(scratch.sum[static_cast<std::size_t>(other)]);
                    scratch.sum[static_cast<std::size_t>(other)] = 0.0;
                }
                out.offsets[community + 1] = static_cast<std::int64_t>(scratch.touched.size());
                out.strength[community] = strength;
                scratch.touched.clear();
            }
        }
    });
    for (std::size_t community = 0; community < count; ++community) out.offsets[community + 1] += out.offsets[community];
    out.targets.resize(static_cast<std::size_t>(out.offsets.back()));
    out.weights.resize(static_cast<std::size_t>(out.offsets.back()));
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, num_chunks, 1), [&](const tbb::blocked_range<std::size_t>& range) {
        for (std::size_t chunk = range.begin(); chunk != range.end(); ++chunk) {
            const auto at = static_cast<std::ptrdiff_t>(out.offsets[chunk * kGrain]);
            std::copy(chunk_targets[chunk].begin(), chunk_targets[chunk].end(), out.targets.begin() + at);
            std::copy(chunk_weights[chunk].begin(), chunk_weights[chunk].end(), out.weights.begin() + at);
        }
    });
}

/// One pass from `start` (a partition of the first level's nodes, numbers < its nodes):
/// levels of local moving, refinement and aggregation until a level merges nothing.
/// Returns the partition of the first level's nodes.
std::vector<Node> run_pass(const Level& first, std::vector<Node> start, double resolution, double total_weight, Workspace& ws,
                           JobContext& ctx) {
    const double scale = resolution / total_weight;
    const auto num_nodes = static_cast<std::size_t>(first.num_nodes);
    std::vector<Node> node_of(num_nodes);  // first-level node -> node of the current level
    std::iota(node_of.begin(), node_of.end(), 0);
    const Level* graph = &first;
    int slot = 0;  // the workspace's level the next aggregate goes to
    Communities partition;
    partition.membership = std::move(start);
    for (int level = 0; level < kMaxLevels; ++level) {
        init_totals(*graph, partition);
        move_nodes(*graph, partition, scale, ws, ctx);
        const auto level_nodes = static_cast<std::size_t>(graph->num_nodes);
        const Node communities = renumber(partition.membership, level_nodes);
        if (static_cast<std::size_t>(communities) == level_nodes) break;
        Communities refined = refine(*graph, partition.membership, scale, ws, ctx);
        const Node pieces = renumber(refined.membership, level_nodes);
        if (static_cast<std::size_t>(pieces) == level_nodes) break;
        // The next level's nodes are the refined communities, each starting in the
        // community of the local moving that holds it.
        std::vector<Node> next(static_cast<std::size_t>(pieces));
        for (std::size_t v = 0; v < level_nodes; ++v)
            next[static_cast<std::size_t>(refined.membership[v])] = partition.membership[v];
        tbb::parallel_for(tbb::blocked_range<std::size_t>(0, num_nodes, 4096), [&](const tbb::blocked_range<std::size_t>& range) {
            for (std::size_t v = range.begin(); v != range.end(); ++v)
                node_of[v] = refined.membership[static_cast<std::size_t>(node_of[v])];
        });
        ctx.checkpoint();
        aggregate(*graph, refined.membership, pieces, ws, ws.levels[slot]);
        graph = &ws.levels[slot];
        slot = 1 - slot;
        partition.membership = std::move(next);
    }
    std::vector<Node> labels(num_nodes);
    for (std::size_t v = 0; v < num_nodes; ++v) labels[v] = partition.membership[static_cast<std::size_t>(node_of[v])];
    return labels;
}

/// Modularity with the resolution of `labels` on the first level (both directions of
/// every edge stored); per-node sums on threads, added in node order.
double quality_of(const Level& graph, const std::vector<Node>& labels, double resolution, double total_weight) {
    const auto num_nodes = static_cast<std::size_t>(graph.num_nodes);
    std::vector<double> inside(num_nodes, 0.0);
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, num_nodes, 4096), [&](const tbb::blocked_range<std::size_t>& range) {
        for (std::size_t v = range.begin(); v != range.end(); ++v) {
            double sum = 0.0;
            for_edges(graph, static_cast<Node>(v), [&](Node u, double weight) {
                if (labels[static_cast<std::size_t>(u)] == labels[v]) sum += weight;
            });
            inside[v] = sum;
        }
    });
    std::vector<double> totals(num_nodes, 0.0);
    double internal = 0.0;
    for (std::size_t v = 0; v < num_nodes; ++v) {
        internal += inside[v];
        totals[static_cast<std::size_t>(labels[v])] += graph.strength[v];
    }
    double expected = 0.0;
    for (const double total : totals) expected += (total / total_weight) * (total / total_weight);
    return internal / total_weight - resolution * expected;
}

/// Splits every community into its connected components (which only raises the
/// modularity: no edge is lost, the squared totals shrink) and numbers them by first
/// node; returns their count.
Node split_disconnected(const Level& graph, std::vector<Node>& labels) {
    const auto num_nodes = static_cast<std::size_t>(graph.num_nodes);
    std::vector<Node> component(num_nodes, -1);
    std::vector<Node> queue;
    Node next = 0;
    for (std::size_t root = 0; root < num_nodes; ++root) {
        if (component[root] >= 0) continue;
        component[root] = next;
        queue.assign(1, static_cast<Node>(root));
        for (std::size_t head = 0; head < queue.size(); ++head)
            for_edges(graph, queue[head], [&](Node u, double) {
                const auto index = static_cast<std::size_t>(u);
                if (component[index] < 0 && labels[index] == labels[root]) {
                    component[index] = next;
                    queue.push_back(u);
                }
            });
        ++next;
    }
    labels = std::move(component);
    return next;
}

}  // namespace

ParallelLeidenPartition parallel_leiden_optimise(const CsrGraph& graph, double resolution, int num_iterations, bool use_weights,
                                                 JobContext& ctx, int max_passes) {
    ctx.checkpoint();
    const Level first = first_level(graph, use_weights);
    const auto num_nodes = static_cast<std::size_t>(first.num_nodes);
    ParallelLeidenPartition result;
    result.membership.resize(num_nodes);
    std::iota(result.membership.begin(), result.membership.end(), 0);
    result.num_communities = static_cast<int>(num_nodes);
    double total_weight = 0.0;
    for (const double strength : first.strength) total_weight += strength;
    if (total_weight <= 0.0) return result;  // no edges: every node alone
    Workspace ws(first.num_nodes);
    double quality = quality_of(first, result.membership, resolution, total_weight);
    const int passes = num_iterations > 0 ? num_iterations : max_passes;
    for (int pass = 0; pass < passes; ++pass) {
        std::vector<Node> labels = run_pass(first, result.membership, resolution, total_weight, ws, ctx);
        const double next = quality_of(first, labels, resolution, total_weight);
        ++result.passes;
        ctx.report(std::min(0.95, 0.2 * result.passes), "pass " + std::to_string(result.passes));
        const bool improved = next - quality > 1e-7 * std::fabs(next);
        if (next >= quality || num_iterations > 0) {
            result.membership = std::move(labels);
            quality = next;
        }
        if (num_iterations < 0 && !improved) break;
    }
    result.num_communities = static_cast<int>(split_disconnected(first, result.membership));
    result.quality = quality_of(first, result.membership, resolution, total_weight);
    return result;
}

}  // namespace fathom::detail
