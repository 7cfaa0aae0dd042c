// Schema rows bound through config::nested() into a component's settings struct held
// in the config: loaded, defaulted, compared, rendered and copied like plain members.
#include "common/config/config_member.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include "common/config/config_schema.h"

namespace {

using mdcast::config::nested;
using mdcast::config::Schema;

struct PoolSettings {  // a component's own settings
    size_t max_items = 16;
    std::string policy = "drop";
};
struct ComponentSettings {
    uint32_t timeout_ms = 100;
    PoolSettings pool;
};
struct BaseKeys {
    ComponentSettings component;
};
struct NestedConfig : BaseKeys {
    uint16_t port = 0;
};

Schema<NestedConfig> nested_schema() {
    using C = NestedConfig;
    Schema<C> s("mdcast-nested");
    s.integer("port", &C::port, 9000, 1, 65535, "Port.")
        .integer("component.timeout_ms", nested(&C::component, &ComponentSettings::timeout_ms), 250,
                 1, 1000, "Timeout.")
        .reloads()
        .integer("component.pool.max_items",
                 nested(&C::component, &ComponentSettings::pool, &PoolSettings::max_items), 64, 1,
                 1024, "Pool size.")
        .choice("component.pool.policy",
                nested(&C::component, &ComponentSettings::pool, &PoolSettings::policy), "block",
                {"block", "drop"}, "When full.");
    return s;
}

}  // namespace

TEST_CASE("nested rows take their defaults from the schema, not the settings struct", "[config]") {
    const NestedConfig config = nested_schema().defaults();
    CHECK(config.port == 9000);
    CHECK(config.component.timeout_ms == 250);
    CHECK(config.component.pool.max_items == 64);
    CHECK(config.component.pool.policy == "block");
    CHECK_THAT(nested_schema().describe(),
               Catch::Contains("component.pool.max_items (integer, range 1..1024; default 64; "
                               "needs a restart)"));
}

TEST_CASE("nested rows load, range-check, compare and copy into the settings struct", "[config]") {
    const auto schema = nested_schema();
    const NestedConfig fresh = schema.load_string(
        "component:\n  timeout_ms: 500\n  pool:\n    max_items: 8\n    policy: drop\n", "n.yaml");
    CHECK(fresh.component.timeout_ms == 500);
    CHECK(fresh.component.pool.max_items == 8);
    CHECK(fresh.component.pool.policy == "drop");
    CHECK_THROWS_WITH(schema.load_string("component:\n  pool:\n    max_items: 2000\n", "n.yaml"),
                      Catch::Contains("n.yaml:3:16: key 'component.pool.max_items': 2000 is out "
                                      "of range (allowed 1..1024)"));

    NestedConfig running = schema.defaults();
    const auto changes = schema.changes(running, fresh);
    REQUIRE(changes.size() == 3);
    CHECK(changes[1].key == "component.pool.max_items");
    CHECK(changes[1].before == "64");
    CHECK(changes[1].after == "8");
    schema.apply_reload(changes, {}, fresh, running);
    CHECK(running.component.timeout_ms == 500);     // reloads
    CHECK(running.component.pool.max_items == 64);  // needs a restart
}
