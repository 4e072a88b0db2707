// Collection aliases, Qdrant's: a second name under which a collection is found by every route,
// so that clients can be switched from one collection to its rebuilt successor in one step.
// POST /collections/aliases applies a list of actions (create_alias, delete_alias,
// rename_alias) all or none; the table is one JSON file, data-dir/aliases.json, replaced
// atomically (written beside, fsynced, renamed), so a crash leaves the old table or the new.

#include <fcntl.h>
#include <unistd.h>

#include <fstream>

#include <simkit/error.hpp>

#include "api.hpp"
#include "api_error.hpp"
#include "log.hpp"
#include "request_json.hpp"

namespace simkit::server {

namespace fs = std::filesystem;

namespace {

std::string name_field(const nlohmann::json& o, const char* key, const std::string& where) {
  if (!o.contains(key) || !o[key].is_string()) bad_request(where + "." + key + " is required: a name");
  const std::string name = o[key].get<std::string>();
  check_collection_name(name);
  return name;
}

void fsync_file(const fs::path& p, int flags) {
  const int fd = ::open(p.c_str(), flags);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

nlohmann::json alias_list(const std::map<std::string, std::string>& aliases, const std::string& only = "") {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [alias, collection] : aliases)
    if (only.empty() || collection == only) list.push_back({{"alias_name", alias}, {"collection_name", collection}});
  return {{"aliases", list}};
}

}  // namespace

void Api::load_aliases() {
  const fs::path file = settings_.data_dir / "aliases.json";
  if (!fs::exists(file)) return;
  std::ifstream in(file);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object()) {
    // Not fatal: the collections serve under their own names; the next alias change rewrites it.
    log_line(LogLevel::warn, "%s is damaged (not a JSON object); no aliases loaded", file.c_str());
    return;
  }
  std::lock_guard g(collections_mutex_);
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it->is_string() && collections_.count(it->get<std::string>())) aliases_[it.key()] = it->get<std::string>();
}

void Api::save_aliases(const std::map<std::string, std::string>& aliases) {
  const fs::path file = settings_.data_dir / "aliases.json";
  const fs::path tmp = settings_.data_dir / ".aliases.json.tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << nlohmann::json(aliases).dump();
    if (!out.flush()) throw Error(ErrorCode::io, "cannot write " + tmp.string());
  }
  fsync_file(tmp, O_RDONLY);
  fs::rename(tmp, file);
  fsync_file(settings_.data_dir, O_RDONLY | O_DIRECTORY);
}

void Api::update_aliases(Call& call) {
  const nlohmann::json body = parse_object(call.request.body, settings_.limits);
  check_fields(body, {"actions"}, "body");
  if (!body.contains("actions") || !body["actions"].is_array())
    bad_request(
        "body.actions must be an array of {\"create_alias\": ...}, {\"delete_alias\": ...} or "
        "{\"rename_alias\": ...}");
  const nlohmann::json actions = body["actions"];
  blocking(std::move(call), [this, actions](Call& c) {
    std::lock_guard admin(admin_mutex_);
    std::map<std::string, std::string> next;
    {
      std::lock_guard g(collections_mutex_);
      next = aliases_;
    }
    for (size_t i = 0; i < actions.size(); ++i) {
      const std::string at = "body.actions[" + std::to_string(i) + "]";
      const nlohmann::json& a = actions[i];
      if (!a.is_object() || a.size() != 1) bad_request(at + " must be an object with one action");
      const std::string kind = a.begin().key();
      const nlohmann::json& v = a.begin().value();
      if (!v.is_object()) bad_request(at + "." + kind + " must be an object");
      if (kind == "create_alias") {
        check_fields(v, {"collection_name", "alias_name"}, at + "." + kind);
        const std::string target = name_field(v, "collection_name", at + "." + kind);
        const std::string alias = name_field(v, "alias_name", at + "." + kind);
        std::lock_guard g(collections_mutex_);
        if (!collections_.count(target)) throw ApiError(404, "collection '" + target + "' does not exist");
        if (collections_.count(alias)) bad_request(at + ": '" + alias + "' is a collection's name");
        next[alias] = target;  // as Qdrant: an existing alias is moved
      } else if (kind == "delete_alias") {
        check_fields(v, {"alias_name"}, at + "." + kind);
        const std::string alias = name_field(v, "alias_name", at + "." + kind);
        if (!next.erase(alias)) throw ApiError(404, "alias '" + alias + "' does not exist");
      } else if (kind == "rename_alias") {
        check_fields(v, {"old_alias_name", "new_alias_name"}, at + "." + kind);
        const std::string from = name_field(v, "old_alias_name", at + "." + kind);
        const std::string to = name_field(v, "new_alias_name", at + "." + kind);
        auto it = next.find(from);
        if (it == next.end()) throw ApiError(404, "alias '" + from + "' does not exist");
        {
          std::lock_guard g(collections_mutex_);
          if (collections_.count(to)) bad_request(at + ": '" + to + "' is a collection's name");
        }
        const std::string target = it->second;
        next.erase(it);
        next[to] = target;
      } else {
        bad_request(at + ": unknown action " + simkit::quoted(kind) + " (create_alias, delete_alias, rename_alias)");
      }
    }
    save_aliases(next);
    {
      std::lock_guard g(collections_mutex_);
      aliases_ = std::move(next);
    }
    reply(c, 200, {{"result", true}});
  });
}

void Api::list_aliases(Call& call) {
  std::lock_guard g(collections_mutex_);
  reply(call, 200, {{"result", alias_list(aliases_)}});
}

void Api::list_collection_aliases(Call& call) {
  const std::string name = find(call.params[0])->name();
  std::lock_guard g(collections_mutex_);
  reply(call, 200, {{"result", alias_list(aliases_, name)}});
}

}  // namespace simkit::server
