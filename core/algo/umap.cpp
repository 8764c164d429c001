#include "core/algo/umap.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/algo/fast_pow.hpp"
#include "core/algo/spectral.hpp"
#include "core/types/JobContext.hpp"

namespace fathom {

namespace {

// ---- find_ab_params ------------------------------------------------------------

double curve_value(double x, double a, double b) { return 1.0 / (1.0 + a * std::pow(x, 2.0 * b)); }

double fit_cost(const std::vector<double>& xs, const std::vector<double>& ys, double a, double b) {
    double cost = 0.0;
    for (std::size_t index = 0; index < xs.size(); ++index) {
        const double residual = curve_value(xs[index], a, b) - ys[index];
        cost += residual * residual;
    }
    return cost;
}

// ---- random numbers ------------------------------------------------------------

/// splitmix64: seeds and keyed streams.
constexpr std::uint64_t mix64(std::uint64_t value) noexcept {
    value += 0x9e3779b97f4a7c15ULL;
    value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ULL;
    value = (value ^ (value >> 27)) * 0x94d049bb133111ebULL;
    return value ^ (value >> 31);
}

/// A small fast generator (xorshift64*) for negative sampling; umap uses its own
/// Tausworthe generator (tau_rand_int), whose stream we do not reproduce.
class SampleRng {
public:
    explicit SampleRng(std::uint64_t seed) noexcept : m_state(mix64(seed) | 1ULL) {}
    /// Uniform integer in [0, bound).
    std::int64_t below(std::int64_t bound) noexcept {
        m_state ^= m_state >> 12;
        m_state ^= m_state << 25;
        m_state ^= m_state >> 27;
        const std::uint64_t bits = (m_state * 0x2545F4914F6CDD1DULL) >> 32;
        return static_cast<std::int64_t>((bits * static_cast<std::uint64_t>(bound)) >> 32);
    }

private:
    std::uint64_t m_state;
};

std::uint64_t stream_key(std::uint64_t seed, std::uint64_t epoch, std::uint64_t item) noexcept {
    return mix64(mix64(seed ^ 0x6a09e667f3bcc909ULL) ^ mix64(epoch * 0x100000001b3ULL + 0x3c6ef372fe94f82bULL) ^ item);
}

// ---- the SGD -------------------------------------------------------------------

/// umap's clip(): gradients limited to [-4, 4].
inline float clip4(float value) noexcept { return value > 4.0f ? 4.0f : (value < -4.0f ? -4.0f : value); }

/// The optimisation problem: edges (head -> tail) in CSR order with their sampling schedule.
struct Layout {
    std::int64_t num_vertices = 0;
    int dim = 2;
    std::vector<std::int64_t> offsets;      ///< pruned CSR row offsets (head = row)
    std::vector<std::int32_t> head;         ///< per edge
    std::vector<std::int32_t> tail;         ///< per edge
    std::vector<double> epochs_per_sample;  ///< per edge
    std::vector<double> epochs_per_negative_sample;
    std::vector<double> next_sample;        ///< epoch_of_next_sample
    std::vector<double> next_negative;      ///< epoch_of_next_negative_sample
    float a = 0, b = 0, gamma = 1;
    int negative_sample_rate = 5;
};

/// Attractive gradient coefficient of umap: -2ab d^(2(b-1)) / (1 + a d^(2b)), 0 at d = 0.
inline float attraction(float dist_squared, float a, float b) noexcept {
    if (!(dist_squared > 0.0f)) return 0.0f;
    const float power = std::pow(dist_squared, b);
    return -2.0f * a * b * (power / dist_squared) / (a * power + 1.0f);
}

/// Repulsive gradient coefficient: 2 gamma b / ((0.001 + d^2)(1 + a d^(2b))).
inline float repulsion(float dist_squared, float a, float b, float gamma) noexcept {
    const float power = std::pow(dist_squared, b);
    return 2.0f * gamma * b / ((0.001f + dist_squared) * (a * power + 1.0f));
}

/// Number of negative samples due for edge `edge` at `epoch`, advancing its schedule.
inline int negatives_due(Layout& layout, std::size_t edge, int epoch) noexcept {
    const int count = static_cast<int>((epoch - layout.next_negative[edge]) / layout.epochs_per_negative_sample[edge]);
    layout.next_negative[edge] += count * layout.epochs_per_negative_sample[edge];
    return count;
}

/// Float access for the two update styles: plain, and relaxed atomics for Hogwild
/// (racy by design, as umap's parallel=True, but without undefined behaviour).
struct PlainAccess {
    static float load(const float& value) noexcept { return value; }
    static void store(float& value, float next) noexcept { value = next; }
};
struct RelaxedAccess {
    static float load(const float& value) noexcept {
        return std::atomic_ref<float>(const_cast<float&>(value)).load(std::memory_order_relaxed);
    }
    static void store(float& value, float next) noexcept {
        std::atomic_ref<float>(value).store(next, std::memory_order_relaxed);
    }
};

/// One edge of optimize_layout_euclidean's epoch (move_other = True), in place.
/// Dim > 0 fixes the dimension at compile time (2 and 3 are the common cases).
template <typename Access, int Dim>
void process_edge(Layout& layout, float* embedding, std::size_t edge, int epoch, float alpha, SampleRng& rng) {
    const int dim = Dim > 0 ? Dim : layout.dim;
    const std::int64_t j = layout.head[edge];
    float* current = embedding + j * dim;
    float* other = embedding + static_cast<std::int64_t>(layout.tail[edge]) * dim;
    float cur[8], oth[8];
    float dist_squared = 0.0f;
    for (int d = 0; d < dim; ++d) {
        cur[d] = Access::load(current[d]);
        oth[d] = Access::load(other[d]);
        const float diff = cur[d] - oth[d];
        dist_squared += diff * diff;
    }
    const float coefficient = attraction(dist_squared, layout.a, layout.b);
    for (int d = 0; d < dim; ++d) {
        const float grad = clip4(coefficient * (cur[d] - oth[d]));
        cur[d] += grad * alpha;
        Access::store(current[d], cur[d]);
        Access::store(other[d], oth[d] - grad * alpha);
    }
    layout.next_sample[edge] += layout.epochs_per_sample[edge];
    const int negatives = negatives_due(layout, edge, epoch);
    for (int sample = 0; sample < negatives; ++sample) {
        const std::int64_t k = rng.below(layout.num_vertices);
        const float* negative = embedding + k * dim;
        dist_squared = 0.0f;
        for (int d = 0; d < dim; ++d) {
            oth[d] = Access::load(negative[d]);
            const float diff = cur[d] - oth[d];
            dist_squared += diff * diff;
        }
        float repel = 0.0f;
        if (dist_squared > 0.0f)
            repel = repulsion(dist_squared, layout.a, layout.b, layout.gamma);
        else if (j == k)
            continue;
        for (int d = 0; d < dim; ++d) {
            // umap moves by +4 in every dimension when the two points coincide.
            const float grad = repel > 0.0f ? clip4(repel * (cur[d] - oth[d])) : 4.0f;
            cur[d] += grad * alpha;
        }
        for (int d = 0; d < dim; ++d) Access::store(current[d], cur[d]);
    }
}

// ---- the Hogwild SGD -------------------------------------------------------------

/// One edge of the Hogwild SGD with its sampling schedule in 16 bytes (four edges per
/// cache line; the head is the CSR row). Single precision: epochs are at most a few
/// thousand, so float keeps the schedule to a small fraction of an epoch, and the
/// epoch loop streams a quarter of the bytes of double schedules.
struct HogwildEdge {
    std::int32_t tail = 0;
    float epochs_per_sample = 0.0f;
    float next_sample = 0.0f;    ///< umap's epoch_of_next_sample
    float next_negative = 0.0f;  ///< umap's epoch_of_next_negative_sample
};

/// The Hogwild problem: CSR rows of edges and the curve.
struct HogwildLayout {
    std::int64_t num_vertices = 0;
    int dim = 2;
    std::vector<std::int64_t> offsets;
    std::vector<HogwildEdge> edges;
    float a = 0, b = 0, gamma = 1;
    float negative_sample_rate = 5.0f;
    std::int64_t vertices_per_task = 256;  ///< about 8k edges per task
    /// The graph is symmetric in its values: every edge i -> j has a twin j -> i of the
    /// same weight, hence the same schedule. An edge then pulls its head twice and leaves
    /// its tail to the twin (umap's move_other, applied by the twin's row), so the SGD
    /// writes only the head it owns: no stores to random rows that another thread's
    /// rows read.
    bool twin_pull = false;
};

/// Negative samples for the Hogwild SGD, drawn kAhead draws before they are used with
/// their positions prefetched when drawn. Once the positions outgrow a core's cache,
/// random reads miss it, and a row's work is too long for the processor to reach the
/// next rows' reads on its own: on a random 1.3M-cell kNN graph, 10 epochs took 19 s of
/// CPU without prefetching and 7 s with it (on 100k cells, whose positions fit in the
/// cache, it makes no measurable difference).
class PrefetchingSampler {
public:
    static constexpr int kAhead = 32;
    PrefetchingSampler(std::uint64_t key, std::int64_t bound, const float* embedding, int dim) noexcept
        : m_rng(key), m_bound(bound), m_embedding(embedding), m_dim(dim) {
        for (auto& vertex : m_ring) vertex = draw();
    }
    /// Uniform vertex in [0, bound).
    std::int64_t next() noexcept {
        const std::int64_t vertex = m_ring[m_position];
        m_ring[m_position] = draw();
        m_position = (m_position + 1) % kAhead;
        return vertex;
    }

private:
    std::int64_t draw() noexcept {
        const std::int64_t vertex = m_rng.below(m_bound);
        __builtin_prefetch(m_embedding + vertex * m_dim);
        return vertex;
    }
    SampleRng m_rng;
    std::int64_t m_bound;
    const float* m_embedding;
    int m_dim;
    int m_position = 0;
    std::int64_t m_ring[kAhead];
};

/// Lanes of the vector loops over interactions.
constexpr int kLanes = 8;
/// Interactions of one head gathered before their coefficients are computed.
constexpr int kBatch = 64;

/// The interactions (attractions and negative samples) of one head in a Hogwild epoch,
/// all evaluated at the head's position when its row starts and applied together when
/// the row ends. umap moves the head after each sample, which chains every power and
/// division of a row into one long dependency; taken from one position they run side by
/// side, a vector register at a time. The difference is of the order of the steps
/// between the samples of a row, inside the noise that Hogwild's unsynchronised updates
/// already add (the tests check trustworthiness on the Hogwild path as well).
template <int Dim>
struct HeadBatch {
    // Lane kinds as integers: the coefficient loop selects on integer tests only (GCC
    // treats float comparisons as possibly trapping and would keep that loop scalar).
    enum : std::int32_t { kUnused = 0, kAttract = 1, kRepel = 2 };

