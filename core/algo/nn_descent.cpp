#include "core/algo/nn_descent.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>

#include "core/algo/l2_kernel.hpp"
#include "core/types/JobContext.hpp"

namespace fathom::detail {

namespace {

constexpr std::uint64_t kNoCandidate = std::numeric_limits<std::uint64_t>::max();
constexpr std::int64_t kGrain = 512;  // points per parallel task
constexpr int kMaxCandidates = kNnDescentMaxCandidates;
constexpr int kMaxList = kNnDescentMaxList;
constexpr double kSearchShare = 0.9;  // of the progress bar; the caller's re-ranking takes the rest

std::uint64_t mix(std::uint64_t value) noexcept {  // splitmix64's finaliser
    value += 0x9e3779b97f4a7c15ULL;
    value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ULL;
    value = (value ^ (value >> 27)) * 0x94d049bb133111ebULL;
    return value ^ (value >> 31);
}

/// The points' first num_dims columns as float rows padded with zeros to `stride`.
struct PaddedRows {
    std::size_t stride = 0;
    std::vector<float> values;
    const float* row(std::int64_t point) const noexcept { return values.data() + static_cast<std::size_t>(point) * stride; }
};

/// Dot product of two padded rows in kL2Lanes fixed lanes (vectorised without -ffast-math).
float dot(const float* a, const float* b, std::size_t stride) noexcept {
    float lanes[kL2Lanes] = {};
    for (std::size_t index = 0; index < stride; index += kL2Lanes)
        for (std::size_t lane = 0; lane < kL2Lanes; ++lane) lanes[lane] += a[index + lane] * b[index + lane];
    return ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
}

/// One random-projection tree (pynndescent's euclidean_random_projection_split: the
/// hyperplane halfway between two random points of the node, ties to a random side, a
/// split that leaves one side empty replaced by halving). Reorders `order` so that every
/// leaf is a contiguous range and returns the leaf boundaries (0, ..., size), leaves in
/// depth-first order (a space-filling order of the points).
std::vector<std::int64_t> build_tree(const PaddedRows& rows, std::vector<std::int32_t>& order, int leaf_size,
                                     std::uint64_t seed) {
    std::mt19937_64 generator(seed);
    const std::size_t stride = rows.stride;
    std::vector<std::int64_t> leaves{0};
    std::vector<std::pair<std::int64_t, std::int64_t>> stack{{0, static_cast<std::int64_t>(order.size())}};
    std::vector<float> normal(stride);
    std::vector<std::int32_t> right;
    while (!stack.empty()) {
        const auto [begin, end] = stack.back();
        stack.pop_back();
        const std::int64_t size = end - begin;
        if (size <= leaf_size) {
            leaves.push_back(end);
            continue;
        }
        const auto first = static_cast<std::int64_t>(generator() % static_cast<std::uint64_t>(size));
        auto second = static_cast<std::int64_t>(generator() % static_cast<std::uint64_t>(size - 1));
        if (second >= first) ++second;
        const float* a = rows.row(order[static_cast<std::size_t>(begin + first)]);
        const float* b = rows.row(order[static_cast<std::size_t>(begin + second)]);
        float offset = 0.0f;
        for (std::size_t dim = 0; dim < stride; ++dim) {
            normal[dim] = a[dim] - b[dim];
            offset -= normal[dim] * (a[dim] + b[dim]) * 0.5f;
        }
        // Stable partition: left side in place, right side through a buffer.
        right.clear();
        std::int64_t left_end = begin;
        std::uint64_t random_bits = 0;
        int bits_left = 0;
        for (std::int64_t position = begin; position < end; ++position) {
            const std::int32_t point = order[static_cast<std::size_t>(position)];
            const float margin = offset + dot(normal.data(), rows.row(point), stride);
            bool go_left = margin < 0.0f;
            if (margin == 0.0f) {
                if (bits_left == 0) {
                    random_bits = generator();
                    bits_left = 64;
                }
                go_left = (random_bits & 1u) != 0;
                random_bits >>= 1;
                --bits_left;
            }
            if (go_left)
                order[static_cast<std::size_t>(left_end++)] = point;
            else
                right.push_back(point);
        }
        std::copy(right.begin(), right.end(), order.begin() + left_end);
        std::int64_t middle = left_end;
        if (middle == begin || middle == end) middle = begin + size / 2;  // all on one side (duplicates)
        stack.emplace_back(middle, end);  // right popped after the left: leaves in order
        stack.emplace_back(begin, middle);
    }
    return leaves;
}

/// (distance, index) as one integer whose order is the lexicographic order of the pair:
/// the bits of a non-negative float order like its value.
std::uint64_t entry_key(float distance, std::int32_t index) noexcept {
    std::uint32_t bits;
    std::memcpy(&bits, &distance, sizeof bits);
    return (static_cast<std::uint64_t>(bits) << 32) | static_cast<std::uint32_t>(index);
}
constexpr std::uint64_t kEmpty = std::numeric_limits<std::uint64_t>::max();  // an empty slot (sorts last)
std::int32_t entry_index(std::uint64_t key) noexcept { return static_cast<std::int32_t>(key & 0xffffffffu); }

/// Per-point neighbour lists of fixed length, sorted by (distance, index) keys, with
/// pynndescent's new/old flags. Written only by apply_updates, one writer per point.
class NeighborLists {
public:
    /// Flag values: old (already joined), new (to be joined), inserted in the current round.
    static constexpr std::uint8_t kOld = 0, kNew = 1, kInserted = 2;

