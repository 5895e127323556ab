import Glibc
import Synchronization
import TestSupport
import Testing
import Transport
@testable import USBTransport

/// The process's one libusb context and event thread, with stand-ins for open devices (no device needed: the loop
/// runs real libusb event handling on the shared context).
@Suite(.serialized) struct EventLoopTests {
    /// A device stand-in: stops when told; records on which thread it was torn down.
    final class FakeClient: USBEventLoop.Client, Sendable {
        private let state = Mutex<(stopped: Bool, tornDown: Int, thread: String?)>((false, 0, nil))
        var isReadyForTeardown: Bool { state.withLock { $0.stopped } }
        var tearDowns: Int { state.withLock { $0.tornDown } }
        var tearDownThread: String? { state.withLock { $0.thread } }
        func stop() { state.withLock { $0.stopped = true } }
        func tearDown() {
            let name = currentThreadName()
            state.withLock { s in
                s.tornDown += 1
                s.thread = name
            }
        }
    }

    @Test func manyDevicesShareOneEventThreadThatEndsWithTheLast() async throws {
        let loop = try USBEventLoop.shared.get()
        try await waitUntil("no other test's loop is running") { !loop.isRunning }
        let before = loop.threadsStarted
        let clients = (0..<8).map { _ in FakeClient() }
        for client in clients { try loop.register(client) }
        #expect(loop.threadsStarted == before + 1, "eight devices, one event thread")
        #expect(loop.isRunning)
        #expect(loop.connectionCount == 8)

        // Stopped devices are torn down on the event thread, the others stay served.
        for client in clients.prefix(7) { client.stop() }
        loop.wake()
        try await waitUntil("seven torn down") { clients.prefix(7).allSatisfy { $0.tearDowns == 1 } }
        #expect(clients.prefix(7).allSatisfy { $0.tearDownThread == "tuneup-usb" })
        #expect(clients[7].tearDowns == 0)
        #expect(loop.isRunning)
        #expect(loop.connectionCount == 1)

        // The last one ends the thread; a later device starts exactly one new thread.
        clients[7].stop()
        loop.wake()
        try await waitUntil("the event thread ends with the last device") { !loop.isRunning }
        #expect(clients[7].tearDowns == 1)
        #expect(loop.connectionCount == 0)
        let again = FakeClient()
        try loop.register(again)
        #expect(loop.threadsStarted == before + 2)
        again.stop()
        loop.wake()
        try await waitUntil("the new thread ends too") { !loop.isRunning }
        #expect(again.tearDowns == 1)
    }
}

/// The calling thread's name (`/proc/thread-self/comm`).
private func currentThreadName() -> String? {
    let fd = open("/proc/thread-self/comm", O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes = [UInt8](repeating: 0, count: 64)
    let n = read(fd, &bytes, bytes.count)
    guard n > 0 else { return nil }
    var name = String(decoding: bytes[..<n], as: UTF8.self)
    while name.hasSuffix("\n") { name.removeLast() }
    return name
}
