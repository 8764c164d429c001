// fathom-cli filter: the barcodes file and the printed count against a brute force
// computed here from a dense read of the dataset (synthetic 10x .h5 and .h5ad from
// `fathom-cli synth`, and the shared 10x v3 chr21 file), both layers; exit codes and
// messages for a bad expression (2, with the position), an unknown gene (2), a bad
// option (2), a missing or unreadable input (3); no partial output on any failure.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "core/io/RowSource.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/python.hpp"

namespace fathom {
namespace {

namespace fs = std::filesystem;
using test::run_command;
using test::shell_quote;

const std::string cli = FATHOM_CLI_PATH;

/// A dataset read densely for the genes a test names: barcodes, names, ids, totals.
struct DenseDataset {
    std::vector<std::string> barcodes;
    std::vector<std::string> names;
    std::vector<std::string> ids;
    std::vector<double> totals;                  ///< per cell: sum of the stored values
    std::vector<std::int64_t> detected;          ///< per gene: cells with a non-zero
    std::vector<std::vector<float>> counts;      ///< [gene][cell], every gene
    std::int64_t num_cells = 0;

    std::int32_t gene(const std::string& name) const {
        const auto it = std::find(names.begin(), names.end(), name);
        return it == names.end() ? -1 : static_cast<std::int32_t>(it - names.begin());
    }
    /// ln(1 + x * 1e4 / total), 0 for an empty cell.
    float lognorm(std::int32_t gene, std::size_t cell) const {
        const double x = counts[static_cast<std::size_t>(gene)][cell];
        return totals[cell] > 0.0 ? static_cast<float>(std::log1p(x * 1e4 / totals[cell])) : 0.0f;
    }
};

DenseDataset read_dense(const std::string& path) {
    io::OpenedDataset opened = io::open_dataset(path);
    DenseDataset data;
    data.num_cells = opened.meta.shape.num_cells;
    data.barcodes = opened.meta.obs.index();
    data.names = opened.meta.var.index();
    if (const Column* ids = opened.meta.var.find("gene_ids"))
        if (const auto* strings = std::get_if<StringColumn>(&ids->data)) data.ids = strings->values;
    const auto genes = static_cast<std::size_t>(opened.meta.shape.num_genes);
    const auto cells = static_cast<std::size_t>(data.num_cells);
    data.totals.assign(cells, 0.0);
    data.detected.assign(genes, 0);
    data.counts.assign(genes, std::vector<float>(cells, 0.0f));
    const CsrShard all = opened.source->read_rows(0, data.num_cells);
    for (std::size_t cell = 0; cell < cells; ++cell) {
        for (auto entry = all.row_offsets[cell]; entry < all.row_offsets[cell + 1]; ++entry) {
            const auto gene = static_cast<std::size_t>(all.gene_indices[static_cast<std::size_t>(entry)]);
            const float value = all.values[static_cast<std::size_t>(entry)];
            data.counts[gene][cell] = value;
            data.totals[cell] += value;
            if (value != 0.0f) ++data.detected[gene];
        }
    }
    return data;
}

std::vector<std::string> read_lines(const fs::path& path) {
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

/// Files in `folder` (names), to check that nothing partial was left behind.
std::vector<std::string> listing(const fs::path& folder) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(folder)) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

/// Runs `fathom-cli filter` and checks the file and the count against `holds`: once in
/// one block, once in blocks of a few thousand non-zeros (the hidden --block-nnz), so
/// that the rows of later blocks are checked to get their own barcodes.
void expect_filter_matches(const std::string& input, const DenseDataset& data, const std::string& expression,
                           const std::string& layer_flag, const std::function<bool(std::size_t cell)>& holds,
                           const fs::path& out) {
    std::vector<std::string> expected;
    for (std::size_t cell = 0; cell < static_cast<std::size_t>(data.num_cells); ++cell)
        if (holds(cell)) expected.push_back(data.barcodes[cell]);
    EXPECT_GT(expected.size(), 0u) << "choose an expression that selects some cells: " << expression;
    EXPECT_LT(expected.size(), static_cast<std::size_t>(data.num_cells)) << "choose an expression that leaves some cells: " << expression;
    for (const std::string blocks : {"", " --block-nnz 3000"}) {
        SCOPED_TRACE("fathom-cli filter --expr '" + expression + "' " + layer_flag + blocks);
        std::error_code ignored;
        fs::remove(out, ignored);
        const auto result = run_command(cli + " filter " + shell_quote(input) + " --expr " + shell_quote(expression) + " " +
                                        layer_flag + blocks + " --out " + shell_quote(out.string()) + " 2>&1");
        ASSERT_EQ(result.exit_code, 0) << result.output;
        const std::string count = std::to_string(expected.size()) + " of " + std::to_string(data.num_cells) + " cells match";
        EXPECT_NE(result.output.find(count), std::string::npos) << "expected '" << count << "' in:\n" << result.output;
        EXPECT_EQ(read_lines(out), expected);
    }
}

/// Genes detected in between 25% and 75% of the cells, most detected first.
std::vector<std::int32_t> informative_genes(const DenseDataset& data) {
    std::vector<std::int32_t> genes;
    for (std::size_t gene = 0; gene < data.detected.size(); ++gene)
        if (data.detected[gene] * 4 >= data.num_cells && data.detected[gene] * 4 <= 3 * data.num_cells)
            genes.push_back(static_cast<std::int32_t>(gene));
    std::stable_sort(genes.begin(), genes.end(), [&](std::int32_t a, std::int32_t b) {
        return data.detected[static_cast<std::size_t>(a)] > data.detected[static_cast<std::size_t>(b)];
    });
    return genes;
}

/// One synthetic dataset for the suite, in both file formats.
class CliFilter : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        s_folder = new fs::path(test::temp_dir("cli-filter-data"));
        for (const char* name : {"synth.h5", "synth.h5ad"}) {
            const auto made = run_command(cli + " synth --cells 2500 --genes 400 --seed 11 --cell-types 3 --quiet --out " +
                                          shell_quote((*s_folder / name).string()) + " 2>&1");
            ASSERT_EQ(made.exit_code, 0) << made.output;
        }
    }
    static void TearDownTestSuite() {
        std::error_code ignored;
        fs::remove_all(*s_folder, ignored);
        delete s_folder;
        s_folder = nullptr;
    }
    static std::string input(const char* name) { return (*s_folder / name).string(); }

