#include "core/algo/normalize.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <optional>
#include <string>

#include "core/backend/CpuBackend.hpp"

namespace fathom {

namespace {

/// NumPy's pairwise_sum for float32 (numpy/core/src/umath/loops_utils.h.src).
float pairwise_float32(const float* values, std::size_t count) {
    if (count < 8) {
        float sum = 0.0f;
        for (std::size_t index = 0; index < count; ++index) sum += values[index];
        return sum;
    }
    if (count <= 128) {
        float partial[8];
        for (std::size_t lane = 0; lane < 8; ++lane) partial[lane] = values[lane];
        std::size_t index = 8;
        for (; index < count - count % 8; index += 8)
            for (std::size_t lane = 0; lane < 8; ++lane) partial[lane] += values[index + lane];
        float sum = ((partial[0] + partial[1]) + (partial[2] + partial[3])) +
                    ((partial[4] + partial[5]) + (partial[6] + partial[7]));
        for (; index < count; ++index) sum += values[index];
        return sum;
    }
    std::size_t half = count / 2;
    half -= half % 8;
    return pairwise_float32(values, half) + pairwise_float32(values + half, count - half);
}

}  // namespace

float numpy_float32_sum(std::span<const float> values) {
    // ufunc.reduce without an initial value starts from the first element and adds the
    // pairwise sum of the others.
    if (values.empty()) return 0.0f;
    return values[0] + pairwise_float32(values.data() + 1, values.size() - 1);
}

std::vector<double> numpy_float32_row_sums(const ShardSet& shards, std::span<const std::uint8_t> gene_mask,
                                           JobContext& ctx) {
    std::vector<double> sums;
    std::vector<float> row;
    for (int index = shards.first_local_shard(); index < shards.first_local_shard() + shards.num_local_shards(); ++index) {
        ctx.checkpoint();
        // The values as stored, in row order (a device shard is copied to the host).
        const Backend& backend = shards.shard(index);
        std::optional<CsrShard> copy;
        const auto* cpu = dynamic_cast<const CpuBackend*>(&backend);
        if (!cpu) copy = backend.to_host();
        const CsrShard& shard = cpu ? cpu->shard() : *copy;
        for (std::int64_t local = 0; local < shard.num_rows(); ++local) {
            row.clear();
            for (auto entry = shard.row_offsets[static_cast<std::size_t>(local)];
                 entry < shard.row_offsets[static_cast<std::size_t>(local) + 1]; ++entry) {
                const auto gene = static_cast<std::size_t>(shard.gene_indices[static_cast<std::size_t>(entry)]);
                if (gene_mask.empty() || gene_mask[gene]) row.push_back(shard.values[static_cast<std::size_t>(entry)]);
            }
            sums.push_back(numpy_float32_sum(row));
        }
    }
    const auto& comm = shards.comm();
    if (!comm || comm->size() == 1) return sums;
    // Every rank's rows, in rank order (= global row order).
    ByteWriter out;
    out.put_vector(std::span<const double>(sums));
    std::vector<double> all;
    for (const Bytes& part : comm->all_gather(out.bytes())) {
        ByteReader in(part);
        const auto values = in.get_vector<double>();
        all.insert(all.end(), values.begin(), values.end());
    }
    return all;
}

double median_float64(std::vector<double> values) {
    if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
    const std::size_t middle = values.size() / 2;
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(middle), values.end());
    const double upper = values[middle];
    if (values.size() % 2 == 1) return upper;
    const double lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(middle));
    return (lower + upper) / 2.0;
}

float median_float32(std::vector<float> values) {
    if (values.empty()) return std::numeric_limits<float>::quiet_NaN();
    const std::size_t middle = values.size() / 2;
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(middle), values.end());
    const float upper = values[middle];
    if (values.size() % 2 == 1) return upper;
    const float lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(middle));
    // np.median on float32: np.mean of the two middle values, summed and divided in float32.
    return (lower + upper) / 2.0f;
}

void validate(const NormalizeTotalOptions& options) {
    if (options.target_sum && !(*options.target_sum > 0.0 && std::isfinite(*options.target_sum)))
        throw std::invalid_argument("NormalizeTotalOptions::target_sum must be a finite number > 0");
}

void validate(const NormalizePerCellOptions& options) {
    if (options.counts_per_cell_after &&
        !(*options.counts_per_cell_after > 0.0 && std::isfinite(*options.counts_per_cell_after)))
        throw std::invalid_argument("NormalizePerCellOptions::counts_per_cell_after must be a finite number > 0");
    if (!(options.min_counts >= 0.0) || !std::isfinite(options.min_counts))
        throw std::invalid_argument("NormalizePerCellOptions::min_counts must be a finite number >= 0");
}

