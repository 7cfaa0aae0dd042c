// <linux/tcp.h>, not glibc's <netinet/tcp.h>: only the kernel's header has the
// newer tcp_info members (the two cannot be included together).
#include "common/net/tcp_progress.h"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>

namespace mdcast {

std::optional<TcpProgress> tcp_progress(int fd) {
    tcp_info info{};
    socklen_t length = sizeof info;
    if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) != 0) return std::nullopt;
    // A kernel whose tcp_info ends before these members says so by the length.
    const auto end = offsetof(tcp_info, tcpi_notsent_bytes) + sizeof info.tcpi_notsent_bytes;
    if (length < end) return std::nullopt;
    return TcpProgress{info.tcpi_bytes_acked, info.tcpi_notsent_bytes};
}

}  // namespace mdcast
