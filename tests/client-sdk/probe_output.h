// What the SDK test probes share: their clock, JSON lines and argument lists.
#pragma once

#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "mdcast/types.h"

namespace probe {

// The TLS switches both probes take: --tls, --ca-file F, --cert-file F,
// --key-file F, --server-name N, --insecure-skip-verify. True when `arg` was one.
template <class Value>
bool tls_arg(const std::string& arg, Value value, mdcast::TlsOptions& tls) {
    if (arg == "--tls")
        tls.enabled = true;
    else if (arg == "--ca-file")
        tls.ca_file = value();
    else if (arg == "--cert-file")
        tls.cert_file = value();
    else if (arg == "--key-file")
        tls.key_file = value();
    else if (arg == "--server-name")
        tls.server_name = value();
    else if (arg == "--insecure-skip-verify")
        tls.insecure_skip_verify = true;
    else
        return false;
    return true;
}

// CLOCK_MONOTONIC ns, comparable with Python's time.monotonic_ns().
inline int64_t monotonic_now() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

inline std::string json_string(std::string_view text) {
    std::string out = "\"";
    for (char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char buffer[8];
            std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
            out += buffer;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

// Prints a JSON object (complete, "{...}") with "t" added, and flushes.
inline void line(const std::string& object) {
    std::printf("%s,\"t\":%lld}\n", object.substr(0, object.size() - 1).c_str(),
                static_cast<long long>(monotonic_now()));
    std::fflush(stdout);
}

inline std::vector<std::string> split(const std::string& text) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= text.size() && !text.empty()) {
        const size_t comma = std::min(text.find(',', start), text.size());
        out.push_back(text.substr(start, comma - start));
        start = comma + 1;
    }
    return out;
}

// Set by SIGTERM and SIGINT once stop_on_signals() was called.
inline std::atomic<bool>& stop_requested() {
    static std::atomic<bool> flag{false};
    return flag;
}

inline void stop_on_signals() {
    std::signal(SIGTERM, [](int) { stop_requested() = true; });
    std::signal(SIGINT, [](int) { stop_requested() = true; });
}

// parse(argc, argv), or a message naming the program and exit code 2.
template <class Args, class Parse>
Args parse_or_exit(const char* program, int argc, char** argv, Parse parse) {
    try {
        return parse(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", program, e.what());
        std::exit(2);
    }
}

}  // namespace probe
