#include <cmath>
#include <iomanip>
#include <memory>
#include <sstream>
#include <iostream>

#include "app/cli/commands.hpp"
#include "core/io/RowSource.hpp"

namespace fathom::cli {

namespace {

std::string human_bytes(double bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int unit = 0;
    while (bytes >= 1024.0 && unit < 4) {
        bytes /= 1024.0;
        ++unit;
    }
    std::ostringstream out;
    out << std::fixed << std::setprecision(unit == 0 ? 0 : 1) << bytes << " " << units[unit];
    return out.str();
}

void print_columns(const char* label, const Table& table) {
    std::cout << label << " (" << table.columns().size() << "):";
    if (table.columns().empty()) std::cout << " none";
    for (const auto& column : table.columns()) std::cout << " " << column.name << "[" << column.type_name() << "]";
    std::cout << "\n";
}

// Streams the matrix in blocks to decide whether every value is a non-negative
// integer (raw counts) without holding more than one block.
bool scan_integer_counts(io::RowSource& source) {
    const auto num_cells = source.shape().num_cells;
    constexpr std::int64_t block = 65536;
    for (std::int64_t begin = 0; begin < num_cells; begin += block) {
        const auto shard = source.read_rows(begin, std::min(num_cells, begin + block));
        for (float value : shard.values)
            if (value < 0.0f || value != std::floor(value)) return false;
    }
    return true;
}

}  // namespace

void add_info_command(CLI::App& app, int& exit_code) {
    auto* command = app.add_subcommand("info", "Describe a dataset: format, shape, nnz, value type, annotations");
    auto path = std::make_shared<std::string>();
    auto options = std::make_shared<io::ReadOptions>();
    command->add_option("FILE", *path, "h5ad, 10x HDF5, Matrix Market folder or .mtx file")->required();
    command->add_option("--matrix", options->matrix, "h5ad matrix: X, raw or layers/<name>")
        ->default_str(options->matrix);
    command->add_option("--genome", options->genome, "10x v2: genome group to read");
    command->add_option("--feature-type", options->feature_type, "10x: feature type to keep (\"\" = all)")
        ->default_str(options->feature_type);
    command->callback([&exit_code, path, options] {
        exit_code = guarded([&] {
            io::OpenedDataset opened = io::open_dataset(*path, *options);
            const Dataset& meta = opened.meta;
            const bool integer = meta.integer_counts_known ? meta.integer_counts : scan_integer_counts(*opened.source);
            const double density =
                meta.shape.num_cells && meta.shape.num_genes
                    ? static_cast<double>(meta.nnz) / (static_cast<double>(meta.shape.num_cells) * meta.shape.num_genes)
                    : 0.0;
            // In memory as CSR shards: 8 bytes per row offset, 4 + 4 per non-zero.
            const double csr_bytes = 8.0 * static_cast<double>(meta.shape.num_cells + 1) + 8.0 * static_cast<double>(meta.nnz);
            std::cout << "file: " << meta.path << "\n"
                      << "format: " << format_name(meta.format) << "\n"
                      << "matrix: " << meta.matrix_name << " (" << meta.matrix_layout << ", "
                      << value_type_name(meta.stored_type) << ")\n"
                      << "shape: " << meta.shape.num_cells << " cells x " << meta.shape.num_genes << " genes\n"
                      << "nnz: " << meta.nnz << " (density " << std::setprecision(4) << density * 100.0 << "%)\n"
                      << "values: " << (integer ? "integer counts" : "non-integer (normalised or scaled)") << "\n"
                      << "memory (CSR shards): " << human_bytes(csr_bytes) << "\n";
            print_columns("obs columns", meta.obs);
            print_columns("var columns", meta.var);
            std::cout << "obsm:";
            if (meta.obsm.empty()) std::cout << " none";
            for (const auto& [key, matrix] : meta.obsm) std::cout << " " << key << "(" << matrix.cols() << ")";
            std::cout << "\nvarm:";
            if (meta.varm.empty()) std::cout << " none";
            for (const auto& [key, matrix] : meta.varm) std::cout << " " << key << "(" << matrix.cols() << ")";
            std::cout << "\nuns keys:";
            if (meta.uns.children.empty()) std::cout << " none";
            for (const auto& [key, node] : meta.uns.children) std::cout << " " << key;
            std::cout << "\n";
            return static_cast<int>(Ok);
        });
    });
}

}  // namespace fathom::cli