    NeighborLists(std::int64_t num_points, int pool)
        : m_pool(pool),
          m_keys(static_cast<std::size_t>(num_points) * pool, kEmpty),
          m_flags(m_keys.size(), kOld),
          m_locks(static_cast<std::size_t>(num_points)) {}

    int pool() const noexcept { return m_pool; }
    std::uint64_t key(std::int64_t point, int slot) const noexcept { return m_keys[offset(point) + static_cast<std::size_t>(slot)]; }
    /// Key of the last entry of `point`: a proposal must be below it to enter.
    std::uint64_t worst(std::int64_t point) const noexcept { return m_keys[offset(point) + static_cast<std::size_t>(m_pool - 1)]; }
    std::uint8_t* flags(std::int64_t point) noexcept { return m_flags.data() + offset(point); }

    /// Adds the entry `key` to the list of `point` unless it is there already or not
    /// among the pool nearest. The outcome of a set of inserts does not depend on their
    /// order: the list ends as the pool smallest distinct keys. A pair's distance is
    /// always the same float (l2_padded_many), so an entry present has the same key.
    /// Single writer: the caller owns `point` (see insert_shared otherwise).
    void insert(std::int64_t point, std::uint64_t key) noexcept {
        if (key < worst(point)) place(point, key);
    }

    /// insert() from any thread, with other threads inserting into the same lists: each
    /// list is locked while it changes, and its last key is read and written atomically
    /// (the check before the lock). Still order independent: the last key only falls, so
    /// a key turned away at any time would not be among the pool smallest at the end.
    void insert_shared(std::int64_t point, std::uint64_t key) noexcept {
        if (key >= worst_shared(point)) return;
        std::atomic<std::uint8_t>& lock = m_locks[static_cast<std::size_t>(point)];
        while (lock.exchange(1, std::memory_order_acquire) != 0)
            while (lock.load(std::memory_order_relaxed) != 0) {
            }
        if (key < worst(point)) place(point, key);
        lock.store(0, std::memory_order_release);
    }

    /// The last key of `point`, read atomically (for use while insert_shared runs).
    std::uint64_t worst_shared(std::int64_t point) const noexcept {
        return __atomic_load_n(m_keys.data() + offset(point) + static_cast<std::size_t>(m_pool - 1), __ATOMIC_RELAXED);
    }

    /// The keys of `point` (sorted; kEmpty at the end), for a writer that owns the point.
    std::uint64_t* keys(std::int64_t point) noexcept { return m_keys.data() + offset(point); }

    /// Entries inserted since the last call (now marked new).
    std::int64_t settle_inserted() {
        return tbb::parallel_reduce(
            tbb::blocked_range<std::size_t>(0, m_flags.size(), 1 << 16), std::int64_t{0},
            [&](const tbb::blocked_range<std::size_t>& range, std::int64_t count) {
                for (std::size_t entry = range.begin(); entry != range.end(); ++entry)
                    if (m_flags[entry] == kInserted) {
                        m_flags[entry] = kNew;
                        ++count;
                    }
                return count;
            },
            [](std::int64_t a, std::int64_t b) { return a + b; });
    }

private:
    std::size_t offset(std::int64_t point) const noexcept { return static_cast<std::size_t>(point) * m_pool; }

