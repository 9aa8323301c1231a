#pragma once
// "Our rabbit_limit against a result written by upstream rabbit_limit.py", for the reference cases of
// tests/reference/limits (test_reference) and their runs across MPI ranks (test_mpi): every limit
// histogram of the case's "results", with the tolerances of docs/validation.md "Asymptotic limits".
#include <string>

#include "rabbit/io/json.hpp"

namespace rabbit::test {

/// Compares every *asymptoticLimits* histogram of `expected_results` (GROUP -> rabbit's results
/// dictionary) with the file `result_file`: axes, labels and, outside toy groups, every value to 1e-6
/// relative (floor 1e-9); in toy groups, whether each value is finite. Non-fatal GoogleTest failures
/// naming case, group, histogram and entry; returns how many values were compared numerically.
int compare_limit_result(const std::string& case_name, const io::Json& expected_results,
                         const std::string& result_file);

}  // namespace rabbit::test
