#pragma once
/// Typed load errors. No HDF5 or zlib error escapes core/io: readers translate them
/// into these (defined in core/types/errors.hpp, so that every layer shares them).
#include "core/types/errors.hpp"

namespace fathom::io {

/// "<file>: <object>: <problem>": the file was opened but its content is malformed.
using FormatError = fathom::FormatError;
/// "<file>: <reason>": the file could not be read at all.
using ReadError = fathom::ReadError;
/// "<file>: <reason>": writing an output failed; nothing was left at the destination.
using WriteError = fathom::WriteError;

}  // namespace fathom::io
