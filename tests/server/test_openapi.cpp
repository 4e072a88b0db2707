// docs/openapi.yaml against the router's own table, both ways: every route the server serves is
// described, and nothing described is missing from the server. The table is Api::route_list()
// (what `simkit serve --print-routes` prints, and the list Api::route() matches), so a route
// added to api.cpp without its description fails here with the route named. Also checked: the
// description is well formed where a client generator would trip (path parameters declared,
// every $ref resolving, one 2xx answer per operation, unique operationIds), and the probes, and
// only they, need no key.

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "api.hpp"

namespace {

const char* const kSpec = SIMKIT_OPENAPI_YAML;
const std::vector<std::string> kMethods = {"get", "put", "post", "delete", "patch", "head", "options"};
const std::set<std::string> kProbes = {"GET /healthz", "GET /livez", "GET /readyz"};

YAML::Node spec() {
  static const YAML::Node root = [] {
    try {
      return YAML::LoadFile(kSpec);
    } catch (const YAML::Exception& e) {
      ADD_FAILURE() << kSpec << " is not readable YAML: " << e.what();
      return YAML::Node();
    }
  }();
  return root;
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

struct Operation {
  std::string path;
  YAML::Node path_item;
  YAML::Node op;
};

// "METHOD /path" -> its operation, for every operation under `paths`.
std::map<std::string, Operation> described() {
  std::map<std::string, Operation> ops;
  const YAML::Node paths = spec()["paths"];
  if (!paths || !paths.IsMap()) {
    ADD_FAILURE() << kSpec << " has no 'paths' mapping";
    return ops;
  }
  for (const auto& entry : paths) {
    const std::string path = entry.first.as<std::string>();
    for (const std::string& method : kMethods)
      if (entry.second[method])
        ops.emplace(upper(method) + " " + path, Operation{path, entry.second, entry.second[method]});
  }
  return ops;
}

// A local reference ("#/components/parameters/Wait") -> the node it names; an empty node when
// it names nothing.
YAML::Node resolve(const std::string& ref) {
  if (ref.rfind("#/", 0) != 0) return YAML::Node();
  YAML::Node node = spec();
  for (size_t start = 2; start <= ref.size();) {
    size_t end = ref.find('/', start);
    if (end == std::string::npos) end = ref.size();
    const YAML::Node next = node[ref.substr(start, end - start)];
    if (!next) return YAML::Node();
    node.reset(next);  // not `node = next`: yaml-cpp's assignment would overwrite the node in the tree
    start = end + 1;
  }
  return node;
}

YAML::Node deref(const YAML::Node& node) { return node["$ref"] ? resolve(node["$ref"].as<std::string>()) : node; }

void collect_refs(const YAML::Node& node, std::vector<std::string>& refs) {
  if (node.IsMap()) {
    for (const auto& entry : node) {
      if (entry.first.as<std::string>() == "$ref" && entry.second.IsScalar())
        refs.push_back(entry.second.as<std::string>());
      else
        collect_refs(entry.second, refs);
    }
  } else if (node.IsSequence()) {
    for (const auto& item : node) collect_refs(item, refs);
  }
}

}  // namespace

TEST(OpenApi, EveryServedRouteIsDescribed) {
  const auto ops = described();
  for (const std::string& route : simkit::server::Api::route_list())
    EXPECT_TRUE(ops.count(route)) << "route " << route << " is served but not in docs/openapi.yaml: describe it under "
                                  << "paths (method, parameters, request body, answers), as its neighbours are";
}

TEST(OpenApi, EveryDescribedRouteIsServed) {
  const std::vector<std::string> served = simkit::server::Api::route_list();
  for (const auto& [route, op] : described())
    EXPECT_TRUE(std::find(served.begin(), served.end(), route) != served.end())
        << "docs/openapi.yaml describes " << route << ", which the router does not serve (simkit serve "
        << "--print-routes lists what it does): remove the entry or add the route";
}

TEST(OpenApi, IsOpenApi3WithInfo) {
  ASSERT_TRUE(spec()["openapi"]) << kSpec;
  EXPECT_EQ(spec()["openapi"].as<std::string>().rfind("3.", 0), 0u);
  EXPECT_TRUE(spec()["info"]["title"] && spec()["info"]["version"]);
}

TEST(OpenApi, PathParametersAreDeclared) {
  for (const auto& [route, o] : described()) {
    std::set<std::string> declared;
    for (const YAML::Node& list : {o.path_item["parameters"], o.op["parameters"]})
      if (list)
        for (const auto& p : list) {
          const YAML::Node param = deref(p);
          ASSERT_TRUE(param) << route << ": a parameter's $ref resolves to nothing";
          if (param["in"].as<std::string>("") == "path") {
            EXPECT_TRUE(param["required"].as<bool>(false))
                << route << ": path parameter " << param["name"] << " must be required";
            declared.insert(param["name"].as<std::string>(""));
          }
        }
    for (size_t open = o.path.find('{'); open != std::string::npos; open = o.path.find('{', open + 1)) {
      const std::string name = o.path.substr(open + 1, o.path.find('}', open) - open - 1);
      EXPECT_TRUE(declared.count(name)) << route << ": {" << name << "} is not declared as a path parameter";
    }
  }
}

TEST(OpenApi, EachOperationHasOneSuccessAndAUniqueId) {
  std::set<std::string> ids;
  for (const auto& [route, o] : described()) {
    const YAML::Node responses = o.op["responses"];
    ASSERT_TRUE(responses && responses.IsMap()) << route << " has no responses";
    int successes = 0;
    for (const auto& r : responses) successes += r.first.as<std::string>().front() == '2';
    EXPECT_EQ(successes, 1) << route << " should describe exactly one 2xx answer";
    const std::string id = o.op["operationId"].as<std::string>("");
    EXPECT_FALSE(id.empty()) << route << " has no operationId";
    EXPECT_TRUE(ids.insert(id).second) << route << ": operationId " << id << " is used twice";
  }
}

TEST(OpenApi, OnlyTheProbesNeedNoKey) {
  for (const auto& [route, o] : described()) {
    const YAML::Node security = o.op["security"];
    const bool open = security && security.IsSequence() && security.size() == 0;
    EXPECT_EQ(open, kProbes.count(route) > 0)
        << route
        << (open ? " is described as needing no API key, but the server asks for one"
                 : " needs no API key (a probe): give it 'security: []'");
  }
}

TEST(OpenApi, EveryRefResolves) {
  std::vector<std::string> refs;
  collect_refs(spec(), refs);
  EXPECT_GT(refs.size(), 10u);
  for (const std::string& ref : refs) EXPECT_TRUE(resolve(ref)) << "$ref " << ref << " names nothing in " << kSpec;
}
