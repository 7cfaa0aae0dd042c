// The server's messages in the WebSocket/JSON protocol (docs/websocket.md),
// each built as a complete WebSocket text frame.
//
// Every message is a JSON array of one object, as LSEG servers send them.
// Fields are named from the field dictionary ("Fields": {"BID": 101.25});
// decimals are written exactly, times as ISO-8601 UTC strings, blanks as null.
// Item frames are encoded with the server's item id as "ID", the same for
// every client, so an update is encoded once per distinct view (the binary
// protocol's rule, docs/protocol.md); each session restamps them with the
// client's own stream ids on the way out (ws_streams.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "proto/field_dictionary.h"
#include "proto/field_image.h"
#include "proto/update_codec.h"
#include "server/item_cache.h"
#include "wire/common.pb.h"
#include "wire/session.pb.h"

namespace mdcast::server {

// The Source directory's filters (LSEG's Key.Filter bits) this server serves.
inline constexpr uint32_t kSourceInfo = 0x1;
inline constexpr uint32_t kSourceState = 0x2;

class JsonEncoder {
  public:
    explicit JsonEncoder(proto::FieldDictionary dictionary);
    const proto::FieldDictionary& dictionary() const { return dictionary_; }
    // clients.ws_publish_time: Update and Refresh carry "PublishTime" (unix ns of
    // the publisher's stamp), an mdcast extension LSEG clients ignore.
    void set_publish_time(bool on) { publish_time_ = on; }

    // Hot path: an update (only `view`'s fields when it is not empty) appended
    // to `out` as one frame.
    void append_update(std::string& out, const proto::UpdateView& update,
                       const std::vector<uint32_t>& view) const;
    // The item's image as a Refresh; `snapshot`: NonStreaming (no more follows).
    std::string refresh(const CachedItem& item, const proto::FieldImage* image,
                        const std::vector<uint32_t>& view, bool solicited, bool snapshot) const;
    // An item's status on `stream` (the item id, restamped per session, or a
    // request's ID when no item was named).
    std::string status(const std::string& service, const std::string& name, int64_t stream,
                       const wire::Status& status) const;
    static std::string batch_status(int64_t id, size_t names);
    // LSEG's Ack of a Post: AckID is the client's PostID; a refusal adds NakCode and
    // Text; an off-stream post's Ack names its Key.
    static std::string post_ack(int64_t stream, uint64_t ack_id, std::string_view nak_code,
                                const std::string& text, const std::string* service,
                                const std::string* name);
    // The Source directory (LSEG's Map of services, each a FilterList of Info and State, as
    // `filter` asks: kSourceInfo, kSourceState; its Key.Filter says which were sent).
    static std::string source_refresh(int64_t id, const wire::Directory& directory,
                                      uint32_t filter = kSourceInfo | kSourceState);

    static std::string login_refresh(int64_t id, const std::string& user,
                                     const wire::LoginResponse& response);
    static std::string login_status(int64_t id, const std::string& user,
                                    const wire::Status& status);
    // {"Type":"Error","Text":...,"Debug":{"Message":<the start of what was refused>}}
    static std::string error(std::string_view text, std::string_view offending);
    static std::string ping();
    static std::string pong();

  private:
    void append_fields(std::string& out, std::span<const proto::FieldEntry> fields,
                       const std::vector<uint32_t>& view) const;
    void append_image_fields(std::string& out, const proto::FieldImage& image,
                             const std::vector<uint32_t>& view) const;

    void append_publish_time(std::string& out, uint64_t publish_time_ns) const;
    // A book's refresh payload: "Map" with the summary (`view` applied) and every
    // entry as an Add, in key order (json_book.cpp).
    void append_book_map(std::string& out, const proto::FieldImage& image,
                         const std::vector<uint32_t>& view) const;
    // An update's "Map" (its entry actions, its fields as the Summary); false,
    // nothing written, when it carries no map.
    bool append_update_map(std::string& out, const proto::UpdateView& update,
                           const std::vector<uint32_t>& view) const;

    proto::FieldDictionary dictionary_;
    bool publish_time_ = false;
    std::unordered_map<uint32_t, std::string> keys_;  // field id -> "\"BID\":"
};

// Appends `text` as a JSON string literal (quotes included).
void append_json_string(std::string& out, std::string_view text);
// Appends mantissa x 10^exponent as a JSON number, exactly (no binary rounding).
void append_json_decimal(std::string& out, int64_t mantissa, int32_t exponent);
// A view (sorted field ids; empty: every field) keeps the field `id`.
bool in_view(const std::vector<uint32_t>& view, uint32_t id);

}  // namespace mdcast::server
