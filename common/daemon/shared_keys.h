// Configuration keys the server and the distributor share, declared once (key,
// default, range and help) for any config struct with the matching members.
// Keys whose meaning differs between the two (backbone.max_datagram_bytes: what
// is sent vs what is accepted) stay in each daemon's schema.
#pragma once

#include <cstdint>
#include <string>

#include "common/config/config_schema.h"
#include "proto/limits.h"

namespace mdcast {

// admin_enabled, admin_address, admin_port
template <class C>
void add_admin_keys(config::Schema<C>& s) {
    s.boolean("admin.enabled", &C::admin_enabled, true,
              "Serve /metrics (Prometheus), /healthz and /stats over HTTP.");
    s.address("admin.address", &C::admin_address, "127.0.0.1",
              "Address of the admin endpoint; keep it on loopback or a management network.");
    s.template integer<uint16_t>(
        "admin.port", &C::admin_port, 0, 0, 65535,
        "Port of the admin endpoint; server instance N uses port + N - 1 (0: pick a free port "
        "and log it).");
}

// backbone_group, backbone_port, backbone_interface
template <class C>
void add_backbone_group_keys(config::Schema<C>& s) {
    s.address("backbone.group", &C::backbone_group, "239.192.10.1",
              "IPv4 multicast group of the backbone (the distributor sends to it, servers join "
              "it).");
    s.template integer<uint16_t>("backbone.port", &C::backbone_port, 15001, 1, 65535,
                                 "UDP port of the backbone group.");
    s.address(
        "backbone.interface", &C::backbone_interface, "127.0.0.1",
        "Local address of the interface to send on (distributor) or join on (server). "
        "127.0.0.1 with the distributor's backbone.ttl 0 keeps every packet on this host (local "
        "mode).");
}

// backbone_max_message_bytes: the same limit on both ends of the backbone.
template <class C>
void add_backbone_message_keys(config::Schema<C>& s) {
    s.template integer<uint32_t>(
        "backbone.max_message_bytes", &C::backbone_max_message_bytes, 524288, 1024,
        proto::kDefaultFrameBodyBytes,
        "Largest backbone message (a directory, an image), frame header included. One larger "
        "than a datagram travels in parts, one per datagram, and is put together again by the "
        "server; one larger than this is refused loudly (the distributor logs and counts it and "
        "tells the item's subscribers why; a server counts it as loss). Set it alike on the "
        "distributor and its servers; at most what an SDK client takes in one frame.");
}

// backbone_extra_groups, backbone_key_file, backbone_previous_key_file
template <class C>
void add_backbone_redundancy_and_key_keys(config::Schema<C>& s) {
    s.string_list("backbone.extra_groups", &C::backbone_extra_groups, {},
                  "More GROUP:PORT groups: the distributor also sends every packet on each "
                  "(redundant A/B paths); a server joins each (other distributors' backbones, or "
                  "redundant paths, where the first copy of each packet wins).");
    s.string("backbone.key_file", &C::backbone_key_file, "",
             "File with the shared key (at least 16 random bytes) that signs every backbone packet "
             "with a truncated HMAC-SHA256; a server with the key drops unsigned or forged packets "
             "(counted) and signs its control packets with it. Empty: unsigned, not checked.");
    s.string("backbone.previous_key_file", &C::backbone_previous_key_file, "",
             "During a key rollover: the old key, still accepted (by the distributor on control "
             "packets, by servers on backbone packets).");
}

// The frame rules of a peer section (`clients`, `publishers`): small frames
// until the login is accepted (a slot that has not logged in costs a small
// buffer), and every frame whole within a time of its first byte (a slow-loris
// cannot hold a slot and a buffer by dribbling one). docs/hardening.md.
template <class C>
void add_frame_rule_keys(config::Schema<C>& s, const std::string& section,
                         uint32_t C::*max_login_frame_bytes, uint32_t C::*frame_timeout_ms) {
    s.template integer<uint32_t>(
        section + ".max_login_frame_bytes", max_login_frame_bytes, 4096, 2048, 16 << 20,
        "Largest frame body a peer may send before its login is accepted (a login needs about "
        "1 KB); a larger one closes it frame_too_large.");
    s.template integer<uint32_t>(
        section + ".frame_timeout_ms", frame_timeout_ms, 10000, 100, 600000,
        "A frame must arrive whole within this time of its first byte; a peer dribbling one is "
        "closed frame_timeout.");
}

// loss_seed
template <class C>
void add_loss_seed_key(config::Schema<C>& s) {
    s.template integer<uint64_t>("testing.loss.seed", &C::loss_seed, 1, 0, UINT64_MAX,
                                 "TESTING ONLY: seed of the loss generators.");
}

}  // namespace mdcast
