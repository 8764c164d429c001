#pragma once
/// fathom-cli subcommands. Each add_* registers one subcommand on the app; when the
/// subcommand is chosen its callback stores the exit code in `exit_code`.
#include <CLI/CLI.hpp>

namespace fathom::cli {

/// Exit codes (STYLE.md): 0 ok, 2 usage, 3 bad or unreadable input, 4 compute,
/// 5 device, 130 cancelled.
enum ExitCode : int { Ok = 0, Usage = 2, Input = 3, Compute = 4, Device = 5, Cancelled = 130 };

void add_info_command(CLI::App& app, int& exit_code);
void add_convert_command(CLI::App& app, int& exit_code);
void add_synth_command(CLI::App& app, int& exit_code);
void add_devices_command(CLI::App& app, int& exit_code);
void add_run_command(CLI::App& app, int& exit_code);
/// `settings`: the table of the pipeline settings (settings_schema.hpp).
void add_settings_command(CLI::App& app, int& exit_code);
void add_filter_command(CLI::App& app, int& exit_code);

/// Runs `body`, mapping Fathom's typed errors to exit codes and printing
/// "fathom-cli: <message>" on stderr (Cancelled: "fathom-cli: cancelled", 130).
int guarded(const std::function<int()>& body);

}  // namespace fathom::cli
