#pragma once
/// obs / var annotation tables: an index (barcodes or gene names) plus typed columns.
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace fathom {

/// Signed integer column; `missing` is empty or one flag per row (nullable-integer).
struct IntColumn {
    std::vector<std::int64_t> values;
    std::vector<std::uint8_t> missing;  ///< empty = no missing values; else 1 = NA
};
/// Floating-point column (NaN is the missing value, as in pandas).
struct FloatColumn {
    std::vector<double> values;
};
/// Boolean column; `missing` as in IntColumn (nullable-boolean).
struct BoolColumn {
    std::vector<std::uint8_t> values;   ///< 0 or 1
    std::vector<std::uint8_t> missing;  ///< empty = no missing values; else 1 = NA
};
/// String column (object dtype / string-array).
struct StringColumn {
    std::vector<std::string> values;
};
/// Categorical column: codes into categories, -1 = missing (pandas convention).
struct CategoricalColumn {
    std::vector<std::int32_t> codes;
    std::vector<std::string> categories;
    bool ordered = false;
};

using ColumnData = std::variant<IntColumn, FloatColumn, BoolColumn, StringColumn, CategoricalColumn>;

/// A named column of a Table.
struct Column {
    std::string name;
    ColumnData data;

    /// Number of rows held by the column, whatever its type.
    std::int64_t size() const noexcept;
    /// "int", "float", "bool", "string" or "categorical".
    const char* type_name() const noexcept;
};

/// A dataframe: index plus columns, all with index.size() rows. Column order is kept.
class Table {
public:
    Table() = default;
    explicit Table(std::vector<std::string> index, std::string index_name = {});

    std::int64_t num_rows() const noexcept { return static_cast<std::int64_t>(m_index.size()); }
    const std::vector<std::string>& index() const noexcept { return m_index; }
    std::vector<std::string>& index() noexcept { return m_index; }
    /// Name of the index column as stored in h5ad ("_index" when unnamed).
    const std::string& index_name() const noexcept { return m_index_name; }
    void set_index_name(std::string name) { m_index_name = std::move(name); }

    const std::vector<Column>& columns() const noexcept { return m_columns; }
    /// nullptr when absent.
    const Column* find(const std::string& name) const noexcept;
    Column* find(const std::string& name) noexcept;
    /// Adds or replaces a column; throws std::invalid_argument when its length differs
    /// from num_rows().
    void set(std::string name, ColumnData data);
    bool remove(const std::string& name);

    /// Keeps the rows whose indices are given, in that order (index and every column).
    Table take_rows(const std::vector<std::int64_t>& rows) const;

private:
    std::vector<std::string> m_index;
    std::string m_index_name;
    std::vector<Column> m_columns;
};

/// anndata's `make_index_unique` (join "-"): the second and later occurrences of a
/// name get "-1", "-2", ... appended, skipping suffixes that would collide with an
/// existing name. First occurrences are unchanged. Returns the number of names changed.
std::int64_t make_names_unique(std::vector<std::string>& names);

}  // namespace fathom
