#include "common/auth/peer_limiter.h"

#include <algorithm>

namespace mdcast::auth {

PeerLimiter::PeerLimiter(uint32_t burst, uint32_t refill_ms, size_t max_peers) {
    configure(burst, refill_ms, max_peers);
}

void PeerLimiter::configure(uint32_t burst, uint32_t refill_ms, size_t max_peers) {
    burst_ = std::max<uint32_t>(burst, 1);
    refill_ns_ = std::max<int64_t>(refill_ms, 1) * 1'000'000;
    max_peers_ = std::max<size_t>(max_peers, 1);
    trim(max_peers_);
}

std::string_view PeerLimiter::address_of(std::string_view peer) {
    if (peer.starts_with('[')) {  // "[::1]:port"
        const size_t close = peer.find(']');
        return close == std::string_view::npos ? peer : peer.substr(1, close - 1);
    }
    const size_t colon = peer.rfind(':');
    if (colon == std::string_view::npos || peer.find(':') != colon) return peer;
    return peer.substr(0, colon);
}

void PeerLimiter::refill(Peer& peer, int64_t now_ns) const {
    if (peer.tokens >= burst_) {
        peer.refilled_ns = now_ns;
        return;
    }
    const int64_t earned = (now_ns - peer.refilled_ns) / refill_ns_;
    if (earned <= 0) return;
    peer.tokens = static_cast<uint32_t>(std::min<int64_t>(burst_, peer.tokens + earned));
    peer.refilled_ns += earned * refill_ns_;
}

PeerLimiter::Peer* PeerLimiter::find(std::string_view address, int64_t now_ns) {
    const auto it = peers_.find(std::string(address));
    if (it == peers_.end()) return nullptr;
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    refill(it->second, now_ns);
    return &it->second;
}

bool PeerLimiter::allowed(std::string_view address, int64_t now_ns) {
    const Peer* peer = find(address, now_ns);
    return !peer || peer->tokens > 0;
}

void PeerLimiter::on_failure(std::string_view address, int64_t now_ns) {
    Peer* peer = find(address, now_ns);
    if (!peer) {
        trim(max_peers_ - 1);
        lru_.emplace_front(address);
        peer = &peers_.emplace(lru_.front(), Peer{burst_, now_ns, lru_.begin()}).first->second;
    }
    if (peer->tokens > 0) --peer->tokens;
}

void PeerLimiter::trim(size_t limit) {
    while (peers_.size() > limit) {
        peers_.erase(lru_.back());
        lru_.pop_back();
        ++evictions_;
    }
}

}  // namespace mdcast::auth
