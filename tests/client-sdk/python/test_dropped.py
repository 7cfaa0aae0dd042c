"""A Consumer or Publisher dropped without stop() is freed and disconnects: the
distributor's and the server's /metrics count the connection gone. Half of each
kind have a callback that refers to the object itself (a cycle only
gc.collect() frees); the consumers' callbacks run on their own thread."""
import gc
import weakref

import harness
import mdcast

COUNT = 6


def connections(admin, name):
    return harness.metric(admin, name)


def wait_connections(admin, name, count):
    harness.wait_until(lambda: connections(admin, name) == count, 20,
                       f"{name} == {count} (now {connections(admin, name)})")


def dropped_publisher(address, cyclic):
    """Starts a publisher, waits for its login, drops it; returns a weak reference."""
    pub = mdcast.Publisher(address, on_connection=(lambda *a: pub.stats()) if cyclic else None)
    pub.start()
    pub.wait_connected(5)
    return weakref.ref(pub)


def dropped_consumer(address, cyclic):
    """Starts a consumer (callbacks on its thread), waits for its login, drops it."""
    consumer = mdcast.Consumer(address, on_update=(lambda e: consumer.stats()) if cyclic
                               else (lambda e: None))
    consumer.start()
    consumer.wait_connected(5)
    return weakref.ref(consumer)


def drop_all_and_check(admin, metric, drop, address):
    """Drops COUNT objects (half cyclic), collects, checks each freed and disconnected."""
    refs = [drop(address, cyclic=n % 2 == 0) for n in range(COUNT)]
    gc.collect()
    assert [r for r in refs if r() is not None] == []
    wait_connections(admin, metric, 0)


def test_dropped_publishers_disconnect(stack):
    admin = harness.admin_port(stack.distributor())
    drop_all_and_check(admin, "mdcast_distributor_publishers", dropped_publisher,
                       f"127.0.0.1:{stack.publisher_port}")


def test_dropped_consumers_disconnect(stack):
    stack.distributor()
    admin = harness.admin_port(stack.server(1))
    drop_all_and_check(admin, "mdcast_server_clients", dropped_consumer,
                       f"127.0.0.1:{stack.client_ports[1]}")


def test_kept_objects_stay_connected(stack):
    """The counts above fall because the objects were dropped, not by themselves."""
    admin_distributor = harness.admin_port(stack.distributor())
    admin_server = harness.admin_port(stack.server(1))
    with mdcast.Publisher(f"127.0.0.1:{stack.publisher_port}") as pub, \
            mdcast.Consumer(f"127.0.0.1:{stack.client_ports[1]}", on_update=lambda e: None) as consumer:
        pub.wait_connected(5)
        consumer.wait_connected(5)
        gc.collect()
        wait_connections(admin_distributor, "mdcast_distributor_publishers", 1)
        wait_connections(admin_server, "mdcast_server_clients", 1)
