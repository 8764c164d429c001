// PlotView's buffer writes through an accelerator's GL interop (core/backend/
// GlBufferWriter.hpp): with a stand-in writer (GL calls of its own, counting writes)
// and with one that declines every write, the picture equals the plain GL upload's;
// with the CUDA-GL writer (gpu/gl_interop.hpp) where the GL context is on a CUDA GPU
// (skipped otherwise, e.g. llvmpipe under Xvfb, which is every run so far).
#include <gtest/gtest.h>

#include <QOpenGLContext>
#include <QOpenGLExtraFunctions>
#include <QTest>
#include <random>

#include "core/backend/GlBufferWriter.hpp"
#include "ui/PlotView.hpp"
#include "ui_test_support.hpp"
#if defined(FATHOM_HAVE_CUDA_GL)
#include "gpu/gl_interop.hpp"
#endif

namespace fathom::ui {
namespace {

/// Counts writes; writes through GL itself (accept) or declines every write.
class StandInWriter final : public GlBufferWriter {
public:
    StandInWriter(bool accept, int* writes, std::unique_ptr<GlBufferWriter> inner = nullptr)
        : m_accept(accept), m_writes(writes), m_inner(std::move(inner)) {}
    bool write(unsigned int buffer, std::size_t offset, const void* source, std::size_t bytes) noexcept override {
        ++*m_writes;
        if (!m_accept) return false;
        if (m_inner) return m_inner->write(buffer, offset, source, bytes);
        QOpenGLExtraFunctions* gl = QOpenGLContext::currentContext()->extraFunctions();
        gl->glBindBuffer(GL_ARRAY_BUFFER, buffer);
        gl->glBufferSubData(GL_ARRAY_BUFFER, static_cast<GLintptr>(offset), static_cast<GLsizeiptr>(bytes), source);
        return true;
    }

private:
    bool m_accept;
    int* m_writes;
    std::unique_ptr<GlBufferWriter> m_inner;
};

class PlotViewInteropTest : public ::testing::Test {
protected:
    void SetUp() override { FATHOM_REQUIRE_GL(); }
    void TearDown() override { set_gl_buffer_writer_factory({}); }

    /// A fresh view (its GL context asks the installed factory) with 3 x 4000 coloured
    /// points, every position uploaded.
    static QImage draw() {
        PlotView view;
        view.resize(300, 300);
        view.setUploadBudgetMs(1e9);
        view.setOverlayVisible(false);  // the points only: the overlay's text follows frame timing
        view.show();
        EXPECT_TRUE(QTest::qWaitForWindowExposed(&view));
        std::mt19937 generator(3);
        std::normal_distribution<float> noise(0.0f, 1.0f);
        std::vector<float> xy;
        std::vector<std::int32_t> codes;
        for (int cell = 0; cell < 12000; ++cell) {
            xy.push_back(static_cast<float>(cell % 3) * 8.0f + noise(generator));
            xy.push_back(static_cast<float>(cell % 2) * 5.0f + noise(generator));
            codes.push_back(cell % 3);
        }
        view.setPositions(xy);
        view.setCategorical("cluster", codes, {"a", "b", "c"}, {{230, 20, 20, 255}, {20, 200, 40, 255}, {30, 60, 240, 255}});
        QImage image;
        for (int frame = 0; frame < 64 && !view.uploadComplete(); ++frame) image = view.grabFramebuffer();
        EXPECT_TRUE(view.uploadComplete());
        return view.grabFramebuffer();
    }
};

TEST_F(PlotViewInteropTest, AWriterReceivesThePositionAndAttributeUploads) {
    const QImage plain = draw();
    const ui::Rgba8 background = fathom::test::pixel_at(plain, 0, 0);
    EXPECT_GT(fathom::test::count_pixels_not(plain, background), 2000) << "the points are drawn";
    int writes = 0;
    set_gl_buffer_writer_factory([&writes] { return std::make_unique<StandInWriter>(true, &writes); });
    const QImage written = draw();
    EXPECT_GE(writes, 2) << "positions and colour attributes go through the writer";
    EXPECT_EQ(written, plain);
}

TEST_F(PlotViewInteropTest, ADecliningWriterFallsBackToGl) {
    const QImage plain = draw();
    int writes = 0;
    set_gl_buffer_writer_factory([&writes] { return std::make_unique<StandInWriter>(false, &writes); });
    const QImage declined = draw();
    EXPECT_GE(writes, 2);
    EXPECT_EQ(declined, plain) << "every declined write was done by glBufferSubData";
}

TEST_F(PlotViewInteropTest, CudaGlWriterDrawsThePlainPicture) {
#if defined(FATHOM_HAVE_CUDA_GL)
    const QImage plain = draw();
    int writes = 0;
    bool available = false;
    set_gl_buffer_writer_factory([&]() -> std::unique_ptr<GlBufferWriter> {
        auto cuda = gpu::make_gl_buffer_writer();
        available = cuda != nullptr;
        if (!cuda) return nullptr;
        return std::make_unique<StandInWriter>(true, &writes, std::move(cuda));
    });
    const QImage interop = draw();
    if (!available) GTEST_SKIP() << "the GL context is not on a CUDA device (cudaGLGetDevices finds none)";
    EXPECT_GE(writes, 2);
    EXPECT_EQ(interop, plain);
#else
    GTEST_SKIP() << "this build has no CUDA-GL interop (needs FATHOM_WITH_CUDA and FATHOM_WITH_GUI)";
#endif
}

}  // namespace
}  // namespace fathom::ui
