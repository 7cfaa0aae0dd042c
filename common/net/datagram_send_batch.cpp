#include "common/net/datagram_send_batch.h"

#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "proto/limits.h"

namespace mdcast {

namespace {
constexpr size_t kMaxPerCall = 64;   // sendmmsg: datagrams a call
constexpr size_t kMaxSegments = 64;  // UDP_MAX_SEGMENTS of every kernel with the offload
// One IPv4 UDP send, all segments together, is at most proto::kMaxDatagramBytes; so are
// the paddings, which point at these zeros.
const uint8_t kZeros[proto::kMaxDatagramBytes] = {};

// The kernel cannot segment (no checksum offload or an IPsec route: EIO; a
// segment above the path MTU, a socket without checksums: EINVAL; a kernel
// without UDP_SEGMENT: ENOPROTOOPT...), as opposed to this one send failing
// (buffer full, network down), which the datagrams' own sends would meet too.
bool offload_refused(int error) {
    return error == EINVAL || error == EIO || error == EOPNOTSUPP || error == ENOPROTOOPT ||
           error == EMSGSIZE;
}
}  // namespace

void DatagramBatchSender::send(std::span<const std::span<const uint8_t>> datagrams,
                               std::span<uint8_t> sent) {
    size_t next = 0;
    while (segmenting_ && next < datagrams.size()) {
        size_t segment = 0;
        const size_t count = run_length(datagrams.subspan(next), segment);
        if (count < 2) {  // nothing to gain: this one alone
            send_each(datagrams.subspan(next, 1), sent.subspan(next, 1));
            ++next;
            continue;
        }
        if (send_segmented(datagrams.subspan(next, count), segment)) {
            std::fill_n(sent.begin() + static_cast<std::ptrdiff_t>(next), count, uint8_t{1});
        } else if (!segmenting_) {
            break;  // refused for good: this run and the rest one by one
        }
        next += count;  // otherwise this run is lost (buffer full): the receivers repair it
    }
    send_each(datagrams.subspan(next), sent.subspan(next));
}

// How many datagrams from the front go in one segmented send, and their
// segment size (the largest of them): the run ends where one more would pass
// the kernel's segment count or one UDP send's size.
size_t DatagramBatchSender::run_length(std::span<const std::span<const uint8_t>> datagrams,
                                       size_t& segment) const {
    size_t count = 0;
    for (const auto& datagram : datagrams) {
        const size_t widest = std::max(segment, datagram.size());
        if (count == kMaxSegments || widest * (count + 1) > proto::kMaxDatagramBytes) break;
        segment = widest;
        ++count;
    }
    return count;
}

bool DatagramBatchSender::send_segmented(std::span<const std::span<const uint8_t>> run,
                                         size_t segment) {
    vectors_.clear();
    size_t padding = 0;
    for (size_t i = 0; i < run.size(); ++i) {
        vectors_.push_back({const_cast<uint8_t*>(run[i].data()), run[i].size()});
        if (i + 1 < run.size() && run[i].size() < segment) {
            vectors_.push_back({const_cast<uint8_t*>(kZeros), segment - run[i].size()});
            padding += segment - run[i].size();
        }
    }
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(uint16_t))] = {};
    msghdr message{};
    message.msg_iov = vectors_.data();
    message.msg_iovlen = vectors_.size();
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_UDP;
    header->cmsg_type = UDP_SEGMENT;
    header->cmsg_len = CMSG_LEN(sizeof(uint16_t));
    const auto size = static_cast<uint16_t>(segment);
    std::memcpy(CMSG_DATA(header), &size, sizeof size);
    for (;;) {
        if (sendmsg(fd_, &message, MSG_DONTWAIT) >= 0) {
            segmented_datagrams_ += run.size();
            padding_bytes_ += padding;
            return true;
        }
        if (errno == EINTR) continue;
        if (offload_refused(errno)) {
            offload_refusal_ = errno;
            segmenting_ = false;
        }
        return false;
    }
}

void DatagramBatchSender::send_each(std::span<const std::span<const uint8_t>> datagrams,
                                    std::span<uint8_t> sent) {
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
        const int n = sendmmsg(fd_, headers, static_cast<unsigned>(count), MSG_DONTWAIT);
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