    /// Puts `key` (below the last key) in its place unless present; the last key is
    /// written atomically.
    void place(std::int64_t point, std::uint64_t key) noexcept {
        std::uint64_t* keys = m_keys.data() + offset(point);
        const int last = m_pool - 1;
        int slot = last;
        while (slot > 0 && keys[slot - 1] > key) --slot;
        if (slot > 0 && keys[slot - 1] == key) return;
        std::uint8_t* flags = m_flags.data() + offset(point);
        if (slot < last) {
            __atomic_store_n(keys + last, keys[last - 1], __ATOMIC_RELAXED);
            flags[last] = flags[last - 1];
            for (int moved = last - 1; moved > slot; --moved) {
                keys[moved] = keys[moved - 1];
                flags[moved] = flags[moved - 1];
            }
            keys[slot] = key;
        } else {
            __atomic_store_n(keys + last, key, __ATOMIC_RELAXED);
        }
        flags[slot] = kInserted;
    }

    int m_pool;
    std::vector<std::uint64_t> m_keys;
    std::vector<std::uint8_t> m_flags;
    std::vector<std::atomic<std::uint8_t>> m_locks;  // one per point, for insert_shared
};

/// The first entries of `lists` for `point` (up to the first empty slot) as indices into
/// `out`; returns the count.
int list_indices(const NeighborLists& lists, std::int64_t point, std::int32_t* out) noexcept {
    int count = 0;
    while (count < lists.pool() && lists.key(point, count) != kEmpty) {
        out[count] = entry_index(lists.key(point, count));
        ++count;
    }
    return count;
}

/// Per-point candidate samples of fixed length: the max_candidates smallest
/// (random priority, index) keys offered, whatever the order of the offers.
class CandidateLists {
public:
    CandidateLists(std::int64_t num_points, int length)
        : m_length(length), m_keys(static_cast<std::size_t>(num_points) * length, kNoCandidate) {}

    void clear() {
        tbb::parallel_for(tbb::blocked_range<std::size_t>(0, m_keys.size(), 1 << 16),
                          [&](const tbb::blocked_range<std::size_t>& range) {
                              std::fill(m_keys.begin() + static_cast<std::ptrdiff_t>(range.begin()),
                                        m_keys.begin() + static_cast<std::ptrdiff_t>(range.end()), kNoCandidate);
                          });
    }
    /// Whether `point` has a candidate.
    bool any(std::int64_t point) const noexcept { return m_keys[static_cast<std::size_t>(point) * m_length] != kNoCandidate; }
    /// Offers `candidate` with `priority` to `point` (one writer per point at a time).
    void offer(std::int32_t point, std::int32_t candidate, std::uint32_t priority) noexcept {
        const std::uint64_t key = (static_cast<std::uint64_t>(priority) << 32) | static_cast<std::uint32_t>(candidate);
        std::uint64_t* keys = m_keys.data() + static_cast<std::size_t>(point) * m_length;
        if (key >= keys[m_length - 1]) return;
        int slot = 0;
        while (keys[slot] < key) ++slot;
        if (keys[slot] == key) return;
        std::memmove(keys + slot + 1, keys + slot, static_cast<std::size_t>(m_length - 1 - slot) * sizeof(std::uint64_t));
        keys[slot] = key;
    }
    /// The candidates of `point` (at most max_candidates) into `out`; returns the count.
    int get(std::int64_t point, std::int32_t* out) const noexcept {
        const std::uint64_t* keys = m_keys.data() + static_cast<std::size_t>(point) * m_length;
        int count = 0;
        while (count < m_length && keys[count] != kNoCandidate) {
            out[count] = static_cast<std::int32_t>(keys[count] & 0xffffffffu);
            ++count;
        }
        return count;
    }

private:
    int m_length;
    std::vector<std::uint64_t> m_keys;
};

template <typename Body>
void for_points(std::int64_t num_points, JobContext& ctx, const Body& body) {
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, num_points, kGrain),
                      [&](const tbb::blocked_range<std::int64_t>& range) {
                          ctx.checkpoint();
                          for (std::int64_t point = range.begin(); point != range.end(); ++point)
                              body(static_cast<std::int32_t>(point));
                      });
}

