// A server's identity on the backbone: the wire field server_id of Nak,
// ImageRequest and Interest (proto/wire/backbone.proto).
//
// Drawn at random at each server start, never 0 (0 on the wire means "an older
// server that sends none"). A restarted server is a new server to the
// distributor, as it was when servers were known by their control socket's
// ephemeral port: its leases from before the restart simply expire. 64 random
// bits are not guessable by another host, and they travel only by unicast to
// the distributor's control port (signed when backbone keys are set), so one
// server cannot end another's interest.
#pragma once

#include <cstdint>
#include <random>

namespace mdcast::proto {

inline uint64_t new_server_id() {
    std::random_device random;  // the kernel's getrandom(): unpredictable, not seeded by time
    uint64_t id = 0;
    while (id == 0) id = uint64_t{random()} << 32 | random();
    return id;
}

}  // namespace mdcast::proto
