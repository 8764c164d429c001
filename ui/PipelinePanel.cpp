#include "ui/PipelinePanel.hpp"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <variant>

#include "core/engine/Engine.hpp"

namespace fathom::ui {

namespace {

using IntMember = int PipelineSettings::*;
using DoubleMember = double PipelineSettings::*;
using BoolMember = bool PipelineSettings::*;
using StringMember = std::string PipelineSettings::*;
using SeedMember = std::uint64_t PipelineSettings::*;

// One form field. Labels use scanpy's parameter names so users recognise them; the
// default of every field is read from PipelineSettings{} when the form is built.
struct FieldSpec {
    const char* key;    // scanpy name
    const char* label;
    std::variant<IntMember, DoubleMember, BoolMember, StringMember, SeedMember> member;
    double minimum = 0.0;
    double maximum = 0.0;
    double step = 1.0;
    int decimals = 0;
    std::vector<std::pair<const char*, const char*>> choices;  // (value, shown text) for strings
    const char* help = "";
};

const std::vector<FieldSpec>& field_table() {
    static const std::vector<FieldSpec> table = {
        {"recipe", "recipe", &PipelineSettings::recipe, 0, 0, 1, 0,
         {{"zheng17", "zheng17"}, {"seurat", "seurat"}, {"none", "none (X already processed)"}},
         "sc.pp.recipe_zheng17 / recipe_seurat, or none when X is already normalised"},
        {"min_counts", "min counts per cell", &PipelineSettings::min_counts_per_cell, 0, 1e9, 100, 0, {},
         "sc.pp.filter_cells(min_counts=...) before the recipe (0 = keep all)"},
        {"n_top_genes", "n_top_genes", &PipelineSettings::num_top_genes, 1, 100000, 100, 0, {},
         "highly variable genes kept by the recipe"},
        {"n_pcs", "n_pcs", &PipelineSettings::num_pcs, 1, 500, 1, 0, {}, "principal components (sc.pp.pca n_comps)"},
        {"run_neighbors", "kNN graph", &PipelineSettings::run_neighbors, 0, 0, 1, 0, {}, "sc.pp.neighbors"},
        {"n_neighbors", "n_neighbors", &PipelineSettings::num_neighbors, 2, 500, 1, 0, {},
         "neighbours per cell, the cell itself included (scanpy's count)"},
        {"knn_method", "kNN method", &PipelineSettings::knn_method, 0, 0, 1, 0,
         {{"auto", "auto"}, {"exact", "exact"}, {"ivf", "IVF"}, {"nndescent", "NN-descent"}, {"hnsw", "HNSW"}},
         "auto: exact below 8192 cells (as scanpy), else IVF (k-means inverted file, refined)"},
        {"run_umap", "UMAP", &PipelineSettings::run_umap, 0, 0, 1, 0, {}, "sc.tl.umap"},
        {"min_dist", "min_dist", &PipelineSettings::min_dist, 0.0, 10.0, 0.05, 3, {}, "UMAP min_dist"},
        {"spread", "spread", &PipelineSettings::spread, 0.01, 10.0, 0.1, 3, {}, "UMAP spread"},
        {"n_epochs", "n_epochs", &PipelineSettings::umap_epochs, 0, 10000, 50, 0, {},
         "UMAP epochs (0 = scanpy's default: 500 up to 10,000 cells, else 200)"},
        {"n_components", "n_components", &PipelineSettings::umap_components, 2, 3, 1, 0, {},
         "UMAP dimensions: 2, or 3 for the 3-D view (View > 3-D view)"},
        {"run_leiden", "Leiden", &PipelineSettings::run_leiden, 0, 0, 1, 0, {}, "sc.tl.leiden"},
        {"resolution", "resolution", &PipelineSettings::resolution, 0.01, 50.0, 0.1, 2, {}, "Leiden resolution"},
        {"markers", "markers", &PipelineSettings::markers, 0, 0, 1, 0,
         {{"t-test", "t-test"}, {"wilcoxon", "wilcoxon"}, {"", "none"}}, "sc.tl.rank_genes_groups method"},
        {"random_state", "random_state", &PipelineSettings::seed, 0, 2147483647.0, 1, 0, {},
         "seed of every randomised step"},
        {"deterministic", "deterministic", &PipelineSettings::deterministic, 0, 0, 1, 0, {},
         "bit-for-bit reproducible kNN graph and UMAP for a seed at any thread count (slower)"},
    };
    return table;
}

}  // namespace

PipelinePanel::PipelinePanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    auto* form = new QFormLayout();
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    const PipelineSettings defaults{};
    const auto& table = field_table();
    for (int index = 0; index < static_cast<int>(table.size()); ++index) {
        const FieldSpec& spec = table[index];
        QWidget* editor = nullptr;
        if (std::holds_alternative<IntMember>(spec.member)) {
            auto* spin = new QSpinBox(this);
            spin->setRange(static_cast<int>(spec.minimum), static_cast<int>(spec.maximum));
            spin->setSingleStep(static_cast<int>(spec.step));
            spin->setValue(defaults.*std::get<IntMember>(spec.member));
            connect(spin, &QSpinBox::valueChanged, this, &PipelinePanel::revalidate);
            editor = spin;
        } else if (std::holds_alternative<SeedMember>(spec.member)) {
            auto* spin = new QSpinBox(this);
            spin->setRange(0, std::numeric_limits<int>::max());
            spin->setValue(static_cast<int>(defaults.*std::get<SeedMember>(spec.member)));
            connect(spin, &QSpinBox::valueChanged, this, &PipelinePanel::revalidate);
            editor = spin;
        } else if (std::holds_alternative<DoubleMember>(spec.member)) {
            auto* spin = new QDoubleSpinBox(this);
            spin->setDecimals(spec.decimals);
            spin->setRange(spec.minimum, spec.maximum);
            spin->setSingleStep(spec.step);
            spin->setValue(defaults.*std::get<DoubleMember>(spec.member));
            connect(spin, &QDoubleSpinBox::valueChanged, this, &PipelinePanel::revalidate);
            editor = spin;
        } else if (std::holds_alternative<BoolMember>(spec.member)) {
            auto* check = new QCheckBox(this);
            check->setChecked(defaults.*std::get<BoolMember>(spec.member));
            connect(check, &QCheckBox::toggled, this, &PipelinePanel::revalidate);
            editor = check;
        } else {
            auto* combo = new QComboBox(this);
            for (const auto& [value, text] : spec.choices) combo->addItem(QString::fromUtf8(text), QString::fromUtf8(value));
            const int at = combo->findData(QString::fromStdString(defaults.*std::get<StringMember>(spec.member)));
            combo->setCurrentIndex(std::max(0, at));
            connect(combo, &QComboBox::currentIndexChanged, this, &PipelinePanel::revalidate);
            editor = combo;
        }
        editor->setObjectName(QString::fromUtf8(spec.key));
        editor->setToolTip(QString::fromUtf8(spec.help));
        form->addRow(QString::fromUtf8(spec.label), editor);
        m_fields.push_back({QString::fromUtf8(spec.key), editor, index});
    }
    m_devices = new QComboBox(this);
    m_devices->setEditable(true);
    m_devices->addItems({QStringLiteral("cpu:1"), QStringLiteral("cpu:2"), QStringLiteral("cpu:4"),
                         QStringLiteral("cuda:0")});
    m_devices->setCurrentText(QString::fromStdString(EngineConfig{}.devices));
    m_devices->setToolTip(tr("Shards of the matrix: cpu, cpu:N or cuda:0,1,... (CUDA falls back to CPU)"));
    m_devices->setObjectName(QStringLiteral("devices"));
    form->addRow(tr("devices"), m_devices);
    layout->addLayout(form);

