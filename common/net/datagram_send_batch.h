// Sending many datagrams in one system call (sendmmsg), for a sender whose
// datagrams pile up during one loop iteration (the distributor's backbone).
#pragma once

#include <cstdint>
#include <span>

namespace mdcast {

// Sends `datagrams` in order on the connected datagram socket `fd` with as few
// sendmmsg calls as the kernel allows (up to 64 datagrams a call), without
// blocking. Sets sent[i] to 1 for each datagram the kernel took; one it
// refuses (buffer full, too large: errno kept) is skipped and the rest still
// go. `sent` has one entry per datagram.
void send_datagrams(int fd, std::span<const std::span<const uint8_t>> datagrams,
                    std::span<uint8_t> sent);

}  // namespace mdcast
