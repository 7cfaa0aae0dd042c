// Every protobuf message a daemon or the SDK decodes from a peer (proto/wire/*.proto),
// the first byte choosing which. What parses must serialise and parse back to the
// same bytes; field lists also go through what the server and tools do with them
// (the cache image merge, text and JSON rendering).
#include <google/protobuf/stubs/common.h>

#include <cstdlib>
#include <memory>
#include <vector>

#include "fuzz_input.h"
#include "proto/field_image.h"
#include "proto/field_values.h"
#include "proto/post_checks.h"
#include "wire/backbone.pb.h"
#include "wire/client.pb.h"
#include "wire/common.pb.h"
#include "wire/post.pb.h"
#include "wire/publisher.pb.h"
#include "wire/session.pb.h"

namespace wire = mdcast::wire::v1;
using google::protobuf::MessageLite;

namespace {

std::vector<std::unique_ptr<MessageLite>> prototypes() {
    std::vector<std::unique_ptr<MessageLite>> all;
    all.push_back(std::make_unique<wire::LoginRequest>());
    all.push_back(std::make_unique<wire::LoginResponse>());
    all.push_back(std::make_unique<wire::Ping>());
    all.push_back(std::make_unique<wire::Pong>());
    all.push_back(std::make_unique<wire::Close>());
    all.push_back(std::make_unique<wire::ServiceAnnounce>());
    all.push_back(std::make_unique<wire::ServiceAnnounceResponse>());
    all.push_back(std::make_unique<wire::ItemRegister>());
    all.push_back(std::make_unique<wire::ItemRegistered>());
    all.push_back(std::make_unique<wire::Refresh>());
    all.push_back(std::make_unique<wire::Update>());
    all.push_back(std::make_unique<wire::ItemStatus>());
    all.push_back(std::make_unique<wire::Directory>());
    all.push_back(std::make_unique<wire::DirectoryRequest>());
    all.push_back(std::make_unique<wire::Subscribe>());
    all.push_back(std::make_unique<wire::Unsubscribe>());
    all.push_back(std::make_unique<wire::Heartbeat>());
    all.push_back(std::make_unique<wire::ImageRequest>());
    all.push_back(std::make_unique<wire::DirectoryQuery>());
    all.push_back(std::make_unique<wire::Nak>());
    all.push_back(std::make_unique<wire::RttProbe>());
    all.push_back(std::make_unique<wire::Interest>());
    // Appended, so the seed corpus's selector bytes keep naming the same messages.
    all.push_back(std::make_unique<wire::Post>());
    all.push_back(std::make_unique<wire::PostAck>());
    return all;
}

// What the server's cache and the tools do with a field list.
void use_fields(const wire::FieldList& fields) {
    mdcast::proto::FieldImage image, update;
    image.assign(fields);
    update.assign(fields);
    std::vector<mdcast::proto::FieldEntry> entries;
    for (const auto& slot : update.slots()) entries.push_back(slot.entry());
    image.apply(entries);
    wire::FieldList back;
    image.to_field_list(back);
    for (const auto& value : fields.fields()) {
        (void)mdcast::proto::format_value(value);
        (void)mdcast::proto::format_value_json(value);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static google::protobuf::LogSilencer quiet;
    static const auto all = prototypes();
    mdcast::fuzz::FuzzInput input(data, size);
    const MessageLite& prototype = *all[input.byte() % all.size()];
    const auto body = input.rest();
    std::unique_ptr<MessageLite> message(prototype.New());
    if (!message->ParseFromArray(body.data(), static_cast<int>(body.size()))) return 0;
    const std::string once = message->SerializeAsString();
    std::unique_ptr<MessageLite> again(prototype.New());
    if (!again->ParseFromString(once) || again->SerializeAsString() != once) std::abort();
    if (const auto* refresh = dynamic_cast<const wire::Refresh*>(message.get()))
        use_fields(refresh->fields());
    if (const auto* post = dynamic_cast<const wire::Post*>(message.get())) {
        (void)mdcast::proto::check_post(*post);
        use_fields(post->fields());
    }
    return 0;
}
