#include "core/algo/knn.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>

#include <hnswlib/hnswlib.h>

#include "core/algo/ivf_knn.hpp"
#include "core/types/Comm.hpp"
#include "core/algo/l2_kernel.hpp"
#include "core/algo/nn_descent.hpp"
#include "core/backend/Accelerator.hpp"
#include "core/data/ShardedCsr.hpp"
#include "core/types/JobContext.hpp"

namespace fathom {

namespace {

constexpr std::int64_t kQueryBlock = 128;   // queries per task (tile rows)
constexpr std::int64_t kPointBlock = 2048;  // points per tile (tile columns)

using detail::exact_sq_distance;

/// (squared distance, index) ordered lexicographically: ties go to the lower index.
using Candidate = std::pair<double, std::int32_t>;

/// Writes self + the k-1 nearest others of `candidates` (any order, may contain self)
/// into the output row. Returns the squared distance of the last neighbour kept.
double finish_row(std::int64_t query, std::vector<Candidate>& candidates, int num_neighbors, std::int32_t* out_indices,
                  float* out_distances) {
    const auto self = static_cast<std::int32_t>(query);
    std::erase_if(candidates, [self](const Candidate& candidate) { return candidate.second == self; });
    const auto others = static_cast<std::size_t>(num_neighbors - 1);
    std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(others), candidates.end());
    out_indices[0] = self;
    out_distances[0] = 0.0f;
    for (std::size_t rank = 0; rank < others; ++rank) {
        out_indices[rank + 1] = candidates[rank].second;
        out_distances[rank + 1] = static_cast<float>(std::sqrt(candidates[rank].first));
    }
    return others == 0 ? 0.0 : candidates[others - 1].first;
}

/// All points scanned in double: the fallback for a query the float screen cannot certify.
void brute_force_row(const DenseMatrix<float>& points, int num_dims, int num_neighbors, std::int64_t query,
                     std::int32_t* out_indices, float* out_distances) {
    const std::int64_t num_cells = points.rows();
    std::vector<Candidate> candidates(static_cast<std::size_t>(num_cells));
    const float* query_row = points.row(query).data();
    for (std::int64_t cell = 0; cell < num_cells; ++cell)
        candidates[static_cast<std::size_t>(cell)] = {exact_sq_distance(query_row, points.row(cell).data(), num_dims),
                                                      static_cast<std::int32_t>(cell)};
    finish_row(query, candidates, num_neighbors, out_indices, out_distances);
}

/// The float copy the screen works on: the first num_dims columns, centred in double
/// (distances do not change; smaller norms mean less cancellation in
/// ||q||^2 + ||x||^2 - 2 q.x), packed in blocks of kPointBlock points for
/// detail::dot_tile (dims x width per block, one column per point; the last block padded
/// with zero columns whose key is infinite). Written by parallel tasks, block by block,
/// so that the pages are first touched in parallel.
struct Screen {
    std::size_t num_dims = 0;
    std::vector<double> mean;
    std::unique_ptr<float[]> packed;  ///< the blocks, block b at b * kPointBlock * num_dims
    /// ||x||^2 (1 - c u) per packed column (infinite in the padding): keys become lower
    /// bounds (see exact_search).
    std::vector<float> lower_norms;

    /// Row `cell` centred into out[0, num_dims); returns its squared norm (in double, of
    /// the float values: the norm the packed column's key was made from).
    double centre(const DenseMatrix<float>& points, std::int64_t cell, float* out) const noexcept {
        const auto row = points.row(cell);
        double norm = 0.0;
        for (std::size_t dim = 0; dim < num_dims; ++dim) {
            out[dim] = static_cast<float>(row[dim] - mean[dim]);
            norm += static_cast<double>(out[dim]) * out[dim];
        }
        return norm;
    }
};

Screen make_screen(const DenseMatrix<float>& points, int num_dims, double error_factor) {
    static_assert(kPointBlock % detail::kDotTileWidth == 0, "full blocks need no padding");
    const std::int64_t num_cells = points.rows();
    Screen screen;
    screen.num_dims = static_cast<std::size_t>(num_dims);
    const std::size_t dims = screen.num_dims;
    screen.mean = detail::column_means(points, num_dims);
    const std::int64_t full_blocks = num_cells / kPointBlock;
    const std::size_t total_columns =
        static_cast<std::size_t>(full_blocks * kPointBlock) + detail::dot_tile_columns(static_cast<std::size_t>(num_cells - full_blocks * kPointBlock));
    screen.packed = std::make_unique_for_overwrite<float[]>(total_columns * dims);
    screen.lower_norms.resize(total_columns);
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, (num_cells + kPointBlock - 1) / kPointBlock, 1),
                      [&](const tbb::blocked_range<std::int64_t>& blocks) {
        std::vector<float> centred(dims);
        for (std::int64_t block = blocks.begin(); block != blocks.end(); ++block) {
            const std::int64_t begin = block * kPointBlock;
            const std::int64_t count = std::min(kPointBlock, num_cells - begin);
            const std::size_t width = detail::dot_tile_columns(static_cast<std::size_t>(count));
            float* packed = screen.packed.get() + static_cast<std::size_t>(begin) * dims;
            for (std::size_t column = 0; column < width; ++column) {
                const auto cell = begin + static_cast<std::int64_t>(column);
                float& lower_norm = screen.lower_norms[static_cast<std::size_t>(cell)];
                if (static_cast<std::int64_t>(column) < count) {
                    const double norm = screen.centre(points, cell, centred.data());
                    for (std::size_t dim = 0; dim < dims; ++dim) packed[dim * width + column] = centred[dim];
                    lower_norm = static_cast<float>(norm * (1.0 - error_factor));
                } else {
                    for (std::size_t dim = 0; dim < dims; ++dim) packed[dim * width + column] = 0.0f;
                    lower_norm = std::numeric_limits<float>::infinity();
                }
            }
        }
    });
    return screen;
}