    int dim = Dim;
    float a = 0, b = 0, minus_two_ab = 0, two_gamma_b = 0, alpha = 0;
    float attraction_scale = 1.0f;  ///< 2 with HogwildLayout::twin_pull
    bool move_tails = true;         ///< false with HogwildLayout::twin_pull
    float* embedding = nullptr;
    float cur[8] = {};
    float move[8] = {};
    int count = 0;
    int num_attractions = 0;
    alignas(64) float diff[8][kBatch];
    alignas(64) std::int32_t kind[kBatch];
    alignas(64) float coincide_push[kBatch];
    alignas(64) float squares[kBatch];
    alignas(64) float coefficient[kBatch];
    alignas(64) float push[kBatch];
    alignas(64) float scale[kBatch];
    int attraction_lane[kBatch];
    std::int64_t attraction_tail[kBatch];

    __attribute__((always_inline)) void start(const float* head) {
        for (int d = 0; d < dim; ++d) {
            cur[d] = RelaxedAccess::load(head[d]);
            move[d] = 0.0f;
        }
        count = 0;
        num_attractions = 0;
    }

    /// Adds the interaction with `vertex`; flushes first when the batch is full.
    __attribute__((always_inline)) void add(std::int64_t vertex, std::int32_t lane_kind, float lane_push) {
        if (count == kBatch) flush();
        const float* other = embedding + vertex * dim;
        for (int d = 0; d < dim; ++d) diff[d][count] = cur[d] - RelaxedAccess::load(other[d]);
        kind[count] = lane_kind;
        coincide_push[count] = lane_push;
        if (lane_kind == kAttract && move_tails) {
            attraction_lane[num_attractions] = count;
            attraction_tail[num_attractions] = vertex;
            ++num_attractions;
        }
        ++count;
    }

