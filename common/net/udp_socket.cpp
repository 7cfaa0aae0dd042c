#include "common/net/udp_socket.h"

#include <arpa/inet.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "common/net/host_port.h"

namespace mdcast {

namespace {

// Room for the drop count (SO_RXQ_OVFL), a receive timestamp (SO_TIMESTAMPNS)
// and a coalesced message's segment size (UDP_GRO).
constexpr size_t kControlBytes =
    CMSG_SPACE(sizeof(uint32_t)) + CMSG_SPACE(sizeof(timespec)) + CMSG_SPACE(sizeof(int));
// The most one message can hold: a whole IPv4 UDP payload.
constexpr size_t kMaxMessageBytes = 65535;

[[noreturn]] void fail(const std::string& what, const std::string& where) {
    throw std::runtime_error(what + " for " + where + ": " + std::strerror(errno));
}

int new_udp_socket(const std::string& where) {
    const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) fail("socket", where);
    return fd;
}

void set_option(int fd, int level, int name, int value, const char* what,
                const std::string& where) {
    if (setsockopt(fd, level, name, &value, sizeof value) != 0) fail(what, where);
}

std::string describe(const MulticastEndpoint& e) {
    return e.group + ":" + std::to_string(e.port) + " on " + e.interface_address;
}

in_addr parse_ipv4(const std::string& text, const std::string& where) {
    in_addr address{};
    if (inet_pton(AF_INET, text.c_str(), &address) != 1) {
        throw std::runtime_error("'" + text + "' is not an IPv4 address (" + where + ")");
    }
    return address;
}

}  // namespace

sockaddr_in make_ipv4_address(const std::string& address, uint16_t port) {
    sockaddr_in out{};
    out.sin_family = AF_INET;
    out.sin_port = htons(port);
    out.sin_addr = parse_ipv4(address, address);
    return out;
}

std::vector<MulticastEndpoint> multicast_endpoints(const MulticastEndpoint& primary,
                                                   const std::vector<std::string>& extra_groups,
                                                   const std::string& key) {
    std::vector<MulticastEndpoint> all{primary};
    for (const auto& text : extra_groups) {
        HostPort group;
        if (!parse_host_port(text, group)) {
            throw std::runtime_error(key + ": '" + text + "' is not GROUP:PORT");
        }
        MulticastEndpoint endpoint = primary;
        endpoint.group = group.host;
        endpoint.port = group.port;
        all.push_back(endpoint);
    }
    return all;
}

std::string format_ipv4(const sockaddr_in& address) {
    char text[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &address.sin_addr, text, sizeof text);
    return std::string(text) + ":" + std::to_string(ntohs(address.sin_port));
}

UdpSocket::~UdpSocket() {
    if (fd_ >= 0) ::close(fd_);
}

UdpSocket& UdpSocket::operator=(UdpSocket&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = other.fd_;
        other.fd_ = -1;
    }
    return *this;
}

