// Latency of marker-gene filters through the engine (Engine::evaluate_filter), as the
// filter panel uses it: the first evaluation reads the rule genes' columns from the
// shards (and caches them per layer); later evaluations with changed thresholds run
// from the cached columns only. Run:
//   build/bench/bench_filter [--cells 1300000] [--genes 2000] [--library 400]
//       [--repeats 9] [--devices cpu:1] [--dataset FILE --filter-genes A,B,C,D,E] [--keep]
// Without --dataset a synthetic h5ad (fathom-cli synth's generator, seed 1, median
// library --library UMIs so that 1.3M cells stay near 2 GB in memory) is written to a
// temporary folder first. The five genes default to one marker gene of each of the
// first five cell types. Every figure is wall time from submit to result on this
// machine, printed with the thread count; the re-evaluation figure is the median of
// --repeats runs, each with different thresholds.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/engine/Engine.hpp"
#include "core/io/synth.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

struct Args {
    std::int64_t cells = 1300000;
    std::int64_t genes = 2000;
    double library = 400.0;
    int repeats = 9;
    std::string devices = "cpu:1";
    std::string dataset;
    std::vector<std::string> filter_genes;
    bool keep = false;
};

/// The command line, or std::nullopt after CLI11 has printed help or an error (`exit_code`).
std::optional<Args> parse_args(int argc, char** argv, int& exit_code) {
    Args args;
    CLI::App app{"Latency of a five-gene filter expression", "bench_filter"};
    app.add_option("--cells", args.cells, "synthetic cells")->capture_default_str()->check(CLI::PositiveNumber);
    app.add_option("--genes", args.genes, "synthetic genes")->capture_default_str()->check(CLI::PositiveNumber);
    app.add_option("--library", args.library, "synthetic UMIs per cell")->capture_default_str()->check(CLI::PositiveNumber);
    app.add_option("--repeats", args.repeats, "runs (the median of at least 7)")->capture_default_str()->check(CLI::Range(7, 1000000));
    app.add_option("--devices", args.devices, "devices")->capture_default_str();
    auto* dataset = app.add_option("--dataset", args.dataset, "a real dataset instead of the synthetic one")->check(CLI::ExistingFile);
    app.add_option("--filter-genes", args.filter_genes, "the five genes of the expression (with --dataset)")
        ->delimiter(',')
        ->expected(5)
        ->needs(dataset);
    app.add_flag("--keep", args.keep, "keep the synthetic dataset file");
    try {
        app.parse(argc, argv);
        if (!args.dataset.empty() && args.filter_genes.size() != 5)
            throw CLI::ValidationError("--filter-genes", "--dataset needs --filter-genes with 5 genes");
    } catch (const CLI::ParseError& error) {
        exit_code = app.exit(error);
        return std::nullopt;
    }
    return args;
}

/// Five rules over the five genes, joined with and / or / not; `shift` moves every threshold.
std::string expression(const std::vector<std::string>& genes, double shift) {
    const auto number = [](double value) {
        char text[32];
        std::snprintf(text, sizeof text, "%.3g", value);
        return std::string(text);
    };
    return genes[0] + " > " + number(0.5 + shift) + " and " + genes[1] + " > " + number(0.2 + shift) + " or " +
           genes[2] + " >= " + number(1.0 + shift) + " and not " + genes[3] + " > " + number(2.0 + shift) + " or " +
           genes[4] + " between " + number(0.5 + shift) + " " + number(3.0 + shift);
}

}  // namespace

