import LightX
import Synchronization
import TestSupport
import Testing
import Transport
@testable import USBTransport

/// A device answering feature reports in memory as a LightX headset does (the mailbox of docs/protocol.md §2.3), for
/// the link both back ends share.
final class FakeReportDevice: FeatureReportChannel, Sendable {
    struct State {
        var sets: [[UInt8]] = []
        var gets = 0
        var outgoing: [[UInt8]] = []
        var announced = false
        var failure: TransportError?
    }

    let state = Mutex(State())

    func setReport(_ report: [UInt8], id: UInt8) async throws {
        if let failure = state.withLock({ $0.failure }) { throw failure }
        state.withLock { $0.sets.append(report) }
    }

    func getReport(_ id: UInt8, length: Int) async throws -> [UInt8] {
        try state.withLock { s throws(TransportError) -> [UInt8] in
            if let failure = s.failure { throw failure }
            s.gets += 1
            guard let head = s.outgoing.first else { return HIDReports.nothingReady }
            if id == HIDReports.bufferReportID {
                s.outgoing.removeFirst()
                s.announced = false
                return HIDReports.bufferReport(head.dropFirst(Header.size))
            }
            let header = try! Header(decoding: head)
            if HIDReports.announcedBuffer(header) > 0 { s.announced = true } else { s.outgoing.removeFirst() }
            return HIDReports.headerReport(head, flag: HIDReports.packetFlag)
        }
    }
}

@Suite struct FeatureReportLinkTests {
    static func request() throws -> [UInt8] {
        RawPacketCodec.encode(try RequestStyle.usb.request(.write, .appBatteryLevel, argument: [1, 2, 3]))
    }

    static func reply(_ buffer: [UInt8]) -> [UInt8] {
        Header(source: .application, destination: .usb, opcode: .read, hasBuffer: true, command: .appBatteryLevel,
               param1: UInt32(buffer.count)).encoded + buffer
    }

    @Test func aRequestGoesOutAsF1ThenF0AndItsReplyComesBackWhole() async throws {
        let device = FakeReportDevice()
        let link = FeatureReportLink(peer: "hidraw:/dev/hidraw0", channel: device, pollInterval: nil, idlePollInterval: nil, logger: nil)
        let request = try Self.request()
        try await link.send(request)
        let sets = device.state.withLock { $0.sets }
        #expect(sets == (try LightXReports.setReports(for: request)).map(\.bytes))
        #expect(link.outstandingRequests == 1)
        let reply = Self.reply([7, 8, 9])
        device.state.withLock { $0.outgoing.append(reply) }
        #expect(try await link.receive() == reply)
        #expect(link.outstandingRequests == 0)
    }

    @Test func aGoneDeviceStaysGone() async throws {
        let device = FakeReportDevice()
        let link = FeatureReportLink(peer: "hidraw:/dev/hidraw0", channel: device, pollInterval: nil, idlePollInterval: nil, logger: nil)
        try await link.send(try Self.request())
        device.state.withLock { $0.failure = TransportError(.closed, "hidraw:/dev/hidraw0: device unplugged") }
        await #expect(throws: TransportError(.closed, "hidraw:/dev/hidraw0: device unplugged")) { try await link.receive() }
        device.state.withLock { $0.failure = nil }
        await #expect(throws: TransportError(.closed, "hidraw:/dev/hidraw0: device unplugged")) { try await link.send(try Self.request()) }
        #expect(device.state.withLock { $0.sets.count } == 2, "nothing more was sent")
    }

    @Test(.timeLimit(.minutes(1))) func closeAndCancellationEndAWaitingReceive() async throws {
        let device = FakeReportDevice()
        // No idle polling: a receive with nothing outstanding sleeps until something happens.
        let link = FeatureReportLink(peer: "hidraw:/dev/hidraw0", channel: device, pollInterval: nil, idlePollInterval: nil, logger: nil)
        let waiting = Task { try await link.receive() }
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        let closing = Task { try await link.receive() }
        #expect(link.close())
        #expect(!link.close(), "close is idempotent")
        await #expect(throws: TransportError(.closed, "hidraw:/dev/hidraw0 is closed")) { try await closing.value }
        #expect(device.state.withLock { $0.gets } == 0)
    }
}
