// Item lists and field templates from a file (the role of the seed's sample.xml).
//
// Two formats, chosen by the file name:
//   *.yaml / *.yml  a mapping with `items:`, a list whose entries are either an
//                   item name or {name: NAME, fields: {FIELD: VALUE, ...}}; the
//                   fields are dictionary names and their values are the item's
//                   static image (added to every refresh). See etc/samples/items.yaml.
//   anything else   one item name per line; blank lines and '#' comments ignored.
// Errors name the file and line.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "proto/field_dictionary.h"
#include "wire/common.pb.h"

namespace mdcast::tools {

struct SampleItem {
    std::string name;
    std::vector<std::pair<std::string, std::string>> fields;  // dictionary name, value text
    int line = 0;
};

// Throws std::runtime_error ("FILE:LINE: what") on unreadable or malformed input.
std::vector<SampleItem> load_sample_file(const std::string& path);

// Converts an item's field templates into `out` (appended), typed by the dictionary:
// INT and DOUBLE as numbers, DECIMAL exactly ("131.25" = 13125 x 10^-2), STRING as
// is, TIME as YYYY-MM-DD (midnight UTC). Throws std::runtime_error naming the file,
// line and field on an unknown field or a value of the wrong type.
void add_template_fields(const SampleItem& item, const proto::FieldDictionary& dictionary,
                         const std::string& file_name, wire::v1::FieldList& out);

// The field dictionary to use: `given`, else $MDCAST_DICTIONARY, /etc/mdcast/fields.dict,
// then the source tree's etc/fields.dict.
std::string find_dictionary(const std::string& given);

}  // namespace mdcast::tools
