#include "common/config/config_schema.h"

#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using mdcast::config::ConfigError;
using mdcast::config::ConfigErrors;
using mdcast::config::ReloadVerdict;
using mdcast::config::Schema;

struct TestConfig {
    std::string listen_address;
    uint16_t listen_port = 0;
    size_t max_output_bytes = 0;
    uint32_t flush_interval_ms = 0;
    int64_t clock_offset_us = 0;
    double sample_ratio = 0;
    bool tls_enabled = false;
    bool verify_peer = false;
    std::string name;
    std::string log_level;
    std::vector<std::string> peers;
};

constexpr size_t kMiB = 1024 * 1024;

Schema<TestConfig> make_schema() {
    Schema<TestConfig> schema("mdcast-test");
    schema.address("listen.address", &TestConfig::listen_address, "0.0.0.0", "Address to bind.")
        .integer("listen.port", &TestConfig::listen_port, 9000, 1, 65535, "TCP port to listen on.")
        .integer("limits.max_output_bytes", &TestConfig::max_output_bytes, kMiB, 1024, 1024 * kMiB,
                 "Output bytes queued per client before it is a slow consumer.")
        .integer("limits.flush_interval_ms", &TestConfig::flush_interval_ms, 5, 0, 1000,
                 "Coalescing delay before output is flushed.")
        .integer("clock.offset_us", &TestConfig::clock_offset_us, -5, -100, 100,
                 "Correction added to every timestamp.")
        .real("sampling.ratio", &TestConfig::sample_ratio, 0.5, 0.0, 1.0,
              "Fraction of messages whose latency is measured.")
        .boolean("tls.enabled", &TestConfig::tls_enabled, false, "Serve clients over TLS.")
        .reloads()
        .boolean("tls.client.verify_peer", &TestConfig::verify_peer, true,
                 "Require a valid client certificate.")
        .string("name", &TestConfig::name, "mdcast", "Instance name shown in logs.")
        .choice("log.level", &TestConfig::log_level, "info",
                {"trace", "debug", "info", "warn", "error"}, "Minimum level logged.")
        .string_list("peers", &TestConfig::peers, {}, "Distributor addresses to connect to.");
    return schema;
}

// Loads `text` and returns the errors it must produce.
std::vector<ConfigError> errors_of(const std::string& text) {
    try {
        make_schema().load_string(text, "test.yaml");
    } catch (const ConfigErrors& e) {
        REQUIRE_FALSE(e.errors().empty());
        return e.errors();
    }
    FAIL("expected ConfigErrors for:\n" << text);
    return {};
}

// The single error `text` must produce, formatted.
std::string single_error(const std::string& text) {
    auto errors = errors_of(text);
    INFO(ConfigErrors(errors).what());
    REQUIRE(errors.size() == 1);
    return errors[0].to_string();
}

struct TempFile {
    std::string path;
    explicit TempFile(const std::string& text) {
        char name[] = "/tmp/mdcast_config_test_XXXXXX";
        int fd = mkstemp(name);
        REQUIRE(fd >= 0);
        close(fd);
        path = name;
        std::ofstream(path) << text;
    }
    ~TempFile() { std::remove(path.c_str()); }
};

}  // namespace

TEST_CASE("defaults are applied when nothing is configured", "[config]") {
    auto schema = make_schema();
    for (const TestConfig& config : {schema.defaults(), schema.load_string("", "empty.yaml"),
                                     schema.load_string("# only a comment\n", "comment.yaml")}) {
        CHECK(config.listen_address == "0.0.0.0");
        CHECK(config.listen_port == 9000);
        CHECK(config.max_output_bytes == kMiB);
        CHECK(config.flush_interval_ms == 5);
        CHECK(config.clock_offset_us == -5);
        CHECK(config.sample_ratio == 0.5);
        CHECK_FALSE(config.tls_enabled);
        CHECK(config.verify_peer);
        CHECK(config.name == "mdcast");
        CHECK(config.log_level == "info");
        CHECK(config.peers.empty());
    }
}

