// fathom-cli: the headless entry point on the same engine as the GUI.
#include <iostream>

#include "app/cli/commands.hpp"
#include "core/io/errors.hpp"
#include "core/types/JobContext.hpp"

namespace fathom::cli {

int guarded(const std::function<int()>& body) {
    try {
        return body();
    } catch (const fathom::Cancelled&) {  // Ctrl-C (InterruptScope in jobs.hpp)
        std::cerr << "fathom-cli: cancelled\n";
        return Cancelled;
    } catch (const io::FormatError& error) {
        std::cerr << "fathom-cli: " << error.what() << "\n";
        return Input;
    } catch (const io::ReadError& error) {
        std::cerr << "fathom-cli: " << error.what() << "\n";
        return Input;
    } catch (const io::WriteError& error) {
        std::cerr << "fathom-cli: " << error.what() << "\n";
        return Input;
    } catch (const std::invalid_argument& error) {
        std::cerr << "fathom-cli: " << error.what() << "\n";
        return Usage;
    } catch (const std::exception& error) {
        std::cerr << "fathom-cli: " << error.what() << "\n";
        return Compute;
    }
}

}  // namespace fathom::cli

int main(int argc, char** argv) {
    using namespace fathom::cli;
    CLI::App app{"fathom-cli: single-cell RNA-seq analysis at million-cell scale (headless)"};
    app.require_subcommand(1);
    int exit_code = Ok;
    add_info_command(app, exit_code);
    add_convert_command(app, exit_code);
    add_synth_command(app, exit_code);
    add_devices_command(app, exit_code);
    add_run_command(app, exit_code);
    add_settings_command(app, exit_code);
    add_filter_command(app, exit_code);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& error) {
        const int code = app.exit(error);
        return code == 0 ? Ok : Usage;
    }
    return exit_code;
}