    /// Gradients of the gathered interactions: the head's share into `move`, each
    /// attraction's pull on its tail (umap's move_other) stored at once.
    __attribute__((always_inline)) void flush() {
        const int padded = (count + kLanes - 1) / kLanes * kLanes;
        for (int lane = count; lane < padded; ++lane) {
            for (int d = 0; d < dim; ++d) diff[d][lane] = 0.0f;
            kind[lane] = kUnused;
            coincide_push[lane] = 0.0f;
        }
        for (int l = 0; l < padded; ++l) squares[l] = 0.0f;
        for (int d = 0; d < dim; ++d)
            for (int l = 0; l < padded; ++l) squares[l] += diff[d][l] * diff[d][l];
        for (int l = 0; l < padded; ++l) {
            const float dist_squared = squares[l];
            const std::int32_t lane_kind = kind[l];
            const float lane_push = coincide_push[l];
            const float power = detail::fast_pow(dist_squared, b);
            // A sum of squares is > 0 exactly when its bits are not all 0.
            const bool apart = std::bit_cast<std::int32_t>(dist_squared) != 0;
            const bool attraction = lane_kind == kAttract;
            const bool live = (lane_kind != kUnused) & apart;
            // attraction -2ab d^(2(b-1)) / (1 + a d^(2b)); repulsion 2 gamma b / ((0.001 + d^2)(1 + a d^(2b)))
            const float numerator = attraction ? minus_two_ab * power : two_gamma_b;
            const float denominator = (attraction ? dist_squared : 0.001f + dist_squared) * (a * power + 1.0f);
            // The division runs in every lane (a masked one would keep the loop scalar).
            const float quotient = numerator / (live ? denominator : 1.0f);
            coefficient[l] = live ? quotient : 0.0f;
            // umap pushes by +4 in every dimension when a negative sample coincides with
            // the head (unless it is the head itself: coincide_push 0).
            push[l] = apart ? 0.0f : lane_push;
            scale[l] = attraction ? attraction_scale : 1.0f;
        }
        for (int d = 0; d < dim; ++d) {
            float sum = 0.0f;
            for (int l = 0; l < padded; ++l) sum += clip4(coefficient[l] * diff[d][l]) * scale[l] + push[l];
            move[d] += sum;
        }
        for (int index = 0; index < num_attractions; ++index) {
            const int l = attraction_lane[index];
            float* tail = embedding + attraction_tail[index] * dim;
            for (int d = 0; d < dim; ++d)
                RelaxedAccess::store(tail[d], RelaxedAccess::load(tail[d]) - clip4(coefficient[l] * diff[d][l]) * alpha);
        }
        count = 0;
        num_attractions = 0;
    }