TEST_CASE("a full valid file sets every key", "[config]") {
    const std::string text =
        "listen:\n"
        "  address: \"::1\"\n"
        "  port: 8080\n"
        "limits:\n"
        "  max_output_bytes: 0x100000\n"
        "  flush_interval_ms: 0\n"
        "clock:\n"
        "  offset_us: -100\n"
        "sampling:\n"
        "  ratio: 1e-1\n"
        "tls:\n"
        "  enabled: yes\n"
        "  client:\n"
        "    verify_peer: off\n"
        "name: ''\n"
        "log: {level: debug}\n"
        "peers:\n"
        "  - 10.0.0.1:7000\n"
        "  - 10.0.0.2:7000\n";
    TestConfig config = make_schema().load_string(text, "full.yaml");
    CHECK(config.listen_address == "::1");
    CHECK(config.listen_port == 8080);
    CHECK(config.max_output_bytes == kMiB);
    CHECK(config.flush_interval_ms == 0);
    CHECK(config.clock_offset_us == -100);
    CHECK(config.sample_ratio == Approx(0.1));
    CHECK(config.tls_enabled);
    CHECK_FALSE(config.verify_peer);
    CHECK(config.name.empty());
    CHECK(config.log_level == "debug");
    CHECK(config.peers == std::vector<std::string>{"10.0.0.1:7000", "10.0.0.2:7000"});
}

TEST_CASE("keys left out keep their defaults", "[config]") {
    TestConfig config = make_schema().load_string("listen:\n  port: 1\n", "partial.yaml");
    CHECK(config.listen_port == 1);
    CHECK(config.listen_address == "0.0.0.0");
    CHECK(config.log_level == "info");
}

TEST_CASE("booleans accept the YAML 1.1 spellings", "[config]") {
    auto schema = make_schema();
    for (const char* word : {"true", "True", "yes", "on", "ON"}) {
        INFO(word);
        CHECK(
            schema.load_string(std::string("tls: {enabled: ") + word + "}", "b.yaml").tls_enabled);
    }
    for (const char* word : {"false", "no", "off", "Off"}) {
        INFO(word);
        CHECK_FALSE(
            schema.load_string(std::string("tls:\n  client:\n    verify_peer: ") + word, "b.yaml")
                .verify_peer);
    }
}

TEST_CASE("ConfigError formats as file:line:col: key 'k': message", "[config]") {
    CHECK(ConfigError{"f.yaml", 3, 5, "listen.port", "bad"}.to_string() ==
          "f.yaml:3:5: key 'listen.port': bad");
    CHECK(ConfigError{"f.yaml", 0, 0, "", "cannot open"}.to_string() == "f.yaml: cannot open");
    ConfigErrors errors({{"a.yaml", 1, 1, "x", "one"}, {"a.yaml", 2, 1, "y", "two"}});
    CHECK(std::string(errors.what()) == "a.yaml:1:1: key 'x': one\na.yaml:2:1: key 'y': two");
}

TEST_CASE("a wrong value is reported at its exact line and column", "[config]") {
    CHECK(single_error("name: x\nlisten:\n  port: abc\n") ==
          "test.yaml:3:9: key 'listen.port': expected an integer, got 'abc'");
}

TEST_CASE("unknown keys are refused with their full dotted name", "[config]") {
    std::string error = single_error("name: x\nlisten:\n  colour: blue\n");
    CHECK_THAT(error, Catch::Contains("test.yaml:3:3:"));
    CHECK_THAT(error, Catch::Contains("key 'listen.colour': unknown key"));
    CHECK_THAT(error, !Catch::Contains("did you mean"));
}

