#include "common/auth/users_file.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>

#include "common/auth/glob_match.h"
#include "common/config/config_schema.h"
#include "proto/limits.h"

namespace mdcast::auth {

namespace {

constexpr size_t kMaxNameBytes = proto::kMaxUserNameBytes;

// Walks the YAML document and collects every error instead of stopping at the first.
class Parser {
  public:
    explicit Parser(const std::string& file) : file_(file) {}

    void error(const YAML::Node& at, const std::string& key, const std::string& message) {
        error(at.Mark(), key, message);
    }
    void error(const YAML::Mark& mark, const std::string& key, const std::string& message) {
        config::ConfigError e;
        e.file = file_;
        if (!mark.is_null()) {
            e.line = mark.line + 1;
            e.column = mark.column + 1;
        }
        e.key = key;
        e.message = message;
        errors_.push_back(std::move(e));
    }
    bool failed() const { return !errors_.empty(); }
    [[noreturn]] void raise() { throw config::ConfigErrors(std::move(errors_)); }

    // Checks that `node` is a mapping whose keys are all in `allowed`.
    bool mapping(const YAML::Node& node, const std::string& key,
                 std::initializer_list<std::string_view> allowed) {
        if (!node.IsMap()) {
            error(node, key, "expected a mapping");
            return false;
        }
        if (allowed.size() == 0) return true;  // names chosen by the file (users, groups)
        for (const auto& entry : node) {
            const std::string name = entry.first.Scalar();
            if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
                std::string list;
                for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
                error(entry.first, key.empty() ? name : key + "." + name,
                      "unknown key (expected one of: " + list + ")");
            }
        }
        return true;
    }

    bool name(const YAML::Node& node, const std::string& key, std::string& out) {
        if (!node.IsScalar() || node.Scalar().empty() || node.Scalar().size() > kMaxNameBytes) {
            error(
                node, key,
                "expected a non-empty name of at most " + std::to_string(kMaxNameBytes) + " bytes");
            return false;
        }
        out = node.Scalar();
        return true;
    }

    // A list of names, or a single name.
    std::vector<std::string> names(const YAML::Node& node, const std::string& key) {
        std::vector<std::string> out;
        if (node.IsScalar()) {
            if (name(node, key, out.emplace_back())) return out;
            return {};
        }
        if (!node.IsSequence()) {
            error(node, key, "expected a name or a list of names");
            return out;
        }
        for (const auto& element : node) {
            std::string value;
            if (name(element, key, value)) out.push_back(std::move(value));
        }
        return out;
    }

    std::vector<AccessRule> rules(const YAML::Node& node, const std::string& key) {
        std::vector<AccessRule> out;
        if (!node.IsSequence()) {
            error(node, key, "expected a list of {service: NAME, items: [PATTERN, ...]}");
            return out;
        }
        for (const auto& element : node) {
            if (!mapping(element, key, {"service", "items"})) continue;
            AccessRule rule;
            if (!element["service"]) {
                error(element, key,
                      "an allow or post entry needs a service (a name or pattern; \"*\" for all)");
                continue;
            }
            if (!name(element["service"], key + ".service", rule.service)) continue;
            rule.items = element["items"] ? names(element["items"], key + ".items")
                                          : std::vector<std::string>{"*"};
            if (rule.items.empty()) {
                error(element, key + ".items",
                      "an empty item list allows nothing; leave the entry out");
                continue;
            }
            out.push_back(std::move(rule));
        }
        return out;
    }

  private:
    const std::string& file_;
    std::vector<config::ConfigError> errors_;
};

void add_rules(std::vector<AccessRule>& into, const std::vector<AccessRule>& rules) {
    for (const auto& rule : rules) {
        if (std::find(into.begin(), into.end(), rule) == into.end()) into.push_back(rule);
    }
}

void add_entitlements(Entitlements& into, const Entitlements& from) {
    add_rules(into.rules, from.rules);
    add_rules(into.post_rules, from.post_rules);
}

// The `allow` and `post` rule lists of a user's or group's entry at `key`.
Entitlements parse_entitlements(Parser& p, const YAML::Node& entry, const std::string& key) {
    Entitlements out;
    if (entry["allow"]) out.rules = p.rules(entry["allow"], key + ".allow");
    if (entry["post"]) out.post_rules = p.rules(entry["post"], key + ".post");
    return out;
}

bool rules_allow(const std::vector<AccessRule>& rules, std::string_view service,
                 std::string_view item) {
    for (const auto& rule : rules) {
        if (!glob_match(rule.service, service)) continue;
        for (const auto& pattern : rule.items) {
            if (glob_match(pattern, item)) return true;
        }
    }
    return false;
}

std::map<std::string, Entitlements> parse_groups(Parser& p, const YAML::Node& groups) {
    std::map<std::string, Entitlements> out;
    if (!groups) return out;
    if (!p.mapping(groups, "groups", {})) return out;
    for (const auto& entry : groups) {
        const std::string key = "groups." + entry.first.Scalar();
        std::string group;
        if (!p.name(entry.first, key, group) || !p.mapping(entry.second, key, {"allow", "post"}))
            continue;
        out[group] = parse_entitlements(p, entry.second, key);
    }
    return out;
}

}  // namespace

