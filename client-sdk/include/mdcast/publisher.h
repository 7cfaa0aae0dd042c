// mdcast::Publisher — publish items to an mdcast distributor: announce
// services, register items, send refreshes, updates and statuses, and (for
// interactive services) answer item requests.
//
// THREADING
//   The Publisher runs its network I/O on its own thread (the "I/O thread"),
//   started by start() and joined by stop(). Given an IoContext in
//   PublisherOptions::io_context, it runs instead on that context's one
//   thread, shared with the Consumers and Publishers given the same context
//   (mdcast/io_context.h): start() joins the running loop, stop() drains and
//   leaves it, the others undisturbed. PublisherHandler callbacks run on the
//   I/O thread, one at a time; keep them short (on a shared IoContext a slow
//   callback delays every Consumer and Publisher on it).
//   Safe from any thread, also from inside a callback: add_service(),
//   add_item(), refresh(), update(), status(), stats(). They copy what they are
//   given into the publisher's bounded outbox and return at once; the I/O
//   thread sends it, or the calling thread itself (see WRITES AND BATCHES).
//   Calls from one thread are sent in the order made.
//   start() and stop() belong to the thread that owns the Publisher, never a
//   callback (stop() throws std::logic_error there; on a shared IoContext,
//   inside a callback or handler of anything on that context).
//
// ITEMS, SEQUENCES AND RECONNECTS
//   The Publisher keeps each item's image (the last refresh merged with every
//   update since) and its per-item sequence number. Updates get sequence
//   numbers refresh + 1, + 2, ... When the connection to the distributor is
//   lost it connects to the next one in `distributors` (at once, then with
//   back-off and jitter), announces the services again, registers the items
//   again and sends every item's current image as a refresh, continuing its
//   sequence; updates published while disconnected are merged into that image
//   (nothing is lost, nothing is sent twice). An update before an item's first
//   refresh is dropped and counted (the distributor would refuse it).
//
// ORDERING RULE
//   Updates published after a broadcast item's refresh but before the
//   distributor has registered the item (add_item() is answered
//   asynchronously) are not merged into the image: they are kept in order and
//   sent after the refresh, each with its own sequence number, so subscribers
//   see every one. (Kept within max_queued_bytes; beyond that they are merged
//   into the image and counted in updates_held.) Once an item has been
//   registered, updates published while disconnected are merged into its image
//   as above.
//
// WRITES AND BATCHES
//   A lone refresh(), update() or status() is written to the distributor at
//   once, without waiting for more (no timer, no Nagle). While the I/O thread
//   is busy, whatever is published meanwhile goes out together in its next
//   write, and wakes nobody (it is still awake). To publish a burst as one
//   write — say every update decoded from one feed packet, or one pacing tick's worth — hold a
//   Publisher::Batch while publishing it: calls on that thread then leave the
//   I/O thread asleep, and the batch's end writes the burst (corking). This costs
//   the burst's first update the time spent publishing the rest, and saves a
//   wake-up and a socket write per update the I/O thread would otherwise
//   have taken alone. Other threads are never held back by a batch: their
//   calls are written as usual, the batch's updates too.
//   Who writes (write_from_caller, on by default): where a call or a batch's
//   end would wake the I/O thread, the publishing thread first tries to do
//   its work itself: when the I/O thread is not busy with the publisher
//   (a lock taken without waiting), the session is up and nothing waits for
//   the socket, it frames the updates and writes them with one non-blocking
//   send, and the I/O thread stays asleep; plain updates coming faster than
//   one write each are left to the I/O thread, which writes them together
//   (natural batching; a batch's end always writes at once). Anything else — what the kernel
//   did not take, a refresh, status, flush or new item, a reconnect, TLS, a
//   shared IoContext — wakes the I/O thread, which finishes in order. Either
//   way the bytes reach the socket in the order published. docs/sdk.md.
//
// FLUSH
//   flush(timeout) returns true once the distributor has acknowledged taking
//   everything published before the call (from any thread): refreshes,
//   updates and statuses applied to its cache and queued for the backbone.
//   Disconnected, the acknowledgement waits for the next distributor, after
//   the images are sent again. false: not acknowledged within the timeout.
//
// INTERACTIVE (sink-driven) SERVICES
//   Items of an interactive service are published only while someone wants
//   them. on_item_request() says a subscriber somewhere asked for an item
//   (the handle is created for it if add_item() did not already): answer with
//   refresh(), or status() with StreamState::kClosed and StatusCode::kNotFound.
//   on_item_closed() says nobody wants it any more: updates for it are then
//   only merged into its image, not sent, until it is requested again.
//
// DUAL-HOMED (publish_to_all)
//   Every distributor in `distributors` gets every refresh, update and
//   status, each over a link of its own with its own connection state and
//   reconnect schedule; all links carry the same images and the same per-item
//   sequence numbers, so servers that see the service from several
//   distributors (a redundancy group, docs/operations.md) may switch between
//   them without a gap. on_connection reports each link's events (the event
//   names the distributor); a lost link is re-announced, re-registered and
//   re-imaged on its own while the others go on. on_service, item requests,
//   rejections and posts arrive per link and are answered on the link they
//   came from; an interactive item is closed (on_item_closed) only when no
//   distributor wants it any more, and a request from one distributor is
//   answered by the application's refresh(), which the others that publish
//   the item also send. The publisher goes at the pace of its fastest
//   distributor: a slow or dead link never holds back the others or the
//   caller (back-pressure, as BOUNDS says, only while every link that is up
//   is over half of max_output_bytes). Each link keeps its own images
//   (memory: the images once per distributor) and at most max_output_bytes
//   not yet taken by its distributor; past that the link is dropped, logged
//   as an error and counted (links_dropped), and it is re-imaged when it
//   connects again.
//   flush() is true once every link that is up has acknowledged (none up:
//   it waits for one). Stats count over all links (updates_sent counts an
//   update once per distributor). The I/O thread does every write
//   (write_from_caller has no effect).
//
// BOUNDS
//   The outbox holds at most max_queued_bytes of requests not yet sent;
//   refresh(), update() and status() return false (taking nothing) when it is
//   full, so a publisher faster than its distributor sees it at once.
//   Frame limit: a distributor closes a connection that sends it a frame over
//   its publishers.max_frame_bytes (frame_too_large), and announces that limit
//   at login. A refresh, update, book or status whose frame could pass it (1
//   MiB until a distributor announced one) is refused at the call:
//   std::invalid_argument naming the size and the limit, nothing taken, the
//   image unchanged, counted (frames_refused) and logged. Should what the
//   I/O thread sends for an item pass the limit all the same (its image grown
//   over it by updates, a distributor with a lower limit after a failover, or
//   one that closed the connection frame_too_large after all), only that item
//   is dropped: closed at the distributor where it can be told,
//   on_item_rejected with StreamState::kClosed and StatusCode::kLimitReached,
//   its image forgotten (it is not sent again after a reconnect; the next
//   refresh() within the limit brings it back), counted (images_dropped) and
//   logged. Every other item goes on. docs/sdk.md, "Frame limit".
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "mdcast/book.h"
#include "mdcast/dictionary.h"
#include "mdcast/export.h"
#include "mdcast/field_list.h"
#include "mdcast/io_context.h"
#include "mdcast/log.h"
#include "mdcast/types.h"

