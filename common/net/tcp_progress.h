// What the kernel says of a TCP connection's progress (TCP_INFO): bytes the
// peer has acknowledged so far, and bytes written but not yet sent. A cascade
// parent measures a slow link's rate by them (server/cascade/link_drain_meter.h):
// unlike the bytes the socket took, acknowledgements come a segment at a time,
// not in the bursts a socket held to a few KB unsent takes its writes in.
#pragma once

#include <cstdint>
#include <optional>

namespace mdcast {

struct TcpProgress {
    uint64_t bytes_acked = 0;   // tcpi_bytes_acked (Linux 4.1+)
    uint32_t unsent_bytes = 0;  // tcpi_notsent_bytes (Linux 4.6+)
};

// Nothing when the socket cannot tell (not TCP, an older kernel).
std::optional<TcpProgress> tcp_progress(int fd);

}  // namespace mdcast
