// Turns the backbone messages of a capture back into Publisher calls: a
// refresh becomes refresh() of (service, item) — the item's image — an update
// becomes update() of the same item with the same fields, a publisher's
// status becomes status(). A book's refresh and updates become refresh_book()
// and update_book() with the same entries (replay_books.h); a message the
// backbone carried in parts (MessagePart) is put back together first. Items are told apart by the
// capture's (epoch, item id), so two distributors or two epochs never mix.
//
// Left out, and counted: updates of an item whose image the capture lacks
// (the capture began after it; the SDK would drop them too), solicited
// refreshes of an item already imaged (a distributor's cache answering a
// server: the replay's distributor answers its own), statuses the
// infrastructure made (source down, loss, restarts: the replay's own
// infrastructure makes them), directories.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <utility>

#include "mdcast/field_list.h"
#include "mdcast/publisher.h"
#include "proto/frame.h"
#include "proto/message_parts.h"
#include "proto/update_codec.h"
#include "tools/replay/replay_books.h"
#include "wire/common.pb.h"

namespace mdcast::tools {

struct ReplayCounts {
    uint64_t refreshes = 0;
    uint64_t updates = 0;
    uint64_t statuses = 0;
    uint64_t stamped = 0;                // updates that carried a publish stamp
    uint64_t updates_without_image = 0;  // skipped
    uint64_t solicited_refreshes = 0;    // skipped
    uint64_t infrastructure_statuses = 0;
    uint64_t other = 0;           // directories and anything else
    uint64_t malformed = 0;       // messages that did not decode
    uint64_t book_refreshes = 0;  // of refreshes: a book's
    uint64_t book_updates = 0;    // of updates: a book's
    uint64_t parts_refused = 0;   // messages in parts that did not assemble
    uint64_t outbox_waits = 0;
    uint64_t refused = 0;  // refused by the SDK at the call (over the frame limit, not UTF-8)
};

class ReplayItems {
  public:
    // `service` renames every service ("" keeps the captured names); `stop`
    // ends a wait for room in the outbox.
    ReplayItems(Publisher& publisher, std::string service, const std::atomic<bool>& stop);

    // Publishes the messages of one captured data datagram of source `epoch`
    // (a datagram's parts of a larger message once it is whole); waits while the
    // publisher's outbox is full. False when told to stop while waiting.
    bool publish_datagram(uint64_t epoch, std::span<const uint8_t> datagram);
    // One captured message (not a part).
    bool publish(uint64_t epoch, const proto::Frame& frame);

    // --images-first: publishes the first refresh of every item in `datagram`
    // not imaged yet, and skips that refresh when publish() meets it later.
    bool publish_images(uint64_t epoch, std::span<const uint8_t> datagram);

    const ReplayCounts& counts() const { return counts_; }
    size_t items() const { return items_.size(); }
    // Services named by the capture's refreshes, to announce before start().
    static void services_of(std::span<const uint8_t> datagram, std::set<std::string>& out);

  private:
    // Each whole message of `datagram`: frames as they are, parts once
    // assembled (per epoch, in `assemblers`). False when `call` is.
    template <class Call>
    bool each_message(uint64_t epoch, std::span<const uint8_t> datagram,
                      std::map<uint64_t, proto::MessageAssembler>& assemblers, Call call);
    bool publish_refresh(uint64_t epoch, std::span<const uint8_t> body);
    bool publish_update(uint64_t epoch, std::span<const uint8_t> body);
    bool publish_book_refresh(std::pair<uint64_t, uint64_t> key, const wire::v1::Refresh& refresh,
                              const ItemState& state);
    bool publish_book_update(std::pair<uint64_t, uint64_t> key, PublishedItem item, uint64_t stamp);
    bool publish_status(uint64_t epoch, std::span<const uint8_t> body);
    // Retries `call` while the outbox is full (false from the publisher).
    template <class Call>
    bool until_taken(Call call);

    Publisher& publisher_;
    std::string service_;
    const std::atomic<bool>& stop_;
    std::map<std::pair<uint64_t, uint64_t>, PublishedItem> items_;
    std::set<std::pair<uint64_t, uint64_t>> published_early_;          // --images-first
    std::map<std::pair<uint64_t, uint64_t>, wire::v1::Domain> books_;  // book items' domains
    std::map<uint64_t, proto::MessageAssembler> assemblers_;  // per epoch, for publish_datagram
    std::map<uint64_t, proto::MessageAssembler> image_assemblers_;  // for publish_images
    FieldList fields_;
    BookReplayer book_replayer_;
    BookChanges changes_;
    proto::UpdateView update_;
    ReplayCounts counts_;
};

// Adds decoded wire fields to a FieldList (cleared first).
void to_field_list(std::span<const uint8_t> field_list_bytes, FieldList& out, bool& ok);

}  // namespace mdcast::tools