void check_points(const DenseMatrix<float>& points, int num_dims, int num_neighbors) {
    if (num_dims < 1 || num_dims > points.cols())
        throw std::invalid_argument("exact_neighbors: num_dims " + std::to_string(num_dims) + " not in [1, " +
                                    std::to_string(points.cols()) + "]");
    if (num_neighbors < 1 || num_neighbors > points.rows())
        throw std::invalid_argument("exact_neighbors: num_neighbors " + std::to_string(num_neighbors) +
                                    " not in [1, num_cells = " + std::to_string(points.rows()) + "]");
    if (points.rows() > std::numeric_limits<std::int32_t>::max())
        throw std::invalid_argument("nearest_neighbors: more than 2^31 - 1 cells");
}

/// Exact search for the queries listed in `queries` (global row indices); row r of
/// the outputs is queries[r].
std::int64_t exact_search(const DenseMatrix<float>& points, int num_dims, int num_neighbors,
                          const std::vector<std::int64_t>& queries, std::int32_t* out_indices, float* out_distances,
                          JobContext& ctx) {
    const std::int64_t num_cells = points.rows();
    const auto num_queries = static_cast<std::int64_t>(queries.size());
    if (num_queries == 0) return 0;
    // Rigorous bound on |float screen - exact| for one pair, relative to ||q||^2 + ||x||^2:
    // the dot product (gamma_d), both norms (gamma_d each), the three-term sum and the
    // rounding of the centred coordinates, all with unit roundoff u = 2^-24, plus slack.
    const double error_factor = (2.0 * num_dims + 32.0) * std::ldexp(1.0, -24);
    // The screen key of point x for query q is ||x||^2 (1 - c u) - 2 q.x, so that
    // ||q||^2 (1 - c u) + key is a lower bound of the exact squared distance: points
    // with large norms (outliers) carry their own error and do not loosen the bound
    // for everyone else.
    const Screen screen = make_screen(points, num_dims, error_factor);
    // Candidates kept per query by the float screen; the margin absorbs float error.
    const std::int64_t keep = std::min<std::int64_t>(num_cells, num_neighbors + std::max(8, num_neighbors / 2));
    std::atomic<std::int64_t> fallbacks{0};
    std::atomic<std::int64_t> blocks_done{0};
    const std::int64_t num_blocks = (num_queries + kQueryBlock - 1) / kQueryBlock;

    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, num_blocks, 1), [&](const tbb::blocked_range<std::int64_t>& range) {
        std::vector<float> products(4 * static_cast<std::size_t>(kPointBlock));
        std::vector<std::int32_t> selected(static_cast<std::size_t>(kPointBlock));
        std::vector<float> query_block(static_cast<std::size_t>(kQueryBlock) * screen.num_dims);  // centred rows
        std::vector<float> query_norms(static_cast<std::size_t>(kQueryBlock));  // ||q||^2 as the screen stores norms
        std::vector<std::vector<std::pair<float, std::int32_t>>> heaps;
        std::vector<Candidate> candidates;
        for (std::int64_t block = range.begin(); block != range.end(); ++block) {
            ctx.checkpoint();
            const std::int64_t first = block * kQueryBlock;
            const std::int64_t count = std::min(kQueryBlock, num_queries - first);
            heaps.assign(static_cast<std::size_t>(count), {});
            for (auto& heap : heaps) heap.reserve(static_cast<std::size_t>(keep));
            for (std::int64_t row = 0; row < count; ++row)
                query_norms[static_cast<std::size_t>(row)] = static_cast<float>(
                    screen.centre(points, queries[first + row], query_block.data() + static_cast<std::size_t>(row) * screen.num_dims));
            for (std::int64_t point_begin = 0; point_begin < num_cells; point_begin += kPointBlock) {
                const std::size_t width = detail::dot_tile_columns(static_cast<std::size_t>(std::min(kPointBlock, num_cells - point_begin)));
                const float* packed = screen.packed.get() + static_cast<std::size_t>(point_begin) * screen.num_dims;
                const float* norms = screen.lower_norms.data() + point_begin;
                for (std::int64_t quad = 0; quad < count; quad += 4) {
                    const auto rows = static_cast<std::size_t>(std::min<std::int64_t>(4, count - quad));
                    const float* query_rows[4];
                    for (std::size_t row = 0; row < rows; ++row)
                        query_rows[row] = query_block.data() + (static_cast<std::size_t>(quad) + row) * screen.num_dims;
                    detail::dot_tile(query_rows, rows, packed, width, screen.num_dims, products.data());
                    for (std::size_t row = 0; row < rows; ++row) {
                        auto& heap = heaps[static_cast<std::size_t>(quad) + row];
                        const float* dots = products.data() + row * width;
                        // The screen key ||x||^2 - 2 q.x orders points like the distance
                        // (||q||^2 is constant); only keys that can enter the heap are
                        // looked at (the padding's infinite keys never can).
                        const float threshold = static_cast<std::int64_t>(heap.size()) < keep
                                                    ? std::numeric_limits<float>::max()
                                                    : heap.front().first;
                        const std::size_t passed = detail::columns_below(norms, dots, width, threshold, selected.data());
                        for (std::size_t item = 0; item < passed; ++item) {
                            const auto column = static_cast<std::size_t>(selected[item]);
                            const float key = norms[column] - 2.0f * dots[column];
                            const auto cell = static_cast<std::int32_t>(point_begin + static_cast<std::int64_t>(column));
                            if (static_cast<std::int64_t>(heap.size()) < keep) {
                                heap.emplace_back(key, cell);
                                std::push_heap(heap.begin(), heap.end());
                            } else if (key < heap.front().first) {
                                std::pop_heap(heap.begin(), heap.end());
                                heap.back() = {key, cell};
                                std::push_heap(heap.begin(), heap.end());
                            }
                        }
                    }
                }
            }
            for (std::int64_t row = 0; row < count; ++row) {
                const std::int64_t query = queries[first + row];
                const auto& heap = heaps[static_cast<std::size_t>(row)];
                const float* query_row = points.row(query).data();
                candidates.clear();
                for (const auto& [key, cell] : heap)
                    candidates.emplace_back(exact_sq_distance(query_row, points.row(cell).data(), num_dims), cell);
                std::int32_t* indices = out_indices + (first + row) * num_neighbors;
                float* distances = out_distances + (first + row) * num_neighbors;
                const double last = finish_row(query, candidates, num_neighbors, indices, distances);
                if (static_cast<std::int64_t>(heap.size()) < num_cells) {
                    // Every point left out has a key >= the heap's worst, so its exact squared
                    // distance is >= bound; certify that none can be closer than the last
                    // neighbour kept.
                    const double query_norm = query_norms[static_cast<std::size_t>(row)];
                    const double bound = query_norm * (1.0 - error_factor) + static_cast<double>(heap.front().first);
                    if (!(bound > last)) {
                        brute_force_row(points, num_dims, num_neighbors, query, indices, distances);
                        fallbacks.fetch_add(1, std::memory_order_relaxed);
                    }
                }
            }
            const auto done = blocks_done.fetch_add(1, std::memory_order_relaxed) + 1;
            ctx.report(static_cast<double>(done) / static_cast<double>(num_blocks));
        }
    });
    return fallbacks.load();
}