    __attribute__((always_inline)) void finish(float* head) {
        if (count > 0) flush();
        for (int d = 0; d < dim; ++d) RelaxedAccess::store(head[d], cur[d] + move[d] * alpha);
    }
};

/// The Hogwild epoch over heads [vertex_begin, vertex_end): umap's optimize_layout_euclidean
/// edge loop (move_other, negative samples) with the schedule of each edge, one head
/// (CSR row) at a time as HeadBatch describes.
template <int Dim>
inline __attribute__((always_inline)) void hogwild_vertices(HogwildLayout& layout, float* embedding, std::int64_t vertex_begin,
                                                            std::int64_t vertex_end, int epoch, float alpha, std::uint64_t key) {
    const int dim = Dim > 0 ? Dim : layout.dim;
    PrefetchingSampler sampler(key, layout.num_vertices, embedding, dim);
    HeadBatch<Dim> batch;
    batch.dim = dim;
    batch.a = layout.a;
    batch.b = layout.b;
    batch.minus_two_ab = -2.0f * layout.a * layout.b;
    batch.two_gamma_b = 2.0f * layout.gamma * layout.b;
    batch.alpha = alpha;
    batch.attraction_scale = layout.twin_pull ? 2.0f : 1.0f;
    batch.move_tails = !layout.twin_pull;
    batch.embedding = embedding;
    const std::int64_t* offsets = layout.offsets.data();
    HogwildEdge* edges = layout.edges.data();
    const auto num_edges = static_cast<std::int64_t>(layout.edges.size());
    const auto now = static_cast<float>(epoch);
    const float rate = layout.negative_sample_rate;
    // Tails are prefetched this many edges ahead, for the reason given at PrefetchingSampler.
    constexpr std::int64_t kTailAhead = 16;
    // A row's due edges are listed first without branches (about a third of the edges
    // are due in an epoch, in no pattern a branch predictor could follow), a chunk at a time.
    constexpr std::int64_t kChunk = 64;
    std::int32_t due[kChunk];
    for (std::int64_t vertex = vertex_begin; vertex < vertex_end; ++vertex) {
        float* head = embedding + vertex * dim;
        const std::int64_t row_end = offsets[vertex + 1];
        bool started = false;
        for (std::int64_t chunk = offsets[vertex]; chunk < row_end; chunk += kChunk) {
            const std::int64_t chunk_end = std::min(row_end, chunk + kChunk);
            int num_due = 0;
            for (std::int64_t index = chunk; index < chunk_end; ++index) {
                if (index + kTailAhead < num_edges) __builtin_prefetch(embedding + edges[index + kTailAhead].tail * dim);
                due[num_due] = static_cast<std::int32_t>(index - chunk);
                num_due += edges[index].next_sample <= now ? 1 : 0;
            }
            if (num_due > 0 && !started) {
                batch.start(head);
                started = true;
            }
            for (int position = 0; position < num_due; ++position) {
                HogwildEdge& edge = edges[chunk + due[position]];
                edge.next_sample += edge.epochs_per_sample;
                batch.add(edge.tail, HeadBatch<Dim>::kAttract, 0.0f);
                if (rate > 0.0f) {
                    // umap: n_neg_samples = int((n - epoch_of_next_negative_sample) / epochs_per_negative_sample)
                    const float period = edge.epochs_per_sample / rate;
                    const int negatives = std::max(0, static_cast<int>((now - edge.next_negative) / period));
                    edge.next_negative += static_cast<float>(negatives) * period;
                    for (int sample = 0; sample < negatives; ++sample) {
                        const std::int64_t negative = sampler.next();
                        batch.add(negative, HeadBatch<Dim>::kRepel, negative == vertex ? 0.0f : 4.0f);
                    }
                }
            }
        }
        if (started) batch.finish(head);
    }
}

// Clones for AVX2 and AVX-512 chosen at run time: the coefficient loop runs on 8 lanes.
#define FATHOM_HOGWILD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
FATHOM_HOGWILD_CLONES void hogwild_vertices_2d(HogwildLayout& layout, float* embedding, std::int64_t vertex_begin,
                                               std::int64_t vertex_end, int epoch, float alpha, std::uint64_t key) {
    hogwild_vertices<2>(layout, embedding, vertex_begin, vertex_end, epoch, alpha, key);
}
FATHOM_HOGWILD_CLONES void hogwild_vertices_3d(HogwildLayout& layout, float* embedding, std::int64_t vertex_begin,
                                               std::int64_t vertex_end, int epoch, float alpha, std::uint64_t key) {
    hogwild_vertices<3>(layout, embedding, vertex_begin, vertex_end, epoch, alpha, key);
}
FATHOM_HOGWILD_CLONES void hogwild_vertices_any(HogwildLayout& layout, float* embedding, std::int64_t vertex_begin,
                                                std::int64_t vertex_end, int epoch, float alpha, std::uint64_t key) {
    hogwild_vertices<0>(layout, embedding, vertex_begin, vertex_end, epoch, alpha, key);
}
#undef FATHOM_HOGWILD_CLONES

/// One Hogwild epoch: vertex ranges in parallel, lock-free updates (umap's parallel=True).
void hogwild_epoch(HogwildLayout& layout, float* embedding, int epoch, float alpha, std::uint64_t seed) {
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, layout.num_vertices, layout.vertices_per_task),
                      [&](const tbb::blocked_range<std::int64_t>& range) {
                          const std::uint64_t key = stream_key(seed, static_cast<std::uint64_t>(epoch) + 1,
                                                               static_cast<std::uint64_t>(range.begin()));
                          if (layout.dim == 2)
                              hogwild_vertices_2d(layout, embedding, range.begin(), range.end(), epoch, alpha, key);
                          else if (layout.dim == 3)
                              hogwild_vertices_3d(layout, embedding, range.begin(), range.end(), epoch, alpha, key);
                          else
                              hogwild_vertices_any(layout, embedding, range.begin(), range.end(), epoch, alpha, key);
                      });
}

/// Deterministic update of head vertex j. Vertices are processed in consecutive
/// blocks; a block's vertices are updated in parallel, each reading the others of its
/// block as they were when the block started (`block_start`, which holds the block's
/// slice) and every other vertex live (earlier blocks: this epoch's result; later
/// blocks: not yet moved). Only j is written, so the outcome does not depend on
/// scheduling. The pull of each edge's twin (k -> j, same weight and schedule in a
/// symmetric graph) is applied here, so attraction counts twice as in umap's
/// move_other.
template <int Dim>
void process_vertex(Layout& layout, float* live, const float* block_start, std::int64_t block_begin,
                    std::int64_t block_end, std::int64_t j, int epoch, float alpha, std::uint64_t seed) {
    const int dim = Dim > 0 ? Dim : layout.dim;
    const auto position = [&](std::int64_t vertex) -> const float* {
        return (vertex >= block_begin && vertex < block_end ? block_start : live) + vertex * dim;
    };
    float cur[8];
    for (int d = 0; d < dim; ++d) cur[d] = block_start[j * dim + d];
    SampleRng rng(stream_key(seed, static_cast<std::uint64_t>(epoch), static_cast<std::uint64_t>(j)));
    for (auto edge = static_cast<std::size_t>(layout.offsets[static_cast<std::size_t>(j)]);
         edge < static_cast<std::size_t>(layout.offsets[static_cast<std::size_t>(j) + 1]); ++edge) {
        if (layout.next_sample[edge] > epoch) continue;
        const float* other = position(layout.tail[edge]);
        float dist_squared = 0.0f;
        for (int d = 0; d < dim; ++d) {
            const float diff = cur[d] - other[d];
            dist_squared += diff * diff;
        }
        const float coefficient = attraction(dist_squared, layout.a, layout.b);
        for (int d = 0; d < dim; ++d) cur[d] += 2.0f * clip4(coefficient * (cur[d] - other[d])) * alpha;
        layout.next_sample[edge] += layout.epochs_per_sample[edge];
        const int negatives = negatives_due(layout, edge, epoch);
        for (int sample = 0; sample < negatives; ++sample) {
            const std::int64_t k = rng.below(layout.num_vertices);
            if (k == j) continue;
            const float* negative = position(k);
            dist_squared = 0.0f;
            for (int d = 0; d < dim; ++d) {
                const float diff = cur[d] - negative[d];
                dist_squared += diff * diff;
            }
            const float repel = dist_squared > 0.0f ? repulsion(dist_squared, layout.a, layout.b, layout.gamma) : 0.0f;
            for (int d = 0; d < dim; ++d) cur[d] += (repel > 0.0f ? clip4(repel * (cur[d] - negative[d])) : 4.0f) * alpha;
        }
    }
    for (int d = 0; d < dim; ++d) live[j * dim + d] = cur[d];
}

