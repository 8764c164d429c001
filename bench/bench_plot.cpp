// Frame times of PlotView against a raw GL_POINTS baseline, measured in the same run
// on the same GL (llvmpipe under Xvfb here). Run:
//   xvfb-run -a -s "-screen 0 1400x1100x24" build/bench/bench_plot [--points 1000000,1300000]
//       [--frames 7] [--size 1280x1024] [--point-size 2] [--dataset FILE --gene NAME]
// Every figure is the median of --frames frames, each ended with glFinish (so the GL
// work is inside the measurement). Compositing of the widget into the window is
// excluded for both the baseline and PlotView.
//
// Rows:
//   raw GL_POINTS        one VBO of positions, one colour, glDrawArrays: the baseline
//   point mode           PlotView redrawing every cell (a view change) with colours,
//                        cached scene blit and ImGui overlay; the buffers are in draw
//                        order (a random order rewrote the positions once), so both
//                        orders are one glDrawArrays
//   density, zoom        wheel steps: the last aggregation resampled at the new scale (the
//                        pass over every cell waits until zooming pauses, 150 ms)
//   density, pan         drags inside the aggregation margin: resolve pass only
//   density, still       a frame with no view change: the cached scene blitted
//   colour by gene       new per-cell values -> attribute buffer rewrite -> frame on screen
//                        (CPU colour mapping + upload + draw; the engine query is separate;
//                        in density mode every cell is binned again on the CPU, oneTBB, and
//                        one texture uploaded: no pass of the GL over the cells)
//   with --dataset FILE  Engine::gene_values on the CPU shards: the first read of a gene
//                        (from the file's shards) and a repeated query (cached column), then
//                        query + recolour + frame at the dataset's size
#include <QApplication>
#include <QElapsedTimer>
#include <QOpenGLExtraFunctions>
#include <QOpenGLShaderProgram>
#include <QOpenGLWidget>
#include <QSurfaceFormat>
#include <QWindow>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/engine/Engine.hpp"
#include "bench/gl_bench_support.hpp"
#include "ui/PlotView.hpp"

namespace {

using fathom::ui::PlotView;

using fathom::bench::median;
using fathom::bench::wait_exposed;

// The baseline: the least a GL_POINTS renderer can do per frame.
class RawPointsWidget : public QOpenGLWidget {
public:
    RawPointsWidget() { setFormat(PlotView::surfaceFormat()); }
    void setPoints(const std::vector<float>* xy, float point_size, std::array<float, 4> transform) {
        m_xy = xy;
        m_point_size = point_size;
        m_transform = transform;
        m_dirty = true;
    }
    double frame() {
        makeCurrent();
        QElapsedTimer timer;
        timer.start();
        auto* gl = context()->extraFunctions();
        gl->glBindFramebuffer(GL_FRAMEBUFFER, defaultFramebufferObject());
        paintGL();
        gl->glFinish();
        const double elapsed = static_cast<double>(timer.nsecsElapsed()) * 1e-6;
        doneCurrent();
        return elapsed;
    }

protected:
    void initializeGL() override {
        auto* gl = context()->extraFunctions();
        const char* vertex =
            "#version 330 core\n"
            "layout(location = 0) in vec2 a_position;\n"
            "uniform vec4 u_transform;\n"
            "uniform float u_point_size;\n"
            "void main() { gl_PointSize = u_point_size;\n"
            "  gl_Position = vec4(a_position * u_transform.xy + u_transform.zw, 0.0, 1.0); }\n";
        const char* fragment =
            "#version 330 core\n"
            "out vec4 o_color;\n"
            "void main() { o_color = vec4(0.6, 0.7, 0.8, 1.0); }\n";
        m_program.addShaderFromSourceCode(QOpenGLShader::Vertex, vertex);
        m_program.addShaderFromSourceCode(QOpenGLShader::Fragment, fragment);
        m_program.link();
        gl->glGenVertexArrays(1, &m_vertex_array);
        gl->glGenBuffers(1, &m_buffer);
        gl->glBindVertexArray(m_vertex_array);
        gl->glBindBuffer(GL_ARRAY_BUFFER, m_buffer);
        gl->glEnableVertexAttribArray(0);
        gl->glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 0, nullptr);
        gl->glBindVertexArray(0);
    }
    void paintGL() override {
        auto* gl = context()->extraFunctions();
        if (m_dirty && m_xy) {
            gl->glBindBuffer(GL_ARRAY_BUFFER, m_buffer);
            gl->glBufferData(GL_ARRAY_BUFFER, static_cast<GLsizeiptr>(m_xy->size() * sizeof(float)), m_xy->data(),
                             GL_STATIC_DRAW);
            m_dirty = false;
        }
        gl->glViewport(0, 0, width(), height());
        gl->glClearColor(0.1f, 0.1f, 0.12f, 1.0f);
        gl->glClear(GL_COLOR_BUFFER_BIT);
        if (!m_xy) return;
        gl->glEnable(0x8642);  // GL_PROGRAM_POINT_SIZE
        m_program.bind();
        gl->glUniform4f(m_program.uniformLocation("u_transform"), m_transform[0], m_transform[1], m_transform[2],
                        m_transform[3]);
        gl->glUniform1f(m_program.uniformLocation("u_point_size"), m_point_size);
        gl->glBindVertexArray(m_vertex_array);
        gl->glDrawArrays(GL_POINTS, 0, static_cast<GLsizei>(m_xy->size() / 2));
        gl->glBindVertexArray(0);
        m_program.release();
    }

private:
    const std::vector<float>* m_xy = nullptr;
    float m_point_size = 2.0f;
    std::array<float, 4> m_transform{1, 1, 0, 0};
    bool m_dirty = true;
    QOpenGLShaderProgram m_program;
    GLuint m_vertex_array = 0, m_buffer = 0;
};