TEST_CASE("a misspelt key gets a suggestion", "[config]") {
    CHECK_THAT(single_error("listen:\n  prot: 80\n"),
               Catch::Contains(":2:3: key 'listen.prot': unknown key; "
                               "did you mean 'listen.port'?"));
    CHECK_THAT(single_error("lisen:\n  port: 80\n"),
               Catch::Contains(":1:1: key 'lisen': unknown key; did you mean 'listen'?"));
    CHECK_THAT(single_error("log:\n  levle: info\n"), Catch::Contains("did you mean 'log.level'?"));
    // The right name in the wrong section.
    CHECK_THAT(single_error("port: 80\n"),
               Catch::Contains("key 'port': unknown key; did you mean 'listen.port'?"));
}

TEST_CASE("integers out of range state the range", "[config]") {
    CHECK(single_error("listen:\n  port: 70000\n") ==
          "test.yaml:2:9: key 'listen.port': 70000 is out of range (allowed 1..65535)");
    CHECK_THAT(single_error("listen:\n  port: 0\n"), Catch::Contains("allowed 1..65535"));
    CHECK_THAT(single_error("clock:\n  offset_us: -101\n"),
               Catch::Contains("key 'clock.offset_us': -101 is out of range (allowed -100..100)"));
    CHECK_THAT(single_error("limits:\n  max_output_bytes: 10\n"),
               Catch::Contains("allowed 1024..1073741824"));
}

TEST_CASE("negative values for unsigned keys and overflow are errors, not wrap-around",
          "[config]") {
    CHECK_THAT(single_error("listen:\n  port: -1\n"),
               Catch::Contains("key 'listen.port': -1 is out of range (allowed 1..65535)"));
    CHECK_THAT(single_error("limits:\n  flush_interval_ms: 4294967296\n"),
               Catch::Contains("out of range"));
    CHECK_THAT(single_error("limits:\n  max_output_bytes: 99999999999999999999999999\n"),
               Catch::Contains("out of range"));
    CHECK_THAT(single_error("clock:\n  offset_us: -99999999999999999999999999\n"),
               Catch::Contains("out of range"));
}

TEST_CASE("the full int64 range parses exactly", "[config]") {
    struct Wide {
        int64_t value = 0;
    };
    Schema<Wide> schema("wide");
    schema.integer("value", &Wide::value, 0, std::numeric_limits<int64_t>::min(),
                   std::numeric_limits<int64_t>::max(), "Any int64.");
    CHECK(schema.load_string("value: -9223372036854775808", "w.yaml").value ==
          std::numeric_limits<int64_t>::min());
    CHECK(schema.load_string("value: 9223372036854775807", "w.yaml").value ==
          std::numeric_limits<int64_t>::max());
    CHECK_THROWS_AS(schema.load_string("value: 9223372036854775808", "w.yaml"), ConfigErrors);
    CHECK_THROWS_AS(schema.load_string("value: -9223372036854775809", "w.yaml"), ConfigErrors);
}

TEST_CASE("values of the wrong type are refused", "[config]") {
    CHECK_THAT(single_error("listen:\n  port: 1.5\n"),
               Catch::Contains(":2:9: key 'listen.port': expected an integer, got '1.5'"));
    CHECK_THAT(single_error("listen:\n  port: 80 # fine\nlimits:\n  flush_interval_ms: 1e3\n"),
               Catch::Contains(":4:22: key 'limits.flush_interval_ms': expected an integer"));
    CHECK_THAT(single_error("tls:\n  enabled: maybe\n"),
               Catch::Contains(":2:12: key 'tls.enabled': expected a boolean"));
    CHECK_THAT(single_error("sampling:\n  ratio: half\n"),
               Catch::Contains("key 'sampling.ratio': expected a real number, got 'half'"));
    CHECK_THAT(single_error("sampling:\n  ratio: 1.5\n"),
               Catch::Contains("1.5 is out of range (allowed 0..1)"));
    CHECK_THAT(single_error("sampling:\n  ratio: .nan\n"),
               Catch::Contains("expected a real number"));
}

