import Foundation
import Testing
import LightX
import Transport
@testable import Headset

@Suite struct SessionTests {
    /// For replies that must arrive: a timeout no loaded machine exceeds (a lost reply still times out, just later).
    let patient = LightXSession.Options(timeout: .seconds(10), retransmissions: 2)
    /// For tests that need timeouts to happen (silence, retransmission): short, so the test stays quick.
    let fast = LightXSession.Options(timeout: .milliseconds(150), retransmissions: 2)

    @Test func repliesAreMatchedByParam0EvenOutOfOrder() async throws {
        // The device holds the first two requests and answers them in reverse order.
        let held = HeldRequests()
        let (device, host) = FakeDevice.start { request, index in
            if index < 1 { await held.add(request); return [] }
            guard let first = await held.take() else { return [] }  // no crash if a retransmission came (it cannot: below)
            return [reply(request, .ok, u32(2)), reply(first, .ok, u32(1))]
        }
        // On a clock that never moves nothing times out, so nothing is retransmitted however slow the machine.
        let session = LightXSession(transport: host, options: patient, clock: ManualClock())
        async let a = session.request(AppSettings.batteryLevel.readRequest())
        // The device must hold `a` before `b` is sent (a fixed sleep would not ensure that on a loaded machine).
        try await waitUntil("the device received the first request") { device.requests.count == 1 }
        async let b = session.request(AppSettings.ancEnabled.readRequest())
        let (ra, rb) = try await (a, b)
        #expect(ra.command == .appBatteryLevel && Array(ra.buffer) == u32(1))
        #expect(rb.command == .appANCEnable && Array(rb.buffer) == u32(2))
        #expect(await session.statistics.retransmissions == 0)
        await session.close()
        await device.stop()
    }

    @Test func instantRepliesAreNeverLost() async throws {
        // A reply can reach the session before the sending request resumes; it must wait for it, not be dropped.
        let (device, host) = FakeDevice.start { request, index in [reply(request, .ok, u32(UInt32(index)))] }
        // A lost reply would still end in a timeout; 10 s only keeps a slow, loaded machine from looking like one.
        let session = LightXSession(transport: host, options: .init(timeout: .seconds(10), retransmissions: 0))
        for i in 0..<500 {
            let r = try await session.request(AppSettings.batteryLevel.readRequest())
            #expect(Array(r.buffer) == u32(UInt32(i)))
        }
        let stats = await session.statistics
        #expect(stats.unexpectedReplies == 0 && stats.timeouts == 0)
        await session.close()
        await device.stop()
    }

    @Test func pendingStatusKeepsTheRequestWaitingForTheFinalReply() async throws {
        let (device, host) = FakeDevice.start { request, _ in
            let pending = reply(request, .pending)
            return [pending, pending]
        }
        // Pending at once, then the final reply only after more than one timeout has passed on the session's clock.
        let clock = ManualClock()
        let session = LightXSession(
            transport: host, options: .init(timeout: .seconds(2), retransmissions: 2, pendingTimeout: .seconds(60)), clock: clock)
        let request = try BootRequests.commit(sectors: 4)
        let answer = Task { try await session.request(request) }
        // The Pending reply replaced the 2 s timer with the pending timeout.
        try await waitUntil("the Pending reply was taken") { device.requests.count == 1 && clock.nextDeadline == .seconds(60) }
        clock.advance(by: .milliseconds(2500))
        try await device.send(reply(request, .ok))
        let r = try await answer.value
        #expect(r.status == .ok)
        #expect(device.requests.count == 1, "a Pending reply must not cause a retransmission")
        await session.close()
        await device.stop()
    }

    @Test func acceptedRequestThatNeverFinishesTimesOutWithoutRetransmission() async throws {
        let (device, host) = FakeDevice.start { request, _ in [reply(request, .pending)] }
        let clock = ManualClock()
        let session = LightXSession(
            transport: host, options: .init(timeout: .seconds(2), retransmissions: 2, pendingTimeout: .milliseconds(2500)), clock: clock)
        let request = Task { try await session.request(try BootRequests.commit(sectors: 1)) }
        try await waitUntil("the Pending reply was taken") { device.requests.count == 1 && clock.nextDeadline == .milliseconds(2500) }
        clock.advance(by: .milliseconds(2500))
        await #expect(throws: HeadsetError(.timeout, "")) { try await request.value }
        #expect(device.requests.count == 1)
        await session.close()
        await device.stop()
    }