UdpSocket UdpSocket::multicast_sender(const MulticastEndpoint& endpoint, int send_buffer_bytes) {
    const std::string where = describe(endpoint);
    UdpSocket sock(new_udp_socket(where));
    const in_addr interface = parse_ipv4(endpoint.interface_address, where);
    if (setsockopt(sock.fd_, IPPROTO_IP, IP_MULTICAST_IF, &interface, sizeof interface) != 0) {
        fail("IP_MULTICAST_IF", where);
    }
    set_option(sock.fd_, IPPROTO_IP, IP_MULTICAST_TTL, endpoint.ttl, "IP_MULTICAST_TTL", where);
    set_option(sock.fd_, IPPROTO_IP, IP_MULTICAST_LOOP, endpoint.loopback ? 1 : 0,
               "IP_MULTICAST_LOOP", where);
    if (send_buffer_bytes > 0) {
        set_option(sock.fd_, SOL_SOCKET, SO_SNDBUF, send_buffer_bytes, "SO_SNDBUF", where);
    }
    sockaddr_in local{};
    local.sin_family = AF_INET;
    local.sin_addr = interface;
    if (bind(sock.fd_, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) fail("bind", where);
    const sockaddr_in group = make_ipv4_address(endpoint.group, endpoint.port);
    if (!IN_MULTICAST(ntohl(group.sin_addr.s_addr))) {
        throw std::runtime_error("'" + endpoint.group + "' is not a multicast group");
    }
    if (connect(sock.fd_, reinterpret_cast<const sockaddr*>(&group), sizeof group) != 0) {
        fail("connect", where);
    }
    return sock;
}

UdpSocket UdpSocket::multicast_receiver(const MulticastEndpoint& endpoint,
                                        int receive_buffer_bytes) {
    const std::string where = describe(endpoint);
    UdpSocket sock(new_udp_socket(where));
    // Several server instances on one host join the same group and port.
    set_option(sock.fd_, SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR", where);
    if (receive_buffer_bytes > 0) {
        set_option(sock.fd_, SOL_SOCKET, SO_RCVBUF, receive_buffer_bytes, "SO_RCVBUF", where);
    }
    // Bind to the group, not INADDR_ANY, so other groups on the same port stay out.
    const sockaddr_in group = make_ipv4_address(endpoint.group, endpoint.port);
    if (!IN_MULTICAST(ntohl(group.sin_addr.s_addr))) {
        throw std::runtime_error("'" + endpoint.group + "' is not a multicast group");
    }
    if (bind(sock.fd_, reinterpret_cast<const sockaddr*>(&group), sizeof group) != 0) {
        fail("bind", where);
    }
    ip_mreq membership{};
    membership.imr_multiaddr = group.sin_addr;
    membership.imr_interface = parse_ipv4(endpoint.interface_address, where);
    if (setsockopt(sock.fd_, IPPROTO_IP, IP_ADD_MEMBERSHIP, &membership, sizeof membership) != 0) {
        fail("IP_ADD_MEMBERSHIP", where);
    }
    set_option(sock.fd_, SOL_SOCKET, SO_RXQ_OVFL, 1, "SO_RXQ_OVFL", where);
    return sock;
}

UdpSocket UdpSocket::unicast(const std::string& address, uint16_t port, int buffer_bytes) {
    const std::string where = address + ":" + std::to_string(port);
    UdpSocket sock(new_udp_socket(where));
    if (buffer_bytes > 0) {
        set_option(sock.fd_, SOL_SOCKET, SO_RCVBUF, buffer_bytes, "SO_RCVBUF", where);
        set_option(sock.fd_, SOL_SOCKET, SO_SNDBUF, buffer_bytes, "SO_SNDBUF", where);
    }
    const sockaddr_in local = make_ipv4_address(address, port);
    if (bind(sock.fd_, reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0) {
        fail("bind", where);
    }
    return sock;
}

sockaddr_in UdpSocket::local_address() const {
    sockaddr_in address{};
    socklen_t length = sizeof address;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    return address;
}

void UdpSocket::enable_receive_timestamps() {
    set_option(fd_, SOL_SOCKET, SO_TIMESTAMPNS, 1, "SO_TIMESTAMPNS", format_ipv4(local_address()));
}

bool UdpSocket::enable_receive_coalescing() {
    const int on = 1;
    return setsockopt(fd_, SOL_UDP, UDP_GRO, &on, sizeof on) == 0;
}

bool UdpSocket::send(std::span<const uint8_t> datagram) {
    return ::send(fd_, datagram.data(), datagram.size(), MSG_DONTWAIT) ==
           static_cast<ssize_t>(datagram.size());
}

bool UdpSocket::send_to(std::span<const uint8_t> datagram, const sockaddr_in& to) {
    return ::sendto(fd_, datagram.data(), datagram.size(), MSG_DONTWAIT,
                    reinterpret_cast<const sockaddr*>(&to),
                    sizeof to) == static_cast<ssize_t>(datagram.size());
}

DatagramBatch::DatagramBatch(size_t capacity, size_t max_datagram_bytes, bool coalesced)
    : max_bytes_(max_datagram_bytes),
      message_bytes_(coalesced ? kMaxMessageBytes : max_datagram_bytes),
      storage_(capacity * message_bytes_),
      headers_(capacity),
      vectors_(capacity),
      sources_(capacity),
      control_(capacity * kControlBytes),
      receive_times_(capacity) {}

size_t DatagramBatch::receive(int fd) {
    for (size_t i = 0; i < headers_.size(); ++i) {
        vectors_[i] = iovec{storage_.data() + i * message_bytes_, message_bytes_};
        headers_[i] = mmsghdr{};
        headers_[i].msg_hdr.msg_iov = &vectors_[i];
        headers_[i].msg_hdr.msg_iovlen = 1;
        headers_[i].msg_hdr.msg_name = &sources_[i];
        headers_[i].msg_hdr.msg_namelen = sizeof(sockaddr_in);
        headers_[i].msg_hdr.msg_control = control_.data() + i * kControlBytes;
        headers_[i].msg_hdr.msg_controllen = kControlBytes;
    }
    kernel_drops_ = 0;
    coalesced_ = 0;
    pieces_.clear();
    const int n = recvmmsg(fd, headers_.data(), static_cast<unsigned>(headers_.size()),
                           MSG_DONTWAIT, nullptr);
    if (n <= 0) return 0;
    for (size_t i = 0; i < static_cast<size_t>(n); ++i) cut(i, read_control(i));
    return pieces_.size();
}

// Message i as the datagrams it holds: `segment` bytes each, the last one
// shorter (one datagram when the kernel reported no segment size).
void DatagramBatch::cut(size_t message, size_t segment) {
    const size_t length = headers_[message].msg_len;
    const bool cut_short = (headers_[message].msg_hdr.msg_flags & MSG_TRUNC) != 0;
    if (segment == 0 || segment >= length) segment = std::max<size_t>(length, 1);
    const size_t first = pieces_.size();
    size_t offset = 0;
    do {
        const size_t size = std::min(segment, length - offset);
        const bool last = offset + size >= length;
        pieces_.push_back(Piece{message * message_bytes_ + offset, static_cast<uint32_t>(size),
                                static_cast<uint32_t>(message),
                                size > max_bytes_ || (last && cut_short)});
        offset += size;
    } while (offset < length);
    if (pieces_.size() - first > 1) coalesced_ += pieces_.size() - first;
}

size_t DatagramBatch::read_control(size_t i) {
    receive_times_[i] = 0;
    size_t segment = 0;
    for (cmsghdr* c = CMSG_FIRSTHDR(&headers_[i].msg_hdr); c != nullptr;
         c = CMSG_NXTHDR(&headers_[i].msg_hdr, c)) {
        if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
            int size = 0;
            std::memcpy(&size, CMSG_DATA(c), sizeof size);
            segment = size > 0 ? static_cast<size_t>(size) : 0;
        } else if (c->cmsg_level != SOL_SOCKET) {
            continue;
        } else if (c->cmsg_type == SO_RXQ_OVFL) {
            uint32_t drops = 0;
            std::memcpy(&drops, CMSG_DATA(c), sizeof drops);
            kernel_drops_ = drops;  // the last datagram's report is the newest
        } else if (c->cmsg_type == SO_TIMESTAMPNS) {
            timespec at{};
            std::memcpy(&at, CMSG_DATA(c), sizeof at);
            receive_times_[i] = at.tv_sec * 1'000'000'000LL + at.tv_nsec;
        }
    }
    return segment;
}

}  // namespace mdcast
