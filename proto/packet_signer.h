// Backbone packet authentication: a 16-byte truncated HMAC-SHA256 over the
// whole datagram (header included), appended as a trailer. A receiver with
// keys refuses unsigned and forged packets. Key rotation: sign with the
// current key; accept the current or the previous one during a rollover.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "proto/backbone_packet.h"

namespace mdcast {

constexpr size_t kSignatureBytes = proto::kPacketTrailerBytes;

class PacketSigner {
  public:
    // Keys are raw bytes (at least 16); `previous` may be empty.
    PacketSigner(const std::string& current, const std::string& previous);
    ~PacketSigner();
    PacketSigner(const PacketSigner&) = delete;
    PacketSigner& operator=(const PacketSigner&) = delete;

    // Reads a key file (raw bytes; whitespace-only keys refused). Throws
    // std::runtime_error naming the file and what is wrong.
    static std::string load_key(const std::string& path);
    // The signer for a daemon's key files; nullptr when `key_file` is empty (unsigned).
    static std::unique_ptr<PacketSigner> from_files(const std::string& key_file,
                                                    const std::string& previous_key_file);

    // Writes the MAC of `data` into `out` (kSignatureBytes).
    void sign(std::span<const uint8_t> data, uint8_t* out) const;
    // True when `mac` is the MAC of `data` under the current or previous key.
    bool verify(std::span<const uint8_t> data, const uint8_t* mac) const;

    // A datagram whose last kSignatureBytes are its signature (signed flag set).
    void sign_datagram(std::span<uint8_t> datagram) const;
    bool verify_datagram(std::span<const uint8_t> datagram) const;

  private:
    struct Key;
    std::unique_ptr<Key> current_;
    std::unique_ptr<Key> previous_;
};

// Finishes a packet, signed when `signer` is set (the builder must then have
// been made with kSignatureBytes of trailer room).
std::span<const uint8_t> finish_packet(proto::PacketBuilder& packet, proto::PacketType type,
                                       uint64_t epoch, uint64_t sequence,
                                       const PacketSigner* signer);

}  // namespace mdcast
