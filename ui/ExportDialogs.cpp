#include "ui/ExportDialogs.hpp"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QRadioButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>
#include <cmath>
#include <functional>
#include <utility>

namespace fathom::ui {

namespace {

const char* const k_format_suffixes[] = {"png", "svg", "pdf"};

/// A "label: [path] [Browse...]" row of `form`; the button calls `browse`.
QLineEdit* add_path_row(QFormLayout* form, const QString& label, QWidget* owner, const std::function<void()>& browse) {
    auto* path = new QLineEdit(owner);
    auto* button = new QPushButton(QObject::tr("Browse..."), owner);
    auto* row = new QHBoxLayout;
    row->addWidget(path, 1);
    row->addWidget(button);
    form->addRow(label, row);
    QObject::connect(button, &QPushButton::clicked, owner, browse);
    return path;
}

}  // namespace

// ---- figure -------------------------------------------------------------------------

FigureExportDialog::FigureExportDialog(const QString& default_title, QWidget* parent) : QDialog(parent) {
    setWindowTitle(tr("Export Figure"));
    auto* form = new QFormLayout;

    m_path = add_path_row(form, tr("File"), this, [this] { browse(); });

    m_format = new QComboBox(this);
    m_format->addItem(tr("PNG (raster)"), static_cast<int>(FigureFormat::Png));
    m_format->addItem(tr("SVG (vector text, raster points)"), static_cast<int>(FigureFormat::Svg));
    m_format->addItem(tr("PDF (vector text, raster points)"), static_cast<int>(FigureFormat::Pdf));
    form->addRow(tr("Format"), m_format);
    connect(m_format, &QComboBox::currentIndexChanged, this, [this](int index) {
        // Keep the file name's extension in step with the format.
        QString path = m_path->text();
        if (path.isEmpty() || index < 0) return;
        const QFileInfo info(path);
        if (figure_format_of(path)) path.chop(info.suffix().size() + 1);
        m_path->setText(path + QStringLiteral(".") + QString::fromUtf8(k_format_suffixes[index]));
    });

    const FigureOptions defaults;
    m_width = new QDoubleSpinBox(this);
    m_height = new QDoubleSpinBox(this);
    for (QDoubleSpinBox* box : {m_width, m_height}) {
        box->setDecimals(2);
        box->setRange(0.5, 40.0);
        box->setSingleStep(0.5);
    }
    m_width->setValue(defaults.width_in);
    m_height->setValue(defaults.height_in);
    m_unit = new QComboBox(this);
    m_unit->addItem(tr("in"), 1.0);
    m_unit->addItem(tr("cm"), 2.54);
    m_unit->addItem(tr("mm"), 25.4);
    auto* size_row = new QHBoxLayout;
    size_row->addWidget(m_width);
    size_row->addWidget(new QLabel(QStringLiteral("x"), this));
    size_row->addWidget(m_height);
    size_row->addWidget(m_unit);
    form->addRow(tr("Size"), size_row);
    connect(m_unit, &QComboBox::currentIndexChanged, this, [this](int index) {
        // Convert the shown numbers so that the physical size stays the same.
        const double per_inch = m_unit->itemData(index).toDouble();
        const double width_in = m_width->value() / m_unit_per_inch, height_in = m_height->value() / m_unit_per_inch;
        m_unit_per_inch = per_inch;
        for (auto [box, inches] : {std::pair{m_width, width_in}, std::pair{m_height, height_in}}) {
            const QSignalBlocker blocker(box);
            box->setRange(0.5 * per_inch, 40.0 * per_inch);
            box->setValue(inches * per_inch);
        }
        updateSummary();
    });

    m_dpi = new QSpinBox(this);
    m_dpi->setRange(36, 2400);
    m_dpi->setValue(defaults.dpi);
    m_dpi->setSuffix(tr(" dpi"));
    form->addRow(tr("Resolution"), m_dpi);

    m_title = new QLineEdit(this);
    m_title->setPlaceholderText(default_title);
    form->addRow(tr("Title"), m_title);
    m_legend = new QCheckBox(tr("legend or colour bar"), this);
    m_legend->setChecked(defaults.legend);
    form->addRow(QString(), m_legend);
    m_ignore_selection = new QCheckBox(tr("ignore the selection (no dimmed cells)"), this);
    m_ignore_selection->setObjectName(QStringLiteral("ignoreSelection"));
    m_ignore_selection->setToolTip(tr("Unchecked, the figure shows the selection's highlight as the plot does"));
    m_ignore_selection->setChecked(defaults.ignore_selection);
    form->addRow(QString(), m_ignore_selection);
    m_summary = new QLabel(this);
    form->addRow(QString(), m_summary);
    for (QDoubleSpinBox* box : {m_width, m_height})
        connect(box, &QDoubleSpinBox::valueChanged, this, &FigureExportDialog::updateSummary);
    connect(m_dpi, &QSpinBox::valueChanged, this, &FigureExportDialog::updateSummary);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Export"));
    connect(buttons, &QDialogButtonBox::accepted, this, [this] {
        if (m_path->text().trimmed().isEmpty()) browse();
        if (!m_path->text().trimmed().isEmpty()) accept();
    });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(buttons);
    updateSummary();
}

QString FigureExportDialog::path() const {
    QString path = m_path->text().trimmed();
    if (!path.isEmpty() && !figure_format_of(path))
        path += QStringLiteral(".") + QString::fromUtf8(k_format_suffixes[std::max(0, m_format->currentIndex())]);
    return path;
}

void FigureExportDialog::setPath(const QString& path) {
    m_path->setText(path);
    if (const auto format = figure_format_of(path)) {
        const QSignalBlocker blocker(m_format);
        m_format->setCurrentIndex(m_format->findData(static_cast<int>(*format)));
    }
}

FigureOptions FigureExportDialog::options() const {
    FigureOptions options;
    options.width_in = m_width->value() / m_unit_per_inch;
    options.height_in = m_height->value() / m_unit_per_inch;
    options.dpi = m_dpi->value();
    options.title = m_title->text();
    options.legend = m_legend->isChecked();
    options.ignore_selection = m_ignore_selection->isChecked();
    return options;
}

void FigureExportDialog::setOptions(const FigureOptions& options) {
    m_width->setValue(options.width_in * m_unit_per_inch);
    m_height->setValue(options.height_in * m_unit_per_inch);
    m_dpi->setValue(options.dpi);
    m_title->setText(options.title);
    m_legend->setChecked(options.legend);
    m_ignore_selection->setChecked(options.ignore_selection);
}

void FigureExportDialog::updateSummary() {
    const FigureOptions current = options();
    const QString problem = validate(current);
    m_summary->setText(problem.isEmpty() ? tr("%1 x %2 pixels at %3 dpi")
                                               .arg(std::lround(current.width_in * current.dpi))
                                               .arg(std::lround(current.height_in * current.dpi))
                                               .arg(current.dpi)
                                         : problem);
}

void FigureExportDialog::browse() {
    const QString chosen = QFileDialog::getSaveFileName(this, tr("Export figure"), m_path->text(),
                                                        tr("PNG image (*.png);;SVG drawing (*.svg);;PDF document (*.pdf)"));
    if (!chosen.isEmpty()) setPath(chosen);
}

// ---- data ---------------------------------------------------------------------------

DataExportDialog::DataExportDialog(const QStringList& categories, const QStringList& projections, bool has_markers,
                                   QWidget* parent)
    : QDialog(parent), m_has_markers(has_markers) {
    setWindowTitle(tr("Export Data"));
    auto* layout = new QVBoxLayout(this);
    m_h5ad = new QRadioButton(tr("h5ad file (obs, var, obsm, uns colours; reads in scanpy)"), this);
    m_csv = new QRadioButton(tr("CSV folder (Loupe Browser projection and categories)"), this);
    m_h5ad->setChecked(true);
    layout->addWidget(m_h5ad);
    layout->addWidget(m_csv);

    auto* form = new QFormLayout;
    m_path = add_path_row(form, tr("Destination"), this, [this] { browse(); });
    m_matrix = new QCheckBox(matrix_label(true), this);
    form->addRow(QString(), m_matrix);
    m_projection = new QComboBox(this);
    m_projection->addItems(projections);
    for (const QString& preferred : {QStringLiteral("X_umap_fathom"), QStringLiteral("X_umap")})
        if (projections.contains(preferred)) {
            m_projection->setCurrentText(preferred);
            break;
        }
    form->addRow(tr("Projection"), m_projection);
    m_columns = new QListWidget(this);
    for (const QString& name : categories) {
        auto* item = new QListWidgetItem(name, m_columns);
        item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
        item->setCheckState(Qt::Checked);
    }
    m_columns->setMaximumHeight(140);
    form->addRow(tr("Categories"), m_columns);
    m_markers = new QCheckBox(tr("marker gene table (markers.csv)"), this);
    m_markers->setChecked(has_markers);
    m_markers->setEnabled(has_markers);
    form->addRow(QString(), m_markers);
    layout->addLayout(form);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Export"));
    connect(buttons, &QDialogButtonBox::accepted, this, [this] {
        if (m_path->text().trimmed().isEmpty()) browse();
        if (!m_path->text().trimmed().isEmpty()) accept();
    });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
    connect(m_h5ad, &QRadioButton::toggled, this, &DataExportDialog::updateMode);
    updateMode();
}

bool DataExportDialog::csv() const { return m_csv->isChecked(); }

QString DataExportDialog::path() const {
    QString path = m_path->text().trimmed();
    if (!csv() && !path.isEmpty() && !path.endsWith(QStringLiteral(".h5ad"), Qt::CaseInsensitive)) path += QStringLiteral(".h5ad");
    return path;
}

bool DataExportDialog::includeMatrix() const { return m_matrix->isChecked(); }

QString DataExportDialog::matrix_label(bool integer_counts) {
    return integer_counts ? tr("include X (raw counts of the analysed cells)")
                          : tr("include X (as the file stores it, not raw counts, for the analysed cells)");
}

void DataExportDialog::setIntegerCounts(bool integer_counts) { m_matrix->setText(matrix_label(integer_counts)); }
QString DataExportDialog::matrixText() const { return m_matrix->text(); }

CsvExportOptions DataExportDialog::csvOptions() const {
    CsvExportOptions options;
    options.projections.clear();
    if (!m_projection->currentText().isEmpty()) options.projections.push_back(m_projection->currentText().toStdString());
    options.categories.emplace();
    for (int row = 0; row < m_columns->count(); ++row)
        if (m_columns->item(row)->checkState() == Qt::Checked)
            options.categories->push_back(m_columns->item(row)->text().toStdString());
    options.markers = m_markers->isChecked();
    return options;
}

void DataExportDialog::updateMode() {
    const bool folder = csv();
    m_matrix->setEnabled(!folder);
    m_projection->setEnabled(folder);
    m_columns->setEnabled(folder);
    m_markers->setEnabled(folder && m_has_markers);
}

void DataExportDialog::browse() {
    const QString chosen = csv() ? QFileDialog::getExistingDirectory(this, tr("CSV folder"), m_path->text())
                                 : QFileDialog::getSaveFileName(this, tr("Export h5ad"), m_path->text(), tr("h5ad (*.h5ad)"));
    if (!chosen.isEmpty()) m_path->setText(chosen);
}

}  // namespace fathom::ui
