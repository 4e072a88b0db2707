#include "serve_config.hpp"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include <yaml-cpp/yaml.h>
#include <simkit/error.hpp>

namespace simkit::cli {

namespace {

// The long name a key would be, or "" for an option a file may not set.
std::string setting_name(const CLI::Option* opt, const std::set<std::string>& not_settings) {
  if (opt->get_lnames().empty()) return "";
  const std::string& name = opt->get_lnames().front();
  return not_settings.count(name) || name == "help" ? "" : name;
}

std::string known_keys(CLI::App& app, const std::set<std::string>& not_settings) {
  std::string keys;
  for (const CLI::Option* opt : app.get_options())
    if (const std::string name = setting_name(opt, not_settings); !name.empty())
      keys += (keys.empty() ? "" : ", ") + name;
  return keys;
}

class ConfigReader {
 public:
  ConfigReader(CLI::App& app, const std::string& file, const std::set<std::string>& not_settings)
      : app_(app), file_(file), not_settings_(not_settings) {}

  void apply(const YAML::Node& root) {
    if (!root || root.IsNull()) return;  // an empty file sets nothing
    if (!root.IsMap())
      fail(root, "the file must be a mapping of option names to values, such as 'port: 6333' on each line");
    std::map<std::string, int> seen;  // key -> its line
    for (const auto& entry : root) {
      const YAML::Node& key = entry.first;
      if (!key.IsScalar()) fail(key, "a key must be an option's name, such as 'port'");
      const std::string name = key.Scalar();
      const int line = key.Mark().line + 1;
      if (auto [it, fresh] = seen.emplace(name, line); !fresh)
        fail(key, "key " + simkit::quoted(name) + " is given twice (first on line " + std::to_string(it->second) + ")");
      set(name, key, entry.second);
    }
  }

 private:
  void set(const std::string& name, const YAML::Node& key, const YAML::Node& value) {
    CLI::Option* opt = app_.get_option_no_throw("--" + name);
    if (!opt || setting_name(opt, not_settings_) != name) fail(key, unknown_key(name, opt != nullptr));
    const std::string expected = " (expected " + type_of(opt) + ")";
    if (!value || value.IsNull()) fail(key, name + " has no value" + expected);
    if (!value.IsScalar())
      fail(key, name + " must be one value, not a " + (value.IsSequence() ? "list" : "mapping") + expected);
    // The command line or the environment may have set it: they win, but the file's value is
    // checked all the same, so a file is never wrong in a way that shows only once a flag is gone.
    const CLI::results_t winner = opt->results();
    const std::string text = value.Scalar();
    try {
      opt->clear();
      opt->add_result(text);
      opt->run_callback();  // converts and range-checks exactly as for the flag
      if (!winner.empty()) {
        opt->clear();
        opt->add_result(winner);
        opt->run_callback();
      }
    } catch (const CLI::Error& e) {
      std::string why = e.what();  // "--port: Value 70000 not in range 0 to 65535": the key is named already
      if (why.rfind("--" + name + ": ", 0) == 0) why.erase(0, name.size() + 4);
      fail(key, name + ": " + simkit::quoted(text) + " is refused: " + why);
    }
  }

  std::string unknown_key(const std::string& name, bool exists) const {
    if (exists) return simkit::quoted(name) + " cannot be set in a config file; give it on the command line";
    std::string hint;
    std::string dashed = name;
    for (char& c : dashed) c = c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (dashed != name)
      if (const CLI::Option* opt = app_.get_option_no_throw("--" + dashed);
          opt && setting_name(opt, not_settings_) == dashed)
        hint = " (did you mean " + simkit::quoted(dashed) + "? keys are spelled as the flags, kebab-case)";
    if (hint.empty()) hint = " (keys are the option names without dashes: " + known_keys(app_, not_settings_) + ")";
    return "unknown key " + simkit::quoted(name) + hint;
  }

  static std::string type_of(const CLI::Option* opt) {
    const std::string type = opt->get_type_name();
    return type.empty() ? "a value" : type;
  }

  [[noreturn]] void fail(const YAML::Node& at, const std::string& what) const {
    throw CLI::ConfigError("--config " + simkit::quoted(file_, 200) + ", line " + std::to_string(at.Mark().line + 1) +
                           ": " + what);
  }

  CLI::App& app_;
  const std::string& file_;
  const std::set<std::string>& not_settings_;
};

}  // namespace

std::string env_name_for(const std::string& long_name) {
  std::string env = "SIMKIT_";
  for (char c : long_name) env += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return env;
}

void apply_config_file(CLI::App& app, const std::string& file, const std::set<std::string>& not_settings) {
  std::ifstream in(file);
  if (!in)
    throw CLI::ConfigError("--config " + simkit::quoted(file, 200) + ": cannot read it (" + std::strerror(errno) + ")");
  std::stringstream text;
  text << in.rdbuf();
  YAML::Node root;
  try {
    root = YAML::Load(text.str());
  } catch (const YAML::ParserException& e) {
    throw CLI::ConfigError("--config " + simkit::quoted(file, 200) + ", line " + std::to_string(e.mark.line + 1) +
                           ", column " + std::to_string(e.mark.column + 1) + ": not valid YAML: " + e.msg);
  }
  ConfigReader(app, file, not_settings).apply(root);
}

}  // namespace simkit::cli
