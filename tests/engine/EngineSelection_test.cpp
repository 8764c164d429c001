// The engine's selection requests: user annotation columns (kept across runs, exported as
// categoricals with colours), markers of a cell mask against rank_genes_groups run
// directly on the same groups, and the barcode / marker-table exports.
#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/engine/engine_jobs.hpp"
#include "core/algo/markers.hpp"
#include "core/algo/normalize.hpp"
#include "core/algo/recipes.hpp"
#include "core/backend/ShardSet.hpp"
#include "core/engine/Engine.hpp"
#include "core/io/RowSource.hpp"
#include "core/io/synth.hpp"
#include "tests/support/paths.hpp"

namespace fathom {
namespace {

using namespace std::chrono_literals;

io::SynthOptions dataset_options() {
    io::SynthOptions options;
    options.num_cells = 900;
    options.num_genes = 700;
    options.num_cell_types = 4;
    options.markers_per_type = 20;
    options.seed = 8;
    return options;
}

const std::string& dataset_path() {
    static const std::string path = [] {
        const auto folder = test::temp_dir("engine-selection");
        const std::string file = (folder / "synthetic.h5ad").string();
        io::write_synthetic(file, dataset_options());
        return file;
    }();
    return path;
}

PipelineSettings small_settings() {
    PipelineSettings settings;
    settings.num_top_genes = 200;
    settings.pca.num_components = 20;
    settings.run_umap = false;
    settings.run_leiden = false;
    settings.run_markers = false;
    return settings;
}

using test::finish;

const CategoricalColumn& truth_of(const AnalysisSnapshot& snapshot) {
    return std::get<CategoricalColumn>(snapshot.obs->find("cell_type")->data);
}

std::vector<std::uint8_t> mask_of_type(const AnalysisSnapshot& snapshot, std::int32_t type) {
    const auto& truth = truth_of(snapshot);
    std::vector<std::uint8_t> mask(truth.codes.size(), 0);
    for (std::size_t cell = 0; cell < mask.size(); ++cell) mask[cell] = truth.codes[cell] == type;
    return mask;
}

std::vector<std::string> read_lines(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

TEST(EngineSelection, AnnotationColumnIsPublishedKeptAcrossRunsAndExported) {
    Engine engine;
    ASSERT_EQ(finish(engine.open(dataset_path())).state, JobState::Succeeded);
    ASSERT_EQ(finish(engine.run(small_settings())).state, JobState::Succeeded);
    const auto before = engine.snapshot();
    const auto picked = mask_of_type(*before, 2);
    const auto num_picked = std::count(picked.begin(), picked.end(), 1);
    ASSERT_GT(num_picked, 10);

    ObsAnnotation annotation;
    annotation.name = "my_cells";
    annotation.categories = {"picked", "rest"};
    annotation.colors = {"#ff0000", "#d3d3d3"};
    for (const auto flag : picked) annotation.codes.push_back(flag ? 0 : 1);
    const auto status = finish(engine.set_obs_annotation(annotation));
    ASSERT_EQ(status.state, JobState::Succeeded) << status.message;
    const auto after = engine.snapshot();
    EXPECT_GT(after->version, before->version);
    const auto* column = std::get_if<CategoricalColumn>(&after->obs->find("my_cells")->data);
    ASSERT_NE(column, nullptr);
    EXPECT_EQ(column->categories, annotation.categories);
    EXPECT_EQ(column->codes, annotation.codes);
    EXPECT_EQ(std::count(column->codes.begin(), column->codes.end(), 0), num_picked);
    EXPECT_EQ(after->colors.at("my_cells"), annotation.colors);
    EXPECT_EQ(after->user_annotations, std::vector<std::string>{"my_cells"});
    EXPECT_EQ(before->obs->find("my_cells"), nullptr) << "published snapshots are immutable";

    // A later run keeps the column (it is stored per raw cell).
    PipelineSettings settings = small_settings();
    settings.pca.num_components = 10;
    ASSERT_EQ(finish(engine.run(settings)).state, JobState::Succeeded);
    const auto rerun = engine.snapshot();
    ASSERT_NE(rerun->obs->find("my_cells"), nullptr);
    EXPECT_EQ(std::get<CategoricalColumn>(rerun->obs->find("my_cells")->data).codes, annotation.codes);

    // The h5ad export carries it as a categorical with its colours.
    const auto folder = test::temp_dir("engine-selection-export");
    const std::string out = (folder / "annotated.h5ad").string();
    ASSERT_EQ(finish(engine.export_h5ad(out, false)).state, JobState::Succeeded);
    const io::OpenedDataset reread = io::open_dataset(out);
    const auto* exported = std::get_if<CategoricalColumn>(&reread.meta.obs.find("my_cells")->data);
    ASSERT_NE(exported, nullptr);
    EXPECT_EQ(exported->categories, annotation.categories);
    EXPECT_EQ(exported->codes, annotation.codes);
    const UnsNode* colors = reread.meta.uns.find("my_cells_colors");
    ASSERT_NE(colors, nullptr);
    EXPECT_EQ(std::get<std::vector<std::string>>(colors->value), annotation.colors);

    // Replacing keeps one column; removing brings the snapshot back to the engine's own obs.
    annotation.categories = {"rest", "picked", "other"};
    annotation.colors.clear();  // default palette
    ASSERT_EQ(finish(engine.set_obs_annotation(annotation)).state, JobState::Succeeded);
    EXPECT_EQ(engine.snapshot()->colors.at("my_cells").size(), 3u);
    EXPECT_EQ(std::get<CategoricalColumn>(engine.snapshot()->obs->find("my_cells")->data).categories[0], "rest");
    ASSERT_EQ(finish(engine.remove_obs_annotation("my_cells")).state, JobState::Succeeded);
    EXPECT_EQ(engine.snapshot()->obs->find("my_cells"), nullptr);
    EXPECT_TRUE(engine.snapshot()->user_annotations.empty());
    const auto missing = finish(engine.remove_obs_annotation("my_cells"));
    EXPECT_EQ(missing.state, JobState::Failed);
    EXPECT_NE(missing.message.find("'my_cells' is not a user annotation"), std::string::npos) << missing.message;
}

TEST(EngineSelection, BadAnnotationsFailNamingTheColumn) {
    Engine engine;
    ASSERT_EQ(finish(engine.open(dataset_path())).state, JobState::Succeeded);
    ObsAnnotation annotation;
    annotation.name = "bad";
    annotation.categories = {"a", "b"};
    annotation.codes.assign(10, 0);  // 900 cells
    auto status = finish(engine.set_obs_annotation(annotation));
    EXPECT_EQ(status.state, JobState::Failed);
    EXPECT_EQ(status.failure, FailureKind::Option);
    EXPECT_NE(status.message.find("obs annotation 'bad': 10 codes for 900 cells"), std::string::npos) << status.message;
    annotation.codes.assign(900, 2);
    status = finish(engine.set_obs_annotation(annotation));
    EXPECT_NE(status.message.find("code 2 is outside [-1, 2)"), std::string::npos) << status.message;
    annotation.codes.assign(900, 0);
    annotation.categories = {"a", "a"};
    status = finish(engine.set_obs_annotation(annotation));
    EXPECT_NE(status.message.find("category 'a' appears twice"), std::string::npos) << status.message;
    annotation.categories = {"a", "b"};
    annotation.colors = {"red", "#00ff00"};
    status = finish(engine.set_obs_annotation(annotation));
    EXPECT_NE(status.message.find("colour 'red' is not #rrggbb"), std::string::npos) << status.message;
    EXPECT_EQ(engine.snapshot()->obs->find("bad"), nullptr);
}

// The engine's mask markers against rank_genes_groups called directly on the same
// groups of every gene of the log-normalised counts (normalize_total to 1e4, log1p: the
// values scanpy's rank_genes_groups reads after those steps), with or without a run.
class MaskMarkersTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        engine = new Engine;
        ASSERT_EQ(finish(engine->open(dataset_path())).state, JobState::Succeeded);
        ASSERT_EQ(finish(engine->run(small_settings())).state, JobState::Succeeded);
        io::OpenedDataset opened = io::open_dataset(dataset_path());
        block = new ShardSet(ShardSet::make_cpu(io::load_shards(*opened.source, plan_row_ranges(opened.source->row_offsets(), 1))));
        JobContext ctx;
        NormalizeTotalOptions normalize;
        normalize.target_sum = 1e4;
        normalize_total(*block, normalize, ctx);
        log1p(*block, ctx);
        gene_names = new std::vector<std::string>(opened.meta.var.index());
    }
    static void TearDownTestSuite() {
        delete engine;
        delete block;
        delete gene_names;
    }

