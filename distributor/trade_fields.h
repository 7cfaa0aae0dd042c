// Updates that count as trades though their publisher did not mark them
// (trades.fields: per service, the fields whose presence makes an update a
// trade, e.g. IDN_RDF: [TRDPRC_1, TRDVOL_1]). The distributor marks such an
// update (Update.trade) before it goes onto the backbone, so every server,
// every subscriber, a capture and the dissector see one answer for the
// service; a server-side list could differ between servers, and its mark
// could not reach the subscribers without re-encoding each update per server.
//
// Resolved once at start-up: names through the field dictionary, numbers as
// ids. A service without an entry of its own takes the "*" entry, if any.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/config/config_values.h"
#include "proto/field_dictionary.h"
#include "proto/update_codec.h"

namespace mdcast::distributor {

class TradeFields {
  public:
    TradeFields() = default;
    // Throws std::invalid_argument naming a field the dictionary lacks (or any
    // name when `dictionary` is null).
    TradeFields(const config::detail::StringListMap& by_service,
                const proto::FieldDictionary* dictionary);

    // Whether any entry names a field (rather than giving its id): the
    // dictionary is needed then.
    static bool names_fields(const config::detail::StringListMap& by_service);

    // The sorted field ids marking `service`'s updates as trades; empty: none.
    std::vector<uint32_t> for_service(const std::string& service) const;
    // Whether `update` carries any of `ids` (sorted).
    static bool carries_any(const std::vector<uint32_t>& ids, const proto::UpdateView& update);

  private:
    std::map<std::string, std::vector<uint32_t>> by_service_;
};

}  // namespace mdcast::distributor
