#include "ui/DatasetPanel.hpp"

#include <QFileInfo>
#include <QFormLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "core/engine/Engine.hpp"

namespace fathom::ui {

QString format_bytes(long long bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double value = static_cast<double>(bytes);
    int unit = 0;
    while (value >= 1024.0 && unit < 4) {
        value /= 1024.0;
        ++unit;
    }
    return unit == 0 ? QStringLiteral("%1 B").arg(bytes)
                     : QStringLiteral("%1 %2").arg(value, 0, 'f', value < 10.0 ? 2 : 1).arg(QString::fromUtf8(units[unit]));
}

DatasetPanel::DatasetPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    auto* form = new QFormLayout();
    auto make_label = [this](const char* name) {
        auto* label = new QLabel(QStringLiteral("–"), this);
        label->setObjectName(QString::fromUtf8(name));
        label->setTextInteractionFlags(Qt::TextSelectableByMouse);
        return label;
    };
    m_path = make_label("path");
    m_path->setWordWrap(true);
    m_format = make_label("format");
    m_cells = make_label("cells");
    m_genes = make_label("genes");
    m_nnz = make_label("nnz");
    m_counts = make_label("counts");
    m_matrix = make_label("matrix");
    m_matrix->setWordWrap(true);
    m_names = make_label("names");
    m_memory = make_label("memory");
    m_devices = make_label("devices");
    form->addRow(tr("file"), m_path);
    form->addRow(tr("format"), m_format);
    form->addRow(tr("cells"), m_cells);
    form->addRow(tr("genes"), m_genes);
    form->addRow(tr("non-zeros"), m_nnz);
    form->addRow(tr("matrix"), m_matrix);
    form->addRow(tr("values"), m_counts);
    form->addRow(tr("gene names"), m_names);
    form->addRow(tr("memory"), m_memory);
    form->addRow(tr("devices"), m_devices);
    layout->addLayout(form);
    m_columns = new QTreeWidget(this);
    m_columns->setColumnCount(2);
    m_columns->setHeaderLabels({tr("annotation"), tr("type")});
    m_columns->header()->setSectionResizeMode(0, QHeaderView::Stretch);
    m_columns->setRootIsDecorated(true);
    layout->addWidget(m_columns, 1);
    setSummary(nullptr);
}

void DatasetPanel::setSummary(const DatasetSummary* summary) {
    m_columns->clear();
    if (!summary) {
        for (QLabel* label : {m_path, m_format, m_cells, m_genes, m_nnz, m_matrix, m_counts, m_names, m_memory, m_devices})
            label->setText(QStringLiteral("–"));
        m_path->setText(tr("no dataset (File > Open, or drop a file here)"));
        m_shown_path.clear();
        return;
    }
    const QLocale locale(QLocale::English);
    m_path->setText(QFileInfo(QString::fromStdString(summary->path)).fileName());
    m_path->setToolTip(QString::fromStdString(summary->path));
    m_format->setText(QString::fromStdString(summary->format));
    m_cells->setText(locale.toString(static_cast<qlonglong>(summary->shape.num_cells)));
    m_genes->setText(locale.toString(static_cast<qlonglong>(summary->shape.num_genes)));
    m_nnz->setText(locale.toString(static_cast<qlonglong>(summary->nnz)));
    // Which matrix is analysed, and why when the file did not leave the choice to X
    // (e.g. "X is absent (anndata X = None): analysing raw/X").
    const QString matrix = QString::fromStdString(summary->matrix_name.empty() ? std::string("X") : summary->matrix_name);
    m_matrix->setText(summary->open_note.empty() ? matrix
                                                 : QStringLiteral("%1 — %2").arg(matrix, QString::fromStdString(summary->open_note)));
    m_counts->setText(QString::fromUtf8(matrix_content_name(summary->content.content)));
    m_counts->setToolTip(QString::fromStdString(summary->content.evidence));
    m_names->setText(summary->num_var_names_made_unique > 0
                         ? tr("%1 duplicate gene names made unique")
                               .arg(locale.toString(static_cast<qlonglong>(summary->num_var_names_made_unique)))
                         : tr("as stored"));
    m_memory->setText(format_bytes(summary->memory_bytes));
    QStringList devices;
    for (const std::string& device : summary->devices) devices << QString::fromStdString(device);
    m_devices->setText(devices.isEmpty() ? QStringLiteral("–") : devices.join(QStringLiteral(", ")));

    auto add_group = [&](const QString& title, const std::vector<ColumnSummary>& columns) {
        auto* group = new QTreeWidgetItem(m_columns, {QStringLiteral("%1 (%2)").arg(title).arg(columns.size())});
        for (const ColumnSummary& column : columns) {
            QString type = QString::fromStdString(column.type);
            if (column.type == "categorical") type += QStringLiteral(" (%1)").arg(column.num_categories);
            new QTreeWidgetItem(group, {QString::fromStdString(column.name), type});
        }
        group->setExpanded(title == QStringLiteral("obs"));
    };
    add_group(QStringLiteral("obs"), summary->obs_columns);
    add_group(QStringLiteral("var"), summary->var_columns);
    auto* obsm = new QTreeWidgetItem(m_columns, {QStringLiteral("obsm (%1)").arg(summary->obsm_keys.size())});
    for (const std::string& key : summary->obsm_keys) new QTreeWidgetItem(obsm, {QString::fromStdString(key)});
    obsm->setExpanded(true);
    const QString path = QString::fromStdString(summary->path);
    if (path != m_shown_path) {
        m_shown_path = path;
        emit datasetOpened(summary->content.content);
    }
}

QString DatasetPanel::value(const QString& key) const {
    if (key == QStringLiteral("format")) return m_format->text();
    if (key == QStringLiteral("cells")) return m_cells->text();
    if (key == QStringLiteral("genes")) return m_genes->text();
    if (key == QStringLiteral("nnz")) return m_nnz->text();
    if (key == QStringLiteral("memory")) return m_memory->text();
    if (key == QStringLiteral("devices")) return m_devices->text();
    if (key == QStringLiteral("path")) return m_path->text();
    if (key == QStringLiteral("values")) return m_counts->text();
    if (key == QStringLiteral("matrix")) return m_matrix->text();
    if (key == QStringLiteral("names")) return m_names->text();
    return {};
}

}  // namespace fathom::ui
