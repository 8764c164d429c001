#include "app/cli/export_csv.hpp"

#include <filesystem>
#include <fstream>
#include <functional>

#include "core/io/errors.hpp"

namespace fathom::cli {

namespace {

void write_atomically(const std::filesystem::path& path, const std::function<void(std::ostream&)>& body) {
    const auto temp = path.string() + ".tmp";
    {
        std::ofstream stream(temp);
        if (!stream) throw io::WriteError(path.string(), "cannot create file");
        stream.precision(7);
        body(stream);
        if (!stream) {
            std::filesystem::remove(temp);
            throw io::WriteError(path.string(), "write failed");
        }
    }
    std::filesystem::rename(temp, path);
}

}  // namespace

void export_csv(const AnalysisSnapshot& snapshot, const std::string& folder) {
    std::filesystem::create_directories(folder);
    const auto& barcodes = snapshot.obs->index();
    if (auto it = snapshot.obsm.find("X_umap"); it != snapshot.obsm.end()) {
        const auto& umap = *it->second;
        write_atomically(std::filesystem::path(folder) / "umap.csv", [&](std::ostream& out) {
            // Loupe's two columns, one more per extra dimension (n_components = 3).
            out << "Barcode";
            for (std::int64_t column = 0; column < umap.cols(); ++column) out << ",UMAP-" << column + 1;
            out << "\n";
            for (std::int64_t cell = 0; cell < umap.rows(); ++cell) {
                out << barcodes[static_cast<std::size_t>(cell)];
                for (std::int64_t column = 0; column < umap.cols(); ++column) out << "," << umap(cell, column);
                out << "\n";
            }
        });
    }
    if (const Column* leiden = snapshot.obs->find("leiden")) {
        const auto& categorical = std::get<CategoricalColumn>(leiden->data);
        write_atomically(std::filesystem::path(folder) / "leiden.csv", [&](std::ostream& out) {
            out << "Barcode,leiden\n";
            for (std::size_t cell = 0; cell < categorical.codes.size(); ++cell)
                out << barcodes[cell] << "," << categorical.categories[static_cast<std::size_t>(categorical.codes[cell])]
                    << "\n";
        });
    }
    if (!snapshot.markers.empty()) {
        write_atomically(std::filesystem::path(folder) / "markers.csv", [&](std::ostream& out) {
            out << "group,gene,score,logfc,pval,pval_adj,pct\n";
            for (const auto& group : snapshot.markers)
                for (std::size_t rank = 0; rank < group.genes.size(); ++rank)
                    out << group.group << "," << group.genes[rank] << "," << group.scores[rank] << ","
                        << group.logfoldchanges[rank] << "," << group.pvals[rank] << "," << group.pvals_adj[rank]
                        << "," << group.pct_group[rank] << "\n";
        });
    }
}

}  // namespace fathom::cli
