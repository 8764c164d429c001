#pragma once
/// The marker-gene filter panel: rule rows `[not] gene op threshold` joined by and/or,
/// kept in sync with the filter's text form (a mistake in the text is shown with a
/// caret under it); a fuzzy gene search over var names and gene ids to add rules; a
/// histogram per rule with a brush that turns a dragged range into a "between" rule;
/// the values of the window's Values switch (X, raw/X, log-normalised counts); cells outside the filter hidden or dimmed; the number
/// of matching cells and their breakdown by cluster; gene sets from a list file that
/// colour the plot by their mean or score.
///
/// The engine evaluates the filter (on its query thread, from gene columns it caches
/// per layer) and only the n-long mask comes back to the plot. Every change of the
/// filter goes through commit(), which emits filterChanged(before, after): an undo
/// command can store the two states and call setState() to undo or redo.
#include <QWidget>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/engine/Engine.hpp"
#include "core/engine/filter_rules.hpp"
#include "ui/PlotView.hpp"

class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QTableWidget;
class QVBoxLayout;

namespace fathom::ui {

class FilterHistogram;
class GeneSearchModel;
class JobWatcher;

/// What defines the filter on screen: the unit of undo / redo.
struct FilterState {
    /// The text form ("" = no filter); rule rows are shown when it is an "or" of "and"s
    /// of comparisons (FilterRulesParse::representable).
    std::string expression;
    /// The values compared: set by the window (setValueLayer), not by the panel.
    ValueLayer layer = ValueLayer::LogNorm;
    PlotView::MaskStyle style = PlotView::MaskStyle::Hide;

    friend bool operator==(const FilterState&, const FilterState&) = default;
};

/// The panel. All methods are for the GUI thread.
class FilterPanel : public QWidget {
    Q_OBJECT
public:
    /// The engine to query (may change when the window makes a new one; null = none).
    using EngineAccess = std::function<Engine*()>;

    FilterPanel(EngineAccess engine, PlotView* plot, QWidget* parent = nullptr);
    ~FilterPanel() override;

    /// A new analysis state (dataset opened, pipeline finished): refreshes the gene
    /// search, drops fetched values and re-applies the filter to the new cells.
    void setSnapshot(std::shared_ptr<const AnalysisSnapshot> snapshot);
    /// The plot's colouring key: when it names a categorical (or bool) obs column the
    /// breakdown is by its categories, else by leiden.
    void setColorKey(const QString& key);

    // ---- the filter ---------------------------------------------------------------
    FilterState state() const;
    /// Applies `state` without emitting filterChanged (for undo / redo).
    void setState(const FilterState& state);
    /// The values the filter compares (the window's one Values switch, shared with the
    /// plot's gene colouring): re-evaluates in `layer` without emitting filterChanged.
    void setValueLayer(ValueLayer layer);
    /// The one entry point of every user change: emits filterChanged(state(), after)
    /// when they differ, then applies `after`.
    void commit(const FilterState& after);
    /// As typing `text` in the text form and pressing Enter: false (and the mistake
    /// shown under the text, nothing applied) when it does not parse or names a gene
    /// the dataset lacks.
    bool setExpressionText(const QString& text);
    /// As picking `gene` in the search: appends the rule `gene > 0` (and-joined).
    /// False when the dataset has no such gene (var name or gene id).
    bool addRule(const QString& gene);
    /// The rule rows shown (empty when none or when the text is not representable).
    std::vector<FilterRule> rules() const;
    /// Whether rule rows can show the current expression.
    bool rulesRepresentable() const;
    /// The text form as shown.
    QString expressionText() const;
    /// The mistake shown under the text form ("" when none).
    QString errorText() const;

    // ---- results --------------------------------------------------------------------
    /// Cells matching the applied filter (-1 before a result arrived or with no filter).
    std::int64_t matchingCells() const;
    /// The applied mask (null with no filter).
    std::shared_ptr<const std::vector<std::uint8_t>> mask() const;
    /// Matching cells per category of groupBy() (category order), and all cells per category.
    const std::vector<std::pair<std::string, std::int64_t>>& breakdown() const;
    const std::vector<std::int64_t>& breakdownTotals() const;
    /// The obs column of the breakdown ("" when none).
    QString groupBy() const;
    /// The histogram of rule `row` (null when out of range).
    FilterHistogram* histogram(int row) const;
    /// An evaluation, a value fetch or a gene-set score is running.
    bool busy() const;
    /// The gene search's model (ranking over var names and gene ids).
    GeneSearchModel* geneSearch() const;

    // ---- gene sets ------------------------------------------------------------------
    /// Reads a gene list (one gene per line, or a CSV/TSV whose first column is the
    /// gene). False with the reason in geneSetStatus() when it cannot be read.
    bool loadGeneSet(const QString& path);
    QStringList geneSet() const;
    QString geneSetStatus() const;
    /// Colours the plot by the set's mean log-normalised value per cell, or by scanpy's
    /// score_genes (`score` = true). Asynchronous: geneSetColored / geneSetFailed.
    bool colorByGeneSet(bool score);

signals:
    /// Every filter change made through the panel (rows, text, brush, layer, style,
    /// clear). Not emitted by setState().
    void filterChanged(const fathom::ui::FilterState& before, const fathom::ui::FilterState& after);
    /// A filter result is on the plot (matching = total when the filter was cleared).
    void filterApplied(qint64 matching, qint64 total);
    void filterFailed(const QString& message);
    void geneSetColored(const QString& label);
    void geneSetFailed(const QString& message);

private:
    struct Private;
    std::unique_ptr<Private> d;

    void buildUi();
    void apply();
    void evaluate();
    void fetchValues();
    void syncRows();
    void rebuildRows();
    void updateRowHistograms();
    void updateBreakdown();
    void showError(const QString& message);
    void editRule(int row, const std::function<void(FilterRule&)>& change);
    void removeRule(int row);
};

}  // namespace fathom::ui

Q_DECLARE_METATYPE(fathom::ui::FilterState)
