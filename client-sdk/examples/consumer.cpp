// Subscribes to items with a BID/ASK view and prints them by name, failing
// over between the servers given. Runs for SECONDS, then stops.
//   mdcast-example-consumer HOST:PORT[,HOST:PORT...] SERVICE SECONDS ITEM...
#include <mdcast/consumer.h>

#include <chrono>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

class Printer : public mdcast::ConsumerHandler {  // called on the SDK's I/O thread
    void on_refresh(const mdcast::Event& e) override { print("image", e); }
    void on_update(const mdcast::Event& e) override { print("update", e); }
    void on_status(const mdcast::Event& e) override {  // e.g. open/suspect CONNECTION_LOST
        std::cout << "status " << e.item() << ' ' << e.state() << std::endl;
    }
    void on_connection(const mdcast::Event& e) override {  // up, down (failover), ...
        std::cout << "connection " << e.connection().state << ' ' << e.connection().server << ' '
                  << e.connection().text << std::endl;
    }
    static void print(const char* what, const mdcast::Event& e) {
        std::cout << what << ' ' << e.item() << " seq=" << e.sequence()
                  << " BID=" << e.text("BID").value_or("-")
                  << " ASK=" << e.text("ASK").value_or("-") << std::endl;
    }
};

int main(int argc, char** argv) {
    if (argc < 5) {
        std::cerr << "usage: " << argv[0] << " HOST:PORT[,HOST:PORT...] SERVICE SECONDS ITEM...\n";
        return 2;
    }
    mdcast::ConsumerOptions options;
    options.servers = mdcast::parse_server_list(argv[1]);  // tried in this order
    Printer printer;
    mdcast::Consumer consumer(options, printer);
    const std::vector<std::string> items(argv + 4, argv + argc);
    consumer.subscribe_batch(argv[2], items, {.field_names = {"BID", "ASK"}});
    consumer.start();  // connects, logs in, subscribes; re-subscribes after a failover
    std::this_thread::sleep_for(std::chrono::seconds(std::stoi(argv[3])));
    consumer.stop();
}
