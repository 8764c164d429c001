#include "tests/support/reference.hpp"

#include <cmath>
#include <fstream>
#include <limits>
#include <stdexcept>

#include <zlib.h>

#include "tests/support/paths.hpp"

namespace fathom::test {

const std::vector<std::string>& zheng17_reference_names() {
    static const std::vector<std::string> names{
        "scanpy_10x_v3_chr21",    "scanpy_10x_v3_chr21_mtx", "scanpy_neurons10k_1000genes",
        "visium_cytassist_mouse_2898", "yeast_844cells",     "geo_GSM6544281_min200"};
    return names;
}

const std::vector<std::string>& all_reference_names() {
    static const std::vector<std::string> names = [] {
        auto all = zheng17_reference_names();
        all.push_back("scanpy_pbmc68k_reduced_norecipe");
        return all;
    }();
    return names;
}

std::filesystem::path reference_dir(const std::string& name) { return shared_reference(name); }

bool reference_available(const std::string& name) {
    return std::filesystem::exists(reference_dir(name) / "meta.json");
}

nlohmann::json read_reference_json(const std::string& name, const std::string& file) {
    const auto path = reference_dir(name) / file;
    std::ifstream stream(path);
    if (!stream) throw std::runtime_error(path.string() + ": cannot open");
    try {
        return nlohmann::json::parse(stream);
    } catch (const nlohmann::json::exception& error) {
        throw std::runtime_error(path.string() + ": invalid JSON: " + error.what());
    }
}

nlohmann::json load_reference(const std::string& name) { return read_reference_json(name, "meta.json"); }

NpyArray read_reference_npy(const std::string& name, const std::string& file) {
    return read_npy(reference_dir(name) / file);
}

std::filesystem::path reference_input_path(const nlohmann::json& meta) {
    if (!meta.contains("input") || !meta["input"].is_string())
        throw std::runtime_error("meta.json: no string field 'input'");
    return shared_dir() / meta["input"].get<std::string>();
}

namespace {

std::string read_gz_text(const std::filesystem::path& path) {
    gzFile file = gzopen(path.string().c_str(), "rb");
    if (!file) throw std::runtime_error(path.string() + ": cannot open");
    std::string text;
    char buffer[1 << 16];
    for (;;) {
        const int got = gzread(file, buffer, sizeof buffer);
        if (got < 0) {
            int code = 0;
            const std::string message = gzerror(file, &code);
            gzclose(file);
            throw std::runtime_error(path.string() + ": gzip read error: " + message);
        }
        if (got == 0) break;
        text.append(buffer, static_cast<std::size_t>(got));
    }
    gzclose(file);
    return text;
}

std::vector<std::string> split_csv_line(const std::string& line) {
    std::vector<std::string> cells;
    std::string cell;
    bool quoted = false;
    for (char c : line) {
        if (c == '"') {
            quoted = !quoted;
        } else if (c == ',' && !quoted) {
            cells.push_back(std::move(cell));
            cell.clear();
        } else {
            cell.push_back(c);
        }
    }
    cells.push_back(std::move(cell));
    return cells;
}

}  // namespace

CsvTable read_csv_gz(const std::filesystem::path& path) {
    const std::string text = read_gz_text(path);  // gzread passes plain files through
    CsvTable table;
    std::size_t start = 0;
    bool first = true;
    std::int64_t line_number = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        std::string line = text.substr(start, end - start);
        start = end + 1;
        ++line_number;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) continue;
        auto cells = split_csv_line(line);
        if (first) {
            table.header = std::move(cells);
            first = false;
            continue;
        }
        if (cells.size() != table.header.size())
            throw std::runtime_error(path.string() + ": line " + std::to_string(line_number) + " has " +
                                     std::to_string(cells.size()) + " cells, header has " +
                                     std::to_string(table.header.size()));
        table.rows.push_back(std::move(cells));
    }
    if (first) throw std::runtime_error(path.string() + ": empty CSV");
    return table;
}

CsvTable read_reference_csv(const std::string& name, const std::string& file) {
    return read_csv_gz(reference_dir(name) / file);
}

std::size_t CsvTable::column_index(const std::string& column) const {
    for (std::size_t index = 0; index < header.size(); ++index)
        if (header[index] == column) return index;
    throw std::runtime_error("CSV has no column '" + column + "'");
}

std::vector<std::string> CsvTable::strings(const std::string& column) const {
    const auto index = column_index(column);
    std::vector<std::string> out;
    out.reserve(rows.size());
    for (const auto& row : rows) out.push_back(row[index]);
    return out;
}

std::vector<double> CsvTable::numbers(const std::string& column) const {
    const auto index = column_index(column);
    std::vector<double> out;
    out.reserve(rows.size());
    for (const auto& row : rows) {
        const std::string& cell = row[index];
        if (cell.empty() || cell == "nan" || cell == "NaN") {
            out.push_back(std::numeric_limits<double>::quiet_NaN());
            continue;
        }
        try {
            std::size_t used = 0;
            const double value = std::stod(cell, &used);
            if (used != cell.size()) throw std::invalid_argument(cell);
            out.push_back(value);
        } catch (const std::exception&) {
            if (cell == "inf") out.push_back(std::numeric_limits<double>::infinity());
            else if (cell == "-inf") out.push_back(-std::numeric_limits<double>::infinity());
            else throw std::runtime_error("CSV column '" + column + "': not a number: '" + cell + "'");
        }
    }
    return out;
}

std::vector<std::uint8_t> CsvTable::booleans(const std::string& column) const {
    const auto index = column_index(column);
    std::vector<std::uint8_t> out;
    out.reserve(rows.size());
    for (const auto& row : rows) {
        const std::string& cell = row[index];
        if (cell == "True" || cell == "true" || cell == "1") out.push_back(1);
        else if (cell == "False" || cell == "false" || cell == "0") out.push_back(0);
        else throw std::runtime_error("CSV column '" + column + "': not a boolean: '" + cell + "'");
    }
    return out;
}

}  // namespace fathom::test
