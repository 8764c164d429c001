// fathom-cli run: outputs read back by anndata, exit codes, Ctrl-C.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <variant>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include "core/io/RowSource.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/python.hpp"
#include "tests/support/settings_alternatives.hpp"

namespace fathom {
namespace {

using test::run_command;
using test::shell_quote;

const std::string cli = FATHOM_CLI_PATH;

/// A synthetic raw-count dataset made once with fathom-cli synth.
const std::string& synthetic_input(std::int64_t cells) {
    static std::map<std::int64_t, std::string> made;
    auto& path = made[cells];
    if (path.empty()) {
        const auto folder = test::temp_dir("cli-run");
        path = (folder / ("synth_" + std::to_string(cells) + ".h5")).string();
        const auto result = run_command(cli + " synth --cells " + std::to_string(cells) +
                                        " --genes 2000 --seed 3 --out " + shell_quote(path) + " 2>&1");
        EXPECT_EQ(result.exit_code, 0) << result.output;
    }
    return path;
}

TEST(CliRun, WritesAnH5adThatAnndataReadsWithEveryPipelineOutput) {
    const auto folder = test::temp_dir("cli-run-out");
    const auto out = (folder / "result.h5ad").string();
    const auto report = (folder / "report.json").string();
    const auto csv = (folder / "csv").string();
    const auto result = run_command(cli + " run " + shell_quote(synthetic_input(1500)) +
                                    " --recipe zheng17 --n-top-genes 300 --n-pcs 30 --devices cpu:2 --neighbors 15 --umap"
                                    " --leiden 1.0 --markers t-test --out " + shell_quote(out) + " --report " + shell_quote(report) +
                                    " --export-csv " + shell_quote(csv) + " 2>&1");
    ASSERT_EQ(result.exit_code, 0) << result.output;
    ASSERT_TRUE(std::filesystem::exists(out));
    std::ifstream umap_csv(csv + "/umap.csv");
    std::string header;
    std::getline(umap_csv, header);
    EXPECT_EQ(header, "Barcode,UMAP-1,UMAP-2");

    // The report lists every step with wall time, CPU time and peak RSS.
    std::ifstream stream(report);
    const auto json = nlohmann::json::parse(stream);
    std::vector<std::string> steps;
    for (const auto& step : json["steps"]) {
        steps.push_back(step["step"]);
        EXPECT_GE(step["wall_seconds"].get<double>(), 0.0);
        EXPECT_GT(step["peak_rss_bytes"].get<std::int64_t>(), 0);
    }
    std::ifstream markers_csv(csv + "/markers.csv");
    std::getline(markers_csv, header);
    EXPECT_EQ(header, "group,gene,score,logfc,pval,pval_adj,pct");
    std::ifstream leiden_csv(csv + "/leiden.csv");
    std::getline(leiden_csv, header);
    EXPECT_EQ(header, "Barcode,leiden");
    for (const char* expected :
         {"read", "qc", "preprocess", "hvg", "scale", "pca", "neighbors", "umap", "leiden", "markers", "export"})
        EXPECT_NE(std::find(steps.begin(), steps.end(), expected), steps.end()) << expected;
    // ... and the Leiden flavor that ran (the default: leidenalg's) with its modularity.
    EXPECT_EQ(json.at("leiden").at("flavor"), "leidenalg");
    EXPECT_GT(json.at("leiden").at("modularity").get<double>(), 0.3);

    FATHOM_REQUIRE_PYTHON("anndata", "numpy");
    const auto check = test::run_python(R"(
import sys, anndata, numpy as np
a = anndata.read_h5ad(sys.argv[1])
assert a.shape == (1500, 2000), a.shape
n_hvg = int(a.var['highly_variable'].sum())
assert 295 <= n_hvg <= 305, n_hvg  # filter_genes_dispersion keeps ties and may round to n-1
assert a.obsm['X_pca'].shape == (1500, 30)
assert a.varm['PCs'].shape == (2000, 30)
vr = np.asarray(a.uns['pca']['variance_ratio'])
assert vr.shape == (30,) and np.all(np.diff(vr) <= 1e-12) and vr.sum() < 1
for column in ('total_counts', 'n_genes_by_counts', 'pct_counts_mt', 'n_counts_all'):
    assert column in a.obs, column
hv = a.var['highly_variable'].values
assert np.all(np.isfinite(a.var['mean'][hv])) and np.all(a.var['std'][hv] > 0)
assert np.allclose(a.obs['total_counts'].values, np.asarray(a.X.sum(axis=1)).ravel())
d, c = a.obsp['distances'], a.obsp['connectivities']
assert d.shape == (1500, 1500) and np.all(np.diff(d.indptr) == 14), 'k-1 non-self neighbours per row'
assert abs(c - c.T).max() < 1e-6 and c.max() <= 1 and c.diagonal().sum() == 0
assert a.obsm['X_umap'].shape == (1500, 2) and np.isfinite(a.obsm['X_umap']).all()
assert a.uns['neighbors']['connectivities_key'] == 'connectivities'
leiden = a.obs['leiden']
assert leiden.dtype == 'category', leiden.dtype
groups = list(leiden.cat.categories)
assert groups == [str(k) for k in range(len(groups))] and len(groups) >= 3, groups
sizes = leiden.value_counts(sort=False).values
assert all(sizes[k] >= sizes[k + 1] for k in range(len(sizes) - 1)), 'clusters numbered by size'
assert len(a.uns['leiden_colors']) == len(groups)
rgg = a.uns['rank_genes_groups']
assert rgg['params']['groupby'] == 'leiden' and rgg['params']['method'] == 't-test', rgg['params']
assert rgg['params']['reference'] == 'rest'
names, scores = rgg['names'], rgg['scores']
assert tuple(names.dtype.names) == tuple(groups), names.dtype
assert names.shape == scores.shape and names.shape[0] >= 10
for group in groups:
    s = np.asarray(scores[group], dtype=float)
    assert np.all(np.diff(s) <= 0), 'scores sorted, best first'
    assert set(names[group]) <= set(a.var_names)
    p = np.asarray(rgg['pvals_adj'][group]); assert np.all((p >= 0) & (p <= 1))
    lfc = np.asarray(rgg['logfoldchanges'][group][:5], dtype=float)
    assert np.all(np.isfinite(lfc)) and np.all(lfc > 0), ('top markers are up in their group', group, lfc)
print('ok')
)", {out});
    EXPECT_EQ(check.exit_code, 0) << check.output;
}

TEST(CliRun, ReportAndUnsCarryTheMeasuredKnnRecall) {
    // Above 8,192 cells the default search is the approximate one: the recall it measured
    // on random cells is on the report's neighbors step and in uns['neighbors'].
    const auto folder = test::temp_dir("cli-run-recall");
    const auto out = (folder / "recall.h5ad").string();
    const auto report = (folder / "report.json").string();
    const auto result = run_command(cli + " run " + shell_quote(synthetic_input(9000)) +
                                    " --recipe zheng17 --n-top-genes 300 --n-pcs 20 --neighbors 15 --no-matrix --out " +
                                    shell_quote(out) + " --report " + shell_quote(report) + " 2>&1");
    ASSERT_EQ(result.exit_code, 0) << result.output;
    std::ifstream stream(report);
    const auto json = nlohmann::json::parse(stream);
    double recall = -1.0;
    for (const auto& step : json["steps"])
        if (step["step"] == "neighbors") {
            EXPECT_EQ(step["knn_method"], "ivf");
            EXPECT_EQ(step["recall_queries"].get<int>(), 1000);
            recall = step["recall"].get<double>();
        }
    EXPECT_GE(recall, 0.95);
    EXPECT_LE(recall, 1.0);

    FATHOM_REQUIRE_PYTHON("anndata", "numpy");
    const auto check = test::run_python(R"(
import sys, anndata
a = anndata.read_h5ad(sys.argv[1])
n = a.uns['neighbors']
assert abs(float(n['recall']) - float(sys.argv[2])) < 1e-12, (n['recall'], sys.argv[2])
assert int(n['recall_queries']) == 1000, n['recall_queries']
assert n['params']['n_neighbors'] == 15 and n['connectivities_key'] == 'connectivities'
print('ok')
)", {out, nlohmann::json(recall).dump()});
    EXPECT_EQ(check.exit_code, 0) << check.output;
}

TEST(CliRun, UmapComponentsThreeWritesAThreeColumnXUmap) {
    const auto folder = test::temp_dir("cli-run-umap3");
    const auto out = (folder / "result3d.h5ad").string();
    const auto csv = (folder / "csv").string();
    const auto result = run_command(cli + " run " + shell_quote(synthetic_input(1500)) +
                                    " --recipe zheng17 --n-top-genes 300 --n-pcs 20 --neighbors 15 --umap"
                                    " --umap-components 3 --out " + shell_quote(out) + " --export-csv " +
                                    shell_quote(csv) + " 2>&1");
    ASSERT_EQ(result.exit_code, 0) << result.output;
    std::ifstream umap_csv(csv + "/umap.csv");
    std::string header, first_row;
    std::getline(umap_csv, header);
    std::getline(umap_csv, first_row);
    EXPECT_EQ(header, "Barcode,UMAP-1,UMAP-2,UMAP-3");
    EXPECT_EQ(std::count(first_row.begin(), first_row.end(), ','), 3) << first_row;

    FATHOM_REQUIRE_PYTHON("anndata", "numpy");
    const auto check = test::run_python(R"(
import sys, anndata, numpy as np
a = anndata.read_h5ad(sys.argv[1])
u = np.asarray(a.obsm['X_umap'])
assert u.shape == (1500, 3), u.shape
assert np.all(np.isfinite(u))
# every axis is used (the spectral init and the SGD move all three coordinates)
assert np.all(u.std(axis=0) > 0.5), u.std(axis=0)
print('ok')
)", {out});
    EXPECT_EQ(check.exit_code, 0) << check.output;
}

// --deterministic: the same kNN graph and X_umap on one CPU (taskset) as on all of
// them, above 8,192 cells where the kNN search is the approximate one; the flag is
// recorded in uns.
TEST(CliRun, DeterministicRunsAreBitIdenticalOnOneAndOnAllCpus) {
    if (run_command("taskset -c 0 true 2>&1").exit_code != 0) GTEST_SKIP() << "taskset (util-linux) is not available";
    const auto folder = test::temp_dir("cli-run-deterministic");
    const std::string input = synthetic_input(10500);
    std::vector<Dataset> outputs;
    for (const std::string prefix : {"taskset -c 0 ", ""}) {
        const auto out = (folder / ("run" + std::to_string(outputs.size()) + ".h5ad")).string();
        const auto result = run_command(prefix + cli + " run " + shell_quote(input) +
                                        " --recipe zheng17 --n-top-genes 300 --n-pcs 20 --neighbors 15 --umap"
                                        " --deterministic --seed 5 --devices cpu:2 --no-matrix --out " +
                                        shell_quote(out) + " 2>&1");
        ASSERT_EQ(result.exit_code, 0) << result.output;
        outputs.push_back(io::open_dataset(out).meta);
    }
    const auto& params = outputs[0].uns.children.at("umap").children.at("params").children;
    EXPECT_EQ(std::get<bool>(params.at("deterministic").value), true);
    EXPECT_EQ(std::get<std::int64_t>(params.at("random_state").value), 5);
    EXPECT_EQ(outputs[1].obsm.at("X_umap").values(), outputs[0].obsm.at("X_umap").values());
    EXPECT_EQ(outputs[1].obsp.at("connectivities").values, outputs[0].obsp.at("connectivities").values);
    EXPECT_EQ(outputs[1].obsp.at("connectivities").gene_indices, outputs[0].obsp.at("connectivities").gene_indices);
}

TEST(CliRun, BadInputAndBadOptionsGiveTheDocumentedExitCodes) {
    const auto folder = test::temp_dir("cli-run-bad");
    const auto out = (folder / "x.h5ad").string();
    auto result = run_command(cli + " run /nonexistent.h5ad --out " + shell_quote(out) + " 2>&1");
    EXPECT_EQ(result.exit_code, 3) << result.output;
    EXPECT_NE(result.output.find("/nonexistent.h5ad"), std::string::npos) << result.output;

    const auto garbage = (folder / "garbage.h5ad").string();
    std::ofstream(garbage) << "not a dataset";
    result = run_command(cli + " run " + shell_quote(garbage) + " --out " + shell_quote(out) + " 2>&1");
    EXPECT_EQ(result.exit_code, 3) << result.output;

    result = run_command(cli + " run " + shell_quote(synthetic_input(1500)) + " --n-pcs 0 --out " +
                         shell_quote(out) + " 2>&1");
    EXPECT_EQ(result.exit_code, 2) << result.output;
    EXPECT_NE(result.output.find("n_pcs must be in [1, 500] (got 0)"), std::string::npos) << result.output;

    result = run_command(cli + " run " + shell_quote(synthetic_input(1500)) + " --umap --out " + shell_quote(out) + " 2>&1");
    EXPECT_EQ(result.exit_code, 2) << result.output;
    EXPECT_NE(result.output.find("--neighbors"), std::string::npos) << result.output;

    result = run_command(cli + " run " + shell_quote(synthetic_input(1500)) +
                         " --neighbors 15 --umap --umap-components 9 --out " + shell_quote(out) + " 2>&1");
    EXPECT_EQ(result.exit_code, 2) << result.output;
    EXPECT_NE(result.output.find("n_components must be in [2, 3] (got 9)"), std::string::npos) << result.output;

    result = run_command(cli + " run " + shell_quote(synthetic_input(1500)) + " --umap-components 3 --out " +
                         shell_quote(out) + " 2>&1");
    EXPECT_EQ(result.exit_code, 2) << result.output;
    EXPECT_NE(result.output.find("--umap-components needs --umap"), std::string::npos) << result.output;

    result = run_command(cli + " run " + shell_quote(synthetic_input(1500)) + " --neighbors 15 --knn-method annoy --out " +
                         shell_quote(out) + " 2>&1");
    EXPECT_EQ(result.exit_code, 2) << result.output;
    EXPECT_NE(result.output.find("--knn-method"), std::string::npos) << result.output;

    result = run_command(cli + " run " + shell_quote(synthetic_input(1500)) + " --devices cpu:0 --out " +
                         shell_quote(out) + " 2>&1");
    EXPECT_EQ(result.exit_code, 2) << result.output;
    EXPECT_NE(result.output.find("--devices"), std::string::npos) << result.output;
    EXPECT_FALSE(std::filesystem::exists(out)) << "no output after a failure";
}

TEST(CliRun, InterruptCancelsCleanlyWithExit130AndNoOutput) {
    const std::string input = synthetic_input(20000);
    const auto folder = test::temp_dir("cli-run-int");
    const auto out = (folder / "cancelled.h5ad").string();
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        ::dup2(pipe_fds[1], STDERR_FILENO);
        ::close(pipe_fds[0]);
        ::execl(cli.c_str(), cli.c_str(), "run", input.c_str(), "--neighbors", "15", "--out", out.c_str(),
                static_cast<char*>(nullptr));
        ::_exit(127);
    }
    ::close(pipe_fds[1]);
    // Wait until the pipeline job is under way (the non-tty progress prints one line
    // per step), then interrupt.
    std::string seen;
    char buffer[256];
    bool interrupted = false;
    while (true) {
        const auto count = ::read(pipe_fds[0], buffer, sizeof buffer);
        if (count <= 0) break;
        seen.append(buffer, static_cast<std::size_t>(count));
        if (!interrupted && seen.find("[pipeline]") != std::string::npos) {
            ::kill(child, SIGINT);
            interrupted = true;
        }
    }
    ::close(pipe_fds[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    ASSERT_TRUE(interrupted) << seen;
    ASSERT_TRUE(WIFEXITED(status)) << "fathom-cli must exit, not die of the signal";
    EXPECT_EQ(WEXITSTATUS(status), 130) << seen;
    EXPECT_FALSE(std::filesystem::exists(out));
    for (const auto& entry : std::filesystem::directory_iterator(folder))
        ADD_FAILURE() << "left behind: " << entry.path();
}

/// A `fathom-cli run` command line meaning `settings`: every option of the schema whose
/// step is on, flags when set.
std::string command_line(const PipelineSettings& settings) {
    std::string out;
    for (const auto& spec : pipeline_settings_schema()) {
        if (spec.cli_flag.empty()) continue;
        const SettingValue value = spec.get(settings);
        if (spec.kind == SettingKind::Flag) {
            if (std::get<bool>(value)) out += " " + spec.cli_flag;
            continue;
        }
        if (!spec.switch_name.empty() && !std::get<bool>(find_setting(spec.switch_name)->get(settings))) continue;
        out += " " + spec.cli_flag + " " + shell_quote(format_setting_value(spec, value));
    }
    return out;
}

/// The settings `fathom-cli run ... --print-settings` reports, by setting name.
nlohmann::json printed_settings(const std::string& options) {
    const auto result = run_command(cli + " run never-read.h5ad --out x.h5ad --print-settings" + options);
    EXPECT_EQ(result.exit_code, 0) << options << "\n" << result.output;
    return nlohmann::json::parse(result.output);
}

nlohmann::json as_json(const PipelineSettings& settings) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& spec : pipeline_settings_schema())
        out[spec.name] = std::visit([](const auto& value) { return nlohmann::json(value); }, spec.get(settings));
    return out;
}

// Every setting of the schema reaches the engine's settings through its option.
TEST(CliRun, EverySettingRoundTripsThroughItsOption) {
    const PipelineSettings defaults;
    EXPECT_EQ(printed_settings(command_line(defaults)), as_json(defaults));
    for (const auto& spec : pipeline_settings_schema()) {
        SCOPED_TRACE(spec.name);
        const PipelineSettings expected = test::with_other_value(spec, defaults);
        EXPECT_EQ(printed_settings(command_line(expected)), as_json(expected)) << command_line(expected);
    }
    // Without step options the CLI runs the recipe and PCA only.
    const nlohmann::json bare = printed_settings("");
    for (const char* step : {"run_neighbors", "run_umap", "run_leiden", "run_markers"}) EXPECT_FALSE(bare[step]) << step;
    // Bad values are refused naming the option and the setting's range.
    const auto result = run_command(cli + " run x.h5ad --out y.h5ad --print-settings --neighbors 15 --leiden 0 2>&1");
    EXPECT_EQ(result.exit_code, 2) << result.output;
    EXPECT_NE(result.output.find("--leiden"), std::string::npos) << result.output;
    EXPECT_NE(result.output.find("resolution must be in [0.001, 100] (got 0)"), std::string::npos) << result.output;
}

// --leiden-flavor parallel runs the parallel Leiden, and says so in the report and in
// uns['leiden']['params']['flavor'], with a modularity close to the default flavor's.
TEST(CliRun, LeidenFlavorParallelIsRecordedInTheReport) {
    const auto folder = test::temp_dir("cli-run-leiden-flavor");
    const auto out = (folder / "out.h5ad").string();
    double modularity[2] = {0.0, 0.0};
    for (const int parallel : {0, 1}) {
        const auto report = (folder / ("report" + std::to_string(parallel) + ".json")).string();
        const auto result = run_command(cli + " run " + shell_quote(synthetic_input(1500)) +
                                        " --recipe zheng17 --n-top-genes 300 --n-pcs 20 --neighbors 15 --leiden 1.0" +
                                        (parallel ? " --leiden-flavor parallel" : "") + " --out " + shell_quote(out) +
                                        " --report " + shell_quote(report) + " 2>&1");
        ASSERT_EQ(result.exit_code, 0) << result.output;
        std::ifstream in(report);
        const auto json = nlohmann::json::parse(in);
        EXPECT_EQ(json.at("leiden").at("flavor"), parallel ? "parallel" : "leidenalg");
        EXPECT_GE(json.at("leiden").at("clusters").get<int>(), 2);
        modularity[parallel] = json.at("leiden").at("modularity").get<double>();
    }
    EXPECT_GE(modularity[1], modularity[0] * 0.995) << "parallel " << modularity[1] << ", leidenalg " << modularity[0];
    FATHOM_REQUIRE_PYTHON("anndata");
    const auto check = test::run_python(R"(
import sys, anndata
a = anndata.read_h5ad(sys.argv[1])
assert a.uns['leiden']['params']['flavor'] == 'parallel', a.uns['leiden']['params']
)",
                                        {out});
    EXPECT_EQ(check.exit_code, 0) << check.output;
}

