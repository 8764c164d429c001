#include "core/io/tenx_h5_writer.hpp"

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "core/types/JobContext.hpp"
#include "core/io/detail/CsrAppender.hpp"
#include "core/types/atomic_file.hpp"
#include "core/io/detail/hdf5_write.hpp"

namespace fathom::io {

void validate(const TenxH5WriteOptions& options) {
    if (options.gzip_level < 0 || options.gzip_level > 9)
        throw std::invalid_argument("TenxH5WriteOptions::gzip_level must be in [0, 9], got " +
                                    std::to_string(options.gzip_level));
    if (options.chunk_elements < 1)
        throw std::invalid_argument("TenxH5WriteOptions::chunk_elements must be >= 1");
    if (options.rows_per_block < 1)
        throw std::invalid_argument("TenxH5WriteOptions::rows_per_block must be >= 1");
}

struct TenxH5Writer::Impl {
    AtomicFile output;
    TenxFeatures features;
    TenxH5WriteOptions options;
    std::optional<h5::File> file;
    std::optional<CsrAppender> matrix;
    std::optional<h5::AppendableDataset> barcodes;

    Impl(std::string path, TenxFeatures features_, const TenxH5WriteOptions& options_)
        : output(std::move(path)), features(std::move(features_)), options(options_) {}
    void run(const std::function<void()>& body) {
        output.run(body, [this] {
            barcodes.reset();
            matrix.reset();
            file.reset();
        });
    }
};

TenxH5Writer::TenxH5Writer(std::string path, TenxFeatures features, std::size_t barcode_width,
                           const TenxH5WriteOptions& options) {
    validate(options);
    const auto num_genes = features.size();
    if (static_cast<std::int64_t>(features.ids.size()) != num_genes ||
        static_cast<std::int64_t>(features.feature_types.size()) != num_genes ||
        static_cast<std::int64_t>(features.genomes.size()) != num_genes)
        throw std::invalid_argument("TenxFeatures: ids, names, feature_types and genomes must have equal lengths");
    if (num_genes > 2147483647LL) throw std::invalid_argument("10x HDF5 shape is int32: at most 2^31 - 1 genes");
    if (barcode_width < 1) throw std::invalid_argument("TenxH5Writer: barcode_width must be >= 1");
    m_impl = std::make_unique<Impl>(std::move(path), std::move(features), options);
    Impl& impl = *m_impl;
    impl.run([&] {
        impl.file.emplace(h5::File::create(impl.output.temp_path()));
        const h5::File& file = *impl.file;
        file.create_group("/matrix");
        CsrAppenderOptions appender;
        appender.values = CsrAppenderOptions::Values::Int32;
        appender.indices = options.int64_indices ? CsrAppenderOptions::Indices::Int64 : CsrAppenderOptions::Indices::Int32;
        appender.layout.chunk_elements = options.chunk_elements;
        appender.layout.gzip_level = options.gzip_level;
        appender.layout.shuffle = true;  // CellRanger: shuffle + gzip
        appender.layout.chunks_per_batch = 16;
        impl.matrix.emplace(file, "/matrix", num_genes, appender);
        h5::AppendOptions strings;
        strings.chunk_elements = std::max<std::int64_t>(1, options.chunk_elements / 4);
        strings.gzip_level = options.gzip_level;
        strings.chunks_per_batch = 1;
        impl.barcodes.emplace(h5::AppendableDataset::create_fixed_strings(file, "/matrix/barcodes", barcode_width, strings));
    });
}

TenxH5Writer::~TenxH5Writer() = default;

std::int64_t TenxH5Writer::cells_written() const noexcept {
    return m_impl->matrix ? m_impl->matrix->rows_written() : 0;
}
std::int64_t TenxH5Writer::nnz_written() const noexcept { return m_impl->matrix ? m_impl->matrix->nnz() : 0; }

void TenxH5Writer::append_cells(const CsrShard& cells, const std::vector<std::string>& barcodes) {
    Impl& impl = *m_impl;
    impl.run([&] {
        if (!impl.matrix) throw std::logic_error("append_cells after a failure or commit");
        if (static_cast<std::int64_t>(barcodes.size()) != cells.num_rows())
            throw std::logic_error(std::to_string(barcodes.size()) + " barcodes for " +
                                   std::to_string(cells.num_rows()) + " cells");
        if (impl.matrix->rows_written() + cells.num_rows() > 2147483647LL)
            throw std::logic_error("10x HDF5 shape is int32: at most 2^31 - 1 cells");
        impl.matrix->append(cells);
        impl.barcodes->append_strings(barcodes);
    });
}

void TenxH5Writer::commit() {
    Impl& impl = *m_impl;
    impl.run([&] {
        if (!impl.matrix) throw std::logic_error("commit after a failure or commit");
        const h5::File& file = *impl.file;
        const std::int64_t num_cells = impl.matrix->rows_written();
        impl.matrix->finish();
        impl.barcodes->finish();
        const std::vector<std::int32_t> shape{static_cast<std::int32_t>(impl.features.size()),
                                              static_cast<std::int32_t>(num_cells)};
        h5::write_array<std::int32_t>(file, "/matrix/shape", {2}, shape.data(), impl.options.gzip_level);
        file.create_group("/matrix/features");
        const int gzip = impl.options.gzip_level;
        h5::write_fixed_strings(file, "/matrix/features/id", impl.features.ids, gzip);
        h5::write_fixed_strings(file, "/matrix/features/name", impl.features.names, gzip);
        h5::write_fixed_strings(file, "/matrix/features/feature_type", impl.features.feature_types, gzip);
        h5::write_fixed_strings(file, "/matrix/features/genome", impl.features.genomes, gzip);
        h5::write_fixed_strings(file, "/matrix/features/_all_tag_keys", {"genome"}, 0);
        // CellRanger 3 root attributes.
        file.write_attribute("/", "filetype", std::string("matrix"));
        h5::write_scalar_attribute<std::int64_t>(file, "/", "version", 2);
        file.write_attribute("/", "chemistry_description", impl.options.chemistry_description);
        h5::write_fixed_string_attribute(file, "/", "library_ids", {impl.options.library_id});
        file.write_attribute<std::int64_t>("/", "original_gem_groups", std::vector<std::int64_t>{1});
        impl.barcodes.reset();
        impl.matrix.reset();
        impl.file->close();
        impl.file.reset();
    });
    impl.output.commit();
}

namespace {

// A string view of a string or categorical column; nullopt when absent or of another type.
std::optional<std::vector<std::string>> string_column(const Table& table, const std::string& name) {
    const Column* column = table.find(name);
    if (!column) return std::nullopt;
    if (const auto* strings = std::get_if<StringColumn>(&column->data)) return strings->values;
    if (const auto* categorical = std::get_if<CategoricalColumn>(&column->data)) {
        std::vector<std::string> values;
        values.reserve(categorical->codes.size());
        for (auto code : categorical->codes)
            values.push_back(code < 0 ? std::string() : categorical->categories[static_cast<std::size_t>(code)]);
        return values;
    }
    return std::nullopt;
}

}  // namespace

void write_10x_h5(const std::string& path, const Dataset& meta, RowSource& matrix, const TenxH5WriteOptions& options) {
    validate(options);
    const MatrixShape shape = matrix.shape();
    if (meta.var.num_rows() != shape.num_genes)
        throw std::invalid_argument("var has " + std::to_string(meta.var.num_rows()) + " rows; the matrix has " +
                                    std::to_string(shape.num_genes) + " genes");
    if (meta.obs.num_rows() != shape.num_cells)
        throw std::invalid_argument("obs has " + std::to_string(meta.obs.num_rows()) + " rows; the matrix has " +
                                    std::to_string(shape.num_cells) + " cells");
    TenxFeatures features;
    features.names = meta.var.index();
    features.ids = string_column(meta.var, "gene_ids").value_or(features.names);
    features.feature_types = string_column(meta.var, "feature_types")
                                 .value_or(std::vector<std::string>(features.names.size(), "Gene Expression"));
    features.genomes = string_column(meta.var, "genome").value_or(std::vector<std::string>(features.names.size()));
    std::size_t width = 1;
    for (const auto& barcode : meta.obs.index()) width = std::max(width, barcode.size());

    TenxH5Writer writer(path, std::move(features), width, options);
    const auto& all_barcodes = meta.obs.index();
    for (std::int64_t begin = 0; begin < shape.num_cells; begin += options.rows_per_block) {
        const std::int64_t end = std::min(shape.num_cells, begin + options.rows_per_block);
        CsrShard cells;
        try {
            cells = matrix.read_rows(begin, end);
        } catch (const FormatError&) {
            throw;
        } catch (const ReadError&) {
            throw;
        } catch (const Cancelled&) {
            throw;
        } catch (const std::exception& error) {
            throw WriteError(path, "reading cells [" + std::to_string(begin) + ", " + std::to_string(end) +
                                       ") of the matrix failed: " + error.what());
        }
        std::vector<std::string> barcodes(all_barcodes.begin() + begin, all_barcodes.begin() + end);
        writer.append_cells(cells, barcodes);
    }
    writer.commit();
}

}  // namespace fathom::io