/// Vertices per block of the deterministic mode: small enough that few positions are
/// stale within an epoch (fully stale epochs, i.e. one block, lose about 0.005 of
/// trustworthiness against umap's sequential loop), large enough for a parallel loop.
std::int64_t deterministic_block_size(std::int64_t num_vertices) {
    return std::max<std::int64_t>(256, (num_vertices + 63) / 64);
}

/// One epoch of umap's parallel=False loop: edge by edge in order, on one thread.
template <int Dim>
void sequential_epoch(Layout& layout, float* positions, int epoch, float step, SampleRng& rng) {
    const auto num_edges = layout.head.size();
    for (std::size_t edge = 0; edge < num_edges; ++edge)
        if (layout.next_sample[edge] <= epoch) process_edge<PlainAccess, Dim>(layout, positions, edge, epoch, step, rng);
}

/// One epoch of the deterministic SGD: blocks of block_size vertices in order, each
/// block's vertices in parallel (process_vertex). `before` holds num_vertices x dim.
template <int Dim>
void deterministic_epoch(Layout& layout, float* positions, std::vector<float>& before, int epoch, float step,
                         std::uint64_t seed, std::int64_t block_size) {
    const int dim = Dim > 0 ? Dim : layout.dim;
    for (std::int64_t block_begin = 0; block_begin < layout.num_vertices; block_begin += block_size) {
        const std::int64_t block_end = std::min(layout.num_vertices, block_begin + block_size);
        std::copy(positions + block_begin * dim, positions + block_end * dim, before.data() + block_begin * dim);
        tbb::parallel_for(tbb::blocked_range<std::int64_t>(block_begin, block_end, 256),
                          [&](const tbb::blocked_range<std::int64_t>& range) {
                              for (std::int64_t vertex = range.begin(); vertex != range.end(); ++vertex)
                                  process_vertex<Dim>(layout, positions, before.data(), block_begin, block_end, vertex,
                                                      epoch, step, seed);
                          });
    }
}

/// umap's learning rate schedule: alpha for epoch e + 1 is lr (1 - e / num_epochs).
double epoch_learning_rate(double learning_rate, int epoch, int num_epochs) {
    return epoch == 0 ? learning_rate
                      : learning_rate * (1.0 - static_cast<double>(epoch - 1) / static_cast<double>(num_epochs));
}

/// The progress message of an epoch.
void report_epoch(JobContext& ctx, int epochs_done, int num_epochs) {
    ctx.report(static_cast<double>(epochs_done) / num_epochs,
               "epoch " + std::to_string(epochs_done) + "/" + std::to_string(num_epochs));
}

/// Every entry (r, c) has a twin (c, r) with the same value (rows in parallel; each row's
/// upper entries are looked up, and the lower and upper entries counted, so that every
/// lower entry is some upper entry's twin).
bool value_symmetric(const CsrGraph& graph) {
    struct Tally {
        std::int64_t upper = 0, lower = 0;
        bool twins = true;
    };
    const Tally total = tbb::parallel_reduce(
        tbb::blocked_range<std::int64_t>(0, graph.num_cells, 4096), Tally{},
        [&](const tbb::blocked_range<std::int64_t>& range, Tally tally) {
            for (std::int64_t row = range.begin(); row != range.end() && tally.twins; ++row) {
                const auto columns = graph.row_indices(row);
                const auto values = graph.row_values(row);
                for (std::size_t entry = 0; entry < columns.size(); ++entry) {
                    const std::int64_t column = columns[entry];
                    if (column < row) {
                        ++tally.lower;
                        continue;
                    }
                    if (column == row) continue;
                    ++tally.upper;
                    const auto reverse = graph.row_indices(column);
                    const auto found = std::lower_bound(reverse.begin(), reverse.end(), static_cast<std::int32_t>(row));
                    if (found == reverse.end() || *found != row ||
                        graph.row_values(column)[static_cast<std::size_t>(found - reverse.begin())] != values[entry]) {
                        tally.twins = false;
                        break;
                    }
                }
            }
            return tally;
        },
        [](Tally left, const Tally& right) {
            left.upper += right.upper;
            left.lower += right.lower;
            left.twins = left.twins && right.twins;
            return left;
        });
    return total.twins && total.upper == total.lower;
}

bool structurally_symmetric(const CsrGraph& graph) {
    for (std::int64_t row = 0; row < graph.num_cells; ++row)
        for (const auto column : graph.row_indices(row)) {
            const auto reverse = graph.row_indices(column);
            if (!std::binary_search(reverse.begin(), reverse.end(), static_cast<std::int32_t>(row))) return false;
        }
    return true;
}

}  // namespace