namespace mdcast {

struct PublisherOptions : ConnectionOptions {
    std::vector<ServerAddress> distributors;  // failover order; at least one

    // false (default): `distributors` is a failover list, one connected at a
    // time. true: dual-homed — every address in `distributors` is published
    // to at once, each over a link of its own (see DUAL-HOMED).
    bool publish_to_all = false;

    uint64_t max_queued_bytes = 64u << 20;  // outbox: published, not yet sent
    uint64_t max_output_bytes = 64u << 20;  // written to the socket, not yet taken (per link)

    // The operator's takeover secret (the first line of the distributor's
    // publishers.takeover_secret_file), or empty. A service owned at the
    // distributor by another connection of the same user (this process's
    // predecessor, not yet timed out; the primary, for a standby) is taken
    // over only with proof: after a reconnect the Publisher shows the token
    // the distributor gave it; before it has one, this secret.
    std::string takeover_secret;
    // Standby publishers (docs/operations.md, "Redundancy"): 1 or more, and a
    // broadcast service another connection publishes at the distributor is
    // not refused: this publisher joins as a standby (the takeover secret or
    // an authenticated login as the same user is the proof), its images kept
    // hot there; it becomes active, lowest rank first, when the active one
    // goes, or after the distributor's publishers.standby_hold_down_ms when
    // it ranks better. on_service says "standby (rank N)". 0: none (today's
    // single publisher, the most preferred).
    uint32_t standby_rank = 0;

