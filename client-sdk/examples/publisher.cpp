// A minimal mdcast publisher: one broadcast service whose items get an image
// and then ten stamped BID updates a second. The SDK re-publishes every image
// by itself after a reconnect.
//   mdcast-example-publisher HOST:PORT[,HOST:PORT...] SERVICE SECONDS ITEM...
#include <mdcast/dictionary.h>
#include <mdcast/publisher.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

class Logger : public mdcast::PublisherHandler {
  public:
    void on_connection(const mdcast::ConnectionEvent& c) override {
        std::printf("%s %s %s\n", std::string(mdcast::connection_state_name(c.state)).c_str(),
                    c.server.to_string().c_str(), c.text.c_str());
        std::fflush(stdout);
    }
};

int main(int argc, char** argv) {
    if (argc < 5) {
        std::fprintf(stderr, "usage: %s HOST:PORT[,...] SERVICE SECONDS ITEM...\n", argv[0]);
        return 2;
    }
    const auto dictionary = mdcast::Dictionary::load_installed();
    const uint32_t bid = dictionary->require_id("BID");
    mdcast::PublisherOptions options;
    options.distributors = mdcast::parse_server_list(argv[1]);
    Logger logger;
    mdcast::Publisher publisher(options, logger);
    publisher.add_service(argv[2], mdcast::ServiceMode::kBroadcast);
    std::vector<mdcast::PublishedItem> items;
    mdcast::FieldList fields;
    for (int i = 4; i < argc; ++i) {
        items.push_back(publisher.add_item(argv[2], argv[i]));
        publisher.refresh(items.back(), fields.add_decimal(bid, 10000, -2));
        fields.clear();
    }
    publisher.start();
    for (int tick = 1; tick <= std::atoi(argv[3]) * 10; ++tick) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        for (const auto& item : items) {
            fields.clear();
            publisher.update(item, fields.add_decimal(bid, 10000 + tick, -2));  // stamped now
        }
    }
    publisher.stop();
    return 0;
}
