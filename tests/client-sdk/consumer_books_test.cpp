// A book across the Consumer's failover (docs/books.md, "Recovery"), against
// scripted servers so each case happens exactly when the test says: the new
// server's image behind what was delivered (held, brought level with that
// server's book actions, then delivered), ahead (delivered at once, repeats
// dropped), or never catching up (delivered as it is after the catch-up
// timeout). An mdcast::Book kept from the events ends with exactly the book
// the last server holds: no action applied twice or out of order, and no entry
// left from the server that was lost. The real-server case is
// tests/integration/test_book_failover.py.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "mdcast/book.h"
#include "mdcast/consumer.h"
#include "scripted_peer.h"
#include "wire/client.pb.h"

namespace {

namespace wire = mdcast::wire::v1;
using mdcast::BookChanges;
using mdcast::BookKey;
using mdcast::proto::FrameType;
using scripted::Script;
using std::chrono::milliseconds;

constexpr uint32_t kSize = 3427;

mdcast::FieldList size_of(int64_t size) {
    mdcast::FieldList fields;
    fields.add_int(kSize, size);
    return fields;
}

BookKey price(int64_t whole) {
    return BookKey::price(whole, 0);
}

// A book of whole prices and sizes, as {price, size} pairs in key order.
BookChanges book_of(std::initializer_list<std::pair<int64_t, int64_t>> levels) {
    BookChanges entries;
    for (const auto& [p, size] : levels) entries.add(price(p), size_of(size));
    return entries;
}

std::string bytes_of(const BookChanges& changes) {
    return {reinterpret_cast<const char*>(changes.bytes().data()), changes.bytes().size()};
}

// A server whose item X is a MarketByPrice book.
class BookServer : public scripted::Peer {
  public:
    void accept_session() {
        accept_login(true, 2);
        expect<wire::Subscribe>(FrameType::kSubscribe);
    }
    void refresh(uint64_t id, uint64_t seq, const BookChanges& entries) {
        wire::Refresh r;
        r.set_item_id(id);
        r.set_item_seq(seq);
        r.set_clear_cache(true);
        r.set_service_name("SVC");
        r.set_item_name("X");
        r.mutable_status()->set_stream_state(wire::STREAM_OPEN);
        r.mutable_status()->set_data_state(wire::DATA_OK);
        r.set_domain(wire::DOMAIN_MARKET_BY_PRICE);
        r.set_map(bytes_of(entries));
        send_book(FrameType::kRefresh, r);
    }
    void update(uint64_t id, uint64_t seq, const BookChanges& changes) {
        wire::Update u;
        u.set_item_id(id);
        u.set_item_seq(seq);
        u.set_trade(true);
        u.set_map(bytes_of(changes));
        send_book(FrameType::kUpdate, u);
    }

  private:
    // A frame carrying a map has flag 1 (kFrameFlagMap) set, as the server sends it.
    void send_book(FrameType type, const google::protobuf::MessageLite& message) {
        std::string frame = mdcast::proto::encode_frame_string(type, message);
        frame[7] = static_cast<char>(mdcast::proto::kFrameFlagMap);
        send_raw(frame);
    }
};

// What the application saw, in order ("refresh 13 [101:5 102:3]", "update 14"), and the
// Book kept from it.
class BookRecorder final : public mdcast::ConsumerHandler {
  public:
    void on_refresh(const mdcast::Event& e) override {
        const auto entries = e.book_entries();
        all_adds = all_adds && std::all_of(entries.begin(), entries.end(), [](const auto& entry) {
                       return entry.action == mdcast::MapAction::kAdd;
                   });
        book.apply(e);
        seen.push_back("refresh " + std::to_string(e.sequence()) + " " + shown());
    }
    void on_update(const mdcast::Event& e) override {
        book.apply(e);
        seen.push_back("update " + std::to_string(e.sequence()));
    }
    void on_status(const mdcast::Event& e) override {
        seen.push_back("status " + std::string(mdcast::status_code_name(e.state().code)));
    }
    // The book as "[price:size ...]".
    std::string shown() const {
        std::string out = "[";
        for (const auto& [key, fields] : book.entries()) {
            if (out.size() > 1) out += ' ';
            std::string size = "-";
            for (const auto& v : fields.values())
                if (v.id == kSize) size = std::to_string(v.integer);
            out += key.to_string() + ":" + size;
        }
        return out + "]";
    }
    std::vector<std::string> seen;
    mdcast::Book book;
    bool all_adds = true;  // every refresh's entries are adds (a whole book)
};

// Two book servers and a consumer of X on them (A first), started.
struct TwoBookServers {
    explicit TwoBookServers(uint32_t catch_up_timeout_ms = 2000)
        : consumer(options(catch_up_timeout_ms), recorder) {
        consumer.subscribe("SVC", "X");
        consumer.start();
    }
    mdcast::ConsumerOptions options(uint32_t catch_up_timeout_ms) const {
        mdcast::ConsumerOptions o;
        o.servers = {{"127.0.0.1", a.port()}, {"127.0.0.1", b.port()}};
        o.delivery = mdcast::ConsumerOptions::Delivery::kDispatch;
        o.reconnect_delay_min_ms = 20;
        o.reconnect_delay_max_ms = 100;
        o.catch_up_timeout_ms = catch_up_timeout_ms;
        o.log_level = "off";
        return o;
    }
    // Dispatches until `count` item events were seen (or 5 s passed).
    void dispatch_until(size_t count) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (recorder.seen.size() < count && std::chrono::steady_clock::now() < deadline)
            consumer.dispatch(milliseconds(20));
    }
    BookServer a, b;
    BookRecorder recorder;
    mdcast::Consumer consumer;
};

}  // namespace

