#include "common/daemon/config_checks.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>

#include "common/auth/users_file.h"
#include "common/daemon/admin_http.h"
#include "common/net/host_port.h"
#include "proto/packet_signer.h"

namespace mdcast::config {

namespace {

bool is_ipv4_multicast(const std::string& text) {
    in_addr address{};
    if (inet_pton(AF_INET, text.c_str(), &address) != 1) return false;
    return (ntohl(address.s_addr) >> 28) == 0xE;
}

}  // namespace

void require_multicast_group(const std::string& key, const std::string& group, Problems& problems) {
    if (!is_ipv4_multicast(group)) {
        problems.push_back({key, "'" + group +
                                     "' is not an IPv4 multicast group (224.0.0.0 to "
                                     "239.255.255.255; 239.x.x.x for a private backbone)"});
    }
}

void require_multicast_groups(const std::string& key, const std::vector<std::string>& groups,
                              Problems& problems) {
    for (const auto& text : groups) {
        HostPort group;
        if (!parse_host_port(text, group)) {
            problems.push_back({key, "'" + text + "' is not GROUP:PORT"});
        } else if (!is_ipv4_multicast(group.host)) {
            problems.push_back(
                {key, "'" + text + "': '" + group.host + "' is not an IPv4 multicast group"});
        }
    }
}

void require_listener(const std::string& section, bool plaintext, bool tls, Problems& problems) {
    if (!plaintext && !tls) {
        problems.push_back({section + ".plaintext", "false, and " + section +
                                                        ".tls is false too: no listener is left, "
                                                        "nobody could connect"});
    }
}

void require_distinct_ports(const std::vector<BoundPort>& ports, Problems& problems) {
    std::map<uint32_t, std::string> taken;
    for (const auto& bound : ports) {
        if (!bound.enabled || bound.port == 0) continue;
        if (bound.port > 65535) {
            problems.push_back({bound.key, "port " + std::to_string(bound.port) +
                                               " (with the instance offset) "
                                               "is past 65535"});
            continue;
        }
        auto [other, inserted] = taken.emplace(bound.port, bound.key);
        if (!inserted) {
            problems.push_back({bound.key, "port " + std::to_string(bound.port) +
                                               " is also the port of " + other->second});
        }
    }
}

void require_ports_apart(const std::vector<BoundPort>& ours, const std::vector<BoundPort>& theirs,
                         const std::string& whose, Problems& problems) {
    for (const auto& mine : ours) {
        if (!mine.enabled || mine.port == 0) continue;
        for (const auto& other : theirs) {
            if (!other.enabled || other.port != mine.port) continue;
            problems.push_back({mine.key, "port " + std::to_string(mine.port) + " is also " +
                                              other.key + " of " + whose +
                                              ": the two cannot run on one host"});
        }
    }
}

void require_local_address(const std::string& key, const std::string& address, Problems& problems) {
    addrinfo hints{};
    hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (getaddrinfo(address.c_str(), "0", &hints, &found) != 0 || !found) {
        problems.push_back({key, "'" + address + "' is not an IP address"});
        return;
    }
    const int fd = socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const bool bound = fd >= 0 && bind(fd, found->ai_addr, found->ai_addrlen) == 0;
    const int error = errno;
    if (fd >= 0) close(fd);
    freeaddrinfo(found);
    if (!bound) {
        problems.push_back({key, "cannot bind " + address + " on this host (" +
                                     std::strerror(error) + "): not an address of its interfaces"});
    }
}

void check_web_dir(const std::string& key, const std::string& dir, Problems& problems) {
    if (dir.empty()) return;
    const std::string page = dir + "/index.html";
    if (!std::ifstream(page)) problems.push_back({key, "cannot read " + page});
}

void check_log_file(const std::string& key, const std::string& path, Problems& problems) {
    if (path.empty()) return;
    namespace fs = std::filesystem;
    std::error_code error;
    const fs::path file(path);
    if (fs::exists(file, error)) {
        if (fs::is_directory(file, error) || access(path.c_str(), W_OK) != 0)
            problems.push_back({key, path + " exists and cannot be written"});
        return;
    }
    fs::path dir = fs::absolute(file, error).parent_path();
    while (!fs::exists(dir, error) && dir != dir.parent_path()) dir = dir.parent_path();
    if (!fs::is_directory(dir, error) || access(dir.c_str(), W_OK | X_OK) != 0) {
        problems.push_back({key, "cannot make the log file's directory " +
                                     file.parent_path().string() + ": " + dir.string() +
                                     " is not a directory this user can write"});
    }
}

void check_tls_files(bool enabled, const TlsServerSettings& settings, Problems& problems) {
    if (!enabled) return;
    try {
        TlsContext::server(settings);
    } catch (const std::exception& error) {
        problems.push_back({settings.key_prefix + "cert_file", error.what()});
    }
}

void check_users_file(const std::string& key, const std::string& path, Problems& problems) {
    if (path.empty()) return;
    try {
        auth::UsersFile::load(path);
    } catch (const std::exception& error) {
        problems.push_back({key, std::string("does not load:\n") + error.what()});
    }
}

void check_admin_token(const std::string& key, const std::string& path, Problems& problems) {
    if (path.empty()) return;
    try {
        AdminHttp::load_token(path);
    } catch (const std::exception& error) {
        problems.push_back({key, error.what()});
    }
}

void check_key_files(const std::string& section, const std::string& key_file,
                     const std::string& previous_key_file, Problems& problems) {
    for (const auto& [key, path] : {std::pair{section + ".key_file", key_file},
                                    std::pair{section + ".previous_key_file", previous_key_file}}) {
        if (path.empty()) continue;
        try {
            PacketSigner::load_key(path);
        } catch (const std::exception& error) {
            problems.push_back({key, error.what()});
        }
    }
}

void check_descriptor_limit(const std::string& key, uint64_t connections, Problems& problems) {
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_max == RLIM_INFINITY) return;
    const uint64_t needed = connections + kReservedDescriptors;
    if (needed <= limit.rlim_max) return;
    problems.push_back(
        {key, std::to_string(connections) + " connections need " + std::to_string(needed) +
                  " descriptors (with " + std::to_string(kReservedDescriptors) +
                  " for the daemon itself), but the process may open only " +
                  std::to_string(limit.rlim_max) +
                  " (RLIMIT_NOFILE): raise LimitNOFILE= in the unit (ulimit -n) or lower " + key});
}

uint64_t raise_descriptor_limit(uint64_t connections) {
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
    const rlim_t wanted = connections + kReservedDescriptors;
    if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < wanted) {
        limit.rlim_cur =
            limit.rlim_max == RLIM_INFINITY ? wanted : std::min(wanted, limit.rlim_max);
        setrlimit(RLIMIT_NOFILE, &limit);
        getrlimit(RLIMIT_NOFILE, &limit);
    }
    return limit.rlim_cur;
}

}  // namespace mdcast::config