/// Contiguous float rows of the first num_dims columns, each padded with zeros to
/// `stride` floats (hnswlib copies points in).
std::vector<float> leading_columns(const DenseMatrix<float>& points, int num_dims, std::size_t stride) {
    std::vector<float> data(static_cast<std::size_t>(points.rows()) * stride, 0.0f);
    for (std::int64_t cell = 0; cell < points.rows(); ++cell)
        std::copy_n(points.row(cell).data(), num_dims, data.data() + static_cast<std::size_t>(cell) * stride);
    return data;
}

/// hnswlib's L2 space on zero-padded rows with the SIMD kernel of l2_kernel.cpp
/// (hnswlib's own L2Space uses SSE only unless the whole build targets AVX). The
/// padding adds nothing to a distance.
class PaddedL2Space final : public hnswlib::SpaceInterface<float> {
public:
    explicit PaddedL2Space(std::size_t stride) : m_stride(stride) {}
    std::size_t get_data_size() override { return m_stride * sizeof(float); }
    hnswlib::DISTFUNC<float> get_dist_func() override { return &detail::l2_padded; }
    void* get_dist_func_param() override { return &m_stride; }

private:
    std::size_t m_stride;
};

/// Approximate search with an HNSW index over all points; queries [begin, end) of
/// each partition searched in parallel.
void hnsw_search(const DenseMatrix<float>& points, int num_dims, const KnnOptions& options, int num_neighbors,
                 KnnGraph& graph, JobContext& ctx) {
    const std::int64_t num_cells = points.rows();
    const std::size_t stride = detail::l2_padded_size(static_cast<std::size_t>(num_dims));
    const std::vector<float> data = leading_columns(points, num_dims, stride);
    PaddedL2Space space(stride);
    hnswlib::HierarchicalNSW<float> index(&space, static_cast<std::size_t>(num_cells),
                                          static_cast<std::size_t>(options.hnsw_m),
                                          static_cast<std::size_t>(options.hnsw_ef_construction),
                                          static_cast<std::size_t>(options.seed % std::numeric_limits<std::uint32_t>::max()));
    const auto add = [&](std::int64_t cell) {
        index.addPoint(data.data() + static_cast<std::size_t>(cell) * stride, static_cast<hnswlib::labeltype>(cell));
    };
    // Building is about half of the work; report it as the first half.
    constexpr std::int64_t kBuildChunk = 1024;
    const std::int64_t num_chunks = (num_cells + kBuildChunk - 1) / kBuildChunk;
    std::atomic<std::int64_t> chunks_done{0};
    const auto build_chunk = [&](std::int64_t chunk) {
        ctx.checkpoint();
        const std::int64_t end = std::min(num_cells, (chunk + 1) * kBuildChunk);
        for (std::int64_t cell = std::max<std::int64_t>(1, chunk * kBuildChunk); cell < end; ++cell) add(cell);
        const auto done = chunks_done.fetch_add(1, std::memory_order_relaxed) + 1;
        ctx.report(0.5 * static_cast<double>(done) / static_cast<double>(num_chunks));
    };
    add(0);  // the entry point, before any concurrent insertion (as hnswlib's own bindings do)
    if (options.hnsw_parallel_build) {
        tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, num_chunks, 1),
                          [&](const tbb::blocked_range<std::int64_t>& range) {
                              for (std::int64_t chunk = range.begin(); chunk != range.end(); ++chunk) build_chunk(chunk);
                          });
    } else {
        for (std::int64_t chunk = 0; chunk < num_chunks; ++chunk) build_chunk(chunk);
    }
    index.setEf(static_cast<std::size_t>(std::max(options.hnsw_ef, num_neighbors)));

    std::atomic<std::int64_t> queries_done{0};
    for (const RowRange& partition : split_rows_evenly(num_cells, options.num_partitions)) {
        tbb::parallel_for(
            tbb::blocked_range<std::int64_t>(partition.begin, partition.end, 256),
            [&](const tbb::blocked_range<std::int64_t>& range) {
                ctx.checkpoint();
                std::vector<Candidate> candidates;
                for (std::int64_t query = range.begin(); query != range.end(); ++query) {
                    const float* query_row = points.row(query).data();
                    auto found = index.searchKnn(data.data() + static_cast<std::size_t>(query) * stride,
                                                 static_cast<std::size_t>(num_neighbors));
                    candidates.clear();
                    while (!found.empty()) {
                        const auto cell = static_cast<std::int32_t>(found.top().second);
                        found.pop();
                        candidates.emplace_back(exact_sq_distance(query_row, points.row(cell).data(), num_dims), cell);
                    }
                    // Too few results (tiny or badly connected graphs): a brute-force row.
                    const auto non_self = std::count_if(candidates.begin(), candidates.end(),
                                                        [query](const Candidate& c) { return c.second != query; });
                    if (non_self < num_neighbors - 1) {
                        brute_force_row(points, num_dims, num_neighbors, query,
                                        graph.indices.data() + query * num_neighbors,
                                        graph.distances.data() + query * num_neighbors);
                        continue;
                    }
                    finish_row(query, candidates, num_neighbors, graph.indices.data() + query * num_neighbors,
                               graph.distances.data() + query * num_neighbors);
                }
                const auto done = queries_done.fetch_add(range.size(), std::memory_order_relaxed) + range.size();
                ctx.report(0.5 + 0.5 * static_cast<double>(done) / static_cast<double>(num_cells));
            });
    }
}

