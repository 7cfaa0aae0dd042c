// A minimal mdcast consumer: subscribes to items and prints every image,
// update and status, with BID by its dictionary name. Events are dispatched
// on this thread; the SDK fails over between the servers given.
//   mdcast-example-consumer HOST:PORT[,HOST:PORT...] SERVICE SECONDS ITEM...
#include <mdcast/consumer.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

class Printer : public mdcast::ConsumerHandler {
  public:
    void on_refresh(const mdcast::Event& e) override { print("image", e); }
    void on_update(const mdcast::Event& e) override { print("update", e); }
    void on_status(const mdcast::Event& e) override {
        std::printf("status %s %s: %s\n", e.item().c_str(),
                    std::string(mdcast::status_code_name(e.state().code)).c_str(),
                    e.state().text.c_str());
    }

  private:
    static void print(const char* what, const mdcast::Event& e) {
        const mdcast::FieldValue* bid = e.field("BID");
        std::printf("%s %s seq=%llu BID=%s\n", what, e.item().c_str(),
                    static_cast<unsigned long long>(e.sequence()),
                    bid ? bid->to_string().c_str() : "-");
    }
};

int main(int argc, char** argv) {
    if (argc < 5) {
        std::fprintf(stderr, "usage: %s HOST:PORT[,...] SERVICE SECONDS ITEM...\n", argv[0]);
        return 2;
    }
    mdcast::ConsumerOptions options;
    options.servers = mdcast::parse_server_list(argv[1]);
    options.dictionary = mdcast::Dictionary::load_installed();
    options.delivery = mdcast::ConsumerOptions::Delivery::kDispatch;
    Printer printer;
    mdcast::Consumer consumer(options, printer);
    consumer.subscribe(argv[2], std::vector<std::string>(argv + 4, argv + argc));
    consumer.start();
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(std::atoi(argv[3]));
    while (std::chrono::steady_clock::now() < end) {
        consumer.dispatch(std::chrono::milliseconds(100));
        std::fflush(stdout);
    }
    consumer.stop();
    return 0;
}
