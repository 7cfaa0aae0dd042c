#include "server/websocket/ws_streams.h"

#include <algorithm>
#include <charconv>

namespace mdcast::server {

namespace {

void erase_value(std::vector<int64_t>& values, int64_t value) {
    values.erase(std::remove(values.begin(), values.end(), value), values.end());
}

}  // namespace

WsStreams::OpenResult WsStreams::open(int64_t stream, const std::string& service,
                                      const std::string& name, bool streaming) {
    Key key{service, name};
    OpenResult result{Opened::kNew};
    if (const auto it = streams_.find(stream); it != streams_.end()) {
        if (it->second.key == key && it->second.streaming == streaming) {
            return {Opened::kReissue};
        }
        result = {Opened::kReplaced, drop(stream)};
    }
    if (streams_.size() >= max_streams_) return {Opened::kLimitReached, result.unsubscribe};
    streams_.emplace(stream, Stream{key, streaming, 0});
    pending_[std::move(key)].push_back(stream);
    ++pending_count_;
    return result;
}

void WsStreams::bind(const std::string& service, const std::string& name, uint64_t item_id) {
    Key key{service, name};
    if (const auto known = item_of_key_.find(key);
        known != item_of_key_.end() && known->second != item_id) {
        if (const auto old = by_item_.find(known->second); old != by_item_.end()) {
            const std::vector<int64_t> moved = std::move(old->second);
            by_item_.erase(old);
            auto& bound = by_item_[item_id];
            for (const int64_t stream : moved) {
                streams_.at(stream).item_id = item_id;
                bound.push_back(stream);
            }
        }
        known->second = item_id;
    }
    const auto it = pending_.find(key);
    if (it == pending_.end()) return;
    item_of_key_[std::move(key)] = item_id;
    auto& bound = by_item_[item_id];
    for (const int64_t stream : it->second) {
        streams_.at(stream).item_id = item_id;
        bound.push_back(stream);
    }
    pending_count_ -= it->second.size();
    pending_.erase(it);
}

std::span<const int64_t> WsStreams::streams_of(uint64_t item_id) const {
    const auto it = by_item_.find(item_id);
    if (it == by_item_.end()) return {};
    return it->second;
}

std::vector<int64_t> WsStreams::take_snapshots(uint64_t item_id) {
    std::vector<int64_t> snapshots;
    for (const int64_t stream : streams_of(item_id)) {
        if (!streams_.at(stream).streaming) snapshots.push_back(stream);
    }
    for (const int64_t stream : snapshots) drop(stream);
    return snapshots;
}

std::vector<int64_t> WsStreams::take_pending(const std::string& service, const std::string& name) {
    const auto it = pending_.find(Key{service, name});
    if (it == pending_.end()) return {};
    std::vector<int64_t> waiting = it->second;
    for (const int64_t stream : waiting) drop(stream);
    return waiting;
}

void WsStreams::forget_item(uint64_t item_id) {
    const auto it = by_item_.find(item_id);
    if (it == by_item_.end()) return;
    for (const int64_t stream : it->second) {
        item_of_key_.erase(streams_.at(stream).key);
        streams_.erase(stream);
    }
    by_item_.erase(it);
}

std::optional<WsStreams::Closed> WsStreams::close(int64_t stream) {
    if (!streams_.contains(stream)) return std::nullopt;
    return Closed{drop(stream)};
}

bool WsStreams::item_has_streaming(uint64_t item_id) const {
    const auto it = by_item_.find(item_id);
    if (it == by_item_.end()) return false;
    return std::any_of(it->second.begin(), it->second.end(),
                       [&](int64_t stream) { return streams_.at(stream).streaming; });
}

uint64_t WsStreams::drop(int64_t stream) {
    const auto it = streams_.find(stream);
    if (it == streams_.end()) return 0;
    const Stream dropped = it->second;
    streams_.erase(it);
    if (dropped.item_id == 0) {
        auto waiting = pending_.find(dropped.key);
        erase_value(waiting->second, stream);
        --pending_count_;
        if (waiting->second.empty()) pending_.erase(waiting);
        return 0;
    }
    auto bound = by_item_.find(dropped.item_id);
    erase_value(bound->second, stream);
    if (bound->second.empty()) {
        by_item_.erase(bound);
        item_of_key_.erase(dropped.key);
    }
    if (!dropped.streaming || item_has_streaming(dropped.item_id)) return 0;
    return dropped.item_id;
}

bool restamp_stream_id(std::span<const uint8_t> frame, int64_t stream, std::string& out) {
    // Server frames are unmasked: 2 bytes of header, then 2 or 8 of extended length.
    if (frame.size() < 2 || (frame[1] & 0x80) != 0) return false;
    const uint8_t length7 = frame[1] & 0x7f;
    const size_t header = length7 == 126 ? 4 : length7 == 127 ? 10 : 2;
    static constexpr std::string_view kPrefix = "[{\"ID\":";
    const std::string_view payload(reinterpret_cast<const char*>(frame.data()) + header,
                                   frame.size() > header ? frame.size() - header : 0);
    if (frame.size() <= header || !payload.starts_with(kPrefix)) return false;
    size_t digits_end = kPrefix.size();
    while (digits_end < payload.size() && payload[digits_end] >= '0' && payload[digits_end] <= '9')
        ++digits_end;
    if (digits_end == kPrefix.size()) return false;
    char digits[24];
    const std::string_view id(digits, std::to_chars(digits, digits + sizeof digits, stream).ptr);
    const std::string_view rest = payload.substr(digits_end);
    const uint64_t length = kPrefix.size() + id.size() + rest.size();
    out += static_cast<char>(frame[0]);  // FIN and opcode as they were
    if (length < 126) {
        out += static_cast<char>(length);
    } else if (length <= 0xffff) {
        out += static_cast<char>(126);
        for (int shift = 8; shift >= 0; shift -= 8) out += static_cast<char>(length >> shift);
    } else {
        out += static_cast<char>(127);
        for (int shift = 56; shift >= 0; shift -= 8) out += static_cast<char>(length >> shift);
    }
    out += kPrefix;
    out += id;
    out += rest;
    return true;
}

}  // namespace mdcast::server
