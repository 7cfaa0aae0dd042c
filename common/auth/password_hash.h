// Salted, slow password hashes for the users file (docs/access-control.md).
//
// A stored hash is one self-describing string:
//
//   $pbkdf2-sha256$i=ITERATIONS$SALT_HEX$HASH_HEX
//
// PBKDF2-HMAC-SHA256 (OpenSSL 3) with a random salt of at least 8 bytes and a
// derived key of at least 16 bytes. The iteration count travels with the hash,
// so raising the cost for new entries leaves old entries valid. Checking is
// constant-time in the hash bytes (CRYPTO_memcmp).
//
// Cost: one check takes `iterations` HMAC-SHA256 computations (about 40 ms at
// the default on one core of a 2020s server): never run it on an event loop
// thread; see common/auth/credential_verifier.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mdcast::auth {

constexpr uint32_t kDefaultIterations = 100'000;
constexpr uint32_t kMinIterations = 1'000;
constexpr uint32_t kMaxIterations = 100'000'000;

struct PasswordHash {
    uint32_t iterations = 0;
    std::vector<uint8_t> salt;
    std::vector<uint8_t> hash;

    // The stored form, "$pbkdf2-sha256$i=...$...$...".
    std::string to_string() const;
    // Parses the stored form; nullopt with `error` saying what is wrong.
    static std::optional<PasswordHash> parse(std::string_view text, std::string& error);
};

// A new entry for `password`: a fresh random 16-byte salt, a 32-byte key.
// Throws std::runtime_error when OpenSSL fails (no randomness).
PasswordHash hash_password(std::string_view password, uint32_t iterations = kDefaultIterations);

// True when `password` derives `stored.hash`. Takes as long as the hash's
// iteration count says, whatever the outcome.
bool verify_password(std::string_view password, const PasswordHash& stored);

}  // namespace mdcast::auth