// A UMAP-like layout: 14 Gaussian clusters of different sizes and spreads.
void make_embedding(std::int64_t cells, std::vector<float>& xy, std::vector<std::int32_t>& codes) {
    std::mt19937 generator(12345);
    std::uniform_real_distribution<float> center(-12.0f, 12.0f), spread(0.4f, 1.6f);
    const int clusters = 14;
    std::vector<std::array<float, 3>> shapes(clusters);
    for (auto& shape : shapes) shape = {center(generator), center(generator), spread(generator)};
    std::normal_distribution<float> noise(0.0f, 1.0f);
    std::discrete_distribution<int> pick({10, 9, 8, 8, 7, 6, 6, 5, 4, 3, 3, 2, 1, 1});
    xy.resize(static_cast<std::size_t>(cells) * 2);
    codes.resize(static_cast<std::size_t>(cells));
    for (std::int64_t cell = 0; cell < cells; ++cell) {
        const int cluster = pick(generator);
        codes[cell] = cluster;
        xy[2 * cell] = shapes[cluster][0] + shapes[cluster][2] * noise(generator);
        xy[2 * cell + 1] = shapes[cluster][1] + shapes[cluster][2] * noise(generator);
    }
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::int64_t> sizes{1000000, 1300000};
    int frames = 7;
    int width = 1280, height = 1024;
    float point_size = 2.0f;
    std::string dataset, gene;
    for (int index = 1; index < argc; ++index) {
        const std::string argument = argv[index];
        auto next = [&]() -> std::string { return index + 1 < argc ? argv[++index] : std::string(); };
        if (argument == "--points") {
            sizes.clear();
            std::string list = next();
            for (std::size_t start = 0; start < list.size();) {
                const std::size_t end = list.find(',', start);
                sizes.push_back(std::stoll(list.substr(start, end - start)));
                start = end == std::string::npos ? list.size() : end + 1;
            }
        } else if (argument == "--frames") {
            frames = std::max(1, std::stoi(next()));
        } else if (argument == "--size") {
            const std::string text = next();
            std::sscanf(text.c_str(), "%dx%d", &width, &height);
        } else if (argument == "--point-size") {
            point_size = std::stof(next());
        } else if (argument == "--dataset") {
            dataset = next();
        } else if (argument == "--gene") {
            gene = next();
        } else {
            std::fprintf(stderr, "bench_plot: unknown argument %s\n", argument.c_str());
            return 2;
        }
    }
    QSurfaceFormat::setDefaultFormat(PlotView::surfaceFormat());
    QApplication app(argc, argv);

    PlotView plot;
    plot.resize(width, height);
    plot.show();
    RawPointsWidget raw;
    raw.resize(width, height);
    raw.show();
    if (!wait_exposed(plot) || !wait_exposed(raw)) {
        std::fprintf(stderr, "bench_plot: windows not exposed (is there a display?)\n");
        return 1;
    }
    std::printf("bench_plot: %dx%d viewport, point size %.1f px, median of %d frames, GL: %s\n", width, height,
                point_size, frames, reinterpret_cast<const char*>(plot.context()->functions()->glGetString(GL_RENDERER)));
    for (const std::int64_t cells : sizes) {
        std::vector<float> xy;
        std::vector<std::int32_t> codes;
        make_embedding(cells, xy, codes);
        std::vector<std::string> categories;
        for (int cluster = 0; cluster < 14; ++cluster) categories.push_back(std::to_string(cluster));
        const std::string tag = std::to_string(cells / 1000) + "k";

        plot.setPositions(xy);
        plot.setCategorical(QStringLiteral("cluster"), codes, categories, fathom::ui::default_category_colors(14));
        plot.setPointSize(point_size);
        plot.setDensityMode(PlotView::DensityMode::Off);
        QElapsedTimer upload;
        upload.start();
        int upload_frames = 0;
        while (!plot.uploadComplete() && upload_frames < 1000) {
            plot.renderFrameForBenchmark(false);
            ++upload_frames;
        }
        const double upload_ms = static_cast<double>(upload.nsecsElapsed()) * 1e-6;

        raw.setPoints(&xy, point_size, plot.transform().ndc_scale_offset());
        raw.frame();  // uploads
        // Each PlotView frame is paired with a baseline frame right before it, so that load
        // from other processes hits both alike; ratios are medians of the pairs.
        struct Series {
            std::vector<double> ours, baseline, ratio;
            void add(double mine, double base) {
                ours.push_back(mine);
                baseline.push_back(base);
                ratio.push_back(mine / base);
            }
        };
        auto paired = [&](const std::function<double()>& ours) {
            Series series;
            for (int frame = 0; frame < frames; ++frame) {
                const double base = raw.frame();
                series.add(ours(), base);
            }
            return series;
        };
        const Series file_order = paired([&] { return plot.renderFrameForBenchmark(true); });
        plot.setDrawOrder(fathom::ui::DrawOrder::Random, 1);
        plot.renderFrameForBenchmark(true);
        const Series random_order = paired([&] { return plot.renderFrameForBenchmark(true); });
        plot.setDrawOrder(fathom::ui::DrawOrder::File, 0);

        // Colour by a gene: sparse values (70% zeros), as a gene column looks.
        std::mt19937 generator(7);
        std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
        std::vector<std::vector<float>> genes(2);
        for (auto& values : genes) {
            values.resize(static_cast<std::size_t>(cells));
            for (float& value : values) value = uniform(generator) < 0.7f ? 0.0f : 4.0f * uniform(generator);
        }
        int gene_index = 0;
        std::vector<double> gene_cpu;
        auto colour_by_gene = [&] {
            QElapsedTimer timer;
            timer.start();
            plot.setContinuous(QStringLiteral("gene"), genes[static_cast<std::size_t>(gene_index++ % 2)]);
            gene_cpu.push_back(static_cast<double>(timer.nsecsElapsed()) * 1e-6);
            return gene_cpu.back() + plot.renderFrameForBenchmark(false);
        };
        const Series gene_points = paired(colour_by_gene);

        plot.setDensityMode(PlotView::DensityMode::On);
        plot.setCategorical(QStringLiteral("cluster"), codes, categories, fathom::ui::default_category_colors(14));
        plot.renderFrameForBenchmark(false);
        const fathom::ui::ViewTransform home = plot.transform();
        int step = 0;
        auto zoom_frame = [&] {  // a new scale: resampled now, re-aggregated when zooming pauses
            fathom::ui::ViewTransform view = home;
            view.zoom_at({width / 2.0, height / 2.0}, (step++ % 2) ? 1.05 : 1.0 / 1.05);
            plot.setTransform(view);
            return plot.renderFrameForBenchmark(false);
        };
        auto pan_frame = [&] {  // a drag: resolve pass only while inside the margin
            fathom::ui::ViewTransform view = home;
            view.pan_pixels((step++ % 2) ? 12.0 : -12.0, 7.0);
            plot.setTransform(view);
            return plot.renderFrameForBenchmark(false);
        };
        const auto aggregations_before = plot.stats().density_aggregations;
        const Series density_zoom = paired(zoom_frame);
        plot.setTransform(home);
        plot.renderFrameForBenchmark(false);
        const auto aggregations_mid = plot.stats().density_aggregations;
        const Series density_pan = paired(pan_frame);
        const auto pan_aggregations = plot.stats().density_aggregations - aggregations_mid;
        const Series density_still = paired([&] { return plot.renderFrameForBenchmark(false); });
        std::vector<double> density_binning;
        const Series gene_density = paired([&] {
            const double total = colour_by_gene();
            density_binning.push_back(plot.stats().last_density_ms);
            return total;
        });
        (void)aggregations_before;

        auto report = [&](const std::string& what, const Series& series, bool ratio) {
            if (ratio)
                std::printf("%-46s %8.1f ms   baseline %8.1f ms   ratio %.2fx\n", (tag + " " + what).c_str(),
                            median(series.ours), median(series.baseline), median(series.ratio));
            else
                std::printf("%-46s %8.1f ms   (baseline in the same run %8.1f ms)\n", (tag + " " + what).c_str(),
                            median(series.ours), median(series.baseline));
        };
        std::printf("%-46s %8.1f ms\n", (tag + " first upload (" + std::to_string(upload_frames) + " frames)").c_str(),
                    upload_ms);
        report("point mode, file order", file_order, true);
        report("point mode, random order", random_order, true);
        report("density, zoom (resampled)", density_zoom, false);
        report("density, pan (resolve only)", density_pan, false);
        report("density, still frame", density_still, false);
        report("colour by gene -> frame, points", gene_points, true);
        report("colour by gene -> frame, density", gene_density, false);
        std::printf("%-46s %8.1f ms   (attribute fill on the CPU)\n", (tag + " colour by gene, CPU part").c_str(),
                    median(gene_cpu));
        std::printf("%-46s %8.1f ms   (of the density frame: CPU binning + texture upload)\n",
                    (tag + " colour by gene, density binning").c_str(), median(density_binning));
        if (pan_aggregations != 0) std::printf("note: %lld pan frames re-aggregated\n", static_cast<long long>(pan_aggregations));
        plot.setDensityMode(PlotView::DensityMode::Off);
        std::fflush(stdout);
    }

    if (!dataset.empty()) {
        // The engine side of "colour by gene": Engine::gene_values on the CPU shards.
        fathom::Engine engine;
        const auto opened = engine.open(dataset).wait();
        if (opened.state != fathom::JobState::Succeeded) {
            std::fprintf(stderr, "bench_plot: open %s failed: %s\n", dataset.c_str(), opened.message.c_str());
            return 3;
        }
        const auto snapshot = engine.snapshot();
        const std::int64_t num_cells = snapshot->obs->num_rows();
        // Genes queried: --gene, else the first few var names. Each one's first query reads
        // its column from the shards; the engine caches it, so a repeat comes from memory.
        std::vector<std::string> query_genes;
        if (!gene.empty()) query_genes.push_back(gene);
        else
            for (std::size_t index = 0; index < std::min<std::size_t>(5, snapshot->var->index().size()); ++index)
                query_genes.push_back(snapshot->var->index()[index]);
        auto query = [&](const std::string& name, std::shared_ptr<const fathom::GeneValues>* out) {
            QElapsedTimer timer;
            timer.start();
            auto values = engine.gene_values(name).wait();
            const double elapsed = static_cast<double>(timer.nsecsElapsed()) * 1e-6;
            if (!values) {
                std::fprintf(stderr, "bench_plot: gene_values(%s) failed\n", name.c_str());
                std::exit(3);
            }
            if (out) *out = values;
            return elapsed;
        };
        std::vector<double> first_ms, cached_ms;
        for (const std::string& name : query_genes) first_ms.push_back(query(name, nullptr));
        for (const std::string& name : query_genes) cached_ms.push_back(query(name, nullptr));
        // Query + recolour + frame at the dataset's size, density mode as the app chooses.
        std::vector<float> xy;
        std::vector<std::int32_t> codes;
        make_embedding(num_cells, xy, codes);
        plot.setPositions(xy);
        plot.setDensityMode(PlotView::DensityMode::Auto);
        while (!plot.uploadComplete()) plot.renderFrameForBenchmark(false);
        std::vector<double> total_ms;
        for (int trial = 0; trial < std::max(3, frames); ++trial) {
            std::shared_ptr<const fathom::GeneValues> values;
            const double elapsed = query(query_genes[static_cast<std::size_t>(trial) % query_genes.size()], &values);
            QElapsedTimer timer;
            timer.start();
            plot.setContinuous(QString::fromStdString(values->gene), values->values);
            total_ms.push_back(elapsed + static_cast<double>(timer.nsecsElapsed()) * 1e-6 +
                               plot.renderFrameForBenchmark(false));
        }
        const std::string where = std::to_string(num_cells) + " cells, " + std::to_string(query_genes.size()) + " genes";
        std::printf("%-56s %9.1f ms\n", ("engine gene_values, first read (" + where + ")").c_str(), median(first_ms));
        std::printf("%-56s %9.1f ms\n", ("engine gene_values, cached column (" + where + ")").c_str(), median(cached_ms));
        std::printf("%-56s %9.1f ms   (%s mode)\n", "cached query + attribute rewrite + frame", median(total_ms),
                    plot.densityActive() ? "density" : "point");
    }
    return 0;
}
