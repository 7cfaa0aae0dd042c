// The field dictionary: field id <-> name <-> type, from the text format of
// etc/fields.dict (installed as <prefix>/share/mdcast/fields.dict).
//
// Immutable once loaded, so one dictionary may be shared by any number of
// consumers, publishers and threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "mdcast/export.h"
#include "mdcast/types.h"

namespace mdcast {

class MDCAST_API Dictionary {
  public:
    // Throw std::runtime_error naming file:line on any error.
    static std::shared_ptr<const Dictionary> load_file(const std::string& path);
    static std::shared_ptr<const Dictionary> parse(std::string_view text,
                                                   const std::string& name = "<text>");
    // The dictionary installed with the library, if it is there (nullptr otherwise).
    static std::shared_ptr<const Dictionary> load_installed();

    ~Dictionary();
    Dictionary(const Dictionary&) = delete;
    Dictionary& operator=(const Dictionary&) = delete;

    std::optional<uint32_t> id(std::string_view name) const;
    // The id, or std::invalid_argument naming the unknown field.
    uint32_t require_id(std::string_view name) const;
    // Empty when the id is not in the dictionary.
    std::string_view name(uint32_t id) const;
    // The kind a field's values have; nullopt for unknown ids.
    std::optional<FieldKind> kind(uint32_t id) const;
    size_t size() const;

  private:
    struct Impl;
    explicit Dictionary(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace mdcast
