#include "common/auth/users_file.h"

#include <catch2/catch.hpp>

#include "common/config/config_schema.h"

using namespace mdcast;
using namespace mdcast::auth;

namespace {

const std::string kHash = hash_password("secret", 1000).to_string();

std::string good_file() {
    return "groups:\n"
           "  fx:\n"
           "    allow:\n"
           "      - service: FX\n"
           "        items: [\"EUR*\", \"GBP*\"]\n"
           "    post:\n"
           "      - service: FX\n"
           "        items: [\"EUR=\"]\n"
           "  everything:\n"
           "    allow:\n"
           "      - service: \"*\"\n"
           "users:\n"
           "  alice:\n"
           "    password: \"" +
           kHash +
           "\"\n"
           "    groups: [fx]\n"
           "    allow:\n"
           "      - service: EQ\n"
           "        items: \"*.L\"\n"
           "    post:\n"
           "      - service: EQ\n"
           "        items: \"VOD.L\"\n"
           "  root:\n"
           "    password: \"" +
           kHash +
           "\"\n"
           "    groups: everything\n"
           "  nobody:\n"
           "    password: \"" +
           kHash + "\"\n";
}

std::vector<config::ConfigError> errors_of(const std::string& text) {
    try {
        UsersFile::parse(text, "users.yaml");
    } catch (const config::ConfigErrors& errors) {
        return errors.errors();
    }
    FAIL("no error for:\n" << text);
    return {};
}

}  // namespace

TEST_CASE("users, groups and entitlements are read", "[users_file]") {
    const UsersFile file = UsersFile::parse(good_file(), "users.yaml");
    CHECK(file.size() == 3);
    CHECK(file.group_count() == 2);
    const auto alice = file.find("alice");
    REQUIRE(alice);
    CHECK(verify_password("secret", alice->password));
    CHECK(alice->groups == std::vector<std::string>{"fx"});
    const auto& e = alice->entitlements;
    CHECK(e.allows_item("FX", "EUR="));
    CHECK(e.allows_item("FX", "GBPUSD"));
    CHECK_FALSE(e.allows_item("FX", "JPY="));
    CHECK(e.allows_item("EQ", "VOD.L"));
    CHECK_FALSE(e.allows_item("EQ", "IBM.N"));
    CHECK_FALSE(e.allows_item("OTHER", "EUR="));
    CHECK(e.allows_service("FX"));
    CHECK(e.allows_service("EQ"));
    CHECK_FALSE(e.allows_service("OTHER"));
    CHECK(file.find("root")->entitlements.allows_item("ANY", "THING"));
    const auto nobody = file.find("nobody");
    CHECK_FALSE(nobody->entitlements.allows_service("FX"));  // no rule, nothing allowed
    CHECK_FALSE(file.find("mallory"));
}

TEST_CASE("posting is granted by post rules only, from the user and their groups", "[users_file]") {
    const UsersFile file = UsersFile::parse(good_file(), "users.yaml");
    const auto& alice = file.find("alice")->entitlements;
    CHECK(alice.allows_post("FX", "EUR="));          // her group's post rule
    CHECK(alice.allows_post("EQ", "VOD.L"));         // her own post rule
    CHECK_FALSE(alice.allows_post("FX", "GBPUSD"));  // may read it, not post to it
    CHECK_FALSE(alice.allows_post("EQ", "BARC.L"));
    CHECK_FALSE(alice.allows_post("OTHER", "EUR="));
    // Every service readable, nothing postable: reading rights never grant posting.
    CHECK(file.find("root")->entitlements.allows_item("FX", "EUR="));
    CHECK_FALSE(file.find("root")->entitlements.allows_post("FX", "EUR="));
}

TEST_CASE("a post rule is checked like an allow rule", "[users_file]") {
    const auto errors = errors_of(
        "users:\n"
        "  bob:\n"
        "    password: \"" +
        kHash +
        "\"\n"
        "    post:\n"
        "      - items: [\"X\"]\n");
    REQUIRE(errors.size() == 1);
    CHECK(errors[0].key == "users.bob.post");
}

