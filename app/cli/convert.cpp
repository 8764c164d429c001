#include <iostream>

#include "app/cli/commands.hpp"
#include "app/cli/jobs.hpp"
#include "core/io/RowSource.hpp"
#include "core/io/h5ad_writer.hpp"

namespace fathom::cli {

void add_convert_command(CLI::App& app, int& exit_code) {
    auto* command = app.add_subcommand("convert", "Convert any readable dataset to h5ad");
    struct Args {
        std::string input, output;
        io::ReadOptions read;
        io::H5adWriteOptions write;
    };
    auto args = std::make_shared<Args>();
    command->add_option("IN", args->input, "h5ad, 10x HDF5, Matrix Market folder or .mtx file")->required();
    command->add_option("OUT", args->output, "output .h5ad")->required();
    command->add_option("--matrix", args->read.matrix, "h5ad input matrix: X, raw or layers/<name>")
        ->default_str(args->read.matrix);
    command->add_option("--genome", args->read.genome, "10x v2: genome group to read");
    command->add_option("--feature-type", args->read.feature_type, "10x: feature type to keep (\"\" = all)")
        ->default_str(args->read.feature_type);
    command->add_flag("--make-unique", args->read.make_var_names_unique, "make var names unique as anndata does");
    command->add_option("--gzip", args->write.gzip_level, "gzip level for X (0 = none)")
        ->check(CLI::Range(0, 9))
        ->default_str("0");
    command->callback([&exit_code, args] {
        exit_code = guarded([&] {
            JobContext ctx;
            const InterruptScope interrupt(&ctx);  // Ctrl-C: Cancelled, nothing left at OUT
            io::OpenedDataset opened = io::open_dataset(args->input, args->read);
            for (const auto& line : io::make_uns_keys_writable(opened.meta.uns))
                std::cerr << "fathom-cli: warning: " << line << "\n";
            io::write_h5ad(args->output, opened.meta, opened.source.get(), args->write, &ctx);
            std::cout << "wrote " << args->output << ": " << opened.meta.shape.num_cells << " cells x "
                      << opened.meta.shape.num_genes << " genes, " << opened.meta.nnz << " non-zeros\n";
            return static_cast<int>(Ok);
        });
    });
}

}  // namespace fathom::cli
