#include "core/engine/Engine.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <unistd.h>
#include <unordered_map>

#include "core/data/GeneLookup.hpp"
#include "core/engine/detail/DevicePlacement.hpp"
#include "core/engine/detail/EngineState.hpp"
#include "core/engine/detail/SelectedRowsSource.hpp"
#include "core/io/RowSource.hpp"
#include "core/io/h5ad_writer.hpp"

namespace fathom {

namespace {

bool all_integer(const ShardSet& shards, JobContext& ctx) {
    bool counts = true;
    for (int index = shards.first_local_shard(); counts && index < shards.first_local_shard() + shards.num_local_shards();
         ++index)
        counts = shards.shard(index).values_are_counts(ctx);
    if (!shards.comm()) return counts;
    // Every rank's answer, combined in rank order.
    ByteWriter out;
    out.put(counts);
    for (const Bytes& answer : shards.comm()->all_gather(out.bytes())) counts = counts && ByteReader(answer).get<bool>();
    return counts;
}

}  // namespace

Engine::Engine(EngineConfig config) : m_state(std::make_shared<State>()) {
    DeviceSpec::parse(config.devices);  // validate early: throws naming --devices
    m_state->config = std::move(config);
}

Engine::~Engine() {
    // Cancel and join both workers while this object still holds the state: a job that
    // captured it must not drop the last reference on its own worker thread.
    m_state->query.stop();
    m_state->compute.stop();
}

JobHandle Engine::open(std::string path) {
    auto state = m_state;
    return state->compute.submit("open", [state, path](JobContext& ctx) {
        state->begin_step(ctx, "read");
        const DeviceSpec devices = DeviceSpec::parse(state->config.devices);
        io::OpenedDataset opened = io::open_dataset(path, detail::read_options(state->config.read));
        auto data = std::make_shared<detail::LoadedData>();
        std::uint64_t clock = state->cache.clock;  // versions keep increasing across datasets
        data->devices = devices;
        std::vector<std::int64_t> offsets = opened.source->row_offsets();
        const std::int64_t csr_bytes = 8 * (opened.meta.shape.num_cells + 1) + 8 * opened.meta.nnz;
        std::int64_t budget = state->config.memory_budget_bytes;
        if (budget == 0) budget = static_cast<std::int64_t>(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGE_SIZE) / 2;
        // Several ranks: each loads its own rows (streaming them is not supported yet).
        const std::shared_ptr<Comm>& comm = state->config.comm;
        const bool ranks = comm && comm->size() > 1;
        if (!ranks && (budget < 0 || csr_bytes > budget)) {
            // Out-of-core: one streamed pass for QC and the normalised moments.
            data->streamed = true;
            data->qc_step.update(QcOptions{}, {}, clock, [&] {
                state->begin_step(ctx, "qc");
                data->streamed_stats = detail::stream_statistics(*opened.source, opened.meta.var.index(), ctx);
                return data->streamed_stats.qc;
            });
            data->integer_counts = data->streamed_stats.integer_counts;
            data->row_offsets = std::move(offsets);
            data->meta = std::move(opened.meta);
        } else {
            data->raw = ranks ? detail::load_rank_shards(*opened.source, offsets, devices, comm, ctx)
                              : detail::load_shards(*opened.source, offsets, devices, state->config.device_provider.get(),
                                                    ctx, data->device_note);
            data->meta = std::move(opened.meta);
            data->integer_counts =
                data->meta.integer_counts_known ? data->meta.integer_counts : all_integer(data->raw, ctx);
            data->qc_step.update(QcOptions{}, {}, clock, [&] {
                state->begin_step(ctx, "qc");
                return calculate_qc_metrics(data->raw, data->meta.var.index(), QcOptions{}, ctx);
            });
        }

        // The new dataset's steps start from its QC's version.
        state->cache.clear();
        state->cache.clock = clock;
        {
            std::lock_guard lock(state->mutex);
            state->data = data;
            state->frame.reset();
            state->annotations.clear();  // they refer to the previous dataset's cells
        }
        state->publish(detail::build_snapshot(*state, *data));
    });
}

JobHandle Engine::run(PipelineSettings settings) {
    settings.validate();
    auto state = m_state;
    return state->compute.submit("pipeline", [state, settings](JobContext& ctx) {
        // The out-of-core pipeline reads the file again with the default read options.
        if (const auto data = state->loaded(); data && data->streamed && !(state->config.read == DatasetReadOptions{}))
            throw std::invalid_argument("EngineConfig::read: the out-of-core pipeline reads the file with the default "
                                        "read options only, and this streamed dataset was opened with others (raise "
                                        "EngineConfig::memory_budget_bytes to load it)");
        detail::run_pipeline(*state, settings, ctx);
    });
}

Pending<GeneValues> Engine::gene_values(std::string gene, ValueLayer layer) {
    auto state = m_state;
    auto slot = std::make_shared<ResultSlot<GeneValues>>();
    JobHandle handle = state->query.submit("gene", [state, slot, gene, layer](JobContext& ctx) {
        state->begin_step(ctx, "gene");
        const auto data = state->loaded();
        if (!data) throw std::invalid_argument("gene '" + gene + "': no dataset is open");
        const GeneLookup lookup(data->meta.var);
        const std::int32_t gene32 = lookup.find(gene);
        if (gene32 < 0) throw std::invalid_argument(lookup.problem(gene));
        const auto gene_index = static_cast<std::int64_t>(gene32);
        const auto& names = data->meta.var.index();
        // Cached per layer (EngineFilters.cpp), shared with the filters that name this gene.
        const auto cached =
            detail::cached_gene_columns(*data, state->config, std::span<const std::int32_t>(&gene32, 1), layer, ctx);
        const std::vector<float>& column = *cached.front();
        auto result = std::make_shared<GeneValues>();
        result->gene = names[static_cast<std::size_t>(gene_index)];
        result->gene_index = gene_index;
        result->layer = layer;
        // Cells of the current analysis (after any cell filter), in obs order.
        const auto snapshot = [&] {
            std::lock_guard lock(state->mutex);
            return state->snapshot;
        }();
        const std::vector<std::int64_t>* cells = snapshot ? &snapshot->cells : nullptr;
        const std::size_t num_cells = cells && !cells->empty() ? cells->size() : column.size();
        result->values.resize(num_cells);
        for (std::size_t row = 0; row < num_cells; ++row) {
            const std::size_t raw_row = cells && !cells->empty() ? static_cast<std::size_t>((*cells)[row]) : row;
            result->values[row] = column[raw_row];
        }
        detail::set_value_range(*result);
        slot->set(std::move(result));
    });
    return Pending<GeneValues>(std::move(handle), std::move(slot));
}

JobHandle Engine::export_h5ad(std::string path, bool include_matrix) {
    auto state = m_state;
    return state->compute.submit("export", [state, path, include_matrix](JobContext& ctx) {
        state->begin_step(ctx, "export");
        const auto data = state->loaded();
        if (!data) throw std::invalid_argument("export: no dataset is open");
        const auto snapshot = [&] {
            std::lock_guard lock(state->mutex);
            return state->snapshot;
        }();
        // Several ranks: every rank holds the same annotations; rank 0 writes them.
        const std::shared_ptr<Comm>& comm = state->config.comm;
        if (comm && comm->size() > 1) {
            if (include_matrix)
                throw std::invalid_argument("export: a run over " + std::to_string(comm->size()) +
                                            " ranks writes the annotations without X for now (--no-matrix)");
            if (comm->rank() != 0) return;
        }
        Dataset out = detail::export_dataset(*state, *data, *snapshot);
        io::H5adWriteOptions options;
        options.write_matrix = include_matrix;
        if (include_matrix) {
            // X = the raw counts of the analysed cells, streamed again from the file so
            // that no second copy of the matrix is made.
            io::OpenedDataset reopened = io::open_dataset(data->meta.path, detail::read_options(state->config.read));
            detail::SelectedRowsSource rows(std::move(reopened.source), snapshot->cells);
            io::write_h5ad(path, out, &rows, options, &ctx);
        } else {
            io::write_h5ad(path, out, nullptr, options, &ctx);
        }
        ctx.report(1.0);
    });
}

std::shared_ptr<const AnalysisSnapshot> Engine::snapshot() const {
    std::lock_guard lock(m_state->mutex);
    return m_state->snapshot;
}

std::shared_ptr<const EmbeddingFrame> Engine::embedding_frame() const {
    std::lock_guard lock(m_state->mutex);
    return m_state->frame;
}

}  // namespace fathom