/// The final graph search (NnDescentParams::search_ef): every point's list searched for
/// again, best first, over the graph of the lists made undirected, and replaced by the
/// pool nearest found. Each point's search reads only the lists as they were before the
/// pass, so the outcome does not depend on the order or the threads.
void graph_search(const PaddedRows& rows, NeighborLists& lists, int search_ef, JobContext& ctx) {
    const std::int64_t num_points = static_cast<std::int64_t>(rows.values.size() / rows.stride);
    const int pool = lists.pool();
    const float* base = rows.values.data();
    const std::size_t stride = rows.stride;
    const int ef = std::max(search_ef, pool);
    // Reverse neighbours: the pool nearest points that list each point (keys are
    // symmetric: a pair's distance is the same float both ways), inserted from any thread.
    NeighborLists reverse(num_points, pool);
    for_points(num_points, ctx, [&](std::int32_t point) {
        for (int slot = 0; slot < pool; ++slot) {
            const std::uint64_t key = lists.key(point, slot);
            if (key == kEmpty) break;
            reverse.insert_shared(entry_index(key), (key & ~std::uint64_t{0xffffffffu}) | static_cast<std::uint32_t>(point));
        }
    });
    struct Scratch {
        std::vector<std::uint32_t> visited;  // the stamp of the search that last reached each point
        std::uint32_t stamp = 0;
        std::vector<std::uint64_t> frontier;  // min-heap of keys to expand
        std::vector<std::uint64_t> found;     // max-heap of the ef nearest keys
    };
    tbb::enumerable_thread_specific<Scratch> scratches;
    std::vector<std::uint64_t> refined(static_cast<std::size_t>(num_points) * pool, kEmpty);
    for_points(num_points, ctx, [&](std::int32_t point) {
        Scratch& scratch = scratches.local();
        if (scratch.visited.empty()) scratch.visited.assign(static_cast<std::size_t>(num_points), 0);
        if (++scratch.stamp == 0) {
            std::fill(scratch.visited.begin(), scratch.visited.end(), 0);
            scratch.stamp = 1;
        }
        const std::uint32_t stamp = scratch.stamp;
        auto& frontier = scratch.frontier;
        auto& found = scratch.found;
        frontier.clear();
        found.clear();
        scratch.visited[static_cast<std::size_t>(point)] = stamp;
        for (int slot = 0; slot < pool; ++slot) {
            const std::uint64_t key = lists.key(point, slot);
            if (key == kEmpty) break;
            scratch.visited[static_cast<std::size_t>(entry_index(key))] = stamp;
            frontier.push_back(key);
            found.push_back(key);
        }
        std::make_heap(frontier.begin(), frontier.end(), std::greater<>());
        std::make_heap(found.begin(), found.end());
        std::int32_t fresh[2 * kMaxList];
        float distances[2 * kMaxList];
        const float* query = rows.row(point);
        while (!frontier.empty()) {
            std::pop_heap(frontier.begin(), frontier.end(), std::greater<>());
            const std::uint64_t nearest = frontier.back();
            frontier.pop_back();
            if (static_cast<int>(found.size()) >= ef && nearest > found.front()) break;
            const std::int32_t expanded = entry_index(nearest);
            int count = 0;
            for (const NeighborLists* graph : {&lists, &reverse})
                for (int slot = 0; slot < pool; ++slot) {
                    const std::uint64_t key = graph->key(expanded, slot);
                    if (key == kEmpty) break;
                    const std::int32_t other = entry_index(key);
                    if (scratch.visited[static_cast<std::size_t>(other)] == stamp) continue;
                    scratch.visited[static_cast<std::size_t>(other)] = stamp;
                    fresh[count++] = other;
                }
            l2_padded_many(query, base, stride, fresh, static_cast<std::size_t>(count), distances);
            for (int item = 0; item < count; ++item) {
                const std::uint64_t key = entry_key(distances[item], fresh[item]);
                if (static_cast<int>(found.size()) >= ef && key >= found.front()) continue;
                frontier.push_back(key);
                std::push_heap(frontier.begin(), frontier.end(), std::greater<>());
                found.push_back(key);
                std::push_heap(found.begin(), found.end());
                if (static_cast<int>(found.size()) > ef) {
                    std::pop_heap(found.begin(), found.end());
                    found.pop_back();
                }
            }
        }
        std::sort(found.begin(), found.end());
        std::copy_n(found.begin(), std::min<std::size_t>(found.size(), static_cast<std::size_t>(pool)),
                    refined.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(point) * pool));
    });
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, num_points, 1 << 14), [&](const tbb::blocked_range<std::int64_t>& range) {
        for (std::int64_t point = range.begin(); point != range.end(); ++point)
            std::copy_n(refined.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(point) * pool), pool,
                        lists.keys(point));
    });
}

}  // namespace

