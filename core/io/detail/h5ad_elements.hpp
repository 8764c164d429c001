#pragma once
/// Decoding of anndata's on-disk elements (obs/var dataframes, their columns, obsm /
/// varm arrays, the uns tree) from h5ad, as written by anndata 0.7 to 0.11 and the
/// pre-0.7 layouts. Shared by the h5ad reader (and later the writer's round-trip
/// tests). Include only from core/io sources: it exposes the HDF5 layer.
///
/// Encodings understood (anndata "encoding-type" attribute; anndata docs
/// "On-disk format", 0.8+):
///   dataframe           group: attrs _index (name of the index dataset), column-order
///   categorical         group: codes (int, -1 = missing), categories, attr ordered
///   string-array        dataset of strings
///   nullable-integer    group: values (int) + mask (bool, true = missing)
///   nullable-boolean    group: values (bool) + mask
///   nullable-string-array group: values (strings) + mask (missing becomes "")
///   array               numeric / bool dataset
///   dict, string, numeric-scalar, rec-array (uns)
/// Legacy layouts:
///   anndata 0.7.x       categorical column = integer codes dataset whose attribute
///                       `categories` is an object reference to <df>/__categories/<name>
///                       (attribute `ordered` on the categories dataset)
///   anndata < 0.7       obs / var / obsm / varm as one compound (structured) dataset,
///                       first field = index; categoricals = integer columns whose
///                       categories are stored in uns["<column>_categories"]
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "core/data/Table.hpp"
#include "core/data/Uns.hpp"
#include "core/io/detail/hdf5.hpp"
#include "core/types/DenseMatrix.hpp"

namespace fathom::io::h5ad {

/// The element's `encoding-type` attribute, or "" when absent.
std::string encoding_type(const h5::File& file, const std::string& object);

/// A string-array attribute such as `column-order`; anndata >= 0.8 writes an empty
/// list as an empty float64 array, which reads here as an empty list. nullopt when
/// absent.
std::optional<std::vector<std::string>> string_list_attribute(const h5::File& file, const std::string& object,
                                                              const std::string& name);

/// Reads an obs / var dataframe: a dataframe group (anndata >= 0.7) or a pre-0.7
/// compound dataset (first field = index). The index is kept exactly as stored
/// (duplicates included). Columns keep column-order. Throws FormatError naming the
/// column when it is malformed (length differs from the index, codes out of range,
/// unknown encoding).
Table read_dataframe(const h5::File& file, const std::string& object);

/// Reads one dataframe column element with `num_rows` rows (dataset or group, any
/// encoding listed above, including anndata 0.7's referenced categories).
ColumnData read_column(const h5::File& file, const std::string& object, std::int64_t num_rows);

/// anndata's `_clean_uns` (anndata 0.8 compat/__init__.py): for every uns entry
/// "<name>_categories" and an integer column <name> of `table` whose codes are all
/// below the number of categories, turns the column into a categorical. Returns
/// the uns keys consumed (anndata removes them from uns).
std::set<std::string> apply_uns_categories(const h5::File& file, const std::string& uns_group, Table& table);

/// Reads obsm / varm: every dense 2-D numeric dataset of the group (or every field of
/// a pre-0.7 compound dataset) with `num_rows` rows, as float32. Dataframes, sparse
/// matrices and other entries are skipped. Throws FormatError when a dense entry has
/// the wrong number of rows.
std::map<std::string, DenseMatrix<float>> read_dense_arrays(const h5::File& file, const std::string& object,
                                                            std::int64_t num_rows);

/// Reads uns recursively: dicts, scalar strings / numbers / bools, 1-D numeric and
/// string arrays, 2-D numeric arrays, rec-arrays (as a dict of their 1-D fields).
/// Sparse matrices, dataframes, categoricals and other exotic entries are skipped.
/// Keys in `skip` (top level only) are left out. Old anndata's one-element
/// fixed-length string arrays read as scalar strings, as anndata 0.8's
/// `read_dataset` does.
UnsNode read_uns(const h5::File& file, const std::string& object, const std::set<std::string>& skip = {});

}  // namespace fathom::io::h5ad
