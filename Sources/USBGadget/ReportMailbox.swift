import LightX

/// The device side of "LightX over HID feature reports" (`HIDReports`, docs/protocol.md §2.3): a pure state machine,
/// no I/O.
///
/// Host → device: SET_REPORT 0xF1 stores a buffer (`[0xF1, 256 bytes]`); SET_REPORT 0xF0 (`[0xF0, 0x00, header]`)
/// completes a packet: the 12-byte header plus, when its buffer flag is set and param1 > 0, the first param1 bytes
/// of the last 0xF1 received (none when no 0xF1 arrived since the last reset: the packet is then short, which
/// `RawPacketCodec` accepts; param1 above 256 cannot be assembled: the header is dropped).
///
/// Device → host: a FIFO of raw packets (header + buffer). GET_REPORT 0xF0 answers `[0xF0, 0x00, 12 × 0x00]` when
/// it is empty, else `[0xF0, 0x01, head's header]`; a head without a buffer (flag clear or param1 == 0) is removed
/// by that answer, a head with one becomes "announced". GET_REPORT 0xF1 answers `[0xF1, the announced head's buffer
/// zero-padded to 256]` and removes the head; with no announced head it is a stall.
///
/// Removal happens in `commit(_:)`, after the data stage reached the host, so a GET that fails on the wire does not
/// lose a packet. Every packet gets a serial number; an effect names the packet it was computed for and does nothing
/// unless that packet is still the head (so an effect applied twice, or after a `reset()`, is void). `reset()`
/// (BIND, ENABLE, the end of a host attachment) empties everything.
public struct ReportMailbox: Sendable {
    /// What a delivered GET_REPORT answer does to the FIFO.
    public enum Effect: Sendable, Hashable {
        /// Nothing (the FIFO was empty).
        case none
        /// The head (packet `serial`, which has a buffer) is now announced.
        case announceHead(serial: UInt64)
        /// The head (packet `serial`) leaves the FIFO.
        case removeHead(serial: UInt64)
    }

    /// The answer to a GET_REPORT: the full report (the caller truncates to wLength) and its effect once delivered.
    public struct Answer: Sendable, Hashable {
        /// The report bytes, ID first.
        public var report: [UInt8]
        /// What delivering it does.
        public var effect: Effect
    }

    /// Packets the FIFO holds at most; `enqueue` refuses more.
    public let capacity: Int
    /// The data of the last SET_REPORT 0xF1 (256 bytes), nil when none arrived since the last reset.
    public private(set) var lastBuffer: [UInt8]?
    /// Whether the FIFO head has been announced by a GET_REPORT 0xF0 (its buffer is next, through 0xF1).
    public private(set) var isHeadAnnounced = false
    private var outgoing: [(serial: UInt64, bytes: [UInt8])] = []
    private var head = 0
    private var nextSerial: UInt64 = 1

    /// An empty mailbox holding at most `capacity` (at least 1) outgoing packets.
    public init(capacity: Int = 256) {
        self.capacity = max(1, capacity)
    }

    /// The packets waiting for the host.
    public var outgoingCount: Int { outgoing.count - head }
    /// Whether the host has fetched everything.
    public var isDrained: Bool { outgoingCount == 0 }
    /// The packet at the head of the FIFO.
    public var headPacket: [UInt8]? { head < outgoing.count ? outgoing[head].bytes : nil }
    /// The serial number of the head packet.
    public var headSerial: UInt64? { head < outgoing.count ? outgoing[head].serial : nil }

    /// Forgets everything (stored buffer, FIFO, announcement).
    public mutating func reset() {
        lastBuffer = nil
        isHeadAnnounced = false
        outgoing = []
        head = 0
    }

    // MARK: - Device → host

    /// Queues one raw packet (header + buffer) for the host. Returns false, queuing nothing, when the FIFO is full.
    /// The caller validates the packet (see `USBGadget.validateOutgoing`).
    public mutating func enqueue(_ packet: [UInt8]) -> Bool {
        guard outgoingCount < capacity else { return false }
        outgoing.append((nextSerial, packet))
        nextSerial &+= 1
        return true
    }

    /// The answer to GET_REPORT `reportID`; nil means stall (an unknown report, or 0xF1 with no announced head).
    public func answerGet(reportID: UInt8) -> Answer? {
        switch reportID {
        case HIDReports.headerReportID:
            guard let packet = headPacket, let serial = headSerial else {
                return Answer(report: HIDReports.nothingReady, effect: .none)
            }
            let report = HIDReports.headerReport(packet, flag: HIDReports.packetFlag)
            let effect: Effect = Self.announcesBuffer(report.dropFirst(2)) ? .announceHead(serial: serial) : .removeHead(serial: serial)
            return Answer(report: report, effect: effect)
        case HIDReports.bufferReportID:
            guard isHeadAnnounced, let packet = headPacket, let serial = headSerial else { return nil }
            return Answer(report: HIDReports.bufferReport(packet.dropFirst(Header.size)), effect: .removeHead(serial: serial))
        default:
            return nil
        }
    }

    /// Applies the effect of an answer the host received; void unless the packet it names is still the head.
    public mutating func commit(_ effect: Effect) {
        switch effect {
        case .none:
            break
        case .announceHead(let serial):
            guard headSerial == serial else { return }
            isHeadAnnounced = true
        case .removeHead(let serial):
            guard headSerial == serial else { return }
            outgoing[head] = (0, [])
            head += 1
            isHeadAnnounced = false
            if head == outgoing.count {
                outgoing.removeAll(keepingCapacity: true)
                head = 0
            } else if head > 64, head * 2 > outgoing.count {
                outgoing.removeFirst(head)
                head = 0
            }
        }
    }

    // MARK: - Host → device