TEST_CASE("a mapping where a scalar belongs and vice versa", "[config]") {
    CHECK_THAT(single_error("listen:\n  port:\n    number: 80\n"),
               Catch::Contains(":3:5: key 'listen.port': expected an integer, got a mapping"));
    CHECK_THAT(single_error("name: [a, b]\n"),
               Catch::Contains(":1:7: key 'name': expected a string, got a list"));
    CHECK_THAT(single_error("listen: 8080\n"),
               Catch::Contains(":1:9: key 'listen': expected a mapping (section with keys "
                               "address, port), got '8080'"));
    CHECK_THAT(single_error("peers: 10.0.0.1\n"),
               Catch::Contains("key 'peers': expected a list of strings, got '10.0.0.1'"));
    CHECK_THAT(single_error("peers:\n  - a\n  - {host: b}\n"),
               Catch::Contains(":3:5: key 'peers': list element 2 must be a string"));
}

TEST_CASE("a key without a value is an error, reported on the key's line", "[config]") {
    CHECK_THAT(single_error("name: x\nlisten:\n  port:\nlog:\n  level: warn\n"),
               Catch::Contains(":3:3: key 'listen.port': missing value (expected an integer)"));
}

TEST_CASE("choices list the allowed values", "[config]") {
    CHECK(single_error("log:\n  level: loud\n") ==
          "test.yaml:2:10: key 'log.level': 'loud' is not one of: trace, debug, info, warn, "
          "error");
    CHECK_THAT(single_error("log:\n  level: INFO\n"), Catch::Contains("'INFO' is not one of"));
}

TEST_CASE("addresses must be IPv4 or IPv6 literals", "[config]") {
    auto schema = make_schema();
    CHECK(schema.load_string("listen: {address: 127.0.0.1}", "a.yaml").listen_address ==
          "127.0.0.1");
    CHECK(schema.load_string("listen: {address: 'fe80::1'}", "a.yaml").listen_address == "fe80::1");
    CHECK_THAT(single_error("listen:\n  address: 999.0.0.1\n"),
               Catch::Contains(":2:12: key 'listen.address': '999.0.0.1' is not an IPv4 or IPv6"));
    CHECK_THAT(single_error("listen:\n  address: localhost\n"),
               Catch::Contains("'localhost' is not an IPv4 or IPv6 address"));
}

TEST_CASE("duplicate keys are refused", "[config]") {
    CHECK(single_error("name: a\nlog:\n  level: info\nname: b\n") ==
          "test.yaml:4:1: key 'name': duplicate key (first set on line 1)");
    CHECK_THAT(single_error("listen:\n  port: 1\n  port: 2\n"),
               Catch::Contains(":3:3: key 'listen.port': duplicate key (first set on line 2)"));
}

TEST_CASE("dotted keys must be written as nested mappings", "[config]") {
    CHECK_THAT(single_error("name: x\nlisten.port: 80\n"),
               Catch::Contains(":2:1: key 'listen.port': dotted keys must be written as nested "
                               "mappings"));
}

TEST_CASE("YAML syntax errors carry their position", "[config]") {
    std::string error = single_error("name: x\nlisten:\n  port: [1, 2\n");
    CHECK_THAT(error, Catch::StartsWith("test.yaml:"));
    CHECK_THAT(error, Catch::Contains("YAML syntax error"));
    auto errors = errors_of("name: x\nlog: {level: info\n}}\n");
    CHECK(errors[0].line >= 2);
}

TEST_CASE("the top level must be a single mapping", "[config]") {
    CHECK_THAT(single_error("- a\n- b\n"),
               Catch::Contains("test.yaml:1:1: the top level must be a mapping of keys, "
                               "got a list"));
    CHECK_THAT(single_error("just text\n"), Catch::Contains("must be a mapping"));
    CHECK_THAT(single_error("name: a\n---\nname: b\n"),
               Catch::Contains("only one YAML document is allowed"));
}

