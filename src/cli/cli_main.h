// The `swiftlet` command line: every subcommand, parsed and run.
#pragma once

namespace swiftlet::cli {

// Parses argv and runs the command it names; returns the process's exit
// status (2 for a usage error).
int Main(int argc, char** argv);

}  // namespace swiftlet::cli
