// PostRelay: a server's post to a publisher under the distributor's id, the
// publisher's answer back to that server under the server's id, and its
// bounds (outstanding per publisher, timeout, a publisher gone).
#include "distributor/post_relay.h"

#include <catch2/catch.hpp>
#include <set>
#include <vector>

using mdcast::distributor::PostRelay;
using mdcast::distributor::ServerId;
namespace wire = mdcast::wire::v1;

namespace {

constexpr int64_t kSecond = 1'000'000'000;

struct Recorder final : PostRelay::Link {
    std::set<uint64_t> open_sessions{1, 2};
    std::vector<std::pair<uint64_t, wire::Post>> to_publishers;
    std::vector<std::pair<ServerId, wire::PostAck>> to_servers;
    bool send_to_publisher(uint64_t session, const wire::Post& post) override {
        if (!open_sessions.contains(session)) return false;
        to_publishers.emplace_back(session, post);
        return true;
    }
    void answer_server(ServerId server, const wire::PostAck& ack) override {
        to_servers.emplace_back(server, ack);
    }
};

wire::Post post_with_id(uint64_t id) {
    wire::Post post;
    post.set_post_id(id);
    post.set_service_name("SVC");
    post.set_item_name("A");
    return post;
}

wire::PostAck answer(uint64_t id, bool accepted, const std::string& text = "") {
    wire::PostAck ack;
    ack.set_post_id(id);
    ack.set_accepted(accepted);
    ack.set_text(text);
    return ack;
}

}  // namespace

TEST_CASE("posts of two servers with the same id reach the publisher apart and go back to each",
          "[post_relay]") {
    Recorder link;
    const PostRelay::Settings settings;
    PostRelay relay(link, settings);
    relay.forward(0xa, 1, post_with_id(5), kSecond);
    relay.forward(0xb, 1, post_with_id(5), kSecond);
    REQUIRE(link.to_publishers.size() == 2);
    const uint64_t first = link.to_publishers[0].second.post_id();
    const uint64_t second = link.to_publishers[1].second.post_id();
    CHECK(first != second);
    relay.on_publisher_answer(1, answer(second, false, std::string(2000, 'x')));
    relay.on_publisher_answer(1, answer(first, true));
    REQUIRE(link.to_servers.size() == 2);
    CHECK(link.to_servers[0].first == 0xb);
    CHECK(link.to_servers[0].second.post_id() == 5);
    CHECK(link.to_servers[0].second.text().size() == 512);  // cut to kMaxPostAckTextBytes
    CHECK(link.to_servers[1].first == 0xa);
    CHECK(link.to_servers[1].second.accepted());
    CHECK(relay.outstanding() == 0);
}

TEST_CASE("an answer from a publisher the post did not go to is not taken", "[post_relay]") {
    Recorder link;
    const PostRelay::Settings settings;
    PostRelay relay(link, settings);
    relay.forward(0xa, 1, post_with_id(5), kSecond);
    relay.on_publisher_answer(2, answer(link.to_publishers[0].second.post_id(), true));
    CHECK(link.to_servers.empty());
    CHECK(relay.counters().late_answers == 1);
}

TEST_CASE("past publishers.max_outstanding_posts a post is refused without reaching the publisher",
          "[post_relay]") {
    Recorder link;
    const PostRelay::Settings settings{4000, 2};
    PostRelay relay(link, settings);
    relay.forward(0xa, 1, post_with_id(1), kSecond);
    relay.forward(0xa, 1, post_with_id(2), kSecond);
    relay.forward(0xa, 1, post_with_id(3), kSecond);
    relay.forward(0xa, 2, post_with_id(4), kSecond);  // another publisher has its own room
    CHECK(link.to_publishers.size() == 3);
    REQUIRE(link.to_servers.size() == 1);
    CHECK(link.to_servers[0].second.post_id() == 3);
    CHECK(link.to_servers[0].second.code() == wire::STATUS_LIMIT_REACHED);
}

TEST_CASE("an unanswered post times out, a publisher gone refuses what it held", "[post_relay]") {
    Recorder link;
    const PostRelay::Settings settings{1000, 256};
    PostRelay relay(link, settings);
    relay.forward(0xa, 1, post_with_id(1), kSecond);
    relay.forward(0xa, 2, post_with_id(2), kSecond);
    relay.forward(0xa, 2, post_with_id(3), 3 * kSecond);
    relay.expire(2 * kSecond + 1);
    REQUIRE(link.to_servers.size() == 2);
    CHECK(link.to_servers[0].second.post_id() == 1);
    CHECK(link.to_servers[0].second.text().rfind("timeout", 0) == 0);
    CHECK(link.to_servers[1].second.post_id() == 2);
    relay.publisher_gone(2);
    REQUIRE(link.to_servers.size() == 3);
    CHECK(link.to_servers[2].second.post_id() == 3);
    CHECK(link.to_servers[2].second.text().find("went away") != std::string::npos);
    CHECK(relay.outstanding() == 0);
}

TEST_CASE("a publisher gone before the post is sent: refused NOT_FOUND at once", "[post_relay]") {
    Recorder link;
    const PostRelay::Settings settings;
    PostRelay relay(link, settings);
    relay.forward(0xa, 9, post_with_id(1), kSecond);
    REQUIRE(link.to_servers.size() == 1);
    CHECK(link.to_servers[0].second.code() == wire::STATUS_NOT_FOUND);
    CHECK(relay.outstanding() == 0);
}
