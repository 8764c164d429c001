#include "core/algo/ivf_knn.hpp"

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/algo/l2_kernel.hpp"
#include "core/data/ShardedCsr.hpp"
#include "core/memory/uninitialized.hpp"
#include "core/types/Comm.hpp"
#include "core/types/JobContext.hpp"

namespace fathom::detail {

namespace {

constexpr std::uint64_t kEmpty = std::numeric_limits<std::uint64_t>::max();  // an empty slot (sorts last)
constexpr float kInfinity = std::numeric_limits<float>::infinity();
constexpr std::size_t kSearchSpan = 4 * kDotTileWidth;  // member columns screened at once against a list's bound

/// (squared distance, index) as one integer ordered like the pair (the bits of a
/// non-negative float order like its value).
std::uint64_t entry_key(float distance, std::int32_t index) noexcept {
    std::uint32_t bits;
    std::memcpy(&bits, &distance, sizeof bits);
    return (static_cast<std::uint64_t>(bits) << 32) | static_cast<std::uint32_t>(index);
}
std::int32_t entry_index(std::uint64_t key) noexcept { return static_cast<std::int32_t>(key & 0xffffffffu); }
float entry_distance(std::uint64_t key) noexcept {
    const auto bits = static_cast<std::uint32_t>(key >> 32);
    float distance;
    std::memcpy(&distance, &bits, sizeof distance);
    return distance;
}

/// Inserts `key` into the sorted list of `length` keys unless it is not below the last
/// (callers offer every index at most once per list).
void insert_sorted(std::uint64_t* keys, int length, std::uint64_t key) noexcept {
    if (key >= keys[length - 1]) return;
    int slot = length - 1;
    while (slot > 0 && keys[slot - 1] > key) {
        keys[slot] = keys[slot - 1];
        --slot;
    }
    keys[slot] = key;
}

/// Rows of padded float coordinates (zeros beyond num_dims), centred.
struct Rows {
    std::size_t stride = 0;
    UninitializedVector<float> values;
    std::vector<float> sq_norms;
    const float* row(std::int64_t point) const noexcept { return values.data() + static_cast<std::size_t>(point) * stride; }
};

/// Points (rows of `rows`, listed in `members`) laid out for dot_tile: dims x width,
/// one column per member, columns beyond the members zero with an infinite norm (they
/// never pass a distance test).
struct PackedBlock {
    std::size_t width = 0;
    UninitializedVector<float> values;
    std::vector<float> sq_norms;
};

/// Rows [first, first + count) of `rows` packed into values (dims x width) and sq_norms
/// (width), width = dot_tile_columns(count).
void pack(const Rows& rows, std::size_t first, std::size_t count, std::size_t dims, float* values, float* sq_norms) {
    const std::size_t width = dot_tile_columns(count);
    for (std::size_t column = 0; column < width; ++column) {
        if (column < count) {
            const float* row = rows.row(static_cast<std::int64_t>(first + column));
            for (std::size_t dim = 0; dim < dims; ++dim) values[dim * width + column] = row[dim];
            sq_norms[column] = rows.sq_norms[first + column];
        } else {
            for (std::size_t dim = 0; dim < dims; ++dim) values[dim * width + column] = 0.0f;
            sq_norms[column] = kInfinity;
        }
    }
}

/// Rows [first, first + count) of `rows` (centres) as one packed block.
PackedBlock packed_block(const Rows& rows, std::size_t first, std::size_t count, std::size_t dims) {
    PackedBlock block;
    block.width = dot_tile_columns(count);
    block.values.resize(dims * block.width);
    block.sq_norms.resize(block.width);
    pack(rows, first, count, dims, block.values.data(), block.sq_norms.data());
    return block;
}
/// The first `count` rows of `rows` as one packed block.
PackedBlock packed_block(const Rows& rows, int count, std::size_t dims) {
    return packed_block(rows, 0, static_cast<std::size_t>(count), dims);
}

/// For every row of `rows` listed in `queries`, the `top` columns of `block` with the
/// smallest squared distance ||q||^2 + ||x||^2 - 2 q.x (clamped at 0; ties: lower column),
/// nearest first, into out[i * top ...], among the columns whose screen key
/// ||x||^2 - 2 q.x is at most the top-th smallest of the chunk minima (chunk_minima): a
/// bound that keeps at least `top` columns, the top nearest among them up to float
/// rounding, found in one pass without a running list.
void nearest_columns(const Rows& rows, const std::vector<std::int32_t>& queries, const PackedBlock& block,
                     std::size_t dims, int top, std::int32_t* out, JobContext& ctx) {
    const auto num_queries = static_cast<std::int64_t>(queries.size());
    const std::size_t chunks = block.width / kDotTileWidth;
    const auto wanted = static_cast<std::size_t>(top);
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, (num_queries + 3) / 4, 64), [&](const tbb::blocked_range<std::int64_t>& range) {
        ctx.checkpoint();
        std::vector<float> products(4 * block.width);
        std::vector<float> minima(chunks);
        std::vector<std::int32_t> selected(block.width);
        std::vector<std::uint64_t> best;
        for (std::int64_t quad = range.begin(); quad != range.end(); ++quad) {
            const std::int64_t first = quad * 4;
            const auto count = static_cast<std::size_t>(std::min<std::int64_t>(4, num_queries - first));
            const float* query_rows[4];
            for (std::size_t row = 0; row < count; ++row) query_rows[row] = rows.row(queries[static_cast<std::size_t>(first) + row]);
            dot_tile(query_rows, count, block.values.data(), block.width, dims, products.data());
            for (std::size_t row = 0; row < count; ++row) {
                const float* dots = products.data() + row * block.width;
                const float query_norm = rows.sq_norms[static_cast<std::size_t>(queries[static_cast<std::size_t>(first) + row])];
                // The bound: the top-th smallest chunk minimum (the padding's infinite
                // keys never pass; with fewer chunks than `top` every column passes).
                float threshold = std::numeric_limits<float>::max();
                if (wanted <= chunks) {
                    chunk_minima(block.sq_norms.data(), dots, block.width, minima.data());
                    std::nth_element(minima.begin(), minima.begin() + static_cast<std::ptrdiff_t>(wanted - 1), minima.end());
                    threshold = std::min(minima[wanted - 1], threshold);
                }
                const std::size_t passed = columns_below(block.sq_norms.data(), dots, block.width, threshold, selected.data());
                best.clear();
                for (std::size_t item = 0; item < passed; ++item) {
                    const auto column = static_cast<std::size_t>(selected[item]);
                    const float distance = query_norm + block.sq_norms[column] - 2.0f * dots[column];
                    best.push_back(entry_key(std::max(distance, 0.0f), static_cast<std::int32_t>(column)));
                }
                const std::size_t kept = std::min(wanted, best.size());
                std::partial_sort(best.begin(), best.begin() + static_cast<std::ptrdiff_t>(kept), best.end());
                best.resize(wanted, kEmpty);
                std::int32_t* chosen = out + static_cast<std::size_t>(first + static_cast<std::int64_t>(row)) * wanted;
                for (std::size_t slot = 0; slot < wanted; ++slot) chosen[slot] = entry_index(best[slot]);
            }
        }
    });
}

