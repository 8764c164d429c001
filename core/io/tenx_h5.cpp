// 10x Genomics HDF5 feature-barcode matrices (CellRanger / Space Ranger).
//
// CellRanger v3+: /matrix/{data, indices, indptr, shape, barcodes,
// features/{id, name, feature_type, genome}}; CellRanger v2: one group per genome
// with {data, indices, indptr, shape, barcodes, genes, gene_names}. Both store the
// features x barcodes matrix as CSC, which is the cells x genes matrix as CSR: indptr
// indexes barcodes (cells) and indices are feature indices. Names follow scanpy 1.9
// `read_10x_h5`: obs index = barcodes, var index = feature names, var['gene_ids'],
// and for v3 var['feature_types'] and var['genome'] (string columns), keeping only
// features of ReadOptions::feature_type ("Gene Expression" = scanpy's gex_only=True).
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "core/io/detail/hdf5.hpp"
#include "core/io/detail/input_checks.hpp"
#include "core/io/detail/sort_rows.hpp"
#include "core/io/readers.hpp"
#include "core/memory/first_touch.hpp"

namespace fathom::io {

namespace {

/// Entries per HDF5 read when streaming indices / data / indptr: bounds the temporary
/// memory of a read to about 50 MiB whatever the row range.
constexpr std::int64_t block_entries = std::int64_t{1} << 22;

/// What every source over one matrix group shares (immutable after open).
struct TenxMatrix {
    std::string path;
    std::string group;                   ///< "/matrix" (v3) or "/<genome>" (v2)
    std::int64_t num_cells = 0;          ///< barcodes
    std::int64_t num_features = 0;       ///< stored features
    std::int64_t stored_nnz = 0;         ///< length of data and indices
    std::vector<std::int32_t> gene_map;  ///< stored feature -> kept gene index or -1; empty = all kept
    std::int64_t num_genes = 0;          ///< kept features
    std::int64_t nnz = 0;                ///< entries of kept features

