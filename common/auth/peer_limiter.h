// Failed-login limit per peer address: a token bucket of `burst` failures per
// IP address, one failure forgiven every `refill_ms`. A peer with no tokens
// left is refused before any password is hashed, so guessing from one address
// costs the server nothing once the bucket is empty.
//
// Bounded: at most `max_peers` addresses are tracked; a new one beyond that
// evicts the least recently seen (which then starts with a full bucket again).
// Only failures take tokens: a thousand clients of one host logging in with
// the right password are never limited. Pure: the caller passes the time.
#pragma once

#include <cstdint>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>

namespace mdcast::auth {

class PeerLimiter {
  public:
    PeerLimiter(uint32_t burst, uint32_t refill_ms, size_t max_peers);

    // True when `address` may try (has a token left). Does not take one.
    bool allowed(std::string_view address, int64_t now_ns);
    // A failed login from `address`: takes a token.
    void on_failure(std::string_view address, int64_t now_ns);

    size_t tracked() const { return peers_.size(); }
    uint64_t evictions() const { return evictions_; }
    // New limits; the table is kept (trimmed to the new size).
    void configure(uint32_t burst, uint32_t refill_ms, size_t max_peers);

    // "10.0.0.1" from "10.0.0.1:53412" (the peer strings of TcpConnection).
    static std::string_view address_of(std::string_view peer);

  private:
    struct Peer {
        uint32_t tokens;
        int64_t refilled_ns;
        std::list<std::string>::iterator lru;
    };
    Peer* find(std::string_view address, int64_t now_ns);
    void refill(Peer& peer, int64_t now_ns) const;
    void trim(size_t limit);

    uint32_t burst_;
    int64_t refill_ns_;
    size_t max_peers_;
    std::unordered_map<std::string, Peer> peers_;
    std::list<std::string> lru_;  // most recently seen first
    uint64_t evictions_ = 0;
};

}  // namespace mdcast::auth