std::uint64_t mix(std::uint64_t value) noexcept {  // splitmix64's finaliser
    value += 0x9e3779b97f4a7c15ULL;
    value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ULL;
    value = (value ^ (value >> 27)) * 0x94d049bb133111ebULL;
    return value ^ (value >> 31);
}

/// The squared norms of the first `count` rows (in double, stored as float).
void set_sq_norms(Rows& rows, int count, std::size_t dims) {
    for (int index = 0; index < count; ++index) {
        double norm = 0.0;
        for (std::size_t dim = 0; dim < dims; ++dim) {
            const double value = rows.row(index)[dim];
            norm += value * value;
        }
        rows.sq_norms[static_cast<std::size_t>(index)] = static_cast<float>(norm);
    }
}

/// The k-means result: the centres, and for a two-level k-means its coarse centres and
/// the centres each coarse group was split into, [first_centre[g], first_centre[g + 1])
/// (both empty for a flat k-means).
struct Clustering {
    Rows centres;
    Rows coarse;
    std::vector<int> first_centre;
};

/// Lloyd's k-means of the rows listed in `members` (at least num_clusters of them):
/// num_clusters centres, started at the first num_clusters members, as rows of the same
/// stride (an empty cluster keeps its centre), with their squared norms.
Rows lloyd(const Rows& rows, const std::vector<std::int32_t>& members, std::size_t dims, int num_clusters,
           int iterations, JobContext& ctx) {
    Rows centres;
    centres.stride = rows.stride;
    centres.values.assign(static_cast<std::size_t>(num_clusters) * rows.stride, 0.0f);
    centres.sq_norms.assign(static_cast<std::size_t>(num_clusters), 0.0f);
    for (int cluster = 0; cluster < num_clusters; ++cluster)
        std::copy_n(rows.row(members[static_cast<std::size_t>(cluster)]), rows.stride, centres.values.data() + static_cast<std::size_t>(cluster) * rows.stride);
    std::vector<std::int32_t> assigned(members.size());
    std::vector<double> sums(static_cast<std::size_t>(num_clusters) * dims);
    std::vector<std::int64_t> counts(static_cast<std::size_t>(num_clusters));
    for (int iteration = 0; iteration < iterations; ++iteration) {
        set_sq_norms(centres, num_clusters, dims);
        const PackedBlock block = packed_block(centres, num_clusters, dims);
        nearest_columns(rows, members, block, dims, 1, assigned.data(), ctx);
        std::fill(sums.begin(), sums.end(), 0.0);
        std::fill(counts.begin(), counts.end(), 0);
        for (std::size_t index = 0; index < members.size(); ++index) {
            const auto cluster = static_cast<std::size_t>(assigned[index]);
            const float* row = rows.row(members[index]);
            for (std::size_t dim = 0; dim < dims; ++dim) sums[cluster * dims + dim] += row[dim];
            ++counts[cluster];
        }
        for (std::size_t cluster = 0; cluster < static_cast<std::size_t>(num_clusters); ++cluster) {
            if (counts[cluster] == 0) continue;
            float* centre = centres.values.data() + cluster * rows.stride;
            for (std::size_t dim = 0; dim < dims; ++dim)
                centre[dim] = static_cast<float>(sums[cluster * dims + dim] / static_cast<double>(counts[cluster]));
        }
    }
    set_sq_norms(centres, num_clusters, dims);
    return centres;
}

