// Engine queries for marker-gene filters and gene-set scores. Like gene_values they run
// on the query queue and read the raw shards loaded at open() (never the pipeline's
// copies), fetching only the named genes' columns.
#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <variant>

#include "core/algo/gene_filter.hpp"
#include "core/algo/gene_set.hpp"
#include "core/data/GeneLookup.hpp"
#include "core/engine/Engine.hpp"
#include "core/engine/detail/EngineState.hpp"
#include "core/io/RowSource.hpp"

namespace fathom {

namespace {

/// The loaded data, or an error naming the query when none can be answered.
/// `needs_memory`: the query reads the shards themselves (not only gene columns, which
/// a streamed dataset gives too).
std::shared_ptr<const detail::LoadedData> queryable_data(const Engine::State& state, const std::string& what,
                                                         bool needs_memory) {
    auto data = state.loaded();
    if (!data) throw std::invalid_argument(what + ": no dataset is open");
    if (needs_memory && data->streamed)
        throw std::invalid_argument(what + ": needs the matrix in memory; this dataset is streamed from "
                                    "its file (raise EngineConfig::memory_budget_bytes)");
    return data;
}

std::shared_ptr<const AnalysisSnapshot> current_snapshot(const Engine::State& state) {
    std::lock_guard lock(state.mutex);
    return state.snapshot;
}

/// Raw row of every analysed cell (obs order): the snapshot's `cells`, or every row.
std::vector<std::int64_t> analysed_rows(const AnalysisSnapshot* snapshot, std::int64_t num_raw_cells) {
    if (snapshot && !snapshot->cells.empty()) return snapshot->cells;
    std::vector<std::int64_t> rows(static_cast<std::size_t>(num_raw_cells));
    for (std::int64_t row = 0; row < num_raw_cells; ++row) rows[static_cast<std::size_t>(row)] = row;
    return rows;
}

}  // namespace

namespace detail {

const Table& layer_var(const LoadedData& data, ValueLayer layer, const std::string& what) {
    if (layer != ValueLayer::Raw) return data.meta.var;
    if (!data.raw_matrix)
        throw std::invalid_argument(what + ": the dataset has no raw matrix (raw/X); choose X or log-normalised counts");
    return data.raw_matrix->var;
}

std::vector<GeneColumnCache::Column> cached_gene_columns(const LoadedData& data, const EngineConfig& config,
                                                         std::span<const std::int32_t> genes, ValueLayer layer,
                                                         JobContext& ctx) {
    std::vector<GeneColumnCache::Column> columns(genes.size());
    std::vector<std::int32_t> missing;
    for (std::size_t index = 0; index < genes.size(); ++index) {
        columns[index] = data.gene_columns.find(genes[index], layer);
        if (!columns[index] && std::find(missing.begin(), missing.end(), genes[index]) == missing.end())
            missing.push_back(genes[index]);
    }
    if (missing.empty()) return columns;
    GeneFilterOptions options;
    options.layer = layer == ValueLayer::Counts ? FilterLayer::Counts : FilterLayer::LogNorm;
    std::vector<std::vector<float>> fetched;
    if (layer == ValueLayer::Raw) {
        // raw/X as stored, streamed from the file (its own genes; never normalised again).
        if (!data.raw_matrix) throw std::invalid_argument("raw/X: the dataset has no raw matrix");
        io::ReadOptions read = read_options(config.read);
        read.matrix = "raw";
        read.read_annotations = false;
        io::OpenedDataset reopened = io::open_dataset(data.meta.path, read);
        fetched = stream_gene_columns(*reopened.source, data.raw_matrix->row_offsets, missing, config.stream_block_nnz, ctx);
    } else if (data.streamed) {
        // Out-of-core: one pass over the rows for every missing gene, then LogNorm with
        // the cell totals of the streamed QC (the in-memory path's formula).
        const std::unique_ptr<io::RowSource> source = matrix_rows(data);  // the packed rows when held
        fetched = stream_gene_columns(*source, data.row_offsets, missing, config.stream_block_nnz, ctx,
                                      &data.stream_layout);
        if (options.layer == FilterLayer::LogNorm)
            for (auto& column : fetched) lognorm_in_place(column, data.qc().total_counts, options.target_sum);
    } else {
        std::lock_guard lock(data.raw_mutex);
        fetched = filter_gene_values(data.raw, missing, data.qc().total_counts, options, ctx);
    }
    for (std::size_t index = 0; index < missing.size(); ++index) {
        auto column = std::make_shared<const std::vector<float>>(std::move(fetched[index]));
        data.gene_columns.insert(missing[index], layer, column);
        for (std::size_t slot = 0; slot < genes.size(); ++slot)
            if (genes[slot] == missing[index]) columns[slot] = column;
    }
    return columns;
}

}  // namespace detail

Pending<CellMask> Engine::evaluate_filter(std::string expression, ValueLayer layer, std::string group_by) {
    auto state = m_state;
    auto slot = std::make_shared<ResultSlot<CellMask>>();
    JobHandle handle = state->query.submit("filter", [state, slot, expression, layer, group_by](JobContext& ctx) {
        state->begin_step(ctx, "filter");
        const auto data = queryable_data(*state, "filter '" + expression + "'", false);
        const FilterExpression parsed = parse_filter(expression);
        const std::vector<std::int32_t> genes =
            resolve_filter_genes(parsed, GeneLookup(detail::layer_var(*data, layer, "filter '" + expression + "'")));

        // Cached after the first read: a threshold change costs one pass over memory.
        const auto cached = detail::cached_gene_columns(*data, state->config, genes, layer, ctx);
        std::vector<std::span<const float>> columns(cached.size());
        std::transform(cached.begin(), cached.end(), columns.begin(),
                       [](const detail::GeneColumnCache::Column& column) { return std::span<const float>(*column); });
        ctx.checkpoint();
        GeneFilterResult raw = fathom::evaluate_filter(parsed, std::span<const std::span<const float>>(columns));

        // From raw rows to the analysed cells, in obs order.
        const auto snapshot = current_snapshot(*state);
        auto result = std::make_shared<CellMask>();
        result->expression = expression;
        if (snapshot && !snapshot->cells.empty()) {
            const auto& rows = snapshot->cells;
            result->mask.resize(rows.size());
            for (std::size_t cell = 0; cell < rows.size(); ++cell) {
                result->mask[cell] = raw.mask[static_cast<std::size_t>(rows[cell])];
                result->num_matching += result->mask[cell];
            }
        } else {
            result->mask = std::move(raw.mask);
            result->num_matching = raw.num_matching;
        }
        const std::size_t num_cells = result->mask.size();
        if (snapshot && snapshot->obs && snapshot->obs->num_rows() == static_cast<std::int64_t>(num_cells)) {
            const auto categorical_column = [&](const std::string& name) -> const Column* {
                const Column* column = name.empty() ? nullptr : snapshot->obs->find(name);
                if (column && (std::holds_alternative<CategoricalColumn>(column->data) ||
                               std::holds_alternative<BoolColumn>(column->data)))
                    return column;
                return nullptr;
            };
            const Column* groups = categorical_column(group_by);
            if (!groups) groups = categorical_column("leiden");
            if (groups) {
                result->group_by = groups->name;
                if (const auto* clusters = std::get_if<CategoricalColumn>(&groups->data)) {
                    std::vector<std::int64_t> counts(clusters->categories.size(), 0);
                    for (std::size_t cell = 0; cell < num_cells; ++cell) {
                        const std::int32_t code = clusters->codes[cell];
                        if (result->mask[cell] && code >= 0 && static_cast<std::size_t>(code) < counts.size())
                            ++counts[static_cast<std::size_t>(code)];
                    }
                    for (std::size_t category = 0; category < counts.size(); ++category)
                        result->by_cluster.emplace_back(clusters->categories[category], counts[category]);
                } else if (const auto* flags = std::get_if<BoolColumn>(&groups->data)) {
                    std::int64_t counts[2] = {0, 0};
                    for (std::size_t cell = 0; cell < num_cells; ++cell) {
                        const bool missing = !flags->missing.empty() && flags->missing[cell];
                        if (result->mask[cell] && !missing) ++counts[flags->values[cell] ? 1 : 0];
                    }
                    result->by_cluster = {{"False", counts[0]}, {"True", counts[1]}};
                }
            }
        }
        slot->set(std::move(result));
    });
    return Pending<CellMask>(std::move(handle), std::move(slot));
}

Pending<GeneValues> Engine::gene_set_score(std::vector<std::string> genes, bool subtract_control, ValueLayer layer) {
    auto state = m_state;
    auto slot = std::make_shared<ResultSlot<GeneValues>>();
    JobHandle handle = state->query.submit("gene set", [state, slot, genes, subtract_control, layer](JobContext& ctx) {
        state->begin_step(ctx, "gene set");
        const bool lognorm = layer == ValueLayer::LogNorm;
        if (subtract_control && !lognorm)
            throw std::invalid_argument(std::string("gene set score: score_genes bins the control genes by their "
                                                    "log-normalised means; it is not computed on ") +
                                        value_layer_label(layer) + " (choose log-normalised counts, or the plain mean)");
        const auto data = queryable_data(*state, "gene set score", lognorm);
        if (genes.empty()) throw std::invalid_argument("gene set score: the gene set is empty");
        const GeneLookup lookup(detail::layer_var(*data, layer, "gene set score"));
        std::vector<std::int32_t> indices;
        std::vector<std::string> missing;
        for (const auto& gene : genes) {
            const GeneResolution resolution = lookup.resolve(gene);
            if (resolution.ambiguous()) throw std::invalid_argument("gene set score: " + lookup.problem(gene));
            if (resolution.found())
                indices.push_back(resolution.column);
            else
                missing.push_back(gene);
        }
        const auto list = [](const std::vector<std::string>& names) {
            std::string text;
            for (std::size_t index = 0; index < names.size() && index < 10; ++index) text += (index ? ", " : "") + names[index];
            if (names.size() > 10) text += ", ... (" + std::to_string(names.size()) + " in all)";
            return text;
        };
        if (indices.empty())
            throw std::invalid_argument("gene set score: none of the " + std::to_string(genes.size()) +
                                        " genes is in var names or var['gene_ids']: " + list(missing));

        GeneSetScoreResult score;
        if (lognorm) {
            std::lock_guard lock(data->raw_mutex);
            GeneSetScoreOptions options;
            options.subtract_control = subtract_control;
            score = score_gene_set(data->raw, indices, data->qc().total_counts, options, ctx);
        } else {
            // The plain mean of the layer's values as stored (repeats scored once, as above).
            for (const std::int32_t gene : indices)
                if (std::find(score.genes.begin(), score.genes.end(), gene) == score.genes.end()) score.genes.push_back(gene);
            const auto columns = detail::cached_gene_columns(*data, state->config, score.genes, layer, ctx);
            const std::size_t num_rows = columns.empty() ? 0 : columns.front()->size();
            score.scores.assign(num_rows, 0.0);
            for (const auto& column : columns)
                for (std::size_t row = 0; row < num_rows; ++row) score.scores[row] += (*column)[row];
            for (double& value : score.scores) value /= static_cast<double>(score.genes.size());
        }
        const auto snapshot = current_snapshot(*state);
        const auto rows = analysed_rows(snapshot.get(), data->raw.num_cells());
        auto result = std::make_shared<GeneValues>();
        result->gene = (subtract_control ? "score of " : "mean of ") + std::to_string(score.genes.size()) + (score.genes.size() == 1 ? " gene" : " genes");
        if (!missing.empty()) result->gene += " (" + std::to_string(missing.size()) + " not found: " + list(missing) + ")";
        result->gene_index = -1;
        result->layer = layer;
        result->values.resize(rows.size());
        for (std::size_t cell = 0; cell < rows.size(); ++cell)
            result->values[cell] = static_cast<float>(score.scores[static_cast<std::size_t>(rows[cell])]);
        detail::set_value_range(*result);
        slot->set(std::move(result));
    });
    return Pending<GeneValues>(std::move(handle), std::move(slot));
}

}  // namespace fathom
