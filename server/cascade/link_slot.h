// One link to a parent server and its role: the active link (the edge's
// upstream) or the warm standby (logged in to the next parent, idle: pings
// only), docs/cascade.md "Failure behaviour". A ServerLink tells the same
// listener for its whole life, so at a failover the two slots swap roles
// (TcpUpstream's active and standby pointers) rather than links being moved;
// the slot keeps the login response for the moment its link becomes active.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "client-sdk/src/server_link.h"
#include "wire/session.pb.h"

namespace mdcast::server {

class LinkSlot final : private sdk::ServerLink::Listener {
  public:
    class Owner {
      public:
        virtual void on_slot_up(LinkSlot& slot) = 0;
        virtual void on_slot_frame(LinkSlot& slot, const proto::Frame& frame) = 0;
        virtual void on_slot_down(LinkSlot& slot, sdk::LinkDown cause, const std::string& text) = 0;

      protected:
        ~Owner() = default;
    };

    LinkSlot(EventLoop& loop, FlushScheduler& flusher, Owner& owner,
             std::shared_ptr<spdlog::logger> log)
        : owner_(owner), link_(loop, flusher, proto::kServerToClientTypes, *this, std::move(log)) {}

    sdk::ServerLink& link() { return link_; }
    const sdk::ServerLink& link() const { return link_; }
    // The parent's answer to this link's login, while it is logged in.
    const std::optional<::mdcast::wire::v1::LoginResponse>& login() const { return login_; }
    std::string parent() const { return link_.settings().server.to_string(); }

  private:
    void on_link_up(const ::mdcast::wire::v1::LoginResponse& response) override {
        login_ = response;
        owner_.on_slot_up(*this);
    }
    void on_link_frame(const proto::Frame& frame) override { owner_.on_slot_frame(*this, frame); }
    void on_link_down(sdk::LinkDown cause, const std::string& text) override {
        login_.reset();
        owner_.on_slot_down(*this, cause, text);
    }

    Owner& owner_;
    sdk::ServerLink link_;
    std::optional<::mdcast::wire::v1::LoginResponse> login_;
};

}  // namespace mdcast::server
