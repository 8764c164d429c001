#include "ui/MarkersPanel.hpp"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

namespace fathom::ui {

void MarkerTableModel::setMarkers(MarkerGroup markers) {
    beginResetModel();
    m_markers = std::move(markers);
    endResetModel();
}

int MarkerTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(m_markers.genes.size());
}

int MarkerTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : NumColumns; }

QVariant MarkerTableModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount()) return {};
    const auto row = static_cast<std::size_t>(index.row());
    if (role == Qt::TextAlignmentRole && index.column() != Gene)
        return QVariant::fromValue(Qt::Alignment(Qt::AlignRight | Qt::AlignVCenter));
    if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
    switch (index.column()) {
        case Gene: return QString::fromStdString(m_markers.genes[row]);
        case Score: return m_markers.scores[row];
        case LogFoldChange: return m_markers.logfoldchanges[row];
        case PValue: return m_markers.pvals[row];
        case PValueAdjusted: return m_markers.pvals_adj[row];
        case PctIn: return 100.0 * m_markers.pct_group[row];
        case PctOut: return 100.0 * m_markers.pct_rest[row];
        default: return {};
    }
}

QVariant MarkerTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (role != Qt::DisplayRole) return {};
    if (orientation == Qt::Vertical) return section + 1;
    static const char* const names[NumColumns] = {"gene", "score", "logfc", "pval", "pval_adj", "% in", "% out"};
    return section >= 0 && section < NumColumns ? QString::fromUtf8(names[section]) : QVariant();
}

MarkersPanel::MarkersPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    auto* buttons = new QHBoxLayout;
    auto* versus_rest = new QPushButton(tr("Selection vs rest"), this);
    versus_rest->setObjectName(QStringLiteral("versusRest"));
    m_versus_reference = new QPushButton(tr("vs reference"), this);
    m_versus_reference->setObjectName(QStringLiteral("versusReference"));
    m_versus_reference->setEnabled(false);
    auto* set_reference = new QPushButton(tr("Set reference"), this);
    set_reference->setToolTip(tr("Store the current selection as the reference group"));
    m_method = new QComboBox(this);
    for (const auto method : {MarkerMethod::TTest, MarkerMethod::Wilcoxon})
        m_method->addItem(QString::fromUtf8(marker_method_name(method)), static_cast<int>(method));
    buttons->addWidget(versus_rest);
    buttons->addWidget(set_reference);
    buttons->addWidget(m_versus_reference);
    buttons->addWidget(m_method);
    layout->addLayout(buttons);
    m_reference = new QLabel(tr("reference: none"), this);
    layout->addWidget(m_reference);
    auto* column_row = new QHBoxLayout;
    column_row->addWidget(new QLabel(tr("Groups of"), this));
    m_column = new QComboBox(this);
    m_column->setObjectName(QStringLiteral("markersColumn"));
    m_column->setToolTip(tr("A categorical obs column (the file's clusters or cell types, leiden, an annotation)"));
    m_column->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_column->setMinimumContentsLength(8);
    auto* by_column = new QPushButton(tr("vs rest"), this);
    by_column->setObjectName(QStringLiteral("columnMarkers"));
    by_column->setToolTip(tr("Marker genes of every group of the column against the rest, over every gene"));
    m_group = new QComboBox(this);
    m_group->setObjectName(QStringLiteral("markersGroup"));
    m_group->setToolTip(tr("The group whose markers the table shows"));
    m_group->setEnabled(false);
    column_row->addWidget(m_column, 1);
    column_row->addWidget(by_column);
    column_row->addWidget(new QLabel(tr("show"), this));
    column_row->addWidget(m_group, 1);
    layout->addLayout(column_row);
    connect(by_column, &QPushButton::clicked, this, [this] {
        if (!m_column->currentText().isEmpty()) emit columnMarkersRequested(m_column->currentText());
    });
    connect(m_group, &QComboBox::currentIndexChanged, this, [this](int index) { setCurrentGroup(index); });

    m_model = new MarkerTableModel(this);
    m_proxy = new QSortFilterProxyModel(this);
    m_proxy->setSourceModel(m_model);
    m_table = new QTableView(this);
    m_table->setModel(m_proxy);
    m_table->setSortingEnabled(true);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->verticalHeader()->setDefaultSectionSize(20);
    layout->addWidget(m_table, 1);
    m_table->setToolTip(tr("Double-click a gene to colour the plot by it"));
    connect(m_table, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
        const QModelIndex source = m_proxy->mapToSource(index);
        if (!source.isValid()) return;
        const QString gene = m_model->data(m_model->index(source.row(), MarkerTableModel::Gene)).toString();
        if (!gene.isEmpty()) emit geneActivated(gene);
    });

    auto* bottom = new QHBoxLayout;
    m_status = new QLabel(tr("Select cells, then ask for their markers"), this);
    m_status->setWordWrap(true);
    m_export = new QPushButton(tr("Export CSV..."), this);
    m_export->setEnabled(false);
    bottom->addWidget(m_status, 1);
    bottom->addWidget(m_export);
    layout->addLayout(bottom);

    connect(versus_rest, &QPushButton::clicked, this, [this] { emit computeRequested(false); });
    connect(m_versus_reference, &QPushButton::clicked, this, [this] { emit computeRequested(true); });
    connect(set_reference, &QPushButton::clicked, this, &MarkersPanel::referenceRequested);
    connect(m_export, &QPushButton::clicked, this, &MarkersPanel::exportRequested);
}

