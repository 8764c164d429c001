#pragma once
/// The plot's density image, aggregated on the CPU: the visible cells are binned into a
/// raster of texels in parallel (oneTBB), then every texel gets its final colour from its
/// cell count and the colours or values of its cells. PlotView uploads the result as one
/// RGBA8 texture; a recolouring then costs one pass over the cells on the CPU and one
/// texture upload, never a draw of every cell. Pure functions, no GL.
#include <cstdint>
#include <span>
#include <vector>

#include "ui/ColorMaps.hpp"
#include "ui/PlotColoring.hpp"
#include "ui/ViewTransform.hpp"

namespace fathom::ui {

/// The raster a density image covers: `width` x `height` texels with the world point
/// `center` at its middle and `texels_per_unit` texels per world unit along both axes.
/// A cell at world (x, y) falls in texel
///   (floor((x - center.x) * texels_per_unit + width / 2), floor((y - center.y) * texels_per_unit + height / 2)),
/// so texel rows grow with world y (GL texture orientation).
struct DensityRaster {
    int width = 0;                  ///< texels, >= 1 and below 65536
    int height = 0;                 ///< texels, >= 1; both below 65536
    Vec2 center;                    ///< world units
    double texels_per_unit = 1.0;   ///< > 0
};

/// How a texel's cells make its colour.
enum class DensityColoring {
    Count,      ///< the colour map at the texel's intensity, opaque (uniform colouring)
    MeanColor,  ///< the mean colour of its cells (categorical colouring)
    MeanValue,  ///< the colour map at the mean of its cells' scaled values (continuous colouring)
};

/// Buffers aggregate_density() reuses from one call to the next (they grow to the largest
/// raster and cell count seen; nothing in them is meaningful between calls).
struct DensityScratch {
    /// One binned cell: its texel (row-major index) and its attributes.
    struct Entry {
        std::uint32_t texel;
        PointAttribute attribute;
    };
    std::vector<std::uint32_t> cell_keys;         ///< texel (row << 16 | column) of each cell, or ~0
    std::vector<std::uint32_t> chunk_band_cells;  ///< binned cells per (chunk of cells, band of rows)
    std::vector<Entry> entries;                   ///< binned cells grouped by band, in cell order within a band
    std::vector<std::uint32_t> counts;            ///< cells per texel
    std::vector<std::uint32_t> band_largest;      ///< largest count per band
};

/// What aggregate_density() found.
struct DensitySummary {
    std::uint32_t largest_count = 0;  ///< most cells in one texel (0 when none was binned)
    std::int64_t binned_cells = 0;    ///< visible cells that fell inside the raster
};

/// Aggregates the visible cells (attributes[cell].color.a != 0) of `positions`
/// (num_cells * 2 floats, x then y; non-finite ones are skipped) into `raster` and
/// writes one opaque texel per raster texel into `out` (resized to width * height, row 0
/// = lowest world y): `background` where no cell falls, else
///   mix(background, colour, alpha), intensity = log(1 + count) / log(1 + largest count),
/// with colour and alpha per `coloring`: Count: colormap(intensity), alpha 1; MeanColor:
/// the mean of the cells' colours; MeanValue: colormap(mean of attributes[cell].value),
/// both with alpha = 0.35 + 0.65 * intensity. This is the picture the density mode drew
/// when it summed (1, r, g, b) or (1, value) per cell into a float texture on the GPU.
/// The sums are integers or taken in cell order, so the image does not depend on the
/// number of threads. Throws std::invalid_argument naming the field when `raster` is
/// invalid or `attributes` holds fewer entries than `positions` has cells.
DensitySummary aggregate_density(std::span<const float> positions, std::span<const PointAttribute> attributes,
                                 const DensityRaster& raster, DensityColoring coloring, Colormap colormap,
                                 Rgba8 background, std::vector<Rgba8>& out, DensityScratch& scratch);

}  // namespace fathom::ui