UmapCurve find_ab_params(double spread, double min_dist) {
    if (!(spread > 0.0)) throw std::invalid_argument("find_ab_params: spread must be > 0, got " + std::to_string(spread));
    if (!(min_dist >= 0.0)) throw std::invalid_argument("find_ab_params: min_dist must be >= 0, got " + std::to_string(min_dist));
    constexpr int kPoints = 300;
    std::vector<double> xs(kPoints), ys(kPoints);
    const double step = spread * 3.0 / (kPoints - 1);  // numpy.linspace(0, spread * 3, 300)
    for (int index = 0; index < kPoints; ++index) {
        xs[static_cast<std::size_t>(index)] = index == kPoints - 1 ? spread * 3.0 : index * step;
        const double x = xs[static_cast<std::size_t>(index)];
        ys[static_cast<std::size_t>(index)] = x < min_dist ? 1.0 : std::exp(-(x - min_dist) / spread);
    }
    // Levenberg-Marquardt from scipy curve_fit's default p0 = (1, 1).
    double a = 1.0, b = 1.0;
    double cost = fit_cost(xs, ys, a, b);
    double damping = 1e-3;
    for (int iteration = 0; iteration < 500; ++iteration) {
        double jaa = 0, jab = 0, jbb = 0, ga = 0, gb = 0;
        for (std::size_t index = 0; index < xs.size(); ++index) {
            const double x = xs[index];
            const double power = x > 0.0 ? std::pow(x, 2.0 * b) : 0.0;
            const double denominator = 1.0 + a * power;
            const double value = 1.0 / denominator;
            const double residual = value - ys[index];
            const double da = -power / (denominator * denominator);
            const double db = x > 0.0 ? -a * power * 2.0 * std::log(x) / (denominator * denominator) : 0.0;
            jaa += da * da;
            jab += da * db;
            jbb += db * db;
            ga += da * residual;
            gb += db * residual;
        }
        bool improved = false;
        for (int attempt = 0; attempt < 40 && !improved; ++attempt) {
            const double maa = jaa * (1.0 + damping), mbb = jbb * (1.0 + damping);
            const double determinant = maa * mbb - jab * jab;
            if (determinant == 0.0) break;
            const double step_a = -(mbb * ga - jab * gb) / determinant;
            const double step_b = -(maa * gb - jab * ga) / determinant;
            const double next_cost = fit_cost(xs, ys, a + step_a, b + step_b);
            if (std::isfinite(next_cost) && next_cost <= cost) {
                const bool tiny = std::fabs(step_a) <= 1e-14 * (1.0 + std::fabs(a)) && std::fabs(step_b) <= 1e-14 * (1.0 + std::fabs(b));
                a += step_a;
                b += step_b;
                const double decrease = cost - next_cost;
                cost = next_cost;
                damping = std::max(damping / 10.0, 1e-15);
                improved = true;
                if (tiny || decrease <= 1e-18 * std::max(cost, 1e-300)) return {a, b};
            } else {
                damping *= 10.0;
            }
        }
        if (!improved) break;
    }
    return {a, b};
}

void validate(const UmapOptions& options) {
    const auto fail = [](const std::string& message) { throw std::invalid_argument("UmapOptions::" + message); };
    if (options.num_components < 1 || options.num_components > 8)
        fail("num_components must be in [1, 8], got " + std::to_string(options.num_components));
    if (!(options.min_dist >= 0.0)) fail("min_dist must be >= 0, got " + std::to_string(options.min_dist));
    if (!(options.spread > 0.0)) fail("spread must be > 0, got " + std::to_string(options.spread));
    if ((options.a == 0.0) != (options.b == 0.0)) fail("a and b must both be set (> 0) or both be 0 (fitted)");
    if (options.a < 0.0 || options.b < 0.0) fail("a and b must be > 0 when set");
    if (options.num_epochs < 0) fail("num_epochs must be >= 0 (0 = scanpy's default), got " + std::to_string(options.num_epochs));
    if (!(options.learning_rate > 0.0)) fail("learning_rate must be > 0");
    if (!(options.repulsion_strength >= 0.0)) fail("repulsion_strength must be >= 0");
    if (options.negative_sample_rate < 0) fail("negative_sample_rate must be >= 0");
    if (options.publish_every < 0) fail("publish_every must be >= 0");
}

