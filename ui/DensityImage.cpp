#include "ui/DensityImage.hpp"

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>

namespace fathom::ui {

namespace {

// Cells per binning task: a task amortises its start, and 1M cells still make 16 tasks.
constexpr std::int64_t k_chunk_cells = std::int64_t{1} << 16;
// Raster rows per accumulation band: a band's colour sums (rows x width texels) stay in
// cache while its cells are added, and bands are written by one task each (no atomics).
constexpr int k_band_rows = 8;
// Counts below this take their intensity from a table (one log per count, not per texel).
constexpr std::uint32_t k_intensity_table_size = 4096;

// A cell not binned (hidden, non-finite or outside the raster).
constexpr std::uint32_t k_not_binned = ~std::uint32_t{0};

// The texel of a cell as (row << 16 | column), or k_not_binned.
struct Binner {
    const float* positions;
    const PointAttribute* attributes;
    double center_x, center_y, scale, half_width, half_height;
    int width, height;

    std::uint32_t key(std::int64_t cell) const noexcept {
        if (attributes[cell].color.a == 0) return k_not_binned;
        const double x = (positions[2 * cell] - center_x) * scale + half_width;
        const double y = (positions[2 * cell + 1] - center_y) * scale + half_height;
        // floor(v) is in [0, size) exactly when v is, and then truncation is floor.
        if (!(x >= 0.0 && y >= 0.0 && x < width && y < height)) return k_not_binned;  // NaN fails too
        return static_cast<std::uint32_t>(y) << 16 | static_cast<std::uint32_t>(x);
    }
};

// Round to nearest of a value in [0, 1] as 8 bits (what GL's conversion to RGBA8 does).
std::uint8_t to_unorm8(float value) noexcept {
    return static_cast<std::uint8_t>(std::clamp(value, 0.0f, 1.0f) * 255.0f + 0.5f);
}

}  // namespace

DensitySummary aggregate_density(std::span<const float> positions, std::span<const PointAttribute> attributes,
                                 const DensityRaster& raster, DensityColoring coloring, Colormap colormap,
                                 Rgba8 background, std::vector<Rgba8>& out, DensityScratch& scratch) {
    if (raster.width < 1 || raster.height < 1)
        throw std::invalid_argument("DensityRaster::width and ::height must be >= 1 (got " +
                                    std::to_string(raster.width) + " x " + std::to_string(raster.height) + ")");
    const std::int64_t num_texels = std::int64_t{raster.width} * raster.height;
    if (raster.width >= (1 << 16) || raster.height >= (1 << 16))
        throw std::invalid_argument("DensityRaster::width and ::height must be below 65536 texels (got " +
                                    std::to_string(raster.width) + " x " + std::to_string(raster.height) + ")");
    if (!(raster.texels_per_unit > 0.0) || !std::isfinite(raster.texels_per_unit))
        throw std::invalid_argument("DensityRaster::texels_per_unit must be finite and > 0");
    const std::int64_t num_cells = static_cast<std::int64_t>(positions.size() / 2);
    if (static_cast<std::int64_t>(attributes.size()) < num_cells)
        throw std::invalid_argument("aggregate_density: attributes has " + std::to_string(attributes.size()) +
                                    " entries for " + std::to_string(num_cells) + " cells");
    if (num_cells >= (std::int64_t{1} << 32))
        throw std::invalid_argument("aggregate_density: more than 2^32 cells");

    const int width = raster.width, height = raster.height;
    const Binner binner{positions.data(), attributes.data(), raster.center.x, raster.center.y, raster.texels_per_unit,
                        width / 2.0, height / 2.0, width, height};
    const std::int64_t num_bands = (height + k_band_rows - 1) / k_band_rows;
    const std::int64_t num_chunks = (num_cells + k_chunk_cells - 1) / k_chunk_cells;

    // 1. Every cell's texel, and the binned cells per (chunk, band), each chunk by one task.
    scratch.chunk_band_cells.assign(static_cast<std::size_t>(num_chunks * num_bands), 0);
    scratch.cell_keys.resize(static_cast<std::size_t>(num_cells));
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, num_chunks, 1), [&](const tbb::blocked_range<std::int64_t>& chunks) {
        for (std::int64_t chunk = chunks.begin(); chunk != chunks.end(); ++chunk) {
            std::uint32_t* per_band = scratch.chunk_band_cells.data() + chunk * num_bands;
            const std::int64_t end = std::min(num_cells, (chunk + 1) * k_chunk_cells);
            for (std::int64_t cell = chunk * k_chunk_cells; cell < end; ++cell) {
                const std::uint32_t key = binner.key(cell);
                scratch.cell_keys[static_cast<std::size_t>(cell)] = key;
                if (key != k_not_binned) ++per_band[(key >> 16) / k_band_rows];
            }
        }
    });
    // 2. Where each (chunk, band) starts in the band-grouped entries: bands in order, and
    // within a band the chunks in order, so a band's cells stay in cell order.
    std::vector<std::int64_t> band_begin(static_cast<std::size_t>(num_bands) + 1, 0);
    std::int64_t running = 0;
    for (std::int64_t band = 0; band < num_bands; ++band) {
        band_begin[static_cast<std::size_t>(band)] = running;
        for (std::int64_t chunk = 0; chunk < num_chunks; ++chunk) {
            std::uint32_t& slot = scratch.chunk_band_cells[static_cast<std::size_t>(chunk * num_bands + band)];
            const std::uint32_t cells = slot;
            slot = static_cast<std::uint32_t>(running - band_begin[static_cast<std::size_t>(band)]);
            running += cells;
        }
    }
    band_begin[static_cast<std::size_t>(num_bands)] = running;
    scratch.entries.resize(static_cast<std::size_t>(running));
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, num_chunks, 1), [&](const tbb::blocked_range<std::int64_t>& chunks) {
        for (std::int64_t chunk = chunks.begin(); chunk != chunks.end(); ++chunk) {
            std::uint32_t* next = scratch.chunk_band_cells.data() + chunk * num_bands;
            const std::int64_t end = std::min(num_cells, (chunk + 1) * k_chunk_cells);
            for (std::int64_t cell = chunk * k_chunk_cells; cell < end; ++cell) {
                const std::uint32_t key = scratch.cell_keys[static_cast<std::size_t>(cell)];
                if (key == k_not_binned) continue;
                const std::uint32_t row = key >> 16, column = key & 0xffffu;
                const std::uint32_t band = row / k_band_rows;
                const std::int64_t slot = band_begin[band] + next[band]++;
                scratch.entries[static_cast<std::size_t>(slot)] = {row * static_cast<std::uint32_t>(width) + column,
                                                                   attributes[cell]};
            }
        }
    });

    // 3. Per band (one task each, so no atomics): the cells per texel, and the band's
    // largest count.
    scratch.counts.resize(static_cast<std::size_t>(num_texels));
    scratch.band_largest.assign(static_cast<std::size_t>(num_bands), 0);
    auto band_texels = [&](std::int64_t band) {
        const std::int64_t first = band * k_band_rows * width;
        return std::pair{first, std::min<std::int64_t>(k_band_rows, height - band * k_band_rows) * width};
    };
    auto band_entries = [&](std::int64_t band) {
        return std::span<const DensityScratch::Entry>(
            scratch.entries.data() + band_begin[static_cast<std::size_t>(band)],
            scratch.entries.data() + band_begin[static_cast<std::size_t>(band) + 1]);
    };
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, num_bands, 1), [&](const tbb::blocked_range<std::int64_t>& bands) {
        for (std::int64_t band = bands.begin(); band != bands.end(); ++band) {
            const auto [first, size] = band_texels(band);
            const auto entries = band_entries(band);
            if (entries.empty()) continue;  // step 4 fills the band with the background
            std::uint32_t* counts = scratch.counts.data() + first;
            std::fill(counts, counts + size, 0u);
            for (const auto& entry : entries) ++counts[entry.texel - first];
            scratch.band_largest[static_cast<std::size_t>(band)] = *std::max_element(counts, counts + size);
        }
    });
    DensitySummary summary;
    summary.binned_cells = running;
    summary.largest_count = scratch.band_largest.empty()
                                ? 0
                                : *std::max_element(scratch.band_largest.begin(), scratch.band_largest.end());

    // 4. Per band: colour or value sums in a band-sized buffer of the task's thread (in
    // cache), then every texel's colour from its intensity against the largest count,
    // mixed over the background in float as the GL pipeline did.
    const float log_max = std::max(std::log(1.0f + static_cast<float>(std::max<std::uint32_t>(summary.largest_count, 1))),
                                   1e-6f);
    auto intensity_of = [log_max](std::uint32_t count) {
        return std::clamp(std::log(1.0f + static_cast<float>(count)) / log_max, 0.0f, 1.0f);
    };
    std::vector<float> intensity_table(std::min(k_intensity_table_size, summary.largest_count + 1));
    for (std::size_t count = 0; count < intensity_table.size(); ++count)
        intensity_table[count] = intensity_of(static_cast<std::uint32_t>(count));
    const std::array<float, 3> base{background.r / 255.0f, background.g / 255.0f, background.b / 255.0f};
    const Rgba8 opaque_background{background.r, background.g, background.b, 255};
    const auto table = colormap_table(colormap);
    auto table_color = [&](std::size_t entry) {
        return Rgba8{table[entry * 3], table[entry * 3 + 1], table[entry * 3 + 2], 255};
    };
    out.resize(static_cast<std::size_t>(num_texels));
    tbb::enumerable_thread_specific<std::vector<std::array<std::uint32_t, 3>>> color_sums;
    tbb::enumerable_thread_specific<std::vector<double>> value_sums;
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, num_bands, 1), [&](const tbb::blocked_range<std::int64_t>& bands) {
        for (std::int64_t band = bands.begin(); band != bands.end(); ++band) {
            const auto [first, size] = band_texels(band);
            Rgba8* colors = out.data() + first;
            const auto entries = band_entries(band);
            if (entries.empty()) {
                std::fill(colors, colors + size, opaque_background);
                continue;
            }
            const std::uint32_t* counts = scratch.counts.data() + first;
            std::vector<std::array<std::uint32_t, 3>>* colour = nullptr;
            std::vector<double>* value = nullptr;
            if (coloring == DensityColoring::MeanColor) {
                // 8-bit channels: the sums are exact in 32 bits up to 16.8M cells per texel.
                colour = &color_sums.local();
                colour->assign(static_cast<std::size_t>(size), {0, 0, 0});
                for (const auto& entry : entries) {
                    auto& sum = (*colour)[entry.texel - first];
                    sum[0] += entry.attribute.color.r;
                    sum[1] += entry.attribute.color.g;
                    sum[2] += entry.attribute.color.b;
                }
            } else if (coloring == DensityColoring::MeanValue) {
                value = &value_sums.local();
                value->assign(static_cast<std::size_t>(size), 0.0);
                for (const auto& entry : entries) (*value)[entry.texel - first] += entry.attribute.value;
            }
            for (std::int64_t texel = 0; texel < size; ++texel) {
                const std::uint32_t count = counts[texel];
                if (count == 0) {
                    colors[texel] = opaque_background;
                    continue;
                }
                const float intensity = count < intensity_table.size() ? intensity_table[count] : intensity_of(count);
                if (coloring == DensityColoring::Count) {
                    // The colour map entry of the intensity, as colormap_color() picks it.
                    colors[texel] = table_color(std::min<std::size_t>(static_cast<std::size_t>(intensity * 256.0f), 255));
                    continue;
                }
                std::array<float, 3> shown{};
                if (colour) {
                    const float scale = 1.0f / (255.0f * static_cast<float>(count));
                    for (int channel = 0; channel < 3; ++channel)
                        shown[channel] = static_cast<float>((*colour)[static_cast<std::size_t>(texel)][channel]) * scale;
                } else {
                    // The colour map entry of the mean value, as colormap_color() picks it.
                    const float mean = static_cast<float>((*value)[static_cast<std::size_t>(texel)] / count);
                    const Rgba8 mapped = colormap_color(colormap, std::clamp(mean, 0.0f, 1.0f));
                    shown = {mapped.r / 255.0f, mapped.g / 255.0f, mapped.b / 255.0f};
                }
                const float alpha = 0.35f + 0.65f * intensity;
                colors[texel] = {to_unorm8(base[0] * (1.0f - alpha) + shown[0] * alpha),
                                 to_unorm8(base[1] * (1.0f - alpha) + shown[1] * alpha),
                                 to_unorm8(base[2] * (1.0f - alpha) + shown[2] * alpha), 255};
            }
        }
    });
    return summary;
}

}  // namespace fathom::ui
