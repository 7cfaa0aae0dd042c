// Tests for client-sdk/src/types.cpp: the names of states, codes and events
// (to_string and operator<<). Typed values by field name are in
// event_writer_test, beside the events they read.
#include "mdcast/types.h"

#include <catch2/catch.hpp>
#include <sstream>

#include "mdcast/event.h"

namespace {

template <typename T>
std::string streamed(const T& value) {
    std::ostringstream out;
    out << value;
    return out.str();
}

}  // namespace

TEST_CASE("stream state, data state and status code have names", "[types]") {
    using mdcast::to_string;
    CHECK(to_string(mdcast::StreamState::kOpen) == "open");
    CHECK(to_string(mdcast::StreamState::kClosed) == "closed");
    CHECK(to_string(mdcast::DataState::kOk) == "ok");
    CHECK(to_string(mdcast::DataState::kSuspect) == "suspect");
    CHECK(to_string(mdcast::StatusCode::kNotEntitled) == "NOT_ENTITLED");
    CHECK(to_string(mdcast::StatusCode::kConnectionLost) == "CONNECTION_LOST");
    CHECK(to_string(static_cast<mdcast::StatusCode>(77)) == "UNKNOWN");
    CHECK(streamed(mdcast::StreamState::kClosed) == "closed");
    CHECK(streamed(mdcast::DataState::kSuspect) == "suspect");
    CHECK(streamed(mdcast::StatusCode::kSourceDown) == "SOURCE_DOWN");
    CHECK(streamed(mdcast::ConnectionState::kUp) == "up");
    CHECK(streamed(mdcast::EventType::kRefresh) == "refresh");
    CHECK(streamed(mdcast::ServerAddress{"10.0.0.1", 14002}) == "10.0.0.1:14002");
}

TEST_CASE("an item state reads as one phrase", "[types]") {
    CHECK(mdcast::to_string(mdcast::ItemState{}) == "open/ok");
    const mdcast::ItemState lost{mdcast::StreamState::kOpen, mdcast::DataState::kSuspect,
                                 mdcast::StatusCode::kConnectionLost, "127.0.0.1:14002 lost"};
    CHECK(mdcast::to_string(lost) == "open/suspect CONNECTION_LOST: 127.0.0.1:14002 lost");
    const mdcast::ItemState closed{mdcast::StreamState::kClosed, mdcast::DataState::kSuspect,
                                   mdcast::StatusCode::kNotFound, ""};
    CHECK(streamed(closed) == "closed/suspect NOT_FOUND");
}
