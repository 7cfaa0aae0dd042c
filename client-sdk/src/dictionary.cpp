#include "mdcast/dictionary.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "proto/field_dictionary.h"

#ifndef MDCAST_INSTALLED_DICTIONARY
#define MDCAST_INSTALLED_DICTIONARY ""
#endif
#ifndef MDCAST_LIB_TO_DICTIONARY
#define MDCAST_LIB_TO_DICTIONARY ""
#endif

namespace mdcast {

struct Dictionary::Impl {
    proto::FieldDictionary fields;
};

namespace {

FieldKind kind_of(proto::FieldType type) {
    switch (type) {
        case proto::FieldType::kInt:
            return FieldKind::kInt;
        case proto::FieldType::kDecimal:
            return FieldKind::kDecimal;
        case proto::FieldType::kDouble:
            return FieldKind::kDouble;
        case proto::FieldType::kString:
            return FieldKind::kString;
        case proto::FieldType::kTime:
            return FieldKind::kTime;
    }
    return FieldKind::kBlank;
}

// The dictionary next to the library this code was loaded from
// (<libdir>/../share/mdcast/fields.dict), wherever it was installed.
std::string dictionary_beside_library() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&kind_of), &info) == 0 || !info.dli_fname) return {};
    const std::filesystem::path library(info.dli_fname);
    return (library.parent_path() / MDCAST_LIB_TO_DICTIONARY).lexically_normal().string();
}

bool readable(const std::string& path) {
    return !path.empty() && std::ifstream(path).good();
}

}  // namespace

Dictionary::Dictionary(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Dictionary::~Dictionary() = default;

std::shared_ptr<const Dictionary> Dictionary::load_file(const std::string& path) {
    auto impl = std::make_unique<Impl>(Impl{proto::FieldDictionary::load_file(path)});
    return std::shared_ptr<const Dictionary>(new Dictionary(std::move(impl)));
}

std::shared_ptr<const Dictionary> Dictionary::parse(std::string_view text,
                                                    const std::string& name) {
    auto impl = std::make_unique<Impl>(Impl{proto::FieldDictionary::parse(text, name)});
    return std::shared_ptr<const Dictionary>(new Dictionary(std::move(impl)));
}

// $MDCAST_DICTIONARY, else the file installed beside the library, else the
// one at the configured install prefix.
std::shared_ptr<const Dictionary> Dictionary::load_installed() {
    const char* env = std::getenv("MDCAST_DICTIONARY");
    if (env && *env) return load_file(env);
    for (const std::string& path :
         {dictionary_beside_library(), std::string(MDCAST_INSTALLED_DICTIONARY)}) {
        if (readable(path)) return load_file(path);
    }
    return nullptr;
}

std::optional<uint32_t> Dictionary::id(std::string_view name) const {
    const proto::FieldDefinition* def = impl_->fields.find(name);
    if (!def) return std::nullopt;
    return def->id;
}

uint32_t Dictionary::require_id(std::string_view name) const {
    const auto found = id(name);
    if (!found)
        throw std::invalid_argument("field '" + std::string(name) + "' is not in the dictionary");
    return *found;
}

std::string_view Dictionary::name(uint32_t id) const {
    const proto::FieldDefinition* def = impl_->fields.find(id);
    return def ? std::string_view(def->name) : std::string_view();
}

std::optional<FieldKind> Dictionary::kind(uint32_t id) const {
    const proto::FieldDefinition* def = impl_->fields.find(id);
    if (!def) return std::nullopt;
    return kind_of(def->type);
}

size_t Dictionary::size() const {
    return impl_->fields.fields().size();
}

}  // namespace mdcast
