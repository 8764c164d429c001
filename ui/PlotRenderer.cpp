#include "ui/PlotRenderer.hpp"

#include <QElapsedTimer>
#include <QOpenGLContext>
#include <QOpenGLExtraFunctions>
#include <QSurfaceFormat>
#include <algorithm>
#include <array>
#include <cmath>

#include "core/backend/GlBufferWriter.hpp"
#include "ui/GlShaders.hpp"

#ifndef GL_PROGRAM_POINT_SIZE
#define GL_PROGRAM_POINT_SIZE 0x8642
#endif

namespace fathom::ui {

namespace {

/// Writes into the GL_ARRAY_BUFFER `buffer` (bound): through the accelerator's GL
/// interop when the application installed one (gpu/gl_interop.hpp, CUDA; untested on a
/// real GPU display), else, or when it declines, by glBufferSubData.
void write_array_buffer(QOpenGLExtraFunctions* gl, GlBufferWriter* writer, GLuint buffer, GLintptr offset, GLsizeiptr bytes,
                        const void* data) {
    if (writer == nullptr || !writer->write(buffer, static_cast<std::size_t>(offset), data, static_cast<std::size_t>(bytes)))
        gl->glBufferSubData(GL_ARRAY_BUFFER, offset, bytes, data);
}

/// A texture of `wanted` size and RGBA8 texels (nearest sampling), made or resized.
void ensure_rgba8_texture(QOpenGLExtraFunctions* gl, GLuint& texture, QSize& current, QSize wanted) {
    if (texture && current == wanted) return;
    if (!texture) gl->glGenTextures(1, &texture);
    gl->glBindTexture(GL_TEXTURE_2D, texture);
    gl->glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    gl->glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    gl->glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    gl->glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
    gl->glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, wanted.width(), wanted.height(), 0, GL_RGBA, GL_UNSIGNED_BYTE, nullptr);
    current = wanted;
}

/// A framebuffer with one RGBA8 colour texture of `wanted` size, made or resized.
void ensure_color_target(QOpenGLExtraFunctions* gl, GLuint& framebuffer, GLuint& texture, QSize& current, QSize wanted) {
    if (framebuffer && current == wanted) return;
    if (!framebuffer) gl->glGenFramebuffers(1, &framebuffer);
    current = QSize();  // (re)specify the texture
    ensure_rgba8_texture(gl, texture, current, wanted);
    gl->glBindFramebuffer(GL_FRAMEBUFFER, framebuffer);
    gl->glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, texture, 0);
}

void clear_to(QOpenGLExtraFunctions* gl, Rgba8 color) {
    gl->glClearColor(color.r / 255.0f, color.g / 255.0f, color.b / 255.0f, 1.0f);
    gl->glClear(GL_COLOR_BUFFER_BIT);
}

}  // namespace

struct PlotRenderer::Private {
    QOpenGLExtraFunctions* gl = nullptr;
    bool gles = false;
    bool ready = false;
    GLuint vertex_array = 0, position_buffer = 0, attribute_buffer = 0;
    std::unique_ptr<GlBufferWriter> buffer_writer;  // accelerator GL interop, or null
    GLuint empty_vertex_array = 0;
    std::int64_t gpu_capacity = -1;
    std::uint64_t gpu_generation = ~0ULL;
    std::int64_t uploaded = 0;  // positions of the current generation on the GPU
    std::int64_t drawable = 0;  // points with valid (possibly older) positions on the GPU
    bool attributes_follow_batches = false;
    bool attributes_dirty = true;
    std::vector<float> position_staging;            // one batch of positions in draw order
    std::vector<PointAttribute> attribute_staging;  // the attributes in draw order
    QOpenGLShaderProgram points_program, resolve_program;
    GLuint scene_framebuffer = 0, scene_texture = 0;
    QSize scene_size;
    GLuint density_texture = 0;
    QSize density_size;
    bool density_dirty = true;
    std::vector<Rgba8> density_pixels;  // the last density image (texture rows)
    DensityScratch density_scratch;
    int density_downsample = 1;
    Vec2 density_center;         // world point at the aggregation texture's centre
    double density_scale = 0.0;  // device px per world unit when aggregated

