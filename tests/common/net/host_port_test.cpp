// Tests for common/net/host_port.h: "host:port" arguments of the tools.
#include "common/net/host_port.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace {

using mdcast::HostPort;
using mdcast::parse_host_port;
using mdcast::parse_host_port_list;

bool parses(const std::string& text) {
    HostPort out;
    return parse_host_port(text, out);
}

}  // namespace

TEST_CASE("valid host:port", "[host_port]") {
    HostPort out;
    REQUIRE(parse_host_port("localhost:14002", out));
    CHECK(out.host == "localhost");
    CHECK(out.port == 14002);

    REQUIRE(parse_host_port("10.1.2.3:1", out));
    CHECK(out.host == "10.1.2.3");
    CHECK(out.port == 1);

    REQUIRE(parse_host_port("md-server.example.com:65535", out));
    CHECK(out.host == "md-server.example.com");
    CHECK(out.port == 65535);

    REQUIRE(parse_host_port("0.0.0.0:080", out));  // leading zero is still decimal
    CHECK(out.port == 80);
}

TEST_CASE("IPv6 addresses in brackets", "[host_port]") {
    HostPort out;
    REQUIRE(parse_host_port("[::1]:14002", out));
    CHECK(out.host == "::1");
    CHECK(out.port == 14002);

    REQUIRE(parse_host_port("[fe80::1%eth0]:9000", out));
    CHECK(out.host == "fe80::1%eth0");
    CHECK(out.port == 9000);

    REQUIRE(parse_host_port("[2001:db8::42]:443", out));
    CHECK(out.host == "2001:db8::42");

    CHECK_FALSE(parses("[::1:80"));    // unterminated bracket
    CHECK_FALSE(parses("[]:80"));      // empty address
    CHECK_FALSE(parses("[::1]"));      // no port
    CHECK_FALSE(parses("[::1]:"));     // empty port
    CHECK_FALSE(parses("[::1]x:80"));  // junk after the bracket
}

TEST_CASE("missing host or port is refused", "[host_port]") {
    CHECK_FALSE(parses(""));
    CHECK_FALSE(parses("localhost"));
    CHECK_FALSE(parses("localhost:"));
    CHECK_FALSE(parses(":14002"));
    CHECK_FALSE(parses(":"));
}

TEST_CASE("port must be in 1..65535", "[host_port]") {
    CHECK_FALSE(parses("host:0"));
    CHECK_FALSE(parses("host:00"));
    CHECK_FALSE(parses("host:65536"));
    CHECK_FALSE(parses("host:99999999999999999999"));
    CHECK(parses("host:1"));
    CHECK(parses("host:65535"));
}

TEST_CASE("junk in the port is refused", "[host_port]") {
    CHECK_FALSE(parses("host:-1"));
    CHECK_FALSE(parses("host:+80"));
    CHECK_FALSE(parses("host: 80"));
    CHECK_FALSE(parses("host:80 "));
    CHECK_FALSE(parses("host:80x"));
    CHECK_FALSE(parses("host:0x50"));
    CHECK_FALSE(parses("host:http"));
    CHECK_FALSE(parses("host:8.0"));
}

TEST_CASE("a failed parse leaves the output untouched", "[host_port]") {
    HostPort out{"keep", 7};
    CHECK_FALSE(parse_host_port("bad:0", out));
    CHECK(out.host == "keep");
    CHECK(out.port == 7);
}

TEST_CASE("list of host:port", "[host_port]") {
    std::vector<HostPort> out;
    std::string error;
    REQUIRE(parse_host_port_list("a:1,[::1]:2,c.example:65535", out, error));
    REQUIRE(out.size() == 3);
    CHECK(out[0].host == "a");
    CHECK(out[0].port == 1);
    CHECK(out[1].host == "::1");
    CHECK(out[1].port == 2);
    CHECK(out[2].host == "c.example");
    CHECK(out[2].port == 65535);
    CHECK(error.empty());

    REQUIRE(parse_host_port_list("single:9", out, error));
    REQUIRE(out.size() == 1);  // previous contents replaced
    CHECK(out[0].host == "single");
}

TEST_CASE("list with a bad entry names it", "[host_port]") {
    std::vector<HostPort> out;
    std::string error;
    CHECK_FALSE(parse_host_port_list("a:1,b:0,c:3", out, error));
    CHECK_THAT(error, Catch::Contains("'b:0'"));

    error.clear();
    CHECK_FALSE(parse_host_port_list("a:1,nonsense", out, error));
    CHECK_THAT(error, Catch::Contains("'nonsense'"));

    error.clear();
    CHECK_FALSE(parse_host_port_list("a:1,,b:2", out, error));  // empty entry
    CHECK_THAT(error, Catch::Contains("''"));

    CHECK_FALSE(parse_host_port_list("a:1,", out, error));  // trailing comma
    CHECK_FALSE(parse_host_port_list("", out, error));      // nothing at all
}

TEST_CASE("an IPv6 literal without brackets is refused", "[host_port]") {
    HostPort out;
    CHECK_FALSE(parse_host_port("fe80::1", out));
    CHECK_FALSE(parse_host_port("::1", out));
    CHECK_FALSE(parse_host_port("2001:db8::1:8080", out));
    CHECK_FALSE(parse_host_port("a:b:80", out));
}