bool Entitlements::allows_service(std::string_view service) const {
    return std::any_of(rules.begin(), rules.end(),
                       [&](const AccessRule& r) { return glob_match(r.service, service); });
}

bool Entitlements::allows_item(std::string_view service, std::string_view item) const {
    return rules_allow(rules, service, item);
}

bool Entitlements::allows_post(std::string_view service, std::string_view item) const {
    return rules_allow(post_rules, service, item);
}

UsersFile UsersFile::load(const std::string& path) {
    return parse(config::detail::SchemaCore::read_file(path), path);
}

UsersFile UsersFile::parse(const std::string& text, const std::string& file_name) {
    Parser p(file_name);
    YAML::Node root;
    try {
        root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
        p.error(e.mark, "", "YAML syntax error: " + e.msg);
        p.raise();
    }
    if (!root.IsMap()) {
        p.error(root, "", "expected a mapping with users: and groups:");
        p.raise();
    }
    p.mapping(root, "", {"users", "groups"});
    const auto groups = parse_groups(p, root["groups"]);
    UsersFile out;
    out.group_count_ = groups.size();
    const YAML::Node users = root["users"];
    if (!users) p.error(root, "users", "missing: the users who may log in");
    if (users && p.mapping(users, "users", {})) {
        for (const auto& entry : users) {
            const std::string key = "users." + entry.first.Scalar();
            auto user = std::make_shared<UserEntry>();
            if (!p.name(entry.first, key, user->name) ||
                !p.mapping(entry.second, key, {"password", "groups", "allow", "post"})) {
                continue;
            }
            const YAML::Node password = entry.second["password"];
            std::string why;
            if (!password || !password.IsScalar()) {
                p.error(password ? password : entry.first, key + ".password",
                        "missing: a hash made with mdcast-passwd");
            } else if (auto hash = PasswordHash::parse(password.Scalar(), why)) {
                user->password = std::move(*hash);
                user->password_text = password.Scalar();
            } else {
                p.error(password, key + ".password", why);
            }
            if (entry.second["groups"])
                user->groups = p.names(entry.second["groups"], key + ".groups");
            for (const auto& group : user->groups) {
                const auto found = groups.find(group);
                if (found == groups.end()) {
                    p.error(entry.second["groups"], key + ".groups", "no such group: " + group);
                } else {
                    add_entitlements(user->entitlements, found->second);
                }
            }
            add_entitlements(user->entitlements, parse_entitlements(p, entry.second, key));
            out.users_[user->name] = std::move(user);
        }
    }
    if (p.failed()) p.raise();
    return out;
}

std::shared_ptr<const UserEntry> UsersFile::find(std::string_view user) const {
    const auto it = users_.find(user);
    return it == users_.end() ? nullptr : it->second;
}

std::vector<std::string> UsersFile::differences(const UsersFile& before, const UsersFile& after) {
    std::vector<std::string> added, removed, passwords, entitlements;
    for (const auto& [name, user] : after.users_) {
        const auto old = before.find(name);
        if (!old) {
            added.push_back(name);
            continue;
        }
        if (old->password_text != user->password_text) passwords.push_back(name);
        if (!(old->entitlements == user->entitlements)) entitlements.push_back(name);
    }
    for (const auto& [name, user] : before.users_) {
        if (!after.find(name)) removed.push_back(name);
    }
    std::vector<std::string> out;
    const auto line = [&out](const char* what, const std::vector<std::string>& names) {
        if (names.empty()) return;
        std::string text = what;
        for (size_t i = 0; i < names.size(); ++i) text += (i ? ", " : ": ") + names[i];
        out.push_back(std::move(text));
    };
    line("users added", added);
    line("users removed", removed);
    line("passwords changed", passwords);
    line("entitlements changed", entitlements);
    return out;
}

}  // namespace mdcast::auth