    std::string object(const char* name) const { return group + "/" + name; }
};

std::string number_text(float value) {
    std::ostringstream out;
    out << value;
    return out.str();
}

std::string join_names(const std::vector<std::string>& names) {
    std::string joined;
    for (const auto& name : names) joined += (joined.empty() ? "" : ", ") + name;
    return joined;
}

/// Checks that `object` is a 1-D dataset of `expected` elements; `why` explains the
/// expectation in the message ("one per barcode").
h5::Info expect_vector(const h5::File& file, const std::string& object, std::int64_t expected, const std::string& why) {
    const h5::Info info = file.dataset_info(object);
    if (info.dims.size() != 1) file.fail(object, "expected a 1-D dataset, found rank " + std::to_string(info.dims.size()));
    if (expected >= 0 && info.dims[0] != expected)
        file.fail(object, "has " + std::to_string(info.dims[0]) + " entries; expected " + std::to_string(expected) + " (" +
                              why + ")");
    return info;
}

void expect_integer(const h5::File& file, const std::string& object, const h5::Info& info) {
    if (info.type_class != h5::TypeClass::Integer) file.fail(object, "expected an integer dataset");
}

/// Streams indptr in blocks: starts at 0, never decreases, ends at stored_nnz.
void validate_indptr(const h5::File& file, const TenxMatrix& matrix) {
    const std::string object = matrix.object("indptr");
    const std::int64_t total = matrix.num_cells + 1;
    std::int64_t previous = 0;
    for (std::int64_t offset = 0; offset < total; offset += block_entries) {
        const auto count = std::min(block_entries, total - offset);
        const auto values = file.read<std::int64_t>(object, offset, count);
        for (std::int64_t index = 0; index < count; ++index) {
            const auto value = values[static_cast<std::size_t>(index)];
            const auto position = offset + index;
            if (position == 0 && value != 0) file.fail(object, "starts at " + std::to_string(value) + "; expected 0");
            if (value < previous)
                file.fail(object, "not monotonic: entry " + std::to_string(position) + " is " + std::to_string(value) +
                                      " after " + std::to_string(previous));
            previous = value;
        }
    }
    if (previous != matrix.stored_nnz)
        file.fail(object, "ends at " + std::to_string(previous) + " but " + matrix.object("data") + " has " +
                              std::to_string(matrix.stored_nnz) + " entries");
}

[[noreturn]] void fail_feature_index(const h5::File& file, const TenxMatrix& matrix, std::int64_t position,
                                     std::int64_t feature) {
    file.fail(matrix.object("indices"), "entry " + std::to_string(position) + " holds feature index " +
                                            std::to_string(feature) + " outside 0.." +
                                            std::to_string(matrix.num_features - 1));
}

/// Kept entries per row for rows [begin, end) given their stored indptr slice, by
/// streaming the indices (never the values). Used when a feature selection drops features.
std::vector<std::int64_t> filtered_row_offsets(const h5::File& file, const TenxMatrix& matrix,
                                               const std::vector<std::int64_t>& indptr) {
    std::vector<std::int64_t> offsets(indptr.size(), 0);
    const std::int64_t first = indptr.front(), last = indptr.back();
    std::size_t row = 0;
    std::int64_t kept = 0;
    for (std::int64_t offset = first; offset < last; offset += block_entries) {
        const auto count = std::min(block_entries, last - offset);
        const auto indices = file.read<std::int64_t>(matrix.object("indices"), offset, count);
        for (std::int64_t index = 0; index < count; ++index) {
            const std::int64_t position = offset + index;
            while (position >= indptr[row + 1]) offsets[++row] = kept;
            const auto feature = indices[static_cast<std::size_t>(index)];
            if (feature < 0 || feature >= matrix.num_features) fail_feature_index(file, matrix, position, feature);
            if (matrix.gene_map[static_cast<std::size_t>(feature)] >= 0) ++kept;
        }
    }
    while (row + 1 < offsets.size()) offsets[++row] = kept;
    return offsets;
}

/// RowSource over one 10x matrix group: each read_rows reads the indptr hyperslab of
/// its rows and then only those rows' entries, in bounded blocks.
class TenxH5Source final : public RowSource {
public:
    explicit TenxH5Source(std::shared_ptr<const TenxMatrix> matrix)
        : m_matrix(std::move(matrix)), m_file(h5::File::open_read(m_matrix->path)) {}

    MatrixShape shape() const override { return {m_matrix->num_cells, m_matrix->num_genes}; }
    std::int64_t nnz() const override { return m_matrix->nnz; }

    CsrShard read_rows(std::int64_t begin, std::int64_t end) override;
    void append_rows(std::int64_t begin, std::int64_t end, CsrShard& rows) override;

    std::vector<std::int64_t> row_offsets() override {
        auto indptr = read_indptr(0, m_matrix->num_cells);
        if (m_matrix->gene_map.empty()) return indptr;
        return filtered_row_offsets(m_file, *m_matrix, indptr);
    }

    std::unique_ptr<RowSource> clone() const override { return std::make_unique<TenxH5Source>(m_matrix); }
    void set_read_once(bool on) override { m_file.set_read_once(on); }

private:
    /// indptr[begin .. end] (end - begin + 1 entries), checked against the stored size.
    std::vector<std::int64_t> read_indptr(std::int64_t begin, std::int64_t end) const {
        const std::string object = m_matrix->object("indptr");
        auto indptr = m_file.read<std::int64_t>(object, begin, end - begin + 1);
        for (std::size_t index = 0; index < indptr.size(); ++index) {
            if (indptr[index] < 0 || indptr[index] > m_matrix->stored_nnz || (index > 0 && indptr[index] < indptr[index - 1]))
                m_file.fail(object, "entry " + std::to_string(begin + static_cast<std::int64_t>(index)) + " (" +
                                        std::to_string(indptr[index]) + ") breaks 0 <= indptr[i] <= indptr[i+1] <= " +
                                        std::to_string(m_matrix->stored_nnz));
        }
        return indptr;
    }

