#pragma once
/// Marker genes: a sortable table (gene, score, logfc, pval, pval_adj, % of cells
/// expressing in / out) with the buttons that ask for them (selection vs rest, selection
/// vs a stored reference selection, every group of a categorical obs column vs rest),
/// a group chooser for a column's result, and CSV export. Double-clicking a gene asks
/// to colour the plot by it. The panel only shows and asks;
/// SelectionWorkflow talks to the engine.
#include <QAbstractTableModel>
#include <QWidget>
#include <vector>

#include "core/engine/Engine.hpp"

class QComboBox;
class QLabel;
class QPushButton;
class QSortFilterProxyModel;
class QTableView;

namespace fathom::ui {

/// One marker table as a Qt model: a row per gene in rank order; numbers as doubles
/// (the sort proxy compares them numerically); the pct columns show percentages (the
/// MarkerGroup holds fractions).
class MarkerTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Gene, Score, LogFoldChange, PValue, PValueAdjusted, PctIn, PctOut, NumColumns };
    using QAbstractTableModel::QAbstractTableModel;
    void setMarkers(MarkerGroup markers);
    const MarkerGroup& markers() const { return m_markers; }
    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    MarkerGroup m_markers;
};

/// The markers dock's widget.
class MarkersPanel : public QWidget {
    Q_OBJECT
public:
    explicit MarkersPanel(QWidget* parent = nullptr);

    /// Shows a result (replaces the table) with a one-line summary.
    void setResult(const MaskMarkers& result);
    /// Shows every group's table of a column's markers; the group chooser picks one.
    void setColumnResult(const ObsMarkers& result);
    /// The group whose table is shown (a column's result); -1 for a selection's result.
    int currentGroup() const;
    void setCurrentGroup(int index);
    /// Categorical obs columns offered for "Markers of column" (kept choice when still there).
    void setGroupingColumns(const QStringList& columns);
    QString groupingColumn() const;
    /// No table, no reference, no status (a new dataset).
    void clear();
    /// Status line (progress, errors).
    void setStatus(const QString& text);
    QString status() const;
    /// Cells in the stored reference selection (0 = none; "vs reference" is disabled).
    void setReferenceCount(qint64 count);
    /// The chosen test (t-test or Wilcoxon).
    MarkerMethod method() const;
    /// Whether a result is shown (Export is enabled).
    bool hasResult() const;
    MarkerTableModel* model() const { return m_model; }
    QSortFilterProxyModel* proxy() const { return m_proxy; }
    QTableView* table() const { return m_table; }

signals:
    /// Markers of the selection against the rest (false) or the reference (true).
    void computeRequested(bool versus_reference);
    /// Store the current selection as the reference.
    void referenceRequested();
    void exportRequested();
    /// Markers of every group of the obs column `column` against the rest.
    void columnMarkersRequested(const QString& column);
    /// A gene of the table was double-clicked.
    void geneActivated(const QString& gene);

private:
    MarkerTableModel* m_model;
    QSortFilterProxyModel* m_proxy;
    QTableView* m_table;
    QComboBox* m_method;
    QLabel* m_status;
    QLabel* m_reference;
    QPushButton* m_versus_reference;
    QPushButton* m_export;
    QComboBox* m_column;       ///< categorical obs columns
    QComboBox* m_group;        ///< the group of a column's result shown
    std::vector<MarkerGroup> m_column_groups;
    QString m_column_summary;
};

}  // namespace fathom::ui
