#include "core/engine/Engine.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <unistd.h>
#include <unordered_map>

#include "core/data/GeneLookup.hpp"
#include "core/engine/detail/DevicePlacement.hpp"
#include "core/engine/detail/EngineState.hpp"
#include "core/engine/detail/SelectedRowsSource.hpp"
#include "core/engine/detail/ShardRowSource.hpp"
#include "core/io/RowSource.hpp"
#include "core/io/h5ad_writer.hpp"

namespace fathom {

namespace {

/// Cells whose values decide what X holds (MatrixContentScan).
constexpr std::int64_t k_content_scan_rows = 2000;

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

void put_rows(ByteWriter& out, const CsrShard& rows) {
    out.put(rows.row_begin);
    out.put(rows.num_genes);
    out.put_vector(std::span<const std::int64_t>(rows.row_offsets));
    out.put_vector(std::span<const std::int32_t>(rows.gene_indices));
    out.put_vector(std::span<const float>(rows.values));
}

CsrShard get_rows(ByteReader& in) {
    CsrShard rows;
    rows.row_begin = in.get<std::int64_t>();
    rows.num_genes = in.get<std::int64_t>();
    rows.row_offsets = in.get_vector<std::int64_t>();
    rows.gene_indices = in.get_vector<std::int32_t>();
    rows.values = in.get_vector<float>();
    return rows;
}

/// The h5ad of a run over several ranks, X included: X holds the raw counts of the
/// analysed cells (snapshot.cells, ascending), which every rank takes from its own
/// shards in blocks of H5adWriteOptions::rows_per_block rows. Rank 0 writes its blocks,
/// then each other rank's in rank order as they arrive (point to point): no rank holds
/// more than its own rows and one block, and no rank reads the file for rows it does
/// not own. Rank 0 then writes the annotations and renames the file into place.
void write_over_ranks(const std::string& path, const Engine::State& state, const detail::LoadedData& data,
                      const AnalysisSnapshot& snapshot, Comm& comm, JobContext& ctx) {
    io::H5adWriteOptions options;
    const ShardSet& raw = data.raw;
    const std::vector<std::int64_t>& cells = snapshot.cells;
    // The selected rows of `host` (rows from host.row_begin), as output blocks.
    const auto cut = [&](const CsrShard& host, const auto& emit) {
        auto at = std::lower_bound(cells.begin(), cells.end(), host.row_begin);
        const auto end = std::lower_bound(cells.begin(), cells.end(), host.row_end());
        while (at != end) {
            ctx.checkpoint();
            const auto block_end = end - at > options.rows_per_block ? at + options.rows_per_block : end;
            CsrShard block;
            block.row_begin = at - cells.begin();
            block.num_genes = host.num_genes;
            for (auto cell = at; cell != block_end; ++cell) {
                const auto row = static_cast<std::size_t>(*cell - host.row_begin);
                const auto first = host.row_offsets[row], last = host.row_offsets[row + 1];
                block.gene_indices.insert(block.gene_indices.end(), host.gene_indices.begin() + first,
                                          host.gene_indices.begin() + last);
                block.values.insert(block.values.end(), host.values.begin() + first, host.values.begin() + last);
                block.row_offsets.push_back(static_cast<std::int64_t>(block.values.size()));
            }
            emit(std::move(block));
            at = block_end;
        }
    };
    // In memory: this rank's selected rows, as output blocks. Streamed: none are held;
    // the rows are read again from the file, one block at a time, as they are written.
    std::vector<CsrShard> blocks;
    std::int64_t local_nnz = 0;
    if (data.streamed) {
        const RowRange rows = data.stream_layout.local_rows();
        const auto& offsets = data.row_offsets;
        for (auto at = std::lower_bound(cells.begin(), cells.end(), rows.begin);
             at != cells.end() && *at < rows.end; ++at)
            local_nnz += offsets[static_cast<std::size_t>(*at + 1)] - offsets[static_cast<std::size_t>(*at)];
    } else {
        for (int shard = raw.first_local_shard(); shard < raw.first_local_shard() + raw.num_local_shards(); ++shard)
            cut(raw.shard(shard).to_host(), [&](CsrShard block) {
                local_nnz += block.nnz();
                blocks.push_back(std::move(block));
            });
    }
    const auto for_each_block = [&](const auto& emit) {
        if (!data.streamed) {
            for (const CsrShard& block : blocks) emit(block);
            return;
        }
        const std::unique_ptr<io::RowSource> source = detail::matrix_rows(data);
        for (const RowRange& range : data.stream_layout.local())
            for (std::int64_t begin = range.begin; begin < range.end; begin += detail::k_stream_block_rows) {
                const std::int64_t end = std::min(range.end, begin + detail::k_stream_block_rows);
                CsrShard host = source->read_rows(begin, end);
                host.row_begin = begin;
                cut(host, [&](const CsrShard& block) { emit(block); });
            }
    };
    ByteWriter count;
    count.put(local_nnz);
    std::int64_t total_nnz = 0;
    for (const Bytes& part : comm.all_gather(count.bytes())) total_nnz += ByteReader(part).get<std::int64_t>();
    if (comm.rank() != 0) {
        for_each_block([&](const CsrShard& block) {
            ByteWriter out;
            put_rows(out, block);
            comm.send(out.bytes(), 0);
        });
        comm.send({}, 0);  // done
        // Rank 0 says whether the file was written (it ends every rank otherwise).
        comm.broadcast({}, 0);
        return;
    }
    Dataset out = detail::export_dataset(state, data, snapshot);
    io::make_uns_keys_writable(out.uns);
    io::H5adStreamWriter writer(path, MatrixShape{static_cast<std::int64_t>(cells.size()), data.meta.shape.num_genes},
                                options, total_nnz);
    for_each_block([&](const CsrShard& block) { writer.append_rows(block); });
    for (int rank = 1; rank < comm.size(); ++rank) {
        for (;;) {
            ctx.checkpoint();
            const Bytes message = comm.receive(rank);
            if (message.empty()) break;
            ByteReader in(message);
            writer.append_rows(get_rows(in));
            ctx.report(static_cast<double>(writer.rows_written()) / static_cast<double>(std::max<std::size_t>(1, cells.size())));
        }
    }
    writer.commit(out);
    comm.broadcast({}, 0);
}

/// The file's raw/X when `meta` is an h5ad's X and the file has a raw matrix of the
/// same cells (anndata `.raw`); nullopt otherwise. Reads raw/var and raw/X's row
/// offsets only.
std::optional<detail::LoadedData::RawMatrix> open_raw_matrix(const Dataset& meta, const DatasetReadOptions& read) {
    if (meta.format != DatasetFormat::H5ad || meta.matrix_name != "X") return std::nullopt;
    io::ReadOptions options = detail::read_options(read);
    options.matrix = "raw";
    options.read_annotations = false;
    io::OpenedDataset raw;
    try {
        raw = io::open_dataset(meta.path, options);
    } catch (const std::exception&) {
        return std::nullopt;  // no raw matrix (or one that cannot be read): X only
    }
    if (raw.meta.shape.num_cells != meta.shape.num_cells) return std::nullopt;
    detail::LoadedData::RawMatrix out;
    out.var = std::move(raw.meta.var);
    out.row_offsets = raw.source->row_offsets();
    return out;
}

}  // namespace

std::unique_ptr<io::RowSource> detail::matrix_rows(const LoadedData& data) {
    std::shared_ptr<const PackedMatrix> packed;
    {
        std::lock_guard lock(data.packed_mutex);
        packed = data.packed;
    }
    if (packed) return std::make_unique<PackedRowSource>(std::move(packed));
    io::ReadOptions options = read_options(data.read);
    options.read_annotations = false;
    return io::open_dataset(data.meta.path, options).source;
}

const char* value_layer_label(ValueLayer layer) noexcept {
    switch (layer) {
        case ValueLayer::Counts: return "X";
        case ValueLayer::LogNorm: return "log-normalised counts";
        case ValueLayer::Raw: return "raw/X";
    }
    return "X";
}

const char* value_layer_key(ValueLayer layer) noexcept {
    switch (layer) {
        case ValueLayer::Counts: return "counts";
        case ValueLayer::LogNorm: return "lognorm";
        case ValueLayer::Raw: return "raw";
    }
    return "counts";
}

bool parse_value_layer(const std::string& key, ValueLayer& layer) noexcept {
    for (const ValueLayer candidate : {ValueLayer::Counts, ValueLayer::LogNorm, ValueLayer::Raw})
        if (key == value_layer_key(candidate)) {
            layer = candidate;
            return true;
        }
    return false;
}

ValueLayer default_value_layer(const DatasetSummary& dataset) noexcept {
    if (dataset.has_raw) return ValueLayer::Raw;
    // Counts (integer or not) are normalised for display; values already log-normalised,
    // scaled or otherwise processed are shown as stored.
    switch (dataset.content.content) {
        case MatrixContent::RawCounts:
        case MatrixContent::NonIntegerCounts: return ValueLayer::LogNorm;
        case MatrixContent::LogNormalized:
        case MatrixContent::Scaled:
        case MatrixContent::Other: return ValueLayer::Counts;
    }
    return ValueLayer::Counts;
}

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
        DatasetReadOptions read = state->config.read;
        io::OpenedDataset opened = io::open_dataset(path, detail::read_options(read));
        std::string absent_x_note;
        if (opened.meta.format == DatasetFormat::H5ad && opened.meta.matrix_layout == "none") {
            // anndata X = None: analyse raw/X when the file has one, else say what to choose.
            read.matrix = "raw";
            try {
                opened = io::open_dataset(path, detail::read_options(read));
            } catch (const io::FormatError& error) {
                if (error.object() != "/raw/X") throw;
                throw io::FormatError(path, "/X",
                                      "absent (anndata X = None), and the file has no raw/X: nothing to analyse "
                                      "(choose a layer: --layer NAME)");
            }
            absent_x_note = "X is absent (anndata X = None): analysing raw/X";
        }
        auto data = std::make_shared<detail::LoadedData>();
        data->read = read;
        data->open_note = absent_x_note;
        std::uint64_t clock = state->cache.clock;  // versions keep increasing across datasets
        data->devices = devices;
        std::vector<std::int64_t> offsets = opened.source->row_offsets();
        const std::int64_t csr_bytes = 8 * (opened.meta.shape.num_cells + 1) + 8 * opened.meta.nnz;
        std::int64_t budget = state->config.memory_budget_bytes;
        // Several ranks: each loads (or streams) its own rows; the default budget is half
        // the node's memory shared by the ranks on the node.
        const std::shared_ptr<Comm>& comm = state->config.comm;
        const bool ranks = comm && comm->size() > 1;
        if (budget == 0)
            budget = static_cast<std::int64_t>(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGE_SIZE) / 2 /
                     (ranks ? std::max(1, comm->node_size()) : 1);
        const std::int64_t share_bytes = ranks ? csr_bytes / comm->size() : csr_bytes;
        data->memory_budget = budget;
        bool streamed = budget < 0 || share_bytes > budget;
        if (ranks) {
            // One decision for every rank (nodes may differ in memory): stream when any must.
            ByteWriter flag;
            flag.put(static_cast<std::uint8_t>(streamed));
            for (const Bytes& other : comm->all_gather(flag.bytes())) streamed = streamed || ByteReader(other).get<std::uint8_t>();
        }
        if (streamed) {
            // Out-of-core: one streamed pass (over this process's shards) for QC and the
            // normalised moments.
            data->streamed = true;
            data->stream_layout =
                detail::ShardLayout::over_ranks(offsets, std::max(1, devices.num_shards()), devices.balance, comm);
            // The rows read are kept packed in memory while they fit the budget, so
            // that the later passes decode them instead of reading the file again.
            data->qc_step.update(QcOptions{}, {}, clock, [&] {
                state->begin_step(ctx, "qc");
                data->streamed_stats = detail::stream_statistics(*opened.source, opened.meta.var.index(),
                                                                 data->stream_layout, ctx, detail::k_stream_block_rows,
                                                                 std::max<std::int64_t>(0, budget));
                return data->streamed_stats.qc;
            });
            data->packed = std::move(data->streamed_stats.packed);
            data->packed_at_open = data->packed != nullptr;
            data->packed_bytes = data->streamed_stats.packed_bytes;
            data->integer_counts = data->streamed_stats.integer_counts;
            data->row_offsets = std::move(offsets);
            data->meta = std::move(opened.meta);
        } else {
            const DeviceProvider* provider = state->config.device_provider.get();
            // The rows are read once into the shards: the file's pages are dropped from
            // the page cache as they are read (io::RowSource::set_read_once).
            const io::ReadOnceScope read_once(*opened.source, true);
            data->raw = ranks ? detail::load_rank_shards(*opened.source, offsets, devices, provider, comm, ctx, data->device_note)
                              : detail::load_shards(*opened.source, offsets, devices, provider, ctx, data->device_note);
            data->meta = std::move(opened.meta);
            data->integer_counts =
                data->meta.integer_counts_known ? data->meta.integer_counts : all_integer(data->raw, ctx);
            data->qc_step.update(QcOptions{}, {}, clock, [&] {
                state->begin_step(ctx, "qc");
                return calculate_qc_metrics(data->raw, data->meta.var.index(), QcOptions{}, ctx);
            });
        }