TEST_CASE("a book image behind after a failover is brought level with the new server's actions",
          "[consumer][book]") {
    TwoBookServers t;
    auto &a = t.a, &b = t.b;  // references: clang 14 cannot capture structured bindings
    Script script([&] {
        a.accept_session();
        a.refresh(7, 10, book_of({{100, 1}, {101, 2}, {102, 3}}));
        a.update(7, 11, BookChanges().remove(price(100)));
        a.update(7, 12, BookChanges().add(price(103), size_of(4)));
        a.update(7, 13, BookChanges().update(price(101), size_of(5)));
        std::this_thread::sleep_for(milliseconds(100));
        a.drop();
        b.accept_session();
        b.refresh(9, 11, book_of({{101, 2}, {102, 3}}));  // two updates behind
        b.update(9, 12, BookChanges().add(price(103), size_of(4)));
        b.update(9, 13, BookChanges().update(price(101), size_of(5)));
        b.update(9, 14, BookChanges().remove(price(102)));
    });
    t.dispatch_until(7);
    CHECK(script.join().empty());
    const std::vector<std::string> expected{"refresh 10 [100:1 101:2 102:3]",
                                            "update 11",
                                            "update 12",
                                            "update 13",
                                            "status CONNECTION_LOST",
                                            "refresh 13 [101:5 102:3 103:4]",
                                            "update 14"};
    CHECK(t.recorder.seen == expected);
    CHECK(t.recorder.shown() == "[101:5 103:4]");
    CHECK(t.recorder.all_adds);
    CHECK(t.consumer.stats().catch_ups == 1);
    t.consumer.stop();
}

TEST_CASE("a book image ahead after a failover replaces the book, and repeats are not applied",
          "[consumer][book]") {
    TwoBookServers t;
    auto &a = t.a, &b = t.b;
    Script script([&] {
        a.accept_session();
        a.refresh(7, 10, book_of({{100, 1}, {101, 2}}));
        a.update(7, 11, BookChanges().add(price(104), size_of(9)));
        std::this_thread::sleep_for(milliseconds(100));
        a.drop();
        b.accept_session();
        b.update(9, 15, BookChanges().add(price(107), size_of(1)));  // before its image: dropped
        // 100 and 104 went in updates 12 to 14, which the consumer never saw.
        b.refresh(9, 14, book_of({{101, 2}, {105, 7}}));
        b.update(9, 14, BookChanges().remove(price(105)));  // a repeat of what the image holds
        b.update(9, 15, BookChanges().add(price(106), size_of(1)));
    });
    t.dispatch_until(5);
    CHECK(script.join().empty());
    const std::vector<std::string> expected{"refresh 10 [100:1 101:2]", "update 11",
                                            "status CONNECTION_LOST", "refresh 14 [101:2 105:7]",
                                            "update 15"};
    CHECK(t.recorder.seen == expected);
    CHECK(t.recorder.shown() == "[101:2 105:7 106:1]");
    t.consumer.stop();
}

TEST_CASE("a book image that never catches up is delivered as the new server holds it",
          "[consumer][book]") {
    TwoBookServers t(200);
    auto &a = t.a, &b = t.b;
    Script script([&] {
        a.accept_session();
        a.refresh(7, 10, book_of({{100, 1}}));
        a.update(7, 11, BookChanges().add(price(101), size_of(2)));
        a.update(7, 12, BookChanges().add(price(102), size_of(3)));
        std::this_thread::sleep_for(milliseconds(100));
        a.drop();
        b.accept_session();
        b.refresh(9, 11, book_of({{100, 1}, {101, 2}}));  // and nothing more from B
        std::this_thread::sleep_for(milliseconds(600));
    });
    t.dispatch_until(5);
    CHECK(script.join().empty());
    const std::vector<std::string> expected{"refresh 10 [100:1]", "update 11", "update 12",
                                            "status CONNECTION_LOST", "refresh 11 [100:1 101:2]"};
    CHECK(t.recorder.seen == expected);
    t.consumer.stop();
}
