// LSEG's Dictionary domain on the WebSocket/JSON port (docs/websocket.md): mdcast's field
// dictionary as LSEG's field definitions (`RWFFld`) and its enumerated types (`RWFEnum`,
// empty: mdcast has no enum fields), in the JSON of LSEG's WebSocket API: a Refresh whose
// payload is a Series of Elements, its Summary (Type, DictionaryId, Version) in the first
// part, one entry per field (NAME, FID, RIPPLETO, TYPE, LENGTH, RWFTYPE, RWFLEN and, from
// verbosity Normal, ENUMLENGTH and LONGNAME), split into parts of at most `part_bytes` of
// JSON, `"Complete": false` on all but the last, as LSEG splits a large dictionary.
//
// Each answer (name, verbosity, streaming or not) is encoded once, on its first request,
// with "ID":0, and kept: a request costs one restamped copy of each part (ws_streams.h's
// restamp_stream_id), never an encoding. At most 2 x 4 x 2 answers are kept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "proto/field_dictionary.h"

namespace mdcast::server {

enum class DictionaryKind { kFields, kEnums };  // RWFFld, RWFEnum
// The kind a Key.Name asks for; nullopt for a name this server does not serve.
std::optional<DictionaryKind> dictionary_kind(std::string_view name);

// LSEG's dictionary verbosities (Key.Filter): Info (the Summary only), Minimal, Normal
// and Verbose (all there is: the same entries as Normal, mdcast has no descriptions).
enum class DictionaryVerbosity : uint32_t { kInfo = 0, kMinimal = 3, kNormal = 7, kVerbose = 15 };
// The verbosity a Filter asks for: the largest one whose bits it holds (1 and 0: Info).
DictionaryVerbosity dictionary_verbosity(uint32_t filter);

// The largest JSON payload of one part (one WebSocket message) by default
// (clients.ws_dictionary_part_bytes).
inline constexpr size_t kDictionaryPartBytes = 16 * 1024;

class JsonDictionary {
  public:
    // `dictionary` must outlive this (the server's JsonEncoder owns it).
    explicit JsonDictionary(const proto::FieldDictionary& dictionary,
                            size_t part_bytes = kDictionaryPartBytes);

    // The Refresh, as complete text frames with "ID":0 (restamp each with the request's
    // ID), in order; the last one is Complete. Encoded on the first call, kept after it.
    const std::vector<std::string>& refresh(DictionaryKind kind, DictionaryVerbosity verbosity,
                                            bool streaming);
    // A dictionary request refused on its ID (Stream Closed, Data Suspect): `code` is
    // LSEG's (NotFound for a name this server does not serve, LimitReached).
    static std::string refused(int64_t id, const std::string& name, std::string_view code,
                               std::string_view text);

    // The Version both dictionaries carry: changes when the field dictionary does.
    const std::string& version() const { return version_; }
    // Answers encoded so far (each once, however many clients asked).
    uint64_t encodings() const { return encodings_; }

  private:
    std::vector<std::string> encode(DictionaryKind kind, DictionaryVerbosity verbosity,
                                    bool streaming) const;
    std::string summary(DictionaryKind kind) const;
    std::vector<std::string> entries(DictionaryKind kind, DictionaryVerbosity verbosity) const;

    const proto::FieldDictionary& dictionary_;
    size_t part_bytes_;
    std::string version_;
    std::map<std::tuple<DictionaryKind, DictionaryVerbosity, bool>, std::vector<std::string>>
        answers_;
    uint64_t encodings_ = 0;
};

}  // namespace mdcast::server