    static fs::path* s_folder;
};

fs::path* CliFilter::s_folder = nullptr;

TEST_F(CliFilter, BarcodesAndCountMatchBruteForce) {
    for (const char* name : {"synth.h5", "synth.h5ad"}) {
        SCOPED_TRACE(name);
        const std::string path = input(name);
        const DenseDataset data = read_dense(path);
        ASSERT_EQ(data.num_cells, 2500);
        const auto genes = informative_genes(data);
        ASSERT_GE(genes.size(), 3u) << "the synthetic data should have moderately detected genes";
        const std::int32_t a = genes[0], b = genes[1], c = genes[2];
        const std::string& name_a = data.names[static_cast<std::size_t>(a)];
        const std::string& name_b = data.names[static_cast<std::size_t>(b)];
        const std::string& name_c = data.names[static_cast<std::size_t>(c)];
        // Gene ids name genes too (when the file has them).
        const std::string id_c = data.ids.size() == data.names.size() ? data.ids[static_cast<std::size_t>(c)] : "'" + name_c + "'";
        if (std::string(name) == "synth.h5") {
            EXPECT_EQ(id_c.rfind("SYNG", 0), 0u) << id_c;
        }
        const auto out_folder = test::temp_dir("cli-filter-out");
        const fs::path out = out_folder / "cells.txt";
        const auto value = [&](std::int32_t gene, std::size_t cell) { return data.counts[static_cast<std::size_t>(gene)][cell]; };

        // Counts: X as stored.
        expect_filter_matches(path, data, name_a + " > 1 and not " + name_b + " > 0", "--layer counts",
                              [&](std::size_t cell) { return value(a, cell) > 1.0f && !(value(b, cell) > 0.0f); }, out);
        expect_filter_matches(path, data, "(" + name_a + " >= 2 or " + id_c + " between 1 3) && !" + name_b + " == 1",
                              "--layer counts",
                              [&](std::size_t cell) {
                                  return (value(a, cell) >= 2.0f || (1.0f <= value(c, cell) && value(c, cell) <= 3.0f)) &&
                                         !(value(b, cell) == 1.0f);
                              },
                              out);
        // LogNorm: the default layer, and named.
        const auto lognorm = [&](std::int32_t gene, std::size_t cell) { return data.lognorm(gene, cell); };
        expect_filter_matches(path, data, name_a + " > 0.5 or " + name_c + " <= 0.25 and " + name_b + " > 0", "",
                              [&](std::size_t cell) {
                                  return lognorm(a, cell) > 0.5f || (lognorm(c, cell) <= 0.25f && lognorm(b, cell) > 0.0f);
                              },
                              out);
        expect_filter_matches(path, data, "not (\"" + name_a + "\" < 0.75 or '" + name_c + "' > 1.5)", "--layer lognorm",
                              [&](std::size_t cell) { return !(lognorm(a, cell) < 0.75f || lognorm(c, cell) > 1.5f); }, out);
        // The output replaced the previous one; nothing else is left in the folder.
        EXPECT_EQ(listing(out_folder), std::vector<std::string>{"cells.txt"});
    }
}