/// k-means on a random sample of the rows; returns num_clusters centres as rows of the
/// same stride. From params.two_level_from clusters on, two levels: about
/// sqrt(num_clusters) coarse clusters of the sample, then each coarse cluster's sample
/// points clustered into its share of the centres (proportional to its size, largest
/// remainders first); training costs sample x 2 sqrt(num_clusters) distances per
/// iteration instead of sample x num_clusters.
Clustering kmeans(const Rows& rows, std::int64_t num_points, std::size_t dims, int num_clusters, const IvfParams& params,
                  JobContext& ctx) {
    std::vector<std::int32_t> sample;
    const std::int64_t sample_size =
        std::min<std::int64_t>(num_points, static_cast<std::int64_t>(num_clusters) * params.training_per_cluster);
    {
        std::vector<std::int32_t> all(static_cast<std::size_t>(num_points));
        std::iota(all.begin(), all.end(), 0);
        std::mt19937_64 generator(mix(params.seed ^ 0x6b6d65616e73ULL));
        // Partial Fisher-Yates: the first sample_size entries are a uniform sample in random order.
        for (std::int64_t index = 0; index < sample_size; ++index) {
            const auto other = index + static_cast<std::int64_t>(generator() % static_cast<std::uint64_t>(num_points - index));
            std::swap(all[static_cast<std::size_t>(index)], all[static_cast<std::size_t>(other)]);
        }
        sample.assign(all.begin(), all.begin() + sample_size);
    }
    if (params.two_level_from <= 0 || num_clusters < params.two_level_from || params.training_per_cluster < 2 ||
        sample_size < static_cast<std::int64_t>(num_clusters) * params.training_per_cluster)
        return Clustering{lloyd(rows, sample, dims, num_clusters, params.kmeans_iterations, ctx), {}, {}};

    // Coarse clusters, and the sample points of each (in sample order: random order).
    const int num_groups = std::max(2, static_cast<int>(std::lround(std::sqrt(static_cast<double>(num_clusters)))));
    Rows coarse = lloyd(rows, sample, dims, num_groups, params.kmeans_iterations, ctx);
    std::vector<std::int32_t> group_of(sample.size());
    nearest_columns(rows, sample, packed_block(coarse, num_groups, dims), dims, 1, group_of.data(), ctx);
    std::vector<std::vector<std::int32_t>> groups(static_cast<std::size_t>(num_groups));
    for (std::size_t index = 0; index < sample.size(); ++index) groups[static_cast<std::size_t>(group_of[index])].push_back(sample[index]);
    // Centres per group: floor(num_clusters * size / sample), the rest one each to the
    // largest remainders (ties: lower group). A share is at most size / training_per_cluster
    // + 1 <= size, so every group has at least as many points as centres.
    std::vector<int> shares(static_cast<std::size_t>(num_groups));
    std::vector<std::pair<std::int64_t, int>> remainders;
    std::int64_t assigned = 0;
    for (int group = 0; group < num_groups; ++group) {
        const std::int64_t scaled = static_cast<std::int64_t>(num_clusters) * static_cast<std::int64_t>(groups[static_cast<std::size_t>(group)].size());
        shares[static_cast<std::size_t>(group)] = static_cast<int>(scaled / sample_size);
        assigned += shares[static_cast<std::size_t>(group)];
        remainders.emplace_back(-(scaled % sample_size), group);
    }
    std::sort(remainders.begin(), remainders.end());
    for (std::int64_t extra = 0; extra < num_clusters - assigned; ++extra) ++shares[static_cast<std::size_t>(remainders[static_cast<std::size_t>(extra)].second)];
    std::vector<int> first_centre(static_cast<std::size_t>(num_groups) + 1, 0);
    for (int group = 0; group < num_groups; ++group)
        first_centre[static_cast<std::size_t>(group) + 1] = first_centre[static_cast<std::size_t>(group)] + shares[static_cast<std::size_t>(group)];

    Clustering clustering;
    Rows& centres = clustering.centres;
    centres.stride = rows.stride;
    centres.values.assign(static_cast<std::size_t>(num_clusters) * rows.stride, 0.0f);
    centres.sq_norms.assign(static_cast<std::size_t>(num_clusters), 0.0f);
    tbb::parallel_for(0, num_groups, [&](int group) {
        const int share = shares[static_cast<std::size_t>(group)];
        if (share == 0) return;
        const Rows part = lloyd(rows, groups[static_cast<std::size_t>(group)], dims, share, params.kmeans_iterations, ctx);
        const auto first = static_cast<std::size_t>(first_centre[static_cast<std::size_t>(group)]);
        std::copy_n(part.values.data(), static_cast<std::size_t>(share) * rows.stride, centres.values.data() + first * rows.stride);
        std::copy_n(part.sq_norms.data(), static_cast<std::size_t>(share), centres.sq_norms.data() + first);
    });
    clustering.coarse = std::move(coarse);
    clustering.first_centre = std::move(first_centre);
    return clustering;
}

/// For every row of `input` listed in `queries`, the `probes` nearest centres of a
/// two-level clustering (ties: lower centre), nearest first, into out[i * probes ...],
/// searched among the centres of the query's nearest coarse groups only: the nearest
/// `groups` of them, and more in order of distance while they hold fewer than `probes`
/// centres. Costs a query about num_groups + groups x (centres per group) distances
/// instead of num_clusters. A query's probes depend on the query alone (not on the
/// others listed, nor on the threads).
void nearest_centres_by_group(const Rows& input, const std::vector<std::int32_t>& queries, const Clustering& clustering,
                              std::size_t dims, int probes, int groups, std::int32_t* out, JobContext& ctx) {
    const int num_groups = static_cast<int>(clustering.first_centre.size()) - 1;
    std::vector<PackedBlock> blocks(static_cast<std::size_t>(num_groups));
    tbb::parallel_for(0, num_groups, [&](int group) {
        const auto first = static_cast<std::size_t>(clustering.first_centre[static_cast<std::size_t>(group)]);
        const auto count = static_cast<std::size_t>(clustering.first_centre[static_cast<std::size_t>(group) + 1]) - first;
        blocks[static_cast<std::size_t>(group)] = packed_block(clustering.centres, first, count, dims);
    });
    std::size_t widest = 0;
    for (const PackedBlock& block : blocks) widest = std::max(widest, block.width);
    const PackedBlock coarse = packed_block(clustering.coarse, num_groups, dims);
    const auto wanted = static_cast<std::size_t>(probes);
    const auto all_groups = static_cast<std::size_t>(num_groups);
    // In batches: every query's coarse groups in order of distance, then the queries
    // ordered by nearest group so that a quad of queries shares its groups' tiles.
    constexpr std::size_t kBatch = 1 << 15;
    std::vector<std::int32_t> order_of_groups;
    std::vector<std::int32_t> taken;  // per query of the batch: groups searched
    std::vector<std::int32_t> by_group;
    for (std::size_t batch = 0; batch < queries.size(); batch += kBatch) {
        const std::size_t size = std::min(kBatch, queries.size() - batch);
        const std::vector<std::int32_t> members(queries.begin() + static_cast<std::ptrdiff_t>(batch),
                                                queries.begin() + static_cast<std::ptrdiff_t>(batch + size));
        order_of_groups.resize(size * all_groups);
        nearest_columns(input, members, coarse, dims, num_groups, order_of_groups.data(), ctx);
        taken.assign(size, 0);
        std::vector<std::size_t> per_group(all_groups + 1, 0);
        for (std::size_t query = 0; query < size; ++query) {
            const std::int32_t* ranked = order_of_groups.data() + query * all_groups;
            int count = 0;
            std::int64_t centres = 0;
            while (count < num_groups && (count < groups || centres < probes)) {
                const auto group = static_cast<std::size_t>(ranked[count]);
                centres += clustering.first_centre[group + 1] - clustering.first_centre[group];
                ++count;
            }
            taken[query] = count;
            ++per_group[static_cast<std::size_t>(ranked[0]) + 1];
        }
        std::partial_sum(per_group.begin(), per_group.end(), per_group.begin());
        by_group.resize(size);
        for (std::size_t query = 0; query < size; ++query)
            by_group[per_group[static_cast<std::size_t>(order_of_groups[query * all_groups])]++] = static_cast<std::int32_t>(query);
        tbb::parallel_for(tbb::blocked_range<std::size_t>(0, (size + 3) / 4, 32), [&](const tbb::blocked_range<std::size_t>& range) {
            ctx.checkpoint();
            std::vector<float> products(4 * widest);
            std::vector<std::uint64_t> best[4];
            std::vector<std::int32_t> quad_groups;
            for (std::size_t quad = range.begin(); quad != range.end(); ++quad) {
                const std::size_t first = quad * 4;
                const std::size_t count = std::min<std::size_t>(4, size - first);
                quad_groups.clear();
                for (std::size_t row = 0; row < count; ++row) {
                    const auto query = static_cast<std::size_t>(by_group[first + row]);
                    best[row].clear();
                    const std::int32_t* ranked = order_of_groups.data() + query * all_groups;
                    quad_groups.insert(quad_groups.end(), ranked, ranked + taken[query]);
                }
                std::sort(quad_groups.begin(), quad_groups.end());
                quad_groups.erase(std::unique(quad_groups.begin(), quad_groups.end()), quad_groups.end());
                for (const std::int32_t group : quad_groups) {
                    // The quad's queries that search this group, as one tile.
                    const float* query_rows[4];
                    std::size_t users[4];
                    std::size_t num_users = 0;
                    for (std::size_t row = 0; row < count; ++row) {
                        const auto query = static_cast<std::size_t>(by_group[first + row]);
                        const std::int32_t* ranked = order_of_groups.data() + query * all_groups;
                        if (std::find(ranked, ranked + taken[query], group) == ranked + taken[query]) continue;
                        query_rows[num_users] = input.row(members[query]);
                        users[num_users++] = row;
                    }
                    const PackedBlock& block = blocks[static_cast<std::size_t>(group)];
                    const auto first_centre = clustering.first_centre[static_cast<std::size_t>(group)];
                    const auto centres = static_cast<std::size_t>(clustering.first_centre[static_cast<std::size_t>(group) + 1] - first_centre);
                    dot_tile(query_rows, num_users, block.values.data(), block.width, dims, products.data());
                    for (std::size_t user = 0; user < num_users; ++user) {
                        const auto query = static_cast<std::size_t>(by_group[first + users[user]]);
                        const float query_norm = input.sq_norms[static_cast<std::size_t>(members[query])];
                        const float* dots = products.data() + user * block.width;
                        for (std::size_t column = 0; column < centres; ++column) {
                            const float distance = query_norm + block.sq_norms[column] - 2.0f * dots[column];
                            best[users[user]].push_back(entry_key(std::max(distance, 0.0f), first_centre + static_cast<std::int32_t>(column)));
                        }
                    }
                }
                for (std::size_t row = 0; row < count; ++row) {
                    const auto query = static_cast<std::size_t>(by_group[first + row]);
                    std::vector<std::uint64_t>& keys = best[row];
                    const std::size_t kept = std::min(wanted, keys.size());
                    std::partial_sort(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(kept), keys.end());
                    keys.resize(wanted, kEmpty);
                    std::int32_t* chosen = out + (batch + query) * wanted;
                    for (std::size_t slot = 0; slot < wanted; ++slot) chosen[slot] = entry_index(keys[slot]);
                }
            }
        });
    }
}