namespace {

/// Totals and target as scanpy holds them, and the per-cell factors it multiplies in:
/// counts += counts == 0; counts = counts / after; factor = 1 / counts.
/// Float32 X: X.sum(1) is float32, np.median of it is float32, every step is float32.
/// Integer X: X.sum(1) is int64, np.median gives float64, the steps are float64.
struct Factors {
    std::vector<double> factors;
    double after = 0.0;
};

Factors scale_factors(const std::vector<double>& totals, std::optional<double> target, bool use_positive_only,
                      bool integer_dtype) {
    Factors out;
    out.factors.resize(totals.size());
    if (integer_dtype) {
        double after = 1.0;
        if (target) {
            after = *target;
        } else {
            std::vector<double> pool;
            for (double total : totals)
                if (!use_positive_only || total > 0.0) pool.push_back(total);
            if (!pool.empty()) after = median_float64(std::move(pool));
        }
        for (std::size_t cell = 0; cell < totals.size(); ++cell) {
            double count = totals[cell];
            if (count == 0.0) count += 1.0;
            out.factors[cell] = 1.0 / (count / after);
        }
        out.after = after;
        return out;
    }
    std::vector<float> counts(totals.size());
    for (std::size_t cell = 0; cell < totals.size(); ++cell) counts[cell] = static_cast<float>(totals[cell]);
    float after = 1.0f;
    if (target) {
        after = static_cast<float>(*target);  // NumPy casts the Python float to float32
    } else {
        std::vector<float> pool;
        for (float count : counts)
            if (!use_positive_only || count > 0.0f) pool.push_back(count);
        if (!pool.empty()) after = median_float32(std::move(pool));
    }
    for (std::size_t cell = 0; cell < counts.size(); ++cell) {
        float count = counts[cell];
        if (count == 0.0f) count += 1.0f;
        count = count / after;
        out.factors[cell] = static_cast<double>(1.0f / count);
    }
    out.after = after;
    return out;
}

}  // namespace

NormalizeTotalResult normalize_total_factors(std::vector<double> counts_per_cell, const NormalizeTotalOptions& options) {
    validate(options);
    // scanpy 1.9 _normalize_data: after = np.median(counts[counts > 0]) unless given.
    Factors factors = scale_factors(counts_per_cell, options.target_sum, true, options.integer_dtype);
    NormalizeTotalResult result;
    result.counts_per_cell = std::move(counts_per_cell);
    result.target_sum = factors.after;
    result.factors = std::move(factors.factors);
    return result;
}

NormalizeTotalResult normalize_total(ShardSet& shards, const NormalizeTotalOptions& options, JobContext& ctx) {
    validate(options);
    ctx.begin_stage("normalize_total");
    // X.sum(1) as scanpy holds it: exact for an integer X (int64), NumPy's float32 sum
    // for a float32 X (it differs from a double sum where values are not integers).
    std::vector<double> totals =
        options.integer_dtype ? shards.row_stats({}, ctx).total : numpy_float32_row_sums(shards, {}, ctx);
    NormalizeTotalResult result = normalize_total_factors(std::move(totals), options);
    ctx.report(0.5);
    shards.scale_rows(result.factors, ctx);
    ctx.report(1.0);
    return result;
}

NormalizePerCellResult normalize_per_cell(ShardSet& shards, const NormalizePerCellOptions& options, JobContext& ctx) {
    validate(options);
    ctx.begin_stage("normalize_per_cell");
    const RowStats stats = shards.row_stats({}, ctx);
    NormalizePerCellResult result;
    result.counts_per_cell = stats.total;
    result.cell_kept.assign(stats.total.size(), 0);
    // scanpy 1.9 filter_cells(X, min_counts): cell_subset = counts >= min_counts, on
    // the totals as scanpy holds them (float32 for float32 X).
    std::vector<double> kept_totals;
    for (std::size_t cell = 0; cell < stats.total.size(); ++cell) {
        const double total = options.integer_dtype ? stats.total[cell] : static_cast<float>(stats.total[cell]);
        if (total >= options.min_counts) {
            result.cell_kept[cell] = 1;
            kept_totals.push_back(stats.total[cell]);
        }
    }
    result.num_removed = static_cast<std::int64_t>(stats.total.size() - kept_totals.size());
    if (result.num_removed > 0) shards.subset_rows(result.cell_kept, ctx);
    ctx.report(0.4);
    // counts_per_cell_after = np.median(counts_per_cell) over the kept cells.
    const Factors factors = scale_factors(kept_totals, options.counts_per_cell_after, false, options.integer_dtype);
    result.counts_per_cell_after = factors.after;
    shards.scale_rows(factors.factors, ctx);
    ctx.report(1.0);
    return result;
}

void log1p(ShardSet& shards, JobContext& ctx) {
    ctx.begin_stage("log1p");
    shards.log1p(ctx);
    ctx.report(1.0);
}

}  // namespace fathom
