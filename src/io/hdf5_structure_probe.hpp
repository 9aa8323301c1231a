#pragma once
// A time-bounded walk of a file's HDF5 structures in a child process, before this process opens the
// file (docs/reliability.md "Corrupt files and the HDF5 library"): HDF5 1.10/1.14 crash or hang on
// some corrupt structures (local heaps, object headers, B-trees) that no API call lets us check first.
#include <string>

namespace rabbit::h5 {

/// Forks; the child opens `filename` and visits every object as the readers will (groups, datasets'
/// types, dataspaces, layouts and chunk indices, attributes, variable-length data, and the data of
/// every dataset up to 64 MiB: larger ones are read by this process only), reporting each
/// object's name to the parent before touching it. Returns when the child finished; throws
/// InputError "FILE: OBJECT: corrupt HDF5 structure (...)" when it died from a signal or did not finish
/// within the time bound (RABBIT_HDF5_PROBE_SECONDS, default 60). A file that passed is not walked
/// again by this process unless it changed (size or modification time).
void probe_hdf5_structure(const std::string& filename);

}  // namespace rabbit::h5