// yaml-cpp 0.7's LoadAll loops for ever on these, allocating until the process
// dies (found by the config fuzz target); each must be one clear error.
TEST_CASE("a stray ',' at the top level is an error, not a hang", "[config]") {
    CHECK_THAT(single_error(","), Catch::Contains("test.yaml:1:1: only one YAML document"));
    CHECK_THAT(single_error("# comment\n,# another\nname: a\n"),
               Catch::Contains("only one YAML document is allowed"));
    CHECK_THAT(single_error(",\nname: a\n"), Catch::Contains("stray ','"));
}

TEST_CASE("every error in a file is reported at once, in file order", "[config]") {
    const std::string text =
        "listen:\n"
        "  port: 70000\n"      // line 2: out of range
        "  adress: 1.2.3.4\n"  // line 3: unknown, suggestion
        "tls:\n"
        "  enabled: maybe\n"  // line 5: bad boolean
        "log:\n"
        "  level: loud\n"  // line 7: bad choice
        "bogus: 1\n";      // line 8: unknown
    auto errors = errors_of(text);
    REQUIRE(errors.size() == 5);
    CHECK(errors[0].line == 2);
    CHECK(errors[0].key == "listen.port");
    CHECK(errors[1].line == 3);
    CHECK_THAT(errors[1].message, Catch::Contains("did you mean 'listen.address'?"));
    CHECK(errors[2].line == 5);
    CHECK(errors[2].key == "tls.enabled");
    CHECK(errors[3].line == 7);
    CHECK(errors[3].key == "log.level");
    CHECK(errors[4].to_string() == "test.yaml:8:1: key 'bogus': unknown key");
    try {
        make_schema().load_string(text, "test.yaml");
    } catch (const ConfigErrors& e) {
        // what() is ready to print: one error per line.
        CHECK(std::count(e.what(), e.what() + std::strlen(e.what()), '\n') == 4);
    }
}

TEST_CASE("load_file reads a file and names it in errors", "[config]") {
    auto schema = make_schema();
    TempFile good("listen:\n  port: 7000\n");
    CHECK(schema.load_file(good.path).listen_port == 7000);

    TempFile bad("name: x\nlisten:\n  port: nope\n");
    try {
        schema.load_file(bad.path);
        FAIL("expected ConfigErrors");
    } catch (const ConfigErrors& e) {
        REQUIRE(e.errors().size() == 1);
        CHECK_THAT(e.errors()[0].to_string(), Catch::StartsWith(bad.path + ":3:9: "));
    }
}

TEST_CASE("load_file on a missing file gives a clear error", "[config]") {
    const std::string path = "/nonexistent/mdcast/server.yaml";
    try {
        make_schema().load_file(path);
        FAIL("expected ConfigErrors");
    } catch (const ConfigErrors& e) {
        REQUIRE(e.errors().size() == 1);
        CHECK(e.errors()[0].to_string() ==
              path + ": cannot open config file: No such file or directory");
    }
    CHECK_THROWS_WITH(make_schema().load_file("/tmp"),
                      Catch::Contains("/tmp: cannot read config file: it is a directory"));
}

TEST_CASE("describe() documents every key", "[config]") {
    std::string text = make_schema().describe();
    CHECK_THAT(text, Catch::Contains("mdcast-test"));
    const char* const expected_lines[] = {
        "listen.address (address, IPv4 or IPv6 literal; default \"0.0.0.0\"; needs a restart)",
        "    Address to bind.",
        "listen.port (integer, range 1..65535; default 9000; needs a restart)",
        "    TCP port to listen on.",
        "limits.max_output_bytes (integer, range 1024..1073741824; default 1048576; needs a "
        "restart)",
        "limits.flush_interval_ms (integer, range 0..1000; default 5; needs a restart)",
        "clock.offset_us (integer, range -100..100; default -5; needs a restart)",
        "sampling.ratio (real, range 0..1; default 0.5; needs a restart)",
        "tls.enabled (boolean; default false; reloads on SIGHUP)",
        "tls.client.verify_peer (boolean; default true; needs a restart)",
        "name (string; default \"mdcast\"; needs a restart)",
        "log.level (choice, one of: trace, debug, info, warn, error; default \"info\"; needs a "
        "restart)",
        "peers (string list; default []; needs a restart)",
        "    Distributor addresses to connect to.",
    };
    for (const char* expected : expected_lines) {
        CHECK_THAT(text, Catch::Contains(expected));
    }
}

