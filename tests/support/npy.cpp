#include "tests/support/npy.hpp"

#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace fathom::test {

namespace {

std::string header_field(const std::string& header, const std::string& key) {
    const auto at = header.find("'" + key + "'");
    if (at == std::string::npos) return {};
    auto start = header.find(':', at) + 1;
    while (header[start] == ' ') ++start;
    if (header[start] == '\'') {
        const auto end = header.find('\'', start + 1);
        return header.substr(start + 1, end - start - 1);
    }
    if (header[start] == '(') return header.substr(start, header.find(')', start) - start + 1);
    const auto end = header.find_first_of(",}", start);
    return header.substr(start, end - start);
}

template <typename T>
void append_numbers(const std::vector<char>& raw, std::vector<double>& out) {
    const std::size_t count = raw.size() / sizeof(T);
    out.resize(count);
    for (std::size_t index = 0; index < count; ++index) {
        T value;
        std::memcpy(&value, raw.data() + index * sizeof(T), sizeof(T));
        out[index] = static_cast<double>(value);
    }
}

}  // namespace

NpyArray read_npy(const std::filesystem::path& path) {
    std::ifstream stream(path, std::ios::binary);
    if (!stream) throw std::runtime_error(path.string() + ": cannot open");
    char magic[8];
    stream.read(magic, 8);
    if (!stream || std::memcmp(magic, "\x93NUMPY", 6) != 0) throw std::runtime_error(path.string() + ": not .npy");
    std::uint32_t header_length = 0;
    if (magic[6] == 1) {
        std::uint16_t short_length = 0;
        stream.read(reinterpret_cast<char*>(&short_length), 2);
        header_length = short_length;
    } else {
        stream.read(reinterpret_cast<char*>(&header_length), 4);
    }
    std::string header(header_length, '\0');
    stream.read(header.data(), header_length);
    NpyArray array;
    array.descr = header_field(header, "descr");
    const bool fortran_order = header_field(header, "fortran_order") == "True";
    const std::string shape = header_field(header, "shape");
    std::int64_t total = 1;
    for (std::size_t position = 1; position < shape.size();) {
        const auto end = shape.find_first_of(",)", position);
        const std::string token = shape.substr(position, end - position);
        if (token.find_first_not_of(' ') != std::string::npos) {
            array.shape.push_back(std::stoll(token));
            total *= array.shape.back();
        }
        position = end + 1;
    }
    std::vector<char> raw((std::istreambuf_iterator<char>(stream)), std::istreambuf_iterator<char>());
    const std::string& d = array.descr;
    if (d == "<f4") append_numbers<float>(raw, array.numbers);
    else if (d == "<f8") append_numbers<double>(raw, array.numbers);
    else if (d == "<i4") append_numbers<std::int32_t>(raw, array.numbers);
    else if (d == "<i8") append_numbers<std::int64_t>(raw, array.numbers);
    else if (d == "|b1" || d == "|u1") append_numbers<std::uint8_t>(raw, array.numbers);
    else if (d.rfind("<U", 0) == 0) {
        const std::size_t width = std::stoul(d.substr(2));
        array.strings.resize(static_cast<std::size_t>(total));
        for (std::int64_t item = 0; item < total; ++item) {
            std::string text;
            for (std::size_t ch = 0; ch < width; ++ch) {
                std::uint32_t code;
                std::memcpy(&code, raw.data() + (static_cast<std::size_t>(item) * width + ch) * 4, 4);
                if (code == 0) break;
                // UTF-8 encode.
                if (code < 0x80) text += static_cast<char>(code);
                else if (code < 0x800) { text += static_cast<char>(0xC0 | (code >> 6)); text += static_cast<char>(0x80 | (code & 0x3F)); }
                else if (code < 0x10000) { text += static_cast<char>(0xE0 | (code >> 12)); text += static_cast<char>(0x80 | ((code >> 6) & 0x3F)); text += static_cast<char>(0x80 | (code & 0x3F)); }
                else { text += static_cast<char>(0xF0 | (code >> 18)); text += static_cast<char>(0x80 | ((code >> 12) & 0x3F)); text += static_cast<char>(0x80 | ((code >> 6) & 0x3F)); text += static_cast<char>(0x80 | (code & 0x3F)); }
            }
            array.strings[static_cast<std::size_t>(item)] = std::move(text);
        }
        return array;
    } else {
        throw std::runtime_error(path.string() + ": unsupported dtype " + d);
    }
    if (static_cast<std::int64_t>(array.numbers.size()) != total)
        throw std::runtime_error(path.string() + ": data size does not match shape");
    if (fortran_order && array.shape.size() > 2)
        throw std::runtime_error(path.string() + ": Fortran order with more than 2 dimensions not supported");
    if (fortran_order && array.shape.size() == 2) {
        // Column-major on disk (e.g. X_pca.npy); numbers are always returned in C order.
        const std::int64_t rows = array.shape[0], cols = array.shape[1];
        std::vector<double> c_order(array.numbers.size());
        for (std::int64_t col = 0; col < cols; ++col)
            for (std::int64_t row = 0; row < rows; ++row)
                c_order[static_cast<std::size_t>(row * cols + col)] = array.numbers[static_cast<std::size_t>(col * rows + row)];
        array.numbers = std::move(c_order);
    }
    return array;
}

DenseMatrix<float> read_npy_float_matrix(const std::filesystem::path& path) {
    const NpyArray array = read_npy(path);
    if (array.numbers.size() != static_cast<std::size_t>(array.rows() * array.cols()))
        throw std::runtime_error(path.string() + ": not a numeric 2-D array (" + array.descr + ")");
    DenseMatrix<float> matrix(array.rows(), array.cols());
    for (std::size_t index = 0; index < array.numbers.size(); ++index)
        matrix.values()[index] = static_cast<float>(array.numbers[index]);
    return matrix;
}

}  // namespace fathom::test
