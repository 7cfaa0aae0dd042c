#include "common/logging.h"

#include <google/protobuf/stubs/logging.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/dist_sink.h>
#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "common/clock.h"

namespace mdcast::log {

namespace {

// Every logger writes to this one sink; init() decides where it forwards:
// stderr (journald under systemd) by default, or a rotating file.
std::shared_ptr<spdlog::sinks::dist_sink_mt> shared_sink() {
    static auto sink = [] {
        auto dist = std::make_shared<spdlog::sinks::dist_sink_mt>();
        dist->add_sink(std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
        return dist;
    }();
    return sink;
}

std::string& process() {
    static std::string name = "mdcast";
    return name;
}

spdlog::level::level_enum& current_level() {
    static spdlog::level::level_enum level = spdlog::level::info;
    return level;
}

// %* : the syslog priority of the level, which journald reads from a "<N>" line prefix.
class SyslogPriority final : public spdlog::custom_flag_formatter {
  public:
    void format(const spdlog::details::log_msg& msg, const std::tm&,
                spdlog::memory_buf_t& dest) override {
        static constexpr char kPriority[] = {'7', '7', '6', '4', '3', '2', '6'};
        dest.push_back(kPriority[std::min<size_t>(msg.level, sizeof kPriority - 1)]);
    }
    std::unique_ptr<custom_flag_formatter> clone() const override {
        return std::make_unique<SyslogPriority>();
    }
};

// %J : the message escaped for a JSON string.
class JsonMessage final : public spdlog::custom_flag_formatter {
  public:
    void format(const spdlog::details::log_msg& msg, const std::tm&,
                spdlog::memory_buf_t& dest) override {
        for (char c : msg.payload) append(c, dest);
    }
    std::unique_ptr<custom_flag_formatter> clone() const override {
        return std::make_unique<JsonMessage>();
    }
    static void append(char c, spdlog::memory_buf_t& dest) {
        if (c == '"' || c == '\\') {
            dest.push_back('\\');
            dest.push_back(c);
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
            dest.append(escaped, escaped + 6);
        } else {
            dest.push_back(c);
        }
    }
};

// True when stderr is the journal's stream (systemd sets JOURNAL_STREAM to its
// device:inode), so lines may carry a "<N>" priority prefix.
bool stderr_is_journal() {
    const char* stream = std::getenv("JOURNAL_STREAM");
    struct stat status {};
    if (!stream || fstat(2, &status) != 0) return false;
    const std::string ours = std::to_string(status.st_dev) + ":" + std::to_string(status.st_ino);
    return ours == stream;
}

std::string json_escaped(const std::string& text) {
    spdlog::memory_buf_t buffer;
    for (char c : text) JsonMessage::append(c, buffer);
    return std::string(buffer.data(), buffer.size());
}

// Local time with its UTC offset, to the microsecond.
constexpr const char* kTimestamp = "%Y-%m-%dT%H:%M:%S.%f%z";

std::string line_pattern(const std::string& process_name, const std::string& format, bool journal) {
    if (format == "json") {
        return std::string(journal ? "<%*>" : "") + "{\"time\":\"" + kTimestamp +
               "\",\"level\":\"%l\",\"process\":\"" + json_escaped(process_name) +
               "\",\"component\":\"%n\",\"message\":\"%J\"}";
    }
    return std::string(journal ? "<%*>" : "") + kTimestamp + " %^%-5l%$ [" + process_name +
           "] [%n] %v";
}

void on_protobuf_log(google::protobuf::LogLevel level, const char* file, int line,
                     const std::string& message) {
    static std::mutex mutex;  // protobuf may log from any thread (the SDK's, the hash workers)
    static RateLimiter limit;
    uint64_t suppressed = 0;
    {
        std::lock_guard lock(mutex);
        if (!limit.allow(suppressed)) return;
    }
    const auto spd_level = level >= google::protobuf::LOGLEVEL_ERROR     ? spdlog::level::err
                           : level == google::protobuf::LOGLEVEL_WARNING ? spdlog::level::warn
                                                                         : spdlog::level::info;
    get("protobuf")
        ->log(spd_level, "{} ({}:{}; {} similar suppressed)", message, file, line, suppressed);
}

// The two-character forms; every other control byte and DEL becomes \xHH.
char short_escape(char c) {
    switch (c) {
        case '\\':
            return '\\';
        case '\n':
            return 'n';
        case '\r':
            return 'r';
        case '\t':
            return 't';
        default:
            return 0;
    }
}

}  // namespace

void route_protobuf_logs() {
    google::protobuf::SetLogHandler(&on_protobuf_log);
}

void init(const std::string& process_name, const std::string& level, int verbosity,
          const std::string& file, uint64_t max_file_bytes, uint32_t max_files,
          const std::string& format) {
    process() = process_name;
    if (!file.empty()) {
        // Throws spdlog_ex (a std::exception) naming the file when it cannot be opened.
        auto rotating = std::make_shared<spdlog::sinks::rotating_file_sink_mt>(
            file, static_cast<size_t>(max_file_bytes), static_cast<size_t>(max_files));
        shared_sink()->set_sinks({rotating});
    }
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<SyslogPriority>('*').add_flag<JsonMessage>('J').set_pattern(
        line_pattern(process_name, format, file.empty() && stderr_is_journal()));
    shared_sink()->set_formatter(std::move(formatter));
    set_level(level, verbosity);
    route_protobuf_logs();
}

void set_level(const std::string& level, int verbosity) {
    int numeric = spdlog::level::from_str(level);
    numeric = std::max(0, numeric - verbosity);
    current_level() = static_cast<spdlog::level::level_enum>(numeric);
    spdlog::apply_all(
        [](const std::shared_ptr<spdlog::logger>& logger) { logger->set_level(current_level()); });
}

void redirect(spdlog::sink_ptr sink) {
    if (!sink) sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    shared_sink()->set_sinks({std::move(sink)});
}

std::shared_ptr<spdlog::logger> get(const std::string& component) {
    if (auto existing = spdlog::get(component)) return existing;
    auto logger = std::make_shared<spdlog::logger>(component, shared_sink());
    logger->set_level(current_level());
    logger->flush_on(spdlog::level::info);
    spdlog::register_logger(logger);
    return logger;
}

std::string escaped(std::string_view text) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (const char form = short_escape(c)) {
            out.push_back('\\');
            out.push_back(form);
        } else if (byte < 0x20 || byte == 0x7f) {
            out += "\\x";
            out.push_back(kHex[byte >> 4]);
            out.push_back(kHex[byte & 0x0f]);
        } else {
            out.push_back(c);
        }
    }
    return out;
}

RateLimiter& close_warnings(size_t reason) {
    static std::array<RateLimiter, 32> limits;
    return limits[std::min(reason, limits.size() - 1)];
}

bool RateLimiter::allow(uint64_t& suppressed) {
    const int64_t now = monotonic_ns();
    if (last_ns_ != 0 && now - last_ns_ < interval_ns_) {
        ++skipped_;
        return false;
    }
    last_ns_ = now;
    suppressed = skipped_;
    skipped_ = 0;
    return true;
}

}  // namespace mdcast::log
