#pragma once
/// The dock that holds the 3-D view (View > 3-D view). It observes the PlotModel that the
/// 2-D PlotView draws too: the same cells, colours, legend toggles, cell mask and
/// selection (the model's per-cell attributes whenever they change), and its background.
/// Built only with FATHOM_WITH_VTK.
#include <QDockWidget>
#include <QString>

#include "core/engine/Engine.hpp"

namespace fathom::ui {

class Embedding3DView;
class PlotLegend;
class PlotModel;

/// Dock widget hosting an Embedding3DView that follows `plot`.
class Embedding3DDock : public QDockWidget {
    Q_OBJECT
public:
    explicit Embedding3DDock(PlotModel* model, QWidget* parent = nullptr);

    Embedding3DView* view() const;
    /// The legend beside the view (hidden while the colouring is uniform).
    PlotLegend* legend() const;
    /// Shows obsm['X_umap'] when it has three columns, else PC1..PC3 of obsm['X_pca'];
    /// empties the view when the snapshot has neither. The camera is fitted when the
    /// source or the number of cells changes.
    void setSnapshot(const AnalysisSnapshot& snapshot);
    /// An intermediate UMAP embedding while the SGD runs: shown when it has three columns.
    void setFrame(const DenseMatrix<float>& coordinates);
    /// The obsm key shown ("" when none).
    QString sourceKey() const;

private:
    void pushAttributes();
    void showSource(const QString& key, std::vector<float> xyz);

    PlotModel* m_model = nullptr;
    Embedding3DView* m_view = nullptr;
    PlotLegend* m_legend = nullptr;
    QString m_key;
};

}  // namespace fathom::ui
