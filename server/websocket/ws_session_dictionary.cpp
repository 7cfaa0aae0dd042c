// LSEG's Dictionary domain on a WebSocket session (docs/websocket.md): the request's ID
// gets the dictionary's Refresh, in the parts JsonDictionary encoded once for every
// client, each restamped with that ID. A streaming request stays open on its ID until
// the client closes it (the dictionary never changes while the server runs, so no
// Update follows); a snapshot (Streaming false) is NonStreaming and done.
#include "server/client_session.h"
#include "server/websocket/ws_session.h"

namespace mdcast::server {

void WsSession::on_dictionary_request(const JsonRequest& request) {
    ++settings_.counters->dictionary_requests;
    const int64_t stream = request.id;
    const std::string& name = request.names[0];
    // The ID is this request's now: an item open on it is closed first, as for items.
    if (const auto closed = streams_.close(stream); closed && closed->unsubscribe)
        client_.request_unsubscribe(closed->unsubscribe);
    dictionary_streams_.erase(stream);
    const auto kind = dictionary_kind(name);
    if (!kind || !settings_.dictionary)
        return send(JsonDictionary::refused(stream, name, "NotFound",
                                            "no such dictionary (RWFFld, RWFEnum)"));
    if (request.streaming) {
        if (streams_.size() + dictionary_streams_.size() >= client_.limits().max_subscriptions)
            return send(JsonDictionary::refused(
                stream, name, "LimitReached", "too many open streams (clients.max_subscriptions)"));
        dictionary_streams_.insert(stream);
    }
    const auto& parts = settings_.dictionary->refresh(
        *kind, dictionary_verbosity(request.filter.value_or(7)), request.streaming);
    for (const std::string& part : parts) {
        stamped_.clear();
        if (!restamp_stream_id({reinterpret_cast<const uint8_t*>(part.data()), part.size()}, stream,
                               stamped_))
            return;
        client_.deliver({reinterpret_cast<const uint8_t*>(stamped_.data()), stamped_.size()});
        if (!client_.is_open()) return;  // its output limit reached: closed as a slow consumer
    }
}

}  // namespace mdcast::server