    DrawOrder order = DrawOrder::File;
    std::uint64_t order_seed = 0;
    std::vector<std::uint32_t> draw_indices;  // cell drawn at each buffer slot; empty = identity
    bool order_identity = true;
    bool order_dirty = false;                 // the GPU buffers are in an older order
    std::vector<std::uint32_t> random_order;  // make_draw_order(Random) for the key below
    std::uint64_t random_order_seed = 0;

    PlotStats stats;
};

PlotRenderer::PlotRenderer() : d(std::make_unique<Private>()) {}
PlotRenderer::~PlotRenderer() = default;

bool PlotRenderer::initialize(QOpenGLContext* context, QString* error) {
    if (d->ready) release();
    d->gl = context->extraFunctions();
    d->gles = context->isOpenGLES();
    const QSurfaceFormat format = context->format();
    const bool version_ok = d->gles ? format.majorVersion() >= 3
                                    : (format.majorVersion() > 3 || (format.majorVersion() == 3 && format.minorVersion() >= 3));
    if (!version_ok) {
        if (error)
            *error = QStringLiteral("PlotView needs OpenGL 3.3 or OpenGL ES 3.0; the context is %1.%2")
                         .arg(format.majorVersion())
                         .arg(format.minorVersion());
        return false;
    }
    if (!build_program(d->points_program, QStringLiteral("points.vert"), QStringLiteral("points.frag"), d->gles, error) ||
        !build_program(d->resolve_program, QStringLiteral("fullscreen.vert"), QStringLiteral("density_resolve.frag"),
                       d->gles, error))
        return false;
    QOpenGLExtraFunctions* gl = d->gl;
    gl->glGenVertexArrays(1, &d->vertex_array);
    gl->glGenVertexArrays(1, &d->empty_vertex_array);
    gl->glGenBuffers(1, &d->position_buffer);
    gl->glGenBuffers(1, &d->attribute_buffer);
    gl->glBindVertexArray(d->vertex_array);
    gl->glBindBuffer(GL_ARRAY_BUFFER, d->position_buffer);
    gl->glEnableVertexAttribArray(0);
    gl->glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 2 * sizeof(float), nullptr);
    gl->glBindBuffer(GL_ARRAY_BUFFER, d->attribute_buffer);
    gl->glEnableVertexAttribArray(1);
    gl->glVertexAttribPointer(1, 4, GL_UNSIGNED_BYTE, GL_TRUE, sizeof(PointAttribute), nullptr);
    // (PointAttribute::value is for the CPU side: the density binning averages it.)
    gl->glBindVertexArray(0);
    d->gpu_capacity = -1;
    d->gpu_generation = ~0ULL;
    d->uploaded = d->drawable = 0;
    d->attributes_dirty = true;
    d->order_dirty = false;  // the first upload is in the current order
    d->scene_size = d->density_size = QSize();
    d->density_dirty = true;
    d->buffer_writer = make_gl_buffer_writer();
    d->ready = true;
    return true;
}

void PlotRenderer::release() {
    if (!d->gl) return;
    QOpenGLExtraFunctions* gl = d->gl;
    const auto delete_buffer = [&](GLuint& buffer) {
        if (buffer) gl->glDeleteBuffers(1, &buffer);
        buffer = 0;
    };
    const auto delete_texture = [&](GLuint& texture) {
        if (texture) gl->glDeleteTextures(1, &texture);
        texture = 0;
    };
    delete_buffer(d->position_buffer);
    delete_buffer(d->attribute_buffer);
    if (d->vertex_array) gl->glDeleteVertexArrays(1, &d->vertex_array);
    if (d->empty_vertex_array) gl->glDeleteVertexArrays(1, &d->empty_vertex_array);
    d->vertex_array = d->empty_vertex_array = 0;
    delete_texture(d->scene_texture);
    delete_texture(d->density_texture);
    if (d->scene_framebuffer) gl->glDeleteFramebuffers(1, &d->scene_framebuffer);
    d->scene_framebuffer = 0;
    d->points_program.removeAllShaders();
    d->resolve_program.removeAllShaders();
    d->buffer_writer.reset();
    d->ready = false;
    d->gl = nullptr;
}

