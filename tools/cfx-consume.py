#!/usr/bin/python3
"""Receives messages from an AMQP 1.0 node and prints each as one JSON line (for the CFX tests and the cfx
benchmark): {"id": AMQP message-id, "body": the message body as text}. Each message is accepted, so the broker drops
it. It stops once it has seen EXPECT distinct message ids (duplicates are printed too), and fails (exit 1) when they
have not all arrived within TIMEOUT seconds.

    /usr/bin/python3 tools/cfx-consume.py URL ADDRESS EXPECT [TIMEOUT]
    /usr/bin/python3 tools/cfx-consume.py amqp://127.0.0.1:5672 /queue/cfx 256 60
"""
import json
import sys

from proton.handlers import MessagingHandler
from proton.reactor import Container, DurableSubscription


class Consume(MessagingHandler):
    def __init__(self, url, address, expect, timeout):
        super().__init__(prefetch=200, auto_accept=False)
        self.url, self.address, self.expect, self.timeout = url, address, expect, timeout
        self.ids = set()
        self.count = 0
        self.error = None
        self.connection = None

    def on_start(self, event):
        self.connection = event.container.connect(self.url, reconnect=False)
        # Durable, as the publisher declares the queue (RabbitMQ refuses an attach that differs).
        event.container.create_receiver(self.connection, self.address, options=DurableSubscription())
        event.container.schedule(self.timeout, self)
        if self.expect == 0:
            self.connection.close()

    def on_timer_task(self, event):
        if len(self.ids) < self.expect:
            self.error = "only %d of %d distinct messages within %s s" % (len(self.ids), self.expect, self.timeout)
            if self.connection is not None:
                self.connection.close()
            event.container.stop()

    def on_message(self, event):
        body = event.message.body
        if isinstance(body, (bytes, bytearray, memoryview)):
            body = bytes(body).decode("utf-8")
        sys.stdout.write(json.dumps({"id": event.message.id, "body": body}) + "\n")
        self.accept(event.delivery)
        self.count += 1
        self.ids.add(event.message.id)
        if len(self.ids) >= self.expect:
            event.connection.close()

    def on_connection_closed(self, event):
        if len(self.ids) < self.expect and self.error is None:
            condition = event.connection.remote_condition
            self.error = "the connection closed after %d of %d distinct messages%s" % (
                len(self.ids), self.expect, (": %s" % condition) if condition else "")
        event.container.stop()

    def on_link_error(self, event):
        self.error = "the broker refused %s: %s" % (self.address, event.link.remote_condition)
        event.connection.close()

    def on_transport_error(self, event):
        self.error = str(event.transport.condition)


def main():
    if len(sys.argv) not in (4, 5):
        sys.stderr.write("usage: cfx-consume.py URL ADDRESS EXPECT [TIMEOUT]\n")
        return 64
    handler = Consume(sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]) if len(sys.argv) == 5 else 60.0)
    Container(handler).run()
    sys.stdout.flush()
    if handler.error:
        sys.stderr.write("cfx-consume: %s\n" % handler.error)
        return 1
    sys.stderr.write("cfx-consume: %d messages, %d distinct\n" % (handler.count, len(handler.ids)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
