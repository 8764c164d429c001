// fathom-cli synth: the built-in demo dataset generator (core/io/synth.hpp).
#include <chrono>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include "app/cli/commands.hpp"
#include "app/cli/jobs.hpp"
#include "core/io/synth.hpp"

namespace fathom::cli {

void add_synth_command(CLI::App& app, int& exit_code) {
    auto* command = app.add_subcommand(
        "synth", "Generate a synthetic raw-count dataset (cell types with marker genes, NB counts, MT- genes)");
    struct Args {
        io::SynthOptions options;
        std::string output;
        bool quiet = false;
    };
    auto args = std::make_shared<Args>();
    io::SynthOptions& options = args->options;
    command->add_option("--cells", options.num_cells, "number of cells")->required()->check(CLI::Range(1LL, 2147483647LL));
    command->add_option("--genes", options.num_genes, "number of genes (the last 13 are MT- genes)")
        ->default_str(std::to_string(options.num_genes))
        ->check(CLI::Range(50LL, 2147483647LL));
    command->add_option("--out", args->output, "output FILE.h5 (10x v3 HDF5) or FILE.h5ad")->required();
    command->add_option("--seed", options.seed, "random seed (same seed => identical matrix)")
        ->default_str(std::to_string(options.seed));
    command->add_option("--cell-types", options.num_cell_types, "number of cell types")
        ->default_str(std::to_string(options.num_cell_types))
        ->check(CLI::Range(1, 1000000));
    command->add_option("--gzip", options.gzip_level,
                        "gzip level 0-9 (-1 = format default: 4 for .h5 as CellRanger, 0 for .h5ad)")
        ->default_str("-1")
        ->check(CLI::Range(-1, 9));
    command->add_flag("--quiet", args->quiet, "no progress line");
    command->callback([&exit_code, args] {
        exit_code = guarded([&] {
            io::SynthOptions options = args->options;
            const auto start = std::chrono::steady_clock::now();
            auto last_print = start - std::chrono::seconds(1);
            auto seconds_since = [](std::chrono::steady_clock::time_point since) {
                return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
            };
            if (!args->quiet) {
                options.on_progress = [&, total = options.num_cells](std::int64_t cells, std::int64_t nnz) {
                    const auto now = std::chrono::steady_clock::now();
                    if (now - last_print < std::chrono::milliseconds(500) && cells < total) return;
                    last_print = now;
                    std::ostringstream line;
                    line << std::fixed << std::setprecision(1) << "\rsynth: " << cells << " / " << total << " cells ("
                         << 100.0 * static_cast<double>(cells) / static_cast<double>(total) << "%), " << nnz
                         << " non-zeros, " << seconds_since(start) << " s   ";
                    std::cerr << line.str() << std::flush;
                };
            }
            JobContext ctx;
            const InterruptScope interrupt(&ctx);  // Ctrl-C: Cancelled, nothing left at --out
            const io::SynthSummary summary = io::write_synthetic(args->output, options, &ctx);
            if (!args->quiet) std::cerr << "\n";
            const double density = static_cast<double>(summary.nnz) /
                                   (static_cast<double>(summary.num_cells) * static_cast<double>(summary.num_genes));
            std::cout << "wrote " << args->output << ": " << summary.num_cells << " cells x " << summary.num_genes
                      << " genes, " << summary.nnz << " non-zeros (" << std::fixed << std::setprecision(2)
                      << 100.0 * density << "% dense), " << std::setprecision(1) << seconds_since(start) << " s\n";
            return static_cast<int>(Ok);
        });
    });
}

}  // namespace fathom::cli
