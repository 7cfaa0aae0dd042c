// The users file (common/auth/users_file: users, PBKDF2 hashes, groups, entitlements)
// and the field dictionary (proto/field_dictionary, etc/fields.dict), the first
// byte choosing which. Bad input must end as config::ConfigErrors or, for the
// dictionary, std::runtime_error naming the line; a crash or any other exception
// is a finding. An accepted users file is also asked about its users.
#include <stdexcept>
#include <string>

#include "common/auth/users_file.h"
#include "common/config/config_schema.h"
#include "fuzz_input.h"
#include "proto/field_dictionary.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    mdcast::fuzz::FuzzInput input(data, size);
    const bool users = input.byte() & 1;
    const auto rest = input.rest();
    const std::string text(rest.begin(), rest.end());
    if (!users) {
        try {
            (void)mdcast::proto::FieldDictionary::parse(text, "fuzz.dict");
        } catch (const std::runtime_error&) {
        }
        return 0;
    }
    try {
        const auto file = mdcast::auth::UsersFile::parse(text, "fuzz-users.yaml");
        if (const auto user = file.find("alice")) {
            (void)user->entitlements.allows_service("IDN");
            (void)user->entitlements.allows_item("IDN", "VOD.L");
        }
        (void)mdcast::auth::UsersFile::differences(file, mdcast::auth::UsersFile{});
    } catch (const mdcast::config::ConfigErrors&) {
    }
    return 0;
}