    std::shared_ptr<const TenxMatrix> m_matrix;
    h5::File m_file;
    std::vector<std::int64_t> m_indices;  ///< one block of stored indices, reused across reads
};

CsrShard TenxH5Source::read_rows(std::int64_t begin, std::int64_t end) {
    CsrShard shard;
    shard.row_begin = begin;
    shard.num_genes = m_matrix->num_genes;
    append_rows(begin, end, shard);
    return shard;
}

void TenxH5Source::append_rows(std::int64_t begin, std::int64_t end, CsrShard& shard) {
    const TenxMatrix& matrix = *m_matrix;
    if (begin < 0 || end < begin || end > matrix.num_cells)
        throw std::out_of_range("TenxH5Source::read_rows: [" + std::to_string(begin) + ", " + std::to_string(end) +
                                ") outside the matrix's " + std::to_string(matrix.num_cells) + " rows");
    if (shard.num_rows() == 0) shard.row_begin = begin;
    if (shard.row_end() != begin)
        throw std::logic_error("TenxH5Source::append_rows: rows from " + std::to_string(begin) + " appended after row " +
                               std::to_string(shard.row_end()));
    shard.num_genes = matrix.num_genes;
    const std::int64_t first_row = shard.num_rows();
    const auto num_rows = static_cast<std::size_t>(end - begin);
    if (num_rows == 0) return;

    const auto indptr = read_indptr(begin, end);
    const std::int64_t first = indptr.front(), last = indptr.back();
    const std::int64_t base = shard.nnz();
    if (matrix.gene_map.empty()) {
        // Every feature kept: each entry's place is known from indptr, so the values are
        // decoded straight into the shard and the indices checked and narrowed in parallel.
        for (std::size_t row = 1; row <= num_rows; ++row) shard.row_offsets.push_back(base + indptr[row] - first);
        // The pages first touched by every thread (core/memory/first_touch.hpp).
        resize_touched_in_parallel(shard.gene_indices, static_cast<std::size_t>(base + last - first));
        resize_touched_in_parallel(shard.values, static_cast<std::size_t>(base + last - first));
        for (std::int64_t offset = first; offset < last; offset += block_entries) {
            const auto count = std::min(block_entries, last - offset);
            m_indices.resize(static_cast<std::size_t>(count));
            m_file.read_to<std::int64_t>(matrix.object("indices"), offset, count, m_indices.data());
            float* values = shard.values.data() + (base + offset - first);
            m_file.read_to<float>(matrix.object("data"), offset, count, values);
            std::int32_t* genes = shard.gene_indices.data() + (base + offset - first);
            const std::int64_t num_features = matrix.num_features;
            // The first bad entry of the block (index in the block), as a serial scan finds it.
            std::atomic<std::int64_t> first_bad{count};
            tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, count, 1 << 16), [&](const auto& range) {
                for (std::int64_t index = range.begin(); index < range.end(); ++index) {
                    const std::int64_t feature = m_indices[static_cast<std::size_t>(index)];
                    const float value = values[index];
                    // 10x matrices hold UMI counts: a NaN, infinite or negative count is corruption.
                    if (feature < 0 || feature >= num_features || !(value >= 0.0f) || value == std::numeric_limits<float>::infinity()) {
                        std::int64_t seen = first_bad.load();
                        while (index < seen && !first_bad.compare_exchange_weak(seen, index)) {
                        }
                        return;
                    }
                    genes[index] = static_cast<std::int32_t>(feature);
                }
            });
            if (const std::int64_t index = first_bad.load(); index < count) {
                const std::int64_t position = offset + index;
                const std::int64_t feature = m_indices[static_cast<std::size_t>(index)];
                const float value = values[index];
                if (feature < 0 || feature >= num_features) fail_feature_index(m_file, matrix, position, feature);
                if (!std::isfinite(value))
                    m_file.fail(matrix.object("data"), "entry " + std::to_string(position) + " is not finite (" +
                                                           number_text(value) + ")");
                m_file.fail(matrix.object("data"), "entry " + std::to_string(position) + " is negative (" +
                                                       number_text(value) + "); 10x matrices hold counts");
            }
        }
    } else {
        // A feature selection: entries are dropped, so they are appended in order.
        std::size_t row = 0;
        shard.row_offsets.resize(static_cast<std::size_t>(first_row) + num_rows + 1, base);
        auto* offsets = shard.row_offsets.data() + first_row;
        for (std::int64_t offset = first; offset < last; offset += block_entries) {
            const auto count = std::min(block_entries, last - offset);
            const auto indices = m_file.read<std::int64_t>(matrix.object("indices"), offset, count);
            const auto values = m_file.read<float>(matrix.object("data"), offset, count);
            for (std::int64_t index = 0; index < count; ++index) {
                const std::int64_t position = offset + index;
                while (position >= indptr[row + 1]) offsets[++row] = static_cast<std::int64_t>(shard.values.size());
                const auto feature = indices[static_cast<std::size_t>(index)];
                if (feature < 0 || feature >= matrix.num_features) fail_feature_index(m_file, matrix, position, feature);
                const float value = values[static_cast<std::size_t>(index)];
                if (!std::isfinite(value))
                    m_file.fail(matrix.object("data"), "entry " + std::to_string(position) + " is not finite (" +
                                                           number_text(value) + ")");
                if (value < 0.0f)
                    m_file.fail(matrix.object("data"), "entry " + std::to_string(position) + " is negative (" +
                                                           number_text(value) + "); 10x matrices hold counts");
                const std::int32_t gene = matrix.gene_map[static_cast<std::size_t>(feature)];
                if (gene < 0) continue;
                shard.gene_indices.push_back(gene);
                shard.values.push_back(value);
            }
        }
        while (row < num_rows) offsets[++row] = static_cast<std::int64_t>(shard.values.size());
    }

