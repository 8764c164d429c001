#include "core/io/synth.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <memory>
#include <numeric>
#include <stdexcept>

#include <tbb/info.h>
#include <tbb/parallel_pipeline.h>

#include "core/types/JobContext.hpp"
#include "core/io/h5ad_writer.hpp"
#include "core/io/tenx_h5_writer.hpp"

namespace fathom::io {

namespace {

constexpr int kNumMito = 13;
// The 13 protein-coding genes of the human mitochondrial genome, in genome order, with
// rough relative abundances in 10x 3' data (MT-CO1 / MT-CO3 / MT-CO2 highest).
constexpr std::array<const char*, kNumMito> kMitoNames = {"MT-ND1", "MT-ND2",  "MT-CO1", "MT-CO2", "MT-ATP8",
                                                          "MT-ATP6", "MT-CO3", "MT-ND3", "MT-ND4L", "MT-ND4",
                                                          "MT-ND5", "MT-ND6", "MT-CYB"};
constexpr std::array<double, kNumMito> kMitoWeights = {6, 5, 14, 10, 1.5, 8, 11, 3, 1.5, 7, 2, 0.5, 7};
// Mean count at the median library below which a gene is drawn as Poisson (see header).
constexpr double kExactMeanThreshold = 0.25;
constexpr double kTypicalMitoFraction = 0.04;

// ---- random numbers: own generators and samplers, so the stream is identical on every
// platform and standard library (std:: distributions are implementation-defined) ----

std::uint64_t splitmix64(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/// xoshiro256** (Blackman & Vigna), one independent stream per (seed, stream id).
class Rng {
public:
    Rng(std::uint64_t seed, std::uint64_t stream) {
        std::uint64_t state = seed ^ (stream * 0xD1B54A32D192ED03ULL);
        state = splitmix64(state) ^ stream;
        for (auto& word : m_state) word = splitmix64(state);
    }
    std::uint64_t next() noexcept {
        const std::uint64_t result = std::rotl(m_state[1] * 5, 7) * 9;
        const std::uint64_t t = m_state[1] << 17;
        m_state[2] ^= m_state[0];
        m_state[3] ^= m_state[1];
        m_state[1] ^= m_state[2];
        m_state[0] ^= m_state[3];
        m_state[2] ^= t;
        m_state[3] = std::rotl(m_state[3], 45);
        return result;
    }
    /// Uniform in (0, 1): never exactly 0, so log() is safe.
    double uniform() noexcept { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }
    /// Standard normal (Marsaglia polar method, one value per call).
    double normal() noexcept {
        while (true) {
            const double u = 2.0 * uniform() - 1.0, v = 2.0 * uniform() - 1.0;
            const double s = u * u + v * v;
            if (s < 1.0 && s > 0.0) return u * std::sqrt(-2.0 * std::log(s) / s);
        }
    }
    /// Gamma(shape, 1) for shape >= 1 (Marsaglia & Tsang 2000).
    double gamma(double shape) noexcept {
        const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
        while (true) {
            double x, v;
            do {
                x = normal();
                v = 1.0 + c * x;
            } while (v <= 0.0);
            v = v * v * v;
            const double u = uniform();
            if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
            if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
        }
    }
    /// Index in [0, n) for n < 2^32 (Lemire's multiply-shift on 32 random bits).
    std::uint64_t below(std::uint64_t n) noexcept { return ((next() >> 32) * n) >> 32; }

private:
    std::array<std::uint64_t, 4> m_state{};
};

/// log(k!) from a table for small k and Stirling's series beyond.
class LogFactorial {
public:
    LogFactorial() {
        m_table[0] = 0.0;
        for (std::size_t k = 1; k < m_table.size(); ++k) m_table[k] = m_table[k - 1] + std::log(static_cast<double>(k));
    }
    double operator()(std::int64_t k) const noexcept {
        if (k < static_cast<std::int64_t>(m_table.size())) return m_table[static_cast<std::size_t>(k)];
        const double x = static_cast<double>(k) + 1.0;
        return (x - 0.5) * std::log(x) - x + 0.91893853320467274178 + 1.0 / (12.0 * x) - 1.0 / (360.0 * x * x * x);
    }

private:
    std::array<double, 256> m_table{};
};

const LogFactorial& log_factorial() {
    static const LogFactorial table;
    return table;
}

/// Poisson(mean): multiplication method below 10, Hormann's PTRS (1993, as numpy) above.
std::int64_t poisson(Rng& rng, double mean) noexcept {
    if (!(mean > 0.0)) return 0;
    if (mean < 10.0) {
        const double limit = std::exp(-mean);
        double product = rng.uniform();
        std::int64_t k = 0;
        while (product > limit) {
            product *= rng.uniform();
            ++k;
        }
        return k;
    }
    const double slam = std::sqrt(mean), loglam = std::log(mean);
    const double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
    const double invalpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2.0);
    while (true) {
        const double u = rng.uniform() - 0.5, v = rng.uniform();
        const double us = 0.5 - std::fabs(u);
        const auto k = static_cast<std::int64_t>(std::floor((2.0 * a / us + b) * u + mean + 0.43));
        if (us >= 0.07 && v <= vr) return k;
        if (k < 0 || (us < 0.013 && v > us)) continue;
        if (std::log(v) + std::log(invalpha) - std::log(a / (us * us) + b) <= -mean + k * loglam - log_factorial()(k))
            return k;
    }
}

/// Negative binomial with mean `mean` and size r (variance mean + mean^2 / r). Small
/// means by inversion of the pmf (P(0) = (r / (r + mean))^r, P(k+1) / P(k) = (k + r) /
/// (k + 1) * mean / (r + mean)): one uniform, one log and one exp for the common zero;
/// larger means as the gamma-Poisson mixture.
/// `integer_size` = size when it is a small integer (then P(0) takes multiplications
/// only), else 0.
std::int64_t negative_binomial(Rng& rng, double mean, double size, int integer_size) noexcept {
    if (!(mean > 0.0)) return 0;
    if (mean < 8.0) {
        const double ratio = mean / (size + mean);
        double probability;
        if (integer_size > 0) {
            const double base = 1.0 - ratio;
            probability = base;
            for (int power = 1; power < integer_size; ++power) probability *= base;
        } else {
            probability = std::exp(size * std::log1p(-ratio));
        }
        const double u = rng.uniform();
        double cumulative = probability;
        std::int64_t k = 0;
        while (u > cumulative && k < 10000) {
            probability *= (static_cast<double>(k) + size) / (static_cast<double>(k) + 1.0) * ratio;
            ++k;
            cumulative += probability;
            if (probability < 1e-300) break;  // u lies in the last ulp of the cdf
        }
        return k;
    }
    return poisson(rng, rng.gamma(size) * (mean / size));
}

/// Walker / Vose alias table over a set of genes: O(1) draws proportional to weights.
class AliasTable {
public:
    AliasTable() = default;
    AliasTable(std::vector<std::int32_t> genes, const std::vector<double>& weights) : m_genes(std::move(genes)) {
        const std::size_t n = m_genes.size();
        m_threshold.assign(n, 0);
        m_alias.assign(n, 0);
        if (n == 0) return;
        const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
        std::vector<double> scaled(n);
        std::vector<std::int32_t> small, large;
        for (std::size_t slot = 0; slot < n; ++slot) {
            scaled[slot] = total > 0.0 ? weights[slot] * static_cast<double>(n) / total : 1.0;
            (scaled[slot] < 1.0 ? small : large).push_back(static_cast<std::int32_t>(slot));
        }
        while (!small.empty() && !large.empty()) {
            const std::int32_t low = small.back(), high = large.back();
            small.pop_back();
            m_threshold[static_cast<std::size_t>(low)] =
                static_cast<std::uint64_t>(scaled[static_cast<std::size_t>(low)] * 4294967296.0);
            m_alias[static_cast<std::size_t>(low)] = high;
            scaled[static_cast<std::size_t>(high)] -= 1.0 - scaled[static_cast<std::size_t>(low)];
            if (scaled[static_cast<std::size_t>(high)] < 1.0) {
                large.pop_back();
                small.push_back(high);
            }
        }
        for (auto slot : large) m_threshold[static_cast<std::size_t>(slot)] = 4294967296ULL;
        for (auto slot : small) m_threshold[static_cast<std::size_t>(slot)] = 4294967296ULL;  // rounding leftovers
    }
    bool empty() const noexcept { return m_genes.empty(); }
    std::int32_t draw(Rng& rng) const noexcept {
        const std::uint64_t bits = rng.next();
        const std::uint64_t slot = ((bits >> 32) * m_genes.size()) >> 32;
        const std::uint64_t fraction = bits & 0xFFFFFFFFULL;
        // Branch-free select: the comparison is a coin flip the predictor cannot learn.
        const std::size_t keep = fraction < m_threshold[slot];
        const std::size_t chosen = keep * slot + (1 - keep) * static_cast<std::size_t>(m_alias[slot]);
        return m_genes[chosen];
    }

private:
    std::vector<std::int32_t> m_genes;
    std::vector<std::uint64_t> m_threshold;  ///< P(keep slot) * 2^32
    std::vector<std::int32_t> m_alias;
};

/// Expression of one cell type, split into individually drawn NB genes and the pooled tail.
struct TypeProfile {
    std::vector<std::int32_t> exact_genes;  ///< sorted gene indices
    std::vector<double> exact_p;            ///< their share of the nuclear library
    AliasTable tail;                        ///< the other nuclear genes
    double tail_mass = 0.0;                 ///< their summed share
};

/// Everything derived from the options and seed before any cell is drawn.
struct Generator {
    SynthOptions options;
    SynthModel model;
    std::vector<TypeProfile> types;
    std::vector<double> type_cumulative;
    std::array<double, kNumMito> mito_share{};
    std::int32_t first_mito = 0;
};

std::string zero_padded(std::int64_t value, int width) {
    std::string digits = std::to_string(value);
    if (static_cast<int>(digits.size()) < width) digits.insert(0, static_cast<std::size_t>(width) - digits.size(), '0');
    return digits;
}

Generator make_generator(const SynthOptions& options) {
    validate(options);
    Generator generator;
    generator.options = options;
    SynthModel& model = generator.model;
    const std::int64_t num_genes = options.num_genes;
    const std::int64_t num_nuclear = num_genes - kNumMito;
    const int num_types = options.num_cell_types;
    Rng rng(options.seed, 0);

    const int name_width = std::max(5, static_cast<int>(std::to_string(num_genes).size()));
    model.gene_names.reserve(static_cast<std::size_t>(num_genes));
    model.gene_ids.reserve(static_cast<std::size_t>(num_genes));
    for (std::int64_t gene = 0; gene < num_genes; ++gene) {
        model.gene_ids.push_back("SYNG" + zero_padded(gene + 1, 11));
        if (gene < num_nuclear)
            model.gene_names.push_back("GENE" + zero_padded(gene + 1, name_width));
        else
            model.gene_names.emplace_back(kMitoNames[static_cast<std::size_t>(gene - num_nuclear)]);
    }
    generator.first_mito = static_cast<std::int32_t>(num_nuclear);
    for (int index = 0; index < kNumMito; ++index) model.mito_genes.push_back(generator.first_mito + index);

    std::vector<double> baseline(static_cast<std::size_t>(num_nuclear));
    for (auto& value : baseline) value = std::exp(options.gene_mean_sigma * rng.normal());

    // Unequal type sizes, as in real tissue.
    std::vector<double> proportions(static_cast<std::size_t>(num_types));
    for (auto& value : proportions) value = std::exp(0.6 * rng.normal());
    const double proportion_total = std::accumulate(proportions.begin(), proportions.end(), 0.0);
    double running = 0.0;
    for (int type = 0; type < num_types; ++type) {
        proportions[static_cast<std::size_t>(type)] /= proportion_total;
        running += proportions[static_cast<std::size_t>(type)];
        generator.type_cumulative.push_back(running);
        model.cell_type_names.push_back("type" + zero_padded(type + 1, 2));
    }
    generator.type_cumulative.back() = 1.0;
    model.cell_type_proportions = proportions;

    // Markers: disjoint sets of moderately-to-highly expressed genes (baseline ranks
    // 2% - 30%), so that a marker is detectable in its type and clearly lower elsewhere.
    std::vector<std::int32_t> by_expression(static_cast<std::size_t>(num_nuclear));
    std::iota(by_expression.begin(), by_expression.end(), 0);
    std::stable_sort(by_expression.begin(), by_expression.end(), [&](std::int32_t a, std::int32_t b) {
        return baseline[static_cast<std::size_t>(a)] > baseline[static_cast<std::size_t>(b)];
    });
    auto first = static_cast<std::size_t>(static_cast<double>(num_nuclear) * 0.02);
    auto last = static_cast<std::size_t>(static_cast<double>(num_nuclear) * 0.30);
    if (last - first < static_cast<std::size_t>(num_types)) {
        first = 0;
        last = by_expression.size();
    }
    std::vector<std::int32_t> candidates(by_expression.begin() + static_cast<std::ptrdiff_t>(first),
                                         by_expression.begin() + static_cast<std::ptrdiff_t>(last));
    for (std::size_t index = candidates.size(); index > 1; --index)
        std::swap(candidates[index - 1], candidates[rng.below(index)]);
    const auto per_type = std::min<std::size_t>(static_cast<std::size_t>(options.markers_per_type),
                                                candidates.size() / static_cast<std::size_t>(num_types));

    const double median_nuclear = options.median_library_size * (1.0 - kTypicalMitoFraction);
    generator.types.resize(static_cast<std::size_t>(num_types));
    model.markers.resize(static_cast<std::size_t>(num_types));
    for (int type = 0; type < num_types; ++type) {
        std::vector<double> weight = baseline;
        auto& markers = model.markers[static_cast<std::size_t>(type)];
        markers.assign(candidates.begin() + static_cast<std::ptrdiff_t>(per_type * static_cast<std::size_t>(type)),
                       candidates.begin() + static_cast<std::ptrdiff_t>(per_type * static_cast<std::size_t>(type + 1)));
        std::sort(markers.begin(), markers.end());
        for (auto gene : markers) weight[static_cast<std::size_t>(gene)] *= std::exp2(2.5 + 2.5 * rng.uniform());
        const double total = std::accumulate(weight.begin(), weight.end(), 0.0);
        TypeProfile& profile = generator.types[static_cast<std::size_t>(type)];
        std::vector<std::int32_t> tail_genes;
        std::vector<double> tail_weights;
        for (std::int64_t gene = 0; gene < num_nuclear; ++gene) {
            const double share = weight[static_cast<std::size_t>(gene)] / total;
            if (share * median_nuclear >= kExactMeanThreshold) {
                profile.exact_genes.push_back(static_cast<std::int32_t>(gene));
                profile.exact_p.push_back(share);
            } else {
                tail_genes.push_back(static_cast<std::int32_t>(gene));
                tail_weights.push_back(share);
                profile.tail_mass += share;
            }
        }
        profile.tail = AliasTable(std::move(tail_genes), tail_weights);
    }
    const double mito_total = std::accumulate(kMitoWeights.begin(), kMitoWeights.end(), 0.0);
    for (int index = 0; index < kNumMito; ++index)
        generator.mito_share[static_cast<std::size_t>(index)] = kMitoWeights[static_cast<std::size_t>(index)] / mito_total;
    return generator;
}

/// One generated block of consecutive cells.
struct Block {
    CsrShard rows;
    std::vector<std::int32_t> types;
    std::vector<std::uint8_t> low_quality;
};

Block generate_block(const Generator& generator, std::int64_t cell_begin, std::int64_t cell_end,
                     const JobContext* ctx) {
    const SynthOptions& options = generator.options;
    const auto num_genes = static_cast<std::size_t>(options.num_genes);
    Block block;
    block.rows.row_begin = cell_begin;
    block.rows.num_genes = options.num_genes;
    const auto num_cells = static_cast<std::size_t>(cell_end - cell_begin);
    block.rows.row_offsets.reserve(num_cells + 1);
    block.types.reserve(num_cells);
    block.low_quality.reserve(num_cells);
    block.rows.gene_indices.reserve(num_cells * 2048);
    block.rows.values.reserve(num_cells * 2048);
    std::vector<std::uint32_t> counts(num_genes, 0);
    std::vector<std::uint64_t> touched((num_genes + 63) / 64, 0);
    auto add = [&](std::int32_t gene, std::int64_t count) {
        counts[static_cast<std::size_t>(gene)] += static_cast<std::uint32_t>(count);
        touched[static_cast<std::size_t>(gene) >> 6] |= 1ULL << (gene & 63);
    };
    const double size = options.nb_size;
    const int integer_size =
        size <= 16.0 && std::floor(size) == size ? static_cast<int>(size) : 0;
    for (std::int64_t cell = cell_begin; cell < cell_end; ++cell) {
        if (ctx && ((cell - cell_begin) & 255) == 0) ctx->checkpoint();
        Rng rng(options.seed, static_cast<std::uint64_t>(cell) + 1);
        const double pick = rng.uniform();
        const auto type = static_cast<std::size_t>(
            std::lower_bound(generator.type_cumulative.begin(), generator.type_cumulative.end(), pick) -
            generator.type_cumulative.begin());
        const bool low_quality = rng.uniform() < options.low_quality_fraction;
        double library = options.median_library_size * std::exp(options.library_size_sigma * rng.normal());
        double mito;
        if (low_quality) {
            library *= 0.5;
            mito = 0.15 + 0.25 * rng.uniform();
        } else {
            mito = std::clamp(kTypicalMitoFraction * std::exp(0.35 * rng.normal()), 0.005, 0.15);
        }
        const double nuclear = library * (1.0 - mito);
        const TypeProfile& profile = generator.types[type];
        for (std::size_t index = 0; index < profile.exact_genes.size(); ++index)
            if (const auto count = negative_binomial(rng, nuclear * profile.exact_p[index], size, integer_size); count > 0)
                add(profile.exact_genes[index], count);
        if (!profile.tail.empty()) {
            const std::int64_t tail_count = poisson(rng, nuclear * profile.tail_mass);
            for (std::int64_t draw = 0; draw < tail_count; ++draw) add(profile.tail.draw(rng), 1);
        }
        for (int index = 0; index < kNumMito; ++index)
            if (const auto count =
                    negative_binomial(rng, library * mito * generator.mito_share[static_cast<std::size_t>(index)], size,
                                      integer_size);
                count > 0)
                add(generator.first_mito + index, count);
        // Emit in gene order by scanning the touched bitmap, clearing as we go.
        for (std::size_t word = 0; word < touched.size(); ++word) {
            std::uint64_t bits = touched[word];
            touched[word] = 0;
            while (bits) {
                const auto gene = static_cast<std::int32_t>(word * 64 + static_cast<std::size_t>(std::countr_zero(bits)));
                bits &= bits - 1;
                block.rows.gene_indices.push_back(gene);
                block.rows.values.push_back(static_cast<float>(counts[static_cast<std::size_t>(gene)]));
                counts[static_cast<std::size_t>(gene)] = 0;
            }
        }
        block.rows.row_offsets.push_back(static_cast<std::int64_t>(block.rows.gene_indices.size()));
        block.types.push_back(static_cast<std::int32_t>(type));
        block.low_quality.push_back(low_quality ? 1 : 0);
    }
    return block;
}

bool ends_with(const std::string& text, const std::string& suffix) {
    return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Generates every block in parallel and hands them to `sink` in order on one thread.
template <typename Sink>
void run_pipeline(const Generator& generator, JobContext* ctx, Sink&& sink) {
    const SynthOptions& options = generator.options;
    const std::int64_t num_blocks = (options.num_cells + options.cells_per_block - 1) / options.cells_per_block;
    const int threads = std::max(1, tbb::info::default_concurrency());
    const auto tokens = static_cast<std::size_t>(std::min(2 * threads, 24));
    std::int64_t next_block = 0;
    tbb::parallel_pipeline(
        tokens,
        tbb::make_filter<void, std::int64_t>(tbb::filter_mode::serial_in_order,
                                             [&](tbb::flow_control& control) -> std::int64_t {
                                                 if (next_block >= num_blocks) {
                                                     control.stop();
                                                     return 0;
                                                 }
                                                 return next_block++;
                                             }) &
            tbb::make_filter<std::int64_t, std::shared_ptr<Block>>(
                tbb::filter_mode::parallel,
                [&](std::int64_t block) {
                    const std::int64_t begin = block * options.cells_per_block;
                    const std::int64_t end = std::min(options.num_cells, begin + options.cells_per_block);
                    return std::make_shared<Block>(generate_block(generator, begin, end, ctx));
                }) &
            tbb::make_filter<std::shared_ptr<Block>, void>(tbb::filter_mode::serial_in_order,
                                                           [&](const std::shared_ptr<Block>& block) {
                                                               if (ctx) ctx->checkpoint();
                                                               sink(*block);
                                                           }));
}

}  // namespace

void validate(const SynthOptions& options) {
    auto fail = [](const std::string& message) { throw std::invalid_argument("SynthOptions::" + message); };
    if (options.num_cells < 1) fail("num_cells (--cells) must be >= 1, got " + std::to_string(options.num_cells));
    if (options.num_cells > 2147483647LL)
        fail("num_cells (--cells) must be <= 2^31 - 1 (10x HDF5 stores int32 shapes), got " +
             std::to_string(options.num_cells));
    if (options.num_genes < 50) fail("num_genes (--genes) must be >= 50, got " + std::to_string(options.num_genes));
    if (options.num_genes > 2147483647LL) fail("num_genes (--genes) must be <= 2^31 - 1");
    if (options.num_cell_types < 1)
        fail("num_cell_types (--cell-types) must be >= 1, got " + std::to_string(options.num_cell_types));
    if (options.num_cell_types > options.num_genes - kNumMito)
        fail("num_cell_types (--cell-types) must be <= num_genes - 13 = " +
             std::to_string(options.num_genes - kNumMito) + " (one marker gene per type at least), got " +
             std::to_string(options.num_cell_types));
    if (options.markers_per_type < 1) fail("markers_per_type must be >= 1");
    if (!(options.median_library_size > 0.0) || !std::isfinite(options.median_library_size))
        fail("median_library_size must be > 0");
    if (!(options.library_size_sigma >= 0.0) || !std::isfinite(options.library_size_sigma))
        fail("library_size_sigma must be >= 0");
    if (!(options.gene_mean_sigma >= 0.0) || !std::isfinite(options.gene_mean_sigma))
        fail("gene_mean_sigma must be >= 0");
    if (!(options.nb_size >= 1.0) || !std::isfinite(options.nb_size)) fail("nb_size must be >= 1");
    if (!(options.low_quality_fraction >= 0.0 && options.low_quality_fraction <= 1.0))
        fail("low_quality_fraction must be in [0, 1]");
    if (options.cells_per_block < 1) fail("cells_per_block must be >= 1");
    if (options.gzip_level < -1 || options.gzip_level > 9)
        fail("gzip_level (--gzip) must be -1 (format default) or in [0, 9], got " + std::to_string(options.gzip_level));
}

SynthModel synthetic_model(const SynthOptions& options) { return make_generator(options).model; }

std::string synthetic_barcode(std::int64_t cell_index, std::uint64_t seed) {
    // A bijection on 32 bits (xor with a key, odd multiplications, xor-shifts), so
    // distinct indices give distinct barcodes.
    auto x = static_cast<std::uint32_t>(cell_index);
    x ^= static_cast<std::uint32_t>(seed ^ (seed >> 32)) * 0x2545F491u;
    x *= 0x9E3779B1u;
    x ^= x >> 15;
    x *= 0x85EBCA77u;
    x ^= x >> 13;
    x *= 0xC2B2AE3Du;
    x ^= x >> 16;
    static constexpr char kNucleotides[4] = {'A', 'C', 'G', 'T'};
    std::string barcode(18, '-');
    for (int position = 0; position < 16; ++position)
        barcode[static_cast<std::size_t>(position)] = kNucleotides[(x >> (30 - 2 * position)) & 3u];
    barcode[17] = '1';
    return barcode;
}

SynthSummary write_synthetic(const std::string& path, const SynthOptions& options, JobContext* ctx) {
    validate(options);
    const bool tenx = ends_with(path, ".h5");
    if (!tenx && !ends_with(path, ".h5ad"))
        throw std::invalid_argument("--out '" + path + "' must end in .h5 (10x v3 HDF5) or .h5ad (anndata)");
    const Generator generator = make_generator(options);
    const SynthModel& model = generator.model;
    SynthSummary summary{options.num_cells, options.num_genes, 0};

    if (tenx) {
        TenxH5WriteOptions write;
        if (options.gzip_level >= 0) write.gzip_level = options.gzip_level;
        TenxFeatures features;
        features.ids = model.gene_ids;
        features.names = model.gene_names;
        features.feature_types.assign(model.gene_names.size(), "Gene Expression");
        features.genomes.assign(model.gene_names.size(), "synthetic");
        TenxH5Writer writer(path, std::move(features), 18, write);
        run_pipeline(generator, ctx, [&](const Block& block) {
            std::vector<std::string> barcodes;
            barcodes.reserve(block.types.size());
            for (std::int64_t cell = block.rows.row_begin; cell < block.rows.row_end(); ++cell)
                barcodes.push_back(synthetic_barcode(cell, options.seed));
            writer.append_cells(block.rows, barcodes);
            if (options.on_progress) options.on_progress(writer.cells_written(), writer.nnz_written());
        });
        summary.nnz = writer.nnz_written();
        writer.commit();
        return summary;
    }

    H5adWriteOptions write;
    if (options.gzip_level >= 0) write.gzip_level = options.gzip_level;
    // Expected non-zeros (a generous estimate: the detected genes of a cell at the
    // median library) picks int64 indices only where int32 cannot hold the offsets.
    double expected_per_cell = 0.0;
    for (const auto& profile : generator.types)
        expected_per_cell = std::max(expected_per_cell, static_cast<double>(profile.exact_genes.size()) +
                                                            options.median_library_size * profile.tail_mass);
    const double expected_nnz =
        std::min(1.2 * expected_per_cell, static_cast<double>(options.num_genes)) * static_cast<double>(options.num_cells);
    H5adStreamWriter writer(path, MatrixShape{options.num_cells, options.num_genes}, write,
                            static_cast<std::int64_t>(std::min(expected_nnz, 9.0e18)));
    CategoricalColumn cell_type;
    cell_type.categories = model.cell_type_names;
    cell_type.codes.reserve(static_cast<std::size_t>(options.num_cells));
    BoolColumn low_quality;
    low_quality.values.reserve(static_cast<std::size_t>(options.num_cells));
    run_pipeline(generator, ctx, [&](const Block& block) {
        writer.append_rows(block.rows);
        cell_type.codes.insert(cell_type.codes.end(), block.types.begin(), block.types.end());
        low_quality.values.insert(low_quality.values.end(), block.low_quality.begin(), block.low_quality.end());
        if (options.on_progress) options.on_progress(writer.rows_written(), writer.nnz_written());
    });
    summary.nnz = writer.nnz_written();

    Dataset meta;
    std::vector<std::string> barcodes;
    barcodes.reserve(static_cast<std::size_t>(options.num_cells));
    for (std::int64_t cell = 0; cell < options.num_cells; ++cell) barcodes.push_back(synthetic_barcode(cell, options.seed));
    meta.obs = Table(std::move(barcodes));
    meta.obs.set("cell_type", std::move(cell_type));
    meta.obs.set("low_quality", std::move(low_quality));
    meta.var = Table(model.gene_names);
    meta.var.set("gene_ids", StringColumn{model.gene_ids});
    meta.var.set("feature_types", CategoricalColumn{std::vector<std::int32_t>(model.gene_names.size(), 0),
                                                    {"Gene Expression"}, false});
    meta.var.set("genome",
                 CategoricalColumn{std::vector<std::int32_t>(model.gene_names.size(), 0), {"synthetic"}, false});
    UnsNode& info = meta.uns["synth"];
    info["generator"] = UnsNode::leaf(std::string("fathom-cli synth"));
    info["seed"] = UnsNode::leaf(static_cast<std::int64_t>(options.seed));
    info["num_cell_types"] = UnsNode::leaf(static_cast<std::int64_t>(options.num_cell_types));
    info["median_library_size"] = UnsNode::leaf(options.median_library_size);
    info["nb_size"] = UnsNode::leaf(options.nb_size);
    writer.commit(meta);
    return summary;
}

}  // namespace fathom::io
