import Glibc
import LightX
@_exported import TestSupport
@testable import USBGadget

/// The USB host (and the kernel's event queue) on the other end of a `FakeEndpointZero`: sends FunctionFS events
/// and SETUPs, sees how the gadget answered each, and speaks the LightX report contract on top. Non-blocking: waits
/// by polling with short sleeps.
struct FakeHost {
    let fd: Int32

    /// How the gadget answered a SETUP.
    enum Answer: Equatable {
        /// IN data stage: these bytes.
        case data([UInt8])
        /// read(ep0, 0): acknowledge of an OUT request without data, or the stall of an IN request.
        case readZero
        /// write(ep0, 0): the stall of an OUT request.
        case writeZero
        /// A data-stage read of this many bytes (the test then sends the data).
        case wantsData(Int)
    }

    static let bind: UInt8 = 0, unbind: UInt8 = 1, enable: UInt8 = 2, disable: UInt8 = 3, setupType: UInt8 = 4
    static let suspend: UInt8 = 5

    /// Queues one event record.
    func event(_ type: UInt8, _ setup: SetupPacket = SetupPacket(requestType: 0, request: 0, value: 0, index: 0, length: 0)) throws {
        try sendMessage(setup.bytes + [type, 0, 0, 0])
    }

    /// Queues several event records as one read (as the kernel can return them).
    func events(_ records: [(UInt8, SetupPacket)]) throws {
        try sendMessage(records.flatMap { $0.1.bytes + [$0.0, 0, 0, 0] })
    }

    /// Makes the gadget's next event read fail with EIDRM.
    func cancelledSetup() throws { try sendMessage([0xEE]) }

    func sendMessage(_ bytes: [UInt8]) throws {
        let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard n == bytes.count else { throw TestFailure("send to the fake ep0 failed: errno \(errno)") }
    }

    /// The next message from the gadget, or nil after `timeout` (a hang guard: it is for answers that must come, and
    /// the gadget's thread can be slow to run on a loaded machine).
    func nextMessage(timeout: Duration = .seconds(30)) async throws -> [UInt8]? {
        let deadline = ContinuousClock.now + timeout
        var buffer = [UInt8](repeating: 0, count: 1024)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 { return Array(buffer[0..<n]) }
            guard ContinuousClock.now < deadline else { return nil }
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    /// Sends `setup` as a SETUP event and returns the gadget's answer.
    func request(_ setup: SetupPacket) async throws -> Answer {
        try event(Self.setupType, setup)
        return try await answer()
    }

    /// The gadget's answer to the last SETUP.
    func answer() async throws -> Answer {
        guard let m = try await nextMessage() else { throw TestFailure("the gadget did not answer") }
        switch m.first {
        case UInt8(ascii: "W"): return .data(Array(m.dropFirst()))
        case UInt8(ascii: "A"): return .readZero
        case UInt8(ascii: "Z"): return .writeZero
        case UInt8(ascii: "R") where m.count == 3: return .wantsData(Int(m[1]) << 8 | Int(m[2]))
        default: throw TestFailure("unexpected message from the fake ep0: \(m)")
        }
    }

    /// Whether the gadget sent nothing since its last answer: the answer to a GET_DESCRIPTOR(report) sent now must be
    /// the very next message (ep0 answers come in order, one per SETUP), so a stray message shows up in front of it.
    /// The round trip also means the gadget has handled everything sent before it.
    func nothingElseAnswered() async throws -> Bool {
        let getReportDescriptor = SetupPacket(requestType: 0x81, request: 0x06, value: 0x2200, index: 0,
                                              length: UInt16(HIDDescriptors.reportDescriptor.count))
        try event(Self.setupType, getReportDescriptor)
        return try await nextMessage() == [UInt8(ascii: "W")] + HIDDescriptors.reportDescriptor
    }

    // MARK: - HID requests

    static func setReportSetup(_ id: UInt8, length: Int) -> SetupPacket {
        SetupPacket(requestType: 0x21, request: 0x09, value: 0x0300 | UInt16(id), index: 0, length: UInt16(length))
    }

    static func getReportSetup(_ id: UInt8, length: Int) -> SetupPacket {
        SetupPacket(requestType: 0xA1, request: 0x01, value: 0x0300 | UInt16(id), index: 0, length: UInt16(length))
    }

    /// SET_REPORT `id` with `data` (ID byte included). Returns false when stalled.
    func setReport(_ id: UInt8, _ data: [UInt8]) async throws -> Bool {
        switch try await request(Self.setReportSetup(id, length: data.count)) {
        case .wantsData(let n):
            guard n == data.count else { throw TestFailure("the gadget wants \(n) bytes, not \(data.count)") }
            try sendMessage(data)
            return true
        case .writeZero:
            return false
        case let other:
            throw TestFailure("unexpected answer to SET_REPORT \(id): \(other)")
        }
    }

    /// GET_REPORT `id` of `length` bytes; nil when stalled.
    func getReport(_ id: UInt8, length: Int) async throws -> [UInt8]? {
        switch try await request(Self.getReportSetup(id, length: length)) {
        case .data(let d): return d
        case .readZero: return nil
        case let other: throw TestFailure("unexpected answer to GET_REPORT \(id): \(other)")
        }
    }

    // MARK: - The LightX contract, host side

    /// Sends one raw LightX packet: SET 0xF1 with the buffer (when the header has one), then SET 0xF0.
    func sendPacket(_ raw: [UInt8]) async throws {
        let header = Array(raw.prefix(12))
        if HIDReports.announcedBuffer(try Header(decoding: header)) > 0 {
            let buffer = Array(raw.dropFirst(12))
            guard try await setReport(0xF1, [0xF1] + buffer + [UInt8](repeating: 0, count: 256 - buffer.count)) else {
                throw TestFailure("SET_REPORT 0xF1 stalled")
            }
        }
        guard try await setReport(0xF0, [0xF0, 0x00] + header) else { throw TestFailure("SET_REPORT 0xF0 stalled") }
    }

    /// One poll: GET 0xF0, then GET 0xF1 when the header has a buffer. nil when nothing is ready.
    func poll() async throws -> [UInt8]? {
        guard let f0 = try await getReport(0xF0, length: 14) else { throw TestFailure("GET_REPORT 0xF0 stalled") }
        guard f0.count == 14, f0[0] == 0xF0 else { throw TestFailure("bad 0xF0 report \(f0)") }
        guard f0[1] == 1 else { return nil }
        let header = Array(f0[2...])
        let announced = HIDReports.announcedBuffer(try Header(decoding: header))
        guard announced > 0 else { return header }
        guard let f1 = try await getReport(0xF1, length: 257) else { throw TestFailure("GET_REPORT 0xF1 stalled") }
        return header + f1.dropFirst().prefix(announced)
    }

    /// Polls until a packet is ready (or `timeout`, a hang guard).
    func receivePacket(timeout: Duration = .seconds(30)) async throws -> [UInt8] {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let p = try await poll() { return p }
            try await Task.sleep(for: .milliseconds(1))
        }
        throw TestFailure("no packet from the gadget within \(timeout)")
    }
}