    @Test func silentDeviceTimesOutAfterRetransmissions() async throws {
        let (device, host) = FakeDevice.start { _, _ in [] }
        let clock = ManualClock()
        let session = LightXSession(transport: host, options: fast, clock: clock)
        let request = Task { try await session.request(AppSettings.batteryLevel.readRequest()) }
        for attempt in 1...3 {
            let due = Duration.milliseconds(150 * attempt)
            try await waitUntil("send \(attempt) and its timer") { device.requests.count == attempt && clock.nextDeadline == due }
            clock.advance(by: .milliseconds(150))
        }
        await #expect(throws: HeadsetError(.timeout, "")) { try await request.value }
        #expect(device.requests.count == 3, "one send and two retransmissions")
        let stats = await session.statistics
        #expect(stats.timeouts == 3 && stats.retransmissions == 2)
        await session.close()
        await device.stop()
    }

    /// Reads the battery level on a fresh session whose 2 s timeout runs on `clock`: once the first send's timer is
    /// pending, the clock moves past it (one timeout, so one retransmission); returns the reply.
    static func batteryLevelAfterOneTimeout(_ session: LightXSession, _ device: FakeDevice, _ clock: ManualClock) async throws -> Packet {
        let answer = Task { try await session.request(AppSettings.batteryLevel.readRequest()) }
        try await waitUntil("the first send and its timer") { device.requests.count == 1 && clock.nextDeadline == .seconds(2) }
        clock.advance(by: .seconds(2))
        return try await answer.value
    }

    @Test func lostReplyIsRecoveredByRetransmission() async throws {
        let (device, host) = FakeDevice.start { request, index in
            index == 0 ? [] : [reply(request, .ok, u32(77))]
        }
        // The first attempt times out on the session's clock; the reply to the retransmission comes before the next.
        let clock = ManualClock()
        let session = LightXSession(transport: host, options: .init(timeout: .seconds(2), retransmissions: 2), clock: clock)
        let r = try await Self.batteryLevelAfterOneTimeout(session, device, clock)
        #expect(Array(r.buffer) == u32(77))
        #expect(device.requests.count == 2)
        await session.close()
        await device.stop()
    }

    @Test func lateDuplicateAfterRetransmissionIsNotTakenForTheNextAnswer() async throws {
        // Answers every request, but the first answer only after the host has retransmitted:
        // the host then receives two answers to its first request (values 1 and 2). The device holds the first answer
        // until the retransmission arrives (a fixed delay raced the host's timer on a loaded machine).
        let held = HeldRequests()
        let (device, host) = FakeDevice.start { request, index in
            if index == 0 { await held.add(request); return [] }
            if index == 1, let first = await held.take() { return [reply(first, .ok, u32(1)), reply(request, .ok, u32(2))] }
            return [reply(request, .ok, u32(UInt32(index + 1)))]
        }
        // The first attempt times out on the session's clock; nothing else does (the clock moves only here).
        let clock = ManualClock()
        let session = LightXSession(transport: host, options: .init(timeout: .seconds(2), retransmissions: 2), clock: clock)
        let first = try await Self.batteryLevelAfterOneTimeout(session, device, clock)
        // The retransmission's key waits out its quiet period (one timeout) before the next request goes out.
        let secondAnswer = Task { try await session.request(AppSettings.batteryLevel.readRequest()) }
        try await waitUntil("the next request sent or waiting out the quiet period") {
            device.requests.count == 3 || clock.nextDeadline == .seconds(4)
        }
        if device.requests.count < 3 { clock.advance(by: .seconds(2)) }
        let second = try await secondAnswer.value
        #expect(Array(first.buffer) == u32(1) || Array(first.buffer) == u32(2))
        #expect(Array(second.buffer) == u32(3), "the second request must get its own answer, not the duplicate")
        #expect(await session.statistics.unexpectedReplies == 1)
        await session.close()
        await device.stop()
    }

    @Test func pushesGoToSubscribersNotToWaiters() async throws {
        let (device, host) = FakeDevice.start { request, _ in
            [SPPFraming.encode(try! Packet.push(.appPushANCEnable, payload: u32(1))), reply(request, .ok, u32(0))]
        }
        let session = LightXSession(transport: host, options: patient)
        let pushes = await session.pushes()
        let r = try await session.request(AppSettings.ancEnabled.readRequest())
        #expect(Array(r.buffer) == u32(0))
        var iterator = pushes.makeAsyncIterator()
        let push = await iterator.next()
        #expect(push.map(HeadsetPush.init) == .ancEnabled(true))
        await session.close()
        #expect(await iterator.next() == nil, "the push stream finishes when the session closes")
        await device.stop()
    }

    @Test func garbageAndCorruptFramesAroundRepliesAreSkipped() async throws {
        let (device, host) = FakeDevice.start { request, _ in
            var corrupt = reply(request, .ok, u32(5))
            corrupt[20] ^= 0x40
            return [[0x00, 0xFF, 0x5A, 0x13, 0xFF], corrupt, [0xAA, 0xBB], reply(request, .ok, u32(9))]
        }
        let session = LightXSession(transport: host, options: patient)
        let r = try await session.request(AppSettings.batteryLevel.readRequest())
        #expect(Array(r.buffer) == u32(9))
        let stats = await session.statistics
        #expect(stats.decoder.checksumErrors >= 1 && stats.decoder.discardedBytes > 0)
        await session.close()
        await device.stop()
    }

