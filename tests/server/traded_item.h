// A test item for the fan-out's conflation tests (fanout_trades_test,
// fanout_paced_test): item 1 with an image, and quotes or trades fanned out as
// they came from the backbone.
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "client_fixture.h"
#include "server/fanout.h"

namespace mdcast::server::testing {

struct TradedItem {
    ItemCache cache{16, 100};
    CachedItem* item = nullptr;
    TradedItem() {
        ::mdcast::wire::v1::Refresh r;
        r.set_item_id(1);
        r.set_item_seq(1);
        r.set_service_id(1);
        r.set_service_name("SVC");
        r.set_item_name("A");
        r.mutable_status()->set_stream_state(::mdcast::wire::v1::STREAM_OPEN);
        r.mutable_status()->set_data_state(::mdcast::wire::v1::DATA_OK);
        REQUIRE(cache.apply_refresh(r, item) == ItemCache::Outcome::kApplied);
    }
    // Quotes change field 22, trades field 6; the value is the sequence.
    void publish(Fanout& fanout, uint64_t seq, bool trade) {
        proto::UpdateView u;
        u.item_id = 1;
        u.item_seq = seq;
        u.publish_time_ns = seq * 1000;
        u.trade = trade;
        u.fields.push_back(proto::FieldEntry{
            trade ? 6u : 22u, proto::FieldKind::kInt, 0, static_cast<int64_t>(seq), 0, {}});
        CachedItem* applied = nullptr;
        REQUIRE(cache.apply_update(u, applied) == ItemCache::Outcome::kApplied);
        std::string whole;
        proto::append_update_frame(whole, u);
        fanout.fan_out_update(*applied, u,
                              {reinterpret_cast<const uint8_t*>(whole.data()), whole.size()});
    }
};

inline proto::UpdateView decoded(const ReceivedFrame& frame) {
    proto::UpdateView view;
    REQUIRE(frame.type == proto::FrameType::kUpdate);
    REQUIRE(proto::decode_update(
        {reinterpret_cast<const uint8_t*>(frame.body.data()), frame.body.size()}, view));
    return view;
}

}  // namespace mdcast::server::testing