void MarkersPanel::setResult(const MaskMarkers& result) {
    m_column_groups.clear();
    {
        const QSignalBlocker quiet(m_group);
        m_group->clear();
    }
    m_group->setEnabled(false);
    m_model->setMarkers(result.markers);
    m_table->sortByColumn(-1, Qt::AscendingOrder);  // rank order until the user sorts
    m_export->setEnabled(!result.markers.genes.empty());
    setStatus(tr("%1: %2 selected cells vs %3 %4 cells, %5 genes")
                  .arg(QString::fromUtf8(marker_method_name(result.method)))
                  .arg(result.num_group_cells)
                  .arg(result.num_reference_cells)
                  .arg(QString::fromStdString(result.reference))
                  .arg(result.markers.genes.size()) +
              tr(" (%1)").arg(QString::fromUtf8(value_layer_label(result.layer))));
}

void MarkersPanel::setColumnResult(const ObsMarkers& result) {
    m_column_groups = result.groups;
    if (const int at = m_column->findText(QString::fromStdString(result.groupby)); at >= 0) {
        const QSignalBlocker quiet(m_column);
        m_column->setCurrentIndex(at);
    }
    m_column_summary = tr("%1: groups of %2 vs rest, over every gene of %3")
                           .arg(QString::fromUtf8(marker_method_name(result.method)),
                                QString::fromStdString(result.groupby),
                                QString::fromUtf8(value_layer_label(result.layer)));
    if (!result.skipped.empty())
        m_column_summary += tr("; left out (under 2 cells): %1").arg(static_cast<qsizetype>(result.skipped.size()));
    {
        const QSignalBlocker quiet(m_group);
        m_group->clear();
        for (const MarkerGroup& group : m_column_groups) m_group->addItem(QString::fromStdString(group.group));
    }
    m_group->setEnabled(!m_column_groups.empty());
    setCurrentGroup(m_column_groups.empty() ? -1 : 0);
}

int MarkersPanel::currentGroup() const { return m_column_groups.empty() ? -1 : m_group->currentIndex(); }

void MarkersPanel::setCurrentGroup(int index) {
    if (index < 0 || static_cast<std::size_t>(index) >= m_column_groups.size()) return;
    if (m_group->currentIndex() != index) {
        const QSignalBlocker quiet(m_group);
        m_group->setCurrentIndex(index);
    }
    const MarkerGroup& group = m_column_groups[static_cast<std::size_t>(index)];
    m_model->setMarkers(group);
    m_table->sortByColumn(-1, Qt::AscendingOrder);
    m_export->setEnabled(!group.genes.empty());
    setStatus(m_column_summary);
}

void MarkersPanel::setGroupingColumns(const QStringList& columns) {
    const QString kept = m_column->currentText();
    const QSignalBlocker quiet(m_column);
    m_column->clear();
    m_column->addItems(columns);
    const int at = m_column->findText(kept);
    m_column->setCurrentIndex(at >= 0 ? at : columns.isEmpty() ? -1 : 0);
}

QString MarkersPanel::groupingColumn() const { return m_column->currentText(); }

void MarkersPanel::clear() {
    m_column_groups.clear();
    {
        const QSignalBlocker quiet(m_group);
        m_group->clear();
    }
    m_group->setEnabled(false);
    m_model->setMarkers({});
    m_export->setEnabled(false);
    setReferenceCount(0);
    setStatus(QString());
}

void MarkersPanel::setStatus(const QString& text) { m_status->setText(text); }
QString MarkersPanel::status() const { return m_status->text(); }

void MarkersPanel::setReferenceCount(qint64 count) {
    m_versus_reference->setEnabled(count > 0);
    m_reference->setText(count > 0 ? tr("reference: %1 cells").arg(count) : tr("reference: none"));
}

MarkerMethod MarkersPanel::method() const { return static_cast<MarkerMethod>(m_method->currentData().toInt()); }
bool MarkersPanel::hasResult() const { return m_model->rowCount() > 0; }

}  // namespace fathom::ui