bool PlotRenderer::ready() const { return d->ready; }
QOpenGLExtraFunctions* PlotRenderer::functions() const { return d->gl; }
PlotStats& PlotRenderer::stats() { return d->stats; }
const PlotStats& PlotRenderer::stats() const { return d->stats; }

// ---- draw order -------------------------------------------------------------------------

void PlotRenderer::setDrawOrder(DrawOrder order, std::uint64_t seed) {
    d->order = order;
    d->order_seed = seed;
}

DrawOrder PlotRenderer::drawOrder() const { return d->order; }
std::uint64_t PlotRenderer::drawOrderSeed() const { return d->order_seed; }

bool PlotRenderer::rebuildDrawOrder(const PlotModel& model, std::int64_t num_cells) {
    std::vector<float> keys;
    if (d->order == DrawOrder::ByValue) keys = model.orderKeys();
    bool identity = d->order == DrawOrder::File || (d->order == DrawOrder::ByValue && keys.empty());
    std::vector<std::uint32_t> indices;
    if (d->order == DrawOrder::Random) {
        // Every recolouring comes through here: the shuffle is kept for its seed and size.
        if (static_cast<std::int64_t>(d->random_order.size()) != num_cells || d->random_order_seed != d->order_seed) {
            d->random_order = make_draw_order(DrawOrder::Random, num_cells, d->order_seed);
            d->random_order_seed = d->order_seed;
        }
        indices = d->random_order;
    } else if (!identity) {
        indices = make_draw_order(d->order, num_cells, d->order_seed, keys);
    }
    const auto& mask = model.cellMask();
    if (model.maskStyle() == PlotModel::MaskStyle::Dim && !mask.empty()) {
        // Dimmed cells first, so that the matching ones are drawn over them.
        if (identity) indices = make_draw_order(DrawOrder::File, num_cells, 0);
        identity = false;
        std::stable_partition(indices.begin(), indices.end(),
                              [&mask](std::uint32_t cell) { return cell >= mask.size() || mask[cell] == 0; });
    }
    if (!model.selectedFlags().empty()) {
        // The selection is drawn on top of the dimmed cells.
        indices = selected_last(indices, model.selectedFlags());
        identity = false;
    }
    // Only a different order rewrites the GPU buffers (a recolouring in file or random
    // order keeps the positions where they are).
    if (identity == d->order_identity && indices == d->draw_indices) return false;
    d->order_identity = identity;
    d->draw_indices = std::move(indices);
    d->order_dirty = true;
    return true;
}

// ---- uploads --------------------------------------------------------------------------------

void PlotRenderer::markAttributesDirty() { d->attributes_dirty = true; }

std::int64_t PlotRenderer::uploaded(std::uint64_t generation) const {
    return d->gpu_generation == generation ? d->uploaded : 0;
}

bool PlotRenderer::holds(std::uint64_t generation) const { return d->gpu_generation == generation; }
std::int64_t PlotRenderer::drawable() const { return d->drawable; }

