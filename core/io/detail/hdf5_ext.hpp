#pragma once
/// Additions to the RAII HDF5 layer (hdf5.hpp) needed by the h5ad reader: object
/// references (anndata 0.7 legacy categoricals), compound / structured datasets
/// (anndata < 0.7 obs, var, obsm, varm and uns rec-arrays), boolean enums and h5py's
/// LZF filter. Free functions over h5::File so that hdf5.hpp keeps its interface.
/// Include only from core/io sources. Every failure is an io::FormatError naming
/// the file and the object; no HDF5 error escapes.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/io/detail/hdf5.hpp"

namespace fathom::io::h5 {

/// Registers a decoder for h5py's LZF filter (filter id 32000, used by anndata's
/// `compression="lzf"`, e.g. in the anndata 0.7 test archives) unless HDF5 already
/// has one (a plugin). Idempotent and thread-safe. Decoding only: writing with LZF
/// fails (and, as h5py marks the filter optional, stores the chunk uncompressed).
void register_lzf_filter();

/// The HDF5 filter id h5py registered for LZF.
inline constexpr int lzf_filter_id = 32000;

/// Decompresses one LZF block (liblzf's format: literal runs and back references).
/// Returns the number of bytes written, 0 when `output_size` is too small, and -1
/// when the input is corrupt. Exposed for tests.
std::int64_t lzf_decompress(const std::uint8_t* input, std::size_t input_size, std::uint8_t* output,
                            std::size_t output_size) noexcept;

/// Absolute path of the object that the object-reference attribute `name` of
/// `object` points at; nullopt when the attribute is absent. Throws FormatError when
/// the attribute is not a single object reference or cannot be dereferenced.
std::optional<std::string> attribute_reference_target(const File& file, const std::string& object,
                                                      const std::string& name);

/// True when the dataset holds h5py's encoding of numpy bools: an 8-bit enum with the
/// two members FALSE = 0 and TRUE = 1. False for anything else (or when absent).
bool is_bool_enum_dataset(const File& file, const std::string& object);

/// True when the dataset's elements are fixed-length strings (numpy 'S' dtype), false
/// for variable-length strings and non-strings.
bool is_fixed_length_string_dataset(const File& file, const std::string& object);

/// One member of a compound (structured) dataset.
struct CompoundField {
    std::string name;                           ///< member name (numpy field name)
    TypeClass type_class = TypeClass::Other;    ///< of the base element (array members: the element)
    std::size_t type_size = 0;                  ///< bytes of one base element
    bool is_signed = true;                      ///< integers only
    bool is_bool = false;                       ///< h5py's numpy-bool enum
    std::int64_t width = 1;                     ///< elements per record (array members, e.g. X_pca (50,))
};

/// Members of a 1-D compound dataset in stored order. Throws FormatError when the
/// dataset is missing, not compound or not 1-D.
std::vector<CompoundField> compound_fields(const File& file, const std::string& object);

/// One numeric (or boolean) member of every record, converted to T: records x width
/// values, row-major. Throws FormatError naming the object and field.
template <typename T>
std::vector<T> read_compound_numbers(const File& file, const std::string& object, const std::string& field);

/// One string member (fixed or variable length) of every record.
std::vector<std::string> read_compound_strings(const File& file, const std::string& object, const std::string& field);

}  // namespace fathom::io::h5
