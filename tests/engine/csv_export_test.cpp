// Reduced-data exports of an analysis: the h5ad that anndata reads back (categoricals,
// colours in category order, obsm shapes, X omitted on request) and the Loupe-style CSVs.
#include "core/engine/csv_export.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/engine/Engine.hpp"
#include "core/io/errors.hpp"
#include "core/io/synth.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/python.hpp"

namespace fathom {
namespace {

using namespace std::chrono_literals;

/// An engine that ran PCA, neighbours, UMAP, Leiden and markers on 600 synthetic cells.
std::shared_ptr<Engine> analysed_engine() {
    static const std::shared_ptr<Engine> engine = [] {
        const auto folder = test::temp_dir("export");
        const std::string file = (folder / "synthetic.h5ad").string();
        io::SynthOptions synth;
        synth.num_cells = 600;
        synth.num_genes = 500;
        synth.num_cell_types = 4;
        synth.markers_per_type = 20;
        synth.seed = 11;
        io::write_synthetic(file, synth);
        auto made = std::make_shared<Engine>(EngineConfig{"cpu:2"});
        EXPECT_TRUE(made->open(file).wait_for(120s));
        PipelineSettings settings;
        settings.num_top_genes = 200;
        settings.pca.num_components = 15;
        settings.umap.num_epochs = 50;
        const JobHandle run = made->run(settings);
        EXPECT_TRUE(run.wait_for(300s));
        EXPECT_EQ(run.status().state, JobState::Succeeded) << run.status().message;
        return made;
    }();
    return engine;
}

std::vector<std::string> read_lines(const std::filesystem::path& path) {
    std::ifstream stream(path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(stream, line);) lines.push_back(line);
    return lines;
}

TEST(CsvExport, LoupeProjectionAndCategoriesMatchTheSnapshot) {
    const auto snapshot = analysed_engine()->snapshot();
    ASSERT_TRUE(snapshot->obsm.count("X_umap"));
    const auto folder = test::temp_dir("export-csv") / "out";
    const auto written = export_csv(*snapshot, folder.string());

    const auto& barcodes = snapshot->obs->index();
    const auto umap = read_lines(folder / "umap.csv");
    ASSERT_EQ(umap.size(), barcodes.size() + 1);
    EXPECT_EQ(umap[0], "Barcode,UMAP-1,UMAP-2");
    const auto& coordinates = *snapshot->obsm.at("X_umap");
    for (std::size_t cell : {std::size_t{0}, barcodes.size() / 2, barcodes.size() - 1}) {
        std::istringstream row(umap[cell + 1]);
        std::string barcode, x, y;
        std::getline(row, barcode, ',');
        std::getline(row, x, ',');
        std::getline(row, y, ',');
        EXPECT_EQ(barcode, barcodes[cell]);
        // Shortest round-trip text: the float reads back exactly.
        EXPECT_EQ(std::stof(x), coordinates(static_cast<std::int64_t>(cell), 0));
        EXPECT_EQ(std::stof(y), coordinates(static_cast<std::int64_t>(cell), 1));
    }

    // Every categorical obs column: the pipeline's clusters and the file's cell types.
    for (const char* key : {"leiden", "cell_type"}) {
        const auto& column = std::get<CategoricalColumn>(snapshot->obs->find(key)->data);
        const auto lines = read_lines(folder / (std::string(key) + ".csv"));
        ASSERT_EQ(lines.size(), barcodes.size() + 1) << key;
        EXPECT_EQ(lines[0], "Barcode," + std::string(key));
        for (std::size_t cell = 0; cell < barcodes.size(); ++cell)
            ASSERT_EQ(lines[cell + 1], barcodes[cell] + "," + column.categories[static_cast<std::size_t>(column.codes[cell])])
                << key << " row " << cell;
    }
    const auto markers = read_lines(folder / "markers.csv");
    ASSERT_FALSE(markers.empty());
    EXPECT_EQ(markers[0], "group,gene,score,logfc,pval,pval_adj,pct");
    std::size_t expected_rows = 0;
    for (const auto& group : snapshot->markers) expected_rows += group.genes.size();
    EXPECT_EQ(markers.size(), expected_rows + 1);
    EXPECT_EQ(written.size(), 4u);
    for (const auto& entry : std::filesystem::directory_iterator(folder))
        EXPECT_EQ(entry.path().string().find(".tmp-"), std::string::npos) << "left over: " << entry.path();
}

TEST(CsvExport, ChosenColumnsOnlyAndBadKeysNamed) {
    const auto snapshot = analysed_engine()->snapshot();
    const auto folder = test::temp_dir("export-csv-chosen");
    CsvExportOptions options;
    options.projections = {"X_pca"};
    options.categories = std::vector<std::string>{"leiden"};
    options.markers = false;
    const auto written = export_csv(*snapshot, folder.string(), options);
    ASSERT_EQ(written.size(), 2u);
    EXPECT_EQ(read_lines(folder / "pca.csv").at(0), "Barcode,PCA-1,PCA-2");
    EXPECT_TRUE(std::filesystem::exists(folder / "leiden.csv"));
    EXPECT_FALSE(std::filesystem::exists(folder / "cell_type.csv"));
    EXPECT_FALSE(std::filesystem::exists(folder / "markers.csv"));

    options.categories = std::vector<std::string>{"total_counts"};
    try {
        export_csv(*snapshot, (folder / "bad").string(), options);
        FAIL() << "a numeric column was accepted as categories";
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find("'total_counts' is float, not categorical"), std::string::npos)
            << error.what();
    }
    // Nothing was written for the rejected request.
    EXPECT_FALSE(std::filesystem::exists(folder / "bad" / "pca.csv"));
}

TEST(CsvExport, UnwritableFolderFailsNamingTheFile) {
    const auto snapshot = analysed_engine()->snapshot();
    const auto folder = test::temp_dir("export-csv-blocked");
    // A plain file where the folder should be.
    std::ofstream(folder / "blocker") << "x";
    try {
        export_csv(*snapshot, (folder / "blocker").string());
        FAIL() << "export into a file succeeded";
    } catch (const io::WriteError& error) {
        EXPECT_NE(std::string(error.what()).find("blocker"), std::string::npos) << error.what();
    }
}

TEST(CsvExport, EngineJobWritesTheFiles) {
    auto engine = analysed_engine();
    const auto folder = test::temp_dir("export-csv-job");
    CsvExportOptions options;
    options.categories = std::vector<std::string>{};
    const JobHandle job = engine->export_csv(folder.string(), options);
    ASSERT_TRUE(job.wait_for(60s));
    ASSERT_EQ(job.status().state, JobState::Succeeded) << job.status().message;
    EXPECT_TRUE(std::filesystem::exists(folder / "umap.csv"));
    EXPECT_FALSE(std::filesystem::exists(folder / "leiden.csv"));  // an empty list: no categories

    options.categories = std::vector<std::string>{"no_such_column"};
    const JobHandle bad = engine->export_csv(folder.string(), options);
    ASSERT_TRUE(bad.wait_for(60s));
    EXPECT_EQ(bad.status().state, JobState::Failed);
    EXPECT_NE(bad.status().message.find("no_such_column"), std::string::npos) << bad.status().message;
}

TEST(H5adExport, AnndataReadsCategoriesColoursAndEmbeddingsWithAndWithoutX) {
    auto engine = analysed_engine();
    const auto snapshot = engine->snapshot();
    const auto folder = test::temp_dir("export-h5ad");
    const std::string reduced = (folder / "reduced.h5ad").string();
    const std::string full = (folder / "full.h5ad").string();
    for (const auto& [path, with_matrix] : {std::pair{reduced, false}, std::pair{full, true}}) {
        const JobHandle job = engine->export_h5ad(path, with_matrix);
        ASSERT_TRUE(job.wait_for(120s));
        ASSERT_EQ(job.status().state, JobState::Succeeded) << job.status().message;
    }

    FATHOM_REQUIRE_PYTHON("anndata", "numpy");
    const auto& leiden = std::get<CategoricalColumn>(snapshot->obs->find("leiden")->data);
    const auto& cell_type = std::get<CategoricalColumn>(snapshot->obs->find("cell_type")->data);
    const auto joined = [](const std::vector<std::string>& values) {
        std::string out;
        for (const auto& value : values) out += (out.empty() ? "" : ",") + value;
        return out;
    };
    const auto result = test::run_python(R"(
import sys, anndata, numpy as np
reduced, full, cells, pcs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
a = anndata.read_h5ad(reduced)
assert a.X is None, type(a.X)
assert a.n_obs == cells, a.n_obs
for column in ['total_counts', 'n_genes_by_counts', 'pct_counts_mt']:
    assert column in a.obs.columns, column
assert a.obsm['X_pca'].shape == (cells, pcs), a.obsm['X_pca'].shape
assert a.obsm['X_umap'].shape == (cells, 2), a.obsm['X_umap'].shape
for key, categories, colors in [('leiden', sys.argv[5], sys.argv[6]), ('cell_type', sys.argv[7], sys.argv[8])]:
    assert str(a.obs[key].dtype) == 'category', (key, a.obs[key].dtype)
    assert list(a.obs[key].cat.categories) == categories.split(','), (key, list(a.obs[key].cat.categories))
    assert list(a.uns[key + '_colors']) == colors.split(','), (key, list(a.uns[key + '_colors']))
b = anndata.read_h5ad(full)
assert b.X is not None and b.X.shape == (cells, b.n_vars), b.X
assert list(b.obs['leiden'].cat.categories) == list(a.obs['leiden'].cat.categories)
assert np.array_equal(np.asarray(b.obs['leiden'].cat.codes), np.asarray(a.obs['leiden'].cat.codes))
print('ok')
)",
                                         {reduced, full, std::to_string(snapshot->obs->num_rows()), "15",
                                          joined(leiden.categories), joined(snapshot->colors.at("leiden")),
                                          joined(cell_type.categories), joined(snapshot->colors.at("cell_type"))});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_NE(result.output.find("ok"), std::string::npos) << result.output;
}

}  // namespace
}  // namespace fathom