    static void expect_same(const MaskMarkers& engine_result, const std::vector<std::int32_t>& labels,
                            MarkerMethod method) {
        RankGenesGroupsOptions options;
        options.method = method;
        JobContext ctx;
        const std::vector<std::string> names = {"selection", engine_result.reference};
        const auto direct = rank_genes_groups(*block, labels, names, options, ctx);
        const auto& expected = direct.groups.front();
        const auto& got = engine_result.markers;
        EXPECT_EQ(engine_result.layer, ValueLayer::LogNorm) << "raw counts: log-normalised";
        EXPECT_EQ(engine_result.num_group_cells, expected.num_cells);
        EXPECT_EQ(engine_result.num_reference_cells, expected.num_rest_cells);
        ASSERT_EQ(got.genes.size(), expected.genes.size());
        ASSERT_GE(got.genes.size(), 20u);
        for (std::size_t rank = 0; rank < expected.genes.size(); ++rank) {
            const auto gene = (*gene_names)[static_cast<std::size_t>(expected.genes[rank].gene)];
            ASSERT_EQ(got.genes[rank], gene) << "rank " << rank;
            EXPECT_DOUBLE_EQ(got.scores[rank], expected.genes[rank].score) << gene;
            EXPECT_DOUBLE_EQ(got.pvals_adj[rank], expected.genes[rank].pval_adj) << gene;
            EXPECT_DOUBLE_EQ(got.pct_group[rank], expected.genes[rank].pct_group) << gene;
            EXPECT_DOUBLE_EQ(got.pct_rest[rank], expected.genes[rank].pct_rest) << gene;
            ASSERT_TRUE(std::isfinite(expected.genes[rank].logfoldchange)) << gene;
            EXPECT_DOUBLE_EQ(got.logfoldchanges[rank], expected.genes[rank].logfoldchange) << gene;
        }
        EXPECT_GT(got.scores.front(), 5.0) << "a cell type's markers stand out";
    }

