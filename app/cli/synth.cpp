// Placeholder until the synthetic-data generator lands.
#include "app/cli/commands.hpp"
namespace fathom::cli {
void add_synth_command(CLI::App& app, int&) { app.add_subcommand("synth", "Generate a synthetic raw-count dataset"); }
}  // namespace fathom::cli
