#pragma once
/// File > Export Figure... and File > Export Data... dialogs: forms only; the window
/// does the writing (MainWindow::exportFigure, exportH5ad, exportCsv).
#include <QDialog>
#include <QString>
#include <QStringList>

#include "core/engine/csv_export.hpp"
#include "ui/FigureExport.hpp"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QRadioButton;
class QSpinBox;

namespace fathom::ui {

/// Figure file, format, physical size, DPI, title and legend.
class FigureExportDialog : public QDialog {
    Q_OBJECT
public:
    /// `default_title` is shown as the title's placeholder (the colouring's name).
    FigureExportDialog(const QString& default_title, QWidget* parent = nullptr);
    /// The file name with the chosen format's extension.
    QString path() const;
    void setPath(const QString& path);
    FigureOptions options() const;
    void setOptions(const FigureOptions& options);

private:
    void updateSummary();
    void browse();

    QLineEdit* m_path = nullptr;
    QComboBox* m_format = nullptr;
    QDoubleSpinBox* m_width = nullptr;
    QDoubleSpinBox* m_height = nullptr;
    QComboBox* m_unit = nullptr;
    QSpinBox* m_dpi = nullptr;
    QLineEdit* m_title = nullptr;
    QCheckBox* m_legend = nullptr;
    QCheckBox* m_ignore_selection = nullptr;
    QLabel* m_summary = nullptr;
    double m_unit_per_inch = 1.0;
};

/// h5ad file (with or without X) or a folder of Loupe-style CSVs.
class DataExportDialog : public QDialog {
    Q_OBJECT
public:
    /// `categories`: categorical obs columns offered for CSV; `projections`: obsm keys.
    DataExportDialog(const QStringList& categories, const QStringList& projections, bool has_markers,
                     QWidget* parent = nullptr);
    bool csv() const;
    QString path() const;           ///< h5ad file or CSV folder
    bool includeMatrix() const;     ///< h5ad only
    /// What X holds, for the "include X" label: raw counts, or an analysed file's X as stored.
    void setIntegerCounts(bool integer_counts);
    QString matrixText() const;     ///< the "include X" label as shown
    static QString matrix_label(bool integer_counts);
    CsvExportOptions csvOptions() const;

private:
    void updateMode();
    void browse();

    QRadioButton* m_h5ad = nullptr;
    QRadioButton* m_csv = nullptr;
    QLineEdit* m_path = nullptr;
    QCheckBox* m_matrix = nullptr;
    QListWidget* m_columns = nullptr;
    QComboBox* m_projection = nullptr;
    QCheckBox* m_markers = nullptr;
    bool m_has_markers = false;
};

}  // namespace fathom::ui
