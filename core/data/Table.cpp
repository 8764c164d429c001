#include "core/data/Table.hpp"

#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

namespace fathom {

std::int64_t Column::size() const noexcept {
    return std::visit(
        [](const auto& column) -> std::int64_t {
            using T = std::decay_t<decltype(column)>;
            if constexpr (std::is_same_v<T, CategoricalColumn>)
                return static_cast<std::int64_t>(column.codes.size());
            else
                return static_cast<std::int64_t>(column.values.size());
        },
        data);
}

const char* Column::type_name() const noexcept {
    switch (data.index()) {
        case 0: return "int";
        case 1: return "float";
        case 2: return "bool";
        case 3: return "string";
        default: return "categorical";
    }
}

Table::Table(std::vector<std::string> index, std::string index_name)
    : m_index(std::move(index)), m_index_name(std::move(index_name)) {}

const Column* Table::find(const std::string& name) const noexcept {
    for (const auto& column : m_columns)
        if (column.name == name) return &column;
    return nullptr;
}

Column* Table::find(const std::string& name) noexcept {
    for (auto& column : m_columns)
        if (column.name == name) return &column;
    return nullptr;
}

void Table::set(std::string name, ColumnData data) {
    Column column{std::move(name), std::move(data)};
    if (column.size() != num_rows())
        throw std::invalid_argument("Table::set: column '" + column.name + "' has " + std::to_string(column.size()) +
                                    " rows, table has " + std::to_string(num_rows()));
    if (auto* existing = find(column.name)) {
        *existing = std::move(column);
        return;
    }
    m_columns.push_back(std::move(column));
}

bool Table::remove(const std::string& name) {
    for (auto it = m_columns.begin(); it != m_columns.end(); ++it) {
        if (it->name == name) {
            m_columns.erase(it);
            return true;
        }
    }
    return false;
}

namespace {
template <typename T>
std::vector<T> take(const std::vector<T>& values, const std::vector<std::int64_t>& rows) {
    if (values.empty()) return {};
    std::vector<T> out;
    out.reserve(rows.size());
    for (auto row : rows) out.push_back(values.at(static_cast<std::size_t>(row)));
    return out;
}
}  // namespace

Table Table::take_rows(const std::vector<std::int64_t>& rows) const {
    Table out(take(m_index, rows), m_index_name);
    for (const auto& column : m_columns) {
        ColumnData data = std::visit(
            [&](const auto& source) -> ColumnData {
                using T = std::decay_t<decltype(source)>;
                T result = source;
                if constexpr (std::is_same_v<T, CategoricalColumn>) {
                    result.codes = take(source.codes, rows);
                } else {
                    result.values = take(source.values, rows);
                    if constexpr (std::is_same_v<T, IntColumn> || std::is_same_v<T, BoolColumn>)
                        result.missing = take(source.missing, rows);
                }
                return result;
            },
            column.data);
        out.m_columns.push_back({column.name, std::move(data)});
    }
    return out;
}

std::int64_t make_names_unique(std::vector<std::string>& names) {
    // anndata.utils.make_index_unique: duplicates (keep="first") get the next free
    // counter suffix per base name; the set of taken names grows as suffixes are issued.
    std::unordered_set<std::string> taken(names.begin(), names.end());
    if (taken.size() == names.size()) return 0;
    std::unordered_set<std::string> seen;
    std::unordered_map<std::string, std::int64_t> counter;
    std::int64_t changed = 0;
    for (auto& name : names) {
        if (seen.insert(name).second) continue;
        auto& count = counter[name];
        while (true) {
            ++count;
            std::string candidate = name + "-" + std::to_string(count);
            if (taken.insert(candidate).second) {
                name = std::move(candidate);
                ++changed;
                break;
            }
        }
    }
    return changed;
}

}  // namespace fathom
