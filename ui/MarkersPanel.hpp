#pragma once
/// Marker genes of the selection: a sortable table (gene, score, logfc, pval, pval_adj,
/// pct in / out) with the buttons that ask for them (selection vs rest, selection vs a
/// stored reference selection) and export them as CSV. The panel only shows and asks;
/// SelectionWorkflow talks to the engine.
#include <QAbstractTableModel>
#include <QWidget>

#include "core/engine/Engine.hpp"

class QComboBox;
class QLabel;
class QPushButton;
class QSortFilterProxyModel;
class QTableView;

namespace fathom::ui {

/// One marker table as a Qt model: a row per gene in rank order; numbers as doubles
/// (the sort proxy compares them numerically).
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

private:
    MarkerTableModel* m_model;
    QSortFilterProxyModel* m_proxy;
    QTableView* m_table;
    QComboBox* m_method;
    QLabel* m_status;
    QLabel* m_reference;
    QPushButton* m_versus_reference;
    QPushButton* m_export;
};

}  // namespace fathom::ui