TEST_CASE("declaring a key twice or as both key and section is a programming error", "[config]") {
    Schema<TestConfig> schema("bad");
    schema.string("name", &TestConfig::name, "", "");
    CHECK_THROWS_AS(schema.string("name", &TestConfig::name, "", ""), std::logic_error);
    CHECK_THROWS_AS(schema.string("name.first", &TestConfig::name, "", ""), std::logic_error);
    CHECK_THROWS_AS(schema.string("Bad Key", &TestConfig::name, "", ""), std::logic_error);
    CHECK_THROWS_AS(schema.string("a..b", &TestConfig::name, "", ""), std::logic_error);
}

TEST_CASE("changes() lists the keys that differ, rendered as the reload log shows them",
          "[config]") {
    const auto schema = make_schema();
    const TestConfig before = schema.defaults();
    TestConfig after = schema.load_string(
        "listen:\n  port: 9100\nsampling:\n  ratio: 0.25\npeers: [a, b]\n", "reload.yaml");
    const auto changes = schema.changes(before, after);
    REQUIRE(changes.size() == 3);
    CHECK(changes[0].key == "listen.port");
    CHECK(changes[0].after == "9100");
    CHECK(changes[1].key == "sampling.ratio");
    CHECK(changes[1].after == "0.25");
    CHECK(changes[2].key == "peers");
    CHECK(changes[2].after == "[a, b]");
    CHECK(schema.changes(after, after).empty());
}

TEST_CASE("apply_reload() applies the changed keys whose rows reload, unless the daemon says no",
          "[config]") {
    const auto schema = make_schema();
    CHECK(schema.reloads("tls.enabled"));
    CHECK_FALSE(schema.reloads("listen.port"));
    CHECK_FALSE(schema.reloads("no.such_key"));
    CHECK_THROWS_AS(Schema<TestConfig>("empty").reloads(), std::logic_error);
    TestConfig running = schema.defaults();
    const TestConfig fresh = schema.load_string(
        "listen:\n  port: 9100\ntls:\n  enabled: true\n  client:\n    verify_peer: false\n",
        "reload.yaml");
    const auto changes = schema.changes(running, fresh);
    REQUIRE(schema.reloading(changes).size() == 1);
    CHECK(schema.reloading(changes)[0].key == "tls.enabled");
    CHECK(mdcast::config::changed_under(changes, "tls") ==
          std::vector<std::string>{"tls.enabled", "tls.client.verify_peer"});

    TestConfig failed = running;
    const auto refused = schema.apply_reload(changes, {{"tls.enabled"}, {}}, fresh, failed);
    REQUIRE(refused.size() == 3);
    CHECK(refused[1].verdict == ReloadVerdict::kFailed);
    CHECK_FALSE(failed.tls_enabled);

    const auto steps = schema.apply_reload(changes, {}, fresh, running);
    REQUIRE(steps.size() == 3);
    CHECK(steps[0].change.key == "listen.port");
    CHECK(steps[0].verdict == ReloadVerdict::kRestart);
    CHECK(steps[1].verdict == ReloadVerdict::kApplied);
    CHECK(steps[2].verdict == ReloadVerdict::kRestart);
    CHECK(running.tls_enabled);
    CHECK(running.listen_port == schema.defaults().listen_port);  // needs a restart: untouched
    CHECK(running.verify_peer);
    CHECK_FALSE(schema.copy_key("no.such_key", fresh, running));
}

