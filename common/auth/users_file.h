// The users file: who may log in (salted password hashes) and what each user
// may subscribe to and post to (entitlements per user and per group). Loaded at start-up
// and on SIGHUP; a file with errors is refused as a whole with every error's
// file:line:column. Format: docs/access-control.md, example etc/users.yaml.example.
//
//   groups:
//     fx-desk:
//       allow:
//         - service: FX            # a name or a pattern ("*" = every service)
//           items: ["EUR*", "GBP*"]  # patterns; absent = every item
//   users:
//     alice:
//       password: "$pbkdf2-sha256$i=100000$...$..."
//       groups: [fx-desk]
//       allow:
//         - service: EQUITIES
//           items: ["*.L"]
//       post:                      # where she may post (contribute); absent = nowhere
//         - service: EQUITIES
//           items: ["VOD.L"]
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/auth/password_hash.h"

namespace mdcast::auth {

// One allow entry: items matching any of `items` on services matching `service`.
struct AccessRule {
    std::string service;             // glob
    std::vector<std::string> items;  // globs; never empty ("*" when the file says nothing)
    bool operator==(const AccessRule&) const = default;
};

// What one user may use: the union of their own rules and their groups' rules.
// Nothing allowed unless a rule says so. Posting is granted on its own (`post`
// rules): a right to read an item is not a right to contribute to it.
struct Entitlements {
    std::vector<AccessRule> rules;
    std::vector<AccessRule> post_rules;

    // The service shows in the user's directory: some rule names it.
    bool allows_service(std::string_view service) const;
    bool allows_item(std::string_view service, std::string_view item) const;
    bool allows_post(std::string_view service, std::string_view item) const;
    bool operator==(const Entitlements&) const = default;
};

struct UserEntry {
    std::string name;
    std::string password_text;  // as written in the file (identifies the hash)
    PasswordHash password;
    std::vector<std::string> groups;
    Entitlements entitlements;  // own and groups' rules, resolved
};

class UsersFile {
  public:
    // Reads and checks the whole file; throws config::ConfigErrors listing every
    // problem (file:line:column), also when the file cannot be read.
    static UsersFile load(const std::string& path);
    // The same from text; `file_name` only names it in errors.
    static UsersFile parse(const std::string& text, const std::string& file_name);

    // nullptr for an unknown user. Entries are shared, so a session may keep
    // its user's entry across a reload that replaces the file.
    std::shared_ptr<const UserEntry> find(std::string_view user) const;
    size_t size() const { return users_.size(); }
    size_t group_count() const { return group_count_; }

    // What changed from `before` to `after`, one line per kind of change
    // ("users added: a, b"); empty when nothing did.
    static std::vector<std::string> differences(const UsersFile& before, const UsersFile& after);

  private:
    std::map<std::string, std::shared_ptr<const UserEntry>, std::less<>> users_;
    size_t group_count_ = 0;
};

}  // namespace mdcast::auth
