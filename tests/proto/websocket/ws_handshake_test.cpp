// Tests for proto/websocket/ws_handshake.h: the RFC 6455 accept key, the upgrade, the
// page, and the refusals.
#include "proto/websocket/ws_handshake.h"

#include <catch2/catch.hpp>

namespace {

using mdcast::proto::WsHandshake;

WsHandshake::Answer answer_to(const std::string& head, const std::string& page = "") {
    const auto request = WsHandshake::parse(head);
    REQUIRE(request);
    return WsHandshake::answer(*request, page);
}

}  // namespace

TEST_CASE("the accept key of RFC 6455's example") {
    CHECK(WsHandshake::accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

TEST_CASE("a valid upgrade gets 101 with the key and the offered subprotocol") {
    const auto a = answer_to(
        "GET /WebSocket HTTP/1.1\r\nHost: h\r\nUpgrade: WebSocket\r\nConnection: keep-alive, "
        "Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        "Sec-WebSocket-Protocol: chat, tr_json2\r\n\r\n");
    CHECK(a.kind == WsHandshake::Kind::kUpgrade);
    CHECK(a.response.find("HTTP/1.1 101") == 0);
    CHECK(a.response.find("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n") !=
          std::string::npos);
    CHECK(a.response.find("Sec-WebSocket-Protocol: tr_json2\r\n") != std::string::npos);
}

TEST_CASE("the page at /, 404 elsewhere, 400 for a bad upgrade, 405 for POST") {
    CHECK(answer_to("GET / HTTP/1.1\r\nHost: h\r\n\r\n", "<html>").kind ==
          WsHandshake::Kind::kPage);
    CHECK(answer_to("GET / HTTP/1.1\r\nHost: h\r\n\r\n", "").response.find("HTTP/1.1 404") == 0);
    CHECK(answer_to("GET /x HTTP/1.1\r\n\r\n", "<html>").response.find("HTTP/1.1 404") == 0);
    CHECK(answer_to("GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    "Sec-WebSocket-Key: short\r\nSec-WebSocket-Version: 13\r\n\r\n")
              .response.find("HTTP/1.1 400") == 0);
    CHECK(answer_to("POST / HTTP/1.1\r\n\r\n").response.find("HTTP/1.1 405") == 0);
}

TEST_CASE("the head ends at the blank line, HTTP/1.0 and garbage are not requests") {
    CHECK_FALSE(WsHandshake::head_length("GET / HTTP/1.1\r\nHost: h\r\n"));
    CHECK(WsHandshake::head_length("GET / HTTP/1.1\r\n\r\nrest") == 18u);
    CHECK_FALSE(WsHandshake::parse("GET / HTTP/1.0\r\n\r\n"));
    CHECK_FALSE(WsHandshake::parse("hello\r\n\r\n"));
    CHECK_FALSE(WsHandshake::parse("GET / HTTP/1.1\r\nno colon\r\n\r\n"));
}