    // true (default): where a publish would wake the I/O thread (a lone
    // call, a Batch's end), the publishing thread writes the updates to the
    // socket itself when it can do so at once (see WRITES AND BATCHES): no
    // wake-up, no thread switch. false: the I/O thread always writes. Without
    // effect over TLS and on a shared IoContext (the I/O thread writes).
    bool write_from_caller = true;

    // Null (default): the Publisher runs its own I/O thread. Set: it runs on
    // this context's thread, shared with the Consumers and Publishers given it;
    // the Publisher keeps the context alive (see THREADING and io_context.h).
    std::shared_ptr<IoContext> io_context;
};

// Names one item of one Publisher; never reused while the Publisher exists.
struct PublishedItem {
    uint64_t id = 0;
    explicit operator bool() const { return id != 0; }
    bool operator==(const PublishedItem&) const = default;
};

// A post (a consumer's contribution) for one of this publisher's services;
// see PublisherHandler::on_post. Valid only during the call.
struct PostRequest {
    PublishedItem item;  // the item's handle when this publisher has it; 0 otherwise
    const std::string& service;
    const std::string& item_name;
    const std::string& user;             // who posted (the consumer's login user)
    std::span<const FieldValue> fields;  // what they contribute
};

// on_post's verdict, sent back to the poster.
struct PostAnswer {
    bool accepted = false;
    std::string text;  // why it was rejected; cut to 512 bytes on the way
    static PostAnswer accept() { return {true, {}}; }
    static PostAnswer reject(std::string why) { return {false, std::move(why)}; }
};

// Callbacks run on the I/O thread.
class PublisherHandler {
  public:
    virtual ~PublisherHandler() = default;
    virtual void on_connection(const ConnectionEvent&) {}
    // The distributor's answer to a service announcement (after every login).
    virtual void on_service(const std::string& /*service*/, bool /*accepted*/,
                            const std::string& /*text*/) {}
    // Interactive: a subscriber wants this item. Answer with refresh() or status().
    virtual void on_item_request(PublishedItem, const std::string& /*service*/,
                                 const std::string& /*item*/) {}
    // Interactive: nobody wants this item any more.
    virtual void on_item_closed(PublishedItem, const std::string& /*service*/,
                                const std::string& /*item*/) {}
    // The distributor refused a message for the item (state says why).
    virtual void on_item_rejected(PublishedItem, const ItemState&) {}
    // POSTING: a consumer, allowed by the server's post rules, contributes
    // `request.fields` to an item of one of this publisher's services. Accept
    // or reject (the text goes back to the poster). Accepting publishes
    // nothing by itself: to show the change, publish it (update() or
    // refresh(), from here or later) like any other. Answer promptly: the
    // poster's server gives up after its posts.timeout_ms ("timeout"). The
    // default rejects every post.
    virtual PostAnswer on_post(const PostRequest&) {
        return PostAnswer::reject("this publisher takes no posts");
    }
};

// Counters since start(); safe to read from any thread.
struct PublisherStats {
    uint64_t refreshes_sent = 0;
    uint64_t updates_sent = 0;
    uint64_t statuses_sent = 0;
    uint64_t updates_held = 0;     // merged into the image while not sendable
    uint64_t updates_dropped = 0;  // before the item's first refresh
    uint64_t outbox_full = 0;      // calls refused because the outbox was full
    uint64_t item_requests = 0;    // interactive
    uint64_t item_closes = 0;      // interactive
    uint64_t rejections = 0;
    uint64_t connections = 0;
    uint64_t connection_losses = 0;
    // Writes the publishing thread made itself (write_from_caller) instead of
    // waking the I/O thread.
    uint64_t caller_writes = 0;
    uint64_t posts_received = 0;  // on_post calls
    uint64_t posts_accepted = 0;  // of which accepted
    // Links dropped because the distributor took too little: output past
    // max_output_bytes (the link is re-imaged on its next connection).
    uint64_t links_dropped = 0;
    // Calls refused because their frame would pass the distributor's frame
    // limit (see BOUNDS): refresh(), update(), ... threw std::invalid_argument.
    uint64_t frames_refused = 0;
    // Items dropped on the I/O thread because what it would send for them
    // passed the limit: an image grown over it by updates, a distributor
    // announcing a lower limit, or one that closed the connection
    // frame_too_large. Each item is closed (on_item_rejected, LIMIT_REACHED).
    uint64_t images_dropped = 0;
};

class MDCAST_API Publisher {
  public:
    // CLOCK_REALTIME at the call, the default stamp of update().
    static constexpr uint64_t kStampNow = ~uint64_t{0};