    m_error = new QLabel(this);
    m_error->setWordWrap(true);
    m_error->setStyleSheet(QStringLiteral("color: #d04040;"));
    m_error->hide();
    layout->addWidget(m_error);

    auto* buttons = new QHBoxLayout();
    m_run = new QPushButton(tr("Run"), this);
    m_run->setObjectName(QStringLiteral("run"));
    m_cancel = new QPushButton(tr("Cancel"), this);
    m_cancel->setObjectName(QStringLiteral("cancel"));
    m_cancel->setEnabled(false);
    m_defaults = new QPushButton(tr("Defaults"), this);
    buttons->addWidget(m_run);
    buttons->addWidget(m_cancel);
    buttons->addStretch(1);
    buttons->addWidget(m_defaults);
    layout->addLayout(buttons);
    layout->addStretch(1);
    connect(m_run, &QPushButton::clicked, this, &PipelinePanel::runRequested);
    connect(m_cancel, &QPushButton::clicked, this, &PipelinePanel::cancelRequested);
    connect(m_defaults, &QPushButton::clicked, this, &PipelinePanel::resetToDefaults);
    revalidate();
}

PipelineSettings PipelinePanel::settings() const {
    PipelineSettings settings{};
    const auto& table = field_table();
    for (const Field& field : m_fields) {
        const FieldSpec& spec = table[field.index];
        if (auto* member = std::get_if<IntMember>(&spec.member))
            settings.**member = static_cast<QSpinBox*>(field.editor)->value();
        else if (auto* seed = std::get_if<SeedMember>(&spec.member))
            settings.**seed = static_cast<std::uint64_t>(static_cast<QSpinBox*>(field.editor)->value());
        else if (auto* number = std::get_if<DoubleMember>(&spec.member))
            settings.**number = static_cast<QDoubleSpinBox*>(field.editor)->value();
        else if (auto* flag = std::get_if<BoolMember>(&spec.member))
            settings.**flag = static_cast<QCheckBox*>(field.editor)->isChecked();
        else if (auto* text = std::get_if<StringMember>(&spec.member))
            settings.**text = static_cast<QComboBox*>(field.editor)->currentData().toString().toStdString();
    }
    return settings;
}

