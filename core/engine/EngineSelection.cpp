// Engine requests behind the explorer's selections: user annotation columns (a selection
// saved as a categorical obs column, renamed or merged categories), marker genes of a cell
// mask against the rest or a reference mask, and the barcode / marker-table exports.
#include <algorithm>
#include <cctype>
#include <functional>
#include <ostream>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>

#include "core/algo/markers.hpp"
#include "core/algo/normalize.hpp"
#include "core/engine/detail/DevicePlacement.hpp"
#include "core/io/RowSource.hpp"
#include "core/engine/Engine.hpp"
#include "core/engine/detail/EngineState.hpp"
#include "core/engine/palette.hpp"
#include "core/io/csv_writer.hpp"
#include "core/types/atomic_file.hpp"

namespace fathom {

namespace detail {

void apply_annotations(AnalysisSnapshot& snapshot, const std::shared_ptr<const Table>& base_obs,
                       const std::map<std::string, std::vector<std::string>>& base_colors,
                       const std::map<std::string, UserAnnotation>& annotations) {
    snapshot.user_annotations.clear();
    if (!base_obs) return;
    snapshot.obs = base_obs;
    snapshot.colors = base_colors;
    if (annotations.empty()) return;
    auto obs = std::make_shared<Table>(*base_obs);
    for (const auto& [name, annotation] : annotations) {
        CategoricalColumn column;
        column.categories = annotation.categories;
        column.codes.reserve(snapshot.cells.size());
        for (const std::int64_t row : snapshot.cells)
            column.codes.push_back(row >= 0 && static_cast<std::size_t>(row) < annotation.raw_codes.size()
                                       ? annotation.raw_codes[static_cast<std::size_t>(row)]
                                       : -1);
        obs->set(name, std::move(column));
        snapshot.colors[name] = annotation.colors;
        snapshot.user_annotations.push_back(name);
    }
    snapshot.obs = std::move(obs);
}

}  // namespace detail

namespace {

std::shared_ptr<const AnalysisSnapshot> current_snapshot(const Engine::State& state) {
    std::lock_guard lock(state.mutex);
    return state.snapshot;
}

/// Republishes the current snapshot with the annotations as they are now. Caller holds
/// state.mutex.
void republish_locked(Engine::State& state) {
    auto next = std::make_shared<AnalysisSnapshot>(*state.snapshot);
    detail::apply_annotations(*next, state.base_obs, state.base_colors, state.annotations);
    next->version = state.next_version++;
    state.snapshot = std::move(next);
}

bool is_hex_color(const std::string& color) {
    if (color.size() != 7 || color[0] != '#') return false;
    for (std::size_t index = 1; index < 7; ++index)
        if (!std::isxdigit(static_cast<unsigned char>(color[index]))) return false;
    return true;
}

/// Checks the annotation against the number of raw cells; throws naming the column.
void validate_annotation(const ObsAnnotation& annotation, std::int64_t num_raw_cells) {
    const std::string what = "obs annotation '" + annotation.name + "': ";
    if (annotation.name.empty()) throw std::invalid_argument("obs annotation: the column name is empty");
    if (annotation.categories.empty()) throw std::invalid_argument(what + "has no categories");
    std::set<std::string> seen;
    for (const auto& category : annotation.categories) {
        if (category.empty()) throw std::invalid_argument(what + "a category name is empty");
        if (!seen.insert(category).second) throw std::invalid_argument(what + "category '" + category + "' appears twice");
    }
    if (!annotation.colors.empty() && annotation.colors.size() != annotation.categories.size())
        throw std::invalid_argument(what + std::to_string(annotation.colors.size()) + " colours for " +
                                    std::to_string(annotation.categories.size()) + " categories");
    for (const auto& color : annotation.colors)
        if (!is_hex_color(color)) throw std::invalid_argument(what + "colour '" + color + "' is not #rrggbb");
    const auto num_categories = static_cast<std::int32_t>(annotation.categories.size());
    for (const std::int32_t code : annotation.codes)
        if (code < -1 || code >= num_categories)
            throw std::invalid_argument(what + "code " + std::to_string(code) + " is outside [-1, " +
                                        std::to_string(num_categories) + ")");
    for (const std::int64_t row : annotation.cells)
        if (row < 0 || row >= num_raw_cells)
            throw std::invalid_argument(what + "cell row " + std::to_string(row) + " is outside the dataset's " +
                                        std::to_string(num_raw_cells) + " cells");
}

}  // namespace

JobHandle Engine::set_obs_annotation(ObsAnnotation annotation) {
    auto state = m_state;
    return state->query.submit("annotate", [state, annotation = std::move(annotation)](JobContext& ctx) {
        state->begin_step(ctx, "annotate");
        const auto data = state->loaded();
        if (!data) throw std::invalid_argument("obs annotation '" + annotation.name + "': no dataset is open");
        const std::int64_t num_raw_cells = data->meta.shape.num_cells;
        validate_annotation(annotation, num_raw_cells);
        detail::UserAnnotation stored;
        stored.categories = annotation.categories;
        stored.colors = annotation.colors.empty() ? default_category_colors(annotation.categories.size()) : annotation.colors;
        stored.raw_codes.assign(static_cast<std::size_t>(num_raw_cells), -1);
        std::lock_guard lock(state->mutex);
        const std::vector<std::int64_t>& rows = annotation.cells.empty() ? state->snapshot->cells : annotation.cells;
        if (annotation.codes.size() != rows.size())
            throw std::invalid_argument("obs annotation '" + annotation.name + "': " + std::to_string(annotation.codes.size()) +
                                        " codes for " + std::to_string(rows.size()) + " cells");
        for (std::size_t cell = 0; cell < rows.size(); ++cell)
            stored.raw_codes[static_cast<std::size_t>(rows[cell])] = annotation.codes[cell];
        state->annotations[annotation.name] = std::move(stored);
        republish_locked(*state);
    });
}

JobHandle Engine::remove_obs_annotation(std::string name) {
    auto state = m_state;
    return state->query.submit("annotate", [state, name](JobContext& ctx) {
        state->begin_step(ctx, "annotate");
        std::lock_guard lock(state->mutex);
        if (state->annotations.erase(name) == 0)
            throw std::invalid_argument("obs column '" + name + "' is not a user annotation");
        republish_locked(*state);
    });
}

namespace {

/// The values markers test (detail::MarkerValues), made at the first request and kept
/// with the dataset. Runs on the compute queue.
std::shared_ptr<const detail::MarkerValues> marker_values(const Engine::State& state, const detail::LoadedData& data,
                                                          JobContext& ctx) {
    std::lock_guard lock(data.marker_mutex);
    if (data.marker_values) return data.marker_values;
    if (data.streamed)
        throw std::invalid_argument("markers: need the matrix in memory; this dataset is streamed from its file "
                                    "(raise EngineConfig::memory_budget_bytes)");
    auto out = std::make_shared<detail::MarkerValues>();
    const bool ranks = state.config.comm && state.config.comm->size() > 1;
    if (data.raw_matrix && !ranks) {
        // raw/X as stored (Scanpy's use_raw), read once from the file onto CPU shards.
        out->layer = ValueLayer::Raw;
        io::ReadOptions read = detail::read_options(state.config.read);
        read.matrix = "raw";
        read.read_annotations = false;
        io::OpenedDataset opened = io::open_dataset(data.meta.path, read);
        std::string note;
        const int shards = std::max(1, data.raw.num_local_shards());
        out->values = detail::load_shards(*opened.source, data.raw_matrix->row_offsets,
                                          DeviceSpec::parse("cpu:" + std::to_string(shards)), nullptr, ctx, note);
        out->gene_names = data.raw_matrix->var.index();
    } else {
        {
            std::lock_guard raw_lock(data.raw_mutex);
            out->values = data.raw.clone();
        }
        out->gene_names = data.meta.var.index();
        out->layer = data.integer_counts ? ValueLayer::LogNorm : ValueLayer::Counts;
        if (data.integer_counts) {
            // ln(1 + x * 1e4 / cell total): the LogNorm layer of gene values and filters.
            NormalizeTotalOptions normalize;
            normalize.target_sum = 1e4;
            normalize_total(out->values, normalize, ctx);
            log1p(out->values, ctx);
        }
    }
    data.marker_values = out;
    return out;
}

/// Analysed cells (obs order) -> raw rows: the snapshot's cells, or every row.
std::vector<std::int64_t> analysed_cells(const AnalysisSnapshot* snapshot, std::int64_t num_raw_cells) {
    if (snapshot && !snapshot->cells.empty()) return snapshot->cells;
    std::vector<std::int64_t> rows(static_cast<std::size_t>(num_raw_cells));
    for (std::int64_t row = 0; row < num_raw_cells; ++row) rows[static_cast<std::size_t>(row)] = row;
    return rows;
}

MarkerGroup marker_table(const GroupMarkers& group, const std::vector<std::string>& gene_names) {
    MarkerGroup out;
    out.group = group.name;
    for (const auto& gene : group.genes) {
        out.genes.push_back(gene_names[static_cast<std::size_t>(gene.gene)]);
        out.scores.push_back(gene.score);
        out.logfoldchanges.push_back(gene.logfoldchange);
        out.pvals.push_back(gene.pval);
        out.pvals_adj.push_back(gene.pval_adj);
        out.pct_group.push_back(gene.pct_group);
        out.pct_rest.push_back(gene.pct_rest);
    }
    return out;
}

}  // namespace

ValueLayer markers_layer(const DatasetSummary& dataset) noexcept {
    if (dataset.has_raw) return ValueLayer::Raw;
    return dataset.integer_counts ? ValueLayer::LogNorm : ValueLayer::Counts;
}

Pending<MaskMarkers> Engine::mask_markers(std::vector<std::uint8_t> group, std::vector<std::uint8_t> reference,
                                         MaskMarkersOptions options) {
    if (options.num_genes < 0) throw std::invalid_argument("MaskMarkersOptions::num_genes must be >= 0");
    auto state = m_state;
    auto slot = std::make_shared<ResultSlot<MaskMarkers>>();
    JobHandle handle = state->compute.submit("markers", [state, slot, group = std::move(group),
                                                         reference = std::move(reference), options](JobContext& ctx) {
        state->begin_step(ctx, "markers");
        const auto data = state->loaded();
        if (!data) throw std::invalid_argument("markers: no dataset is open");
        const auto snapshot = current_snapshot(*state);
        const std::vector<std::int64_t> cells = analysed_cells(snapshot.get(), data->meta.shape.num_cells);
        const std::size_t num_cells = cells.size();
        if (group.size() != num_cells)
            throw std::invalid_argument("markers: the selection has " + std::to_string(group.size()) +
                                        " flags for the analysis's " + std::to_string(num_cells) + " cells");
        if (!reference.empty() && reference.size() != num_cells)
            throw std::invalid_argument("markers: the reference has " + std::to_string(reference.size()) +
                                        " flags for the analysis's " + std::to_string(num_cells) + " cells");
        // Labels per raw row; rows outside the analysis (and outside both sides) are -1.
        std::vector<std::int32_t> labels(static_cast<std::size_t>(data->meta.shape.num_cells), -1);
        std::int64_t in_group = 0, in_reference = 0, overlap = 0;
        for (std::size_t cell = 0; cell < num_cells; ++cell) {
            const bool grouped = group[cell] != 0;
            const bool referenced = reference.empty() ? !grouped : reference[cell] != 0;
            overlap += grouped && referenced;
            auto& label = labels[static_cast<std::size_t>(cells[cell])];
            if (grouped) {
                label = 0;
                ++in_group;
            } else if (referenced) {
                label = 1;
                ++in_reference;
            }
        }
        if (overlap > 0)
            throw std::invalid_argument("markers: " + std::to_string(overlap) +
                                        " cells are both in the selection and in the reference");
        const std::string reference_name = reference.empty() ? "rest" : "reference";
        if (in_group < 2)
            throw std::invalid_argument("markers: the selection has " + std::to_string(in_group) +
                                        " cells; at least 2 are needed");
        if (in_reference < 2)
            throw std::invalid_argument("markers: the " + reference_name + " has " + std::to_string(in_reference) +
                                        " cells; at least 2 are needed");
        RankGenesGroupsOptions rank_options;
        rank_options.method = options.method;
        rank_options.num_genes = options.num_genes;
        validate(rank_options);
        const auto values = marker_values(*state, *data, ctx);
        const std::vector<std::string> names = {"selection", reference_name};
        const RankGenesGroupsResult result = rank_genes_groups(values->values, labels, names, rank_options, ctx);
        auto out = std::make_shared<MaskMarkers>();
        out->markers = marker_table(result.groups.front(), values->gene_names);
        out->reference = reference_name;
        out->method = options.method;
        out->layer = values->layer;
        out->num_group_cells = in_group;
        out->num_reference_cells = in_reference;
        slot->set(std::move(out));
    });
    return Pending<MaskMarkers>(std::move(handle), std::move(slot));
}

Pending<ObsMarkers> Engine::obs_markers(std::string column, MaskMarkersOptions options) {
    if (options.num_genes < 0) throw std::invalid_argument("MaskMarkersOptions::num_genes must be >= 0");
    auto state = m_state;
    auto slot = std::make_shared<ResultSlot<ObsMarkers>>();
    JobHandle handle = state->compute.submit("markers", [state, slot, column, options](JobContext& ctx) {
        state->begin_step(ctx, "markers");
        const auto data = state->loaded();
        const auto snapshot = current_snapshot(*state);
        if (!data || !snapshot || !snapshot->obs) throw std::invalid_argument("markers: no dataset is open");
        const Column* found = snapshot->obs->find(column);
        if (!found) throw std::invalid_argument("markers: no obs column '" + column + "'");
        std::vector<std::string> categories;
        std::vector<std::int32_t> codes;
        if (const auto* categorical = std::get_if<CategoricalColumn>(&found->data)) {
            categories = categorical->categories;
            codes = categorical->codes;
        } else if (const auto* flags = std::get_if<BoolColumn>(&found->data)) {
            categories = {"False", "True"};
            for (std::size_t row = 0; row < flags->values.size(); ++row)
                codes.push_back(!flags->missing.empty() && flags->missing[row] ? -1 : flags->values[row] ? 1 : 0);
        } else {
            throw std::invalid_argument("markers: obs column '" + column + "' is " + found->type_name() +
                                        "; markers compare the groups of a categorical or bool column");
        }
        const std::vector<std::int64_t> cells = analysed_cells(snapshot.get(), data->meta.shape.num_cells);
        if (codes.size() != cells.size())
            throw std::invalid_argument("markers: obs column '" + column + "' has " + std::to_string(codes.size()) +
                                        " rows for " + std::to_string(cells.size()) + " cells");
        std::vector<std::int64_t> sizes(categories.size(), 0);
        for (const std::int32_t code : codes)
            if (code >= 0 && static_cast<std::size_t>(code) < categories.size()) ++sizes[static_cast<std::size_t>(code)];
        // Categories with fewer than 2 cells are left out of every group and rest.
        auto out = std::make_shared<ObsMarkers>();
        std::vector<std::int32_t> tested_code(categories.size(), -1);
        std::vector<std::string> names;
        for (std::size_t category = 0; category < categories.size(); ++category) {
            if (sizes[category] < 2) {
                out->skipped.push_back(categories[category]);
                continue;
            }
            tested_code[category] = static_cast<std::int32_t>(names.size());
            names.push_back(categories[category]);
        }
        if (names.size() < 2)
            throw std::invalid_argument("markers: obs column '" + column + "' has " + std::to_string(names.size()) +
                                        " categories with 2 cells or more; at least 2 are needed");
        std::vector<std::int32_t> labels(static_cast<std::size_t>(data->meta.shape.num_cells), -1);
        for (std::size_t cell = 0; cell < cells.size(); ++cell) {
            const std::int32_t code = codes[cell];
            if (code >= 0 && static_cast<std::size_t>(code) < categories.size())
                labels[static_cast<std::size_t>(cells[cell])] = tested_code[static_cast<std::size_t>(code)];
        }
        RankGenesGroupsOptions rank_options;
        rank_options.method = options.method;
        rank_options.num_genes = options.num_genes;
        validate(rank_options);
        const auto values = marker_values(*state, *data, ctx);
        const RankGenesGroupsResult result = rank_genes_groups(values->values, labels, names, rank_options, ctx);
        out->groupby = column;
        for (const auto& group : result.groups) out->groups.push_back(marker_table(group, values->gene_names));
        out->method = options.method;
        out->layer = values->layer;
        slot->set(std::move(out));
    });
    return Pending<ObsMarkers>(std::move(handle), std::move(slot));
}

JobHandle Engine::export_barcodes(std::string path, std::vector<std::uint8_t> mask) {
    auto state = m_state;
    return state->query.submit("export barcodes", [state, path, mask = std::move(mask)](JobContext& ctx) {
        state->begin_step(ctx, "export barcodes");
        const auto snapshot = current_snapshot(*state);
        if (!snapshot->obs) throw std::invalid_argument("export barcodes: no dataset is open");
        const auto& barcodes = snapshot->obs->index();
        if (mask.size() != barcodes.size())
            throw std::invalid_argument("export barcodes: " + std::to_string(mask.size()) + " flags for " +
                                        std::to_string(barcodes.size()) + " cells");
        // Over several ranks every rank holds the mask; rank 0 writes it.
        if (state->config.comm && state->config.comm->rank() != 0) return;
        write_file_atomically(path, [&](std::ostream& out) {
            for (std::size_t cell = 0; cell < barcodes.size(); ++cell) {
                if (cell % 65536 == 0) ctx.checkpoint();
                if (mask[cell]) out << barcodes[cell] << '\n';
            }
        });
        ctx.report(1.0);
    });
}

JobHandle Engine::export_markers_csv(std::string path, MarkerGroup markers) {
    auto state = m_state;
    return state->query.submit("export markers", [state, path, markers = std::move(markers)](JobContext& ctx) {
        state->begin_step(ctx, "export markers");
        const std::size_t rows = markers.genes.size();
        for (const auto* column : {&markers.scores, &markers.logfoldchanges, &markers.pvals, &markers.pvals_adj,
                                   &markers.pct_group, &markers.pct_rest})
            if (column->size() != rows)
                throw std::invalid_argument("export markers: the table of group '" + markers.group +
                                            "' has columns of different lengths");
        io::write_csv(path, {"gene", "score", "logfc", "pval", "pval_adj", "pct_in", "pct_out"},
                      static_cast<std::int64_t>(rows), [&](std::int64_t row, std::vector<std::string>& fields) {
                          const auto at = static_cast<std::size_t>(row);
                          fields = {markers.genes[at],
                                    io::csv_number(markers.scores[at]),
                                    io::csv_number(markers.logfoldchanges[at]),
                                    io::csv_number(markers.pvals[at]),
                                    io::csv_number(markers.pvals_adj[at]),
                                    io::csv_number(markers.pct_group[at]),
                                    io::csv_number(markers.pct_rest[at])};
                      });
        ctx.report(1.0);
    });
}

}  // namespace fathom
