// The export dialogs' forms: the figure size keeps its physical size across units, the
// path follows the format, and the data dialog's choices become CsvExportOptions.
#include "ui/ExportDialogs.hpp"

#include <gtest/gtest.h>

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLineEdit>
#include <QListWidget>
#include <QRadioButton>
#include <QSpinBox>

namespace fathom::ui {
namespace {

TEST(FigureExportDialog, UnitsChangeTheNumbersNotTheSize) {
    FigureExportDialog dialog(QStringLiteral("leiden"));
    FigureOptions options;
    options.width_in = 6.0;
    options.height_in = 4.0;
    options.dpi = 600;
    dialog.setOptions(options);
    auto combos = dialog.findChildren<QComboBox*>();
    QComboBox* unit = nullptr;
    for (QComboBox* combo : combos)
        if (combo->findText(QStringLiteral("mm")) >= 0) unit = combo;
    ASSERT_NE(unit, nullptr);
    unit->setCurrentIndex(unit->findText(QStringLiteral("mm")));
    const auto spins = dialog.findChildren<QDoubleSpinBox*>();
    ASSERT_EQ(spins.size(), 2);
    EXPECT_NEAR(spins[0]->value(), 152.4, 1e-9);
    EXPECT_NEAR(spins[1]->value(), 101.6, 1e-9);
    const FigureOptions read = dialog.options();
    EXPECT_NEAR(read.width_in, 6.0, 1e-9);
    EXPECT_NEAR(read.height_in, 4.0, 1e-9);
    EXPECT_EQ(read.dpi, 600);

    // The file name follows the format, and a name without one gets it.
    dialog.setPath(QStringLiteral("/tmp/figure.png"));
    QComboBox* format = nullptr;
    for (QComboBox* combo : combos)
        if (combo != unit) format = combo;
    ASSERT_NE(format, nullptr);
    format->setCurrentIndex(2);
    EXPECT_EQ(dialog.path(), QStringLiteral("/tmp/figure.pdf"));
    dialog.setPath(QStringLiteral("/tmp/plain"));
    EXPECT_EQ(dialog.path(), QStringLiteral("/tmp/plain.pdf"));
}

TEST(DataExportDialog, ChoicesBecomeCsvOptions) {
    DataExportDialog dialog({QStringLiteral("leiden"), QStringLiteral("cell_type")},
                            {QStringLiteral("X_pca"), QStringLiteral("X_umap")}, true);
    EXPECT_FALSE(dialog.csv());
    dialog.findChild<QLineEdit*>()->setText(QStringLiteral("/tmp/out"));
    EXPECT_EQ(dialog.path(), QStringLiteral("/tmp/out.h5ad"));
    for (QRadioButton* button : dialog.findChildren<QRadioButton*>())
        if (button->text().startsWith(QStringLiteral("CSV"))) button->setChecked(true);
    ASSERT_TRUE(dialog.csv());
    EXPECT_EQ(dialog.path(), QStringLiteral("/tmp/out"));
    auto* list = dialog.findChild<QListWidget*>();
    ASSERT_EQ(list->count(), 2);
    list->item(1)->setCheckState(Qt::Unchecked);
    const CsvExportOptions options = dialog.csvOptions();
    EXPECT_EQ(options.projections, std::vector<std::string>{"X_umap"});
    ASSERT_TRUE(options.categories.has_value());
    EXPECT_EQ(*options.categories, std::vector<std::string>{"leiden"});
    EXPECT_TRUE(options.markers);
    list->item(0)->setCheckState(Qt::Unchecked);
    EXPECT_TRUE(dialog.csvOptions().categories->empty());  // none chosen: none written
}

}  // namespace
}  // namespace fathom::ui
