#include <algorithm>
#include "core/io/csv_writer.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <fstream>
#include <stdexcept>

#include "core/io/detail/atomic_output.hpp"
#include "core/io/errors.hpp"

namespace fathom::io {

namespace {

template <typename T>
std::string shortest(T value) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    std::array<char, 64> buffer{};
    const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
    return std::string(buffer.data(), result.ptr);
}

}  // namespace

std::string csv_field(const std::string& text) {
    const bool quote = text.find_first_of(",\"\r\n") != std::string::npos ||
                       (!text.empty() && (text.front() == ' ' || text.back() == ' '));
    if (!quote) return text;
    std::string out = "\"";
    for (char c : text) {
        if (c == '"') out += '"';
        out += c;
    }
    out += '"';
    return out;
}

std::string csv_number(float value) { return shortest(value); }
std::string csv_number(double value) { return shortest(value); }

void write_text_file(const std::string& path, const std::function<void(std::ostream&)>& body) {
    detail::AtomicOutput output(path);
    std::ofstream stream;
    output.run(
        [&] {
            stream.open(output.temp_path(), std::ios::binary | std::ios::trunc);
            if (!stream) throw WriteError(path, "cannot create the temporary file " + output.temp_path());
            body(stream);
            stream.close();
            if (!stream) throw WriteError(path, "write failed (disk full?)");
        },
        [&] { stream.close(); });
    output.commit();
}

void write_csv(const std::string& path, const std::vector<std::string>& header, std::int64_t num_rows,
               const std::function<void(std::int64_t row, std::vector<std::string>& fields)>& fill_row) {
    write_text_file(path, [&](std::ostream& stream) {
        const auto write_line = [&](const std::vector<std::string>& fields) {
            for (std::size_t index = 0; index < fields.size(); ++index) {
                if (index > 0) stream << ',';
                stream << csv_field(fields[index]);
            }
            stream << '\n';
        };
        write_line(header);
        std::vector<std::string> fields;
        for (std::int64_t row = 0; row < num_rows; ++row) {
            fields.clear();
            fill_row(row, fields);
            write_line(fields);
        }
    });
}

void write_projection_csv(const std::string& path, const std::vector<std::string>& barcodes,
                          const DenseMatrix<float>& coordinates, const std::string& axis, std::int64_t num_columns) {
    if (coordinates.rows() != static_cast<std::int64_t>(barcodes.size()))
        throw std::invalid_argument(path + ": the projection has " + std::to_string(coordinates.rows()) +
                                    " rows for " + std::to_string(barcodes.size()) + " barcodes");
    if (coordinates.cols() < 2)
        throw std::invalid_argument(path + ": the projection has " + std::to_string(coordinates.cols()) +
                                    " column(s); two are needed");
    const std::int64_t columns = std::clamp<std::int64_t>(num_columns, 2, coordinates.cols());
    std::vector<std::string> header{"Barcode"};
    for (std::int64_t column = 0; column < columns; ++column) header.push_back(axis + "-" + std::to_string(column + 1));
    write_csv(path, header, coordinates.rows(), [&](std::int64_t cell, std::vector<std::string>& fields) {
        fields.push_back(barcodes[static_cast<std::size_t>(cell)]);
        for (std::int64_t column = 0; column < columns; ++column) fields.push_back(csv_number(coordinates(cell, column)));
    });
}

void write_category_csv(const std::string& path, const std::vector<std::string>& barcodes, const std::string& name,
                        const CategoricalColumn& column) {
    if (column.codes.size() != barcodes.size())
        throw std::invalid_argument(path + ": column '" + name + "' has " + std::to_string(column.codes.size()) +
                                    " codes for " + std::to_string(barcodes.size()) + " barcodes");
    const auto num_categories = static_cast<std::int32_t>(column.categories.size());
    for (std::int32_t code : column.codes)
        if (code < -1 || code >= num_categories)
            throw std::invalid_argument(path + ": column '" + name + "' has code " + std::to_string(code) +
                                        " outside [-1, " + std::to_string(num_categories) + ")");
    write_csv(path, {"Barcode", name}, static_cast<std::int64_t>(barcodes.size()),
              [&](std::int64_t cell, std::vector<std::string>& fields) {
                  const std::int32_t code = column.codes[static_cast<std::size_t>(cell)];
                  fields.push_back(barcodes[static_cast<std::size_t>(cell)]);
                  fields.push_back(code < 0 ? std::string() : column.categories[static_cast<std::size_t>(code)]);
              });
}

}  // namespace fathom::io
