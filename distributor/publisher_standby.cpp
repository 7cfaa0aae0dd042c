// A publisher session's part in standby groups (publisher_group.h): a
// standby's messages only keep its own images current, and the active one's
// sequences are renumbered after a switch (ItemEntry::seq_shift).
#include "distributor/publisher_session.h"
#include "proto/book_image.h"

namespace mdcast::distributor {

std::string PublisherSession::label() const {
    return fmt::format("connection {} (user {}, application {}, position {})", connection_->id(),
                       log::escaped(login_.user()), log::escaped(login_.application_id()),
                       log::escaped(login_.position()));
}

bool PublisherSession::may_register(const ServiceEntry* service) {
    if (!service) return false;
    return service->owner_session == connection_->id() ||
           owner_.standby_of(service->id, connection_->id()) != nullptr;
}

uint64_t PublisherSession::backbone_seq(ItemEntry& item, uint64_t publisher_seq) {
    return publisher_seq + item.seq_shift;  // mod 2^64: the shift may be "negative"
}

void PublisherSession::keep_standby_refresh(StandbyItem& standby, const wire::Refresh& refresh) {
    ++counters_.standby_messages;
    std::string why;  // a book is kept whole, as the active publisher's is (docs/books.md)
    standby.has_image = proto::assign_refresh(standby.image, refresh, registry_.max_book_entries(),
                                              why) != proto::BookOutcome::kMalformed;
    standby.item_seq = refresh.item_seq();
    const wire::Status& status = refresh.status();
    standby.data_state = refresh.has_status() ? status.data_state() : wire::DATA_OK;
    standby.status_code = status.code();
    standby.status_text = status.text();
    standby.closed = status.stream_state() == wire::STREAM_CLOSED;
}

void PublisherSession::keep_standby_update(ItemEntry& item, StandbyItem& standby) {
    if (!standby.has_image) {
        return reject(item.id, wire::STATUS_INVALID_REQUEST, "update before the item's refresh");
    }
    std::string why;
    if (proto::apply_update(standby.image, update_, registry_.max_book_entries(), why) ==
        proto::BookOutcome::kMalformed) {
        return reject(item.id, wire::STATUS_INVALID_REQUEST, "update refused: " + why);
    }
    ++counters_.standby_messages;
    standby.item_seq = update_.item_seq;
}

}  // namespace mdcast::distributor
