// swiftlet: one binary, one subcommand per job. Each command registers its
// own flags in its own file (cli/command.h); this file builds the tree,
// parses, and runs the command named.
#include "cli/cli_main.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <vector>

#include "cli/command.h"

namespace swiftlet::cli {

int Main(int argc, char** argv) {
  CLI::App app{"swiftlet: real-time inference server for Transformer language models"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every subcommand");

  // In the order the checks below must see them: a sub-subcommand before
  // its parent (`bench engine` before `bench`).
  std::vector<Command> commands;
  commands.push_back(AddInspectCommand(app));
  commands.push_back(AddQuantizeCommand(app));
  commands.push_back(AddRunCommand(app));
  commands.push_back(AddTokenizeCommand(app));
  CLI::App* tools = app.add_subcommand("tools", "Developer tools");
  tools->require_subcommand(1);
  commands.push_back(AddMakeModelCommand(*tools));
  commands.push_back(AddLogitsCommand(*tools));
  commands.push_back(AddDriveCommand(*tools));
  const Command bench = AddBenchCommand(app);
  commands.push_back(AddBenchEngineCommand(*bench.app));
  commands.push_back(bench);
  commands.push_back(AddServeCommand(app));
  commands.push_back(AddPlanCommand(app));
  commands.push_back(AddKeysCommand(app));
  commands.push_back(AddGatewayCommand(app));
  commands.push_back(AddProbeCommand(app));

  // CLI11 would only say "a subcommand is required"; name the mistake.
  std::string names;
  bool known = false;
  const std::string first = argc > 1 ? argv[1] : "";
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    names += (names.empty() ? "" : ", ") + sub->get_name();
    known = known || sub->get_name() == first;
  }
  if (!first.empty() && first[0] != '-' && !known) {
    ReportError("unknown command '" + first + "' (commands: " + names + ")");
    return 2;
  }
  if (first == "bench" && argc > 2 && argv[2][0] != '-' && std::string(argv[2]) != "engine") {
    ReportError(std::string("unknown bench command '") + argv[2] + "' (bench commands: engine)");
    return 2;
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    ReportError(e.what());
    return 2;
  }

  for (const Command& c : commands) {
    if (*c.app) return c.run();
  }
  return ReportError("no subcommand");
}

}  // namespace swiftlet::cli