    if (const auto duplicate = detail::sort_rows_parallel(shard, first_row)) {
        // Report the stored feature index (before any feature selection).
        std::int64_t stored_feature = duplicate->gene;
        if (!matrix.gene_map.empty()) {
            const auto& map = matrix.gene_map;
            stored_feature = std::find(map.begin(), map.end(), duplicate->gene) - map.begin();
        }
        m_file.fail(matrix.object("indices"), "barcode " + std::to_string(shard.row_begin + duplicate->row) +
                                                  " lists feature index " + std::to_string(stored_feature) + " twice");
    }
}

ValueType value_type_of(const h5::Info& info) {
    if (info.type_class == h5::TypeClass::Float) return info.type_size == 4 ? ValueType::Float32 : ValueType::Float64;
    if (info.type_class == h5::TypeClass::Integer && info.is_signed) {
        if (info.type_size == 4) return ValueType::Int32;
        if (info.type_size == 8) return ValueType::Int64;
    }
    return ValueType::Other;
}

/// The matrix group to read: "/matrix" for v3, the chosen genome group for v2.
std::string choose_group(const h5::File& file, bool v3, const ReadOptions& options) {
    if (v3) return "/matrix";
    // CellRanger v2 (scanpy 1.9 `_read_legacy_10x_h5`): one group per genome.
    std::vector<std::string> genomes;
    for (const auto& member : file.members("/"))
        if (file.is_group("/" + member) && file.exists("/" + member + "/indptr")) genomes.push_back(member);
    if (genomes.empty()) file.fail("/", "no /matrix group and no genome group holding indptr: not a 10x HDF5 file");
    if (options.genome.empty()) {
        if (genomes.size() > 1)
            file.fail("/", "holds " + std::to_string(genomes.size()) + " genomes (" + join_names(genomes) +
                               "); choose one with ReadOptions::genome (fathom-cli --genome)");
        return "/" + genomes.front();
    }
    if (std::find(genomes.begin(), genomes.end(), options.genome) == genomes.end())
        file.fail("/" + options.genome, "no such genome group; the file holds: " + join_names(genomes));
    return "/" + options.genome;
}

}  // namespace

