#pragma once
/// The GL side of the embedding plot, without a widget: the position and attribute
/// buffers and their batched uploads, the draw order the buffers are in, the off-screen
/// scene target, and the density texture (binned on the CPU, DensityImage.hpp).
/// PlotView owns one and calls it inside its GL context with what to draw: the positions,
/// the per-cell attributes of its PlotModel, and the view.
///
/// - Positions are uploaded in fixed-size batches, one or more per frame, and every frame
///   draws what has arrived; a recolouring rewrites only the attribute buffer.
/// - The draw order (file, seeded random, by value; the mask's dimmed cells first and the
///   selection last) is the order of the GPU buffers: a new order rewrites the positions
///   once, in that order, and the attributes are written in the same order, so every
///   frame is one plain array draw.
/// - The density image is binned from the cells in cell order, uploaded as one texture
///   and shown by a full-screen pass; it is redone only when the view or the data change.
#include <QImage>
#include <QOpenGLShaderProgram>
#include <QSize>
#include <QString>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "ui/DensityImage.hpp"
#include "ui/PlotColoring.hpp"
#include "ui/PlotModel.hpp"
#include "ui/ViewTransform.hpp"

class QOpenGLContext;
class QOpenGLExtraFunctions;

namespace fathom {
class GlBufferWriter;
}

namespace fathom::ui {

/// Upload and draw counters (tests and the benchmark read them through PlotView::stats()).
struct PlotStats {
    std::int64_t frames = 0;                 ///< paintGL calls
    std::int64_t scene_renders = 0;          ///< frames that redrew the point/density layer
    std::int64_t density_aggregations = 0;   ///< density images binned from all cells (on the CPU)
    std::int64_t position_batches = 0;       ///< glBufferSubData calls on the position buffer
    std::int64_t position_bytes = 0;         ///< bytes written to the position buffer
    std::int64_t attribute_bytes = 0;        ///< bytes written to the attribute buffer
    std::int64_t position_reorders = 0;      ///< position rewrites for a new draw order
    std::int64_t drawn_points = 0;           ///< points submitted by the last scene render
    double last_paint_ms = 0.0;              ///< CPU time of the last paintGL
    double last_density_ms = 0.0;            ///< binning + texture upload of the last density aggregation
    double frame_interval_ms = 0.0;          ///< smoothed time between frames (0 if idle)
};

/// One scene render: the target, the view and how the cells look.
struct SceneRequest {
    QSize size;                     ///< device px of the target
    ViewTransform view;             ///< the view (its pixels are logical: `ratio` device px each)
    double ratio = 1.0;             ///< device px per view pixel
    float point_px = 3.0f;          ///< point size in device px
    float opacity = 1.0f;
    bool density = false;           ///< the density image instead of points
    Rgba8 background;
    /// Device px on the right kept free of cells (the legend's strip); 0 = none.
    double reserved_right_px = 0.0;
};

/// GL resources and uploads of the plot. Every method that touches GL needs the context
/// that initialize() was called in to be current.
class PlotRenderer {
public:
    PlotRenderer();
    ~PlotRenderer();
    PlotRenderer(const PlotRenderer&) = delete;
    PlotRenderer& operator=(const PlotRenderer&) = delete;

    /// Builds the programs and buffers in `context` (current). False with `error` set when
    /// the context is older than OpenGL 3.3 / ES 3.0 or a shader does not build.
    bool initialize(QOpenGLContext* context, QString* error);
    /// Deletes every GL object (the context must still be current).
    void release();
    bool ready() const;
    QOpenGLExtraFunctions* functions() const;

    // ---- draw order -------------------------------------------------------------------
    void setDrawOrder(DrawOrder order, std::uint64_t seed);
    DrawOrder drawOrder() const;
    std::uint64_t drawOrderSeed() const;
    /// Recomputes the buffers' order from the model (by-value keys, the dimmed cells
    /// first, the selection last) for `num_cells` cells; true when it changed (the
    /// positions are then rewritten once, in the new order, by the next upload()).
    bool rebuildDrawOrder(const PlotModel& model, std::int64_t num_cells);

    // ---- uploads ------------------------------------------------------------------------
    /// The attributes changed: the next upload() rewrites the attribute buffer.
    void markAttributesDirty();
    /// Uploads what is pending: a new generation of positions (in batches of
    /// `batch_size`, continuing while under `budget_ms`, at least one per call), a new
    /// draw order (every position at once) or new attributes. `hold` (the density image is
    /// shown and every position is on the GPU): recolourings and reorders wait. Returns
    /// true when positions were written (the point layer changed).
    bool upload(std::span<const float> positions, std::uint64_t generation, std::span<const PointAttribute> attributes,
                bool hold, std::int64_t batch_size, double budget_ms);
    /// Positions of `generation` on the GPU.
    std::int64_t uploaded(std::uint64_t generation) const;
    /// Whether the buffers were (or are being) filled with positions of `generation`.
    bool holds(std::uint64_t generation) const;
    /// Points with valid (possibly older) positions on the GPU.
    std::int64_t drawable() const;

    // ---- scene --------------------------------------------------------------------------
    /// The density image must be binned again (new data or colours).
    void markDensityDirty();
    /// Draws the point layer (or the density image) into the scene target of
    /// `request.size`. A zoom within the current density image resamples it: then
    /// `*resampled` is true, and the caller asks for a re-aggregation later by passing
    /// `refresh_due` true.
    void renderScene(const SceneRequest& request, std::span<const float> positions, std::span<const PointAttribute> attributes,
                     PlotModel::ColorKind kind, Colormap colormap, bool refresh_due, bool* resampled);
    QSize sceneSize() const;
    /// Copies the scene target into `framebuffer` (same size, bottom-left origin).
    void blitScene(unsigned int framebuffer) const;
    /// Renders into a fresh target of `request.size` and reads it back (the on-screen
    /// target and density image are kept apart); GL rows bottom-up, RGBA8.
    QImage renderImage(const SceneRequest& request, std::span<const float> positions,
                       std::span<const PointAttribute> attributes, PlotModel::ColorKind kind, Colormap colormap);

    PlotStats& stats();
    const PlotStats& stats() const;

private:
    struct Private;
    std::unique_ptr<Private> d;

    void renderPoints(const SceneRequest& request);
    void renderDensity(const SceneRequest& request, std::span<const float> positions,
                       std::span<const PointAttribute> attributes, PlotModel::ColorKind kind, Colormap colormap,
                       bool refresh_due, bool* resampled);
    void beginReservedClip(const SceneRequest& request) const;
};

/// The density aggregation covers the viewport plus this fraction of it on every side.
inline constexpr double k_density_margin = 0.35;

}  // namespace fathom::ui