/// Every cell's candidates (`found`, from nn_descent or ivf_knn) re-ranked by the
/// double-precision distance (the contract of exact_neighbors); a cell left with too
/// few candidates gets a brute-force row. Each partition's rows depend on `found` only.
void rerank(const DenseMatrix<float>& points, int num_dims, const KnnOptions& options, int num_neighbors,
            const detail::KnnCandidates& found, KnnGraph& graph, JobContext& ctx) {
    const std::int64_t num_cells = points.rows();
    const int pool = found.pool;
    std::atomic<std::int64_t> queries_done{0};
    for (const RowRange& partition : split_rows_evenly(num_cells, options.num_partitions)) {
        tbb::parallel_for(tbb::blocked_range<std::int64_t>(partition.begin, partition.end, 1024),
                          [&](const tbb::blocked_range<std::int64_t>& range) {
                              ctx.checkpoint();
                              std::vector<Candidate> candidates;
                              for (std::int64_t query = range.begin(); query != range.end(); ++query) {
                                  candidates.clear();
                                  for (int slot = 0; slot < pool; ++slot) {
                                      const auto entry = static_cast<std::size_t>(query * pool + slot);
                                      if (found.indices[entry] < 0) break;
                                      candidates.emplace_back(found.sq_distances[entry], found.indices[entry]);
                                  }
                                  std::int32_t* indices = graph.indices.data() + query * num_neighbors;
                                  float* distances = graph.distances.data() + query * num_neighbors;
                                  if (static_cast<int>(candidates.size()) < num_neighbors - 1)
                                      brute_force_row(points, num_dims, num_neighbors, query, indices, distances);
                                  else
                                      finish_row(query, candidates, num_neighbors, indices, distances);
                              }
                              const auto done = queries_done.fetch_add(range.size(), std::memory_order_relaxed) + range.size();
                              ctx.report(0.9 + 0.1 * static_cast<double>(done) / static_cast<double>(num_cells));
                          });
    }
}

