#include "common/net/loss_injector.h"

namespace mdcast {

std::string LossSettings::describe() const {
    std::string text = "rate " + std::to_string(rate);
    if (burst_every > 0 && burst_length > 0) {
        text +=
            ", bursts of " + std::to_string(burst_length) + " every " + std::to_string(burst_every);
    }
    if (duplicate_rate > 0) text += ", duplicate " + std::to_string(duplicate_rate);
    if (reorder_rate > 0) text += ", reorder " + std::to_string(reorder_rate);
    return text + ", seed " + std::to_string(seed);
}

bool LossInjector::drop() {
    if (!settings_.active()) return false;
    const uint64_t position = seen_++;
    bool lose = settings_.burst_every > 0 && settings_.burst_length > 0 &&
                position % settings_.burst_every >= settings_.burst_every - settings_.burst_length;
    if (!lose && settings_.rate > 0) lose = uniform_(random_) < settings_.rate;
    if (lose) ++dropped_;
    return lose;
}

}  // namespace mdcast
