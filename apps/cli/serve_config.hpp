#pragma once
// Where `simkit serve` reads its settings besides the command line: an environment variable per
// option and a YAML file (--config FILE). The rule, from strongest to weakest:
//
//   command line  >  environment (SIMKIT_PORT=6334)  >  config file (port: 6334)  >  default
//
// The file's keys are the options' own names without the leading dashes, kebab-case exactly as
// on the command line (data-dir, max-queue), so one spelling serves both and `--help` documents
// both. Values are YAML scalars, converted and range-checked by the same CLI11 option as the
// flag would be. Anything else is refused with the file, the line and the key named: an unknown
// key (a typo must not silently fall back to a default), a key given twice, a list or mapping
// where one value belongs, a value the option refuses, a file that is not YAML.
//
// CLI11 has config files of its own (set_config: TOML/INI), but it applies them before the
// environment, so a file would win over SIMKIT_*; and its errors name neither file nor line.
// Hence this adapter, run once CLI11 has read the command line and the environment.

#include <set>
#include <string>

#include <CLI/CLI.hpp>

namespace simkit::cli {

/// The environment variable of `--name`: "SIMKIT_" + NAME, '-' as '_' (--data-dir: SIMKIT_DATA_DIR).
std::string env_name_for(const std::string& long_name);

/// Sets each option of `app` named in `file` that neither the command line nor its environment
/// variable set. `not_settings` are long names (without dashes) that a file may not hold
/// (config itself, actions such as print-routes). Throws CLI::ConfigError naming the file, the
/// line and the key: `simkit` prints it and exits with status 2, as for any usage error.
void apply_config_file(CLI::App& app, const std::string& file, const std::set<std::string>& not_settings);

}  // namespace simkit::cli
