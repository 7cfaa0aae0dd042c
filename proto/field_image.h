// An item's current image: the refresh merged with every update since, kept
// in a compact form so merging an update allocates nothing once the item's
// fields are known (a string field reuses its buffer). Converted to and from
// protobuf FieldLists only on cold paths (refreshes, image answers).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "proto/update_codec.h"
#include "wire/common.pb.h"

namespace mdcast::proto {

class BookImage;

class FieldImage {
  public:
    FieldImage();
    ~FieldImage();
    FieldImage(const FieldImage& other);
    FieldImage& operator=(const FieldImage& other);
    FieldImage(FieldImage&& other) noexcept;
    FieldImage& operator=(FieldImage&& other) noexcept;

    // 56 bytes a field: a cache holds millions of them.
    struct Slot {
        uint32_t id = 0;
        FieldKind kind = FieldKind::kNone;
        int32_t exponent = 0;  // kDecimal
        union {
            int64_t integer = 0;  // kInt, kTime, kDecimal mantissa
            double real;          // kDouble
        };
        std::string text;  // kString

        // The slot as a decoded field (text points into the slot).
        FieldEntry entry() const;
    };

    // Replaces the image with a refresh's fields.
    void assign(const ::mdcast::wire::v1::FieldList& fields);
    // Merges an update: a field present replaces the image's value for its id;
    // a new id is appended. The image keeps its field order.
    void apply(std::span<const FieldEntry> fields);
    // Writes the image (only `view`'s sorted ids, when given) as a FieldList.
    void to_field_list(::mdcast::wire::v1::FieldList& out,
                       const std::vector<uint32_t>* view = nullptr) const;

    const std::vector<Slot>& slots() const { return slots_; }
    const Slot* find(uint32_t id) const;
    size_t size() const { return slots_.size(); }
    bool empty() const { return slots_.empty(); }
    void clear();

    // A book's entries (proto/book_image.h, docs/books.md); null for a
    // field-list item. The fields above are then the book's summary.
    const BookImage* book() const { return book_.get(); }
    BookImage* book() { return book_.get(); }
    void set_book(std::unique_ptr<BookImage> book);

  private:
    Slot& slot_for(uint32_t id);
    std::vector<Slot> slots_;
    std::unique_ptr<BookImage> book_;
};

// Equal fields (ids, kinds and values), in any order: a redundancy switch
// sends nothing for an item whose standby image equals what subscribers hold.
// A book compares unequal (its entries are not compared): it gets a refresh.
bool same_values(const FieldImage& a, const FieldImage& b);

}  // namespace mdcast::proto
