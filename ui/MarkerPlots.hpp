#pragma once
/// Plots of marker genes by group beside the marker table, with Scanpy's conventions:
/// a dot plot (sc.pl.dotplot / rank_genes_groups_dotplot: dot size = fraction of the
/// group's cells expressing the gene, value > 0; colour = the group's mean value), a
/// stacked violin plot (sc.pl.stacked_violin: each cell the distribution of the gene's
/// values in the group) and a matrix plot (sc.pl.matrixplot: colour = the group's mean).
/// Groups are rows, genes columns. The figure is painted by one function onto the widget
/// or a PNG / SVG / PDF file.
#include <QWidget>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/engine/Engine.hpp"

class QComboBox;
class QLabel;

namespace fathom::ui {

class JobWatcher;

/// The numbers the plots draw: per group (row) and gene (column).
struct GroupedGeneStats {
    std::vector<std::string> groups;
    std::vector<std::string> genes;
    std::vector<double> mean;      ///< groups x genes, row-major: mean value of the group's cells
    std::vector<double> fraction;  ///< groups x genes: fraction of the group's cells with value > 0
    /// values[gene][group]: the values of the group's cells, ascending (the violins).
    std::vector<std::vector<std::vector<float>>> values;
    std::size_t num_groups() const { return groups.size(); }
    std::size_t num_genes() const { return genes.size(); }
    double mean_at(std::size_t group, std::size_t gene) const { return mean[group * genes.size() + gene]; }
    double fraction_at(std::size_t group, std::size_t gene) const { return fraction[group * genes.size() + gene]; }
};

/// Groups the values of each gene (gene_values[gene][cell], cells in obs order) by
/// codes[cell] (index into `groups`; -1 or out of range = in no group). NaN values are
/// left out of the means, fractions and violins. Throws std::invalid_argument when a
/// gene's values do not have one entry per code.
GroupedGeneStats grouped_gene_stats(const std::vector<std::vector<float>>& gene_values, std::span<const std::int32_t> codes,
                                    std::vector<std::string> groups, std::vector<std::string> genes);

/// The genes a marker plot shows for a column's markers: the first `per_group` genes of
/// each group's table in group order, each gene once (as rank_genes_groups_dotplot's n_genes).
std::vector<std::string> top_marker_genes(const ObsMarkers& markers, int per_group);

/// The plot widget.
class MarkerPlotView : public QWidget {
    Q_OBJECT
public:
    enum class Kind { Dot, Violin, Matrix };

    explicit MarkerPlotView(QWidget* parent = nullptr);

    void setStats(GroupedGeneStats stats, const QString& value_label);
    const GroupedGeneStats& stats() const { return m_stats; }
    void setKind(Kind kind);
    Kind kind() const { return m_kind; }
    /// Dot plot: the radius in pixels of the dot of (group, gene) when painted at `size`
    /// (area proportional to the fraction expressing, as Scanpy's dot sizes).
    double dotRadius(std::size_t group, std::size_t gene, QSizeF size) const;
    /// The colour of (group, gene) in the dot and matrix plots (its mean on the colour scale).
    QColor meanColor(std::size_t group, std::size_t gene) const;
    /// The colour scale's range: the smallest and largest group mean.
    std::pair<double, double> meanRange() const;
    /// Paints the figure into `size` (device pixels of `painter`'s device).
    void render(QPainter& painter, QSizeF size) const;
    /// Writes the figure as PNG, SVG or PDF (by extension) at `size` pixels (PNG, SVG) or
    /// points (PDF). False with `error` set for an unknown extension or a write failure.
    bool exportFigure(const QString& path, QSize size, QString* error = nullptr) const;
    QSize sizeHint() const override;

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    GroupedGeneStats m_stats;
    QString m_value_label;
    Kind m_kind = Kind::Dot;
};

/// The "Marker plots" dock: the kind chooser, the plot and Export; fetches the values of a
/// column's top markers (Engine::gene_values in the markers' layer) and groups them.
class MarkerPlotsPanel : public QWidget {
    Q_OBJECT
public:
    using EngineAccess = std::function<Engine*()>;
    MarkerPlotsPanel(EngineAccess engine, JobWatcher* watcher, QWidget* parent = nullptr);

    /// Plots the first `per_group` markers of each group of `markers`; `codes` (obs order)
    /// and `categories` are the column's. Asynchronous: plotsReady or plotsFailed.
    void showMarkers(const ObsMarkers& markers, std::vector<std::int32_t> codes, std::vector<std::string> categories,
                     int per_group = 3);
    /// No plot (a new dataset).
    void clear();
    MarkerPlotView* view() const { return m_view; }

signals:
    void plotsReady();
    void plotsFailed(const QString& message);

private:
    void fetchNext();

    EngineAccess m_engine;
    JobWatcher* m_watcher;
    MarkerPlotView* m_view;
    QComboBox* m_kind;
    QLabel* m_status;
    // The request being fetched.
    std::uint64_t m_request = 0;
    ValueLayer m_layer = ValueLayer::LogNorm;
    std::vector<std::string> m_genes, m_categories;
    std::vector<std::int32_t> m_codes;
    std::vector<std::vector<float>> m_values;
};

}  // namespace fathom::ui
