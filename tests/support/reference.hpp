#pragma once
/// Loading one shared Scanpy reference folder (shared/reference/<name>/): meta.json,
/// the other JSON files, the .npy arrays and the gzipped CSV tables. Every loader
/// throws std::runtime_error naming the file on any problem; tests check
/// reference_available(name) (or FATHOM_REQUIRE_PATH(reference_dir(name))) first.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/npy.hpp"

namespace fathom::test {

/// The reference datasets that ran recipe_zheng17 (meta.json "recipe_zheng17" set).
const std::vector<std::string>& zheng17_reference_names();
/// Every reference folder name Scanpy produced (the above plus the no-recipe ones).
const std::vector<std::string>& all_reference_names();

/// shared/reference/<name>.
std::filesystem::path reference_dir(const std::string& name);
/// True when shared/reference/<name>/meta.json exists.
bool reference_available(const std::string& name);

/// shared/reference/<name>/meta.json, parsed.
nlohmann::json load_reference(const std::string& name);
/// Any JSON file of the folder ("zheng17.json", "pca.json", "clusters.json", ...).
nlohmann::json read_reference_json(const std::string& name, const std::string& file);
/// Any .npy file of the folder ("X_pca.npy", "n_counts_all.npy", ...).
NpyArray read_reference_npy(const std::string& name, const std::string& file);

/// The dataset the reference was computed from: shared/<meta["input"]>.
std::filesystem::path reference_input_path(const nlohmann::json& meta);

/// A small CSV table read whole: a header row and string cells.
struct CsvTable {
    std::vector<std::string> header;
    std::vector<std::vector<std::string>> rows;   ///< each has header.size() cells
    std::int64_t num_rows() const { return static_cast<std::int64_t>(rows.size()); }
    /// Index of a column; throws naming the column when absent.
    std::size_t column_index(const std::string& column) const;
    /// The column's cells as strings.
    std::vector<std::string> strings(const std::string& column) const;
    /// The column's cells as numbers ("nan"/"" -> NaN, "inf"/"-inf" accepted).
    std::vector<double> numbers(const std::string& column) const;
    /// The column's cells as booleans ("True"/"False", "1"/"0").
    std::vector<std::uint8_t> booleans(const std::string& column) const;
};

/// Reads a gzip-compressed (or plain) CSV with a header row; no quoting beyond simple
/// double-quoted cells without embedded quotes.
CsvTable read_csv_gz(const std::filesystem::path& path);
/// read_csv_gz(reference_dir(name) / file), e.g. "dispersions.csv.gz".
CsvTable read_reference_csv(const std::string& name, const std::string& file);

}  // namespace fathom::test