/// The list length of an approximate search: num_neighbors - 1 plus `extra` entries.
int search_pool(int extra, int num_neighbors, std::int64_t num_cells) {
    return static_cast<int>(std::min<std::int64_t>(num_neighbors - 1 + extra, num_cells - 1));
}

/// Approximate search by NN-descent over all points, then re-ranked. The graph is built
/// once for all cells.
int nndescent_search(const DenseMatrix<float>& points, int num_dims, const KnnOptions& options, int num_neighbors,
                     KnnGraph& graph, JobContext& ctx) {
    const std::int64_t num_cells = points.rows();
    detail::NnDescentParams params;
    params.pool = search_pool(options.nndescent_extra, num_neighbors, num_cells);
    // pynndescent 0.5 NNDescent.__init__: n_trees = min(64, 5 + int(round(n ** 0.25 / 2.0))).
    params.num_trees = options.nndescent_trees > 0
                           ? options.nndescent_trees
                           : std::min(64, 5 + static_cast<int>(std::lround(std::pow(static_cast<double>(num_cells), 0.25) / 2.0)));
    params.leaf_size = options.nndescent_leaf_size;
    params.max_candidates = options.nndescent_max_candidates;
    params.max_iterations = options.nndescent_iterations;
    params.delta = options.nndescent_delta;
    params.search_ef = options.nndescent_search_ef;
    params.seed = options.seed;
    const detail::KnnCandidates found = detail::nn_descent(points, num_dims, params, ctx);
    rerank(points, num_dims, options, num_neighbors, found, graph, ctx);
    return found.iterations;
}

}  // namespace

int ivf_probes_for(const KnnOptions& options, std::int64_t num_cells) {
    if (options.ivf_probes_scale_from <= 0 || num_cells <= options.ivf_probes_scale_from) return options.ivf_probes;
    const double scaled = std::round(options.ivf_probes * std::sqrt(static_cast<double>(num_cells) /
                                                                    static_cast<double>(options.ivf_probes_scale_from)));
    return static_cast<int>(std::clamp<double>(scaled, options.ivf_probes, detail::kIvfMaxProbes));
}

namespace {

/// ivf_knn's parameters from the options.
detail::IvfParams ivf_params(const KnnOptions& options, int num_neighbors, std::int64_t num_cells) {
    detail::IvfParams params;
    params.pool = search_pool(options.ivf_extra, num_neighbors, num_cells);
    params.cluster_size = options.ivf_cluster_size;
    params.probes = ivf_probes_for(options, num_cells);
    params.assign_groups = options.ivf_assign_groups;
    params.refine_rounds = options.ivf_refine_rounds;
    params.refine_fanout = options.ivf_refine_fanout;
    params.refine_reverse = options.ivf_refine_reverse;
    params.seed = options.seed;
    return params;
}

/// Approximate search by the inverted-file search of ivf_knn, then re-ranked.
void ivf_search(const DenseMatrix<float>& points, int num_dims, const KnnOptions& options, int num_neighbors,
               KnnGraph& graph, JobContext& ctx) {
    rerank(points, num_dims, options, num_neighbors,
           detail::ivf_knn(points, num_dims, ivf_params(options, num_neighbors, points.rows()), ctx), graph, ctx);
}

/// An approximate result's recall, measured on options.recall_sample random cells
/// against the exact search (NaN when the sample is 0).
void measure_recall(const DenseMatrix<float>& points, int num_dims, const KnnOptions& options, KnnResult& result,
                    JobContext& ctx) {
    const std::int64_t num_cells = points.rows();
    const int num_neighbors = result.graph.num_neighbors;
    result.recall = std::numeric_limits<double>::quiet_NaN();
    if (options.recall_sample <= 0) return;
    std::vector<std::int64_t> all(static_cast<std::size_t>(num_cells));
    std::iota(all.begin(), all.end(), 0);
    std::vector<std::int64_t> sample;
    std::mt19937_64 generator(options.seed ^ 0x9e3779b97f4a7c15ULL);
    std::sample(all.begin(), all.end(), std::back_inserter(sample), std::min<std::int64_t>(options.recall_sample, num_cells),
                generator);
    KnnGraph truth;
    truth.num_cells = static_cast<std::int64_t>(sample.size());
    truth.num_neighbors = num_neighbors;
    truth.indices.resize(sample.size() * static_cast<std::size_t>(num_neighbors));
    truth.distances.resize(truth.indices.size());
    exact_search(points, num_dims, num_neighbors, sample, truth.indices.data(), truth.distances.data(), ctx);
    result.recall = knn_recall(result.graph, truth, sample);
    result.recall_queries = static_cast<int>(sample.size());
}

/// The method nearest_neighbors runs for `options` on `num_cells` cells (Auto resolved).
KnnMethod resolved_method(const KnnOptions& options, std::int64_t num_cells) {
    if (options.method != KnnMethod::Auto) return options.method;
    return num_cells < options.exact_below ? KnnMethod::Exact : KnnMethod::Ivf;
}

/// An empty result of num_cells x num_neighbors (the tables sized, zero).
KnnResult sized_result(std::int64_t num_cells, int num_dims, int num_neighbors, KnnMethod method) {
    KnnResult result;
    result.num_dims = num_dims;
    result.method_used = method;
    result.graph.num_cells = num_cells;
    result.graph.num_neighbors = num_neighbors;
    const std::size_t entries = static_cast<std::size_t>(num_cells) * static_cast<std::size_t>(num_neighbors);
    result.graph.indices.resize(entries);
    result.graph.distances.resize(entries);
    return result;
}

int effective_neighbors(int requested, std::int64_t num_cells) {
    // scanpy 1.9 Neighbors.compute_neighbors: "n_obs too small: adjusting to
    // `n_neighbors = 1 + int(0.5 * n_obs)`".
    if (requested > num_cells) return static_cast<int>(1 + num_cells / 2);
    return requested;
}

}  // namespace

