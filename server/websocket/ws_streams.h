// A WebSocket session's item streams, numbered by the client as the LSEG
// WebSocket API numbers them: a request's `ID` (a batch's names on ID+1, ID+2,
// ...) is the stream every Refresh, Update and Status of that item carries,
// and `Close` names it.
//
// The fan-out encodes an update once per view with the server's item id in
// "ID" (the bytes every WebSocket subscriber of the view shares); each session
// restamps the frames it queues with its own stream ids. A stream is pending
// from its request until the server names the item (its first Refresh or
// Status), then bound to the item id. Bounded by the session's subscription
// limit; an id may be reused once closed.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace mdcast::server {

class WsStreams {
  public:
    explicit WsStreams(size_t max_streams) : max_streams_(max_streams) {}

    enum class Opened {
        kNew,           // a new stream: subscribe
        kReissue,       // the same item again on its open stream: subscribe again (new refresh)
        kReplaced,      // the id was open on another item, now closed (unsubscribe `replaced`)
        kLimitReached,  // more streams than allowed: refuse the request on this id
    };
    struct OpenResult {
        Opened opened;
        uint64_t unsubscribe = 0;  // an item no stream of this session wants any more
    };
    OpenResult open(int64_t stream, const std::string& service, const std::string& name,
                    bool streaming);

    // The server named the item of service/name: its pending streams are bound
    // to item_id; streams bound to an earlier id of the same name (the item was
    // re-created upstream) move to the new one.
    void bind(const std::string& service, const std::string& name, uint64_t item_id);
    // The streams an item's frames go to (bound, in the order they were opened).
    std::span<const int64_t> streams_of(uint64_t item_id) const;
    // The item's snapshot streams, which a NonStreaming Refresh completes:
    // returned and forgotten. The item's streaming streams stay.
    std::vector<int64_t> take_snapshots(uint64_t item_id);
    // A request for service/name refused before the server named an item (no
    // item id): the streams waiting for it, forgotten.
    std::vector<int64_t> take_pending(const std::string& service, const std::string& name);
    // The item's stream was closed by the server (a Stream Closed status went
    // out): its streams are forgotten, their ids free again.
    void forget_item(uint64_t item_id);

    // Close by the client. Returns the item to unsubscribe when this was the
    // last streaming stream bound to it; nullopt for an id that is not open.
    struct Closed {
        uint64_t unsubscribe = 0;
    };
    std::optional<Closed> close(int64_t stream);

    size_t size() const { return streams_.size(); }
    size_t pending() const { return pending_count_; }

  private:
    using Key = std::pair<std::string, std::string>;  // service, name
    struct Stream {
        Key key;
        bool streaming = true;
        uint64_t item_id = 0;  // 0: pending
    };
    // Removes `stream` everywhere; returns the item to unsubscribe if it was its
    // last streaming stream.
    uint64_t drop(int64_t stream);
    bool item_has_streaming(uint64_t item_id) const;

    size_t max_streams_;
    std::unordered_map<int64_t, Stream> streams_;
    std::map<Key, std::vector<int64_t>> pending_;                 // in request order
    std::unordered_map<uint64_t, std::vector<int64_t>> by_item_;  // bound, in open order
    std::map<Key, uint64_t> item_of_key_;                         // the bound ones' items
    size_t pending_count_ = 0;
};

// The frame `frame` (a complete unmasked text frame whose JSON starts with
// `[{"ID":<digits>`) with `stream` in place of those digits, appended to `out`.
// False, and nothing appended, when the frame is not of that shape.
bool restamp_stream_id(std::span<const uint8_t> frame, int64_t stream, std::string& out);

}  // namespace mdcast::server
