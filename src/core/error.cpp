// Error types are header-only; this file keeps the core module a library with a translation unit.
#include "rabbit/core/error.hpp"
