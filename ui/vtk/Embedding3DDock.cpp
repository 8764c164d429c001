#include "ui/vtk/Embedding3DDock.hpp"

#include "ui/PlotView.hpp"
#include "ui/embedding_3d.hpp"
#include "ui/vtk/Embedding3DView.hpp"

namespace fathom::ui {

Embedding3DDock::Embedding3DDock(PlotView* plot, QWidget* parent)
    : QDockWidget(tr("3-D view"), parent), m_plot(plot), m_view(new Embedding3DView(this)) {
    setObjectName(QStringLiteral("view3dDock"));
    m_view->setObjectName(QStringLiteral("view3d"));
    m_view->setToolTip(tr("Left drag rotates, right drag or wheel zooms, middle drag pans; R fits the view"));
    setWidget(m_view);
    connect(m_plot, &PlotView::attributesChanged, this, &Embedding3DDock::pushAttributes);
    // The plot repaints after a theme change: take its background then.
    connect(m_plot, &PlotView::frameRendered, this, [this] {
        if (!(m_view->backgroundColor() == m_plot->backgroundColor())) m_view->setBackgroundColor(m_plot->backgroundColor());
    });
    m_view->setBackgroundColor(m_plot->backgroundColor());
}

Embedding3DView* Embedding3DDock::view() const { return m_view; }
QString Embedding3DDock::sourceKey() const { return m_key; }

void Embedding3DDock::setSnapshot(const AnalysisSnapshot& snapshot) {
    const std::int64_t num_cells = snapshot.obs ? snapshot.obs->num_rows() : 0;
    auto picked = pick_3d_embedding(snapshot.obsm, num_cells);
    if (!picked) {
        showSource(QString(), {});
        return;
    }
    showSource(QString::fromStdString(picked->key), std::move(picked->xyz));
}

void Embedding3DDock::setFrame(const DenseMatrix<float>& coordinates) {
    if (coordinates.cols() != 3) return;
    showSource(QStringLiteral("X_umap"), first_three_columns(coordinates));
}

void Embedding3DDock::showSource(const QString& key, std::vector<float> xyz) {
    const bool new_source = key != m_key;
    m_key = key;
    m_view->setSourceName(key);
    m_view->setPositions(std::move(xyz), new_source);
    setWindowTitle(key.isEmpty() ? tr("3-D view (needs X_pca, or UMAP with n_components = 3)")
                   : key == QStringLiteral("X_umap") ? tr("3-D view: X_umap")
                                                     : tr("3-D view: %1 (PC1-PC3)").arg(key));
    pushAttributes();
}

void Embedding3DDock::pushAttributes() {
    if (m_plot->numPoints() == m_view->numPoints()) m_view->setAttributes(m_plot->pointAttributes());
}

}  // namespace fathom::ui
