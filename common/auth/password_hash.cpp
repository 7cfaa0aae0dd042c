#include "common/auth/password_hash.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <charconv>
#include <stdexcept>

namespace mdcast::auth {

namespace {

constexpr std::string_view kPrefix = "$pbkdf2-sha256$i=";
constexpr size_t kSaltBytes = 16;
constexpr size_t kHashBytes = 32;
constexpr size_t kMinSaltBytes = 8;
constexpr size_t kMinHashBytes = 16;
constexpr size_t kMaxBytes = 256;

std::string to_hex(const std::vector<uint8_t>& bytes) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (uint8_t b : bytes) {
        out += kDigits[b >> 4];
        out += kDigits[b & 15];
    }
    return out;
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

std::optional<std::vector<uint8_t>> from_hex(std::string_view text) {
    if (text.size() % 2 != 0 || text.size() > 2 * kMaxBytes) return std::nullopt;
    std::vector<uint8_t> out;
    for (size_t i = 0; i < text.size(); i += 2) {
        const int high = hex_digit(text[i]), low = hex_digit(text[i + 1]);
        if (high < 0 || low < 0) return std::nullopt;
        out.push_back(static_cast<uint8_t>(high << 4 | low));
    }
    return out;
}

std::vector<uint8_t> derive(std::string_view password, const std::vector<uint8_t>& salt,
                            uint32_t iterations, size_t length) {
    std::vector<uint8_t> out(length);
    if (PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()), salt.data(),
                          static_cast<int>(salt.size()), static_cast<int>(iterations), EVP_sha256(),
                          static_cast<int>(length), out.data()) != 1) {
        throw std::runtime_error("PBKDF2-HMAC-SHA256 failed");
    }
    return out;
}

}  // namespace

std::string PasswordHash::to_string() const {
    return std::string(kPrefix) + std::to_string(iterations) + "$" + to_hex(salt) + "$" +
           to_hex(hash);
}

std::optional<PasswordHash> PasswordHash::parse(std::string_view text, std::string& error) {
    if (!text.starts_with(kPrefix)) {
        error =
            "not a password hash: expected \"$pbkdf2-sha256$i=ITERATIONS$SALT$HASH\" "
            "(make one with mdcast-passwd)";
        return std::nullopt;
    }
    text.remove_prefix(kPrefix.size());
    const size_t first = text.find('$');
    const size_t second = first == std::string_view::npos ? first : text.find('$', first + 1);
    if (second == std::string_view::npos || text.find('$', second + 1) != std::string_view::npos) {
        error = "password hash needs exactly four '$'-separated parts";
        return std::nullopt;
    }
    PasswordHash out;
    const auto iterations = text.substr(0, first);
    const auto [end, ec] =
        std::from_chars(iterations.data(), iterations.data() + iterations.size(), out.iterations);
    if (ec != std::errc() || end != iterations.data() + iterations.size() ||
        out.iterations < kMinIterations || out.iterations > kMaxIterations) {
        error = "password hash iterations must be a number in " + std::to_string(kMinIterations) +
                ".." + std::to_string(kMaxIterations);
        return std::nullopt;
    }
    auto salt = from_hex(text.substr(first + 1, second - first - 1));
    auto hash = from_hex(text.substr(second + 1));
    if (!salt || salt->size() < kMinSaltBytes) {
        error = "password hash salt must be at least " + std::to_string(kMinSaltBytes) +
                " bytes of hex";
        return std::nullopt;
    }
    if (!hash || hash->size() < kMinHashBytes) {
        error =
            "password hash must end in at least " + std::to_string(kMinHashBytes) + " bytes of hex";
        return std::nullopt;
    }
    out.salt = std::move(*salt);
    out.hash = std::move(*hash);
    return out;
}

PasswordHash hash_password(std::string_view password, uint32_t iterations) {
    PasswordHash out;
    out.iterations = iterations;
    out.salt.resize(kSaltBytes);
    if (RAND_bytes(out.salt.data(), static_cast<int>(out.salt.size())) != 1) {
        throw std::runtime_error("no random bytes for a salt");
    }
    out.hash = derive(password, out.salt, iterations, kHashBytes);
    return out;
}

bool verify_password(std::string_view password, const PasswordHash& stored) {
    std::vector<uint8_t> derived =
        derive(password, stored.salt, stored.iterations, stored.hash.size());
    const bool same = CRYPTO_memcmp(derived.data(), stored.hash.data(), derived.size()) == 0;
    OPENSSL_cleanse(derived.data(), derived.size());
    return same;
}

}  // namespace mdcast::auth
