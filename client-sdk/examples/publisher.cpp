// Publishes items on a broadcast service: an image with BID and ASK by name,
// then ten updates a second for SECONDS. After a reconnect the SDK sends every
// item's current image again by itself.
//   mdcast-example-publisher HOST:PORT[,HOST:PORT...] SERVICE SECONDS ITEM...
#include <mdcast/publisher.h>

#include <chrono>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

class Logger : public mdcast::PublisherHandler {  // called on the SDK's I/O thread
    void on_connection(const mdcast::ConnectionEvent& c) override {
        std::cout << c.state << ' ' << c.server << ' ' << c.text << std::endl;
    }
};

int main(int argc, char** argv) {
    if (argc < 5) {
        std::cerr << "usage: " << argv[0] << " HOST:PORT[,HOST:PORT...] SERVICE SECONDS ITEM...\n";
        return 2;
    }
    mdcast::PublisherOptions options;
    options.distributors = mdcast::parse_server_list(argv[1]);  // tried in this order
    Logger logger;
    mdcast::Publisher publisher(options, logger);
    publisher.add_service(argv[2], mdcast::ServiceMode::kBroadcast);
    mdcast::FieldList fields(mdcast::Dictionary::load_installed());  // fields by name
    std::vector<mdcast::PublishedItem> items;
    for (int i = 4; i < argc; ++i) {
        items.push_back(publisher.add_item(argv[2], argv[i]));
        fields.clear();
        fields.add_decimal("BID", 10000, -2).add_decimal("ASK", 10010, -2);  // 100.00, 100.10
        publisher.refresh(items.back(), fields);
    }
    publisher.start();
    for (int tick = 1; tick <= std::stoi(argv[3]) * 10; ++tick) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        for (const auto& item : items) {
            fields.clear();
            fields.add_decimal("BID", 10000 + tick, -2).add_decimal("ASK", 10010 + tick, -2);
            publisher.update(item, fields);  // stamped with CLOCK_REALTIME now
        }
    }
    publisher.stop();
}
