// Tests for tools/bench/bench_book.h: depths spread over MIN..MAX, every
// update 1-3 actions of every kind, and a book that keeps its depth and stays
// the window image() describes, however many updates it takes.
#include "tools/bench/bench_book.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "proto/book_image.h"
#include "proto/limits.h"

using mdcast::BookChanges;
using mdcast::tools::BenchBook;
namespace proto = mdcast::proto;

namespace {

proto::BookImage applied(const BookChanges& changes) {
    proto::BookImage book(mdcast::wire::v1::DOMAIN_MARKET_BY_PRICE);
    std::string why;
    REQUIRE(book.apply(changes.bytes(), proto::kMaxMapEntries, why) ==
            proto::BookImage::Result::kApplied);
    return book;
}

std::vector<proto::BookKey> keys(const proto::BookImage& book) {
    std::vector<proto::BookKey> out;
    for (const auto& [key, fields] : book.entries()) out.push_back(key);
    return out;
}

}  // namespace

TEST_CASE("bench book depths are spread over MIN..MAX by item", "[bench_book]") {
    const BenchBook books(100, 10, 50);
    CHECK(books.levels(0) == 10);
    CHECK(books.levels(40) == 50);
    CHECK(books.levels(41) == 10);
    for (uint64_t i = 0; i < 100; ++i) {
        CHECK(books.levels(i) >= 10);
        CHECK(books.levels(i) <= 50);
    }
}

TEST_CASE("a bench book's image holds its depth in price levels", "[bench_book]") {
    BenchBook books(3, 2, 4);
    BookChanges image;
    for (uint64_t i = 0; i < 3; ++i) {
        books.image(i, image);
        CHECK(image.keys_by_price());
        CHECK(applied(image).size() == books.levels(i));
    }
}

TEST_CASE("bench book updates keep the depth and follow the window", "[bench_book]") {
    BenchBook books(2, 5, 6);
    BookChanges changes;
    books.image(1, changes);
    proto::BookImage book = applied(changes);
    std::set<size_t> sizes;
    std::string why;
    for (uint64_t seq = 1; seq <= 300; ++seq) {
        books.update(1, seq, changes);
        sizes.insert(changes.size());
        REQUIRE(book.apply(changes.bytes(), proto::kMaxMapEntries, why) ==
                proto::BookImage::Result::kApplied);
        REQUIRE(book.size() == books.levels(1));
    }
    CHECK(sizes == std::set<size_t>{1, 2, 3});
    books.image(1, changes);  // the window as it now stands
    CHECK(keys(book) == keys(applied(changes)));
}

TEST_CASE("bench books of different items never share a price", "[bench_book]") {
    BenchBook books(2, 50, 50);
    BookChanges changes;
    for (uint64_t seq = 1; seq <= 200; ++seq) books.update(0, seq, changes);
    books.image(0, changes);
    const auto first = keys(applied(changes));
    books.image(1, changes);
    const auto second = keys(applied(changes));
    CHECK(first.back() < second.front());
}
