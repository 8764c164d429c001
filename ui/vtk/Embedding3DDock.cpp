#include "ui/vtk/Embedding3DDock.hpp"

#include <QHBoxLayout>
#include <QScrollArea>
#include <QStyle>

#include "ui/PlotLegend.hpp"
#include "ui/PlotModel.hpp"
#include "ui/embedding_3d.hpp"
#include "ui/vtk/Embedding3DView.hpp"

namespace fathom::ui {

Embedding3DDock::Embedding3DDock(PlotModel* model, QWidget* parent)
    : QDockWidget(tr("3-D view"), parent), m_model(model), m_view(new Embedding3DView(this)) {
    setObjectName(QStringLiteral("view3dDock"));
    m_view->setObjectName(QStringLiteral("view3d"));
    m_view->setToolTip(tr("Left drag rotates, right drag or wheel zooms, middle drag pans; R fits the view"));
    // The legend stands beside the points (as the 2-D plot's), never over them.
    auto* content = new QWidget(this);
    auto* layout = new QHBoxLayout(content);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    layout->addWidget(m_view, 1);
    m_legend = new PlotLegend(m_model, content);
    m_legend->setObjectName(QStringLiteral("view3dLegend"));
    auto* scroll = new QScrollArea(content);
    scroll->setWidget(m_legend);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    scroll->setSizePolicy(QSizePolicy::Fixed, QSizePolicy::Expanding);
    const auto fit_legend = [this, scroll] {
        scroll->setVisible(m_model->colorKind() != PlotModel::ColorKind::Uniform);
        // Room for the scroll bar that many categories bring, so that no name is cut.
        scroll->setFixedWidth(m_legend->sizeHint().width() + scroll->style()->pixelMetric(QStyle::PM_ScrollBarExtent));
    };
    connect(m_model, &PlotModel::attributesChanged, scroll, fit_legend);
    connect(m_legend, &PlotLegend::sizeHintChanged, scroll, fit_legend);
    fit_legend();
    layout->addWidget(scroll);
    setWidget(content);
    connect(m_model, &PlotModel::attributesChanged, this, &Embedding3DDock::pushAttributes);
    connect(m_model, &PlotModel::paletteChanged, this, [this] { m_view->setBackgroundColor(m_model->background()); });
    m_view->setBackgroundColor(m_model->background());
}

Embedding3DView* Embedding3DDock::view() const { return m_view; }
PlotLegend* Embedding3DDock::legend() const { return m_legend; }
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
    if (m_model->numCells() == m_view->numPoints()) m_view->setAttributes(m_model->attributes());
}

}  // namespace fathom::ui
