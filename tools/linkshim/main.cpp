// mdcast-linkshim: a link with delay, rate limit, loss and cut between two interfaces
// (see linkshim_app.h, docs/cascade.md "The link shim").
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

#include "common/config/command_line.h"
#include "linkshim_app.h"

namespace {

// "X" (both directions) or "X,Y" (a->b, b->a) into two values in [low, high].
bool parse_pair(const std::string& name, const std::string& text, double low, double high,
                double (&out)[2], std::string& error) {
    const size_t comma = text.find(',');
    const std::string parts[2] = {text.substr(0, comma), comma == std::string::npos
                                                             ? text.substr(0, comma)
                                                             : text.substr(comma + 1)};
    for (int i = 0; i < 2; ++i) {
        char* end = nullptr;
        out[i] = std::strtod(parts[i].c_str(), &end);
        if (parts[i].empty() || *end != '\0' || !std::isfinite(out[i]) || out[i] < low ||
            out[i] > high) {
            std::ostringstream message;
            message << "--" << name << " must be X or X,Y (a->b,b->a) with X and Y in [" << low
                    << ", " << high << "], got '" << text << "'";
            error = message.str();
            return false;
        }
    }
    return true;
}

struct PairOptions {
    std::string delay_ms = "0", rate_bps = "0", loss_percent = "0", queue_bytes = "262144";
};

bool apply_pairs(const PairOptions& in, mdcast::linkshim::ShimOptions& out, std::string& error) {
    double delay[2], rate[2], loss[2], queue[2];
    if (!parse_pair("delay-ms", in.delay_ms, 0, 60'000, delay, error) ||
        !parse_pair("rate-bps", in.rate_bps, 0, 1e12, rate, error) ||
        !parse_pair("loss-percent", in.loss_percent, 0, 100, loss, error) ||
        !parse_pair("queue-bytes", in.queue_bytes, 1500, 1 << 30, queue, error))
        return false;
    mdcast::linkshim::LinkShape* shapes[2] = {&out.a_to_b, &out.b_to_a};
    for (int i = 0; i < 2; ++i) {
        shapes[i]->delay_us = std::llround(delay[i] * 1000);
        shapes[i]->rate_bps = static_cast<uint64_t>(rate[i]);
        shapes[i]->loss_percent = loss[i];
        shapes[i]->queue_bytes = static_cast<size_t>(queue[i]);
    }
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace mdcast;
    linkshim::ShimOptions options;
    PairOptions pairs;
    int64_t held_bytes = 64 << 20, max_frame = 9216, seed = 1;
    mdcast::cli::CommandLine command_line(
        "mdcast-linkshim",
        "Joins two network interfaces at layer 2 (AF_PACKET, every frame both ways, as opaque "
        "bytes) and shapes each direction: one-way delay, rate limit with a tail-dropping queue, "
        "random loss; SIGUSR1 cuts the link (both ways), SIGUSR2 restores it. Prints the frames "
        "in, out and dropped per reason on exit. Needs CAP_NET_RAW; meant for a namespace of "
        "its own between two veths. Values X apply to both directions, X,Y to a->b and b->a.");
    command_line.option("a", &options.side_a, "IFACE", "First interface")
        .option("b", &options.side_b, "IFACE", "Second interface")
        .option("delay-ms", &pairs.delay_ms, "MS[,MS]",
                "One-way delay (0..60000, fractions allowed)")
        .option("rate-bps", &pairs.rate_bps, "BPS[,BPS]", "Rate limit in bits/s (0: unlimited)")
        .option("loss-percent", &pairs.loss_percent, "P[,P]", "Random loss in percent (0..100)")
        .option("queue-bytes", &pairs.queue_bytes, "N[,N]",
                "Bytes queued behind the rate limit; a frame beyond is dropped (queue_full)")
        .option("held-bytes", &held_bytes, "N",
                "Bytes a direction holds in all, delay line included", 65536, int64_t{1} << 32)
        .option("max-frame-bytes", &max_frame, "N", "Larger frames are dropped (oversize)", 64,
                65536)
        .option("seconds", &options.seconds, "S", "Run time limit", 0.1, 86400)
        .option("seed", &seed, "N", "Seed of the random loss", 0, INT64_MAX)
        .flag("start-cut", &options.start_cut, "Start with the link cut (SIGUSR2 restores it)");
    const auto outcome = command_line.parse(argc, argv, std::cout, std::cerr);
    if (outcome != cli::CommandLine::Outcome::kRun)
        return outcome == cli::CommandLine::Outcome::kExitSuccess ? 0 : 2;
    std::string error;
    if (options.side_a.empty() || options.side_b.empty() || options.side_a == options.side_b)
        error = "--a and --b must name two different interfaces";
    else
        apply_pairs(pairs, options, error);
    if (!error.empty()) {
        std::cerr << "mdcast-linkshim: error: " << error << "\n";
        return 2;
    }
    for (auto* shape : {&options.a_to_b, &options.b_to_a}) {
        shape->held_bytes = static_cast<size_t>(held_bytes);
        shape->max_frame_bytes = static_cast<size_t>(max_frame);
    }
    options.seed = static_cast<uint64_t>(seed);
    return linkshim::run_shim(options);
}
