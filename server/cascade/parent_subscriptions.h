// What an edge server holds at its parent (server/cascade/tcp_upstream.h): the
// item names it subscribed upstream, and the item id each one turned out to
// have (learnt from the parent's refresh). The edge asks by name, the server
// behind it speaks of ids, and after a reconnect every name is asked again.
//
// Bounded by the server's own bounds: a name is added only for an image the
// server asked for (cache.max_pending_requests, cache.max_items).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace mdcast::server {

class ParentSubscriptions {
  public:
    using Name = std::pair<std::string, std::string>;  // service, item

    // The name is wanted upstream; true when it was not already.
    bool want(const std::string& service, const std::string& item);
    // The parent's refresh named the item's id. Returns the id the name had before
    // when it differs (its distributor restarted: a new epoch's ids), else 0.
    uint64_t learn(uint64_t item_id, const std::string& service, const std::string& item);
    // The item is no longer wanted (the last subscriber here left, or the
    // parent closed its stream). Its id stays known, so it can be wanted again
    // by id. Returns its name, if it was wanted.
    std::optional<Name> drop(uint64_t item_id);
    void drop(const std::string& service, const std::string& item);
    // The name of a known id, wanted or not.
    std::optional<Name> name_of(uint64_t item_id) const;
    // The id a name was last known by (0: none yet).
    uint64_t id_of(const std::string& service, const std::string& item) const;

    // The name is asked on the link now up (a Subscribe sent or about to be).
    void asked(const std::string& service, const std::string& item, int64_t now_ns);
    // Asked on this link less than `reask_after_ns` ago and not yet answered:
    // TCP delivered the request, so asking again would only make the parent
    // send another image (a slow parent, asked every image retry, falls ever
    // further behind). The bound is a safety net for a parent that lost one.
    bool awaiting(const std::string& service, const std::string& item, int64_t now_ns,
                  int64_t reask_after_ns) const;
    // A refresh or status for the name arrived.
    void answered(const std::string& service, const std::string& item);
    // The link is lost: nothing asked on it will be answered.
    void link_lost() { asked_.clear(); }
    size_t awaited() const { return asked_.size(); }

    bool wanted(const std::string& service, const std::string& item) const {
        return wanted_.contains({service, item});
    }
    size_t size() const { return wanted_.size(); }
    // Every wanted name, by service (one Subscribe per service after a reconnect).
    std::map<std::string, std::vector<std::string>> by_service() const;
    // The ids of the wanted items whose id is known (those a lost link leaves suspect).
    std::vector<uint64_t> known_ids() const;

  private:
    std::set<Name> wanted_;
    std::map<Name, int64_t> asked_;  // asked on this link, not yet answered: when
    std::map<Name, uint64_t> ids_;   // every name whose id is known, wanted or not
    std::unordered_map<uint64_t, Name> names_;
};

}  // namespace mdcast::server
