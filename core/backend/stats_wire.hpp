#pragma once
/// How a shard's column statistics travel between ranks (ShardSet's gathers and the
/// streamed passes use the same encoding).

#include "core/backend/Backend.hpp"
#include "core/types/Comm.hpp"

namespace fathom {

void put_column_stats(ByteWriter& out, const ColumnStats& part);
ColumnStats get_column_stats(ByteReader& in);

}  // namespace fathom
