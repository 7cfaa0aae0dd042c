// Tests for server/image_recovery.h: routing requests by name through the
// distributors' directories, the pending limit, "no such service", answers
// from upstream, retries by name and by id, and a distributor's reset and
// silence. The Link is the server's side: it records what recovery asks to
// send and to tell. Client handles are opaque here (never dereferenced).
#include "server/image_recovery.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/clock.h"
#include "proto/source_ids.h"

namespace {

namespace proto = mdcast::proto;
using mdcast::server::CachedItem;
using mdcast::server::ClientSession;
using mdcast::server::ImageRecovery;
using mdcast::server::ItemCache;
using mdcast::server::PendingSubscriber;
namespace wire = mdcast::wire::v1;

constexpr int64_t kTimeoutNs = 50'000'000;

struct Told {
    ClientSession* client;
    std::string service, name;
    uint64_t item_id;
    wire::Status status;
};

struct ServerSide : ImageRecovery::Link {
    std::vector<uint16_t> sources;
    std::vector<uint16_t> ready;  // control address known
    std::vector<std::pair<uint16_t, wire::ImageRequest>> sent;
    std::vector<Told> told;

    bool send_image_request(uint16_t source, const wire::ImageRequest& request) override {
        if (std::find(ready.begin(), ready.end(), source) == ready.end()) return false;
        sent.emplace_back(source, request);
        return true;
    }
    std::vector<uint16_t> upstream_sources() const override { return sources; }
    void tell_waiting(const PendingSubscriber& waiting, const std::string& service,
                      const std::string& name, uint64_t item_id,
                      const wire::Status& status) override {
        told.push_back({waiting.client, service, name, item_id, status});
    }
};

struct Dummies {
    char storage[4] = {};
    ClientSession* operator[](size_t i) { return reinterpret_cast<ClientSession*>(&storage[i]); }
};

wire::Directory directory_of(uint16_t source, const std::string& service,
                             wire::ServiceState state = wire::SERVICE_UP) {
    wire::Directory directory;
    auto* info = directory.add_services();
    info->set_service_id(proto::make_service_id(source, 1));
    info->set_name(service);
    info->set_state(state);
    return directory;
}

wire::Refresh refresh_of(uint64_t id, const std::string& name) {
    wire::Refresh r;
    r.set_item_id(id);
    r.set_item_seq(1);
    r.set_service_id(proto::make_service_id(proto::item_source(id), 1));
    r.set_service_name("SVC");
    r.set_item_name(name);
    r.mutable_status()->set_stream_state(wire::STREAM_OPEN);
    r.mutable_status()->set_data_state(wire::DATA_OK);
    return r;
}

wire::ItemStatus closed_status(const std::string& name, wire::StatusCode code) {
    wire::ItemStatus status;
    status.set_service_name("SVC");
    status.set_item_name(name);
    status.mutable_status()->set_stream_state(wire::STREAM_CLOSED);
    status.mutable_status()->set_data_state(wire::DATA_SUSPECT);
    status.mutable_status()->set_code(code);
    return status;
}

struct Fixture {
    ItemCache cache{64, 100};
    ServerSide link;
    ImageRecovery recovery{cache, {2, kTimeoutNs, 100}, link};  // max_pending 2
    Dummies clients;

    CachedItem& cached(uint64_t id, const std::string& name) {
        CachedItem* item = nullptr;
        REQUIRE(cache.apply_refresh(refresh_of(id, name), item) == ItemCache::Outcome::kApplied);
        return *item;
    }
};

}  // namespace