bool PlotRenderer::upload(std::span<const float> positions, std::uint64_t generation,
                          std::span<const PointAttribute> attributes, bool hold, std::int64_t batch_size, double budget_ms) {
    QOpenGLExtraFunctions* gl = d->gl;
    const auto count = static_cast<std::int64_t>(positions.size() / 2);
    if (d->gpu_generation != generation) {
        if (count != d->gpu_capacity) {
            // New cell count: reallocate both buffers; attributes then follow the batches,
            // which are in the current draw order from the start.
            gl->glBindBuffer(GL_ARRAY_BUFFER, d->position_buffer);
            gl->glBufferData(GL_ARRAY_BUFFER, static_cast<GLsizeiptr>(count) * 2 * sizeof(float), nullptr, GL_DYNAMIC_DRAW);
            gl->glBindBuffer(GL_ARRAY_BUFFER, d->attribute_buffer);
            gl->glBufferData(GL_ARRAY_BUFFER, static_cast<GLsizeiptr>(count) * sizeof(PointAttribute), nullptr,
                             GL_DYNAMIC_DRAW);
            d->gpu_capacity = count;
            d->drawable = 0;
            d->attributes_follow_batches = true;
            d->attributes_dirty = false;
            d->order_dirty = false;
        }
        d->uploaded = 0;
        d->gpu_generation = generation;
    }
    // The density image is made on the CPU from the cell-order data: while it is shown
    // and every position is on the GPU, recolourings and reorders wait on the CPU until
    // the points are drawn again (only the density texture is uploaded meanwhile).
    if (hold && d->uploaded == count && !d->attributes_follow_batches) return false;
    const bool permuted = !d->order_identity && static_cast<std::int64_t>(d->draw_indices.size()) == count;
    // A new draw order rewrites every position once, in that order, within this frame (a
    // buffer half in one order and half in another would pair positions with the wrong
    // colours), and the attributes with them.
    bool upload_all = false;
    if (d->order_dirty) {
        d->order_dirty = false;
        if (count > 0) {
            d->uploaded = 0;
            upload_all = true;
            ++d->stats.position_reorders;
            if (!d->attributes_follow_batches) d->attributes_dirty = true;
        }
    }
    if (d->attributes_dirty && count > 0 && static_cast<std::int64_t>(attributes.size()) == count) {
        // A colouring or filter change: rewrite the whole attribute buffer, nothing else.
        const PointAttribute* source = attributes.data();
        if (permuted) {
            d->attribute_staging.resize(static_cast<std::size_t>(count));
            gather_in_draw_order(attributes, d->draw_indices, d->attribute_staging);
            source = d->attribute_staging.data();
        }
        gl->glBindBuffer(GL_ARRAY_BUFFER, d->attribute_buffer);
        write_array_buffer(gl, d->buffer_writer.get(), d->attribute_buffer, 0,
                           static_cast<GLsizeiptr>(count) * sizeof(PointAttribute), source);
        d->stats.attribute_bytes += count * static_cast<std::int64_t>(sizeof(PointAttribute));
        d->attributes_follow_batches = false;
    }
    d->attributes_dirty = false;
    bool wrote_positions = false;
    if (d->uploaded < count) {
        QElapsedTimer budget;
        budget.start();
        do {
            const std::int64_t begin = d->uploaded;
            const std::int64_t batch = std::min(batch_size, count - begin);
            const float* batch_positions = positions.data() + 2 * begin;
            const PointAttribute* batch_attributes = attributes.data() + begin;
            if (permuted) {
                const auto order = std::span<const std::uint32_t>(d->draw_indices)
                                       .subspan(static_cast<std::size_t>(begin), static_cast<std::size_t>(batch));
                d->position_staging.resize(static_cast<std::size_t>(batch) * 2);
                gather_in_draw_order(positions, order, d->position_staging);
                batch_positions = d->position_staging.data();
                if (d->attributes_follow_batches) {
                    d->attribute_staging.resize(static_cast<std::size_t>(batch));
                    gather_in_draw_order(attributes, order, d->attribute_staging);
                    batch_attributes = d->attribute_staging.data();
                }
            }
            gl->glBindBuffer(GL_ARRAY_BUFFER, d->position_buffer);
            write_array_buffer(gl, d->buffer_writer.get(), d->position_buffer, static_cast<GLintptr>(begin) * 2 * sizeof(float),
                               static_cast<GLsizeiptr>(batch) * 2 * sizeof(float), batch_positions);
            d->stats.position_bytes += batch * 2 * static_cast<std::int64_t>(sizeof(float));
            ++d->stats.position_batches;
            if (d->attributes_follow_batches) {
                gl->glBindBuffer(GL_ARRAY_BUFFER, d->attribute_buffer);
                write_array_buffer(gl, d->buffer_writer.get(), d->attribute_buffer,
                                   static_cast<GLintptr>(begin) * sizeof(PointAttribute),
                                   static_cast<GLsizeiptr>(batch) * sizeof(PointAttribute), batch_attributes);
                d->stats.attribute_bytes += batch * static_cast<std::int64_t>(sizeof(PointAttribute));
            }
            d->uploaded = begin + batch;
            d->drawable = std::max(d->drawable, d->uploaded);
        } while (d->uploaded < count &&
                 (upload_all || (budget_ms > 0.0 && static_cast<double>(budget.nsecsElapsed()) * 1e-6 < budget_ms)));
        if (d->uploaded == count) d->attributes_follow_batches = false;
        wrote_positions = true;
    }
    gl->glBindBuffer(GL_ARRAY_BUFFER, 0);
    return wrote_positions;
}