// Recipe none on raw counts runs, but says it runs PCA on unnormalised counts (stderr
// and the report).
TEST(CliRun, RecipeNoneOnRawCountsWarns) {
    const auto folder = test::temp_dir("cli-run-none-on-counts");
    const auto out = (folder / "out.h5ad").string(), report = (folder / "report.json").string();
    auto result = run_command(cli + " run " + shell_quote(synthetic_input(1500)) + " --recipe none --n-pcs 10 --out " +
                              shell_quote(out) + " --report " + shell_quote(report) + " 2>&1");
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_NE(result.output.find("fathom-cli: warning: X holds raw integer counts, and recipe none runs PCA"),
              std::string::npos)
        << result.output;
    std::ifstream in(report);
    const auto json = nlohmann::json::parse(in);
    ASSERT_EQ(json.at("warnings").size(), 1u);
    // The recipe that fits the data: no warning.
    result = run_command(cli + " run " + shell_quote(synthetic_input(1500)) + " --n-pcs 10 --out " + shell_quote(out) +
                         " 2>&1");
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_EQ(result.output.find("warning"), std::string::npos) << result.output;
}

// The QC cell filters as options: the output holds exactly the cells a brute-force count
// over the input's rows keeps (total counts, expressed genes, percent in MT- genes).
TEST(CliRun, QcThresholdOptionsKeepTheCellsABruteForceCountKeeps) {
    const std::string& input = synthetic_input(1500);
    io::OpenedDataset opened = io::open_dataset(input);
    const CsrShard rows = opened.source->read_rows(0, opened.meta.shape.num_cells);
    const auto& names = opened.meta.var.index();
    std::vector<double> totals, mito;
    std::vector<std::int64_t> genes;
    for (std::int64_t cell = 0; cell < opened.meta.shape.num_cells; ++cell) {
        double total = 0, mt = 0;
        std::int64_t expressed = 0;
        for (auto entry = rows.row_offsets[cell]; entry < rows.row_offsets[cell + 1]; ++entry) {
            total += rows.values[entry];
            expressed += rows.values[entry] != 0.0f;
            if (names[static_cast<std::size_t>(rows.gene_indices[entry])].rfind("MT-", 0) == 0) mt += rows.values[entry];
        }
        totals.push_back(total);
        genes.push_back(expressed);
        mito.push_back(100.0 * mt / total);
    }
    auto sorted_totals = totals;
    auto sorted_genes = genes;
    auto sorted_mito = mito;
    std::sort(sorted_totals.begin(), sorted_totals.end());
    std::sort(sorted_genes.begin(), sorted_genes.end());
    std::sort(sorted_mito.begin(), sorted_mito.end());
    const std::size_t n = totals.size();
    const double max_counts = std::round(sorted_totals[n * 9 / 10]);
    const std::int64_t min_genes = sorted_genes[n / 10], max_genes = sorted_genes[n * 19 / 20];
    const double max_mito = std::round(sorted_mito[n * 8 / 10] * 10.0) / 10.0;
    std::int64_t kept = 0;
    for (std::size_t cell = 0; cell < n; ++cell)
        kept += totals[cell] <= max_counts && genes[cell] >= min_genes && genes[cell] <= max_genes && mito[cell] <= max_mito;
    ASSERT_GT(kept, 0);
    ASSERT_LT(kept, static_cast<std::int64_t>(n) * 8 / 10);

    const auto folder = test::temp_dir("cli-run-qc");
    const auto out = (folder / "out.h5ad").string();
    const auto result = run_command(cli + " run " + shell_quote(input) + " --n-pcs 10 --max-counts-per-cell " +
                                    std::to_string(max_counts) + " --min-genes-per-cell " + std::to_string(min_genes) +
                                    " --max-genes-per-cell " + std::to_string(max_genes) + " --max-pct-counts-mt " +
                                    std::to_string(max_mito) + " --out " + shell_quote(out) + " 2>&1");
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_EQ(io::open_dataset(out).meta.shape.num_cells, kept);
    // min > max is refused naming both settings.
    const auto bad = run_command(cli + " run " + shell_quote(input) + " --min-genes-per-cell 500 --max-genes-per-cell 100 "
                                 "--out " + shell_quote(out) + " 2>&1");
    EXPECT_EQ(bad.exit_code, 2) << bad.output;
    EXPECT_NE(bad.output.find("max_genes must be >= min_genes"), std::string::npos) << bad.output;
}

TEST(CliRun, TheSettingsCommandPrintsTheSchemasTable) {
    const auto result = run_command(cli + " settings");
    EXPECT_EQ(result.exit_code, 0);
    EXPECT_EQ(result.output, settings_markdown_table());
}

}  // namespace
}  // namespace fathom