UmapResult umap(const CsrGraph& connectivities, const DenseMatrix<float>& data, const UmapOptions& requested,
                JobContext& ctx, const Accelerator* accelerator, EmbeddingObserver* observer) {
    validate(requested);
    check_csr_graph(connectivities, "umap connectivities");
    const std::int64_t num_cells = connectivities.num_cells;
    UmapOptions options = requested;
    if (num_cells < 2) throw std::invalid_argument("umap: need at least 2 cells, got " + std::to_string(num_cells));
    if (!data.empty() && data.rows() != num_cells)
        throw std::invalid_argument("umap: data has " + std::to_string(data.rows()) + " rows; the graph has " +
                                    std::to_string(num_cells) + " cells");
    const int dim = options.num_components;
    UmapResult result;
    result.curve = options.a > 0.0 ? UmapCurve{options.a, options.b} : find_ab_params(options.spread, options.min_dist);

    // umap 0.5.3 simplicial_set_embedding: default epochs and edge pruning.
    const int default_epochs = num_cells <= 10000 ? 500 : 200;
    const int num_epochs = options.num_epochs > 0 ? options.num_epochs : default_epochs;
    result.num_epochs = num_epochs;
    float max_weight = 0.0f;
    for (const float weight : connectivities.values) max_weight = std::max(max_weight, weight);
    const double threshold = static_cast<double>(max_weight) / (num_epochs > 10 ? num_epochs : default_epochs);
    CsrGraph pruned;
    pruned.num_cells = num_cells;
    pruned.row_offsets.assign(static_cast<std::size_t>(num_cells) + 1, 0);
    for (std::int64_t row = 0; row < num_cells; ++row) {
        const auto columns = connectivities.row_indices(row);
        const auto values = connectivities.row_values(row);
        for (std::size_t entry = 0; entry < columns.size(); ++entry)
            if (values[entry] > 0.0f && !(static_cast<double>(values[entry]) < threshold)) {
                pruned.col_indices.push_back(columns[entry]);
                pruned.values.push_back(values[entry]);
            }
        pruned.row_offsets[static_cast<std::size_t>(row) + 1] = static_cast<std::int64_t>(pruned.col_indices.size());
    }
    if (options.parallelism == UmapParallelism::Auto)
        options.parallelism = num_cells <= kUmapDeterministicMaxCells && structurally_symmetric(pruned)
                                  ? UmapParallelism::Deterministic
                                  : UmapParallelism::Hogwild;
    result.parallelism = options.parallelism;
    if (options.parallelism == UmapParallelism::Deterministic && !structurally_symmetric(pruned))
        throw std::invalid_argument("umap: UmapParallelism::Deterministic needs a symmetric graph (as neighbors() makes)");

    // Initialisation.
    ctx.begin_stage("umap init");
    std::mt19937_64 generator(options.seed);
    DenseMatrix<float> embedding(num_cells, dim);
    result.init_used = options.init;
    if (options.init == UmapInit::Spectral) {
        SpectralOptions spectral;
        spectral.num_components = dim;
        spectral.seed = mix64(options.seed);
        // umap's eigsh(tol=1e-4) tests residuals against the small Ritz values of L; ours
        // is absolute on M = I - L, whose wanted eigenvalues are near 1. 1e-3 halves the
        // solve on 100k cells and moved the references' trustworthiness by under 0.002
        // (the SGD moves every point far more than the remaining error).
        spectral.tolerance = 1e-3;
        const SpectralResult layout = spectral_layout(pruned, data, spectral, ctx, accelerator);
        result.num_graph_components = layout.num_graph_components;
        result.spectral_converged = layout.converged;
        double largest = 0.0;
        for (const double value : layout.coordinates.values()) largest = std::max(largest, std::fabs(value));
        if (!(largest > 0.0) || !std::isfinite(largest)) {
            result.init_used = UmapInit::Random;  // degenerate layout: umap's random fallback
        } else {
            const double expansion = 10.0 / largest;
            std::normal_distribution<double> noise(0.0, 0.0001);
            for (std::size_t index = 0; index < embedding.values().size(); ++index)
                embedding.values()[index] = static_cast<float>(layout.coordinates.values()[index] * expansion) +
                                            static_cast<float>(noise(generator));
        }
    }
    if (result.init_used == UmapInit::Random) {
        std::uniform_real_distribution<double> uniform(-10.0, 10.0);
        for (auto& value : embedding.values()) value = static_cast<float>(uniform(generator));
    }
    // Min-max scaling of every column to [0, 10].
    for (int column = 0; column < dim; ++column) {
        float low = std::numeric_limits<float>::infinity(), high = -low;
        for (std::int64_t cell = 0; cell < num_cells; ++cell) {
            low = std::min(low, embedding(cell, column));
            high = std::max(high, embedding(cell, column));
        }
        const double range = static_cast<double>(high) - low;
        for (std::int64_t cell = 0; cell < num_cells; ++cell)
            embedding(cell, column) =
                range > 0.0 ? static_cast<float>(10.0 * (static_cast<double>(embedding(cell, column)) - low) / range) : 0.0f;
    }

    // Edges and their schedules (make_epochs_per_sample).
    const auto num_edges = static_cast<std::size_t>(pruned.nnz());
    result.num_edges = pruned.nnz();
    float pruned_max = 0.0f;
    for (const float weight : pruned.values) pruned_max = std::max(pruned_max, weight);
    const auto epochs_per_sample = [&](std::size_t edge) {
        const double samples = num_epochs * (static_cast<double>(pruned.values[edge]) / pruned_max);
        return samples > 0.0 ? num_epochs / samples : -1.0;
    };
    ctx.begin_stage("umap optimize");
    const auto publish = [&](int epoch) {
        if (observer != nullptr) observer->on_epoch(epoch, embedding);
    };
    const auto report = [&](int epochs_done) {
        report_epoch(ctx, epochs_done, num_epochs);
        if (options.publish_every > 0 && epochs_done % options.publish_every == 0 && epochs_done < num_epochs) publish(epochs_done);
    };
    const auto learning_rate = [&](int epoch) { return epoch_learning_rate(options.learning_rate, epoch, num_epochs); };

    if (options.parallelism == UmapParallelism::Hogwild) {
        HogwildLayout hogwild;
        hogwild.num_vertices = num_cells;
        hogwild.dim = dim;
        hogwild.offsets = pruned.row_offsets;
        hogwild.a = static_cast<float>(result.curve.a);
        hogwild.b = static_cast<float>(result.curve.b);
        hogwild.gamma = static_cast<float>(options.repulsion_strength);
        hogwild.negative_sample_rate = static_cast<float>(options.negative_sample_rate);
        hogwild.twin_pull = value_symmetric(pruned);
        result.twin_pull = hogwild.twin_pull;
        hogwild.edges.resize(num_edges);
        for (std::size_t edge = 0; edge < num_edges; ++edge) {
            auto& record = hogwild.edges[edge];
            record.tail = pruned.col_indices[edge];
            record.epochs_per_sample = static_cast<float>(epochs_per_sample(edge));
            record.next_sample = record.epochs_per_sample;
            record.next_negative =
                options.negative_sample_rate > 0 ? record.epochs_per_sample / hogwild.negative_sample_rate : 0.0f;
        }
        hogwild.vertices_per_task =
            std::max<std::int64_t>(1, static_cast<std::int64_t>(8192.0 * static_cast<double>(num_cells) /
                                                               static_cast<double>(std::max<std::size_t>(num_edges, 1))));
        pruned = CsrGraph();
        for (int epoch = 0; epoch < num_epochs; ++epoch) {
            ctx.checkpoint();
            hogwild_epoch(hogwild, embedding.data(), epoch, static_cast<float>(learning_rate(epoch)), options.seed);
            report(epoch + 1);
        }
        publish(num_epochs);
        result.embedding = std::move(embedding);
        return result;
    }

    if (options.parallelism == UmapParallelism::Deterministic) {
        std::vector<double> per_sample(num_edges), per_negative_sample(num_edges);
        for (std::size_t edge = 0; edge < num_edges; ++edge) {
            per_sample[edge] = epochs_per_sample(edge);
            // negative_sample_rate 0: no negative samples ever fall due.
            per_negative_sample[edge] = options.negative_sample_rate > 0 ? per_sample[edge] / options.negative_sample_rate
                                                                         : std::numeric_limits<double>::infinity();
        }
        UmapSgdProblem problem;
        problem.num_vertices = num_cells;
        problem.dim = dim;
        problem.offsets = pruned.row_offsets;
        problem.tail = pruned.col_indices;
        problem.epochs_per_sample = per_sample;
        problem.epochs_per_negative_sample = per_negative_sample;
        problem.a = static_cast<float>(result.curve.a);
        problem.b = static_cast<float>(result.curve.b);
        problem.gamma = static_cast<float>(options.repulsion_strength);
        problem.num_epochs = num_epochs;
        problem.learning_rate = options.learning_rate;
        problem.seed = options.seed;
        problem.block_size = deterministic_block_size(num_cells);
        const auto publish_before_last = [&](int epochs_done) {
            if (epochs_done < num_epochs) publish(epochs_done);
        };
        if (accelerator == nullptr || !accelerator->umap_sgd(problem, embedding, options.publish_every, publish_before_last, ctx))
            detail::deterministic_umap_sgd(problem, embedding.data(), options.publish_every, publish_before_last, ctx);
        publish(num_epochs);
        result.embedding = std::move(embedding);
        return result;
    }

    // optimize_layout_euclidean with parallel=False.
    Layout layout;
    layout.num_vertices = num_cells;
    layout.dim = dim;
    layout.offsets = pruned.row_offsets;
    layout.a = static_cast<float>(result.curve.a);
    layout.b = static_cast<float>(result.curve.b);
    layout.gamma = static_cast<float>(options.repulsion_strength);
    layout.negative_sample_rate = options.negative_sample_rate;
    layout.head.resize(num_edges);
    layout.tail = pruned.col_indices;
    for (std::int64_t row = 0; row < num_cells; ++row)
        for (auto edge = pruned.row_offsets[static_cast<std::size_t>(row)]; edge < pruned.row_offsets[static_cast<std::size_t>(row) + 1]; ++edge)
            layout.head[static_cast<std::size_t>(edge)] = static_cast<std::int32_t>(row);
    layout.epochs_per_sample.resize(num_edges);
    layout.epochs_per_negative_sample.resize(num_edges);
    for (std::size_t edge = 0; edge < num_edges; ++edge) {
        layout.epochs_per_sample[edge] = epochs_per_sample(edge);
        // negative_sample_rate 0: no negative samples ever fall due.
        layout.epochs_per_negative_sample[edge] = options.negative_sample_rate > 0
                                                      ? layout.epochs_per_sample[edge] / options.negative_sample_rate
                                                      : std::numeric_limits<double>::infinity();
    }
    layout.next_sample = layout.epochs_per_sample;
    layout.next_negative = layout.epochs_per_negative_sample;

    SampleRng sequential_rng(stream_key(options.seed, 0, 0));
    for (int epoch = 0; epoch < num_epochs; ++epoch) {
        ctx.checkpoint();
        const auto step = static_cast<float>(learning_rate(epoch));
        float* positions = embedding.data();
        if (dim == 2)
            sequential_epoch<2>(layout, positions, epoch, step, sequential_rng);
        else if (dim == 3)
            sequential_epoch<3>(layout, positions, epoch, step, sequential_rng);
        else
            sequential_epoch<0>(layout, positions, epoch, step, sequential_rng);
        report(epoch + 1);
    }
    publish(num_epochs);
    result.embedding = std::move(embedding);
    return result;
}