// ---- scene ------------------------------------------------------------------------------------

void PlotRenderer::markDensityDirty() { d->density_dirty = true; }
QSize PlotRenderer::sceneSize() const { return d->scene_size; }

void PlotRenderer::renderScene(const SceneRequest& request, std::span<const float> positions,
                               std::span<const PointAttribute> attributes, PlotModel::ColorKind kind, Colormap colormap,
                               bool refresh_due, bool* resampled) {
    if (resampled) *resampled = false;
    ensure_color_target(d->gl, d->scene_framebuffer, d->scene_texture, d->scene_size, request.size);
    if (request.density) renderDensity(request, positions, attributes, kind, colormap, refresh_due, resampled);
    else renderPoints(request);
    d->gl->glDisable(GL_SCISSOR_TEST);
    ++d->stats.scene_renders;
}

/// Keeps the cells out of the reserved strip (the legend's): however the view is panned
/// or zoomed, no cell is drawn under the legend.
void PlotRenderer::beginReservedClip(const SceneRequest& request) const {
    if (request.reserved_right_px <= 0.0) return;
    const int keep = std::max(1, d->scene_size.width() - static_cast<int>(std::lround(request.reserved_right_px)));
    d->gl->glEnable(GL_SCISSOR_TEST);
    d->gl->glScissor(0, 0, keep, d->scene_size.height());
}

void PlotRenderer::renderPoints(const SceneRequest& request) {
    QOpenGLExtraFunctions* gl = d->gl;
    gl->glBindFramebuffer(GL_FRAMEBUFFER, d->scene_framebuffer);
    gl->glViewport(0, 0, d->scene_size.width(), d->scene_size.height());
    clear_to(gl, request.background);
    beginReservedClip(request);
    d->stats.drawn_points = 0;
    if (d->drawable == 0) return;
    const float size = request.point_px;
    if (!d->gles) gl->glEnable(GL_PROGRAM_POINT_SIZE);
    if (request.opacity < 1.0f) {
        gl->glEnable(GL_BLEND);
        gl->glBlendFuncSeparate(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA, GL_ONE, GL_ONE_MINUS_SRC_ALPHA);
    } else {
        gl->glDisable(GL_BLEND);
    }
    const auto transform = request.view.ndc_scale_offset();
    d->points_program.bind();
    gl->glUniform4f(d->points_program.uniformLocation("u_transform"), transform[0], transform[1], transform[2],
                    transform[3]);
    gl->glUniform1f(d->points_program.uniformLocation("u_point_size"), size);
    gl->glUniform1f(d->points_program.uniformLocation("u_opacity"), request.opacity);
    gl->glUniform1i(d->points_program.uniformLocation("u_round"), size >= 3.0f ? 1 : 0);
    gl->glBindVertexArray(d->vertex_array);
    gl->glDrawArrays(GL_POINTS, 0, static_cast<GLsizei>(d->drawable));  // the buffers are in draw order
    gl->glBindVertexArray(0);
    d->points_program.release();
    gl->glDisable(GL_BLEND);
    d->stats.drawn_points = d->drawable;
}