TEST_F(CliFilter, NoMatchingCellWritesAnEmptyFile) {
    const std::string path = input("synth.h5");
    const DenseDataset data = read_dense(path);
    const auto folder = test::temp_dir("cli-filter-none");
    const fs::path out = folder / "none.txt";
    const std::string gene = data.names[static_cast<std::size_t>(informative_genes(data).front())];
    const auto result = run_command(cli + " filter " + shell_quote(path) + " --expr " + shell_quote(gene + " < 0") +
                                    " --out " + shell_quote(out.string()) + " 2>&1");
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_NE(result.output.find("0 of 2500 cells match"), std::string::npos) << result.output;
    ASSERT_TRUE(fs::exists(out));
    EXPECT_EQ(fs::file_size(out), 0u);
}

TEST_F(CliFilter, BadExpressionIsAUsageErrorWithThePosition) {
    const std::string path = input("synth.h5");
    const DenseDataset data = read_dense(path);
    const std::string gene = data.names[static_cast<std::size_t>(informative_genes(data).front())];
    const auto folder = test::temp_dir("cli-filter-bad");
    const fs::path out = folder / "cells.txt";
    struct Case {
        std::string expression;
        std::string column;   ///< "at column N"
        std::string problem;
    };
    const std::vector<Case> cases{
        {gene + " 1 and " + gene + " > 0", "at column " + std::to_string(gene.size() + 2),
         "expected a comparison operator after '" + gene + "'"},
        {gene + " > 1 and", "at column " + std::to_string(gene.size() + 9), "expected a gene name after 'and'"},
        {"(" + gene + " > 1", "at column " + std::to_string(gene.size() + 6), "expected ')'"},
        {gene + " = 1", "at column " + std::to_string(gene.size() + 2), "(use '==')"},
        {"", "at column 1", "the expression is empty"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE("--expr '" + c.expression + "'");
        const auto result = run_command(cli + " filter " + shell_quote(path) + " --expr " + shell_quote(c.expression) +
                                        " --out " + shell_quote(out.string()) + " 2>&1");
        EXPECT_EQ(result.exit_code, 2) << result.output;
        EXPECT_NE(result.output.find("--expr"), std::string::npos) << result.output;
        EXPECT_NE(result.output.find(c.column), std::string::npos) << result.output;
        EXPECT_NE(result.output.find(c.problem), std::string::npos) << result.output;
        EXPECT_NE(result.output.find("^"), std::string::npos) << "a caret under the mistake:\n" << result.output;
    }
    // The caret sits under the mistake, below the echoed expression.
    const auto result = run_command(cli + " filter " + shell_quote(path) + " --expr " + shell_quote(gene + " 1") +
                                    " --out " + shell_quote(out.string()) + " 2>&1");
    EXPECT_NE(result.output.find("\n  " + gene + " 1\n  " + std::string(gene.size() + 1, ' ') + "^"), std::string::npos)
        << result.output;
    EXPECT_TRUE(fs::is_empty(folder)) << "nothing written for a bad expression";
}

TEST_F(CliFilter, UnknownGeneIsAUsageErrorNamingIt) {
    const std::string path = input("synth.h5");
    const DenseDataset data = read_dense(path);
    const std::string gene = data.names[static_cast<std::size_t>(informative_genes(data).front())];
    const std::string typo = gene + "X";
    ASSERT_LT(data.gene(typo), 0) << typo;
    const auto folder = test::temp_dir("cli-filter-unknown");
    const fs::path out = folder / "cells.txt";
    // An existing output is left as it was.
    { std::ofstream(out) << "previous\n"; }
    const auto result = run_command(cli + " filter " + shell_quote(path) + " --expr " +
                                    shell_quote(gene + " > 1 and " + typo + " > 0 or NOT_A_GENE == 1") + " --out " +
                                    shell_quote(out.string()) + " 2>&1");
    EXPECT_EQ(result.exit_code, 2) << result.output;
    EXPECT_NE(result.output.find("--expr"), std::string::npos) << result.output;
    EXPECT_NE(result.output.find("'" + typo + "' at column " + std::to_string(gene.size() + 10)), std::string::npos)
        << result.output;
    EXPECT_NE(result.output.find("did you mean"), std::string::npos) << result.output;
    EXPECT_NE(result.output.find("'NOT_A_GENE'"), std::string::npos) << result.output;
    EXPECT_EQ(read_lines(out), std::vector<std::string>{"previous"});
    EXPECT_EQ(listing(folder), std::vector<std::string>{"cells.txt"});
}

TEST_F(CliFilter, BadOptionsExitTwoNamingTheOption) {
    const std::string path = input("synth.h5");
    const auto folder = test::temp_dir("cli-filter-options");
    const std::string out = " --out " + shell_quote((folder / "cells.txt").string());
    const std::vector<std::pair<std::string, std::string>> cases{
        {shell_quote(path) + " --expr 'A > 1' --layer raw" + out, "--layer"},
        {shell_quote(path) + out, "--expr"},
        {shell_quote(path) + " --expr 'A > 1'", "--out"},
        {"--expr 'A > 1'" + out, "FILE"},
    };
    for (const auto& [args, option] : cases) {
        const auto result = run_command(cli + " filter " + args + " 2>&1");
        EXPECT_EQ(result.exit_code, 2) << args << "\n" << result.output;
        EXPECT_NE(result.output.find(option), std::string::npos) << args << " should name " << option << ":\n" << result.output;
    }
    EXPECT_TRUE(fs::is_empty(folder));
}

TEST_F(CliFilter, BadInputExitsThreeAndLeavesNoOutput) {
    const auto folder = test::temp_dir("cli-filter-input");
    const fs::path out = folder / "cells.txt";
    // Missing file.
    const std::string missing = (folder / "missing.h5").string();
    auto result = run_command(cli + " filter " + shell_quote(missing) + " --expr 'A > 1' --out " + shell_quote(out.string()) + " 2>&1");
    EXPECT_EQ(result.exit_code, 3) << result.output;
    EXPECT_NE(result.output.find(missing), std::string::npos) << result.output;
    // A truncated copy of a real file.
    const fs::path truncated = folder / "truncated.h5";
    {
        std::ifstream in(input("synth.h5"), std::ios::binary);
        std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        bytes.resize(bytes.size() / 3);
        std::ofstream(truncated, std::ios::binary) << bytes;
    }
    result = run_command(cli + " filter " + shell_quote(truncated.string()) + " --expr 'A > 1' --out " + shell_quote(out.string()) +
                         " 2>&1");
    EXPECT_EQ(result.exit_code, 3) << result.output;
    EXPECT_NE(result.output.find("truncated.h5"), std::string::npos) << result.output;
    // Not a dataset at all.
    const fs::path text = folder / "notes.txt";
    std::ofstream(text) << "not a matrix\n";
    result = run_command(cli + " filter " + shell_quote(text.string()) + " --expr 'A > 1' --out " + shell_quote(out.string()) + " 2>&1");
    EXPECT_EQ(result.exit_code, 3) << result.output;
    // An output folder that does not exist.
    const std::string nowhere = (folder / "no-such-folder" / "cells.txt").string();
    result = run_command(cli + " filter " + shell_quote(input("synth.h5")) + " --expr 'A > 1' --out " + shell_quote(nowhere) + " 2>&1");
    EXPECT_EQ(result.exit_code, 3) << result.output;
    EXPECT_NE(result.output.find(nowhere), std::string::npos) << result.output;
    // Nothing but the inputs the test wrote.
    EXPECT_EQ(listing(folder), (std::vector<std::string>{"notes.txt", "truncated.h5"}));
}

TEST(CliFilterRealData, TenxV3Chr21MatchesBruteForce) {
    const auto path = test::shared_data("scanpy_10x_v3_chr21/filtered_feature_bc_matrix.h5");
    FATHOM_REQUIRE_PATH(path);
    const DenseDataset data = read_dense(path.string());
    ASSERT_EQ(data.num_cells, 1107);
    const std::int32_t itgb2 = data.gene("ITGB2"), son = data.gene("SON"), sod1 = data.gene("SOD1");
    ASSERT_GE(itgb2, 0);
    ASSERT_GE(son, 0);
    ASSERT_GE(sod1, 0);
    const auto folder = test::temp_dir("cli-filter-chr21");
    const fs::path out = folder / "cells.txt";
    const auto count = [&](std::int32_t gene, std::size_t cell) { return data.counts[static_cast<std::size_t>(gene)][cell]; };
    expect_filter_matches(path.string(), data, "ITGB2 > 2 and not SON > 1 or ENSG00000142168 >= 4", "--layer counts",
                          [&](std::size_t cell) {
                              return (count(itgb2, cell) > 2.0f && !(count(son, cell) > 1.0f)) || count(sod1, cell) >= 4.0f;
                          },
                          out);
    expect_filter_matches(path.string(), data, "ITGB2 between 6 7.5 and not SOD1 > 6.2", "",
                          [&](std::size_t cell) {
                              const float value = data.lognorm(itgb2, cell);
                              return 6.0f <= value && value <= 7.5f && !(data.lognorm(sod1, cell) > 6.2f);
                          },
                          out);
    // The gzipped Matrix Market folder of the same data gives the same cells.
    const auto mtx = test::shared_data("scanpy_10x_v3_chr21/filtered_feature_bc_matrix");
    if (fs::exists(mtx)) {
        const fs::path from_mtx = folder / "from-mtx.txt";
        const auto result = run_command(cli + " filter " + shell_quote(mtx.string()) + " --expr 'ITGB2 between 6 7.5 and not SOD1 > 6.2' --out " +
                                        shell_quote(from_mtx.string()) + " 2>&1");
        ASSERT_EQ(result.exit_code, 0) << result.output;
        EXPECT_EQ(read_lines(from_mtx), read_lines(out));
    }
}

}  // namespace
}  // namespace fathom