TEST_CASE("a name waits for the directory of its service, then is asked of its distributor",
          "[image_recovery]") {
    Fixture f;
    f.link.sources = {1};
    f.link.ready = {1};
    f.recovery.wait_by_name("SVC", "A", {f.clients[0], false, {}});
    CHECK(f.link.sent.empty());  // no directory yet: waiting, not refused, told so
    REQUIRE(f.link.told.size() == 1);
    CHECK(f.link.told[0].status.stream_state() == wire::STREAM_OPEN);
    CHECK(f.link.told[0].status.code() == wire::STATUS_SOURCE_DOWN);
    CHECK(f.recovery.counters().waiting_for_source == 1);
    CHECK(f.recovery.pending_count() == 1);

    f.recovery.on_directory(1, directory_of(1, "SVC"));
    REQUIRE(f.link.sent.size() == 1);
    CHECK(f.link.sent[0].first == 1);
    CHECK(f.link.sent[0].second.service_name() == "SVC");
    CHECK(f.link.sent[0].second.item_name() == "A");

    // A second subscriber joins the first request.
    f.recovery.wait_by_name("SVC", "A", {f.clients[1], true, {}});
    CHECK(f.link.sent.size() == 1);
    CHECK(f.link.told.size() == 1);  // asked already: nothing to tell the second
    const auto pending = f.recovery.image_arrived(f.cached(proto::make_item_id(1, 1), "A"));
    REQUIRE(pending.has_value());
    CHECK(pending->waiting.size() == 2);
    CHECK(f.recovery.pending_count() == 0);
}

TEST_CASE("a service no distributor lists is closed not found", "[image_recovery]") {
    Fixture f;
    f.link.sources = {1};
    f.link.ready = {1};
    f.recovery.on_directory(1, directory_of(1, "SVC"));
    f.recovery.wait_by_name("NOPE", "A", {f.clients[0], false, {}});
    REQUIRE(f.link.told.size() == 1);
    CHECK(f.link.told[0].client == f.clients[0]);
    CHECK(f.link.told[0].status.code() == wire::STATUS_NOT_FOUND);
    CHECK(f.link.told[0].status.stream_state() == wire::STREAM_CLOSED);
    CHECK(f.recovery.pending_count() == 0);
}

TEST_CASE("a service seen before waits while its distributor restarts without it",
          "[image_recovery]") {
    Fixture f;
    f.link.sources = {1};
    f.link.ready = {1};
    f.recovery.on_directory(1, directory_of(1, "SVC"));
    f.recovery.forget_source(1);  // the distributor restarted: its publisher is not back yet
    f.recovery.on_directory(1, directory_of(1, "OTHER"));
    f.recovery.wait_by_name("SVC", "A", {f.clients[0], false, {}});
    REQUIRE(f.link.told.size() == 1);
    CHECK(f.link.told[0].status.stream_state() == wire::STREAM_OPEN);
    CHECK(f.link.told[0].status.code() == wire::STATUS_SOURCE_DOWN);
    CHECK(f.link.sent.empty());
    f.recovery.on_directory(1, directory_of(1, "OTHER"));  // still not back: still waiting
    CHECK(f.link.told.size() == 1);
    CHECK(f.recovery.pending_count() == 1);
    f.recovery.on_directory(1, directory_of(1, "SVC"));
    REQUIRE(f.link.sent.size() == 1);
    CHECK(f.link.sent[0].second.item_name() == "A");
}

TEST_CASE("names beyond max_pending are refused limit reached", "[image_recovery]") {
    Fixture f;  // max_pending 2
    f.link.sources = {1};
    f.link.ready = {1};
    f.recovery.on_directory(1, directory_of(1, "SVC"));
    f.recovery.wait_by_name("SVC", "A", {f.clients[0], false, {}});
    f.recovery.wait_by_name("SVC", "B", {f.clients[0], false, {}});
    CHECK(f.link.told.empty());
    f.recovery.wait_by_name("SVC", "C", {f.clients[1], false, {}});
    REQUIRE(f.link.told.size() == 1);
    CHECK(f.link.told[0].client == f.clients[1]);
    CHECK(f.link.told[0].name == "C");
    CHECK(f.link.told[0].status.code() == wire::STATUS_LIMIT_REACHED);
    CHECK(f.link.sent.size() == 2);
}

TEST_CASE("upstream's closed status ends the wait, an open one does not", "[image_recovery]") {
    Fixture f;
    f.link.sources = {1};
    f.link.ready = {1};
    f.recovery.on_directory(1, directory_of(1, "SVC"));
    f.recovery.wait_by_name("SVC", "A", {f.clients[0], false, {}});
    auto open = closed_status("A", wire::STATUS_RECOVERING);
    open.mutable_status()->set_stream_state(wire::STREAM_OPEN);
    f.recovery.status_arrived(open);
    CHECK(f.link.told.empty());
    f.recovery.status_arrived(closed_status("A", wire::STATUS_NOT_FOUND));
    REQUIRE(f.link.told.size() == 1);
    CHECK(f.link.told[0].status.code() == wire::STATUS_NOT_FOUND);
    CHECK(f.recovery.pending_count() == 0);
}

