#include "proto/packet_signer.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace mdcast {

// One HMAC-SHA256 context initialised with its key once; each MAC re-inits it.
struct PacketSigner::Key {
    EVP_MAC* mac = nullptr;
    EVP_MAC_CTX* ctx = nullptr;

    explicit Key(const std::string& key) {
        if (key.size() < 16) throw std::runtime_error("backbone key shorter than 16 bytes");
        mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
        ctx = mac ? EVP_MAC_CTX_new(mac) : nullptr;
        char digest[] = "SHA256";
        const OSSL_PARAM params[] = {
            OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
            OSSL_PARAM_construct_end()};
        if (!ctx || EVP_MAC_init(ctx, reinterpret_cast<const unsigned char*>(key.data()),
                                 key.size(), params) != 1) {
            throw std::runtime_error("cannot set up HMAC-SHA256");
        }
    }
    ~Key() {
        EVP_MAC_CTX_free(ctx);
        EVP_MAC_free(mac);
    }
    void mac_of(std::span<const uint8_t> data, uint8_t* out) const {
        unsigned char full[EVP_MAX_MD_SIZE];
        size_t length = 0;
        EVP_MAC_init(ctx, nullptr, 0, nullptr);  // same key, fresh state
        EVP_MAC_update(ctx, data.data(), data.size());
        EVP_MAC_final(ctx, full, &length, sizeof full);
        std::copy(full, full + kSignatureBytes, out);
    }
};

PacketSigner::PacketSigner(const std::string& current, const std::string& previous)
    : current_(std::make_unique<Key>(current)),
      previous_(previous.empty() ? nullptr : std::make_unique<Key>(previous)) {}

PacketSigner::~PacketSigner() = default;

std::string PacketSigner::load_key(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(path + ": cannot read the backbone key file");
    std::stringstream bytes;
    bytes << in.rdbuf();
    const std::string key = bytes.str();
    if (key.size() < 16)
        throw std::runtime_error(path + ": a backbone key needs at least 16 bytes");
    return key;
}

std::unique_ptr<PacketSigner> PacketSigner::from_files(const std::string& key_file,
                                                       const std::string& previous_key_file) {
    if (key_file.empty()) return nullptr;
    const std::string previous =
        previous_key_file.empty() ? std::string() : load_key(previous_key_file);
    return std::make_unique<PacketSigner>(load_key(key_file), previous);
}

void PacketSigner::sign(std::span<const uint8_t> data, uint8_t* out) const {
    current_->mac_of(data, out);
}

void PacketSigner::sign_datagram(std::span<uint8_t> datagram) const {
    const size_t body = datagram.size() - kSignatureBytes;
    sign(datagram.first(body), datagram.data() + body);
}

bool PacketSigner::verify_datagram(std::span<const uint8_t> datagram) const {
    if (datagram.size() < kSignatureBytes) return false;
    const size_t body = datagram.size() - kSignatureBytes;
    return verify(datagram.first(body), datagram.data() + body);
}

std::span<const uint8_t> finish_packet(proto::PacketBuilder& packet, proto::PacketType type,
                                       uint64_t epoch, uint64_t sequence,
                                       const PacketSigner* signer) {
    if (!signer) return packet.finish(type, epoch, sequence);
    const auto datagram = packet.finish_with_trailer(type, epoch, sequence);
    signer->sign_datagram(datagram);
    return datagram;
}

bool PacketSigner::verify(std::span<const uint8_t> data, const uint8_t* mac) const {
    uint8_t expected[kSignatureBytes];
    current_->mac_of(data, expected);
    if (CRYPTO_memcmp(expected, mac, kSignatureBytes) == 0) return true;
    if (!previous_) return false;
    previous_->mac_of(data, expected);
    return CRYPTO_memcmp(expected, mac, kSignatureBytes) == 0;
}

}  // namespace mdcast
