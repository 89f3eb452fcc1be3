// The `swiftlet` binary. The command line lives in the cli library
// (cli_main.cc), compiled with the precompiled CLI11 header the commands
// share; this file does not parse CLI11 again.
#include "cli/cli_main.h"

int main(int argc, char** argv) { return swiftlet::cli::Main(argc, argv); }