const char* knn_method_name(KnnMethod method) noexcept {
    switch (method) {
        case KnnMethod::Auto: return "auto";
        case KnnMethod::Exact: return "exact";
        case KnnMethod::Hnsw: return "hnsw";
        case KnnMethod::NnDescent: return "nndescent";
        case KnnMethod::Ivf: return "ivf";
    }
    return "?";
}

KnnMethod parse_knn_method(const std::string& name, const std::string& what) {
    for (const auto method : {KnnMethod::Auto, KnnMethod::Exact, KnnMethod::Hnsw, KnnMethod::NnDescent, KnnMethod::Ivf})
        if (name == knn_method_name(method)) return method;
    throw std::invalid_argument(what + ": unknown kNN method '" + name + "' (auto, exact, hnsw, nndescent or ivf)");
}

void validate(const KnnOptions& options, std::int64_t num_cells, std::int64_t num_dims) {
    const auto fail = [](const std::string& message) { throw std::invalid_argument("KnnOptions::" + message); };
    if (options.num_neighbors < 2) fail("num_neighbors must be >= 2 (self included), got " + std::to_string(options.num_neighbors));
    if (options.num_pcs < 0) fail("num_pcs must be >= 0 (0 = all columns), got " + std::to_string(options.num_pcs));
    if (num_dims >= 1 && options.num_pcs > num_dims)
        fail("num_pcs " + std::to_string(options.num_pcs) + " exceeds the " + std::to_string(num_dims) +
             " columns of the input");
    if (options.exact_below < 0) fail("exact_below must be >= 0");
    if (options.hnsw_m < 2) fail("hnsw_m must be >= 2, got " + std::to_string(options.hnsw_m));
    if (options.hnsw_ef_construction < options.hnsw_m)
        fail("hnsw_ef_construction must be >= hnsw_m, got " + std::to_string(options.hnsw_ef_construction));
    if (options.hnsw_ef < 1) fail("hnsw_ef must be >= 1, got " + std::to_string(options.hnsw_ef));
    if (options.nndescent_trees < 0)
        fail("nndescent_trees must be >= 0 (0 = automatic), got " + std::to_string(options.nndescent_trees));
    if (options.nndescent_leaf_size < 2 || options.nndescent_leaf_size > detail::kNnDescentMaxList)
        fail("nndescent_leaf_size must be in [2, " + std::to_string(detail::kNnDescentMaxList) + "], got " +
             std::to_string(options.nndescent_leaf_size));
    // The candidate lists of the approximate searches hold num_neighbors - 1 + extra entries.
    const auto check_extra = [&](const std::string& name, int extra) {
        if (extra < 0) fail(name + " must be >= 0, got " + std::to_string(extra));
        const std::int64_t list = static_cast<std::int64_t>(options.num_neighbors) - 1 + extra;
        if (list > detail::kNnDescentMaxList)
            fail(name + ": num_neighbors - 1 + " + name + " must be <= " + std::to_string(detail::kNnDescentMaxList) +
                 ", got " + std::to_string(list));
    };
    check_extra("nndescent_extra", options.nndescent_extra);
    if (options.nndescent_max_candidates < 1 || options.nndescent_max_candidates > detail::kNnDescentMaxCandidates)
        fail("nndescent_max_candidates must be in [1, " + std::to_string(detail::kNnDescentMaxCandidates) + "], got " +
             std::to_string(options.nndescent_max_candidates));
    if (options.nndescent_iterations < 0)
        fail("nndescent_iterations must be >= 0, got " + std::to_string(options.nndescent_iterations));
    if (!(options.nndescent_delta >= 0.0)) fail("nndescent_delta must be >= 0, got " + std::to_string(options.nndescent_delta));
    if (options.nndescent_search_ef < 0 || options.nndescent_search_ef > detail::kNnDescentMaxSearchEf)
        fail("nndescent_search_ef must be in [0, " + std::to_string(detail::kNnDescentMaxSearchEf) + "], got " +
             std::to_string(options.nndescent_search_ef));
    if (options.ivf_cluster_size < 1) fail("ivf_cluster_size must be >= 1, got " + std::to_string(options.ivf_cluster_size));
    if (options.ivf_probes < 1 || options.ivf_probes > detail::kIvfMaxProbes)
        fail("ivf_probes must be in [1, " + std::to_string(detail::kIvfMaxProbes) + "], got " + std::to_string(options.ivf_probes));
    if (options.ivf_refine_rounds < 0) fail("ivf_refine_rounds must be >= 0, got " + std::to_string(options.ivf_refine_rounds));
    if (options.ivf_refine_fanout < 1)
        fail("ivf_refine_fanout must be >= 1, got " + std::to_string(options.ivf_refine_fanout));
    if (options.ivf_probes_scale_from < 0)
        fail("ivf_probes_scale_from must be >= 0, got " + std::to_string(options.ivf_probes_scale_from));
    if (options.ivf_assign_groups < 0)
        fail("ivf_assign_groups must be >= 0, got " + std::to_string(options.ivf_assign_groups));
    if (options.ivf_refine_reverse < 0)
        fail("ivf_refine_reverse must be >= 0, got " + std::to_string(options.ivf_refine_reverse));
    check_extra("ivf_extra", options.ivf_extra);
    if (options.num_partitions < 1) fail("num_partitions must be >= 1, got " + std::to_string(options.num_partitions));
    if (options.recall_sample < 0) fail("recall_sample must be >= 0");
    if (num_cells < 2) throw std::invalid_argument("nearest_neighbors: need at least 2 cells, got " + std::to_string(num_cells));
    if (num_dims < 1) throw std::invalid_argument("nearest_neighbors: the input has no columns");
    if (num_cells > std::numeric_limits<std::int32_t>::max())
        throw std::invalid_argument("nearest_neighbors: more than 2^31 - 1 cells");
}