        // What X holds: the first cells' values (the same rows on every rank), with the
        // integer test over the whole matrix.
        {
            MatrixContentScan scan(data->meta.shape.num_genes);
            const std::int64_t rows = std::min<std::int64_t>(data->meta.shape.num_cells, k_content_scan_rows);
            if (rows > 0) scan.add(opened.source->read_rows(0, rows));
            data->content = scan.report(data->integer_counts);
        }
        data->raw_matrix = open_raw_matrix(data->meta, state->config.read);
        if (data->integer_counts && !data->streamed) {
            auto metrics = std::make_shared<CellQcMetrics>();
            metrics->total_counts = data->qc().total_counts;
            metrics->n_genes_by_counts = data->qc().n_genes_by_counts;
            metrics->pct_counts_mt = data->qc().pct_counts_mt;
            data->qc_metrics = std::move(metrics);
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
        if (const auto data = state->loaded(); data && data->streamed && !(data->read == DatasetReadOptions{}))
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
        const Table& var = detail::layer_var(*data, layer, "gene '" + gene + "'");
        const GeneLookup lookup(var);
        const std::int32_t gene32 = lookup.find(gene);
        if (gene32 < 0) throw std::invalid_argument(lookup.problem(gene));
        const auto gene_index = static_cast<std::int64_t>(gene32);
        const auto& names = var.index();
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
        // Several ranks: every rank holds the same annotations; rank 0 writes them, and X
        // from every rank's own rows (write_over_ranks).
        const std::shared_ptr<Comm>& comm = state->config.comm;
        if (comm && comm->size() > 1) {
            if (include_matrix) return write_over_ranks(path, *state, *data, *snapshot, *comm, ctx);
            if (comm->rank() != 0) return;
        }
        Dataset out = detail::export_dataset(*state, *data, *snapshot);
        // An uns key HDF5 cannot hold is renamed, and the job's message says so.
        std::string renamed;
        for (const auto& line : io::make_uns_keys_writable(out.uns)) renamed += (renamed.empty() ? "" : "; ") + line;
        if (!renamed.empty()) ctx.report(0.0, "warning: " + renamed);
        io::H5adWriteOptions options;
        options.write_matrix = include_matrix;
        if (include_matrix) {
            // X = the raw counts of the analysed cells, block by block so that no second
            // copy of the matrix is made: from the raw shards when they are in host
            // memory (they never change after loading), else from the packed rows of an
            // out-of-core run, else read again from the file.
            std::unique_ptr<io::RowSource> source;
            if (!data->streamed && detail::ShardRowSource::supports(data->raw))
                source = std::make_unique<detail::ShardRowSource>(data->raw, data->meta.shape);
            else
                source = detail::matrix_rows(*data);
            detail::SelectedRowsSource rows(std::move(source), snapshot->cells);
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
