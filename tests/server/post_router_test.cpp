// PostRouter: server ids out, client ids back, and every bound (rate,
// outstanding, timeout, a client gone). The Link records what the router
// sends upstream and what it answers clients.
#include "server/post_router.h"

#include <catch2/catch.hpp>
#include <map>
#include <vector>

using mdcast::server::PostRouter;
using mdcast::server::ServerConfig;
namespace wire = mdcast::wire::v1;

namespace {

constexpr int64_t kSecond = 1'000'000'000;

struct Recorder final : PostRouter::Link {
    bool ready = true;  // the distributors' control addresses are known
    bool fits = true;   // posts fit a control datagram
    std::vector<std::pair<uint16_t, wire::Post>> sent;
    std::vector<std::pair<uint64_t, wire::PostAck>> answers;  // client id, answer
    bool source_ready(uint16_t) const override { return ready; }
    bool send_post(uint16_t source, wire::Post& post) override {
        if (fits) sent.emplace_back(source, post);
        return fits;
    }
    void answer_client(uint64_t client_id, const wire::PostAck& ack) override {
        answers.emplace_back(client_id, ack);
    }
};

ServerConfig limits(uint32_t per_second = 100, uint32_t outstanding = 64,
                    uint32_t timeout_ms = 5000) {
    ServerConfig config;
    config.posts_max_per_second = per_second;
    config.posts_max_outstanding = outstanding;
    config.posts_timeout_ms = timeout_ms;
    return config;
}

wire::Post post_with_id(uint64_t id) {
    wire::Post post;
    post.set_post_id(id);
    post.set_service_name("SVC");
    post.set_item_name("A");
    return post;
}

// Admits and forwards a client's post as the server does.
bool submit(PostRouter& router, uint64_t client, uint64_t post_id, int64_t now,
            uint16_t source = 1) {
    if (router.admit(client, post_id, now)) return false;
    router.forward(client, source, post_with_id(post_id), now);
    return true;
}

wire::PostAck answer(uint64_t server_post_id, bool accepted, const std::string& text = "") {
    wire::PostAck ack;
    ack.set_post_id(server_post_id);
    ack.set_accepted(accepted);
    ack.set_text(text);
    return ack;
}

}  // namespace

TEST_CASE("a post goes upstream under the server's id and its answer to the client under its own",
          "[post_router]") {
    Recorder link;
    const ServerConfig config = limits();
    PostRouter router(link, config);
    REQUIRE(submit(router, 7, 500, kSecond, 3));
    REQUIRE(submit(router, 8, 500, kSecond, 3));  // another client, the same post id
    REQUIRE(link.sent.size() == 2);
    CHECK(link.sent[0].first == 3);
    const uint64_t first = link.sent[0].second.post_id();
    const uint64_t second = link.sent[1].second.post_id();
    CHECK(first != second);
    router.on_answer(3, answer(second, false, "stale price"));
    router.on_answer(3, answer(first, true));
    REQUIRE(link.answers.size() == 2);
    CHECK(link.answers[0].first == 8);
    CHECK(link.answers[0].second.post_id() == 500);
    CHECK_FALSE(link.answers[0].second.accepted());
    CHECK(link.answers[0].second.text() == "stale price");
    CHECK(link.answers[1].first == 7);
    CHECK(link.answers[1].second.accepted());
    CHECK(router.outstanding() == 0);
    CHECK(router.counters().accepted == 1);
    CHECK(router.counters().rejected == 1);
}

TEST_CASE("an answer from another distributor, or twice, is counted late and goes nowhere",
          "[post_router]") {
    Recorder link;
    const ServerConfig config = limits();
    PostRouter router(link, config);
    REQUIRE(submit(router, 7, 1, kSecond, 3));
    const uint64_t id = link.sent[0].second.post_id();
    router.on_answer(4, answer(id, true));  // not the distributor it went to
    CHECK(link.answers.empty());
    router.on_answer(3, answer(id, true));
    router.on_answer(3, answer(id, true));
    CHECK(link.answers.size() == 1);
    CHECK(router.counters().late_answers == 2);
}