KnnGraph exact_neighbors(const DenseMatrix<float>& points, int num_dims, int num_neighbors, std::int64_t query_begin,
                         std::int64_t query_end, JobContext& ctx, std::int64_t* fallback_queries) {
    check_points(points, num_dims, num_neighbors);
    if (query_begin < 0 || query_end < query_begin || query_end > points.rows())
        throw std::invalid_argument("exact_neighbors: query range [" + std::to_string(query_begin) + ", " +
                                    std::to_string(query_end) + ") outside [0, " + std::to_string(points.rows()) + ")");
    std::vector<std::int64_t> queries(static_cast<std::size_t>(query_end - query_begin));
    std::iota(queries.begin(), queries.end(), query_begin);
    KnnGraph graph;
    graph.num_cells = query_end - query_begin;
    graph.num_neighbors = num_neighbors;
    graph.indices.resize(queries.size() * static_cast<std::size_t>(num_neighbors));
    graph.distances.resize(graph.indices.size());
    const auto fallbacks =
        exact_search(points, num_dims, num_neighbors, queries, graph.indices.data(), graph.distances.data(), ctx);
    if (fallback_queries) *fallback_queries = fallbacks;
    return graph;
}

double knn_recall(const KnnGraph& approximate, const KnnGraph& exact_rows, const std::vector<std::int64_t>& sample) {
    if (sample.empty()) return std::numeric_limits<double>::quiet_NaN();
    if (exact_rows.num_cells != static_cast<std::int64_t>(sample.size()) ||
        exact_rows.num_neighbors != approximate.num_neighbors)
        throw std::invalid_argument("knn_recall: exact_rows must have one row per sample cell and the same k");
    const int others = approximate.num_neighbors - 1;
    if (others < 1) return 1.0;
    double total = 0.0;
    std::vector<std::int32_t> truth;
    for (std::size_t row = 0; row < sample.size(); ++row) {
        const auto expected = exact_rows.neighbors(static_cast<std::int64_t>(row)).subspan(1);
        truth.assign(expected.begin(), expected.end());
        std::sort(truth.begin(), truth.end());
        int hits = 0;
        for (const auto cell : approximate.neighbors(sample[row]).subspan(1))
            hits += std::binary_search(truth.begin(), truth.end(), cell) ? 1 : 0;
        total += static_cast<double>(hits) / others;
    }
    return total / static_cast<double>(sample.size());
}