TEST_CASE("json_values() gives each key's value as JSON of its type, encoded once", "[config]") {
    const auto schema = make_schema();
    const TestConfig config = schema.load_string(
        "name: 'say \"hi\"\\'\npeers: [a, \"b,c\"]\nclock:\n  offset_us: -7\n", "info.yaml");
    std::map<std::string, std::string> json;
    for (const auto& [key, value] : schema.json_values(config)) json[key] = value;
    CHECK(json.at("listen.address") == "\"0.0.0.0\"");
    CHECK(json.at("listen.port") == "9000");
    CHECK(json.at("clock.offset_us") == "-7");
    CHECK(json.at("sampling.ratio") == "0.5");
    CHECK(json.at("tls.client.verify_peer") == "true");
    CHECK(json.at("name") == "\"say \\\"hi\\\"\\\\\"");
    CHECK(json.at("peers") == "[\"a\",\"b,c\"]");
}

TEST_CASE("a bad value does not hide the rules' problems with the other keys", "[config]") {
    auto schema = make_schema();
    schema.rule([](const TestConfig& c, mdcast::config::Problems& problems) {
        if (c.tls_enabled && c.name == "mdcast") problems.push_back({"name", "set a name for TLS"});
        if (c.listen_port == 9000) problems.push_back({"listen.port", "9000 is taken"});
    });
    TempFile file("listen:\n  port: lots\ntls:\n  enabled: true\n");
    std::vector<ConfigError> errors;
    const TestConfig loaded = schema.load_file_collecting(file.path, errors);
    CHECK(loaded.tls_enabled);  // the good values are loaded
    REQUIRE(errors.size() == 2);
    CHECK(errors[0].key == "listen.port");  // the bad value, not the rule about its default
    CHECK(errors[0].line == 2);
    CHECK(errors[1].key == "name");
    CHECK_THROWS_AS(schema.load_string("listen:\n  port: lots\n", "x.yaml"), ConfigErrors);
}

namespace {

struct MapConfig {
    mdcast::config::detail::StringListMap trade_fields;
};

Schema<MapConfig> map_schema() {
    Schema<MapConfig> schema("mdcast-test");
    schema.string_list_map("trades.fields", &MapConfig::trade_fields, "Per service.");
    return schema;
}

}  // namespace

TEST_CASE("a mapping of string lists is read by name, rendered and checked", "[config]") {
    const auto schema = map_schema();
    CHECK(schema.defaults().trade_fields.empty());
    const MapConfig loaded = schema.load_string(
        "trades:\n  fields:\n    IDN: [TRDPRC_1, TRDVOL_1]\n    \"*\": [\"6\"]\n", "t.yaml");
    CHECK(loaded.trade_fields ==
          mdcast::config::detail::StringListMap{{"*", {"6"}}, {"IDN", {"TRDPRC_1", "TRDVOL_1"}}});
    const auto changes = schema.changes(schema.defaults(), loaded);
    REQUIRE(changes.size() == 1);
    CHECK(changes[0].before == "{}");
    CHECK(changes[0].after == "{*: [6], IDN: [TRDPRC_1, TRDVOL_1]}");
    CHECK(schema.json_values(loaded)[0].second == R"({"*":["6"],"IDN":["TRDPRC_1","TRDVOL_1"]})");
    CHECK(schema.describe().find("mapping of string lists") != std::string::npos);

    const auto error_of = [&schema](const std::string& text) {
        try {
            schema.load_string(text, "t.yaml");
        } catch (const ConfigErrors& e) {
            REQUIRE(e.errors().size() == 1);
            return e.errors()[0].to_string();
        }
        FAIL("accepted: " << text);
        return std::string();
    };
    CHECK_THAT(error_of("trades:\n  fields: [A]\n"),
               Catch::Contains("expected a mapping of names to lists of strings"));
    CHECK_THAT(error_of("trades:\n  fields:\n    IDN: TRDPRC_1\n"),
               Catch::Contains("t.yaml:3:10: key 'trades.fields': IDN: expected a list"));
    CHECK_THAT(error_of("trades:\n  fields:\n    IDN: [A]\n    IDN: [B]\n"),
               Catch::Contains("IDN is listed twice"));
}