TEST_CASE("a client past posts.max_per_second is refused LIMIT_REACHED, then refilled",
          "[post_router]") {
    Recorder link;
    const ServerConfig config = limits(5);
    PostRouter router(link, config);
    for (uint64_t i = 1; i <= 5; ++i) CHECK(submit(router, 7, i, kSecond));
    const auto refused = router.admit(7, 6, kSecond);
    REQUIRE(refused);
    CHECK(refused->post_id() == 6);
    CHECK(refused->code() == wire::STATUS_LIMIT_REACHED);
    CHECK(refused->text().find("posts.max_per_second") != std::string::npos);
    CHECK(submit(router, 8, 1, kSecond));                // another client has its own bucket
    CHECK(submit(router, 7, 7, kSecond + kSecond / 4));  // a quarter second: one more token
    CHECK(router.counters().refused == 1);
}

TEST_CASE("a client with posts.max_outstanding unanswered is refused until one is answered",
          "[post_router]") {
    Recorder link;
    const ServerConfig config = limits(100, 2);
    PostRouter router(link, config);
    CHECK(submit(router, 7, 1, kSecond));
    CHECK(submit(router, 7, 2, kSecond));
    const auto refused = router.admit(7, 3, kSecond);
    REQUIRE(refused);
    CHECK(refused->text().find("posts.max_outstanding") != std::string::npos);
    router.on_answer(1, answer(link.sent[0].second.post_id(), true));
    CHECK(submit(router, 7, 4, kSecond));
}

TEST_CASE("no answer within posts.timeout_ms is a refusal \"timeout\", a late answer is dropped",
          "[post_router]") {
    Recorder link;
    const ServerConfig config = limits(100, 64, 1000);
    PostRouter router(link, config);
    REQUIRE(submit(router, 7, 11, kSecond));
    REQUIRE(submit(router, 7, 12, kSecond + kSecond / 2));
    router.expire(kSecond + kSecond / 2);
    CHECK(link.answers.empty());
    router.expire(2 * kSecond + 1);
    REQUIRE(link.answers.size() == 1);  // the second has half a second left
    CHECK(link.answers[0].second.post_id() == 11);
    CHECK_FALSE(link.answers[0].second.accepted());
    CHECK(link.answers[0].second.text().rfind("timeout", 0) == 0);
    router.on_answer(1, answer(link.sent[0].second.post_id(), true));
    CHECK(link.answers.size() == 1);
    CHECK(router.counters().timeouts == 1);
    CHECK(router.counters().late_answers == 1);
    CHECK(router.outstanding() == 1);
}

TEST_CASE("a post too large for the backbone is refused at once", "[post_router]") {
    Recorder link;
    link.fits = false;
    const ServerConfig config = limits();
    PostRouter router(link, config);
    REQUIRE(submit(router, 7, 9, kSecond));
    REQUIRE(link.answers.size() == 1);
    CHECK(link.answers[0].second.post_id() == 9);
    CHECK(link.answers[0].second.code() == wire::STATUS_LIMIT_REACHED);
    CHECK(router.outstanding() == 0);
    CHECK(router.counters().refused == 1);
}

TEST_CASE("a post for a distributor not ready yet is held until it is, or until the timeout",
          "[post_router]") {
    Recorder link;
    link.ready = false;
    const ServerConfig config = limits(100, 64, 1000);
    PostRouter router(link, config);
    REQUIRE(submit(router, 7, 1, kSecond));
    router.expire(kSecond + kSecond / 10);
    CHECK(link.sent.empty());
    CHECK(link.answers.empty());
    link.ready = true;
    router.expire(kSecond + kSecond / 5);  // the next tick sends it
    REQUIRE(link.sent.size() == 1);
    router.on_answer(1, answer(link.sent[0].second.post_id(), true));
    REQUIRE(link.answers.size() == 1);
    CHECK(link.answers[0].second.accepted());

    link.ready = false;
    REQUIRE(submit(router, 7, 2, 3 * kSecond));
    router.expire(4 * kSecond + 1);  // never ready: "timeout", and never sent afterwards
    REQUIRE(link.answers.size() == 2);
    CHECK(link.answers[1].second.text().rfind("timeout", 0) == 0);
    link.ready = true;
    router.expire(5 * kSecond);
    CHECK(link.sent.size() == 1);
}

TEST_CASE("a client gone takes its posts with it: their answers go nowhere", "[post_router]") {
    Recorder link;
    const ServerConfig config = limits();
    PostRouter router(link, config);
    REQUIRE(submit(router, 7, 1, kSecond));
    REQUIRE(submit(router, 8, 1, kSecond));
    router.forget_client(7);
    CHECK(router.outstanding() == 1);
    router.on_answer(1, answer(link.sent[0].second.post_id(), true));
    router.expire(100 * kSecond);
    REQUIRE(link.answers.size() == 1);
    CHECK(link.answers[0].first == 8);
}