int main(int argc, char** argv) {
    int exit_code = 0;
    const std::optional<Args> parsed = parse_args(argc, argv, exit_code);
    if (!parsed) return exit_code;
    const Args& args = *parsed;
    std::filesystem::path folder;
    std::string path = args.dataset;
    std::vector<std::string> genes = args.filter_genes;
    if (path.empty()) {
        folder = std::filesystem::temp_directory_path() / ("fathom-bench-filter-" + std::to_string(::getpid()));
        std::filesystem::create_directories(folder);
        path = (folder / "synth.h5ad").string();
        fathom::io::SynthOptions options;
        options.num_cells = args.cells;
        options.num_genes = args.genes;
        options.median_library_size = args.library;
        options.seed = 1;
        const auto model = fathom::io::synthetic_model(options);
        for (std::size_t type = 0; type < 5 && type < model.markers.size(); ++type)
            genes.push_back(model.gene_names[static_cast<std::size_t>(model.markers[type].front())]);
        if (genes.size() != 5) {
            std::fprintf(stderr, "bench_filter: the synthetic model has fewer than 5 cell types\n");
            return 2;
        }
        const auto start = Clock::now();
        const auto summary = fathom::io::write_synthetic(path, options);
        std::printf("dataset      synthetic %lld cells x %lld genes, %lld non-zeros, written in %.1f s (%s)\n",
                    static_cast<long long>(summary.num_cells), static_cast<long long>(summary.num_genes),
                    static_cast<long long>(summary.nnz), ms_since(start) / 1e3, path.c_str());
    } else {
        std::printf("dataset      %s\n", path.c_str());
    }

    int status = 0;
    {
        fathom::EngineConfig config;
        config.devices = args.devices;
        fathom::Engine engine(config);
        auto start = Clock::now();
        const fathom::JobHandle open = engine.open(path);
        open.wait();
        if (open.status().state != fathom::JobState::Succeeded) {
            std::fprintf(stderr, "bench_filter: open failed: %s\n", open.status().message.c_str());
            return 3;
        }
        const auto snapshot = engine.snapshot();
        std::printf("open         %.1f s, %lld cells, devices %s, %u hardware threads\n", ms_since(start) / 1e3,
                    static_cast<long long>(snapshot->dataset->shape.num_cells), args.devices.c_str(),
                    std::thread::hardware_concurrency());
        std::printf("genes        %s, %s, %s, %s, %s\n", genes[0].c_str(), genes[1].c_str(), genes[2].c_str(),
                    genes[3].c_str(), genes[4].c_str());

        const auto run = [&](double shift, double& milliseconds) -> std::int64_t {
            const std::string text = expression(genes, shift);
            const auto begin = Clock::now();
            const auto pending = engine.evaluate_filter(text, fathom::ValueLayer::LogNorm, "cell_type");
            const auto mask = pending.wait();
            milliseconds = ms_since(begin);
            if (!mask) throw std::runtime_error("filter '" + text + "' failed: " + pending.status().message);
            return mask->num_matching;
        };
        try {
            double first_ms = 0.0;
            const std::int64_t first_matching = run(0.0, first_ms);
            std::printf("first        %8.1f ms  (reads 5 gene columns from the shards, log-normalises, caches; "
                        "%lld cells match)\n",
                        first_ms, static_cast<long long>(first_matching));
            std::vector<double> times;
            std::int64_t low = first_matching, high = first_matching;
            for (int repeat = 1; repeat <= args.repeats; ++repeat) {
                double milliseconds = 0.0;
                const std::int64_t matching = run(0.05 * repeat, milliseconds);
                times.push_back(milliseconds);
                low = std::min(low, matching);
                high = std::max(high, matching);
            }
            std::sort(times.begin(), times.end());
            std::printf("re-evaluate  %8.1f ms  median of %d with changed thresholds (min %.1f, max %.1f; "
                        "%lld..%lld cells match)\n",
                        times[times.size() / 2], args.repeats, times.front(), times.back(), static_cast<long long>(low),
                        static_cast<long long>(high));
            status = times[times.size() / 2] < 50.0 ? 0 : 1;
            if (status != 0) std::printf("re-evaluate  above the 50 ms target\n");
        } catch (const std::exception& failure) {
            std::fprintf(stderr, "bench_filter: %s\n", failure.what());
            status = 4;
        }
    }
    if (!folder.empty() && !args.keep) std::filesystem::remove_all(folder);
    return status;
}
