#include "core/engine/csv_export.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "core/engine/detail/EngineState.hpp"
#include "core/io/csv_writer.hpp"
#include "core/io/errors.hpp"

namespace fathom {

namespace {

/// Loupe's axis name of an obsm key: X_umap -> UMAP, X_tsne -> TSNE, X_pca -> PCA.
std::string axis_name(const std::string& key) {
    std::string axis = key.rfind("X_", 0) == 0 ? key.substr(2) : key;
    std::transform(axis.begin(), axis.end(), axis.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    return axis;
}

/// A file name for a key: characters outside [A-Za-z0-9._-] become '_'.
std::string file_stem(const std::string& key) {
    std::string stem = key;
    for (char& c : stem)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
    return stem.empty() ? std::string("_") : stem;
}

}  // namespace

std::vector<std::string> export_csv(const AnalysisSnapshot& snapshot, const std::string& folder,
                                    const CsvExportOptions& options) {
    if (!snapshot.obs) throw std::invalid_argument("CSV export: no dataset is open");
    const auto& barcodes = snapshot.obs->index();
    const auto path_of = [&](const std::string& key) { return (std::filesystem::path(folder) / (file_stem(key) + ".csv")).string(); };

    // Check every requested category before writing anything.
    std::vector<std::pair<std::string, const CategoricalColumn*>> categories;
    if (!options.categories) {
        for (const auto& column : snapshot.obs->columns())
            if (const auto* categorical = std::get_if<CategoricalColumn>(&column.data))
                categories.emplace_back(column.name, categorical);
    } else {
        for (const auto& key : *options.categories) {
            const Column* column = snapshot.obs->find(key);
            if (!column) throw std::invalid_argument("CSV export: no obs column '" + key + "'");
            const auto* categorical = std::get_if<CategoricalColumn>(&column->data);
            if (!categorical)
                throw std::invalid_argument("CSV export: obs column '" + key + "' is " + column->type_name() +
                                            ", not categorical");
            categories.emplace_back(key, categorical);
        }
    }

    std::error_code error;
    std::filesystem::create_directories(folder, error);
    if (error) throw io::WriteError(folder, "cannot create the folder: " + error.message());
    std::vector<std::string> written;
    for (const auto& key : options.projections) {
        const auto it = snapshot.obsm.find(key);
        if (it == snapshot.obsm.end() || !it->second || it->second->cols() < 2) continue;
        const std::string axis = axis_name(key);
        std::string stem = axis;
        std::transform(stem.begin(), stem.end(), stem.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        written.push_back(path_of(stem));
        // UMAP keeps every dimension (n_components = 3 gives UMAP-3); PCA only its first two.
        io::write_projection_csv(written.back(), barcodes, *it->second, axis, key == "X_umap" ? it->second->cols() : 2);
    }
    for (const auto& [key, column] : categories) {
        written.push_back(path_of(key));
        io::write_category_csv(written.back(), barcodes, key, *column);
    }
    if (options.markers && !snapshot.markers.empty()) {
        // One row per (group, rank): the flattened rank_genes_groups table.
        struct Row {
            const MarkerGroup* group;
            std::size_t rank;
        };
        std::vector<Row> rows;
        for (const auto& group : snapshot.markers)
            for (std::size_t rank = 0; rank < group.genes.size(); ++rank) rows.push_back({&group, rank});
        written.push_back(path_of("markers"));
        io::write_csv(written.back(), {"group", "gene", "score", "logfc", "pval", "pval_adj", "pct"},
                      static_cast<std::int64_t>(rows.size()), [&](std::int64_t index, std::vector<std::string>& fields) {
                          const Row& row = rows[static_cast<std::size_t>(index)];
                          const MarkerGroup& group = *row.group;
                          const auto value = [&](const std::vector<double>& values) {
                              return row.rank < values.size() ? io::csv_number(values[row.rank]) : std::string("nan");
                          };
                          fields.push_back(group.group);
                          fields.push_back(group.genes[row.rank]);
                          fields.push_back(value(group.scores));
                          fields.push_back(value(group.logfoldchanges));
                          fields.push_back(value(group.pvals));
                          fields.push_back(value(group.pvals_adj));
                          fields.push_back(value(group.pct_group));
                      });
    }
    return written;
}

JobHandle Engine::export_csv(std::string folder, const CsvExportOptions& options) {
    auto state = m_state;
    return state->compute.submit("export", [state, folder, options](JobContext& ctx) {
        state->begin_step(ctx, "export");
        const auto snapshot = [&] {
            std::lock_guard lock(state->mutex);
            return state->snapshot;
        }();
        fathom::export_csv(*snapshot, folder, options);
        ctx.report(1.0);
    });
}

}  // namespace fathom