TEST_CASE("overdue names are asked again and their subscribers told after two attempts",
          "[image_recovery]") {
    Fixture f;
    f.link.sources = {1};
    f.link.ready = {1};
    f.recovery.on_directory(1, directory_of(1, "SVC"));
    f.recovery.wait_by_name("SVC", "A", {f.clients[0], false, {}});
    REQUIRE(f.link.sent.size() == 1);
    int64_t now = mdcast::monotonic_ns();
    f.recovery.on_timer(now);  // not overdue yet
    CHECK(f.link.sent.size() == 1);
    now += 2 * kTimeoutNs;
    f.recovery.on_timer(now);
    CHECK(f.link.sent.size() == 2);
    CHECK(f.link.told.empty());
    now += 2 * kTimeoutNs;
    f.recovery.on_timer(now);
    CHECK(f.link.sent.size() == 3);
    REQUIRE(f.link.told.size() == 1);
    CHECK(f.link.told[0].status.code() == wire::STATUS_RECOVERING);
    CHECK(f.link.told[0].status.stream_state() == wire::STREAM_OPEN);
    now += 2 * kTimeoutNs;
    f.recovery.on_timer(now);
    CHECK(f.link.told.size() == 1);  // told once
}

TEST_CASE("a suspect item is asked for by id until an image arrives", "[image_recovery]") {
    Fixture f;
    f.link.ready = {1};
    CachedItem& item = f.cached(proto::make_item_id(1, 7), "A");
    ItemCache::invalidate(item, wire::STATUS_UNRECOVERABLE_LOSS, "lost");
    f.recovery.request_image(item);
    REQUIRE(f.link.sent.size() == 1);
    CHECK(f.link.sent[0].second.item_id() == item.id);
    CHECK(f.recovery.recovering_count() == 1);
    int64_t now = mdcast::monotonic_ns() + 2 * kTimeoutNs;
    f.recovery.on_timer(now);
    CHECK(f.link.sent.size() == 2);

    item.has_image = true;  // the image arrived
    f.recovery.image_arrived(item);
    CHECK(f.recovery.recovering_count() == 0);
    f.recovery.on_timer(now + 2 * kTimeoutNs);
    CHECK(f.link.sent.size() == 2);
}

TEST_CASE("after a reset, not found does not close a restored subscription", "[image_recovery]") {
    Fixture f;
    f.link.sources = {1};
    f.link.ready = {1};
    f.recovery.on_directory(1, directory_of(1, "SVC"));
    CachedItem& item = f.cached(proto::make_item_id(1, 3), "A");
    f.recovery.request_image(item);
    f.recovery.forget_source(1);
    CHECK(f.recovery.recovering_count() == 0);
    CHECK(f.recovery.directory().empty());
    CHECK_FALSE(f.recovery.has_directory(1));

    f.recovery.resubscribe(item, {f.clients[0], false, {22}});
    f.recovery.status_arrived(closed_status("A", wire::STATUS_NOT_FOUND));
    CHECK(f.link.told.empty());
    CHECK(f.recovery.pending_count() == 1);
    // Every distributor's directory is known and none lists SVC: still waiting.
    f.recovery.on_directory(1, directory_of(1, "OTHER"));
    CHECK(f.link.told.empty());
    CHECK(f.recovery.pending_count() == 1);
}

TEST_CASE("a directory reports services going down and ignores foreign ids", "[image_recovery]") {
    Fixture f;
    auto change = f.recovery.on_directory(1, directory_of(1, "SVC"));
    CHECK(change.went_down.empty());
    change = f.recovery.on_directory(1, directory_of(1, "SVC", wire::SERVICE_DOWN));
    REQUIRE(change.went_down.size() == 1);
    CHECK(change.went_down[0].name() == "SVC");
    change = f.recovery.on_directory(1, directory_of(1, "SVC", wire::SERVICE_DOWN));
    CHECK(change.went_down.empty());  // down already
    change = f.recovery.on_directory(1, directory_of(2, "THEIRS"));
    CHECK(change.foreign == 1);
    CHECK(f.recovery.directory().size() == 1);
}

