// rabbit_inspect FILE: prints what a fit tensor holds and the sanity checks of upstream's
// rabbit_debug_inputdata.py. Exit codes: 0 (also with findings, unless --strict: then 1),
// 3 for an unreadable or invalid file, 2 for bad options.
#include <CLI/CLI.hpp>
#include <iostream>

#include "rabbit/core/error.hpp"
#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/io/hdf5_reader.hpp"
#include "rabbit/io/inspect.hpp"

int main(int argc, char** argv) {
  rabbit::h5::configure_hdf5_for_application();  // docs/reliability.md "HDF5's error printing and open files"
  CLI::App app{"Summary and diagnostics of a rabbit fit tensor"};
  std::string filename;
  bool strict = false, no_diagnostics = false;
  rabbit::inspect::DiagnoseOptions options;
  app.add_option("file", filename, "fit tensor (HDF5)")->required();
  app.add_flag("--strict", strict, "exit with 1 when a diagnostic finds something");
  app.add_flag("--noDiagnostics", no_diagnostics, "print the summary only");
  app.add_option("--lowDataThreshold", options.low_data_threshold, "report bins with fewer observed events")
      ->capture_default_str();
  app.add_option("--extremeRatio", options.extreme_ratio, "report variations beyond this ratio to nominal")
      ->capture_default_str();
  app.add_option("--maxListed", options.max_listed, "details listed per check")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : static_cast<int>(rabbit::ExitCode::option);
  }
  try {
    const rabbit::FitInputData data = rabbit::read_fit_input(filename);
    rabbit::inspect::print_summary(std::cout, data);
    if (no_diagnostics) return 0;
    const auto diagnostics = rabbit::inspect::diagnose(data, options);
    rabbit::inspect::print_diagnostics(std::cout, diagnostics);
    if (strict)
      for (const auto& d : diagnostics)
        if (!d.ok) return 1;
  } catch (const rabbit::Error& e) {
    rabbit::print_error_line("rabbit_inspect", e.what());
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    rabbit::print_error_line("rabbit_inspect", e.what());
    return 1;
  }
  return 0;
}
