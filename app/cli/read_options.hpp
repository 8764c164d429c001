#pragma once
/// The options of fathom-cli's commands that choose what is read from a file: --matrix,
/// --layer, --genome, --feature-types and --keep-duplicate-names.
#include <CLI/CLI.hpp>

#include "core/engine/Engine.hpp"
#include "core/io/RowSource.hpp"

namespace fathom::cli {

/// What the read options hold until the command runs.
struct ReadArgs {
    DatasetReadOptions read;
    std::string layer;                  ///< --layer NAME: same as --matrix layers/NAME
    bool keep_duplicate_names = false;  ///< --keep-duplicate-names
};

/// Adds the read options to `command`, bound to `args` (which must outlive it).
void add_read_options(CLI::App& command, ReadArgs& args);

/// The engine's read options the command line means. Throws std::invalid_argument
/// naming the options when --layer and --matrix disagree.
DatasetReadOptions dataset_read_options(const ReadArgs& args);

/// The reader's options the command line means (for the file tools: info, convert).
io::ReadOptions io_read_options(const ReadArgs& args);

}  // namespace fathom::cli
