#pragma once
/// The pipeline form: one field per setting of the schema (settings_schema.hpp), with
/// its label, range, choices and help, initialised from `PipelineSettings{}`, plus the
/// engine's device list; Run / Cancel. A step's values are disabled while the step is
/// off; Run is disabled while the settings do not validate (the message names the
/// setting).
#include <QString>
#include <QWidget>
#include <vector>

#include "core/engine/PipelineSettings.hpp"
#include "core/engine/matrix_content.hpp"

class QLabel;
class QPushButton;
class QComboBox;
class QFormLayout;

namespace fathom::ui {

/// Form for PipelineSettings and the device list.
class PipelinePanel : public QWidget {
    Q_OBJECT
public:
    explicit PipelinePanel(QWidget* parent = nullptr);

    /// The settings the form shows.
    PipelineSettings settings() const;
    /// Shows `settings` in the form.
    void setSettings(const PipelineSettings& settings);
    /// Restores every field to PipelineSettings{}.
    void resetToDefaults();
    /// Pre-chooses the recipe that fits what X holds (suggested_recipe: zheng17 for
    /// counts, none for log-normalised or scaled data) when the chosen one contradicts
    /// it (seurat stays on counts); the other fields stay.
    void suggestRecipe(fathom::MatrixContent content);
    /// The device list for EngineConfig::devices ("cpu:1", "cpu:4", "cuda:0,1", ...).
    QString devices() const;
    void setDevices(const QString& devices);
    /// Empty when the settings validate; else PipelineSettings::validate()'s message.
    QString validationError() const;
    /// Disables the form and Run while a job runs; enables Cancel.
    void setRunning(bool running);
    bool isRunning() const;
    /// The editor of a field by its schema name ("n_top_genes", "resolution", ...);
    /// null when unknown. For tests and scripting.
    QWidget* fieldEditor(const QString& key) const;
    /// Keys of all generated fields, in form order.
    QStringList fieldKeys() const;

signals:
    void runRequested();
    void cancelRequested();
    void settingsChanged();

private:
    void revalidate();

    struct Field {
        QString key;
        QWidget* editor = nullptr;
        int index = 0;  // into the field table (PipelinePanel.cpp)
    };
    std::vector<Field> m_fields;
    QComboBox* m_devices = nullptr;
    QLabel* m_error = nullptr;
    QPushButton* m_run = nullptr;
    QPushButton* m_cancel = nullptr;
    QPushButton* m_defaults = nullptr;
    bool m_running = false;
};

}  // namespace fathom::ui
