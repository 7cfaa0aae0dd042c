#include "common/logging.h"

#include <google/protobuf/stubs/logging.h>
#include <spdlog/sinks/dist_sink.h>
#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <algorithm>
#include <array>
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

}  // namespace

void route_protobuf_logs() {
    google::protobuf::SetLogHandler(&on_protobuf_log);
}

void init(const std::string& process_name, const std::string& level, int verbosity,
          const std::string& file, uint64_t max_file_bytes, uint32_t max_files) {
    process() = process_name;
    if (!file.empty()) {
        // Throws spdlog_ex (a std::exception) naming the file when it cannot be opened.
        auto rotating = std::make_shared<spdlog::sinks::rotating_file_sink_mt>(
            file, static_cast<size_t>(max_file_bytes), static_cast<size_t>(max_files));
        shared_sink()->set_sinks({rotating});
    }
    shared_sink()->set_pattern("%Y-%m-%dT%H:%M:%S.%f %^%-5l%$ [" + process_name + "] [%n] %v");
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