void PlotRenderer::renderDensity(const SceneRequest& request, std::span<const float> positions,
                                 std::span<const PointAttribute> attributes, PlotModel::ColorKind kind, Colormap colormap,
                                 bool refresh_due, bool* resampled) {
    QOpenGLExtraFunctions* gl = d->gl;
    const ViewTransform& view = request.view;
    const int downsample = d->density_downsample;
    const double scale = view.pixels_per_unit() * request.ratio;  // device px per world unit
    const QSize screen = d->scene_size;
    // The aggregation covers the view plus a margin on every side, in world space: a pan
    // that stays inside it only moves the resolve pass's lookup (no pass over the cells).
    const QSize size(static_cast<int>(std::ceil(screen.width() * (1.0 + 2.0 * k_density_margin) / downsample)),
                     static_cast<int>(std::ceil(screen.height() * (1.0 + 2.0 * k_density_margin) / downsample)));
    // Screen pixel p (device px, GL orientation) reads aggregation texel
    // (p * lookup_scale + offset) / downsample: lookup_scale is the aggregation's scale
    // over the view's (1 unless a zoom has not been re-aggregated yet).
    const auto lookup = [&](Vec2 center, double aggregated_scale) {
        const double ratio_of_scales = aggregated_scale / scale;
        return std::array<double, 3>{size.width() * downsample / 2.0 - screen.width() / 2.0 * ratio_of_scales +
                                         (view.center().x - center.x) * aggregated_scale,
                                     size.height() * downsample / 2.0 - screen.height() / 2.0 * ratio_of_scales +
                                         (view.center().y - center.y) * aggregated_scale,
                                     ratio_of_scales};
    };
    const auto covers_screen = [&](const std::array<double, 3>& map) {
        return map[0] >= 0.0 && map[1] >= 0.0 && map[0] + screen.width() * map[2] <= size.width() * downsample &&
               map[1] + screen.height() * map[2] <= size.height() * downsample;
    };
    bool reuse = !d->density_dirty && d->density_size == size && d->density_scale > 0.0 &&
                 covers_screen(lookup(d->density_center, d->density_scale));
    if (reuse && d->density_scale != scale) {
        // A zoom: show the current aggregation resampled at once and re-aggregate when the
        // zooming pauses (each wheel step would otherwise cost a pass over every cell).
        if (refresh_due) reuse = false;
        else if (resampled) *resampled = true;
    }
    ensure_rgba8_texture(gl, d->density_texture, d->density_size, size);
    if (!reuse) {
        d->density_center = view.center();
        d->density_scale = scale;
        // Binned on the CPU from the positions and attributes in cell order (the GPU
        // buffers' draw order plays no part: the image is made of sums), then uploaded as
        // the finished picture.
        QElapsedTimer timer;
        timer.start();
        const DensityRaster raster{size.width(), size.height(), d->density_center, scale / downsample};
        const DensityColoring coloring = kind == PlotModel::ColorKind::Categorical  ? DensityColoring::MeanColor
                                         : kind == PlotModel::ColorKind::Continuous ? DensityColoring::MeanValue
                                                                                    : DensityColoring::Count;
        const std::size_t cells = std::min(attributes.size(), positions.size() / 2);
        aggregate_density(positions.first(2 * cells), attributes.first(cells), raster, coloring, colormap,
                          request.background, d->density_pixels, d->density_scratch);
        gl->glBindTexture(GL_TEXTURE_2D, d->density_texture);
        gl->glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
        gl->glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, size.width(), size.height(), GL_RGBA, GL_UNSIGNED_BYTE,
                            d->density_pixels.data());
        d->stats.last_density_ms = static_cast<double>(timer.nsecsElapsed()) * 1e-6;
        d->density_dirty = false;
        ++d->stats.density_aggregations;
        d->stats.drawn_points = static_cast<std::int64_t>(cells);
    }
    const auto map = lookup(d->density_center, d->density_scale);
    gl->glBindFramebuffer(GL_FRAMEBUFFER, d->scene_framebuffer);
    gl->glViewport(0, 0, screen.width(), screen.height());
    if (request.reserved_right_px > 0.0) {
        // The full-screen pass covers every pixel: the strip keeps the background.
        clear_to(gl, request.background);
        beginReservedClip(request);
    }
    gl->glDisable(GL_BLEND);
    d->resolve_program.bind();
    gl->glActiveTexture(GL_TEXTURE0);
    gl->glBindTexture(GL_TEXTURE_2D, d->density_texture);
    gl->glUniform1i(d->resolve_program.uniformLocation("u_image"), 0);
    gl->glUniform1i(d->resolve_program.uniformLocation("u_downsample"), downsample);
    gl->glUniform2f(d->resolve_program.uniformLocation("u_offset"), static_cast<float>(map[0]), static_cast<float>(map[1]));
    gl->glUniform1f(d->resolve_program.uniformLocation("u_lookup_scale"), static_cast<float>(map[2]));
    gl->glBindVertexArray(d->empty_vertex_array);
    gl->glDrawArrays(GL_TRIANGLES, 0, 3);
    gl->glBindVertexArray(0);
    d->resolve_program.release();
}

