// A scripted distributor for the Publisher's tests (publisher_test.cpp,
// publisher_fan_test.cpp): the session, the answers to announcements and
// registrations, and what the publisher sends, as short text.
#pragma once

#include <atomic>
#include <chrono>
#include <initializer_list>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "mdcast/publisher.h"
#include "scripted_peer.h"
#include "wire/backbone.pb.h"
#include "wire/client.pb.h"
#include "wire/publisher.pb.h"

namespace scripted {

constexpr uint32_t kBid = 22;

// A Publisher's options for these distributors, in failover order: quick
// reconnects, no logging.
inline mdcast::PublisherOptions options_for(std::initializer_list<const Peer*> peers) {
    mdcast::PublisherOptions options;
    for (const auto* p : peers) options.distributors.push_back({"127.0.0.1", p->port()});
    options.reconnect_delay_min_ms = 20;
    options.reconnect_delay_max_ms = 100;
    options.log_level = "off";
    return options;
}

inline mdcast::FieldList bid(int64_t mantissa) {
    mdcast::FieldList fields;
    fields.add_decimal(kBid, mantissa, -2);
    return fields;
}

// Until the script's `phase` reaches `value` (10 s at most).
inline void wait_for(const std::atomic<int>& phase, int value) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (phase.load() < value && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

// A distributor: the session and the answers to announcements and registrations.
class ScriptedDistributor : public Peer {
  public:
    // Accepts and answers the login and the announcement of `service` with
    // `service_id` (and a takeover token naming it).
    // `max_frame_bytes`: the limit its LoginResponse announces (0: none).
    void accept_publisher(const std::string& service, uint32_t service_id, wire::ServiceMode mode,
                          uint32_t max_frame_bytes = 0) {
        accept_login(true, 0, max_frame_bytes);
        const auto announce = expect<wire::ServiceAnnounce>(FrameType::kServiceAnnounce);
        if (announce.name() != service || announce.mode() != mode)
            fail("announced " + announce.name());
        presented_tokens.push_back(announce.takeover_token());
        wire::ServiceAnnounceResponse response;
        response.set_name(service);
        response.set_service_id(service_id);
        response.set_takeover_token("token of " + std::to_string(service_id));
        send(FrameType::kServiceAnnounceResponse, response);
    }
    std::vector<std::string> presented_tokens;  // by each announcement, in order
    // Answers the next ItemRegister: every item gets `item_id` (one item expected).
    void register_one(const std::string& name, uint64_t item_id, uint64_t last_seq) {
        const auto request = expect<wire::ItemRegister>(FrameType::kItemRegister);
        if (request.items_size() != 1 || request.items(0).name() != name)
            fail("registered the wrong items");
        wire::ItemRegistered response;
        response.set_service_id(request.service_id());
        auto* entry = response.add_items();
        entry->set_ref(request.items(0).ref());
        entry->set_item_id(item_id);
        entry->set_last_item_seq(last_seq);
        send(FrameType::kItemRegistered, response);
    }
    // Answers the next ItemRegister: the items named, in this order, get these ids.
    void register_items(const std::vector<std::pair<std::string, uint64_t>>& items) {
        const auto request = expect<wire::ItemRegister>(FrameType::kItemRegister);
        if (request.items_size() != static_cast<int>(items.size()))
            fail("registered " + std::to_string(request.items_size()) + " items");
        wire::ItemRegistered response;
        response.set_service_id(request.service_id());
        for (int i = 0; i < request.items_size(); ++i) {
            if (request.items(i).name() != items[static_cast<size_t>(i)].first)
                fail("registered " + request.items(i).name());
            auto* entry = response.add_items();
            entry->set_ref(request.items(i).ref());
            entry->set_item_id(items[static_cast<size_t>(i)].second);
        }
        send(FrameType::kItemRegistered, response);
    }
    // "id seq BID" of the next refresh or update.
    std::string next_data() {
        auto frame = read();
        if (!frame) fail("no data from the publisher");
        if (frame->first == FrameType::kRefresh) {
            wire::Refresh r;
            r.ParseFromString(frame->second);
            return "refresh " + std::to_string(r.item_id()) + " " + std::to_string(r.item_seq()) +
                   " " + std::to_string(r.fields().fields(0).decimal_value().mantissa());
        }
        if (frame->first == FrameType::kUpdate) {
            wire::Update u;
            u.ParseFromString(frame->second);
            if (u.publish_time_ns() == 0) fail("update not stamped");
            return "update " + std::to_string(u.item_id()) + " " + std::to_string(u.item_seq()) +
                   " " + std::to_string(u.fields().fields(0).decimal_value().mantissa());
        }
        if (frame->first == FrameType::kItemStatus) {
            wire::ItemStatus s;
            s.ParseFromString(frame->second);
            return "status " + std::to_string(s.item_id()) + " " +
                   wire::StatusCode_Name(s.status().code());
        }
        fail("unexpected " + std::string(mdcast::proto::frame_type_name(frame->first)));
        return {};
    }
    void request(uint32_t service_id, const std::string& service, const std::string& item,
                 uint64_t id) {
        wire::ImageRequest r;
        r.set_service_id(service_id);
        r.set_service_name(service);
        r.set_item_name(item);
        r.set_item_id(id);
        send(FrameType::kImageRequest, r);
    }
};

}  // namespace scripted