OpenedDataset open_10x_h5(const std::string& path, const ReadOptions& options) {
    const h5::File file = h5::File::open_read(path);
    const bool v3 = file.is_group("/matrix");
    auto matrix = std::make_shared<TenxMatrix>();
    matrix->path = path;
    matrix->group = choose_group(file, v3, options);

    // Sizes first, checked against each other before anything large is read.
    const std::string shape_object = matrix->object("shape");
    const h5::Info shape_info = expect_vector(file, shape_object, 2, "features, barcodes");
    expect_integer(file, shape_object, shape_info);
    const auto stored_shape = file.read_all<std::int64_t>(shape_object);
    if (stored_shape[0] < 0 || stored_shape[1] < 0) file.fail(shape_object, "holds a negative size");
    if (stored_shape[0] > std::numeric_limits<std::int32_t>::max())
        file.fail(shape_object, std::to_string(stored_shape[0]) + " features exceed the 2^31 - 1 supported");
    matrix->num_features = stored_shape[0];
    matrix->num_cells = stored_shape[1];
    if (matrix->num_cells == 0 || matrix->num_features == 0)
        file.fail(shape_object, "empty matrix: " + std::to_string(matrix->num_cells) + " cells x " +
                                    std::to_string(matrix->num_features) + " features");
    detail::check_declared_size(path, shape_object,
                                std::to_string(matrix->num_cells) + " cells x " + std::to_string(matrix->num_features) + " genes",
                                static_cast<std::uint64_t>(matrix->num_cells) + 1, 8);
    const std::string shape_text = "one per barcode; " + shape_object + " = [" + std::to_string(matrix->num_features) +
                                   ", " + std::to_string(matrix->num_cells) + "]";

    const h5::Info data_info = expect_vector(file, matrix->object("data"), -1, "");
    if (data_info.type_class != h5::TypeClass::Integer && data_info.type_class != h5::TypeClass::Float)
        file.fail(matrix->object("data"), "expected a numeric dataset");
    matrix->stored_nnz = data_info.dims[0];
    expect_integer(file, matrix->object("indices"),
                   expect_vector(file, matrix->object("indices"), matrix->stored_nnz,
                                 "one per stored value, as " + matrix->object("data")));
    expect_integer(file, matrix->object("indptr"),
                   expect_vector(file, matrix->object("indptr"), matrix->num_cells + 1,
                                 "number of barcodes + 1; " + shape_object + " = [" +
                                     std::to_string(matrix->num_features) + ", " + std::to_string(matrix->num_cells) + "]"));
    expect_vector(file, matrix->object("barcodes"), matrix->num_cells, shape_text);

    const std::string feature_text = "one per feature; " + shape_object + " = [" +
                                     std::to_string(matrix->num_features) + ", " + std::to_string(matrix->num_cells) + "]";
    const std::string names_object = v3 ? matrix->object("features/name") : matrix->object("gene_names");
    const std::string ids_object = v3 ? matrix->object("features/id") : matrix->object("genes");
    const std::string types_object = matrix->object("features/feature_type");
    const std::string genome_object = matrix->object("features/genome");
    expect_vector(file, names_object, matrix->num_features, feature_text);
    expect_vector(file, ids_object, matrix->num_features, feature_text);
    const bool has_genome = v3 && file.is_dataset(genome_object);
    if (v3) expect_vector(file, types_object, matrix->num_features, feature_text);
    if (has_genome) expect_vector(file, genome_object, matrix->num_features, feature_text);

    validate_indptr(file, *matrix);

    auto names = file.read_strings(names_object);
    auto ids = file.read_strings(ids_object);
    std::vector<std::string> types, genomes;
    if (v3) types = file.read_strings(types_object);
    if (has_genome) genomes = file.read_strings(genome_object);

    // Feature selection as scanpy's read_10x_h5: gex_only keeps feature_type ==
    // "Gene Expression"; genome= keeps var['genome'] == genome (v3 only; v2 picks the group).
    std::vector<std::uint8_t> keep(static_cast<std::size_t>(matrix->num_features), 1);
    if (v3 && !options.feature_type.empty()) {
        for (std::size_t feature = 0; feature < keep.size(); ++feature)
            keep[feature] = keep[feature] && types[feature] == options.feature_type;
        if (matrix->num_features > 0 && std::none_of(keep.begin(), keep.end(), [](auto kept) { return kept != 0; })) {
            std::vector<std::string> present(types);
            std::sort(present.begin(), present.end());
            present.erase(std::unique(present.begin(), present.end()), present.end());
            file.fail(types_object, "no feature of type '" + options.feature_type + "' (types present: " +
                                        join_names(present) + "); keep all with ReadOptions::feature_type = \"\"");
        }
    }
    if (v3 && !options.genome.empty()) {
        if (!has_genome) file.fail(genome_object, "missing, so ReadOptions::genome cannot select features");
        if (std::find(genomes.begin(), genomes.end(), options.genome) == genomes.end()) {
            std::vector<std::string> present(genomes);
            std::sort(present.begin(), present.end());
            present.erase(std::unique(present.begin(), present.end()), present.end());
            file.fail(genome_object, "no feature of genome '" + options.genome + "'; genomes present: " + join_names(present));
        }
        for (std::size_t feature = 0; feature < keep.size(); ++feature)
            keep[feature] = keep[feature] && genomes[feature] == options.genome;
    }
    std::vector<std::int64_t> kept_features;
    for (std::size_t feature = 0; feature < keep.size(); ++feature)
        if (keep[feature]) kept_features.push_back(static_cast<std::int64_t>(feature));
    matrix->num_genes = static_cast<std::int64_t>(kept_features.size());
    if (matrix->num_genes < matrix->num_features) {
        matrix->gene_map.assign(keep.size(), -1);
        for (std::size_t gene = 0; gene < kept_features.size(); ++gene)
            matrix->gene_map[static_cast<std::size_t>(kept_features[gene])] = static_cast<std::int32_t>(gene);
        // nnz of the kept features needs one pass over the indices (not the values).
        std::vector<std::int64_t> bounds{0, matrix->stored_nnz};
        matrix->nnz = filtered_row_offsets(file, *matrix, bounds).back();
    } else {
        matrix->nnz = matrix->stored_nnz;
    }

    auto take = [&](std::vector<std::string>& all) {
        if (matrix->num_genes == matrix->num_features) return std::move(all);
        std::vector<std::string> kept;
        kept.reserve(kept_features.size());
        for (auto feature : kept_features) kept.push_back(std::move(all[static_cast<std::size_t>(feature)]));
        return kept;
    };

    OpenedDataset opened;
    Dataset& meta = opened.meta;
    meta.path = path;
    meta.format = v3 ? DatasetFormat::TenxH5V3 : DatasetFormat::TenxH5V2;
    meta.shape = {matrix->num_cells, matrix->num_genes};
    meta.nnz = matrix->nnz;
    meta.stored_type = value_type_of(data_info);
    // Integer-typed counts are non-negative integers by construction: read_rows rejects
    // negative values. Float-typed data (Space Ranger 1.0 writes float64) are not scanned here.
    meta.integer_counts_known = data_info.type_class == h5::TypeClass::Integer;
    meta.integer_counts = meta.integer_counts_known;
    meta.matrix_layout = "csr";  // features x barcodes CSC on disk == cells x genes CSR
    meta.matrix_name = matrix->group;
    meta.obs = Table(file.read_strings(matrix->object("barcodes")));
    meta.var = Table(take(names));
    meta.var.set("gene_ids", StringColumn{take(ids)});
    if (v3) meta.var.set("feature_types", StringColumn{take(types)});
    if (has_genome) meta.var.set("genome", StringColumn{take(genomes)});

    opened.source = std::make_unique<TenxH5Source>(std::move(matrix));
    return opened;
}

}  // namespace fathom::io
