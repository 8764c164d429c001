#include "core/data/Dataset.hpp"

namespace fathom {

const char* format_name(DatasetFormat format) noexcept {
    switch (format) {
        case DatasetFormat::H5ad: return "h5ad";
        case DatasetFormat::TenxH5V3: return "10x-h5 (v3)";
        case DatasetFormat::TenxH5V2: return "10x-h5 (v2)";
        case DatasetFormat::MatrixMarketFolder: return "10x-mtx";
        case DatasetFormat::MatrixMarketFile: return "mtx";
        case DatasetFormat::Loom: return "loom";
    }
    return "unknown";
}

const char* value_type_name(ValueType type) noexcept {
    switch (type) {
        case ValueType::Float32: return "float32";
        case ValueType::Float64: return "float64";
        case ValueType::Int32: return "int32";
        case ValueType::Int64: return "int64";
        case ValueType::Other: return "other";
    }
    return "other";
}

}  // namespace fathom