    static inline Engine* engine = nullptr;
    static inline ShardSet* block = nullptr;
    static inline std::vector<std::string>* gene_names = nullptr;
};

TEST_F(MaskMarkersTest, SelectionVersusRestMatchesRankGenesGroups) {
    const auto snapshot = engine->snapshot();
    const auto group = mask_of_type(*snapshot, 1);
    for (const auto method : {MarkerMethod::TTest, MarkerMethod::Wilcoxon}) {
        MaskMarkersOptions options;
        options.method = method;
        const auto pending = engine->mask_markers(group, {}, options);
        const auto result = pending.wait();
        ASSERT_TRUE(result) << pending.status().message;
        EXPECT_EQ(result->reference, "rest");
        EXPECT_EQ(result->method, options.method);
        std::vector<std::int32_t> labels(group.size());
        for (std::size_t cell = 0; cell < group.size(); ++cell) labels[cell] = group[cell] ? 0 : 1;
        expect_same(*result, labels, method);
    }
}

TEST_F(MaskMarkersTest, SelectionVersusReferenceLeavesOtherCellsOut) {
    const auto snapshot = engine->snapshot();
    const auto group = mask_of_type(*snapshot, 0);
    const auto reference = mask_of_type(*snapshot, 3);
    const auto pending = engine->mask_markers(group, reference);
    const auto result = pending.wait();
    ASSERT_TRUE(result) << pending.status().message;
    EXPECT_EQ(result->reference, "reference");
    std::vector<std::int32_t> labels(group.size(), -1);
    for (std::size_t cell = 0; cell < group.size(); ++cell) labels[cell] = group[cell] ? 0 : reference[cell] ? 1 : -1;
    expect_same(*result, labels, MarkerMethod::TTest);
}

TEST_F(MaskMarkersTest, BadMasksFailWithAClearMessage) {
    const auto snapshot = engine->snapshot();
    const auto group = mask_of_type(*snapshot, 0);
    const auto check = [](const Pending<MaskMarkers>& pending, const std::string& expected) {
        const JobStatus status = pending.handle().wait();
        EXPECT_EQ(status.state, JobState::Failed);
        EXPECT_EQ(status.failure, FailureKind::Option);
        EXPECT_NE(status.message.find(expected), std::string::npos) << status.message;
    };
    check(engine->mask_markers(std::vector<std::uint8_t>(5, 1)), "the selection has 5 flags for the analysis's 900 cells");
    check(engine->mask_markers(group, group), "cells are both in the selection and in the reference");
    std::vector<std::uint8_t> single(group.size(), 0);
    single[static_cast<std::size_t>(std::find(group.begin(), group.end(), 0) - group.begin())] = 1;
    check(engine->mask_markers(single), "the selection has 1 cells; at least 2 are needed");
    check(engine->mask_markers(group, single), "the reference has");
    MaskMarkersOptions options;
    options.num_genes = -1;
    EXPECT_THROW(engine->mask_markers(group, {}, options), std::invalid_argument);

    // Without a run: the same test on the same values (every cell is analysed, the run
    // above kept every cell too).
    Engine fresh;
    ASSERT_EQ(finish(fresh.open(dataset_path())).state, JobState::Succeeded);
    const auto pending = fresh.mask_markers(group);
    const auto result = pending.wait();
    ASSERT_TRUE(result) << pending.status().message;
    std::vector<std::int32_t> labels(group.size());
    for (std::size_t cell = 0; cell < group.size(); ++cell) labels[cell] = group[cell] ? 0 : 1;
    expect_same(*result, labels, MarkerMethod::TTest);
}

TEST_F(MaskMarkersTest, MarkerCsvAndBarcodeFilesHoldExactlyTheirContent) {
    const auto snapshot = engine->snapshot();
    const auto group = mask_of_type(*snapshot, 2);
    const auto result = engine->mask_markers(group).wait();
    ASSERT_TRUE(result);
    const auto folder = test::temp_dir("engine-selection-files");

    MarkerGroup table = result->markers;
    table.genes[1] = "odd,\"name\"";  // quoted as CSV requires
    const auto csv = folder / "markers.csv";
    ASSERT_EQ(finish(engine->export_markers_csv(csv.string(), table)).state, JobState::Succeeded);
    const auto lines = read_lines(csv);
    ASSERT_EQ(lines.size(), table.genes.size() + 1);
    EXPECT_EQ(lines[0], "gene,score,logfc,pval,pval_adj,pct_in,pct_out");
    EXPECT_EQ(lines[2].substr(0, 15), "\"odd,\"\"name\"\"\",");
    for (std::size_t row = 0; row < table.genes.size(); ++row) {
        if (row == 1) continue;
        std::stringstream fields(lines[row + 1]);
        std::string gene, field;
        std::getline(fields, gene, ',');
        EXPECT_EQ(gene, table.genes[row]);
        const std::vector<double>* columns[] = {&table.scores, &table.logfoldchanges, &table.pvals, &table.pvals_adj,
                                                &table.pct_group, &table.pct_rest};
        for (const auto* column : columns) {
            ASSERT_TRUE(std::getline(fields, field, ','));
            const double expected = (*column)[row];
            if (std::isnan(expected)) {
                EXPECT_EQ(field, "nan");
                continue;
            }
            double value = 0.0;
            const auto parsed = std::from_chars(field.data(), field.data() + field.size(), value);
            ASSERT_EQ(parsed.ec, std::errc()) << field;
            EXPECT_EQ(value, expected) << "row " << row << " field " << field << " must read back exactly";
        }
    }

    const auto barcodes = folder / "selected.txt";
    ASSERT_EQ(finish(engine->export_barcodes(barcodes.string(), group)).state, JobState::Succeeded);
    std::vector<std::string> expected;
    for (std::size_t cell = 0; cell < group.size(); ++cell)
        if (group[cell]) expected.push_back(snapshot->obs->index()[cell]);
    EXPECT_EQ(read_lines(barcodes), expected);
    for (const auto& entry : std::filesystem::directory_iterator(folder))
        EXPECT_EQ(entry.path().string().find(".tmp"), std::string::npos) << "temporary file left: " << entry.path();

    // Unwritable destinations fail naming the path; nothing is left behind.
    const std::string nowhere = (folder / "missing" / "cells.txt").string();
    const auto failed = finish(engine->export_barcodes(nowhere, group));
    EXPECT_EQ(failed.state, JobState::Failed);
    EXPECT_EQ(failed.failure, FailureKind::Output);
    EXPECT_NE(failed.message.find(nowhere), std::string::npos) << failed.message;
    const auto short_mask = finish(engine->export_barcodes((folder / "x.txt").string(), {1, 0}));
    EXPECT_NE(short_mask.message.find("2 flags for 900 cells"), std::string::npos) << short_mask.message;
    EXPECT_FALSE(std::filesystem::exists(folder / "x.txt"));
}

}  // namespace
}  // namespace fathom
