#include <cstdio>
#include <iostream>

#include "commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"gradwire: compressed gradient communication for data-parallel training"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("gradwire ") + gw_version_string() + " (ABI " +
                                        std::to_string(gw_abi_version_major()) + "." +
                                        std::to_string(gw_abi_version_minor()) + ")");
  int exit_code = 0;
  gwcli::add_plugins_command(app, exit_code);
  gwcli::add_config_command(app, exit_code);
  gwcli::add_bench_command(app, exit_code);
  gwcli::add_run_command(app, exit_code);
  gwcli::add_train_command(app, exit_code);
  gwcli::add_conformance_command(app, exit_code);
  gwcli::add_calibrate_command(app, exit_code);
  gwcli::add_simulate_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const gwcli::Failure& e) {
    std::cerr << "gradwire: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {  // any other failure of a command: said, never an abort
    std::cerr << "gradwire: " << e.what() << "\n";
    return 1;
  }
  return exit_code;
}
