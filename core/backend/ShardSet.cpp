#include "core/backend/ShardSet.hpp"

#include <algorithm>
#include <charconv>
#include <stdexcept>

#include <tbb/parallel_for.h>

#include "core/backend/CpuBackend.hpp"
#include "core/backend/stats_wire.hpp"
#include "core/types/errors.hpp"

namespace fathom {

// ---- DeviceSpec ----------------------------------------------------------------------

namespace {

[[noreturn]] void bad_devices(std::string_view text, const std::string& problem) {
    throw std::invalid_argument("--devices '" + std::string(text) + "': " + problem +
                                " (expected cpu, cpu:N, cuda or cuda:I[,J...])");
}

int parse_count(std::string_view text, std::string_view digits, const char* what) {
    int value = 0;
    if (digits.empty()) bad_devices(text, std::string("missing ") + what);
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (error != std::errc() || end != digits.data() + digits.size())
        bad_devices(text, std::string(what) + " '" + std::string(digits) + "' is not a non-negative integer");
    return value;
}

}  // namespace

DeviceSpec DeviceSpec::parse(std::string_view text) {
    DeviceSpec spec;
    const auto colon = text.find(':');
    const std::string_view kind = text.substr(0, colon);
    const std::string_view rest = colon == std::string_view::npos ? std::string_view{} : text.substr(colon + 1);
    if (colon != std::string_view::npos && rest.empty()) bad_devices(text, "nothing after ':'");
    if (kind == "cpu") {
        spec.kind = BackendKind::Cpu;
        spec.num_cpu_shards = rest.empty() ? 1 : parse_count(text, rest, "number of CPU shards");
        if (spec.num_cpu_shards < 1) bad_devices(text, "the number of CPU shards must be >= 1");
        if (spec.num_cpu_shards > 4096) bad_devices(text, "the number of CPU shards must be <= 4096");
        return spec;
    }
    if (kind == "cuda" || kind == "gpu") {
        spec.kind = BackendKind::Cuda;
        std::string_view list = rest;
        while (!list.empty()) {
            const auto comma = list.find(',');
            const std::string_view item = list.substr(0, comma);
            const int device = parse_count(text, item, "device index");
            if (std::find(spec.cuda_devices.begin(), spec.cuda_devices.end(), device) != spec.cuda_devices.end())
                bad_devices(text, "device " + std::to_string(device) + " is listed twice");
            spec.cuda_devices.push_back(device);
            if (comma == std::string_view::npos) break;
            list = list.substr(comma + 1);
            if (list.empty()) bad_devices(text, "trailing ','");
        }
        return spec;
    }
    bad_devices(text, "unknown device kind '" + std::string(kind) + "'");
}

std::string DeviceSpec::to_string() const {
    if (kind == BackendKind::Cpu) return "cpu:" + std::to_string(num_cpu_shards);
    if (cuda_devices.empty()) return "cuda";
    std::string text = "cuda:";
    for (std::size_t index = 0; index < cuda_devices.size(); ++index) {
        if (index) text += ',';
        text += std::to_string(cuda_devices[index]);
    }
    return text;
}

int DeviceSpec::num_shards() const noexcept {
    return kind == BackendKind::Cpu ? num_cpu_shards : static_cast<int>(cuda_devices.size());
}

std::vector<RowRange> plan_row_ranges(std::span<const std::int64_t> row_offsets, int num_shards, ShardBalance balance) {
    if (row_offsets.empty()) throw std::invalid_argument("plan_row_ranges: row_offsets is empty");
    if (balance == ShardBalance::Evenly)
        return split_rows_evenly(static_cast<std::int64_t>(row_offsets.size()) - 1, num_shards);
    return split_rows_by_nnz(row_offsets, num_shards);
}

// ---- accumulation --------------------------------------------------------------------

void accumulate(ColumnStats& total, const ColumnStats& other) {
    if (total.sum.size() != other.sum.size())
        throw std::invalid_argument("accumulate(ColumnStats): gene counts differ");
    total.num_rows += other.num_rows;
    for (std::size_t gene = 0; gene < total.sum.size(); ++gene) {
        total.sum[gene] += other.sum[gene];
        total.sum_squares[gene] += other.sum_squares[gene];
        total.nnz[gene] += other.nnz[gene];
    }
}

void accumulate(GroupColumnStats& total, const GroupColumnStats& other) {
    if (total.sum.rows() != other.sum.rows() || total.sum.cols() != other.sum.cols())
        throw std::invalid_argument("accumulate(GroupColumnStats): shapes differ");
    for (std::size_t group = 0; group < total.group_sizes.size(); ++group) total.group_sizes[group] += other.group_sizes[group];
    for (std::size_t index = 0; index < total.sum.values().size(); ++index) {
        total.sum.values()[index] += other.sum.values()[index];
        total.sum_squares.values()[index] += other.sum_squares.values()[index];
        total.nnz.values()[index] += other.nnz.values()[index];
    }
}

void accumulate(GramResult& total, const GramResult& other) {
    if (total.gram.rows() != other.gram.rows() || total.column_sums.size() != other.column_sums.size())
        throw std::invalid_argument("accumulate(GramResult): block sizes differ");
    total.num_rows += other.num_rows;
    for (std::size_t index = 0; index < total.gram.values().size(); ++index) total.gram.values()[index] += other.gram.values()[index];
    for (std::size_t index = 0; index < total.column_sums.size(); ++index) total.column_sums[index] += other.column_sums[index];
}

// ---- ShardSet ------------------------------------------------------------------------

ShardSet::ShardSet(std::vector<std::unique_ptr<Backend>> backends, std::int64_t num_genes)
    : m_backends(std::move(backends)), m_num_genes(num_genes) {
    std::int64_t next_row = 0;
    for (std::size_t index = 0; index < m_backends.size(); ++index) {
        const auto& backend = m_backends[index];
        if (!backend) throw std::invalid_argument("ShardSet: backend " + std::to_string(index) + " is null");
        if (index == 0) m_num_genes = backend->num_genes();
        if (backend->num_genes() != m_num_genes)
            throw std::invalid_argument("ShardSet: " + backend->name() + " has " + std::to_string(backend->num_genes()) +
                                        " genes, expected " + std::to_string(m_num_genes));
        if (backend->row_begin() != next_row)
            throw std::invalid_argument("ShardSet: " + backend->name() + " starts at row " +
                                        std::to_string(backend->row_begin()) + ", expected " + std::to_string(next_row));
        next_row += backend->num_rows();
    }
}

ShardSet ShardSet::make_cpu(ShardedCsr matrix) {
    std::vector<std::unique_ptr<Backend>> backends;
    const auto genes = matrix.num_genes();
    for (int index = 0; index < matrix.num_shards(); ++index)
        backends.push_back(std::make_unique<CpuBackend>(std::move(matrix.shard(index)), index));
    return ShardSet(std::move(backends), genes);
}

ShardSet ShardSet::distributed(std::vector<std::unique_ptr<Backend>> local, std::int64_t num_genes,
                               std::shared_ptr<Comm> comm, std::vector<RowRange> layout, int first_shard) {
    if (!comm) throw std::invalid_argument("ShardSet::distributed: comm is null");
    if (first_shard < 0 || first_shard + static_cast<std::int64_t>(local.size()) > static_cast<std::int64_t>(layout.size()))
        throw std::invalid_argument("ShardSet::distributed: shards [" + std::to_string(first_shard) + ", " +
                                    std::to_string(first_shard + static_cast<std::int64_t>(local.size())) +
                                    ") are not in the layout's " + std::to_string(layout.size()));
    std::int64_t next_row = 0;
    for (const RowRange& range : layout) {
        if (range.begin != next_row || range.end < range.begin)
            throw std::invalid_argument("ShardSet::distributed: the layout's row ranges are not contiguous from row 0");
        next_row = range.end;
    }
    for (std::size_t index = 0; index < local.size(); ++index) {
        const Backend& backend = *local[index];
        const RowRange& range = layout[static_cast<std::size_t>(first_shard) + index];
        if (backend.row_begin() != range.begin || backend.num_rows() != range.size() || backend.num_genes() != num_genes)
            throw std::invalid_argument("ShardSet::distributed: " + backend.name() + " holds rows [" +
                                        std::to_string(backend.row_begin()) + ", " +
                                        std::to_string(backend.row_begin() + backend.num_rows()) + ") x " +
                                        std::to_string(backend.num_genes()) + " genes; the layout says shard " +
                                        std::to_string(first_shard + static_cast<int>(index)) + " is rows [" +
                                        std::to_string(range.begin) + ", " + std::to_string(range.end) + ") x " +
                                        std::to_string(num_genes));
    }
    ShardSet set;
    set.m_backends = std::move(local);
    set.m_num_genes = num_genes;
    set.m_comm = std::move(comm);
    set.m_layout = std::move(layout);
    set.m_first = first_shard;
    return set;
}

std::size_t ShardSet::local_index(int index) const {
    if (!m_comm) return static_cast<std::size_t>(index);
    if (!is_local(index))
        throw std::out_of_range("ShardSet: shard " + std::to_string(index) + " is held by another rank (this rank holds " +
                                std::to_string(m_first) + " to " + std::to_string(m_first + num_local_shards() - 1) + ")");
    return static_cast<std::size_t>(index - m_first);
}

void ShardSet::share_layout(const ShardSet& other) {
    m_comm = other.m_comm;
    m_layout = other.m_layout;
    m_first = other.m_first;
}

ShardSet ShardSet::clone() const {
    std::vector<std::unique_ptr<Backend>> backends;
    std::vector<std::string> notes = m_device_notes;
    for (std::size_t index = 0; index < m_backends.size(); ++index) {
        const Backend& backend = *m_backends[index];
        try {
            backends.push_back(backend.clone());
        } catch (const DeviceOutOfMemory& error) {
            // The copy cannot live on the device: it lives on the host.
            notes.push_back(std::string(error.what()) + "; the copy of " + backend.name() + " is kept on the CPU");
            backends.push_back(std::make_unique<CpuBackend>(backend.to_host(), static_cast<int>(index)));
        }
    }
    ShardSet copy = m_comm ? distributed(std::move(backends), m_num_genes, m_comm, m_layout, m_first)
                           : ShardSet(std::move(backends), m_num_genes);
    copy.m_device_notes = std::move(notes);
    return copy;
}

ShardSet ShardSet::clone_columns(std::span<const std::uint8_t> keep, JobContext& ctx) const {
    if (static_cast<std::int64_t>(keep.size()) != m_num_genes)
        throw std::invalid_argument("ShardSet::clone_columns: keep has " + std::to_string(keep.size()) +
                                    " flags for " + std::to_string(m_num_genes) + " genes");
    std::int64_t kept = 0;
    for (const auto flag : keep) kept += flag ? 1 : 0;
    std::vector<std::unique_ptr<Backend>> backends(m_backends.size());
    std::vector<std::string> notes(m_backends.size());
    for_each_shard([&](int index) {
        const Backend& backend = *m_backends[static_cast<std::size_t>(index)];
        auto& copy = backends[static_cast<std::size_t>(index)];
        try {
            copy = backend.clone_columns(keep, ctx);
        } catch (const DeviceOutOfMemory& error) {
            // The copy cannot live on the device: it lives on the host.
            notes[static_cast<std::size_t>(index)] = std::string(error.what()) + "; the copy of the kept genes of " +
                                                     backend.name() + " and its later steps ran on the CPU (cpu:" +
                                                     std::to_string(index) + ")";
            ctx.report(ctx.progress().fraction, notes[static_cast<std::size_t>(index)]);
            copy = CpuBackend(backend.to_host(), index).clone_columns(keep, ctx);
            return;
        }
        // A device backend may itself keep a copy that does not fit on its device on the host.
        if (copy->kind() != backend.kind())
            notes[static_cast<std::size_t>(index)] = backend.name() + ": GPU out of memory; the copy of the kept genes and its "
                                                     "later steps ran on the CPU (" + copy->name() + ")";
    });
    ShardSet copy = m_comm ? distributed(std::move(backends), kept, m_comm, m_layout, m_first)
                           : ShardSet(std::move(backends), kept);
    copy.m_device_notes = m_device_notes;
    for (auto& note : notes)
        if (!note.empty()) copy.m_device_notes.push_back(std::move(note));
    return copy;
}

MatrixShape ShardSet::shape() const noexcept {
    if (m_comm) return {m_layout.empty() ? 0 : m_layout.back().end, m_num_genes};
    std::int64_t cells = 0;
    for (const auto& backend : m_backends) cells += backend->num_rows();
    return {cells, m_num_genes};
}

std::int64_t ShardSet::nnz() const {
    std::vector<std::int64_t> local;
    for (const auto& backend : m_backends) local.push_back(backend->nnz());
    const auto parts = all_parts(
        std::move(local), [](ByteWriter& out, std::int64_t part) { out.put(part); },
        [](ByteReader& in) { return in.get<std::int64_t>(); });
    std::int64_t total = 0;
    for (const auto part : parts) total += part;
    return total;
}

std::vector<RowRange> ShardSet::row_ranges() const {
    if (m_comm) return m_layout;
    std::vector<RowRange> ranges;
    for (const auto& backend : m_backends)
        ranges.push_back({backend->row_begin(), backend->row_begin() + backend->num_rows()});
    return ranges;
}

std::string ShardSet::describe() const {
    std::string text;
    for (std::size_t index = 0; index < m_backends.size(); ++index) {
        if (index) text += ',';
        text += m_backends[index]->name();
    }
    return text;
}

ShardedCsr ShardSet::to_host() const {
    if (m_comm && m_comm->size() > 1)
        throw std::logic_error("ShardSet::to_host: the matrix of a set spread over " + std::to_string(m_comm->size()) +
                               " ranks is never gathered");
    std::vector<CsrShard> shards;
    for (const auto& backend : m_backends) shards.push_back(backend->to_host());
    return ShardedCsr(shape(), std::move(shards));
}

void ShardSet::for_each_shard(const std::function<void(int)>& fn) const {
    const int shards = num_local_shards();
    if (shards == 0) return;
    if (shards == 1) {
        fn(0);
        return;
    }
    tbb::parallel_for(0, shards, [&](int index) { fn(index); });
}

void ShardSet::for_each_shard_in_place(const char* step, JobContext& ctx, const std::function<void(Backend&, int)>& fn) {
    std::vector<std::string> notes(m_backends.size());
    for_each_shard([&](int index) {
        auto& backend = m_backends[static_cast<std::size_t>(index)];
        try {
            fn(*backend, index);
            return;
        } catch (const DeviceOutOfMemory& error) {
            // Backend's contract: the shard is unchanged. Host copy, then the step again.
            notes[static_cast<std::size_t>(index)] = std::string(error.what()) + "; " + step + " and the later steps of " +
                                                     backend->name() + " ran on the CPU (cpu:" + std::to_string(index) + ")";
        }
        ctx.report(ctx.progress().fraction, notes[static_cast<std::size_t>(index)]);
        backend = std::make_unique<CpuBackend>(backend->to_host(), index);
        fn(*backend, index);
    });
    for (auto& note : notes)
        if (!note.empty()) m_device_notes.push_back(std::move(note));
}

namespace {

template <typename T>
std::span<const T> slice(std::span<const T> global, const Backend& backend) {
    if (global.empty()) return {};
    return global.subspan(static_cast<std::size_t>(backend.row_begin()), static_cast<std::size_t>(backend.num_rows()));
}

void check_global(const char* function, const char* argument, std::size_t got, std::int64_t expected) {
    if (static_cast<std::int64_t>(got) != expected)
        throw std::invalid_argument(std::string("ShardSet::") + function + ": " + argument + " has " +
                                    std::to_string(got) + " entries; expected one per cell (" +
                                    std::to_string(expected) + ")");
}

ColumnStatsRequest slice_request(const ColumnStatsRequest& request, const Backend& backend) {
    ColumnStatsRequest local = request;
    local.row_scale = slice(request.row_scale, backend);
    local.row_mask = slice(request.row_mask, backend);
    return local;
}

void check_global_request(const char* function, const ColumnStatsRequest& request, std::int64_t cells) {
    if (!request.row_scale.empty()) check_global(function, "row_scale", request.row_scale.size(), cells);
    if (!request.row_mask.empty()) check_global(function, "row_mask", request.row_mask.size(), cells);
}

// ---- partials between ranks ----

template <typename T>
void put_matrix(ByteWriter& out, const DenseMatrix<T>& matrix) {
    out.put(matrix.rows());
    out.put(matrix.cols());
    out.put_vector(std::span<const T>(matrix.values()));
}

template <typename T>
DenseMatrix<T> get_matrix(ByteReader& in) {
    const auto rows = in.get<std::int64_t>();
    const auto cols = in.get<std::int64_t>();
    std::vector<T> values = in.get_vector<T>();
    if (static_cast<std::int64_t>(values.size()) != rows * cols)
        throw std::runtime_error("ShardSet: a matrix from another rank has the wrong size");
    DenseMatrix<T> matrix(rows, cols);
    std::copy(values.begin(), values.end(), matrix.values().begin());
    return matrix;
}

void put(ByteWriter& out, const RowStats& part) {
    out.put_vector(std::span<const double>(part.total));
    out.put_vector(std::span<const std::int64_t>(part.nnz));
    out.put_vector(std::span<const double>(part.subset_total));
}

RowStats get_row_stats(ByteReader& in) {
    RowStats part;
    part.total = in.get_vector<double>();
    part.nnz = in.get_vector<std::int64_t>();
    part.subset_total = in.get_vector<double>();
    return part;
}

void put(ByteWriter& out, const GroupColumnStats& part) {
    out.put_vector(std::span<const std::int64_t>(part.group_sizes));
    put_matrix(out, part.sum);
    put_matrix(out, part.sum_squares);
    put_matrix(out, part.nnz);
}

GroupColumnStats get_group_column_stats(ByteReader& in) {
    GroupColumnStats part;
    part.group_sizes = in.get_vector<std::int64_t>();
    part.sum = get_matrix<double>(in);
    part.sum_squares = get_matrix<double>(in);
    part.nnz = get_matrix<std::int64_t>(in);
    return part;
}

void put(ByteWriter& out, const GramResult& part) {
    out.put(part.num_rows);
    put_matrix(out, part.gram);
    out.put_vector(std::span<const double>(part.column_sums));
}

GramResult get_gram(ByteReader& in) {
    GramResult part;
    part.num_rows = in.get<std::int64_t>();
    part.gram = get_matrix<double>(in);
    part.column_sums = in.get_vector<double>();
    return part;
}

}  // namespace

RowStats ShardSet::row_stats(std::span<const std::uint8_t> gene_mask, JobContext& ctx) const {
    std::vector<RowStats> parts(m_backends.size());
    for_each_shard([&](int index) { parts[static_cast<std::size_t>(index)] = m_backends[static_cast<std::size_t>(index)]->row_stats(gene_mask, ctx); });
    parts = all_parts(std::move(parts), [](ByteWriter& out, const RowStats& part) { put(out, part); }, get_row_stats);
    RowStats stats;
    for (auto& part : parts) {
        stats.total.insert(stats.total.end(), part.total.begin(), part.total.end());
        stats.nnz.insert(stats.nnz.end(), part.nnz.begin(), part.nnz.end());
        stats.subset_total.insert(stats.subset_total.end(), part.subset_total.begin(), part.subset_total.end());
    }
    return stats;
}

ColumnStats ShardSet::column_stats(const ColumnStatsRequest& request, JobContext& ctx) const {
    check_global_request("column_stats", request, num_cells());
    ColumnStats total;
    total.sum.assign(static_cast<std::size_t>(m_num_genes), 0.0);
    total.sum_squares.assign(static_cast<std::size_t>(m_num_genes), 0.0);
    total.nnz.assign(static_cast<std::size_t>(m_num_genes), 0);
    std::vector<ColumnStats> parts(m_backends.size());
    for_each_shard([&](int index) {
        const auto& backend = *m_backends[static_cast<std::size_t>(index)];
        parts[static_cast<std::size_t>(index)] = backend.column_stats(slice_request(request, backend), ctx);
    });
    parts = all_parts(std::move(parts), put_column_stats, get_column_stats);
    for (const auto& part : parts) accumulate(total, part);
    return total;
}

GroupColumnStats ShardSet::group_column_stats(std::span<const std::int32_t> labels, int num_groups,
                                              const ColumnStatsRequest& request, JobContext& ctx) const {
    check_global("group_column_stats", "labels", labels.size(), num_cells());
    check_global_request("group_column_stats", request, num_cells());
    if (num_groups < 0) throw std::invalid_argument("ShardSet::group_column_stats: num_groups must be >= 0");
    GroupColumnStats total;
    total.group_sizes.assign(static_cast<std::size_t>(num_groups), 0);
    total.sum = DenseMatrix<double>(num_groups, m_num_genes, 0.0);
    total.sum_squares = DenseMatrix<double>(num_groups, m_num_genes, 0.0);
    total.nnz = DenseMatrix<std::int64_t>(num_groups, m_num_genes, 0);
    std::vector<GroupColumnStats> parts(m_backends.size());
    for_each_shard([&](int index) {
        const auto& backend = *m_backends[static_cast<std::size_t>(index)];
        parts[static_cast<std::size_t>(index)] =
            backend.group_column_stats(slice(labels, backend), num_groups, slice_request(request, backend), ctx);
    });
    parts = all_parts(std::move(parts), [](ByteWriter& out, const GroupColumnStats& part) { put(out, part); },
                      get_group_column_stats);
    for (const auto& part : parts) accumulate(total, part);
    return total;
}

std::vector<float> ShardSet::gene_column(std::int32_t gene, JobContext& ctx) const {
    std::vector<std::vector<float>> parts(m_backends.size());
    for_each_shard([&](int index) { parts[static_cast<std::size_t>(index)] = m_backends[static_cast<std::size_t>(index)]->gene_column(gene, ctx); });
    parts = all_parts(
        std::move(parts), [](ByteWriter& out, const std::vector<float>& part) { out.put_vector(std::span<const float>(part)); },
        [](ByteReader& in) { return in.get_vector<float>(); });
    std::vector<float> column;
    column.reserve(static_cast<std::size_t>(num_cells()));
    for (const auto& part : parts) column.insert(column.end(), part.begin(), part.end());
    return column;
}

GramResult ShardSet::gram(GeneBlock genes, const Standardization& standardization, JobContext& ctx) const {
    const std::int64_t block = genes.empty() ? m_num_genes : static_cast<std::int64_t>(genes.size());
    GramResult total;
    total.gram = DenseMatrix<double>(block, block, 0.0);
    total.column_sums.assign(static_cast<std::size_t>(block), 0.0);
    std::vector<GramResult> parts(m_backends.size());
    for_each_shard([&](int index) { parts[static_cast<std::size_t>(index)] = m_backends[static_cast<std::size_t>(index)]->gram(genes, standardization, ctx); });
    parts = all_parts(std::move(parts), [](ByteWriter& out, const GramResult& part) { put(out, part); }, get_gram);
    for (const auto& part : parts) accumulate(total, part);
    return total;
}

DenseMatrix<double> ShardSet::project(const ProjectionRequest& request, JobContext& ctx) const {
    if (request.loadings == nullptr) throw std::invalid_argument("ShardSet::project: loadings is required");
    std::vector<DenseMatrix<double>> parts(m_backends.size());
    for_each_shard([&](int index) { parts[static_cast<std::size_t>(index)] = m_backends[static_cast<std::size_t>(index)]->project(request, ctx); });
    parts = all_parts(std::move(parts), [](ByteWriter& out, const DenseMatrix<double>& part) { put_matrix(out, part); },
                      get_matrix<double>);
    const std::int64_t components = request.loadings->cols();
    DenseMatrix<double> scores(num_cells(), components, 0.0);
    std::int64_t row = 0;
    for (const auto& part : parts) {
        std::copy(part.values().begin(), part.values().end(), scores.values().begin() + row * components);
        row += part.rows();
    }
    return scores;
}

void ShardSet::scale_rows(std::span<const double> factors, JobContext& ctx) {
    check_global("scale_rows", "factors", factors.size(), num_cells());
    for_each_shard_in_place("scale_rows", ctx, [&](Backend& backend, int) { backend.scale_rows(slice(factors, backend), ctx); });
}

void ShardSet::log1p(JobContext& ctx) {
    for_each_shard_in_place("log1p", ctx, [&](Backend& backend, int) { backend.log1p(ctx); });
}

void ShardSet::subset_columns(std::span<const std::uint8_t> keep, JobContext& ctx) {
    if (static_cast<std::int64_t>(keep.size()) != m_num_genes)
        throw std::invalid_argument("ShardSet::subset_columns: keep has " + std::to_string(keep.size()) +
                                    " entries; expected one per gene (" + std::to_string(m_num_genes) + ")");
    for_each_shard_in_place("subset_columns", ctx, [&](Backend& backend, int) { backend.subset_columns(keep, ctx); });
    m_num_genes = std::count_if(keep.begin(), keep.end(), [](std::uint8_t flag) { return flag != 0; });
}

void ShardSet::subset_rows(std::span<const std::uint8_t> keep, JobContext& ctx) {
    check_global("subset_rows", "keep", keep.size(), num_cells());
    // New first rows: kept rows in all earlier shards (of every rank when distributed).
    const std::vector<RowRange> ranges = row_ranges();
    std::vector<std::int64_t> new_begin(ranges.size(), 0);
    std::vector<RowRange> layout(ranges.size());
    std::int64_t kept = 0;
    for (std::size_t index = 0; index < ranges.size(); ++index) {
        new_begin[index] = kept;
        kept += std::count_if(keep.begin() + ranges[index].begin, keep.begin() + ranges[index].end,
                              [](std::uint8_t flag) { return flag != 0; });
        layout[index] = {new_begin[index], kept};
    }
    // Slices are taken before any shard changes its row_begin.
    std::vector<std::span<const std::uint8_t>> locals;
    for (const auto& backend : m_backends) locals.push_back(slice(keep, *backend));
    for_each_shard_in_place("subset_rows", ctx, [&](Backend& backend, int index) {
        backend.subset_rows(locals[static_cast<std::size_t>(index)],
                            new_begin[static_cast<std::size_t>(m_first + index)], ctx);
    });
    if (m_comm) m_layout = std::move(layout);
}

void put_column_stats(ByteWriter& out, const ColumnStats& part) {
    out.put(part.num_rows);
    out.put_vector(std::span<const double>(part.sum));
    out.put_vector(std::span<const double>(part.sum_squares));
    out.put_vector(std::span<const std::int64_t>(part.nnz));
}

ColumnStats get_column_stats(ByteReader& in) {
    ColumnStats part;
    part.num_rows = in.get<std::int64_t>();
    part.sum = in.get_vector<double>();
    part.sum_squares = in.get_vector<double>();
    part.nnz = in.get_vector<std::int64_t>();
    return part;
}

}  // namespace fathom