    // Throws std::invalid_argument for options that cannot work.
    Publisher(PublisherOptions options, PublisherHandler& handler);
    ~Publisher();
    Publisher(const Publisher&) = delete;
    Publisher& operator=(const Publisher&) = delete;

    void start();
    // Sends what the outbox holds (bounded by 2 s), closes the connection and
    // joins the I/O thread. Idempotent.
    void stop();

    // Announced now (if connected) and after every reconnect. Throws
    // std::invalid_argument for an empty name, one that is not UTF-8, or one
    // already added with another mode.
    void add_service(const std::string& name, ServiceMode mode);
    // The handle of (service, item), created on first use; broadcast items
    // are registered with the distributor. The service must have been added;
    // the item name must be valid UTF-8 (std::invalid_argument otherwise).
    PublishedItem add_item(const std::string& service, const std::string& item);

    // false: the outbox is full (nothing taken) or the handle is unknown.
    // Throws std::invalid_argument (nothing taken, the image unchanged) when a
    // string value or the status text is not valid UTF-8: the distributor and
    // every consumer would refuse it; and, for these and every call below, when
    // its frame would pass the distributor's frame limit (see BOUNDS).
    bool refresh(PublishedItem item, const FieldList& fields, const ItemState& state = {});
    // publish_time_ns: kStampNow stamps CLOCK_REALTIME now; 0 sends no stamp.
    bool update(PublishedItem item, const FieldList& fields, uint64_t publish_time_ns = kStampNow);
    // An update marked a trade (Update.trade): conflation never merges it with
    // others, every conflating subscriber gets it on its own, in order.
    bool trade(PublishedItem item, const FieldList& fields, uint64_t publish_time_ns = kStampNow);
    // A book's whole image (docs/books.md): its domain (not kMarketPrice), its
    // summary fields and every entry (add them; keys of the domain's kind:
    // prices for kMarketByPrice, names otherwise). After a reconnect the
    // publisher sends the book as it stands, like any image. Throws
    // std::invalid_argument (nothing taken) for kMarketPrice or keys of the
    // wrong kind.
    bool refresh_book(PublishedItem item, Domain domain, const FieldList& summary,
                      const BookChanges& entries, const ItemState& state = {});
    // A book's changes: summary fields (may be empty) and entry actions, applied
    // in order. Sent marked a trade: conflation never merges a book's actions.
    // An item whose last refresh was not a book's drops it (updates_dropped).
    bool update_book(PublishedItem item, const FieldList& summary, const BookChanges& changes,
                     uint64_t publish_time_ns = kStampNow);
    // A closed stream ends the item; a suspect one tells subscribers its data
    // may be stale until the next refresh.
    bool status(PublishedItem item, const ItemState& state);

    // Waits until the distributor has acknowledged everything published
    // before the call (see FLUSH), up to `timeout`. Not from a callback
    // (throws std::logic_error).
    bool flush(std::chrono::milliseconds timeout);

    PublisherStats stats() const;

  private:
    struct Impl;

  public:
    // Scope of a burst (see WRITES AND BATCHES): from construction to
    // destruction, this thread's calls on the publisher do not wake its I/O
    // thread; the destructor does, once, if anything is waiting. flush()
    // inside a batch still sends at once. Batches may nest (the outermost
    // end wakes) and may be open on several threads. A Batch belongs to the
    // thread that made it: keep it a local, so batches end in the reverse
    // order they began, and do not let it outlive its Publisher.
    class MDCAST_API Batch {
      public:
        explicit Batch(Publisher& publisher);
        ~Batch();
        Batch(const Batch&) = delete;
        Batch& operator=(const Batch&) = delete;

      private:
        friend class Publisher;
        Impl* impl_;
        Batch* outer_;  // the next older batch open on this thread, any publisher
    };

  private:
    static bool in_batch(const Impl* impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace mdcast
