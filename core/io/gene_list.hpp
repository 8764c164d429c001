#pragma once
/// Gene lists for gene-set scores and marker panels: plain text with one gene per line,
/// or a CSV/TSV whose first column is the gene. Plain or gzip-compressed.
#include <string>
#include <vector>

namespace fathom::io {

/// Reads the genes of a list file, in file order, each once (later repeats dropped).
/// - A UTF-8 byte-order mark at the start of the file is ignored.
/// - '#' starts a comment that runs to the end of the line; blank lines are skipped;
///   surrounding whitespace is trimmed.
/// - A line with ',' or a tab is a CSV/TSV row: its first field is the gene (double
///   quotes around the field are removed, as in a CSV written by pandas).
/// - A CSV/TSV header is skipped: the first row when its first field is one of gene,
///   genes, gene_name, gene_names, gene_symbol, symbol, name, names, gene_id, gene_ids,
///   feature, features, id (any case) or empty (pandas' unnamed index column).
/// Throws ReadError when the file cannot be read and FormatError(path, "", ...) when
/// it names no gene.
std::vector<std::string> read_gene_list(const std::string& path);

}  // namespace fathom::io
