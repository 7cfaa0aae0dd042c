// The example configs in etc/ and the reload list in docs/operations.md read the
// schema rows: every key with its default (admin.port with the packaged files' fixed
// port), [reloads] on the lines of the keys a SIGHUP applies, and the docs naming
// exactly those keys.
#include <catch2/catch.hpp>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "distributor/distributor_config.h"
#include "server/server_config.h"

namespace {

std::string read_source(const std::string& relative) {
    std::ifstream in(std::string(MDCAST_SOURCE_DIR) + "/" + relative);
    REQUIRE(in);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// The packaged files fix admin.port so Prometheus (deploy/monitoring/prometheus-scrape.yml)
// and mdcastctl --distributor / --instance N find the daemons; every other key shows its default.
template <class T>
void check_example(const mdcast::config::Schema<T>& schema, const std::string& relative,
                   const std::string& admin_port) {
    std::string problems;
    for (const auto& error :
         schema.check_example(read_source(relative), relative, {{"admin.port", admin_port}}))
        problems += error.to_string() + "\n";
    INFO(problems);
    CHECK(problems.empty());
}

template <class T>
std::set<std::string> reloading_keys(const mdcast::config::Schema<T>& schema) {
    std::set<std::string> keys;
    for (const auto& [key, value] : schema.values(schema.defaults())) {
        if (schema.reloads(key)) keys.insert(key);
    }
    return keys;
}

// The keys named in the reload table's row for `daemon` in docs/operations.md.
std::set<std::string> documented_reloading_keys(const std::string& daemon) {
    std::istringstream docs(read_source("docs/operations.md"));
    const std::string row_start = "| `" + daemon + "` |";
    bool in_table = false;
    for (std::string line; std::getline(docs, line);) {
        if (line == "| daemon | keys a SIGHUP applies |") in_table = true;
        if (line.empty()) in_table = false;
        if (!in_table || line.rfind(row_start, 0) != 0) continue;
        std::set<std::string> keys;
        const std::regex key(R"(`([a-z0-9_.]+)`)");
        const std::string rest = line.substr(row_start.size());
        for (std::sregex_iterator it(rest.begin(), rest.end(), key), end; it != end; ++it)
            keys.insert((*it)[1]);
        return keys;
    }
    FAIL("docs/operations.md has no reload table row for " << daemon);
    return {};
}

}  // namespace

TEST_CASE("etc/server.yaml shows every server key with its default and reload mark", "[config]") {
    check_example(mdcast::server::server_schema(), "etc/server.yaml", "14201");
}

TEST_CASE("etc/distributor.yaml shows every distributor key with its default and reload mark",
          "[config]") {
    check_example(mdcast::distributor::distributor_schema(), "etc/distributor.yaml", "14200");
}

TEST_CASE("docs/operations.md names exactly the keys whose rows reload", "[config]") {
    CHECK(documented_reloading_keys("mdcast-server") ==
          reloading_keys(mdcast::server::server_schema()));
    CHECK(documented_reloading_keys("mdcast-distributor") ==
          reloading_keys(mdcast::distributor::distributor_schema()));
}
