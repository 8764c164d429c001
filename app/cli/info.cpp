#include <cmath>
#include <iomanip>
#include <memory>
#include <sstream>
#include <iostream>
#include <unordered_set>

#include "app/cli/commands.hpp"
#include "app/cli/read_options.hpp"
#include "core/engine/matrix_content.hpp"
#include "core/engine/settings_schema.hpp"
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
// integer (raw counts) without holding more than one block. Stops at the first
// non-integer value unless `every_row` (--read-all: the whole matrix is read).
bool scan_integer_counts(io::RowSource& source, bool every_row) {
    const auto num_cells = source.shape().num_cells;
    constexpr std::int64_t block = 65536;
    bool integer = true;
    for (std::int64_t begin = 0; begin < num_cells && (integer || every_row); begin += block) {
        const auto shard = source.read_rows(begin, std::min(num_cells, begin + block));
        if (integer)
            for (float value : shard.values)
                if (value < 0.0f || value != std::floor(value)) {
                    integer = false;
                    break;
                }
    }
    return integer;
}

/// Names equal to an earlier one.
std::int64_t repeated_names(const std::vector<std::string>& names) {
    std::unordered_set<std::string> seen;
    std::int64_t repeated = 0;
    for (const auto& name : names) repeated += seen.insert(name).second ? 0 : 1;
    return repeated;
}

}  // namespace

void add_info_command(CLI::App& app, int& exit_code) {
    auto* command = app.add_subcommand("info", "Describe a dataset: format, shape, nnz, value type, annotations");
    auto path = std::make_shared<std::string>();
    auto args = std::make_shared<ReadArgs>();
    auto read_all = std::make_shared<bool>(false);
    command->add_option("FILE", *path, "h5ad, 10x HDF5, Matrix Market folder or .mtx file")->required();
    add_read_options(*command, *args);
    command->add_flag("--read-all", *read_all,
                      "read every row of the matrix too (the explorer checks a file this way, in a separate "
                      "process, before it opens it)");
    command->callback([&exit_code, path, args, read_all] {
        exit_code = guarded([&] {
            io::OpenedDataset opened = io::open_dataset(*path, io_read_options(*args));
            const Dataset& meta = opened.meta;
            bool integer = meta.integer_counts;
            if (!meta.integer_counts_known || *read_all) {
                const bool scanned = scan_integer_counts(*opened.source, *read_all);
                if (!meta.integer_counts_known) integer = scanned;
            }
            // What X holds, from the first cells (as the engine decides it at open).
            MatrixContentScan scan(meta.shape.num_genes);
            if (meta.shape.num_cells > 0) scan.add(opened.source->read_rows(0, std::min<std::int64_t>(meta.shape.num_cells, 2000)));
            const MatrixContentReport content = scan.report(integer);
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
                      << "values: " << matrix_content_name(content.content) << " (" << content.evidence
                      << "); recipe that fits: " << recipe_definition(suggested_recipe(content.content)).name << "\n"
                      << "memory (CSR shards): " << human_bytes(csr_bytes) << "\n";
            if (meta.num_var_names_made_unique > 0)
                std::cout << "var names: " << meta.num_var_names_made_unique
                          << " duplicate gene names made unique (--keep-duplicate-names keeps them)\n";
            else if (const auto repeated = repeated_names(meta.var.index()); repeated > 0)
                std::cout << "var names: " << repeated << " duplicate gene names kept as stored\n";
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
