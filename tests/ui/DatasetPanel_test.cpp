// The Dataset panel's summary rows, from a DatasetSummary.
#include <gtest/gtest.h>

#include "core/engine/Engine.hpp"
#include "tests/ui/ui_test_support.hpp"
#include "ui/DatasetPanel.hpp"

namespace fathom::ui {
namespace {

TEST(DatasetPanel, SaysHowManyDuplicateGeneNamesWereMadeUnique) {
    DatasetPanel panel;
    DatasetSummary summary;
    summary.path = "/data/pbmc.h5";
    summary.format = "10x HDF5 v3";
    summary.num_var_names_made_unique = 3;
    panel.setSummary(&summary);
    EXPECT_EQ(panel.value(QStringLiteral("names")), QStringLiteral("3 duplicate gene names made unique"));
    summary.num_var_names_made_unique = 0;
    panel.setSummary(&summary);
    EXPECT_EQ(panel.value(QStringLiteral("names")), QStringLiteral("as stored"));
}

}  // namespace
}  // namespace fathom::ui
