#include "common/auth/password_hash.h"

#include <catch2/catch.hpp>

using namespace mdcast::auth;

namespace {

std::vector<uint8_t> bytes(const std::string& text) {
    return {text.begin(), text.end()};
}

std::vector<uint8_t> unhex(const std::string& hex) {
    std::vector<uint8_t> out;
    for (size_t i = 0; i < hex.size(); i += 2)
        out.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    return out;
}

}  // namespace

TEST_CASE("PBKDF2-HMAC-SHA256 matches the RFC 7914 test vectors", "[password_hash]") {
    PasswordHash one{1, bytes("salt"),
                     unhex("55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc"
                           "49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783")};
    CHECK(verify_password("passwd", one));
    CHECK_FALSE(verify_password("passwe", one));
    PasswordHash many{80000, bytes("NaCl"),
                      unhex("4ddcd8f60b98be21830cee5ef22701f9641a4418d04c0414aeff08876b34ab56"
                            "a1d425a1225833549adb841b51c9b3176a272bdebba1d078478f62b397f33c8d")};
    CHECK(verify_password("Password", many));
    CHECK_FALSE(verify_password("password", many));
}

TEST_CASE("a new hash round-trips through its stored form", "[password_hash]") {
    const PasswordHash made = hash_password("correct horse", 1000);
    CHECK(made.salt.size() == 16);
    CHECK(made.hash.size() == 32);
    const std::string text = made.to_string();
    CHECK(text.starts_with("$pbkdf2-sha256$i=1000$"));
    std::string error;
    const auto parsed = PasswordHash::parse(text, error);
    REQUIRE(parsed);
    CHECK(parsed->iterations == 1000);
    CHECK(verify_password("correct horse", *parsed));
    CHECK_FALSE(verify_password("correct horsE", *parsed));
    CHECK_FALSE(verify_password("", *parsed));
    // Salted: the same password hashes differently each time.
    CHECK(hash_password("correct horse", 1000).to_string() != text);
}

TEST_CASE("malformed hash strings are refused with a reason", "[password_hash]") {
    const std::string salt = "00112233445566778899aabbccddeeff";
    const std::string hash = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    std::string error;
    CHECK(PasswordHash::parse("$pbkdf2-sha256$i=1000$" + salt + "$" + hash, error));
    const std::vector<std::pair<std::string, std::string>> cases{
        {"secret", "not a password hash"},
        {"$scrypt$i=1000$" + salt + "$" + hash, "not a password hash"},
        {"$pbkdf2-sha256$i=1000$" + salt, "four"},
        {"$pbkdf2-sha256$i=1000$" + salt + "$" + hash + "$x", "four"},
        {"$pbkdf2-sha256$i=abc$" + salt + "$" + hash, "iterations"},
        {"$pbkdf2-sha256$i=999$" + salt + "$" + hash, "iterations"},
        {"$pbkdf2-sha256$i=1000x$" + salt + "$" + hash, "iterations"},
        {"$pbkdf2-sha256$i=1000$0011$" + hash, "salt"},
        {"$pbkdf2-sha256$i=1000$zz112233445566778899aabbccddeeff$" + hash, "salt"},
        {"$pbkdf2-sha256$i=1000$" + salt + "$001", "hash"},
        {"$pbkdf2-sha256$i=1000$" + salt + "$0011", "hash"},
    };
    for (const auto& [text, why] : cases) {
        INFO(text);
        error.clear();
        CHECK_FALSE(PasswordHash::parse(text, error));
        CHECK_THAT(error, Catch::Contains(why));
    }
}
