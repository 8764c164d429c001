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
#include <stdexcept>
#include <variant>

#include <QSignalBlocker>

#include "core/engine/Engine.hpp"
#include "core/engine/settings_schema.hpp"

namespace fathom::ui {

PipelinePanel::PipelinePanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    auto* form = new QFormLayout();
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    // One field per setting of the schema (core/engine/settings_schema.hpp): its label,
    // range, step, choices and help; the values shown first are PipelineSettings{}'s.
    const PipelineSettings defaults{};
    const auto& schema = pipeline_settings_schema();
    for (int index = 0; index < static_cast<int>(schema.size()); ++index) {
        const SettingSpec& spec = schema[static_cast<std::size_t>(index)];
        QWidget* editor = nullptr;
        switch (spec.kind) {
            case SettingKind::Integer: {
                auto* spin = new QSpinBox(this);
                spin->setRange(static_cast<int>(spec.minimum), static_cast<int>(spec.maximum));
                spin->setSingleStep(static_cast<int>(spec.increment));
                connect(spin, &QSpinBox::valueChanged, this, &PipelinePanel::revalidate);
                editor = spin;
                break;
            }
            case SettingKind::Real: {
                auto* spin = new QDoubleSpinBox(this);
                spin->setDecimals(spec.decimals);
                spin->setRange(spec.minimum, spec.maximum);
                spin->setSingleStep(spec.increment);
                connect(spin, &QDoubleSpinBox::valueChanged, this, &PipelinePanel::revalidate);
                editor = spin;
                break;
            }
            case SettingKind::Flag: {
                auto* check = new QCheckBox(this);
                connect(check, &QCheckBox::toggled, this, &PipelinePanel::revalidate);
                editor = check;
                break;
            }
            case SettingKind::Choice: {
                auto* combo = new QComboBox(this);
                for (const auto& entry : spec.choices)
                    combo->addItem(QString::fromStdString(entry.label), QString::fromStdString(entry.name));
                connect(combo, &QComboBox::currentIndexChanged, this, &PipelinePanel::revalidate);
                editor = combo;
                break;
            }
        }
        editor->setObjectName(QString::fromStdString(spec.name));
        editor->setToolTip(QString::fromStdString(spec.help));
        form->addRow(QString::fromStdString(spec.label), editor);
        m_fields.push_back({QString::fromStdString(spec.name), editor, index});
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
    setSettings(defaults);
}

PipelineSettings PipelinePanel::settings() const {
    PipelineSettings settings{};
    const auto& schema = pipeline_settings_schema();
    for (const Field& field : m_fields) {
        const SettingSpec& spec = schema[static_cast<std::size_t>(field.index)];
        switch (spec.kind) {
            case SettingKind::Integer:
                spec.set(settings, std::int64_t{static_cast<QSpinBox*>(field.editor)->value()});
                break;
            case SettingKind::Real: spec.set(settings, static_cast<QDoubleSpinBox*>(field.editor)->value()); break;
            case SettingKind::Flag: spec.set(settings, static_cast<QCheckBox*>(field.editor)->isChecked()); break;
            case SettingKind::Choice:
                spec.set(settings, static_cast<QComboBox*>(field.editor)->currentData().toString().toStdString());
                break;
        }
    }
    return settings;
}

void PipelinePanel::suggestRecipe(MatrixContent content) {
    // Only a recipe that contradicts X changes (seurat stays on counts).
    PipelineSettings current = settings();
    const Recipe fits = suggested_recipe(content);
    if ((fits == Recipe::None) == (current.recipe == Recipe::None)) return;
    current.recipe = fits;
    setSettings(current);
}

void PipelinePanel::setSettings(const PipelineSettings& settings) {
    const auto& schema = pipeline_settings_schema();
    for (const Field& field : m_fields) {
        const SettingSpec& spec = schema[static_cast<std::size_t>(field.index)];
        const SettingValue value = spec.get(settings);
        QSignalBlocker quiet(field.editor);  // one revalidate below, not one per field
        switch (spec.kind) {
            case SettingKind::Integer:
                static_cast<QSpinBox*>(field.editor)->setValue(static_cast<int>(std::get<std::int64_t>(value)));
                break;
            case SettingKind::Real: static_cast<QDoubleSpinBox*>(field.editor)->setValue(std::get<double>(value)); break;
            case SettingKind::Flag: static_cast<QCheckBox*>(field.editor)->setChecked(std::get<bool>(value)); break;
            case SettingKind::Choice: {
                auto* combo = static_cast<QComboBox*>(field.editor);
                const int at = combo->findData(QString::fromStdString(std::get<std::string>(value)));
                if (at >= 0) combo->setCurrentIndex(at);
                break;
            }
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
    // A step's values are editable while the step is switched on.
    const auto& schema = pipeline_settings_schema();
    const PipelineSettings shown = settings();
    for (const Field& field : m_fields) {
        const SettingSpec& spec = schema[static_cast<std::size_t>(field.index)];
        const bool on = spec.switch_name.empty() || std::get<bool>(find_setting(spec.switch_name)->get(shown));
        field.editor->setEnabled(on && !m_running);
    }
    const QString error = validationError();
    m_error->setText(error);
    m_error->setVisible(!error.isEmpty());
    m_run->setEnabled(error.isEmpty() && !m_running);
    emit settingsChanged();
}

void PipelinePanel::setRunning(bool running) {
    m_running = running;
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