KnnCandidates nn_descent(const DenseMatrix<float>& points, int num_dims, const NnDescentParams& params,
                               JobContext& ctx) {
    const std::int64_t num_points = points.rows();
    const int pool = params.pool;
    const auto fail = [](const std::string& problem) { throw std::invalid_argument("nn_descent: " + problem); };
    if (num_dims < 1 || num_dims > points.cols()) fail("num_dims out of range");
    if (num_points < 2 || num_points > std::numeric_limits<std::int32_t>::max()) fail("need 2 to 2^31 - 1 points");
    if (pool < 1 || pool > kMaxList || pool > num_points - 1) fail("pool must be in [1, min(1024, points - 1)]");
    if (params.num_trees < 1) fail("num_trees must be >= 1");
    if (params.leaf_size < 2 || params.leaf_size > kMaxList) fail("leaf_size must be in [2, 1024]");
    if (params.max_candidates < 1 || params.max_candidates > kMaxCandidates) fail("max_candidates must be in [1, 256]");
    if (params.max_iterations < 0 || !(params.delta >= 0.0)) fail("max_iterations and delta must be >= 0");
    if (params.search_ef < 0 || params.search_ef > kNnDescentMaxSearchEf) fail("search_ef must be in [0, 4096]");

    const std::size_t stride = l2_padded_size(static_cast<std::size_t>(num_dims));

    // Padded rows in input order for the first tree, whose leaf order then renumbers the
    // points; everything after runs on the renumbered copy.
    PaddedRows rows;
    rows.stride = stride;
    rows.values.assign(static_cast<std::size_t>(num_points) * stride, 0.0f);
    for (std::int64_t point = 0; point < num_points; ++point)
        std::copy_n(points.row(point).data(), num_dims, rows.values.data() + static_cast<std::size_t>(point) * stride);
    const auto tree_seed = [&](int tree) { return mix(params.seed ^ mix(0x7265657473ULL + static_cast<std::uint64_t>(tree))); };
    std::vector<std::int32_t> order(static_cast<std::size_t>(num_points));
    for (std::int64_t point = 0; point < num_points; ++point) order[static_cast<std::size_t>(point)] = static_cast<std::int32_t>(point);
    std::vector<std::vector<std::int64_t>> tree_leaves(static_cast<std::size_t>(params.num_trees));
    std::vector<std::vector<std::int32_t>> tree_orders(static_cast<std::size_t>(params.num_trees));
    tree_leaves[0] = build_tree(rows, order, params.leaf_size, tree_seed(0));
    ctx.checkpoint();
    const std::vector<std::int32_t> original = order;  // renumbered point -> input row
    {
        PaddedRows renumbered;
        renumbered.stride = stride;
        renumbered.values.resize(rows.values.size());
        for (std::int64_t point = 0; point < num_points; ++point)
            std::copy_n(rows.row(original[static_cast<std::size_t>(point)]), stride,
                        renumbered.values.data() + static_cast<std::size_t>(point) * stride);
        rows = std::move(renumbered);
    }
    for (std::int64_t point = 0; point < num_points; ++point) order[static_cast<std::size_t>(point)] = static_cast<std::int32_t>(point);
    tree_orders[0] = order;  // the first tree's leaves are now contiguous ranges of the new numbering
    tbb::parallel_for(1, params.num_trees, [&](int tree) {
        ctx.checkpoint();
        tree_orders[static_cast<std::size_t>(tree)] = order;
        tree_leaves[static_cast<std::size_t>(tree)] =
            build_tree(rows, tree_orders[static_cast<std::size_t>(tree)], params.leaf_size, tree_seed(tree));
    });
    ctx.report(0.1 * kSearchShare);

    // Initial graph: every leaf of every tree searched by brute force.
    NeighborLists lists(num_points, pool);
    const float* base = rows.values.data();
    const int owners = std::max(1, tbb::this_task_arena::max_concurrency());
    std::vector<std::pair<int, std::int64_t>> leaf_tasks;
    for (int tree = 0; tree < params.num_trees; ++tree)
        for (std::size_t leaf = 0; leaf + 1 < tree_leaves[static_cast<std::size_t>(tree)].size(); ++leaf)
            leaf_tasks.emplace_back(tree, static_cast<std::int64_t>(leaf));
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, leaf_tasks.size(), 16), [&](const tbb::blocked_range<std::size_t>& range) {
        ctx.checkpoint();
        float distances[kMaxList];
        for (std::size_t task = range.begin(); task != range.end(); ++task) {
            const auto [tree, leaf] = leaf_tasks[task];
            const auto& leaves = tree_leaves[static_cast<std::size_t>(tree)];
            const std::int32_t* members =
                tree_orders[static_cast<std::size_t>(tree)].data() + leaves[static_cast<std::size_t>(leaf)];
            const auto size = static_cast<std::size_t>(leaves[static_cast<std::size_t>(leaf) + 1] -
                                                       leaves[static_cast<std::size_t>(leaf)]);
            for (std::size_t first = 0; first + 1 < size; ++first) {
                const std::int32_t point = members[first];
                const std::size_t count = size - first - 1;
                l2_padded_many(rows.row(point), base, stride, members + first + 1, count, distances);
                for (std::size_t item = 0; item < count; ++item) {
                    const std::int32_t other = members[first + 1 + item];
                    lists.insert_shared(point, entry_key(distances[item], other));
                    lists.insert_shared(other, entry_key(distances[item], point));
                }
            }
        }
    });
    tree_orders.clear();
    tree_leaves.clear();
    // Lists the leaves left short (small leaves) are filled with random points, as
    // pynndescent's init_random does: a graph of disjoint leaf cliques would never grow.
    const std::uint64_t fill_seed = mix(params.seed ^ 0x66696c6cULL);
    for_points(num_points, ctx, [&](std::int32_t point) {
        std::int32_t chosen[kMaxList];
        float distances[kMaxList];
        for (std::uint64_t attempt = 0; lists.worst(point) == kEmpty && attempt < 4; ++attempt) {
            int count = 0;
            for (int slot = 0; slot < pool; ++slot) {
                const auto other = static_cast<std::int32_t>(
                    mix(fill_seed ^ mix((static_cast<std::uint64_t>(point) << 20) + attempt * 4096 + static_cast<std::uint64_t>(slot))) %
                    static_cast<std::uint64_t>(num_points));
                if (other != point) chosen[count++] = other;
            }
            l2_padded_many(rows.row(point), base, stride, chosen, static_cast<std::size_t>(count), distances);
            for (int item = 0; item < count; ++item) lists.insert(point, entry_key(distances[item], chosen[item]));
        }
    });
    lists.settle_inserted();
    ctx.report(0.25 * kSearchShare);

    // NN-descent rounds (pynndescent's nn_descent_internal_low_memory_parallel).
    const int max_candidates = params.max_candidates;
    CandidateLists new_candidates(num_points, max_candidates);
    CandidateLists old_candidates(num_points, max_candidates);
    const auto threshold = static_cast<std::int64_t>(params.delta * static_cast<double>(num_points) * pool);
    KnnCandidates result;
    for (int round = 0; round < params.max_iterations; ++round) {
        new_candidates.clear();
        old_candidates.clear();
        const std::uint64_t round_seed = mix(params.seed ^ mix(0x726f756e64ULL + static_cast<std::uint64_t>(round)));
        // Every edge p -> q offers q to p and p to q (reverse neighbours) with one random
        // priority per unordered pair; new entries go to the new samples, old ones to the
        // old samples of points that have new ones (only those are joined). Each task owns
        // a range of target points and scans all edges: no two tasks write one list.
        const auto offer_all = [&](bool fresh) {
            tbb::parallel_for(0, owners, [&](int owner) {
                const std::int64_t owned_begin = num_points * owner / owners;
                const std::int64_t owned_end = num_points * (owner + 1) / owners;
                const auto owned = [&](std::int64_t point) { return point >= owned_begin && point < owned_end; };
                CandidateLists& target = fresh ? new_candidates : old_candidates;
                for (std::int32_t point = 0; point < num_points; ++point) {
                    if ((point & 0x3fff) == 0) ctx.checkpoint();
                    const std::uint8_t* flags = lists.flags(point);
                    const bool own_point = owned(point) && (fresh || new_candidates.any(point));
                    for (int slot = 0; slot < pool; ++slot) {
                        const std::uint64_t key = lists.key(point, slot);
                        if (key == kEmpty) break;
                        if ((flags[slot] != NeighborLists::kOld) != fresh) continue;
                        const std::int32_t neighbor = entry_index(key);
                        const bool own_neighbor = owned(neighbor) && (fresh || new_candidates.any(neighbor));
                        if (!own_point && !own_neighbor) continue;
                        const auto low = static_cast<std::uint64_t>(std::min(point, neighbor));
                        const auto high = static_cast<std::uint64_t>(std::max(point, neighbor));
                        const auto priority = static_cast<std::uint32_t>(mix(round_seed ^ ((low << 32) | high)) >> 32);
                        if (own_point) target.offer(point, neighbor, priority);
                        if (own_neighbor) target.offer(neighbor, point, priority);
                    }
                }
            });
        };
        offer_all(true);
        offer_all(false);
        // Entries sampled as new candidates of their own point are joined this round: old from now on.
        for_points(num_points, ctx, [&](std::int32_t point) {
            std::int32_t sampled[kMaxCandidates];
            const int count = new_candidates.get(point, sampled);
            std::uint8_t* flags = lists.flags(point);
            for (int slot = 0; slot < pool; ++slot)
                if (flags[slot] == NeighborLists::kNew &&
                    std::find(sampled, sampled + count, entry_index(lists.key(point, slot))) != sampled + count)
                    flags[slot] = NeighborLists::kOld;
        });
        // Local join: new x new and new x old pairs of every point's candidates, each
        // pair offered to both its points at once.
        tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, num_points, 64), [&](const tbb::blocked_range<std::int64_t>& range) {
            ctx.checkpoint();
            std::int32_t joined[2 * kMaxCandidates];
            std::uint64_t worst[2 * kMaxCandidates];  // each candidate's last key, read once
            float distances[2 * kMaxCandidates];
            for (std::int64_t point = range.begin(); point != range.end(); ++point) {
                const int num_new = new_candidates.get(point, joined);
                if (num_new == 0) continue;
                const int num_old = old_candidates.get(point, joined + num_new);
                const int total = num_new + num_old;
                for (int item = 0; item < total; ++item) worst[item] = lists.worst_shared(joined[item]);
                for (int first = 0; first < num_new; ++first) {
                    const std::int32_t left = joined[first];
                    const auto count = static_cast<std::size_t>(total - first - 1);
                    l2_padded_many(rows.row(left), base, stride, joined + first + 1, count, distances);
                    for (std::size_t item = 0; item < count; ++item) {
                        const auto other = static_cast<std::size_t>(first + 1) + item;
                        const std::int32_t right = joined[other];
                        if (right == left) continue;
                        const std::uint64_t to_left = entry_key(distances[item], right);
                        if (to_left < worst[first]) lists.insert_shared(left, to_left);
                        const std::uint64_t to_right = entry_key(distances[item], left);
                        if (to_right < worst[other]) lists.insert_shared(right, to_right);
                    }
                }
            }
        });
        const std::int64_t changed = lists.settle_inserted();
        result.iterations = round + 1;
        ctx.report((0.25 + 0.75 * static_cast<double>(round + 1) / params.max_iterations) * kSearchShare);
        if (changed <= threshold) break;
    }
    if (params.search_ef > 0) graph_search(rows, lists, params.search_ef, ctx);

    // Exact squared distances (double, from the float coordinates) of the kept
    // neighbours, on the renumbered rows (neighbours sit close in memory), back in input rows.
    result.pool = pool;
    result.indices.assign(static_cast<std::size_t>(num_points) * pool, -1);
    result.sq_distances.assign(result.indices.size(), 0.0);
    for_points(num_points, ctx, [&](std::int32_t point) {
        const std::size_t out = static_cast<std::size_t>(original[static_cast<std::size_t>(point)]) * pool;
        std::int32_t neighbors[kMaxList];
        const int count = list_indices(lists, point, neighbors);
        exact_sq_distances(rows.row(point), base, stride, num_dims, neighbors, count, result.sq_distances.data() + out);
        for (int slot = 0; slot < count; ++slot)
            result.indices[out + static_cast<std::size_t>(slot)] = original[static_cast<std::size_t>(neighbors[slot])];
    });
    return result;
}

}  // namespace fathom::detail
