#include <chrono>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <thread>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "app/cli/commands.hpp"
#include "app/cli/jobs.hpp"
#include "core/algo/knn.hpp"
#include "core/engine/Engine.hpp"
#include "core/engine/csv_export.hpp"
#include "core/types/atomic_file.hpp"
#include "gpu/provider.hpp"

namespace fathom::cli {

namespace {

/// Prints a live progress line (tty) or one line per stage (pipes, logs).
class ProgressPrinter {
public:
    ProgressPrinter() : m_tty(::isatty(STDERR_FILENO) != 0) {}
    void update(const JobStatus& status) {
        if (status.stage.empty()) return;
        const int percent = static_cast<int>(status.fraction * 100.0);
        if (m_tty) {
            std::ostringstream line;
            line << "\r\033[K[" << status.name << "] " << status.stage << " " << std::setw(3) << percent << "%";
            if (status.eta_seconds >= 0) line << "  ETA " << static_cast<int>(status.eta_seconds + 0.5) << " s";
            if (!status.message.empty()) line << "  " << status.message;
            std::cerr << line.str() << std::flush;
        } else if (status.stage != m_last_stage) {
            std::cerr << "[" << status.name << "] " << status.stage << "\n";
        }
        m_last_stage = status.stage;
    }
    void finish() {
        if (m_tty && !m_last_stage.empty()) std::cerr << "\r\033[K" << std::flush;
        m_last_stage.clear();
    }

private:
    bool m_tty;
    std::string m_last_stage;
};

int exit_code_for(const JobStatus& status) {
    switch (status.state) {
        case JobState::Succeeded: return Ok;
        case JobState::Cancelled: return Cancelled;
        default: break;
    }
    switch (status.failure) {
        case FailureKind::Input: return Input;
        case FailureKind::Option: return Usage;
        case FailureKind::Output: return Input;
        case FailureKind::Device: return Device;
        default: return Compute;
    }
}

/// Waits for the job while printing progress; Ctrl-C cancels it.
JobStatus follow(const JobHandle& handle, ProgressPrinter& printer) {
    const JobStatus status = wait_for_job(handle, [&](const JobStatus& now) { printer.update(now); });
    printer.finish();
    return status;
}

nlohmann::json timings_json(const JobStatus& status) {
    nlohmann::json steps = nlohmann::json::array();
    for (const auto& timing : status.timings)
        steps.push_back({{"job", status.name},
                         {"step", timing.stage},
                         {"wall_seconds", timing.wall_seconds},
                         {"cpu_seconds", timing.cpu_seconds},
                         {"peak_rss_bytes", timing.peak_rss_bytes}});
    return steps;
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_code) {
    auto* command = app.add_subcommand("run", "Run the analysis pipeline and write the annotated h5ad");
    struct Args {
        std::string input, output, report, export_csv, devices = EngineConfig{}.devices;
        PipelineSettings settings;
        bool no_matrix = false;
        double memory_budget_gb = 0.0;
        std::optional<int> neighbors;
        bool umap = false;
        std::optional<double> leiden;
        std::string markers;
    };
    auto args = std::make_shared<Args>();
    const PipelineSettings defaults;
    command->add_option("IN", args->input, "h5ad, 10x HDF5, Matrix Market folder or .mtx file")->required();
    command->add_option("--out", args->output, "output .h5ad")->required();
    command->add_option("--recipe", args->settings.recipe, "zheng17, seurat or none (X already processed)")
        ->check(CLI::IsMember({"zheng17", "seurat", "none"}))
        ->default_str(defaults.recipe);
    command->add_option("--n-top-genes", args->settings.num_top_genes, "highly variable genes kept by the recipe")
        ->default_str(std::to_string(defaults.num_top_genes));
    command->add_option("--n-pcs", args->settings.num_pcs, "PCA components")->default_str(std::to_string(defaults.num_pcs));
    command->add_option("--min-counts-per-cell", args->settings.min_counts_per_cell,
                        "drop cells with fewer total counts before the recipe (sc.pp.filter_cells(min_counts))");
    command->add_option("--devices", args->devices, "cpu, cpu:N (N shards) or cuda:0,1,...")->default_str(args->devices);
    command->add_option("--memory-budget", args->memory_budget_gb,
                        "GiB of raw matrix to load into memory; larger ones are streamed from the file "
                        "(0 = half the RAM, -1 = always stream)")
        ->default_str("0");
    command->add_option("--neighbors", args->neighbors, "compute the kNN graph with this many neighbours (e.g. 15)");
    command->add_option("--knn-method", args->settings.knn_method,
                        "kNN search: auto (exact below 8192 cells, else ivf), exact, ivf, nndescent or hnsw")
        ->check(CLI::Validator(
            [](std::string& name) {
                // parse_knn_method's message minus its "--knn-method: " prefix, which CLI11 adds.
                const std::string option = "--knn-method";
                try {
                    parse_knn_method(name, option);
                    return std::string();
                } catch (const std::invalid_argument& error) {
                    return std::string(error.what()).substr(option.size() + 2);
                }
            },
            "auto|exact|ivf|nndescent|hnsw"))
        ->default_str(defaults.knn_method);
    command->add_flag("--umap", args->umap, "compute UMAP (needs --neighbors)");
    command->add_option("--umap-components", args->settings.umap_components,
                        "UMAP dimensions (n_components; 3 for the explorer's 3-D view)")
        ->default_str(std::to_string(defaults.umap_components));
    command->add_option("--leiden", args->leiden, "Leiden clustering at this resolution (needs --neighbors)");
    command->add_option("--markers", args->markers, "marker genes per Leiden cluster: t-test or wilcoxon")
        ->check(CLI::IsMember({"t-test", "wilcoxon"}));
    command->add_option("--seed", args->settings.seed, "random seed of every randomised step")->default_str("0");
    command->add_flag("--deterministic", args->settings.deterministic,
                      "bit-for-bit reproducible kNN graph and UMAP for a seed at any thread count "
                      "(an HNSW index built by one thread, deterministic UMAP SGD; slower)");
    command->add_flag("--no-matrix", args->no_matrix, "omit X from the output (annotations only)");
    command->add_option("--report", args->report, "write per-step wall time, CPU time and peak RSS as JSON");
    command->add_option("--export-csv", args->export_csv,
                        "also write Loupe-style CSVs (UMAP, every categorical obs column) and the marker table into this folder");
    command->callback([&exit_code, args, command] {
        exit_code = guarded([&] {
            auto& settings = args->settings;
            settings.run_neighbors = args->neighbors.has_value();
            if (args->neighbors) settings.num_neighbors = *args->neighbors;
            settings.run_umap = args->umap;
            settings.run_leiden = args->leiden.has_value();
            if (args->leiden) settings.resolution = *args->leiden;
            settings.markers = args->markers;
            if (command->count("--umap-components") > 0 && !settings.run_umap)
                throw std::invalid_argument("--umap-components needs --umap");
            if ((settings.run_umap || settings.run_leiden) && !settings.run_neighbors)
                throw std::invalid_argument("--umap and --leiden need --neighbors K");
            if (!settings.markers.empty() && !settings.run_leiden)
                throw std::invalid_argument("--markers needs --leiden RESOLUTION (markers compare Leiden clusters)");
            settings.validate();
            if (!args->output.ends_with(".h5ad")) throw std::invalid_argument("--out must name a .h5ad file");

            std::optional<InterruptScope> interrupt(std::in_place);
            const auto started = std::chrono::steady_clock::now();
            EngineConfig config;
            config.devices = args->devices;
            config.device_provider = gpu::make_device_provider();
            config.memory_budget_bytes = args->memory_budget_gb < 0
                                             ? -1
                                             : static_cast<std::int64_t>(args->memory_budget_gb * 1024.0 * 1024.0 * 1024.0);
            Engine engine(config);
            ProgressPrinter printer;
            nlohmann::json report = {{"input", args->input},
                                     {"output", args->output},
                                     {"devices", args->devices},
                                     {"recipe", settings.recipe},
                                     {"steps", nlohmann::json::array()}};
            const auto step = [&](const JobHandle& handle) {
                const JobStatus status = follow(handle, printer);
                for (auto& entry : timings_json(status)) report["steps"].push_back(entry);
                if (status.state == JobState::Failed) std::cerr << "fathom-cli: " << status.message << "\n";
                if (status.state == JobState::Cancelled) std::cerr << "fathom-cli: cancelled\n";
                return exit_code_for(status);
            };
            int code = step(engine.open(args->input));
            if (code == Ok) {
                const auto opened = engine.snapshot()->dataset;
                nlohmann::json shards = nlohmann::json::array();
                for (const auto& name : opened->devices) shards.push_back(name);
                report["shards"] = shards;
                if (!opened->device_note.empty()) {
                    std::cerr << "fathom-cli: " << opened->device_note << "\n";
                    report["device_note"] = opened->device_note;
                }
            }
            if (code == Ok) code = step(engine.run(settings));
            if (code == Ok) code = step(engine.export_h5ad(args->output, !args->no_matrix));
            if (code == Ok && !args->export_csv.empty()) fathom::export_csv(*engine.snapshot(), args->export_csv);
            interrupt.reset();
            if (code != Ok) return code;

            const auto snapshot = engine.snapshot();
            // Steps that left a device during the run (out of memory) add to the note.
            if (snapshot->dataset && snapshot->dataset->device_note != report.value("device_note", std::string())) {
                std::cerr << "fathom-cli: " << snapshot->dataset->device_note << "\n";
                report["device_note"] = snapshot->dataset->device_note;
            }
            const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
            report["total_wall_seconds"] = total;
            report["cells"] = snapshot->cells.size();
            report["genes"] = snapshot->dataset ? snapshot->dataset->shape.num_genes : 0;
            if (!args->report.empty())
                write_file_atomically(args->report, [&](std::ostream& out) { out << report.dump(2) << "\n"; });
            std::cout << "wrote " << args->output << " (" << snapshot->cells.size() << " cells) in " << std::fixed
                      << std::setprecision(2) << total << " s\n";
            for (const auto& entry : report["steps"])
                std::cout << "  " << std::left << std::setw(12) << entry["step"].get<std::string>() << std::right
                          << std::setw(9) << std::setprecision(3) << entry["wall_seconds"].get<double>() << " s wall "
                          << std::setw(9) << entry["cpu_seconds"].get<double>() << " s cpu  peak RSS "
                          << entry["peak_rss_bytes"].get<std::int64_t>() / (1024 * 1024) << " MiB\n";
            return static_cast<int>(Ok);
        });
    });
}

}  // namespace fathom::cli
