#include "packet_port.h"

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace mdcast::linkshim {

namespace {

constexpr int kSocketBufferBytes = 8 << 20;

[[noreturn]] void fail(const std::string& interface, const char* call) {
    const std::string why = std::strerror(errno);
    throw std::runtime_error("interface " + interface + ": " + call + ": " + why);
}

}  // namespace

PacketPort::PacketPort(const std::string& interface) : name_(interface), buffer_(kReadCapacity) {
    const unsigned index = if_nametoindex(interface.c_str());
    if (index == 0) fail(interface, "if_nametoindex");
    fd_ = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_ALL));
    if (fd_ < 0) fail(interface, "socket(AF_PACKET)");
    sockaddr_ll address{};
    address.sll_family = AF_PACKET;
    address.sll_protocol = htons(ETH_P_ALL);
    address.sll_ifindex = static_cast<int>(index);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        close(fd_);
        fail(interface, "bind");
    }
    // Room for a burst while the shim is busy (FORCE: above rmem_max, which root may).
    const int buffer_bytes = kSocketBufferBytes;
    if (setsockopt(fd_, SOL_SOCKET, SO_RCVBUFFORCE, &buffer_bytes, sizeof buffer_bytes) != 0)
        setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &buffer_bytes, sizeof buffer_bytes);
    // A bridge forwards frames addressed to others: without promiscuous mode the
    // interface would filter them out before the socket sees them.
    packet_mreq membership{};
    membership.mr_ifindex = static_cast<int>(index);
    membership.mr_type = PACKET_MR_PROMISC;
    if (setsockopt(fd_, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &membership, sizeof membership) != 0) {
        close(fd_);
        fail(interface, "PACKET_ADD_MEMBERSHIP");
    }
}

PacketPort::~PacketPort() {
    if (fd_ >= 0) close(fd_);
}

PacketPort::Read PacketPort::read(std::vector<uint8_t>& frame) {
    for (;;) {
        sockaddr_ll from{};
        socklen_t from_size = sizeof from;
        // MSG_TRUNC: the frame's real length, even when it did not fit.
        const ssize_t n = recvfrom(fd_, buffer_.data(), buffer_.size(), MSG_TRUNC,
                                   reinterpret_cast<sockaddr*>(&from), &from_size);
        if (n < 0) return Read::kNone;  // EAGAIN, or an error the next poll reports again
        // A packet socket also sees what is sent out of its interface, ours included.
        if (from.sll_pkttype == PACKET_OUTGOING) continue;
        const size_t length = std::min(static_cast<size_t>(n), buffer_.size());
        // Copied to a vector of its own size: held frames must not keep the read buffer's.
        frame.assign(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(length));
        return static_cast<size_t>(n) > buffer_.size() ? Read::kTooLarge : Read::kFrame;
    }
}

uint64_t PacketPort::take_kernel_drops() {
    tpacket_stats stats{};
    socklen_t size = sizeof stats;
    if (getsockopt(fd_, SOL_PACKET, PACKET_STATISTICS, &stats, &size) != 0) return 0;
    return stats.tp_drops;  // reading the statistics resets them
}

bool PacketPort::send(const std::vector<uint8_t>& frame) {
    return ::send(fd_, frame.data(), frame.size(), 0) == static_cast<ssize_t>(frame.size());
}

}  // namespace mdcast::linkshim
