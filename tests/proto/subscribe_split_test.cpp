// proto/subscribe_split.h: every piece fits both of the server's limits, the
// names keep their order, and a name that can fit no request is set aside.
#include "proto/subscribe_split.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "proto/limits.h"

using namespace mdcast;
using mdcast::wire::v1::Subscribe;

namespace {

std::vector<std::string> numbered(size_t count, const std::string& prefix = "ITEM") {
    std::vector<std::string> names;
    for (size_t i = 0; i < count; ++i) {
        std::string n = std::to_string(i);
        names.push_back(prefix + std::string(6 - n.size(), '0') + n);
    }
    return names;
}

Subscribe head() {
    Subscribe h;
    h.set_service_name("MDCAST");
    h.set_conflate_ms(250);
    for (uint32_t id : {22u, 25u, 30u}) h.add_view_field_ids(id);
    return h;
}

// Every piece within the limits (with the largest request_id set), all names
// in order.
void check_pieces(const proto::SubscribeSplit& split, const std::vector<std::string>& names,
                  const proto::RequestLimits& limits) {
    std::vector<std::string> seen;
    for (Subscribe request : split.requests) {
        request.set_request_id(UINT32_MAX);
        CHECK(request.ByteSizeLong() <= limits.max_body_bytes);
        CHECK(static_cast<size_t>(request.item_names_size()) <= limits.max_items);
        CHECK(request.service_name() == "MDCAST");
        CHECK(request.view_field_ids_size() == 3);
        CHECK(request.conflate_ms() == 250);
        seen.insert(seen.end(), request.item_names().begin(), request.item_names().end());
    }
    CHECK(seen == names);
}

}  // namespace

TEST_CASE("10,000 names are split at the frame limit, not only at the item count",
          "[subscribe_split]") {
    const auto names = numbered(10000);
    const std::vector<std::string_view> views(names.begin(), names.end());
    const auto limits = proto::request_limits(10000, 65536, 1000);
    const auto split = proto::split_subscribe(head(), views, limits);
    CHECK(split.too_large.empty());
    CHECK(split.requests.size() == 2);  // 10 names of 12 bytes each: ~120 KB
    check_pieces(split, names, limits);
}

TEST_CASE("the item count still splits when the bytes would fit", "[subscribe_split]") {
    const auto names = numbered(25);
    const std::vector<std::string_view> views(names.begin(), names.end());
    const auto limits = proto::request_limits(10, 65536, 1000);
    const auto split = proto::split_subscribe(head(), views, limits);
    CHECK(split.requests.size() == 3);
    check_pieces(split, names, limits);
}

TEST_CASE("a server that announces nothing gets the known defaults", "[subscribe_split]") {
    const auto limits = proto::request_limits(0, 0, 1000);
    CHECK(limits.max_items == 1000);
    CHECK(limits.max_body_bytes == proto::kDefaultServerFrameBodyBytes);
    const auto names = numbered(6000, std::string(20, 'N'));
    const std::vector<std::string_view> views(names.begin(), names.end());
    const auto split = proto::split_subscribe(head(), views, limits);
    CHECK(split.requests.size() == 6);
    check_pieces(split, names, limits);
}

TEST_CASE("a name that fits no request is set aside, the others go on", "[subscribe_split]") {
    std::vector<std::string> names = numbered(3);
    names.insert(names.begin() + 1, std::string(2000, 'L'));
    const std::vector<std::string_view> views(names.begin(), names.end());
    const auto limits = proto::request_limits(100, 1024, 1000);
    const auto split = proto::split_subscribe(head(), views, limits);
    REQUIRE(split.too_large == std::vector<size_t>{1});
    names.erase(names.begin() + 1);
    check_pieces(split, names, limits);
}

TEST_CASE("names exactly at the byte limit fill a piece to it", "[subscribe_split]") {
    // Each name costs 1 (tag) + 1 (length) + 98 bytes = 100.
    const std::vector<std::string> names(30, std::string(98, 'x'));
    const std::vector<std::string_view> views(names.begin(), names.end());
    Subscribe bare;
    bare.set_service_name("MDCAST");
    const size_t limit = bare.ByteSizeLong() + 6 + 10 * 100;
    const auto split = proto::split_subscribe(bare, views, proto::RequestLimits{1000, limit});
    REQUIRE(split.requests.size() == 3);
    for (const auto& request : split.requests) CHECK(request.item_names_size() == 10);
}
