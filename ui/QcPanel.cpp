#include "ui/QcPanel.hpp"

#include <QGridLayout>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <limits>

#include "ui/FilterHistogram.hpp"
#include "ui/PipelinePanel.hpp"

namespace fathom::ui {

namespace {

QString count_text(std::int64_t count) { return QLocale(QLocale::English).toString(static_cast<qlonglong>(count)); }

}  // namespace

struct QcPanel::Private {
    PipelinePanel* pipeline = nullptr;
    std::shared_ptr<const CellQcMetrics> metrics;
    FilterHistogram* histograms[NumMetrics] = {};
    QLabel* removed[NumMetrics] = {};
    QLabel* summary = nullptr;
    QLabel* empty = nullptr;
    QWidget* rows = nullptr;
    QcThresholdCounts counts;
    bool updating = false;
};

QcPanel::QcPanel(PipelinePanel* pipeline, QWidget* parent) : QWidget(parent), d(std::make_unique<Private>()) {
    d->pipeline = pipeline;
    auto* layout = new QVBoxLayout(this);
    d->empty = new QLabel(tr("QC metrics describe raw counts: open a dataset whose X holds them."), this);
    d->empty->setWordWrap(true);
    layout->addWidget(d->empty);
    d->rows = new QWidget(this);
    auto* grid = new QGridLayout(d->rows);
    grid->setContentsMargins(0, 0, 0, 0);
    const char* const titles[NumMetrics] = {"total counts per cell", "genes per cell", "% mitochondrial counts"};
    const char* const tips[NumMetrics] = {
        "Drag across to keep cells with total counts in that range (min_counts, max_counts)",
        "Drag across to keep cells with that many expressed genes (min_genes, max_genes)",
        "Drag across: cells above the range's upper end are removed (max_pct_counts_mt)"};
    for (int metric = 0; metric < NumMetrics; ++metric) {
        auto* title = new QLabel(QStringLiteral("<b>%1</b>").arg(tr(titles[metric])), d->rows);
        d->removed[metric] = new QLabel(d->rows);
        d->removed[metric]->setObjectName(QStringLiteral("qcRemoved%1").arg(metric));
        d->histograms[metric] = new FilterHistogram(d->rows);
        d->histograms[metric]->setToolTip(tr(tips[metric]));
        d->removed[metric]->setAlignment(Qt::AlignLeft | Qt::AlignVCenter);
        grid->addWidget(title, 3 * metric, 0);
        grid->addWidget(d->histograms[metric], 3 * metric + 1, 0);
        grid->addWidget(d->removed[metric], 3 * metric + 2, 0);
        connect(d->histograms[metric], &FilterHistogram::rangeSelected, this,
                [this, metric](float low, float high) { setRange(static_cast<Metric>(metric), low, high); });
    }
    layout->addWidget(d->rows);
    d->summary = new QLabel(this);
    d->summary->setObjectName(QStringLiteral("qcSummary"));
    d->summary->setWordWrap(true);
    layout->addWidget(d->summary);
    auto* clear = new QPushButton(tr("Keep every cell"), this);
    clear->setToolTip(tr("Clear the QC thresholds"));
    layout->addWidget(clear, 0, Qt::AlignLeft);
    layout->addStretch(1);
    connect(clear, &QPushButton::clicked, this, &QcPanel::clearThresholds);
    connect(d->pipeline, &PipelinePanel::settingsChanged, this, [this] {
        if (!d->updating) refresh();
    });
    refresh();
}

QcPanel::~QcPanel() = default;

void QcPanel::setSnapshot(std::shared_ptr<const AnalysisSnapshot> snapshot) {
    const auto metrics = snapshot ? snapshot->qc : nullptr;
    if (metrics == d->metrics) return refresh();
    d->metrics = metrics;
    if (metrics) {
        auto totals = std::make_shared<std::vector<float>>(metrics->total_counts.begin(), metrics->total_counts.end());
        auto genes = std::make_shared<std::vector<float>>(metrics->n_genes_by_counts.begin(), metrics->n_genes_by_counts.end());
        auto mito = std::make_shared<std::vector<float>>(metrics->pct_counts_mt.begin(), metrics->pct_counts_mt.end());
        d->histograms[TotalCounts]->setValues(std::move(totals));
        d->histograms[GenesPerCell]->setValues(std::move(genes));
        d->histograms[PercentMito]->setValues(std::move(mito));
    } else {
        for (FilterHistogram* histogram : d->histograms) histogram->setValues(nullptr);
    }
    refresh();
}

void QcPanel::setRange(Metric metric, double low, double high) {
    PipelineSettings settings = d->pipeline->settings();
    switch (metric) {
        case TotalCounts:
            // Counts are integers: keep the whole counts the brush covers.
            settings.min_counts_per_cell = std::max(0.0, std::ceil(low));
            settings.max_counts_per_cell = std::max(settings.min_counts_per_cell, std::floor(high));
            break;
        case GenesPerCell:
            settings.min_genes_per_cell = std::max<std::int64_t>(0, static_cast<std::int64_t>(std::ceil(low)));
            settings.max_genes_per_cell =
                std::max(settings.min_genes_per_cell, static_cast<std::int64_t>(std::floor(high)));
            break;
        case PercentMito: settings.max_pct_counts_mt = std::clamp(high, 0.0, 100.0); break;
        case NumMetrics: return;
    }
    d->updating = true;
    d->pipeline->setSettings(settings);
    d->updating = false;
    refresh();
}

void QcPanel::clearThresholds() {
    PipelineSettings settings = d->pipeline->settings();
    const PipelineSettings defaults;
    settings.min_counts_per_cell = defaults.min_counts_per_cell;
    settings.max_counts_per_cell = defaults.max_counts_per_cell;
    settings.min_genes_per_cell = defaults.min_genes_per_cell;
    settings.max_genes_per_cell = defaults.max_genes_per_cell;
    settings.max_pct_counts_mt = defaults.max_pct_counts_mt;
    d->updating = true;
    d->pipeline->setSettings(settings);
    d->updating = false;
    refresh();
}

QcThresholdCounts QcPanel::counts() const { return d->counts; }

std::int64_t QcPanel::numCells() const {
    return d->metrics ? static_cast<std::int64_t>(d->metrics->total_counts.size()) : 0;
}

FilterHistogram* QcPanel::histogram(Metric metric) const {
    return metric >= 0 && metric < NumMetrics ? d->histograms[metric] : nullptr;
}

QString QcPanel::removedText(Metric metric) const {
    return metric >= 0 && metric < NumMetrics ? d->removed[metric]->text() : QString();
}

QString QcPanel::summaryText() const { return d->summary->text(); }

void QcPanel::refresh() {
    d->empty->setVisible(!d->metrics);
    d->rows->setVisible(d->metrics != nullptr);
    d->counts = {};
    if (!d->metrics) {
        d->summary->clear();
        return;
    }
    const PipelineSettings settings = d->pipeline->settings();
    const CellQcMetrics& metrics = *d->metrics;
    auto passing = std::make_shared<std::vector<std::uint8_t>>(
        cells_passing_qc(metrics.total_counts, metrics.n_genes_by_counts, metrics.pct_counts_mt, settings, &d->counts));
    // The range each metric's thresholds keep, drawn within the histogram's axis.
    const auto shade = [this](Metric metric, double low, double high) {
        const auto [axis_low, axis_high] = d->histograms[metric]->axisRange();
        d->histograms[metric]->setAcceptedRange(static_cast<float>(std::max<double>(low, axis_low)),
                                                static_cast<float>(std::min<double>(high, axis_high)));
    };
    const double unlimited = std::numeric_limits<double>::max();
    shade(TotalCounts, settings.min_counts_per_cell,
          settings.max_counts_per_cell > 0.0 ? settings.max_counts_per_cell : unlimited);
    shade(GenesPerCell, static_cast<double>(settings.min_genes_per_cell),
          settings.max_genes_per_cell > 0 ? static_cast<double>(settings.max_genes_per_cell) : unlimited);
    shade(PercentMito, -unlimited, settings.max_pct_counts_mt < 100.0 ? settings.max_pct_counts_mt : unlimited);
    for (FilterHistogram* histogram : d->histograms) histogram->setMask(passing);
    const auto removed = [](std::int64_t low, std::int64_t high) {
        return tr("removes %1 below, %2 above").arg(count_text(low), count_text(high));
    };
    d->removed[TotalCounts]->setText(removed(d->counts.below_min_counts, d->counts.above_max_counts));
    d->removed[GenesPerCell]->setText(removed(d->counts.below_min_genes, d->counts.above_max_genes));
    d->removed[PercentMito]->setText(tr("removes %1 above").arg(count_text(d->counts.above_max_pct_mt)));
    const std::int64_t total = numCells();
    d->summary->setText(tr("The next run keeps %1 of %2 cells (removes %3).")
                            .arg(count_text(d->counts.kept), count_text(total), count_text(total - d->counts.kept)));
}

}  // namespace fathom::ui
