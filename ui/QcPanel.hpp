#pragma once
/// The QC view: histograms of total counts, genes per cell and percent mitochondrial
/// counts of every opened cell (scanpy's calculate_qc_metrics on the raw counts), with
/// the pipeline's QC cell filters (min / max counts, min / max genes, max percent mito)
/// shaded as the range each keeps. Dragging across a histogram sets its thresholds in
/// the pipeline form (the one place the settings live; the next run filters the cells),
/// and each row says how many cells its thresholds remove, counted by the same function
/// the run uses (cells_passing_qc).
#include <QWidget>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/engine/Engine.hpp"
#include "core/engine/qc_thresholds.hpp"

class QLabel;
class QPushButton;

namespace fathom::ui {

class FilterHistogram;
class PipelinePanel;

/// The QC dock's widget. All methods are for the GUI thread.
class QcPanel : public QWidget {
    Q_OBJECT
public:
    /// The QC metrics shown.
    enum Metric { TotalCounts, GenesPerCell, PercentMito, NumMetrics };

    /// Reads and writes the thresholds of `pipeline`'s form.
    explicit QcPanel(PipelinePanel* pipeline, QWidget* parent = nullptr);
    ~QcPanel() override;

    /// A new analysis state: shows its QC metrics (none when X is not raw counts).
    void setSnapshot(std::shared_ptr<const AnalysisSnapshot> snapshot);
    /// Sets a metric's thresholds in the pipeline form as a brush across its histogram
    /// does: [low, high] for counts and genes (min, max), `high` alone for percent mito.
    void setRange(Metric metric, double low, double high);
    /// Every QC threshold back to "keep every cell".
    void clearThresholds();
    /// What the thresholds in the form remove (zeros without QC metrics).
    QcThresholdCounts counts() const;
    /// Cells with QC metrics (0 when none are shown).
    std::int64_t numCells() const;
    FilterHistogram* histogram(Metric metric) const;
    /// The row's "removes ..." text and the summary line as shown.
    QString removedText(Metric metric) const;
    QString summaryText() const;

private:
    void refresh();

    struct Private;
    std::unique_ptr<Private> d;
};

}  // namespace fathom::ui
