// fathom-cli run over several MPI ranks (mpiexec): the same bits as one process with
// the same total number of shards on real and synthetic data (X written from every
// rank's own rows included), every rank reading only its rows, one clear failure for all ranks when one rank fails, and ranks started with
// different commands refused. Built when the build has MPI (FATHOM_MPIEXEC).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <cstring>
#include <fstream>
#include <iterator>
#include <variant>

#include "core/io/RowSource.hpp"
#include "tests/support/h5ad_fixtures.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/python.hpp"

#ifdef FATHOM_MPIEXEC

namespace fathom {
namespace {

using test::run_command;
using test::shell_quote;

const std::string cli = FATHOM_CLI_PATH;

/// mpiexec with `ranks` ranks, allowed as root and with more ranks than cores
/// (Open MPI 4 and 5).
std::string mpiexec(int ranks) {
    return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 "
           "PRTE_MCA_rmaps_default_mapping_policy=:oversubscribe " +
           std::string(FATHOM_MPIEXEC) + " -n " + std::to_string(ranks) + " ";
}

struct Case {
    const char* name;
    const char* input;      ///< under ../shared/data, or "synthetic"
    int ranks;
    int shards_per_rank;
    const char* options;
    bool matrix = false;    ///< also write X (each rank's rows)
};

std::string synthetic_input() {
    static const std::string path = [] {
        const auto file = (test::temp_dir("cli-mpi-synth") / "synthetic.h5ad").string();
        const auto result = run_command(cli + " synth --cells 9000 --genes 1500 --seed 8 --out " + shell_quote(file) + " 2>&1");
        EXPECT_EQ(result.exit_code, 0) << result.output;
        return file;
    }();
    return path;
}

/// Same bits (NaN included) in two vectors of numbers.
template <typename A, typename B>
bool same_bits(const A& a, const B& b) {
    return a.size() == b.size() && (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size() * sizeof(*a.data())) == 0);
}

/// The same uns tree, leaf by leaf and bit for bit.
void expect_same_uns(const UnsNode& got, const UnsNode& want, const std::string& where) {
    ASSERT_EQ(got.value.index(), want.value.index()) << where;
    std::visit(
        [&](const auto& expected) {
            using T = std::decay_t<decltype(expected)>;
            const auto& actual = std::get<T>(got.value);
            if constexpr (std::is_same_v<T, UnsRecords>) {
                EXPECT_EQ(actual.fields, expected.fields) << where;
                EXPECT_EQ(actual.strings, expected.strings) << where;
                ASSERT_EQ(actual.numbers.size(), expected.numbers.size()) << where;
                for (std::size_t field = 0; field < expected.numbers.size(); ++field)
                    EXPECT_TRUE(same_bits(actual.numbers[field], expected.numbers[field])) << where << " field " << field;
            } else if constexpr (std::is_same_v<T, std::vector<double>>) {
                EXPECT_TRUE(same_bits(actual, expected)) << where;
            } else if constexpr (std::is_same_v<T, DenseMatrix<double>>) {
                EXPECT_EQ(actual.rows(), expected.rows()) << where;
                EXPECT_TRUE(same_bits(actual.values(), expected.values())) << where;
            } else if constexpr (std::is_same_v<T, double>) {
                EXPECT_EQ(std::memcmp(&actual, &expected, sizeof(double)), 0) << where;
            } else if constexpr (!std::is_same_v<T, std::monostate>) {
                EXPECT_TRUE(actual == expected) << where;
            }
        },
        want.value);
    ASSERT_EQ(got.children.size(), want.children.size()) << where;
    for (const auto& [key, child] : want.children) {
        const auto it = got.children.find(key);
        ASSERT_NE(it, got.children.end()) << where << "/" << key;
        expect_same_uns(it->second, child, where + "/" + key);
    }
}

class MpiRun : public ::testing::TestWithParam<Case> {};

TEST_P(MpiRun, RanksGiveTheSameBitsAsOneProcessWithTheSameShards) {
    const Case& c = GetParam();
    std::string input;
    if (std::string(c.input) == "synthetic") {
        input = synthetic_input();
    } else {
        const auto path = test::shared_data(c.input);
        FATHOM_REQUIRE_PATH(path);
        input = path.string();
    }
    const auto folder = test::temp_dir(std::string("cli-mpi-") + c.name);
    const auto spread = (folder / "ranks.h5ad").string();
    const auto single = (folder / "one.h5ad").string();
    const auto report = (folder / "ranks.json").string();
    const std::string common = std::string(c.matrix ? " " : " --no-matrix ") + c.options;
    auto result = run_command(mpiexec(c.ranks) + cli + " run " + shell_quote(input) + " --devices cpu:" +
                              std::to_string(c.shards_per_rank) + " --out " + shell_quote(spread) + " --report " +
                              shell_quote(report) + common + " 2>&1");
    ASSERT_EQ(result.exit_code, 0) << result.output;
    result = run_command(cli + " run " + shell_quote(input) + " --devices cpu:" +
                         std::to_string(c.ranks * c.shards_per_rank) + " --out " + shell_quote(single) + common + " 2>&1");
    ASSERT_EQ(result.exit_code, 0) << result.output;

    io::OpenedDataset got_file = io::open_dataset(spread);
    io::OpenedDataset want_file = io::open_dataset(single);
    const Dataset& got = got_file.meta;
    const Dataset& want = want_file.meta;
    if (c.matrix) {
        // X: the analysed cells' raw counts, written from every rank's own rows.
        const CsrShard x = got_file.source->read_rows(0, got.shape.num_cells);
        const CsrShard expected = want_file.source->read_rows(0, want.shape.num_cells);
        EXPECT_EQ(x.row_offsets, expected.row_offsets);
        EXPECT_EQ(x.gene_indices, expected.gene_indices);
        EXPECT_EQ(x.values, expected.values);
        EXPECT_GT(x.nnz(), 0);
    }
    ASSERT_EQ(got.shape, want.shape);
    test::expect_tables_equal(got.obs, want.obs);
    test::expect_tables_equal(got.var, want.var);
    ASSERT_EQ(got.obsm.size(), want.obsm.size());
    for (const auto& [key, matrix] : want.obsm) EXPECT_EQ(got.obsm.at(key).values(), matrix.values()) << key;
    ASSERT_EQ(got.obsp.size(), want.obsp.size());
    for (const auto& [key, graph] : want.obsp) {
        EXPECT_EQ(got.obsp.at(key).row_offsets, graph.row_offsets) << key;
        EXPECT_EQ(got.obsp.at(key).gene_indices, graph.gene_indices) << key;
        EXPECT_EQ(got.obsp.at(key).values, graph.values) << key;
    }
    expect_same_uns(got.uns, want.uns, "uns");

    // The report: one entry per rank, rows that tile the cells, each rank's matrix bytes
    // about its share.
    std::ifstream in(report);
    const auto json = nlohmann::json::parse(in);
    const auto& ranks = json.at("ranks");
    ASSERT_EQ(static_cast<int>(ranks.size()), c.ranks);
    std::int64_t next = 0, bytes = 0;
    for (int rank = 0; rank < c.ranks; ++rank) {
        const auto& entry = ranks[static_cast<std::size_t>(rank)];
        EXPECT_EQ(entry.at("rank").get<int>(), rank);
        EXPECT_EQ(entry.at("rows")[0].get<std::int64_t>(), next) << "rank " << rank;
        next = entry.at("rows")[1].get<std::int64_t>();
        bytes += entry.at("matrix_bytes_read").get<std::int64_t>();
        EXPECT_GT(entry.at("peak_rss_bytes").get<std::int64_t>(), 0);
        EXPECT_EQ(entry.at("streamed").get<bool>(), std::string(c.options).find("--memory-budget -1") != std::string::npos);
        EXPECT_FALSE(entry.at("steps").empty());
        // The neighbour search is shared (exact: queries split; IVF: phases split): every
        // rank but 0 sends its part of the search in that step.
        int searched = 0;
        for (const auto& step : entry.at("steps"))
            if (step.at("step") == "neighbors") {
                ++searched;
                if (rank > 0) {
                    EXPECT_GT(step.at("bytes_sent").get<std::int64_t>(), 0) << entry.dump();
                }
            }
        EXPECT_EQ(searched, 1) << entry.dump();
    }
    EXPECT_EQ(next, io::open_dataset(input).meta.shape.num_cells) << "the ranks' rows cover every cell once";
    for (const auto& entry : ranks) {
        const double share = static_cast<double>(entry.at("matrix_bytes_read").get<std::int64_t>()) / static_cast<double>(bytes);
        EXPECT_NEAR(share, 1.0 / c.ranks, 0.5 / c.ranks) << entry.dump();
    }
}

INSTANTIATE_TEST_SUITE_P(
    Datasets, MpiRun,
    ::testing::Values(
        Case{"yeast", "yeast_844cells/yeast_844cells.h5ad", 2, 1,
             "--recipe seurat --neighbors 10 --umap --umap-epochs 100 --leiden 1 --markers t-test --deterministic"},
        Case{"neurons10k", "scanpy_neurons10k_1000genes/neurons10k_1000genes.h5ad", 3, 1,
             "--neighbors 15 --umap --umap-epochs 60 --leiden 1 --markers wilcoxon --deterministic"},
        Case{"visium", "visium_cytassist_mouse_2898/filtered_feature_bc_matrix", 2, 2,
             "--neighbors 15 --leiden 0.8 --markers t-test --min-counts-per-cell 500", true},
        Case{"synthetic", "synthetic", 2, 1,
             "--n-top-genes 500 --n-pcs 30 --neighbors 15 --umap --umap-epochs 60 --leiden 1 --markers t-test "
             "--deterministic",
             true},
        // Every rank streams its rows from the file (beyond the memory budget), X too.
        Case{"streamed", "synthetic", 2, 2,
             "--memory-budget -1 --n-top-genes 500 --n-pcs 30 --neighbors 15 --leiden 1 --markers t-test", true}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

TEST(MpiRunFaults, AFailureOnOneRankEndsEveryRankWithOneMessageAndNoOutput) {
    FATHOM_REQUIRE_PYTHON("h5py");
    const auto folder = test::temp_dir("cli-mpi-fault");
    const auto bad = (folder / "bad.h5ad").string();
    auto result = run_command(cli + " synth --cells 3000 --genes 400 --seed 2 --out " + shell_quote(bad) + " 2>&1");
    ASSERT_EQ(result.exit_code, 0) << result.output;
    // The last row's genes are out of range: only the last rank reads them.
    result = test::run_python("import h5py, sys\n"
                              "f = h5py.File(sys.argv[1], 'r+')\n"
                              "x = f['X/indices']\n"
                              "n = x.shape[0]\n"
                              "x[n - 3:] = 999999\n",
                              {bad});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    const auto out = (folder / "out.h5ad").string();
    result = run_command(mpiexec(2) + cli + " run " + shell_quote(bad) + " --no-matrix --neighbors 10 --out " +
                         shell_quote(out) + " 2>&1");
    EXPECT_EQ(result.exit_code, 3) << result.output;
    EXPECT_NE(result.output.find("rank 1 of 2: "), std::string::npos) << result.output;
    EXPECT_NE(result.output.find("bad.h5ad: /X/indices"), std::string::npos) << result.output;
    EXPECT_EQ(result.output.find("rank 0 of 2: "), std::string::npos) << "rank 0 read only good rows\n" << result.output;
    EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(MpiFilter, RanksWriteTheSameBarcodesAsOneProcess) {
    const auto path = test::shared_data("scanpy_neurons10k_1000genes/neurons10k_1000genes.h5ad");
    FATHOM_REQUIRE_PATH(path);
    const auto folder = test::temp_dir("cli-mpi-filter");
    const std::string expr = " --expr 'Xkr4 > 0 or (Gm1992 > 1 and not ENSMUSG00000025900 > 0)' --out ";
    const auto spread = (folder / "ranks.txt").string(), single = (folder / "one.txt").string();
    auto result = run_command(mpiexec(2) + cli + " filter " + shell_quote(path.string()) + expr + shell_quote(spread) + " 2>&1");
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_NE(result.output.find(" cells match "), std::string::npos) << result.output;
    result = run_command(cli + " filter " + shell_quote(path.string()) + expr + shell_quote(single) + " 2>&1");
    ASSERT_EQ(result.exit_code, 0) << result.output;
    const auto text = [](const std::string& file) {
        std::ifstream in(file);
        return std::string(std::istreambuf_iterator<char>(in), {});
    };
    EXPECT_EQ(text(spread), text(single));
    EXPECT_FALSE(text(single).empty());
}

TEST(MpiRunFaults, AKilledRankEndsTheRunPromptlyWithNoOutput) {
    const auto path = test::shared_data("scanpy_neurons10k_1000genes/neurons10k_1000genes.h5ad");
    FATHOM_REQUIRE_PATH(path);
    const auto out = (test::temp_dir("cli-mpi-killed") / "killed.h5ad").string();
    // 500 UMAP epochs on 10,000 cells: still running when the newest rank is killed.
    const std::string script =
        "(" + mpiexec(2) + cli + " run " + shell_quote(path.string()) + " --neighbors 15 --umap --leiden 1 --out " +
        shell_quote(out) + " >/dev/null 2>&1; echo \"rc=$?\") & sleep 3; "
        "victim=$(pgrep -n -f 'fathom-cli run .*killed.h5ad'); echo \"victim=$victim\"; kill -9 $victim; "
        "start=$(date +%s); wait; echo \"waited=$(( $(date +%s) - start ))\"";
    const auto result = run_command("bash -c " + shell_quote(script));
    ASSERT_NE(result.output.find("victim="), std::string::npos) << result.output;
    EXPECT_EQ(result.output.find("victim=\n"), std::string::npos) << "no rank was running\n" << result.output;
    EXPECT_EQ(result.output.find("rc=0"), std::string::npos) << result.output;
    const auto waited = result.output.find("waited=");
    ASSERT_NE(waited, std::string::npos) << result.output;
    EXPECT_LT(std::stoi(result.output.substr(waited + 7)), 30) << "the other rank must not hang\n" << result.output;
    EXPECT_FALSE(std::filesystem::exists(out));
}

// SIGTERM or SIGINT to the ranks (as srun, scancel or a signal to the processes delivers
// it) cancels the run: exit code 130, a message from the signalled rank, no output and no
// temporary file. The same signal to mpiexec ends the run as promptly and as cleanly;
// Open MPI's launcher then exits with its own status (1 in Open MPI 4), not the ranks'.
TEST(MpiRunFaults, ASignalCancelsEveryRankWith130AndLeavesNoFile) {
    const auto path = test::shared_data("scanpy_neurons10k_1000genes/neurons10k_1000genes.h5ad");
    FATHOM_REQUIRE_PATH(path);
    for (const std::string target : {"ranks", "launcher"}) {
        for (const std::string signal : {"TERM", "INT"}) {
            SCOPED_TRACE(target + " SIG" + signal);
            const auto folder = test::temp_dir("cli-mpi-signal-" + target + "-" + signal);
            const auto out = (folder / "cancelled.h5ad").string();
            // The ranks are the processes named fathom-cli whose command line names this
            // output (mpiexec's and this shell's name it too).
            const std::string script =
                mpiexec(2) + cli + " run " + shell_quote(path.string()) + " --neighbors 15 --umap --umap-epochs 2000 --out " +
                shell_quote(out) + " > " + shell_quote((folder / "log").string()) + " 2>&1 & launcher=$!; "
                // Signalled once the ranks are in UMAP's epochs (their handlers are set).
                "for i in $(seq 600); do grep -q 'umap' " + shell_quote((folder / "log").string()) +
                " && break; sleep 0.1; done; sleep 1; " +
                (target == "ranks"
                     ? "for p in $(pgrep -f " + shell_quote(out) + "); do "
                       "[ \"$(cat /proc/$p/comm 2>/dev/null)\" = fathom-cli ] && kill -" + signal + " $p && echo signalled; done; "
                     : "kill -" + signal + " $launcher && echo signalled; ") +
                "start=$(date +%s); wait $launcher; echo \"rc=$?\"; echo \"waited=$(( $(date +%s) - start ))\"; "
                "cat " + shell_quote((folder / "log").string());
            const auto result = run_command("bash -c " + shell_quote(script));
            ASSERT_NE(result.output.find("signalled"), std::string::npos) << result.output;
            if (target == "ranks") {
                EXPECT_NE(result.output.find("rc=130"), std::string::npos) << result.output;
            } else {
                EXPECT_EQ(result.output.find("rc=0"), std::string::npos) << result.output;
            }
            // The signalled ranks say so (mpiexec may end its ranks before they write).
            if (target == "ranks") {
                EXPECT_NE(result.output.find(" cancelled"), std::string::npos) << result.output;
            }
            const auto waited = result.output.find("waited=");
            ASSERT_NE(waited, std::string::npos) << result.output;
            EXPECT_LT(std::stoi(result.output.substr(waited + 7)), 30) << "every rank must end promptly\n" << result.output;
            for (const auto& entry : std::filesystem::directory_iterator(folder))
                EXPECT_EQ(entry.path().filename(), "log") << "left behind: " << entry.path();
        }
    }
}

TEST(MpiRunFaults, RanksStartedWithDifferentCommandsAreRefused) {
    const auto path = test::shared_data("yeast_844cells/yeast_844cells.h5ad");
    FATHOM_REQUIRE_PATH(path);
    const auto out = (test::temp_dir("cli-mpi-mismatch") / "out.h5ad").string();
    const std::string run = cli + " run " + shell_quote(path.string()) + " --no-matrix --out " + shell_quote(out);
    const auto result = run_command(mpiexec(1) + run + " --n-pcs 20 : -n 1 " + run + " --n-pcs 30 2>&1");
    EXPECT_EQ(result.exit_code, 2) << result.output;
    EXPECT_NE(result.output.find("rank 1 was started with another n_pcs than rank 0 (30 vs 20)"), std::string::npos)
        << result.output;
    EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace fathom

#endif
