#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <variant>
#include <thread>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "app/cli/commands.hpp"
#include "app/cli/jobs.hpp"
#include "app/cli/mpi_comm.hpp"
#include "app/cli/read_options.hpp"
#include "core/engine/Engine.hpp"
#include "core/engine/csv_export.hpp"
#include "core/engine/settings_schema.hpp"
#include "core/types/atomic_file.hpp"
#include "gpu/provider.hpp"

namespace fathom::cli {

namespace {

/// Prints a live progress line (tty) or one line per stage (pipes, logs).
class ProgressPrinter {
public:
    /// A printer that is not `enabled` prints nothing (the ranks other than 0).
    explicit ProgressPrinter(bool enabled = true) : m_tty(::isatty(STDERR_FILENO) != 0), m_enabled(enabled) {}
    void update(const JobStatus& status) {
        if (status.stage.empty() || !m_enabled) return;
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
    bool m_enabled;
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

/// The option of `spec` as the user knows it: its own flag, else the flag of a value
/// that switches it on ("--leiden" for run_leiden).
std::string option_of(const SettingSpec& spec) {
    if (!spec.cli_flag.empty()) return spec.cli_flag;
    for (const auto& other : pipeline_settings_schema())
        if (other.switch_name == spec.name && !other.cli_flag.empty()) return other.cli_flag;
    return spec.name;
}

/// The settings the command line asks for. The CLI runs only the steps asked for: every
/// step switch starts off; a value option turns its step on when the step has no flag
/// of its own (--neighbors K, --leiden R, --markers M) and needs that flag otherwise
/// (--umap-components needs --umap).
PipelineSettings settings_from_command_line(const CLI::App& command, const std::map<std::string, std::string>& values,
                                            const std::map<std::string, bool>& flags) {
    PipelineSettings settings;
    const auto& schema = pipeline_settings_schema();
    for (const auto& spec : schema)
        if (spec.step_switch) spec.set(settings, false);
    for (const auto& spec : schema) {
        if (spec.cli_flag.empty() || command.count(spec.cli_flag) == 0) continue;
        if (spec.kind == SettingKind::Flag) {
            set_setting(settings, spec, flags.at(spec.name));
        } else {
            set_setting(settings, spec, parse_setting_value(spec, values.at(spec.name)));
        }
        if (spec.switch_name.empty()) continue;
        const SettingSpec& step = *find_setting(spec.switch_name);
        if (step.cli_flag.empty())
            step.set(settings, true);
        else if (command.count(step.cli_flag) == 0)
            throw std::invalid_argument(spec.cli_flag + " needs " + step.cli_flag);
    }
    for (const auto& spec : schema) {
        if (spec.requires_switch.empty() || !std::get<bool>(spec.get(settings))) continue;
        const SettingSpec& needed = *find_setting(spec.requires_switch);
        if (!std::get<bool>(needed.get(settings)))
            throw std::invalid_argument(option_of(spec) + " needs " + option_of(needed));
    }
    settings.validate();
    return settings;
}

/// The settings as JSON, by setting name (--print-settings, the ranks' check).
nlohmann::json settings_json(const PipelineSettings& settings) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& spec : pipeline_settings_schema())
        out[spec.name] = std::visit([](const auto& value) { return nlohmann::json(value); }, spec.get(settings));
    return out;
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_code) {
    auto* command = app.add_subcommand("run", "Run the analysis pipeline and write the annotated h5ad");
    struct Args {
        std::string input, output, report, export_csv, devices = EngineConfig{}.devices;
        bool no_matrix = false;
        double memory_budget_gb = 0.0;
        /// Text of every value option given and the state of every flag, by setting name
        /// (std::map: stable addresses for CLI11).
        std::map<std::string, std::string> values;
        std::map<std::string, bool> flags;
        bool print_settings = false;
        ReadArgs read;
    };
    auto args = std::make_shared<Args>();
    command->add_option("IN", args->input, "h5ad, 10x HDF5, Matrix Market folder or .mtx file")->required();
    command->add_option("--out", args->output, "output .h5ad")->required();
    // The pipeline's options, one per setting of the schema (core/engine/settings_schema.hpp).
    const PipelineSettings defaults;
    for (const SettingSpec& spec : pipeline_settings_schema()) {
        if (spec.cli_flag.empty()) continue;
        if (spec.kind == SettingKind::Flag) {
            command->add_flag(spec.cli_flag, args->flags[spec.name], spec.help);
            continue;
        }
        std::string help = spec.help;
        if (spec.kind == SettingKind::Choice) {
            help += " (";
            for (std::size_t index = 0; index < spec.choices.size(); ++index)
                help += (index ? ", " : "") + spec.choices[index].name;
            help += ")";
        }
        const SettingSpec* described = &spec;
        command->add_option(spec.cli_flag, args->values[spec.name], help)
            ->check(CLI::Validator(
                [described](std::string& text) {
                    try {
                        parse_setting_value(*described, text);
                        return std::string();
                    } catch (const std::invalid_argument& error) {
                        return std::string(error.what());
                    }
                },
                ""))
            ->default_str(format_setting_value(spec, spec.get(defaults)));
    }
    add_read_options(*command, args->read);
    command->add_option("--devices", args->devices, "cpu, cpu:N (N shards) or cuda:0,1,...")->default_str(args->devices);
    command->add_option("--memory-budget", args->memory_budget_gb,
                        "GiB of raw matrix to load into memory; larger ones are streamed from the file "
                        "(0 = half the RAM, shared by the ranks on a node; -1 = always stream)")
        ->default_str("0");
    command->add_flag("--print-settings", args->print_settings,
                      "print the pipeline settings this command line means (JSON, by setting name) and exit "
                      "without reading IN");
    command->add_flag("--no-matrix", args->no_matrix, "omit X from the output (annotations only)");
    command->add_option("--report", args->report, "write per-step wall time, CPU time and peak RSS as JSON");
    command->add_option("--export-csv", args->export_csv,
                        "also write Loupe-style CSVs (UMAP, every categorical obs column) and the marker table into this folder");
    command->callback([&exit_code, args, command] {
        exit_code = guarded([&] {
            const PipelineSettings settings = settings_from_command_line(*command, args->values, args->flags);
            if (args->print_settings) {
                std::cout << settings_json(settings).dump(2) << "\n";
                return static_cast<int>(Ok);
            }
            if (!args->output.ends_with(".h5ad")) throw std::invalid_argument("--out must name a .h5ad file");
            const DatasetReadOptions read = dataset_read_options(args->read);

            // Under mpirun / srun every rank runs the same jobs on its own rows; rank 0
            // prints, writes the output and the report.
            const std::shared_ptr<Comm> comm = process_comm();
            const bool ranks = comm->size() > 1;
            const bool lead = comm->rank() == 0;
            const std::string who = ranks ? "rank " + std::to_string(comm->rank()) + " of " + std::to_string(comm->size()) + ": " : "";
            if (ranks) {
                // Every rank must run the same command on the same file: refuse at start
                // when one differs (every rank sees every rank's and exits alike).
                std::error_code error;
                const auto size = std::filesystem::file_size(args->input, error);
                const auto modified = std::filesystem::last_write_time(args->input, error);
                nlohmann::json command_line = {
                    {"IN", args->input},
                    {"IN size and time", std::to_string(error ? 0 : size) + "@" +
                                              std::to_string(modified.time_since_epoch().count())},
                    {"--out", args->output},
                    {"--devices", args->devices},
                    {"--memory-budget", args->memory_budget_gb},
                    {"--no-matrix", args->no_matrix},
                    {"--report", args->report},
                    {"--export-csv", args->export_csv},
                    {"--matrix", read.matrix},
                    {"--genome", read.genome},
                    {"--feature-types", read.feature_type},
                    {"--keep-duplicate-names", !read.make_var_names_unique}};
                const nlohmann::json by_name = settings_json(settings);
                for (const auto& [name, value] : by_name.items()) command_line[name] = value;
                const std::string text = command_line.dump();
                const auto all = comm->all_gather(std::as_bytes(std::span(text.data(), text.size())));
                const auto lead_line = nlohmann::json::parse(std::string(reinterpret_cast<const char*>(all[0].data()), all[0].size()));
                for (std::size_t rank = 1; rank < all.size(); ++rank) {
                    const auto line = nlohmann::json::parse(std::string(reinterpret_cast<const char*>(all[rank].data()), all[rank].size()));
                    for (const auto& [key, value] : lead_line.items())
                        if (line.value(key, nlohmann::json()) != value) {
                            if (!lead) return static_cast<int>(Usage);  // rank 0 says why
                            throw std::invalid_argument("rank " + std::to_string(rank) + " was started with another " + key +
                                                        " than rank 0 (" + line.value(key, nlohmann::json()).dump() +
                                                        " vs " + value.dump() + "): every rank must run the same command");
                        }
                }
            }
            std::optional<InterruptScope> interrupt(std::in_place);
            const auto started = std::chrono::steady_clock::now();
            EngineConfig config;
            config.comm = comm;
            // Bytes moved between ranks, at the start of every step.
            struct Traffic {
                std::string step;
                std::int64_t sent = 0, received = 0;
            };
            auto traffic = std::make_shared<std::vector<Traffic>>();
            if (ranks)
                config.step_observer = [comm, traffic](const std::string& step, JobContext&) {
                    traffic->push_back({step, comm->bytes_sent(), comm->bytes_received()});
                };
            config.devices = args->devices;
            config.read = read;
            config.device_provider = gpu::make_device_provider();
            config.keep_packed_rows = !args->no_matrix;  // only the export of X reads them after the pipeline
            config.memory_budget_bytes = args->memory_budget_gb < 0
                                             ? -1
                                             : static_cast<std::int64_t>(args->memory_budget_gb * 1024.0 * 1024.0 * 1024.0);
            Engine engine(config);
            ProgressPrinter printer(lead);
            nlohmann::json report = {{"input", args->input},
                                     {"output", args->output},
                                     {"devices", args->devices},
                                     {"recipe", recipe_definition(settings.recipe).name},
                                     {"steps", nlohmann::json::array()}};
            const auto step = [&](const JobHandle& handle) {
                const JobStatus status = follow(handle, printer);
                for (auto& entry : timings_json(status)) report["steps"].push_back(entry);
                if (status.state == JobState::Failed) std::cerr << "fathom-cli: " << who << status.message << "\n";
                // Over ranks, the rank that was signalled says so before it ends the others.
                if (status.state == JobState::Cancelled && (lead || ranks)) std::cerr << "fathom-cli: " << who << "cancelled\n" << std::flush;
                const int code = exit_code_for(status);
                // A failure on one rank ends every rank at once (the others would wait in
                // the next exchange), with this rank's exit code.
                if (code != Ok && ranks) abort_all_ranks(code);
                return code;
            };
            int code = step(engine.open(args->input));
            if (code == Ok) {
                const auto opened = engine.snapshot()->dataset;
                nlohmann::json shards = nlohmann::json::array();
                for (const auto& name : opened->devices) shards.push_back(name);
                report["shards"] = shards;
                if (!opened->open_note.empty() && lead) std::cerr << "fathom-cli: " << opened->open_note << "\n";
                if (opened->num_var_names_made_unique > 0 && lead)
                    std::cerr << "fathom-cli: " << opened->num_var_names_made_unique
                              << " duplicate gene names made unique (--keep-duplicate-names keeps them)\n";
                // Over ranks each rank places its own shards: each says its note.
                if (!opened->device_note.empty() && (lead || ranks)) {
                    std::cerr << "fathom-cli: " << who << opened->device_note << "\n";
                    report["device_note"] = opened->device_note;
                }
            }
            if (code == Ok) code = step(engine.run(settings));
            if (code == Ok) {
                const auto warnings = engine.snapshot()->warnings;
                if (lead)
                    for (const auto& warning : warnings) std::cerr << "fathom-cli: warning: " << warning << "\n";
                if (!warnings.empty()) report["warnings"] = warnings;
                // The kNN search's method and measured recall on the neighbors step.
                if (const auto knn = engine.snapshot()->knn)
                    for (auto& entry : report["steps"])
                        if (entry["step"] == "neighbors") {
                            entry["knn_method"] = knn->method;
                            entry["recall"] = std::isfinite(knn->recall) ? nlohmann::json(knn->recall) : nlohmann::json();
                            entry["recall_queries"] = knn->recall_queries;
                        }
            }
            if (code == Ok) code = step(engine.export_h5ad(args->output, !args->no_matrix));
            if (code == Ok && !args->export_csv.empty() && lead) fathom::export_csv(*engine.snapshot(), args->export_csv);
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
            // One entry per rank: its rows, the matrix bytes it read, its peak RSS and the
            // bytes it sent and received in each step (gathered by rank 0).
            nlohmann::json mine = {{"rank", comm->rank()},
                                   {"host", comm->host()},
                                   {"rows", {snapshot->dataset->local_rows_begin, snapshot->dataset->local_rows_end}},
                                   {"matrix_bytes_read", snapshot->dataset->local_matrix_bytes},
                                   {"streamed", snapshot->dataset->streamed},
                                   {"matrix_storage", snapshot->dataset->matrix_storage},
                                   {"packed_bytes", snapshot->dataset->packed_bytes},
                                   {"memory_budget_bytes", snapshot->dataset->memory_budget_bytes},
                                   {"shards", report["shards"]}};
            if (report.contains("device_note")) mine["device_note"] = report["device_note"];
            std::int64_t peak = 0;
            for (const auto& entry : report["steps"]) peak = std::max(peak, entry["peak_rss_bytes"].get<std::int64_t>());
            mine["peak_rss_bytes"] = peak;
            nlohmann::json moved = nlohmann::json::array();
            for (std::size_t index = 0; index < traffic->size(); ++index) {
                const auto& begin = (*traffic)[index];
                const std::int64_t sent_end = index + 1 < traffic->size() ? (*traffic)[index + 1].sent : comm->bytes_sent();
                const std::int64_t received_end =
                    index + 1 < traffic->size() ? (*traffic)[index + 1].received : comm->bytes_received();
                moved.push_back({{"step", begin.step},
                                 {"bytes_sent", sent_end - begin.sent},
                                 {"bytes_received", received_end - begin.received}});
            }
            mine["steps"] = moved;
            const std::string text = mine.dump();
            nlohmann::json ranks_json = nlohmann::json::array();
            for (const Bytes& entry : comm->all_gather(std::as_bytes(std::span(text.data(), text.size()))))
                ranks_json.push_back(nlohmann::json::parse(std::string(reinterpret_cast<const char*>(entry.data()), entry.size())));
            report["ranks"] = ranks_json;
            if (!lead) return static_cast<int>(Ok);
            report["cells"] = snapshot->cells.size();
            report["matrix_storage"] = snapshot->dataset->matrix_storage;
            report["genes"] = snapshot->dataset ? snapshot->dataset->shape.num_genes : 0;
            if (snapshot->leiden)
                report["leiden"] = {{"flavor", snapshot->leiden->flavor},
                                    {"modularity", snapshot->leiden->modularity},
                                    {"clusters", snapshot->leiden->num_clusters},
                                    {"passes", snapshot->leiden->passes},
                                    {"seconds", snapshot->leiden->seconds},
                                    {"beside_umap", snapshot->leiden->beside_umap}};
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

void add_settings_command(CLI::App& app, int& exit_code) {
    auto* command = app.add_subcommand("settings", "List the pipeline settings of `run` (Markdown table: setting, "
                                                   "option, default, values, meaning)");
    command->callback([&exit_code] {
        std::cout << settings_markdown_table();
        exit_code = Ok;
    });
}

}  // namespace fathom::cli
