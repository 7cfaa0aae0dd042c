#include "common/net/host_port.h"

#include <charconv>

namespace mdcast {

bool parse_host_port(const std::string& text, HostPort& out) {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) return false;
    std::string host = text.substr(0, colon);
    if (host.front() == '[') {
        if (host.back() != ']' || host.size() < 3) return false;
        host = host.substr(1, host.size() - 2);
    } else if (host.find(':') != std::string::npos) {
        return false;  // an IPv6 literal must be bracketed, or host and port are ambiguous
    }
    unsigned value = 0;
    const char* first = text.data() + colon + 1;
    const char* last = text.data() + text.size();
    const auto [end, error] = std::from_chars(first, last, value);
    if (error != std::errc() || end != last || value < 1 || value > 65535) return false;
    out.host = host;
    out.port = static_cast<uint16_t>(value);
    return true;
}

bool parse_host_port_list(const std::string& text, std::vector<HostPort>& out, std::string& error) {
    out.clear();
    size_t start = 0;
    while (start <= text.size()) {
        const size_t comma = text.find(',', start);
        const std::string entry =
            text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        HostPort parsed;
        if (!parse_host_port(entry, parsed)) {
            error = "'" + entry + "' is not HOST:PORT";
            return false;
        }
        out.push_back(parsed);
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return true;
}

}  // namespace mdcast