/// Every rank's block of `all` (rank r's block starts at offsets[r] and ends at
/// offsets[r + 1], in elements) made whole on every rank: the blocks travel in rank order
/// (all_gather), so `all` is the same bits on every rank.
template <typename T>
void gather_blocks(Comm& comm, T* all, const std::vector<std::int64_t>& offsets) {
    const auto rank = static_cast<std::size_t>(comm.rank());
    const std::span<const T> mine(all + offsets[rank], static_cast<std::size_t>(offsets[rank + 1] - offsets[rank]));
    const std::vector<Bytes> blocks = comm.all_gather(std::as_bytes(mine));
    for (std::size_t from = 0; from < blocks.size(); ++from) {
        const auto expected = static_cast<std::size_t>(offsets[from + 1] - offsets[from]) * sizeof(T);
        if (blocks[from].size() != expected)
            throw std::runtime_error("ivf_knn: rank " + std::to_string(from) + " sent " +
                                     std::to_string(blocks[from].size()) + " bytes of its share; expected " +
                                     std::to_string(expected));
        if (from != rank) std::memcpy(all + offsets[from], blocks[from].data(), expected);
    }
}

}  // namespace

std::vector<double> column_means(const DenseMatrix<float>& points, int num_dims) {
    const auto dims = static_cast<std::size_t>(num_dims);
    std::vector<double> mean(dims, 0.0);
    for (std::int64_t point = 0; point < points.rows(); ++point) {
        const auto row = points.row(point);
        for (std::size_t dim = 0; dim < dims; ++dim) mean[dim] += row[dim];
    }
    for (auto& value : mean) value /= static_cast<double>(std::max<std::int64_t>(points.rows(), 1));
    return mean;
}

