#pragma once
/// Summary of the open dataset: file, format, cells, genes, nnz, memory, devices and the
/// obs / var columns and obsm keys (from the engine's DatasetSummary).
#include <QString>
#include <QWidget>

#include "core/engine/matrix_content.hpp"

namespace fathom {
struct DatasetSummary;
}

class QLabel;
class QTreeWidget;

namespace fathom::ui {

/// Read-only view of a DatasetSummary.
class DatasetPanel : public QWidget {
    Q_OBJECT
public:
    explicit DatasetPanel(QWidget* parent = nullptr);
    /// Shows `summary`; null clears the panel ("no dataset").
    void setSummary(const DatasetSummary* summary);
    /// The text of a summary row ("format", "cells", "genes", "nnz", "matrix", "values",
    /// "names", "memory", "devices").
    QString value(const QString& key) const;

signals:
    /// A summary of another file than the one shown before: what its X holds (for the
    /// pipeline panel's recipe pre-choice, PipelinePanel::suggestRecipe).
    void datasetOpened(fathom::MatrixContent content);

private:
    QString m_shown_path;  ///< the file of the summary shown, to tell a new dataset
    QLabel* m_path = nullptr;
    QLabel* m_format = nullptr;
    QLabel* m_cells = nullptr;
    QLabel* m_genes = nullptr;
    QLabel* m_nnz = nullptr;
    QLabel* m_counts = nullptr;
    QLabel* m_matrix = nullptr;  ///< the matrix analysed, with the open note when X was not it
    QLabel* m_names = nullptr;  ///< duplicate gene names made unique at open
    QLabel* m_memory = nullptr;
    QLabel* m_devices = nullptr;
    QTreeWidget* m_columns = nullptr;
};

/// "1.2 GiB", "850 MiB", "12 KiB".
QString format_bytes(long long bytes);

}  // namespace fathom::ui