TEST_CASE("every error in a users file is reported with file:line", "[users_file]") {
    const auto errors = errors_of(
        "users:\n"
        "  alice:\n"
        "    password: plain-text\n"  // line 3
        "    groups: [traders]\n"     // line 4: no such group
        "  bob:\n"
        "    pasword: \"" +
        kHash +
        "\"\n"  // line 6: unknown key, and no password
        "  carol:\n"
        "    password: \"" +
        kHash +
        "\"\n"
        "    allow:\n"
        "      - items: [\"*\"]\n"  // line 10: no service
        "extra: 1\n");              // line 11
    std::vector<std::string> texts;
    for (const auto& e : errors) texts.push_back(e.to_string());
    INFO(Catch::rangeToString(texts));
    REQUIRE(errors.size() == 6);
    const auto has = [&](int line, const std::string& what) {
        return std::any_of(errors.begin(), errors.end(), [&](const config::ConfigError& e) {
            return e.line == line && e.file == "users.yaml" &&
                   e.to_string().find(what) != std::string::npos;
        });
    };
    CHECK(has(3, "not a password hash"));
    CHECK(has(4, "no such group: traders"));
    CHECK(has(6, "unknown key"));
    CHECK(has(5, "missing"));
    CHECK(has(10, "needs a service"));
    CHECK(has(11, "unknown key"));
}

TEST_CASE("syntax errors and a missing users section are reported", "[users_file]") {
    auto errors = errors_of("users: [\n");
    REQUIRE(errors.size() == 1);
    CHECK_THAT(errors[0].message, Catch::Contains("YAML syntax error"));
    errors = errors_of("groups: {}\n");
    REQUIRE(errors.size() == 1);
    CHECK_THAT(errors[0].message, Catch::Contains("missing"));
    CHECK_THROWS_AS(UsersFile::load("/nonexistent/users.yaml"), config::ConfigErrors);
}

TEST_CASE("differences name the users whose entries changed", "[users_file]") {
    const UsersFile before = UsersFile::parse(good_file(), "users.yaml");
    std::string text = good_file();
    text.replace(text.find("\"GBP*\""), 6, "\"CHF*\"");  // fx group: alice's rules change
    text.replace(text.find("  nobody:"), std::string::npos,
                 "  dave:\n    password: \"" + kHash + "\"\n");
    const UsersFile after = UsersFile::parse(text, "users.yaml");
    const auto lines = UsersFile::differences(before, after);
    REQUIRE(lines.size() == 3);
    CHECK(lines[0] == "users added: dave");
    CHECK(lines[1] == "users removed: nobody");
    CHECK(lines[2] == "entitlements changed: alice");
    CHECK(UsersFile::differences(before, before).empty());
}

TEST_CASE("the example users file is valid", "[users_file]") {
    const UsersFile file = UsersFile::load(MDCAST_SOURCE_ETC "/users.yaml.example");
    const auto alice = file.find("alice");
    REQUIRE(alice);
    CHECK(verify_password("example", alice->password));
    CHECK(alice->entitlements.allows_item("FX", "EUR="));
    CHECK(alice->entitlements.allows_item("EQUITIES", "VOD.L"));
    CHECK(alice->entitlements.allows_item("RATES", "GB10YT=RR"));
    CHECK_FALSE(alice->entitlements.allows_item("FX", "AUD="));
    CHECK(file.find("ops")->entitlements.allows_item("ANY", "ITEM"));
    CHECK(alice->entitlements.allows_post("FX", "USDJPY"));    // her group's
    CHECK(alice->entitlements.allows_post("RATES", "GB10Y"));  // her own
    CHECK_FALSE(alice->entitlements.allows_post("FX", "EUR="));
    CHECK_FALSE(file.find("ops")->entitlements.allows_post("ANY", "ITEM"));
}