KnnResult nearest_neighbors(const DenseMatrix<float>& points, const KnnOptions& options, JobContext& ctx,
                            const Accelerator* accelerator) {
    validate(options, points.rows(), points.cols());
    const std::int64_t num_cells = points.rows();
    const int num_dims = options.num_pcs == 0 ? static_cast<int>(points.cols()) : options.num_pcs;
    const int num_neighbors = effective_neighbors(options.num_neighbors, num_cells);

    KnnResult result = sized_result(num_cells, num_dims, num_neighbors, resolved_method(options, num_cells));
    KnnGraph& graph = result.graph;
    const std::size_t entries = graph.indices.size();

    if ((options.method == KnnMethod::Auto || options.method == KnnMethod::Exact) && accelerator != nullptr) {
        if (accelerator->exact_knn(points, num_dims, num_neighbors, graph.indices, graph.distances, ctx)) {
            if (graph.indices.size() != entries || graph.distances.size() != entries)
                throw std::runtime_error("nearest_neighbors: the accelerator (" + accelerator->name() + ") returned " +
                                         std::to_string(graph.indices.size()) + " indices and " +
                                         std::to_string(graph.distances.size()) + " distances; expected " +
                                         std::to_string(entries));
            result.method_used = KnnMethod::Exact;
            result.recall = 1.0;
            return result;
        }
        // A declining accelerator may have written the tables: the CPU starts from zeros.
        graph.indices.assign(entries, 0);
        graph.distances.assign(entries, 0.0f);
    }
    if (result.method_used == KnnMethod::Exact) {
        // Each partition (device) searches its queries against all points; the search
        // is certified exact, so the partitioning cannot change the result.
        for (const RowRange& partition : split_rows_evenly(num_cells, options.num_partitions)) {
            std::vector<std::int64_t> queries(static_cast<std::size_t>(partition.size()));
            std::iota(queries.begin(), queries.end(), partition.begin);
            result.exact_fallback_queries += exact_search(points, num_dims, num_neighbors, queries,
                                                          graph.indices.data() + partition.begin * num_neighbors,
                                                          graph.distances.data() + partition.begin * num_neighbors, ctx);
        }
        result.recall = 1.0;
        return result;
    }

    if (result.method_used == KnnMethod::NnDescent)
        result.nndescent_iterations = nndescent_search(points, num_dims, options, num_neighbors, graph, ctx);
    else if (result.method_used == KnnMethod::Ivf)
        ivf_search(points, num_dims, options, num_neighbors, graph, ctx);
    else
        hnsw_search(points, num_dims, options, num_neighbors, graph, ctx);
    measure_recall(points, num_dims, options, result, ctx);
    return result;
}

KnnResult nearest_neighbors(const DenseMatrix<float>& points, const KnnOptions& options, Comm& comm, JobContext& ctx) {
    if (comm.size() == 1) return nearest_neighbors(points, options, ctx);
    validate(options, points.rows(), points.cols());
    const std::int64_t num_cells = points.rows();
    const int num_dims = options.num_pcs == 0 ? static_cast<int>(points.cols()) : options.num_pcs;
    const int num_neighbors = effective_neighbors(options.num_neighbors, num_cells);
    const KnnMethod method = resolved_method(options, num_cells);
    if (method == KnnMethod::Exact) {
        // Each rank searches its share of the queries; rank 0 puts the rows in order.
        const auto shares = split_rows_evenly(num_cells, comm.size());
        const RowRange& mine = shares[static_cast<std::size_t>(comm.rank())];
        std::int64_t fallback = 0;
        KnnGraph rows = exact_neighbors(points, num_dims, num_neighbors, mine.begin, mine.end, ctx, &fallback);
        if (comm.rank() != 0) {
            ByteWriter out;
            out.put(fallback);
            out.put_vector(std::span<const std::int32_t>(rows.indices));
            out.put_vector(std::span<const float>(rows.distances));
            comm.send(out.bytes(), 0);
            return KnnResult{};
        }
        KnnResult result;
        result.num_dims = num_dims;
        result.method_used = KnnMethod::Exact;
        result.exact_fallback_queries = fallback;
        result.graph = std::move(rows);
        result.graph.num_cells = num_cells;
        for (int rank = 1; rank < comm.size(); ++rank) {
            const Bytes message = comm.receive(rank);
            ByteReader in(message);
            result.exact_fallback_queries += in.get<std::int64_t>();
            const auto indices = in.get_vector<std::int32_t>();
            const auto distances = in.get_vector<float>();
            result.graph.indices.insert(result.graph.indices.end(), indices.begin(), indices.end());
            result.graph.distances.insert(result.graph.distances.end(), distances.begin(), distances.end());
        }
        const std::size_t entries = static_cast<std::size_t>(num_cells) * static_cast<std::size_t>(num_neighbors);
        if (result.graph.indices.size() != entries || result.graph.distances.size() != entries)
            throw std::runtime_error("nearest_neighbors: the ranks' rows hold " +
                                     std::to_string(result.graph.indices.size()) + " entries; expected " +
                                     std::to_string(entries));
        return result;
    }
    if (method == KnnMethod::Ivf) {
        // The ranks share ivf_knn's phases; rank 0 re-ranks and measures the recall.
        const detail::KnnCandidates found =
            detail::ivf_knn(points, num_dims, ivf_params(options, num_neighbors, num_cells), ctx, &comm);
        if (comm.rank() != 0) return KnnResult{};
        KnnResult result = sized_result(num_cells, num_dims, num_neighbors, KnnMethod::Ivf);
        rerank(points, num_dims, options, num_neighbors, found, result.graph, ctx);
        measure_recall(points, num_dims, options, result, ctx);
        return result;
    }
    // NN-descent and HNSW build one structure over all points: rank 0 runs them.
    if (comm.rank() != 0) return KnnResult{};
    return nearest_neighbors(points, options, ctx);
}

}  // namespace fathom
