#include <iostream>

#include "app/cli/commands.hpp"
#include "app/cli/jobs.hpp"
#include "app/cli/read_options.hpp"
#include "core/io/RowSource.hpp"
#include "core/io/h5ad_writer.hpp"

namespace fathom::cli {

void add_convert_command(CLI::App& app, int& exit_code) {
    auto* command = app.add_subcommand("convert", "Convert any readable dataset to h5ad");
    struct Args {
        std::string input, output;
        ReadArgs read;
        bool make_unique = false;
        io::H5adWriteOptions write;
    };
    auto args = std::make_shared<Args>();
    command->add_option("IN", args->input, "h5ad, 10x HDF5, Matrix Market folder or .mtx file")->required();
    command->add_option("OUT", args->output, "output .h5ad")->required();
    add_read_options(*command, args->read);
    // The default now; kept so that older command lines still run.
    command->add_flag("--make-unique", args->make_unique, "make var names unique as anndata does (the default)")
        ->excludes("--keep-duplicate-names");
    command->add_option("--gzip", args->write.gzip_level, "gzip level for X (0 = none)")
        ->check(CLI::Range(0, 9))
        ->default_str("0");
    command->callback([&exit_code, args] {
        exit_code = guarded([&] {
            JobContext ctx;
            const InterruptScope interrupt(&ctx);  // Ctrl-C: Cancelled, nothing left at OUT
            io::OpenedDataset opened = io::open_dataset(args->input, io_read_options(args->read));
            if (opened.meta.num_var_names_made_unique > 0)
                std::cerr << "fathom-cli: " << opened.meta.num_var_names_made_unique
                          << " duplicate gene names made unique (--keep-duplicate-names keeps them)\n";
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