void PlotRenderer::blitScene(unsigned int framebuffer) const {
    QOpenGLExtraFunctions* gl = d->gl;
    gl->glBindFramebuffer(GL_READ_FRAMEBUFFER, d->scene_framebuffer);
    gl->glBindFramebuffer(GL_DRAW_FRAMEBUFFER, framebuffer);
    gl->glBlitFramebuffer(0, 0, d->scene_size.width(), d->scene_size.height(), 0, 0, d->scene_size.width(),
                          d->scene_size.height(), GL_COLOR_BUFFER_BIT, GL_NEAREST);
    gl->glBindFramebuffer(GL_FRAMEBUFFER, framebuffer);
}

QImage PlotRenderer::renderImage(const SceneRequest& request, std::span<const float> positions,
                                 std::span<const PointAttribute> attributes, PlotModel::ColorKind kind, Colormap colormap) {
    QOpenGLExtraFunctions* gl = d->gl;
    // Swap in a target of the image's size; buffers, colours and order are shared.
    const GLuint saved_framebuffer = d->scene_framebuffer, saved_texture = d->scene_texture;
    const QSize saved_size = d->scene_size;
    d->scene_framebuffer = d->scene_texture = 0;
    d->scene_size = QSize();
    d->density_dirty = true;
    renderScene(request, positions, attributes, kind, colormap, true, nullptr);

    QImage image(request.size, QImage::Format_RGBA8888);
    gl->glBindFramebuffer(GL_READ_FRAMEBUFFER, d->scene_framebuffer);
    gl->glPixelStorei(GL_PACK_ALIGNMENT, 4);
    gl->glReadPixels(0, 0, request.size.width(), request.size.height(), GL_RGBA, GL_UNSIGNED_BYTE, image.bits());
    gl->glDeleteFramebuffers(1, &d->scene_framebuffer);
    gl->glDeleteTextures(1, &d->scene_texture);

    d->scene_framebuffer = saved_framebuffer;
    d->scene_texture = saved_texture;
    d->scene_size = saved_size;
    d->density_size = QSize();  // the density target was sized for the image
    d->density_dirty = true;
    return image;
}

}  // namespace fathom::ui