void PipelinePanel::setSettings(const PipelineSettings& settings) {
    const auto& table = field_table();
    for (const Field& field : m_fields) {
        const FieldSpec& spec = table[field.index];
        if (auto* member = std::get_if<IntMember>(&spec.member))
            static_cast<QSpinBox*>(field.editor)->setValue(settings.**member);
        else if (auto* seed = std::get_if<SeedMember>(&spec.member))
            static_cast<QSpinBox*>(field.editor)->setValue(static_cast<int>(settings.**seed));
        else if (auto* number = std::get_if<DoubleMember>(&spec.member))
            static_cast<QDoubleSpinBox*>(field.editor)->setValue(settings.**number);
        else if (auto* flag = std::get_if<BoolMember>(&spec.member))
            static_cast<QCheckBox*>(field.editor)->setChecked(settings.**flag);
        else if (auto* text = std::get_if<StringMember>(&spec.member)) {
            auto* combo = static_cast<QComboBox*>(field.editor);
            const int at = combo->findData(QString::fromStdString(settings.**text));
            if (at >= 0) combo->setCurrentIndex(at);
        }
    }
    revalidate();
}

void PipelinePanel::resetToDefaults() { setSettings(PipelineSettings{}); }

QString PipelinePanel::devices() const { return m_devices->currentText().trimmed(); }
void PipelinePanel::setDevices(const QString& devices) { m_devices->setCurrentText(devices); }

QString PipelinePanel::validationError() const {
    try {
        settings().validate();
    } catch (const std::invalid_argument& error) {
        return QString::fromUtf8(error.what());
    }
    return {};
}

void PipelinePanel::revalidate() {
    const QString error = validationError();
    m_error->setText(error);
    m_error->setVisible(!error.isEmpty());
    m_run->setEnabled(error.isEmpty() && !m_running);
    emit settingsChanged();
}

void PipelinePanel::setRunning(bool running) {
    m_running = running;
    for (const Field& field : m_fields) field.editor->setEnabled(!running);
    m_devices->setEnabled(!running);
    m_defaults->setEnabled(!running);
    m_cancel->setEnabled(running);
    revalidate();
}

bool PipelinePanel::isRunning() const { return m_running; }

QWidget* PipelinePanel::fieldEditor(const QString& key) const {
    for (const Field& field : m_fields)
        if (field.key == key) return field.editor;
    if (key == QStringLiteral("devices")) return m_devices;
    return nullptr;
}

QStringList PipelinePanel::fieldKeys() const {
    QStringList keys;
    for (const Field& field : m_fields) keys << field.key;
    return keys;
}

}  // namespace fathom::ui
