#include "core/io/gene_list.hpp"

#include <algorithm>
#include <string_view>
#include <unordered_set>

#include "core/io/detail/line_reader.hpp"
#include "core/io/errors.hpp"

namespace fathom::io {

namespace {

std::string_view trim(std::string_view text) {
    const auto space = [](char character) {
        return character == ' ' || character == '\t' || character == '\r' || character == '\n';
    };
    while (!text.empty() && space(text.front())) text.remove_prefix(1);
    while (!text.empty() && space(text.back())) text.remove_suffix(1);
    return text;
}

bool is_header_name(std::string_view field) {
    std::string lower(field);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](char character) { return character >= 'A' && character <= 'Z' ? character - 'A' + 'a' : character; });
    static const char* const names[] = {"gene",        "genes",  "gene_name", "gene_names", "gene_symbol",
                                        "symbol",      "name",   "names",     "gene_id",    "gene_ids",
                                        "feature",     "features", "id"};
    for (const char* name : names)
        if (lower == name) return true;
    return lower.empty();
}

}  // namespace

std::vector<std::string> read_gene_list(const std::string& path) {
    detail::LineReader reader(path, path, "");
    std::vector<std::string> genes;
    std::unordered_set<std::string> seen;
    std::string_view line;
    bool first_row = true;
    while (reader.next(line)) {
        // A UTF-8 byte-order mark (Excel's "CSV UTF-8", Windows Notepad) is not part of
        // the first gene or header name.
        if (reader.line_number() == 1 && line.starts_with("\xEF\xBB\xBF")) line.remove_prefix(3);
        const auto comment = line.find('#');
        if (comment != std::string_view::npos) line = line.substr(0, comment);
        line = trim(line);
        if (line.empty()) continue;
        const auto separator = line.find_first_of(",\t");
        const bool table_row = separator != std::string_view::npos;
        std::string_view field = trim(table_row ? line.substr(0, separator) : line);
        if (field.size() >= 2 && field.front() == '"' && field.back() == '"') field = field.substr(1, field.size() - 2);
        const bool header = first_row && table_row && is_header_name(field);
        first_row = false;
        if (header || field.empty()) continue;
        std::string gene(field);
        if (seen.insert(gene).second) genes.push_back(std::move(gene));
    }
    if (genes.empty())
        throw FormatError(path, "", "no gene names (expected one gene per line, or a CSV whose first column is the gene)");
    return genes;
}

}  // namespace fathom::io
