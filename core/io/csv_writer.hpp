#pragma once
/// CSV writers for reduced data: Loupe Browser's projection and category imports and
/// plain tables (marker genes). Every file is written atomically ("<path>.tmp-<pid>",
/// then rename), so a failure leaves nothing at the destination.
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "core/data/Table.hpp"
#include "core/types/DenseMatrix.hpp"

namespace fathom::io {

/// One CSV field: quoted (RFC 4180, inner quotes doubled) when it holds a comma, a quote,
/// a line break or leading/trailing spaces; otherwise as is.
std::string csv_field(const std::string& text);
/// Shortest decimal text that reads back to the same float / double ("nan", "inf",
/// "-inf" for the non-finite values, as pandas writes them).
std::string csv_number(float value);
std::string csv_number(double value);

/// Writes `path` atomically ("<path>.tmp-<pid>" in its folder, then rename): `body` writes
/// the text to the stream it is given. Throws WriteError naming `path` when the file
/// cannot be created or written. An exception from `body` removes the temporary file and
/// propagates (Cancelled, FormatError, ReadError and std::invalid_argument unchanged,
/// anything else as WriteError naming `path`); an existing file at `path` is untouched.
void write_text_file(const std::string& path, const std::function<void(std::ostream&)>& body);

/// Writes `path`: the header line, then `num_rows` lines whose fields `fill_row(row,
/// fields)` sets (fields arrives cleared; each field is passed through csv_field).
/// Throws WriteError naming `path` (an unwritable folder, a full disk); nothing is left
/// at `path` and an existing file there is untouched.
void write_csv(const std::string& path, const std::vector<std::string>& header, std::int64_t num_rows,
               const std::function<void(std::int64_t row, std::vector<std::string>& fields)>& fill_row);

/// Loupe Browser projection: `Barcode,<axis>-1,<axis>-2[,...]` (axis e.g. "UMAP"), one row
/// per cell with the first `num_columns` columns of `coordinates` (cells x >= 2; clamped
/// to [2, cols]: Loupe reads two, a 3-D UMAP keeps its third).
/// Throws std::invalid_argument when the rows differ from the barcodes or there are
/// fewer than two columns.
void write_projection_csv(const std::string& path, const std::vector<std::string>& barcodes,
                          const DenseMatrix<float>& coordinates, const std::string& axis,
                          std::int64_t num_columns = 2);

/// Loupe Browser categories: `Barcode,<name>`, one row per cell with its category
/// (missing codes, -1, as an empty field). Throws std::invalid_argument when the codes
/// differ in length from the barcodes or a code is out of range.
void write_category_csv(const std::string& path, const std::vector<std::string>& barcodes, const std::string& name,
                        const CategoricalColumn& column);

}  // namespace fathom::io