KnnCandidates ivf_knn(const DenseMatrix<float>& points, int num_dims, const IvfParams& params, JobContext& ctx,
                      Comm* comm) {
    const std::int64_t num_points = points.rows();
    const int pool = params.pool;
    const auto fail = [](const std::string& problem) { throw std::invalid_argument("ivf_knn: " + problem); };
    if (num_dims < 1 || num_dims > points.cols()) fail("num_dims out of range");
    if (num_points < 2 || num_points > std::numeric_limits<std::int32_t>::max()) fail("need 2 to 2^31 - 1 points");
    if (pool < 1 || pool > kNnDescentMaxList || pool > num_points - 1) fail("pool must be in [1, min(1024, points - 1)]");
    if (params.cluster_size < 1) fail("cluster_size must be >= 1");
    if (params.probes < 1 || params.probes > kIvfMaxProbes) fail("probes must be in [1, 256]");
    if (params.kmeans_iterations < 0 || params.training_per_cluster < 1 || params.refine_rounds < 0 ||
        params.refine_fanout < 1 || params.refine_reverse < 0 || params.assign_groups < 0)
        fail("kmeans_iterations, refine_rounds, refine_reverse and assign_groups must be >= 0, training_per_cluster and refine_fanout >= 1");
    const auto dims = static_cast<std::size_t>(num_dims);

    // Centred padded rows (distances do not change; smaller norms, less cancellation in
    // ||q||^2 + ||x||^2 - 2 q.x).
    Rows input;
    input.stride = l2_padded_size(dims);
    {
        const std::vector<double> mean = column_means(points, num_dims);
        input.values.resize(static_cast<std::size_t>(num_points) * input.stride);
        input.sq_norms.resize(static_cast<std::size_t>(num_points));
        tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, num_points, 4096), [&](const tbb::blocked_range<std::int64_t>& range) {
            for (std::int64_t point = range.begin(); point != range.end(); ++point) {
                float* row = input.values.data() + static_cast<std::size_t>(point) * input.stride;
                double norm = 0.0;
                for (std::size_t dim = 0; dim < dims; ++dim) {
                    row[dim] = static_cast<float>(points.row(point)[dim] - mean[dim]);
                    norm += static_cast<double>(row[dim]) * row[dim];
                }
                std::fill(row + dims, row + input.stride, 0.0f);
                input.sq_norms[static_cast<std::size_t>(point)] = static_cast<float>(norm);
            }
        });
    }

    // Clusters, and every point's `probes` nearest.
    const int num_clusters = static_cast<int>(std::clamp<std::int64_t>(
        (num_points + params.cluster_size / 2) / params.cluster_size, 1, num_points));
    const int probes = std::min(params.probes, num_clusters);
    const Clustering clustering = kmeans(input, num_points, dims, num_clusters, params, ctx);
    const Rows& centres = clustering.centres;
    ctx.report(0.2);
    // Over several ranks, rank r assigns the points of split_rows_evenly's share r.
    const bool split = comm != nullptr && comm->size() > 1;
    const int ranks = split ? comm->size() : 1;
    const auto rank = static_cast<std::size_t>(split ? comm->rank() : 0);
    const std::vector<RowRange> point_shares = split_rows_evenly(num_points, ranks);
    UninitializedVector<std::int32_t> probe_lists(static_cast<std::size_t>(num_points) * static_cast<std::size_t>(probes));
    {
        const RowRange& share = point_shares[rank];
        std::vector<std::int32_t> mine(static_cast<std::size_t>(share.size()));
        std::iota(mine.begin(), mine.end(), static_cast<std::int32_t>(share.begin));
        std::int32_t* out = probe_lists.data() + static_cast<std::size_t>(share.begin) * static_cast<std::size_t>(probes);
        if (params.assign_groups > 0 && !clustering.first_centre.empty())
            nearest_centres_by_group(input, mine, clustering, dims, probes, params.assign_groups, out, ctx);
        else
            nearest_columns(input, mine, packed_block(centres, num_clusters, dims), dims, probes, out, ctx);
        if (split) {
            std::vector<std::int64_t> offsets;
            for (const RowRange& each : point_shares) offsets.push_back(each.begin * probes);
            offsets.push_back(num_points * probes);
            gather_blocks(*comm, probe_lists.data(), offsets);
        }
    }
    ctx.report(0.35);

    // Points renumbered by nearest cluster (stable): cluster c holds [begin[c], begin[c + 1]).
    std::vector<std::int64_t> begin(static_cast<std::size_t>(num_clusters) + 1, 0);
    for (std::int64_t point = 0; point < num_points; ++point)
        ++begin[static_cast<std::size_t>(probe_lists[static_cast<std::size_t>(point) * static_cast<std::size_t>(probes)]) + 1];
    std::partial_sum(begin.begin(), begin.end(), begin.begin());
    std::vector<std::int32_t> original(static_cast<std::size_t>(num_points));  // new number -> input row
    {
        std::vector<std::int64_t> next(begin.begin(), begin.end() - 1);
        for (std::int64_t point = 0; point < num_points; ++point)
            original[static_cast<std::size_t>(next[static_cast<std::size_t>(probe_lists[static_cast<std::size_t>(point) * static_cast<std::size_t>(probes)])]++)] =
                static_cast<std::int32_t>(point);
    }
    Rows rows;
    rows.stride = input.stride;
    rows.values.resize(input.values.size());
    rows.sq_norms.resize(input.sq_norms.size());
    UninitializedVector<std::int32_t> probes_of(probe_lists.size());
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, num_points, 4096), [&](const tbb::blocked_range<std::int64_t>& range) {
        for (std::int64_t point = range.begin(); point != range.end(); ++point) {
            const auto from = static_cast<std::size_t>(original[static_cast<std::size_t>(point)]);
            std::copy_n(input.row(static_cast<std::int64_t>(from)), input.stride, rows.values.data() + static_cast<std::size_t>(point) * rows.stride);
            rows.sq_norms[static_cast<std::size_t>(point)] = input.sq_norms[from];
            std::copy_n(probe_lists.data() + from * static_cast<std::size_t>(probes), probes,
                        probes_of.data() + static_cast<std::size_t>(point) * static_cast<std::size_t>(probes));
        }
    });
    input = Rows{};
    probe_lists = {};

    // Every cluster packed for dot_tile.
    std::vector<std::size_t> packed_offset(static_cast<std::size_t>(num_clusters) + 1, 0);  // in columns
    for (int cluster = 0; cluster < num_clusters; ++cluster)
        packed_offset[static_cast<std::size_t>(cluster) + 1] =
            packed_offset[static_cast<std::size_t>(cluster)] +
            dot_tile_columns(static_cast<std::size_t>(begin[static_cast<std::size_t>(cluster) + 1] - begin[static_cast<std::size_t>(cluster)]));
    UninitializedVector<float> packed(packed_offset.back() * dims);
    UninitializedVector<float> packed_norms(packed_offset.back());
    tbb::parallel_for(0, num_clusters, [&](int cluster) {
        const auto first = static_cast<std::size_t>(begin[static_cast<std::size_t>(cluster)]);
        const auto count = static_cast<std::size_t>(begin[static_cast<std::size_t>(cluster) + 1]) - first;
        pack(rows, first, count, dims, packed.data() + packed_offset[static_cast<std::size_t>(cluster)] * dims,
             packed_norms.data() + packed_offset[static_cast<std::size_t>(cluster)]);
    });

    // Over several ranks, rank r searches the clusters that begin in its share of the
    // (renumbered) points, and refines and finishes the lists of those clusters' points:
    // [first_cluster[r], first_cluster[r + 1]) and [list_offsets[r], list_offsets[r + 1]).
    std::vector<int> first_cluster;
    std::vector<std::int64_t> list_offsets;  // in points
    for (const RowRange& share : point_shares) {
        first_cluster.push_back(static_cast<int>(std::lower_bound(begin.begin(), begin.end() - 1, share.begin) - begin.begin()));
        list_offsets.push_back(begin[static_cast<std::size_t>(first_cluster.back())]);
    }
    first_cluster.push_back(num_clusters);
    list_offsets.push_back(num_points);
    const auto gather_lists = [&](UninitializedVector<std::uint64_t>& all) {
        std::vector<std::int64_t> offsets;
        for (const std::int64_t point : list_offsets) offsets.push_back(point * pool);
        gather_blocks(*comm, all.data(), offsets);
    };
    const std::int64_t my_first = list_offsets[rank];
    const std::int64_t my_end = list_offsets[rank + 1];

    // The search: each task takes the points of one cluster and compares them with the
    // members of the clusters they probe, cluster by cluster, so every task writes only
    // its own points' lists.
    UninitializedVector<std::uint64_t> lists(static_cast<std::size_t>(num_points) * static_cast<std::size_t>(pool));
    struct Scratch {
        std::vector<std::vector<std::int32_t>> buckets;  // per cluster: the task's points probing it
        std::vector<int> touched;
        std::vector<std::pair<double, int>> order;
        std::vector<float> products;
        std::vector<std::int32_t> selected = std::vector<std::int32_t>(kSearchSpan);
    };
    tbb::enumerable_thread_specific<Scratch> scratches;
    tbb::parallel_for(tbb::blocked_range<int>(first_cluster[rank], first_cluster[rank + 1], 1), [&](const tbb::blocked_range<int>& range) {
        ctx.checkpoint();
        Scratch& scratch = scratches.local();
        if (scratch.buckets.empty()) scratch.buckets.resize(static_cast<std::size_t>(num_clusters));
        for (int home = range.begin(); home != range.end(); ++home) {
            std::fill(lists.begin() + begin[static_cast<std::size_t>(home)] * pool,
                      lists.begin() + begin[static_cast<std::size_t>(home) + 1] * pool, kEmpty);
            scratch.touched.clear();
            for (std::int64_t point = begin[static_cast<std::size_t>(home)]; point < begin[static_cast<std::size_t>(home) + 1]; ++point)
                for (int probe = 0; probe < probes; ++probe) {
                    const auto cluster = static_cast<std::size_t>(probes_of[static_cast<std::size_t>(point) * static_cast<std::size_t>(probes) + static_cast<std::size_t>(probe)]);
                    if (scratch.buckets[cluster].empty()) scratch.touched.push_back(static_cast<int>(cluster));
                    scratch.buckets[cluster].push_back(static_cast<std::int32_t>(point));
                }
            // Nearest clusters first (the home cluster, then by centre distance to it):
            // the lists fill with near points early and later clusters insert little.
            const float* home_centre = centres.row(home);
            scratch.order.clear();
            for (const int cluster : scratch.touched) {
                double distance = 0.0;
                for (std::size_t dim = 0; dim < dims; ++dim) {
                    const double difference = static_cast<double>(centres.row(cluster)[dim]) - home_centre[dim];
                    distance += difference * difference;
                }
                scratch.order.emplace_back(distance, cluster);
            }
            std::sort(scratch.order.begin(), scratch.order.end());
            for (const auto& [centre_distance, cluster] : scratch.order) {
                auto& bucket = scratch.buckets[static_cast<std::size_t>(cluster)];
                const std::size_t column_begin = packed_offset[static_cast<std::size_t>(cluster)];
                const std::size_t width = packed_offset[static_cast<std::size_t>(cluster) + 1] - column_begin;
                const float* block = packed.data() + column_begin * dims;
                const float* norms = packed_norms.data() + column_begin;
                const auto member_begin = static_cast<std::int32_t>(begin[static_cast<std::size_t>(cluster)]);
                scratch.products.resize(4 * width);
                for (std::size_t first = 0; first < bucket.size(); first += 4) {
                    const std::size_t count = std::min<std::size_t>(4, bucket.size() - first);
                    const float* query_rows[4];
                    for (std::size_t row = 0; row < count; ++row) query_rows[row] = rows.row(bucket[first + row]);
                    dot_tile(query_rows, count, block, width, dims, scratch.products.data());
                    for (std::size_t row = 0; row < count; ++row) {
                        const std::int32_t query = bucket[first + row];
                        std::uint64_t* keys = lists.data() + static_cast<std::size_t>(query) * static_cast<std::size_t>(pool);
                        const float* dots = scratch.products.data() + row * width;
                        const float query_norm = rows.sq_norms[static_cast<std::size_t>(query)];
                        float worst = keys[pool - 1] == kEmpty ? kInfinity : entry_distance(keys[pool - 1]);
                        // Screened a span at a time against the list's bound, which
                        // tightens between spans (the first cluster starts from an empty
                        // list); the padding's infinite norms never pass.
                        for (std::size_t start = 0; start < width; start += kSearchSpan) {
                            const std::size_t span = std::min(kSearchSpan, width - start);
                            const float threshold = worst == kInfinity ? std::numeric_limits<float>::max() : worst - query_norm;
                            const std::size_t selected =
                                columns_below(norms + start, dots + start, span, threshold, scratch.selected.data());
                            for (std::size_t item = 0; item < selected; ++item) {
                                const std::size_t column = start + static_cast<std::size_t>(scratch.selected[item]);
                                const float distance = query_norm + norms[column] - 2.0f * dots[column];
                                if (!(distance <= worst)) continue;
                                const std::int32_t other = member_begin + static_cast<std::int32_t>(column);
                                if (other == query) continue;
                                insert_sorted(keys, pool, entry_key(std::max(distance, 0.0f), other));
                                if (keys[pool - 1] != kEmpty) worst = entry_distance(keys[pool - 1]);
                            }
                        }
                    }
                }
                bucket.clear();
            }
        }
    });
    if (split && params.refine_rounds > 0) gather_lists(lists);
    ctx.report(0.8);

    // Refinement, the pull form of NN-descent's local join: every list is merged with the
    // lists of its joint neighbours, its first refine_fanout entries and (refine_reverse
    // > 0) the nearest refine_reverse points whose first refine_fanout entries hold it;
    // each joint neighbour's list is again its first refine_fanout entries and its
    // reverse list. A pass after the first only joins pairs with an edge that is new
    // since the previous pass (the other pairs were compared then). Distances by
    // l2_padded_many, the list's own entries recomputed the same way; each point reads the
    // lists as they were before the pass, and the reverse lists are built from them in
    // point order, so the result does not depend on the threads or the ranks.
    int rounds_run = 0;
    const int fanout = std::min(params.refine_fanout, pool);
    const int reverse = params.refine_reverse;
    // fresh[point * fanout + slot]: entry `slot` of the list is new since the previous
    // pass (not among that list's first `fanout` entries); empty before the first pass
    // (every entry is new).
    std::vector<std::uint8_t> fresh;
    std::vector<std::int64_t> reverse_offset;
    std::vector<std::uint64_t> reverse_keys;  // (distance, point) keys, kFreshBit set when new
    constexpr std::uint64_t kFreshBit = std::uint64_t{1} << 63;  // a distance's sign bit: always 0
    const auto list_of = [&](std::int64_t point) { return lists.data() + static_cast<std::size_t>(point) * static_cast<std::size_t>(pool); };
    const auto is_fresh = [&](std::int64_t point, int slot) {
        return fresh.empty() || fresh[static_cast<std::size_t>(point) * static_cast<std::size_t>(fanout) + static_cast<std::size_t>(slot)] != 0;
    };
    for (int round = 0; round < params.refine_rounds; ++round) {
        if (reverse > 0) {
            // Reverse lists: counts, prefix sums, filled in point order, then each sorted
            // by distance (ties by point) and cut to its nearest `reverse`.
            reverse_offset.assign(static_cast<std::size_t>(num_points) + 1, 0);
            for (std::int64_t point = 0; point < num_points; ++point) {
                const std::uint64_t* keys = list_of(point);
                for (int slot = 0; slot < fanout && keys[slot] != kEmpty; ++slot)
                    ++reverse_offset[static_cast<std::size_t>(entry_index(keys[slot])) + 1];
            }
            std::partial_sum(reverse_offset.begin(), reverse_offset.end(), reverse_offset.begin());
            reverse_keys.resize(static_cast<std::size_t>(reverse_offset.back()));
            {
                std::vector<std::int64_t> next(reverse_offset.begin(), reverse_offset.end() - 1);
                for (std::int64_t point = 0; point < num_points; ++point) {
                    const std::uint64_t* keys = list_of(point);
                    for (int slot = 0; slot < fanout && keys[slot] != kEmpty; ++slot) {
                        const auto target = static_cast<std::size_t>(entry_index(keys[slot]));
                        reverse_keys[static_cast<std::size_t>(next[target]++)] =
                            (keys[slot] & 0xffffffff00000000ULL) | static_cast<std::uint32_t>(point) | (is_fresh(point, slot) ? kFreshBit : 0);
                    }
                }
            }
            tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, num_points, 4096), [&](const tbb::blocked_range<std::int64_t>& range) {
                for (std::int64_t point = range.begin(); point != range.end(); ++point) {
                    const auto first = reverse_keys.begin() + reverse_offset[static_cast<std::size_t>(point)];
                    const auto last = reverse_keys.begin() + reverse_offset[static_cast<std::size_t>(point) + 1];
                    std::sort(first, last, [](std::uint64_t a, std::uint64_t b) { return (a & ~kFreshBit) < (b & ~kFreshBit); });
                }
            });
        }
        const auto reverse_of = [&](std::int64_t point) {
            const auto first = static_cast<std::size_t>(reverse_offset[static_cast<std::size_t>(point)]);
            const auto count = std::min<std::size_t>(static_cast<std::size_t>(reverse_offset[static_cast<std::size_t>(point) + 1]) - first,
                                                     static_cast<std::size_t>(reverse));
            return std::span<const std::uint64_t>(reverse_keys.data() + first, count);
        };
        struct RefineScratch {
            std::vector<std::uint32_t> visited;
            std::uint32_t stamp = 0;
            std::vector<std::int32_t> candidates;
            std::vector<std::pair<std::int32_t, bool>> joint;  // (joint neighbour, its edge is new)
            std::vector<float> distances;
        };
        tbb::enumerable_thread_specific<RefineScratch> refine_scratches;
        UninitializedVector<std::uint64_t> refined(lists.size());
        tbb::parallel_for(tbb::blocked_range<std::int64_t>(my_first, my_end, 256), [&](const tbb::blocked_range<std::int64_t>& range) {
            ctx.checkpoint();
            RefineScratch& scratch = refine_scratches.local();
            if (scratch.visited.empty()) scratch.visited.assign(static_cast<std::size_t>(num_points), 0);
            for (std::int64_t point = range.begin(); point != range.end(); ++point) {
                if (++scratch.stamp == 0) {
                    std::fill(scratch.visited.begin(), scratch.visited.end(), 0);
                    scratch.stamp = 1;
                }
                const std::uint32_t stamp = scratch.stamp;
                const std::uint64_t* own = list_of(point);
                scratch.candidates.clear();
                scratch.joint.clear();
                scratch.visited[static_cast<std::size_t>(point)] = stamp;
                for (int slot = 0; slot < pool && own[slot] != kEmpty; ++slot) {
                    const std::int32_t neighbor = entry_index(own[slot]);
                    scratch.visited[static_cast<std::size_t>(neighbor)] = stamp;
                    scratch.candidates.push_back(neighbor);
                    if (slot < fanout) scratch.joint.emplace_back(neighbor, is_fresh(point, slot));
                }
                if (reverse > 0)
                    for (const std::uint64_t key : reverse_of(point)) {
                        const std::int32_t other = entry_index(key);
                        scratch.joint.emplace_back(other, (key & kFreshBit) != 0);
                        if (scratch.visited[static_cast<std::size_t>(other)] == stamp) continue;
                        scratch.visited[static_cast<std::size_t>(other)] = stamp;
                        scratch.candidates.push_back(other);
                    }
                for (const auto& [joined, joined_fresh] : scratch.joint) {
                    const std::uint64_t* theirs = list_of(joined);
                    for (int slot = 0; slot < fanout && theirs[slot] != kEmpty; ++slot) {
                        const std::int32_t other = entry_index(theirs[slot]);
                        if (scratch.visited[static_cast<std::size_t>(other)] == stamp || !(joined_fresh || is_fresh(joined, slot))) continue;
                        scratch.visited[static_cast<std::size_t>(other)] = stamp;
                        scratch.candidates.push_back(other);
                    }
                    if (reverse > 0)
                        for (const std::uint64_t key : reverse_of(joined)) {
                            const std::int32_t other = entry_index(key);
                            if (scratch.visited[static_cast<std::size_t>(other)] == stamp || !(joined_fresh || (key & kFreshBit) != 0)) continue;
                            scratch.visited[static_cast<std::size_t>(other)] = stamp;
                            scratch.candidates.push_back(other);
                        }
                }
                scratch.distances.resize(scratch.candidates.size());
                l2_padded_many(rows.row(point), rows.values.data(), rows.stride, scratch.candidates.data(),
                               scratch.candidates.size(), scratch.distances.data());
                std::uint64_t* out = refined.data() + static_cast<std::size_t>(point) * static_cast<std::size_t>(pool);
                std::fill_n(out, pool, kEmpty);
                for (std::size_t item = 0; item < scratch.candidates.size(); ++item)
                    insert_sorted(out, pool, entry_key(scratch.distances[item], scratch.candidates[item]));
            }
        });
        rounds_run = round + 1;
        if (round + 1 == params.refine_rounds) {
            lists.swap(refined);
            break;
        }
        if (split) gather_lists(refined);
        // Which entries are new, from the whole lists (the same on every rank); no new
        // entry anywhere: a further pass would change nothing.
        std::vector<std::uint8_t> next_fresh(static_cast<std::size_t>(num_points) * static_cast<std::size_t>(fanout), 0);
        const std::int64_t fresh_count = tbb::parallel_reduce(
            tbb::blocked_range<std::int64_t>(0, num_points, 4096), std::int64_t{0},
            [&](const tbb::blocked_range<std::int64_t>& range, std::int64_t count) {
                for (std::int64_t point = range.begin(); point != range.end(); ++point) {
                    const std::uint64_t* before = list_of(point);
                    const std::uint64_t* after = refined.data() + static_cast<std::size_t>(point) * static_cast<std::size_t>(pool);
                    for (int slot = 0; slot < fanout && after[slot] != kEmpty; ++slot) {
                        const std::int32_t index = entry_index(after[slot]);
                        bool known = false;
                        for (int old = 0; old < fanout && before[old] != kEmpty && !known; ++old) known = entry_index(before[old]) == index;
                        if (!known) {
                            next_fresh[static_cast<std::size_t>(point) * static_cast<std::size_t>(fanout) + static_cast<std::size_t>(slot)] = 1;
                            ++count;
                        }
                    }
                }
                return count;
            },
            std::plus<>());
        lists.swap(refined);
        fresh.swap(next_fresh);
        if (fresh_count == 0) break;
    }
    ctx.report(0.9);

    // Exact squared distances from the input coordinates (not the centred copy): the same
    // values every other method reports. One process writes each point's row in input
    // order; over several ranks each rank writes its points' rows in its own order and
    // rank 0 places them.
    const std::size_t width = static_cast<std::size_t>(pool);
    std::vector<std::int32_t> indices(static_cast<std::size_t>(split ? my_end - my_first : num_points) * width, -1);
    std::vector<double> sq_distances(indices.size(), 0.0);
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(my_first, my_end, 1024), [&](const tbb::blocked_range<std::int64_t>& range) {
        std::int32_t neighbors[kNnDescentMaxList];
        for (std::int64_t point = range.begin(); point != range.end(); ++point) {
            const auto input_row = static_cast<std::size_t>(original[static_cast<std::size_t>(point)]);
            const std::uint64_t* keys = lists.data() + static_cast<std::size_t>(point) * width;
            int count = 0;
            while (count < pool && keys[count] != kEmpty) {
                neighbors[count] = original[static_cast<std::size_t>(entry_index(keys[count]))];
                ++count;
            }
            const std::size_t out = (split ? static_cast<std::size_t>(point - my_first) : input_row) * width;
            std::copy_n(neighbors, count, indices.data() + out);
            exact_sq_distances(points.row(static_cast<std::int64_t>(input_row)).data(), points.data(),
                               static_cast<std::size_t>(points.cols()), num_dims, neighbors, count,
                               sq_distances.data() + out);
        }
    });

    KnnCandidates result;
    result.iterations = rounds_run;
    if (!split) {
        result.pool = pool;
        result.indices = std::move(indices);
        result.sq_distances = std::move(sq_distances);
        return result;
    }
    if (rank != 0) {
        ByteWriter out;
        out.put_vector(std::span<const std::int32_t>(indices));
        out.put_vector(std::span<const double>(sq_distances));
        comm->send(out.bytes(), 0);
        return result;
    }
    result.pool = pool;
    result.indices.assign(static_cast<std::size_t>(num_points) * width, -1);
    result.sq_distances.assign(result.indices.size(), 0.0);
    const auto place = [&](std::int64_t first, std::span<const std::int32_t> rows, std::span<const double> distances) {
        if (rows.size() != distances.size() || rows.size() % width != 0)
            throw std::runtime_error("ivf_knn: a rank sent lists of the wrong size");
        for (std::size_t row = 0; row < rows.size() / width; ++row) {
            const auto input_row = static_cast<std::size_t>(original[static_cast<std::size_t>(first) + row]);
            std::copy_n(rows.data() + row * width, width, result.indices.data() + input_row * width);
            std::copy_n(distances.data() + row * width, width, result.sq_distances.data() + input_row * width);
        }
    };
    place(my_first, indices, sq_distances);
    for (int from = 1; from < ranks; ++from) {
        const Bytes message = comm->receive(from);
        ByteReader in(message);
        const std::vector<std::int32_t> rows = in.get_vector<std::int32_t>();
        const std::vector<double> distances = in.get_vector<double>();
        if (static_cast<std::int64_t>(rows.size()) != (list_offsets[static_cast<std::size_t>(from) + 1] - list_offsets[static_cast<std::size_t>(from)]) * pool)
            throw std::runtime_error("ivf_knn: rank " + std::to_string(from) + " sent lists for the wrong number of points");
        place(list_offsets[static_cast<std::size_t>(from)], rows, distances);
    }
    return result;
}

}  // namespace fathom::detail
