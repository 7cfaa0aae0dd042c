// How a distributor's identity is carried in the ids it assigns, so that ids
// stay unique across every distributor a server joins without re-encoding a
// single update:
//   epoch      = distributor id << 48 | start time in ms (48 bits; ordered:
//                a later start of the same distributor has a larger epoch)
//   service id = distributor id << 16 | service number (1..65535)
//   item id    = distributor id << 40 | item number    (1..2^40-1)
// A server tells sources apart by the epoch's top 16 bits: the same id with a
// new epoch is a restart; a different id is a different distributor.
#pragma once

#include <cstdint>

namespace mdcast::proto {

constexpr uint64_t kMaxItemNumber = (uint64_t{1} << 40) - 1;

constexpr uint16_t epoch_source(uint64_t epoch) {
    return static_cast<uint16_t>(epoch >> 48);
}
constexpr uint16_t item_source(uint64_t item_id) {
    return static_cast<uint16_t>(item_id >> 40);
}
constexpr uint16_t service_source(uint32_t service_id) {
    return static_cast<uint16_t>(service_id >> 16);
}

constexpr uint64_t make_epoch(uint16_t source, uint64_t start_ms) {
    return uint64_t{source} << 48 | (start_ms & 0xFFFF'FFFF'FFFFull);
}
constexpr uint64_t make_item_id(uint16_t source, uint64_t number) {
    return uint64_t{source} << 40 | number;
}
constexpr uint32_t make_service_id(uint16_t source, uint32_t number) {
    return uint32_t{source} << 16 | number;
}

}  // namespace mdcast::proto