    /// Takes the data stage of a SET_REPORT (`data[0]` is the report ID as sent). A 0xF1 is stored (zero-padded to
    /// 256) and returns nil; a 0xF0 returns the assembled raw packet, or nil when it cannot be assembled (shorter
    /// than 14 bytes, or a buffer flag with param1 > 256). Other IDs return nil.
    public mutating func receiveSet(reportID: UInt8, data: [UInt8]) -> [UInt8]? {
        switch reportID {
        case HIDReports.bufferReportID:
            let payload = Array(data.dropFirst().prefix(HIDReports.maximumBuffer))
            lastBuffer = payload + [UInt8](repeating: 0, count: HIDReports.maximumBuffer - payload.count)
            return nil
        case HIDReports.headerReportID:
            guard data.count >= HIDReports.headerReportSize, let header = try? Header(decoding: data.dropFirst(2)) else { return nil }
            let length = HIDReports.announcedBuffer(header)
            guard length > 0 else { return header.encoded }
            guard length <= HIDReports.maximumBuffer else { return nil }
            let buffer = lastBuffer ?? []
            return header.encoded + buffer.prefix(length)
        default:
            return nil
        }
    }

    /// Whether the 12 header bytes at the start of `bytes` announce a buffer (`HIDReports.announcedBuffer` > 0).
    private static func announcesBuffer<C: Collection>(_ bytes: C) -> Bool where C.Element == UInt8 {
        guard let header = try? Header(decoding: bytes) else { return false }
        return HIDReports.announcedBuffer(header) > 0
    }
}

/// What the ep0 thread does with one SETUP: the decision, made without I/O (see `EP0Responder`).
public enum EP0Action: Sendable, Hashable {
    /// IN data stage: `write(ep0, bytes)` (already at most wLength bytes); after it succeeds apply `effect`.
    case write([UInt8], effect: ReportMailbox.Effect)
    /// OUT data stage: `read(ep0, buf, length)`; the bytes are a SET_REPORT of `reportID` for the mailbox.
    case readReport(length: Int, reportID: UInt8)
    /// OUT without data (SET_IDLE): acknowledge with `read(ep0, NULL, 0)`.
    case acknowledge
    /// Refuse: a zero-length call in the opposite direction of the request (expect EL2HLT).
    case stall
}

/// The ep0 system call an action becomes (the answer-direction rules of docs/protocol.md §2.3).
public enum EP0Call: Sendable, Hashable {
    /// `write(ep0, data, count)`.
    case write(count: Int)
    /// `read(ep0, buf, count)`.
    case read(count: Int)
}

/// Decides the answer to every SETUP the LightX HID function can get.
public enum EP0Responder {
    /// The answer to `setup`, given the mailbox and whether an incoming packet can be taken now.
    ///
    /// - GET_DESCRIPTOR (0x81/0x06) of the report descriptor (0x22) or the HID descriptor (0x21) on interface 0 →
    ///   the descriptor, truncated to wLength.
    /// - SET_IDLE (0x21/0x0A) with wLength 0 → acknowledge.
    /// - SET_REPORT feature 0xF0 with wLength 14, or 0xF1 with wLength 1...257 → read the data stage (0xF0 is
    ///   stalled instead while `canTakePacket` is false: the device's queue is full).
    /// - GET_REPORT feature 0xF0, or 0xF1 with an announced head, wLength ≥ 1 → the report truncated to wLength.
    /// - Anything else (other report IDs or types, wIndex ≠ 0, SET_PROTOCOL, GET_IDLE, standard requests) → stall.
    public static func decide(_ setup: SetupPacket, mailbox: ReportMailbox, canTakePacket: Bool = true) -> EP0Action {
        typealias C = SetupPacket.Code
        guard setup.index == 0 else { return .stall }
        let high = UInt8(setup.value >> 8)
        let id = UInt8(setup.value & 0xFF)
        let length = Int(setup.length)
        switch (setup.requestType, setup.request) {
        case (C.standardInterfaceIn, C.getDescriptor):
            guard length > 0 else { return .stall }
            switch high {
            case C.reportDescriptorType: return .write(Array(HIDDescriptors.reportDescriptor.prefix(length)), effect: .none)
            case C.hidDescriptorType: return .write(Array(HIDDescriptors.hidDescriptor.prefix(length)), effect: .none)
            default: return .stall
            }
        case (C.classInterfaceOut, C.setIdle):
            return length == 0 ? .acknowledge : .stall
        case (C.classInterfaceOut, C.setReport):
            guard high == C.featureReport else { return .stall }
            switch id {
            case HIDReports.headerReportID:
                guard length == HIDReports.headerReportSize, canTakePacket else { return .stall }
                return .readReport(length: length, reportID: id)
            case HIDReports.bufferReportID:
                guard (1...HIDReports.bufferReportSize).contains(length) else { return .stall }
                return .readReport(length: length, reportID: id)
            default:
                return .stall
            }
        case (C.classInterfaceIn, C.getReport):
            guard high == C.featureReport, length > 0, let answer = mailbox.answerGet(reportID: id) else { return .stall }
            return .write(Array(answer.report.prefix(length)), effect: answer.effect)
        default:
            return .stall
        }
    }

    /// The system call that carries out `action` for `setup`: IN → write, OUT with data → read wLength, OUT without
    /// data → read 0; a stall is the opposite direction with 0 bytes (read for IN, write for OUT).
    public static func call(for action: EP0Action, _ setup: SetupPacket) -> EP0Call {
        switch action {
        case .write(let bytes, _): return .write(count: bytes.count)
        case .readReport(let length, _): return .read(count: length)
        case .acknowledge: return .read(count: 0)
        case .stall: return setup.isDeviceToHost ? .read(count: 0) : .write(count: 0)
        }
    }
}
