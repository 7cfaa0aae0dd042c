// Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/) from
// real encodings: protobuf messages, frames, backbone packets signed as the
// distributor signs them, and the example files in etc/. Run by hand after a wire
// change (`build-fuzz/tests/fuzz/mdcast-fuzz-corpus tests/fuzz/corpus etc`);
// the output is checked in.
#include <arpa/inet.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "proto/backbone_packet.h"
#include "proto/frame.h"
#include "proto/packet_signer.h"
#include "proto/source_ids.h"
#include "proto/update_codec.h"
#include "wire/backbone.pb.h"
#include "wire/client.pb.h"
#include "wire/common.pb.h"
#include "wire/publisher.pb.h"
#include "wire/session.pb.h"

namespace fs = std::filesystem;
namespace wire = mdcast::wire::v1;
using namespace mdcast::proto;

namespace {

// The key backbone_packet_fuzz.cpp signs with, so signed seeds verify there.
const char* const kFuzzKey = "fuzzing-key-0123456789abcdef";

void write(const fs::path& dir, const std::string& name, const std::string& bytes) {
    fs::create_directories(dir);
    std::ofstream(dir / name, std::ios::binary) << bytes;
}

std::string read(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

wire::Update sample_update(uint64_t item, uint64_t seq) {
    wire::Update u;
    u.set_item_id(item);
    u.set_item_seq(seq);
    u.set_publish_time_ns(1'790'000'000'123'456'789ull);
    auto* f = u.mutable_fields();
    auto* bid = f->add_fields();
    bid->set_id(22);
    bid->mutable_decimal_value()->set_mantissa(-10125);
    bid->mutable_decimal_value()->set_exponent(-2);
    f->add_fields()->set_int_value(-7);
    f->add_fields()->set_double_value(101.125);
    auto* name = f->add_fields();
    name->set_id(3);
    name->set_string_value("VOD.L \xE2\x82\xAC");
    f->add_fields()->set_time_ns(-5);
    f->add_fields()->mutable_blank();
    return u;
}

wire::Refresh sample_refresh(uint64_t item) {
    wire::Refresh r;
    r.set_item_id(item);
    r.set_item_seq(1);
    r.set_service_id(1);
    r.set_service_name("IDN");
    r.set_item_name("VOD.L");
    r.mutable_status()->set_stream_state(wire::STREAM_OPEN);
    r.mutable_status()->set_data_state(wire::DATA_OK);
    *r.mutable_fields() = sample_update(item, 1).fields();
    return r;
}

void update_seeds(const fs::path& dir) {
    write(dir, "update", sample_update(7, 42).SerializeAsString());
    wire::Update conflated = sample_update(1ull << 40, 1ull << 33);
    conflated.set_conflated(true);
    write(dir, "update-conflated", conflated.SerializeAsString());
    UpdateView view;
    const std::string body = sample_update(9, 3).SerializeAsString();
    decode_update({reinterpret_cast<const uint8_t*>(body.data()), body.size()}, view);
    std::string frame;
    const std::vector<uint32_t> ids{3, 22};
    append_update_frame(frame, view, &ids);
    write(dir, "update-view", frame.substr(kFrameHeaderBytes));
}

void frame_reader_seeds(const fs::path& dir) {
    wire::LoginRequest login;
    login.set_user("alice");
    login.set_password("secret");
    login.set_protocol_version(kProtocolVersion);
    wire::Subscribe subscribe;
    subscribe.set_service_name("IDN");
    subscribe.add_item_names("VOD.L");
    subscribe.add_view_field_ids(22);
    wire::Ping ping;
    ping.set_sent_time_ns(12345);
    const std::string stream =
        encode_frame_string(FrameType::kLoginRequest, login) +
        encode_frame_string(FrameType::kDirectoryRequest, wire::DirectoryRequest()) +
        encode_frame_string(FrameType::kSubscribe, subscribe) +
        encode_frame_string(FrameType::kPing, ping);
    write(dir, "session", std::string("\x10\x07", 2) + stream);  // 1 KiB frames, 8-byte reads
    write(dir, "session-one-read", std::string("\x02\xff", 2) + stream);
}

void wire_message_seeds(const fs::path& dir) {
    // Selector bytes as in wire_messages_fuzz.cpp's prototypes().
    wire::LoginRequest login;
    login.set_user("alice");
    login.set_application_id("256");
    login.set_password("secret");
    login.set_protocol_version(kProtocolVersion);
    write(dir, "login-request", std::string(1, 0) + login.SerializeAsString());
    wire::ItemRegister reg;
    reg.set_service_id(1);
    auto* entry = reg.add_items();
    entry->set_ref(1);
    entry->set_name("VOD.L");
    write(dir, "item-register", std::string(1, 7) + reg.SerializeAsString());
    write(dir, "refresh", std::string(1, 9) + sample_refresh(5).SerializeAsString());
    write(dir, "update", std::string(1, 10) + sample_update(5, 2).SerializeAsString());
    wire::Directory directory;
    auto* service = directory.add_services();
    service->set_service_id(1);
    service->set_name("IDN");
    service->set_state(wire::SERVICE_UP);
    write(dir, "directory", std::string(1, 12) + directory.SerializeAsString());
    wire::Subscribe subscribe;
    subscribe.set_service_name("IDN");
    subscribe.add_item_names("VOD.L");
    subscribe.add_item_names("BARC.L");
    subscribe.add_view_field_ids(22);
    write(dir, "subscribe", std::string(1, 14) + subscribe.SerializeAsString());
    wire::Nak nak;
    auto* range = nak.add_ranges();
    range->set_from(10);
    range->set_to(12);
    write(dir, "nak", std::string(1, 19) + nak.SerializeAsString());
    wire::Interest interest;
    interest.set_epoch(0x0001'0000'0000'0001ull);
    interest.add_held_item_ids(65537);
    interest.add_released_item_ids(65538);
    write(dir, "interest", std::string(1, 21) + interest.SerializeAsString());
}

std::string heartbeat_packet(uint64_t epoch, uint64_t next, const mdcast::PacketSigner* signer) {
    PacketBuilder packet(kMaxDatagramBytes, signer ? mdcast::kSignatureBytes : 0);
    wire::Heartbeat heartbeat;
    heartbeat.set_next_sequence(next);
    heartbeat.set_control_port(9);
    heartbeat.set_trailing_edge(next > 3 ? next - 3 : 0);
    packet.add(FrameType::kHeartbeat, heartbeat);
    const auto bytes = mdcast::finish_packet(packet, PacketType::kHeartbeat, epoch, 0, signer);
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

std::string data_packet(uint64_t epoch, uint64_t sequence, const mdcast::PacketSigner* signer,
                        bool padded = false) {
    PacketBuilder packet(kMaxDatagramBytes, signer ? mdcast::kSignatureBytes : 0, padded);
    if (sequence == 1) packet.add(FrameType::kRefresh, sample_refresh(sequence));
    packet.add(FrameType::kUpdate, sample_update(1, sequence));
    packet.add(FrameType::kUpdate, sample_update(2, sequence));
    const auto bytes = mdcast::finish_packet(packet, PacketType::kData, epoch, sequence, signer);
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// The distributor's unicast answer to a server's request for an unknown name.
std::string not_found_reply(uint64_t epoch) {
    PacketBuilder packet(kMaxDatagramBytes);
    wire::ItemStatus status;
    status.set_service_name("IDN");
    status.set_item_name("NO.SUCH");
    status.mutable_status()->set_stream_state(wire::STREAM_CLOSED);
    status.mutable_status()->set_code(wire::STATUS_NOT_FOUND);
    packet.add(FrameType::kItemStatus, status);
    const auto bytes = packet.finish(PacketType::kControlReply, epoch, 0);
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

void packet_seeds(const fs::path& dir, uint64_t epoch) {
    const mdcast::PacketSigner signer(kFuzzKey, "");
    write(dir, "data", data_packet(epoch, 1, nullptr));
    write(dir, "data-signed", data_packet(epoch, 2, &signer));
    // As a segmentation offload run cuts it: zeros up to the run's segment size.
    write(dir, "data-signed-padded", data_packet(epoch, 3, &signer, true) + std::string(40, '\0'));
    write(dir, "heartbeat-signed", heartbeat_packet(epoch, 3, &signer));
}

// backbone_receiver_fuzz.cpp's records: op byte (bit 1: control socket; bits 2-7:
// clock steps of 200 us), 2-byte length, datagram.
std::string record(uint8_t op, const std::string& datagram) {
    std::string out(1, static_cast<char>(op));
    out += static_cast<char>(datagram.size() & 0xff);
    out += static_cast<char>(datagram.size() >> 8);
    return out + datagram;
}

void receiver_seeds(const fs::path& dir, uint64_t epoch, uint64_t restarted) {
    std::string in_order = record(0, heartbeat_packet(epoch, 1, nullptr));
    for (uint64_t s = 1; s <= 3; ++s) in_order += record(4, data_packet(epoch, s, nullptr));
    in_order += record(2, not_found_reply(epoch));
    write(dir, "in-order", in_order);
    // 1, 2, 4 (a gap), 3 (the repair), then a restart with a new epoch.
    std::string gap = record(0, heartbeat_packet(epoch, 1, nullptr));
    for (uint64_t s : {1, 2, 4, 3}) gap += record(4, data_packet(epoch, s, nullptr));
    gap += record(100, heartbeat_packet(epoch, 5, nullptr));
    gap += record(0, heartbeat_packet(restarted, 1, nullptr));
    gap += record(4, data_packet(restarted, 1, nullptr));
    write(dir, "gap-repair-restart", gap);
    // A gap never repaired: given up after the trailing edge passes it.
    std::string lost = record(0, heartbeat_packet(epoch, 1, nullptr));
    for (uint64_t s : {1, 5}) lost += record(4, data_packet(epoch, s, nullptr));
    lost += record(252, heartbeat_packet(epoch, 9, nullptr));
    write(dir, "gap-lost", lost);
}

void file_seeds(const fs::path& dir, const fs::path& etc, const std::vector<std::string>& files,
                char selector) {
    for (const auto& file : files) {
        const fs::path path = etc / file;
        if (!fs::exists(path)) continue;
        std::string name = file;
        for (char& c : name)
            if (c == '/') c = '-';
        write(dir, name, std::string(1, selector) + read(path));
    }
}

// WebSocket clients: request heads (selector 1) and JSON messages (selector 0)
// as docs/websocket.md shows them.
void ws_request_seeds(const fs::path& dir) {
    write(dir, "upgrade",
          std::string("\x01") +
              "GET /WebSocket HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\n"
              "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
              "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: tr_json2\r\n\r\n");
    write(dir, "page", std::string("\x01") + "GET / HTTP/1.1\r\nHost: h\r\n\r\n");
    const char* const messages[] = {
        R"({"ID":1,"Domain":"Login","Key":{"Name":"alice","Elements":{"Password":"p","ApplicationId":"256","Position":"10.0.0.1"}}})",
        R"({"ID":2,"Key":{"Service":"MDCAST","Name":"ITEM000001"}})",
        R"({"ID":3,"Key":{"Service":"MDCAST","Name":["A","B"]},"View":["BID","ASK"],"Streaming":false})",
        R"([{"ID":5,"Type":"Close"},{"ID":[6,7],"Type":"Close"},{"Type":"Close","Domain":"Login"}])",
        R"({"Type":"Ping"})",
        R"({"Type":"Pong"})",
    };
    int n = 0;
    for (const char* message : messages)
        write(dir, "json" + std::to_string(n++), std::string(1, '\0') + message);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::cerr << "usage: " << argv[0] << " CORPUS_DIR ETC_DIR\n";
        return 2;
    }
    const fs::path out = argv[1], etc = argv[2];
    const uint64_t epoch = make_epoch(1, 0x1234), restarted = make_epoch(1, 0x5678);
    update_seeds(out / "update_decoder");
    update_seeds(out / "update_header");
    frame_reader_seeds(out / "frame_reader");
    wire_message_seeds(out / "wire_messages");
    packet_seeds(out / "backbone_packet", epoch);
    receiver_seeds(out / "backbone_receiver", epoch, restarted);
    file_seeds(out / "config", etc,
               {"server.yaml", "profiles/latency/server.yaml", "profiles/throughput/server.yaml"},
               '\x01');
    file_seeds(out / "config", etc,
               {"distributor.yaml", "profiles/latency/distributor.yaml",
                "profiles/throughput/distributor.yaml"},
               '\x00');
    file_seeds(out / "users_file", etc, {"users.yaml.example"}, '\x01');
    file_seeds(out / "users_file", etc, {"fields.dict"}, '\x00');
    ws_request_seeds(out / "ws_requests");
    return 0;
}
