// The daemons' YAML config files (server/server_config, distributor/distributor_config
// through common/config/config_schema), the first byte choosing the daemon. Bad input
// must end as config::ConfigErrors naming file:line; any other exception or a
// crash is a finding.
#include <string>

#include "common/config/config_schema.h"
#include "distributor/distributor_config.h"
#include "fuzz_input.h"
#include "server/server_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    mdcast::fuzz::FuzzInput input(data, size);
    const bool server = input.byte() & 1;
    const auto rest = input.rest();
    const std::string text(rest.begin(), rest.end());
    try {
        if (server) {
            (void)mdcast::server::server_schema().load_string(text, "fuzz.yaml");
        } else {
            (void)mdcast::distributor::distributor_schema().load_string(text, "fuzz.yaml");
        }
    } catch (const mdcast::config::ConfigErrors&) {
    }
    return 0;
}
