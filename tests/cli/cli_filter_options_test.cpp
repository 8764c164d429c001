// fathom-cli filter's read options through the engine (EngineConfig::read): --matrix raw
// on scanpy's pbmc68k_reduced (X is scaled and dense, raw/X the log-normalised sparse
// values) and --genome on a 10x v2 file with two genomes, each against a brute force
// read of the same matrix, in memory and streamed in blocks (--block-nnz). A file with
// two genomes and no --genome is an input error naming the genomes.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
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

std::vector<std::string> read_lines(const fs::path& path) {
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

/// The barcodes of the cells whose value of `gene` in the matrix that `options` reads is
/// greater than `threshold` (values as stored: --layer counts).
std::vector<std::string> brute_force(const std::string& path, const io::ReadOptions& options, const std::string& gene,
                                     float threshold) {
    io::OpenedDataset opened = io::open_dataset(path, options);
    const auto& names = opened.meta.var.index();
    const auto column = static_cast<std::int32_t>(std::find(names.begin(), names.end(), gene) - names.begin());
    EXPECT_LT(static_cast<std::size_t>(column), names.size()) << gene;
    const CsrShard all = opened.source->read_rows(0, opened.meta.shape.num_cells);
    std::vector<std::string> barcodes;
    for (std::size_t cell = 0; cell + 1 < all.row_offsets.size(); ++cell)
        for (auto entry = all.row_offsets[cell]; entry < all.row_offsets[cell + 1]; ++entry)
            if (all.gene_indices[static_cast<std::size_t>(entry)] == column &&
                all.values[static_cast<std::size_t>(entry)] > threshold)
                barcodes.push_back(opened.meta.obs.index()[cell]);
    return barcodes;
}

/// Runs the filter in memory and streamed in small blocks; both must give `expected`.
void expect_filter(const std::string& args, const std::vector<std::string>& expected, const fs::path& out) {
    for (const std::string blocks : {"", " --block-nnz 500"}) {
        SCOPED_TRACE("fathom-cli filter " + args + blocks);
        const auto result = run_command(cli + " filter " + args + blocks + " --layer counts --out " +
                                        shell_quote(out.string()) + " 2>&1");
        ASSERT_EQ(result.exit_code, 0) << result.output;
        EXPECT_EQ(read_lines(out), expected);
        EXPECT_NE(result.output.find(std::to_string(expected.size()) + " of "), std::string::npos) << result.output;
    }
}

TEST(CliFilterOptions, MatrixRawOfPbmc68kReduced) {
    const auto path = test::shared_data("scanpy_pbmc68k_reduced/10x_pbmc68k_reduced.h5ad");
    FATHOM_REQUIRE_PATH(path);
    const auto folder = test::temp_dir("cli-filter-raw");
    io::ReadOptions raw;
    raw.matrix = "raw";
    const auto from_raw = brute_force(path.string(), raw, "CD3E", 2.0f);
    const auto from_x = brute_force(path.string(), io::ReadOptions{}, "CD3E", 2.0f);
    ASSERT_GT(from_raw.size(), 0u);
    ASSERT_NE(from_raw, from_x) << "X (scaled) and raw (log-normalised) should select different cells";
    expect_filter(shell_quote(path.string()) + " --matrix raw --expr 'CD3E > 2'", from_raw, folder / "raw.txt");
    expect_filter(shell_quote(path.string()) + " --expr 'CD3E > 2'", from_x, folder / "x.txt");
}

TEST(CliFilterOptions, GenomeOfATenxV2FileWithTwo) {
    const auto path = test::shared_data("scanpy_10x_v2_chr21/multiple_genomes.h5");
    FATHOM_REQUIRE_PATH(path);
    const auto folder = test::temp_dir("cli-filter-genome");
    for (const std::string genome : {"hg19_chr21", "another_genome"}) {
        SCOPED_TRACE(genome);
        io::ReadOptions options;
        options.genome = genome;
        io::OpenedDataset opened = io::open_dataset(path.string(), options);
        // The gene with the most cells above 0.
        const CsrShard all = opened.source->read_rows(0, opened.meta.shape.num_cells);
        std::vector<int> cells(static_cast<std::size_t>(opened.meta.shape.num_genes), 0);
        for (const std::int32_t gene : all.gene_indices) ++cells[static_cast<std::size_t>(gene)];
        const auto best = static_cast<std::size_t>(std::max_element(cells.begin(), cells.end()) - cells.begin());
        const std::string gene = opened.meta.var.index()[best];
        const auto expected = brute_force(path.string(), options, gene, 0.0f);
        ASSERT_GT(expected.size(), 0u);
        expect_filter(shell_quote(path.string()) + " --genome " + genome + " --expr " + shell_quote("'" + gene + "' > 0"),
                      expected, folder / (genome + ".txt"));
    }
    // Two genomes and no --genome: an input error naming them; nothing written.
    const auto result = run_command(cli + " filter " + shell_quote(path.string()) + " --expr 'A > 1' --out " +
                                    shell_quote((folder / "none.txt").string()) + " 2>&1");
    EXPECT_EQ(result.exit_code, 3) << result.output;
    EXPECT_NE(result.output.find("another_genome"), std::string::npos) << result.output;
    EXPECT_FALSE(fs::exists(folder / "none.txt"));
}

}  // namespace
}  // namespace fathom
