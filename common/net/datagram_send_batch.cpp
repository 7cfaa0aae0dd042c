#include "common/net/datagram_send_batch.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

namespace mdcast {

void send_datagrams(int fd, std::span<const std::span<const uint8_t>> datagrams,
                    std::span<uint8_t> sent) {
    constexpr size_t kMaxPerCall = 64;
    mmsghdr headers[kMaxPerCall];
    iovec vectors[kMaxPerCall];
    size_t next = 0;
    while (next < datagrams.size()) {
        const size_t count = std::min(kMaxPerCall, datagrams.size() - next);
        for (size_t i = 0; i < count; ++i) {
            const auto& d = datagrams[next + i];
            vectors[i] = {const_cast<uint8_t*>(d.data()), d.size()};
            headers[i] = {};
            headers[i].msg_hdr.msg_iov = &vectors[i];
            headers[i].msg_hdr.msg_iovlen = 1;
        }
        const int n = sendmmsg(fd, headers, static_cast<unsigned>(count), MSG_DONTWAIT);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            ++next;  // the kernel refused this one (errno set): the receivers repair it
            continue;
        }
        for (int i = 0; i < n; ++i) sent[next + static_cast<size_t>(i)] = 1;
        next += static_cast<size_t>(n);
    }
}

}  // namespace mdcast
