// Every size limit of the wire protocol, named once. Both daemons and the SDK
// check against these, so a name one side accepts is never refused by the
// other (the distributor registers services and items; servers and SDK peers
// ask for them by name).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace mdcast::proto {

// Names (bytes of UTF-8, never empty).
inline constexpr size_t kMaxServiceNameBytes = 256;
inline constexpr size_t kMaxItemNameBytes = 1024;
// Login fields: user, application id and position; the password may be longer.
inline constexpr size_t kMaxUserNameBytes = 256;
inline constexpr size_t kMaxLoginFieldBytes = 256;
inline constexpr size_t kMaxPasswordBytes = 1024;
// Field ids in one view (a subscription's field subset).
inline constexpr size_t kMaxViewFields = 1024;
// Subscribe.conflate_ms: the longest conflation interval a subscriber may ask for.
inline constexpr uint32_t kMaxConflateMs = 60'000;

// Posts (wire Post / PostAck): fields in one contribution, and the text a
// PostAck carries back (the publisher's reason is cut to it).
inline constexpr size_t kMaxPostFields = 1024;
inline constexpr size_t kMaxPostAckTextBytes = 512;

// Books (docs/books.md): a name key's bytes, the fields of one entry, the
// decimal exponent of a price key (|exponent|), and the entries one Map may
// carry (a refresh carries every entry of the book, so a book's configured
// max_book_entries is at most this).
inline constexpr size_t kMaxBookKeyBytes = 256;
inline constexpr size_t kMaxBookEntryFields = 256;
inline constexpr int32_t kMaxPriceExponent = 18;
inline constexpr size_t kMaxMapEntries = 100'000;

// Frame bodies: the range the daemons' *.max_frame_bytes keys accept, and what
// a peer accepts when nothing is configured (the SDK, TcpConnection's default).
inline constexpr size_t kMinFrameBodyBytes = 256;
inline constexpr size_t kMaxFrameBodyBytes = 16 << 20;
inline constexpr size_t kDefaultFrameBodyBytes = 1 << 20;
// What a client assumes a server accepts when its LoginResponse announces no
// max_frame_bytes: clients.max_frame_bytes' default.
inline constexpr size_t kDefaultServerFrameBodyBytes = 64 << 10;

// Interest in interactive items (wire Interest): a server renews every item it
// holds this often; the distributor's interactive.interest_lease_ms is at least
// kMinInterestLeaseMs, so two renewals in a row may be lost before a lease ends.
// Ids in one Interest message, so it fits a kDefaultDatagramBytes datagram.
inline constexpr uint32_t kInterestRenewMs = 1000;
inline constexpr uint32_t kMinInterestLeaseMs = 3 * kInterestRenewMs;
inline constexpr size_t kMaxInterestIdsPerMessage = 128;

// Backbone datagrams; backbone.max_datagram_bytes (each daemon's schema) sets the size
// within [kMinDatagramBytes, kMaxDatagramBytes]. The largest is the largest UDP payload
// over IPv4: no datagram ever exceeds it, and a server accepts up to it by default. The
// default a distributor sends, and the size of a server's control datagrams, fits a
// 1500-byte Ethernet MTU with its IP and UDP headers.
inline constexpr size_t kMaxDatagramBytes = 65507;
inline constexpr size_t kDefaultDatagramBytes = 1400;
inline constexpr size_t kMinDatagramBytes = 256;

constexpr bool valid_service_name(std::string_view name) {
    return !name.empty() && name.size() <= kMaxServiceNameBytes;
}
constexpr bool valid_item_name(std::string_view name) {
    return !name.empty() && name.size() <= kMaxItemNameBytes;
}
constexpr bool valid_login(std::string_view user, std::string_view password) {
    return !user.empty() && user.size() <= kMaxUserNameBytes &&
           password.size() <= kMaxPasswordBytes;
}

}  // namespace mdcast::proto