    @Test func packetsFromForeignModulesAreIgnored() async throws {
        let (device, host) = FakeDevice.start { request, _ in
            var foreign = try! Packet.reply(to: request, buffer: u32(1))
            foreign.header.source = .dsp
            return [SPPFraming.encode(foreign), reply(request, .ok, u32(2))]
        }
        let session = LightXSession(transport: host, options: patient)
        let r = try await session.request(AppSettings.batteryLevel.readRequest())
        #expect(Array(r.buffer) == u32(2))
        #expect(await session.statistics.ignoredPackets == 1)
        await session.close()
        await device.stop()
    }

    @Test func disconnectFailsWaitingRequestsAndReportsAnEvent() async throws {
        let (device, host) = FakeDevice.start { _, _ in [] }
        let session = LightXSession(transport: host, options: .init(timeout: .seconds(10)))
        let events = await session.events()
        let r = Task { try await session.request(AppSettings.batteryLevel.readRequest()) }
        try await waitUntil("the request reached the device") { !device.requests.isEmpty }
        await device.stop()
        await #expect(throws: HeadsetError(.disconnected, "")) { try await r.value }
        var iterator = events.makeAsyncIterator()
        if case let .disconnected(error)? = await iterator.next() {
            #expect(error.code == .disconnected)
        } else {
            Issue.record("no disconnected event")
        }
        await #expect(throws: HeadsetError(.disconnected, "")) {
            try await session.request(AppSettings.batteryLevel.readRequest())
        }
    }

    @Test func closedSessionRefusesRequests() async throws {
        let (device, host) = FakeDevice.start { request, _ in [reply(request)] }
        let session = LightXSession(transport: host, options: fast)
        await session.close()
        await #expect(throws: HeadsetError(.deviceNotConnected, "")) {
            try await session.request(AppSettings.batteryLevel.readRequest())
        }
        await device.stop()
    }

    @Test func cancellingARequestThrowsCancellation() async throws {
        let (device, host) = FakeDevice.start { _, _ in [] }
        let session = LightXSession(transport: host, options: .init(timeout: .seconds(10)))
        let task = Task { try await session.request(AppSettings.batteryLevel.readRequest()) }
        try await waitUntil("the request reached the device") { !device.requests.isEmpty }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        await session.close()
        await device.stop()
    }

    /// A request queued behind another with the same param0, and one waiting out the quiet period after a timeout,
    /// end as soon as they are cancelled: they do not wait for the key or the quiet period (both 10 s here).
    @Test func cancelledWaitsForTheSameParam0EndAtOnce() async throws {
        let (device, host) = FakeDevice.start { _, _ in [] }
        let session = LightXSession(transport: host, options: .init(timeout: .seconds(10), retransmissions: 0), clock: ManualClock())
        let first = Task { try await session.request(AppSettings.batteryLevel.readRequest()) }
        try await waitUntil("the first request reached the device") { device.requests.count == 1 }
        let queued = Task { try await session.request(AppSettings.batteryLevel.readRequest()) }
        try await waitUntil("the second request is queued") { await session.queuedRequests == 1 }
        // Ended by the cancellation alone: on this session's clock, which never moves, the key's wait would never end.
        queued.cancel()
        await #expect(throws: CancellationError.self) { try await queued.value }
        #expect(await session.queuedRequests == 0)

        // The first one cancelled too: its param0 is now quiet for the timeout (10 s).
        first.cancel()
        await #expect(throws: CancellationError.self) { try await first.value }
        let quiet = Task { try await session.request(AppSettings.batteryLevel.readRequest()) }
        try await waitUntil("the third request waits out the quiet period") { await session.quietKeys == 1 }
        quiet.cancel()
        await #expect(throws: CancellationError.self) { try await quiet.value }
        #expect(device.requests.count == 1, "nothing else was sent")
        await session.close()
        await device.stop()
    }

    @Test func usbFramingUsesRawPacketsAndUSBHeaderStyle() async throws {
        let (device, host) = FakeDevice.start(framing: .packets) { request, _ in
            [RawPacketCodec.encode(try! Packet.reply(to: request, buffer: u32(42), swapModules: false))]
        }
        let session = LightXSession(transport: host, options: patient)
        #expect(session.style == .usb)
        let r = try await session.request(AppSettings.batteryLevel.readRequest(.usb))
        #expect(Array(r.buffer) == u32(42))
        let sent = device.requests[0]
        #expect(sent.header.source == .usb && sent.header.type == .nonblocking)
        await session.close()
        await device.stop()
    }
}

actor HeldRequests {
    private var items: [Packet] = []
    func add(_ p: Packet) { items.append(p) }
    func take() -> Packet? { items.isEmpty ? nil : items.removeFirst() }
}