TEST_CASE("a distributor heard again re-images its own subscribed items only", "[image_recovery]") {
    Fixture f;
    f.link.ready = {1, 2};
    const CachedItem& mine = f.cached(proto::make_item_id(1, 1), "A");
    const CachedItem& theirs = f.cached(proto::make_item_id(2, 1), "B");
    f.recovery.on_source_heard_again(1, {mine.id, theirs.id, proto::make_item_id(1, 99)});
    REQUIRE(f.link.sent.size() == 1);
    CHECK(f.link.sent[0].first == 1);
    CHECK(f.link.sent[0].second.item_id() == mine.id);
}

TEST_CASE("a cache-off item is waited for by name and asked for by id", "[image_recovery]") {
    Fixture f;
    f.link.ready = {1};
    const CachedItem& item = f.cached(proto::make_item_id(1, 5), "A");
    f.recovery.wait_for_image(item, {f.clients[0], true, {}});
    REQUIRE(f.link.sent.size() == 1);
    CHECK(f.link.sent[0].second.item_id() == item.id);
    f.recovery.wait_for_image(item, {f.clients[1], false, {}});
    CHECK(f.link.sent.size() == 1);  // joined
    f.recovery.remove_client(f.clients[0]);
    const auto pending = f.recovery.image_arrived(item);
    REQUIRE(pending.has_value());
    REQUIRE(pending->waiting.size() == 1);
    CHECK(pending->waiting[0].client == f.clients[1]);
}

TEST_CASE("a client over its share of the pending table is refused, naming the limit",
          "[image_recovery][hardening]") {
    Fixture f;
    ImageRecovery shared{f.cache, {10, kTimeoutNs, 1}, f.link};
    f.link.sources = {1};
    f.link.ready = {1};
    shared.on_directory(1, directory_of(1, "SVC"));
    shared.wait_by_name("SVC", "A", {f.clients[0], false, {}});
    shared.wait_by_name("SVC", "B", {f.clients[0], false, {}});
    shared.wait_by_name("SVC", "B", {f.clients[1], false, {}});  // another client: joins
    REQUIRE(f.link.told.size() == 1);
    CHECK(f.link.told[0].client == f.clients[0]);
    CHECK(f.link.told[0].name == "B");
    CHECK(f.link.told[0].status.code() == wire::STATUS_LIMIT_REACHED);
    CHECK(f.link.told[0].status.text().find("cache.max_pending_requests_per_client (1)") !=
          std::string::npos);
    CHECK(shared.counters().client_limit_refusals == 1);
}

TEST_CASE("a service over its share of the pending table is refused, naming the limit",
          "[image_recovery][hardening]") {
    Fixture f;
    ImageRecovery shared{f.cache, {10, kTimeoutNs, 10, 1}, f.link};
    f.link.sources = {1};
    f.link.ready = {1};
    shared.on_directory(1, directory_of(1, "SVC"));
    shared.wait_by_name("SVC", "A", {f.clients[0], false, {}});
    shared.wait_by_name("SVC", "B", {f.clients[1], false, {}});
    REQUIRE(f.link.told.size() == 1);
    CHECK(f.link.told[0].client == f.clients[1]);
    CHECK(f.link.told[0].status.code() == wire::STATUS_LIMIT_REACHED);
    CHECK(f.link.told[0].status.text().find("cache.max_pending_requests_per_service (1)") !=
          std::string::npos);
    CHECK(shared.counters().service_limit_refusals == 1);
    CHECK(shared.counters().client_limit_refusals == 0);
    CHECK(f.link.sent.size() == 1);  // the refused name is never asked upstream
}

TEST_CASE("a full pending table's refusals are counted", "[image_recovery][hardening]") {
    Fixture f;  // max_pending 2
    f.link.sources = {1};
    f.link.ready = {1};
    f.recovery.on_directory(1, directory_of(1, "SVC"));
    for (const char* name : {"A", "B", "C", "D"})
        f.recovery.wait_by_name("SVC", name, {f.clients[0], false, {}});
    CHECK(f.recovery.counters().table_limit_refusals == 2);
    CHECK(f.link.told.size() == 2);
}
