#include "app/cli/read_options.hpp"

#include <stdexcept>

namespace fathom::cli {

void add_read_options(CLI::App& command, ReadArgs& args) {
    command.add_option("--matrix", args.read.matrix, "h5ad matrix to analyse: X, raw (raw/X) or layers/<name>")
        ->default_str(args.read.matrix);
    command.add_option("--layer", args.layer, "h5ad: analyse layers/NAME instead of X (as --matrix layers/NAME)");
    command.add_option("--genome", args.read.genome,
                       "10x: genome to read (v2: its group; v3: the features of that genome)");
    command.add_option("--feature-types,--feature-type", args.read.feature_type,
                       "10x: feature type kept in the matrix, as scanpy's read_10x_h5 gex_only (\"\" = every feature)")
        ->default_str(args.read.feature_type);
    command.add_flag("--keep-duplicate-names", args.keep_duplicate_names,
                     "keep repeated gene names as stored (default: made unique as anndata's var_names_make_unique, "
                     "LTB and LTB-1, the gene ids staying in var gene_ids)");
}

DatasetReadOptions dataset_read_options(const ReadArgs& args) {
    DatasetReadOptions read = args.read;
    if (!args.layer.empty()) {
        const std::string layer = "layers/" + args.layer;
        if (read.matrix != "X" && read.matrix != layer)
            throw std::invalid_argument("--layer " + args.layer + " and --matrix " + read.matrix +
                                        " name two matrices: give one of them");
        read.matrix = layer;
    }
    read.make_var_names_unique = !args.keep_duplicate_names;
    return read;
}

io::ReadOptions io_read_options(const ReadArgs& args) {
    const DatasetReadOptions read = dataset_read_options(args);
    io::ReadOptions options;
    options.matrix = read.matrix;
    options.genome = read.genome;
    options.feature_type = read.feature_type;
    options.make_var_names_unique = read.make_var_names_unique;
    return options;
}

}  // namespace fathom::cli