namespace detail {

void deterministic_umap_sgd(const UmapSgdProblem& problem, float* embedding, int publish_every,
                            const std::function<void(int epochs_done)>& publish, JobContext& ctx) {
    Layout layout;
    layout.num_vertices = problem.num_vertices;
    layout.dim = problem.dim;
    layout.offsets.assign(problem.offsets.begin(), problem.offsets.end());
    layout.tail.assign(problem.tail.begin(), problem.tail.end());
    layout.epochs_per_sample.assign(problem.epochs_per_sample.begin(), problem.epochs_per_sample.end());
    layout.epochs_per_negative_sample.assign(problem.epochs_per_negative_sample.begin(),
                                             problem.epochs_per_negative_sample.end());
    layout.next_sample = layout.epochs_per_sample;
    layout.next_negative = layout.epochs_per_negative_sample;
    layout.a = problem.a;
    layout.b = problem.b;
    layout.gamma = problem.gamma;
    std::vector<float> before(static_cast<std::size_t>(problem.num_vertices) * static_cast<std::size_t>(problem.dim));
    for (int epoch = 0; epoch < problem.num_epochs; ++epoch) {
        ctx.checkpoint();
        const auto step = static_cast<float>(epoch_learning_rate(problem.learning_rate, epoch, problem.num_epochs));
        if (problem.dim == 2)
            deterministic_epoch<2>(layout, embedding, before, epoch, step, problem.seed, problem.block_size);
        else if (problem.dim == 3)
            deterministic_epoch<3>(layout, embedding, before, epoch, step, problem.seed, problem.block_size);
        else
            deterministic_epoch<0>(layout, embedding, before, epoch, step, problem.seed, problem.block_size);
        const int epochs_done = epoch + 1;
        report_epoch(ctx, epochs_done, problem.num_epochs);
        if (publish_every > 0 && epochs_done % publish_every == 0 && epochs_done < problem.num_epochs) publish(epochs_done);
    }
}

}  // namespace detail

}  // namespace fathom
