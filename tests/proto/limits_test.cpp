// proto/limits.h: the distributor (which registers services and items) and the
// server (which is asked for them by name) accept exactly the same names.
#include "proto/limits.h"

#include <catch2/catch.hpp>
#include <string>

#include "distributor/item_registry.h"
#include "server/request_checks.h"

using namespace mdcast;

namespace {

bool distributor_registers_service(const std::string& name) {
    distributor::ItemRegistry registry(1, 10, 10);
    distributor::ServiceEntry* entry = nullptr;
    return registry.announce(name, wire::v1::SERVICE_BROADCAST, 1, entry) ==
           distributor::ItemRegistry::AnnounceResult::kAccepted;
}

bool distributor_registers_item(const std::string& name) {
    distributor::ItemRegistry registry(1, 10, 10);
    distributor::ServiceEntry* service = nullptr;
    REQUIRE(registry.announce("SVC", wire::v1::SERVICE_BROADCAST, 1, service) ==
            distributor::ItemRegistry::AnnounceResult::kAccepted);
    return registry.register_item(service->id, name) != nullptr;
}

bool server_accepts_service(const std::string& name) {
    wire::v1::Subscribe request;
    request.set_service_name(name);
    request.add_item_names("ITEM");
    return !server::check_subscribe(request, 10).has_value();
}

bool server_accepts_item(const std::string& name) {
    return !server::check_item_name(name).has_value();
}

}  // namespace

TEST_CASE("distributor and server agree on the longest service name", "[limits]") {
    const size_t max = proto::kMaxServiceNameBytes;
    for (size_t length : {size_t{0}, size_t{1}, max - 1, max, max + 1, proto::kMaxItemNameBytes}) {
        const std::string name(length, 's');
        INFO("service name of " << length << " bytes");
        const bool allowed = length > 0 && length <= max;
        CHECK(distributor_registers_service(name) == allowed);
        CHECK(server_accepts_service(name) == allowed);
    }
}

TEST_CASE("distributor and server agree on the longest item name", "[limits]") {
    const size_t max = proto::kMaxItemNameBytes;
    for (size_t length : {size_t{0}, size_t{1}, max - 1, max, max + 1, 4 * max}) {
        const std::string name(length, 'i');
        INFO("item name of " << length << " bytes");
        const bool allowed = length > 0 && length <= max;
        CHECK(distributor_registers_item(name) == allowed);
        CHECK(server_accepts_item(name) == allowed);
    }
}

TEST_CASE("the server refuses a view beyond kMaxViewFields", "[limits]") {
    wire::v1::Subscribe request;
    request.set_service_name("SVC");
    request.add_item_names("ITEM");
    for (uint32_t id = 1; id <= proto::kMaxViewFields; ++id) request.add_view_field_ids(id);
    CHECK_FALSE(server::check_subscribe(request, 10).has_value());
    request.add_view_field_ids(static_cast<uint32_t>(proto::kMaxViewFields) + 1);
    const auto refused = server::check_subscribe(request, 10);
    REQUIRE(refused.has_value());
    CHECK(refused->code() == wire::v1::STATUS_INVALID_REQUEST);
    CHECK(refused->stream_state() == wire::v1::STREAM_CLOSED);
}

TEST_CASE("the server refuses more items than max_items_per_request", "[limits]") {
    wire::v1::Subscribe request;
    request.set_service_name("SVC");
    for (int i = 0; i < 3; ++i) request.add_item_names("ITEM" + std::to_string(i));
    CHECK_FALSE(server::check_subscribe(request, 3).has_value());
    const auto refused = server::check_subscribe(request, 2);
    REQUIRE(refused.has_value());
    CHECK(refused->code() == wire::v1::STATUS_LIMIT_REACHED);
}

TEST_CASE("a login names a user within the limits", "[limits]") {
    CHECK(proto::valid_login("alice", ""));
    CHECK_FALSE(proto::valid_login("", "secret"));
    CHECK(proto::valid_login(std::string(proto::kMaxUserNameBytes, 'u'), "secret"));
    CHECK_FALSE(proto::valid_login(std::string(proto::kMaxUserNameBytes + 1, 'u'), "secret"));
    CHECK(proto::valid_login("alice", std::string(proto::kMaxPasswordBytes, 'p')));
    CHECK_FALSE(proto::valid_login("alice", std::string(proto::kMaxPasswordBytes + 1, 'p')));
}
