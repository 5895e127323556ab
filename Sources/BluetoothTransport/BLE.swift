import CBluetooth
import Glibc
import Logging
import Support
import Synchronization
import Transport

/// A Bluetooth LE device address: six bytes and whether it is a public or a random address. In address syntax
/// `ble:AA:BB:CC:DD:EE:FF` (public) or `ble:AA:BB:CC:DD:EE:FF:random`.
public struct BLEAddress: Sendable, Hashable, CustomStringConvertible {
    public let address: BluetoothAddress
    public let isRandom: Bool

    public init(_ address: BluetoothAddress, random: Bool = false) {
        self.address = address
        self.isRandom = random
    }

    /// Parses `AA:BB:CC:DD:EE:FF[:public|:random]` (the text after `ble:`); nil for anything else.
    public init?(parsing text: String) {
        var parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        var random = false
        if parts.count == 7 {
            switch parts.removeLast().lowercased() {
            case "random": random = true
            case "public": random = false
            default: return nil
            }
        }
        guard parts.count == 6, let address = BluetoothAddress(parts.joined(separator: ":")) else { return nil }
        self.init(address, random: random)
    }

    public var description: String { "ble:\(address)" + (isRandom ? ":random" : "") }

    /// The kernel's address type (`BDADDR_LE_PUBLIC` 1, `BDADDR_LE_RANDOM` 2).
    var kernelType: UInt8 { isRandom ? 2 : 1 }
}

/// A `struct sockaddr_l2` for the ATT fixed channel (CID 4) of an LE link. Internal.
struct L2CAPLESocketAddress {
    var address: bdaddr_t
    var type: UInt8
    /// The ATT channel.
    static let attCID: UInt16 = 4
    static let length = socklen_t(MemoryLayout<sockaddr_l2>.stride)

    init(address: bdaddr_t, type: UInt8) {
        self.address = address
        self.type = type
    }

    init?(_ raw: UnsafeRawBufferPointer) {
        guard raw.count >= MemoryLayout<sockaddr_l2>.size, Int32(raw.loadUnaligned(as: sa_family_t.self)) == AF_BLUETOOTH else { return nil }
        let l2 = raw.loadUnaligned(as: sockaddr_l2.self)
        address = l2.l2_bdaddr
        type = l2.l2_bdaddr_type
    }

    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        var l2 = sockaddr_l2()
        l2.l2_family = sa_family_t(AF_BLUETOOTH)
        l2.l2_bdaddr = address
        l2.l2_cid = Self.attCID.littleEndian
        l2.l2_bdaddr_type = type
        var bytes = [UInt8](repeating: 0, count: Int(Self.length))
        bytes.withUnsafeMutableBytes { $0.storeBytes(of: l2, as: sockaddr_l2.self) }
        return bytes.withUnsafeBytes { body($0.baseAddress!.assumingMemoryBound(to: sockaddr.self), Self.length) }
    }
}

/// ATT bearers over the kernel's L2CAP LE sockets (`AF_BLUETOOTH`, `SOCK_SEQPACKET`, `BTPROTO_L2CAP`, CID 4): the
/// links of `ble:` addresses. Each is a non-blocking `FileDescriptorTransport` with framing `.packets` (one ATT PDU
/// per packet), so a Wearable session on it speaks real ATT.
public enum BLEConnection {
    /// Connects to the ATT channel of `address`.
    ///
    /// - Parameters:
    ///   - adapter: `hciN` or the adapter's address; nil lets the kernel pick (the first adapter that is up).
    ///   - timeout: limit for the connection (the kernel waits for the device's advertising, then connects).
    /// - Throws: `TransportError` "cannot connect to ble:…: REASON": `.unsupported` (no AF_BLUETOOTH: "no Bluetooth
    ///   support in this kernel"), `.notFound` (no adapter, adapter down, device not advertising or out of range),
    ///   `.timedOut`, `.connectionRefused`, `.permissionDenied`, `.invalidAddress` (bad adapter) — or `CancellationError`.
    public static func connect(to address: BLEAddress, adapter: String? = nil, timeout: Duration = .seconds(10),
                               logger: Logger? = nil) async throws -> any Transport {
        let context = "cannot connect to \(address)"
        let selector = try BluetoothConnect.selector(adapter, context: context)
        return try await withDeadline(
            timeout,
            late: { TransportError(.timedOut, "\(context): no connection after \(timeout.shortDescription) (is the device on, in range and advertising?)") },
            discard: { transport in await transport.close() }
        ) {
            var local = BluetoothAddress.anyKernelAddress
            if let selector {
                let chosen = try BluetoothConnect.upAdapter(selector, context: context)
                local = chosen.address.kernelAddress
                logger?.debug("connecting to \(address) from \(chosen.name) (\(chosen.address))")
            }
            let source = L2CAPLESocketAddress(address: local, type: 1)
            let remote = L2CAPLESocketAddress(address: address.address.kernelAddress, type: address.kernelType)
            let fd = try await BluetoothConnect.connectedSocket(
                type: Int32(SOCK_SEQPACKET.rawValue), proto: BTPROTO_L2CAP,
                bind: { fd in source.withSockaddr { Glibc.bind(fd, $0, $1) } },
                connect: { fd in remote.withSockaddr { Glibc.connect(fd, $0, $1) } },
                socketFailure: { BluetoothErrors.socketError($0, context: context, protocolName: "L2CAP") },
                failure: { connectError($0, address: address, context: context) })
            logger?.debug("connected to \(address) (ATT, CID 4)")
            return try FileDescriptorTransport(adopting: fd, peerDescription: address.description, framing: .packets, logger: logger)
        }
    }

    static func connectError(_ e: Int32, address: BLEAddress, context: String) -> TransportError {
        switch e {
        case EHOSTDOWN, ETIMEDOUT:
            return TransportError(.notFound, "\(context): \(address.address) is not advertising or not in range (\(POSIX.describe(e)))", errno: e)
        case ECONNREFUSED:
            return TransportError(.connectionRefused, "\(context): \(address.address) refused the ATT connection", errno: e)
        case EHOSTUNREACH, ENETUNREACH, ENETDOWN:
            return TransportError(.notFound, "\(context): \(BluetoothErrors.noRouteReason())", errno: e)
        default:
            return BluetoothErrors.connectError(e, address: address.address, channel: 0, context: context)
        }
    }
}

/// HCI commands on one adapter through a raw HCI socket (libbluetooth's `hci_send_req`). Blocking: call on a
/// `BlockingPool` thread. Internal.
enum HCICommands {
    /// Sends the command and waits for its completion: the controller's status byte, or the errno.
    static func send(device: UInt16, ocf: UInt16, parameters: [UInt8], ogf: UInt16 = 0x08, timeoutMs: Int32 = 1000) -> Result<UInt8, Int32Error> {
        let dd = hci_open_dev(Int32(device))
        guard dd >= 0 else { return .failure(Int32Error(errno)) }
        defer { Glibc.close(dd) }
        return send(dd, ocf: ocf, parameters: parameters, ogf: ogf, timeoutMs: timeoutMs)
    }

    static func send(_ dd: Int32, ocf: UInt16, parameters: [UInt8], ogf: UInt16 = 0x08, timeoutMs: Int32 = 1000) -> Result<UInt8, Int32Error> {
        var status: UInt8 = 0xFF
        var params = parameters
        let rc = params.withUnsafeMutableBytes { p in
            withUnsafeMutablePointer(to: &status) { s in
                var rq = hci_request()
                rq.ogf = ogf
                rq.ocf = ocf
                rq.cparam = p.baseAddress
                rq.clen = Int32(p.count)
                rq.rparam = UnsafeMutableRawPointer(s)
                rq.rlen = 1
                return hci_send_req(dd, &rq, timeoutMs)
            }
        }
        return rc < 0 ? .failure(Int32Error(errno)) : .success(status)
    }

    /// LE Set Advertising Parameters (100 ms, connectable undirected, public address, all channels), Data, Enable.
    static func startAdvertising(device: UInt16, data: [UInt8]) -> Result<UInt8, Int32Error> {
        let parameters: [UInt8] = [0xA0, 0x00, 0xA0, 0x00, 0x00, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0x07, 0x00]
        _ = send(device: device, ocf: 0x000A, parameters: [0])  // parameters cannot change while advertising
        for (ocf, p) in [(UInt16(0x0006), parameters), (0x0008, AdvertisingData.command(data))] {
            switch send(device: device, ocf: ocf, parameters: p) {
            case .success(0): continue
            case let other: return other
            }
        }
        return send(device: device, ocf: 0x000A, parameters: [1])
    }
}

/// A socket on the kernel's Bluetooth management channel (an HCI socket bound to HCI_CHANNEL_CONTROL): commands to
/// one adapter index and the events the kernel sends back. Needs CAP_NET_ADMIN. Non-blocking: its waits are the I/O
/// reactor's (`SocketWait`), so commands and event reads are async calls that hold no thread. One task uses a socket
/// at a time. Internal.
final class ManagementSocket {
    struct Event {
        var code: UInt16
        var index: UInt16
        var parameters: ArraySlice<UInt8>
    }

    static let commandComplete: UInt16 = 0x0001, commandStatus: UInt16 = 0x0002

    private let fd: Int32
    private var buffer = [UInt8](repeating: 0, count: 1024)

    init() throws(Int32Error) {
        let fd = socket(AF_BLUETOOTH, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), BTPROTO_HCI)
        guard fd >= 0 else { throw Int32Error(errno) }
        // struct sockaddr_hci: family, device HCI_DEV_NONE, channel HCI_CHANNEL_CONTROL (3).
        var address: [UInt16] = [UInt16(AF_BLUETOOTH), 0xFFFF, 3]
        let bound = address.withUnsafeMutableBytes { Glibc.bind(fd, $0.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t($0.count)) }
        guard bound == 0 else {
            let e = errno
            Glibc.close(fd)
            throw Int32Error(e)
        }
        self.fd = fd
    }

    /// A socket that speaks the management channel's packets (a test's end of a socket pair), made non-blocking;
    /// closed with this.
    init(adopting fd: Int32) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        self.fd = fd
    }

    deinit { Glibc.close(fd) }

    /// Sends a command and waits (at most 2 s) for its Command Complete or Command Status: the status (0: success).
    /// Other events that arrive meanwhile go to `other`.
    func command(_ opcode: UInt16, index: UInt16, parameters: [UInt8], other: (Event) -> Void = { _ in }) async -> Result<UInt8, Int32Error> {
        await commandReply(opcode, index: index, parameters: parameters, other: other).map(\.status)
    }

    /// Sends a command and waits (at most 2 s) for its Command Complete or Command Status: the status (0: success)
    /// and the return parameters (what follows the opcode and status). Other events that arrive meanwhile go to `other`.
    /// A cancelled task still sends the command (the kernel carries it out) but does not wait for the answer: ECANCELED.
    func commandReply(_ opcode: UInt16, index: UInt16, parameters: [UInt8],
                      other: (Event) -> Void = { _ in }) async -> Result<(status: UInt8, reply: [UInt8]), Int32Error> {
        func u16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
        let packet = u16(opcode) + u16(index) + u16(UInt16(parameters.count)) + parameters
        guard packet.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) == packet.count else { return .failure(Int32Error(errno)) }
        let deadline = ContinuousClock.now + .seconds(2)
        while true {
            switch await nextEvent(until: deadline) {
            case let .failure(e): return .failure(e)
            case let .success(event?) where event.code == Self.commandComplete || event.code == Self.commandStatus:
                let p = event.parameters
                guard event.index == index, p.count >= 3, UInt16(p[p.startIndex]) | UInt16(p[p.startIndex + 1]) << 8 == opcode else { continue }
                return .success((p[p.startIndex + 2], Array(p.dropFirst(3))))
            case let .success(event?): other(event)
            case .success(nil): return .failure(Int32Error(Task.isCancelled ? ECANCELED : ETIMEDOUT))
            }
        }
    }

    /// The next event (header: code, index, length); nil when none came before `deadline` or the task is cancelled.
    /// Waits on the I/O reactor.
    func nextEvent(until deadline: ContinuousClock.Instant) async -> Result<Event?, Int32Error> {
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n >= 6 {
                let length = Int(UInt16(buffer[4]) | UInt16(buffer[5]) << 8)
                return .success(Event(code: UInt16(buffer[0]) | UInt16(buffer[1]) << 8, index: UInt16(buffer[2]) | UInt16(buffer[3]) << 8,
                                      parameters: buffer[6..<min(n, 6 + length)]))
            }
            if n == 0 { return .failure(Int32Error(ECONNRESET)) }  // the other end of a test's socket pair closed
            if n > 0 { continue }  // too short for an event
            let e = errno
            if e == EINTR { continue }
            guard e == EAGAIN || e == EWOULDBLOCK else { return .failure(Int32Error(e)) }
            let left = deadline - ContinuousClock.now
            guard left > .zero, !Task.isCancelled else { return .success(nil) }
            do {
                guard case .ready = try await SocketWait.wait(for: .readable, on: fd, wake: WakeSignal(), timeout: left) else { return .success(nil) }
            } catch {
                return .failure(Int32Error(error.errno ?? EIO))
            }
        }
    }
}

/// Advertising through the kernel's management interface: Add Advertising (0x003E) with instance 1, connectable.
/// The kernel picks legacy or extended advertising as the controller supports, so a central that scans with extended
/// scanning (the kernel's own LE connect, on newer controllers) sees it, and it advertises again after a connection
/// ends by itself. Internal.
enum ManagementAdvertising {
    static let instance: UInt8 = 1

    /// Starts advertising `data` (with its own Flags field) on adapter `index`: the command's status (0: success),
    /// or the errno of the socket.
    static func add(index: UInt16, data: [UInt8]) async -> Result<UInt8, Int32Error> {
        // Instance, flags (connectable), duration 0, timeout 0 (until removed), data length, scan response length, data.
        let parameters: [UInt8] = [instance, 0x01, 0, 0, 0, 0, 0, 0, 0, UInt8(data.count), 0] + data
        do { return try await ManagementSocket().command(0x003E, index: index, parameters: parameters) } catch { return .failure(error) }
    }

    /// Stops advertising instance 1 on adapter `index` (Remove Advertising, 0x003F).
    @discardableResult
    static func remove(index: UInt16) async -> Result<UInt8, Int32Error> {
        do { return try await ManagementSocket().command(0x003F, index: index, parameters: [instance]) } catch { return .failure(error) }
    }
}

/// The LE links of one adapter through the kernel's management interface: Get Connections (0x0015) and Disconnect
/// (0x0014, which answers once the link is down). A peripheral ends a link with it at once, as a device does when it
/// drops a connection; closing the ATT socket alone leaves the link up until the kernel's disconnect timeout (4 s
/// for a link the adapter accepted), during which the central sees nothing wrong. Internal.
enum ManagementLinks {
    /// An LE link's peer as the kernel names it: address (least significant byte first) and type (1 public, 2 random).
    struct Peer: Sendable, Hashable {
        var address: [UInt8]
        var type: UInt8
    }

    /// The LE links of adapter `index`; nil when the management interface cannot be used (no CAP_NET_ADMIN).
    static func connections(index: UInt16) async -> [Peer]? {
        guard let socket = try? ManagementSocket(),
              case let .success((0, reply)) = await socket.commandReply(0x0015, index: index, parameters: []) else { return nil }
        return peers(reply)
    }

    /// Get Connections' return parameters: count u16, then per link its address (6) and type (0 BR/EDR, 1 LE
    /// public, 2 LE random); the LE ones.
    static func peers(_ reply: [UInt8]) -> [Peer] {
        guard reply.count >= 2 else { return [] }
        let count = Int(UInt16(reply[0]) | UInt16(reply[1]) << 8)
        var out: [Peer] = []
        for i in 0..<count {
            let at = 2 + 7 * i
            guard at + 7 <= reply.count else { break }
            let type = reply[at + 6]
            if type == 1 || type == 2 { out.append(Peer(address: Array(reply[at..<(at + 6)]), type: type)) }
        }
        return out
    }

    /// Ends the link to `peer` on adapter `index`: the command's status (0: done; 0x02 not connected), or the errno.
    @discardableResult
    static func disconnect(index: UInt16, _ peer: Peer) async -> Result<UInt8, Int32Error> {
        do { return try await ManagementSocket().command(0x0014, index: index, parameters: peer.address + [peer.type]) } catch { return .failure(error) }
    }
}

/// LE discovery through the kernel's management interface (Start Discovery, 0x0023, LE public and random): the kernel
/// scans with extended scanning where the controller has it, so extended advertisers are found as well as legacy
/// ones. Device Found events (0x0012) carry the advertising data.
///
/// The kernel may send Device Found events before its answer to Start Discovery (it reports the discovery under way,
/// then what the controller reported the moment its scan started, then answers the command): every event that comes
/// while a command waits for its answer is handled, not dropped. An advertiser the controller reports once per scan
/// (a real controller filtering duplicates, as the kernel's discovery asks; btvirt's emulated controllers) was lost
/// when its report came first: `wearable search` in the VM missed the simulated wearable in half its searches.
/// Internal.
enum ManagementDiscovery {
    static let leTypes: UInt8 = 0x06

    static let busy: UInt8 = 0x0A

    /// What the kernel reported until `deadline` or until the task is cancelled; nil when the management interface
    /// cannot be used here (no permission, an old kernel, the adapter refused: the caller scans through HCI commands
    /// instead). `socket` makes the management socket (a test gives one end of a socket pair). The events are read
    /// as they come through the I/O reactor: no thread is held for the scan's duration.
    ///
    /// Busy (another discovery on the adapter, such as one bluetoothd left running, or the kernel still settling after
    /// the adapter came up) is not a refusal: the kernel sends every Device Found event to every management socket, so
    /// the scan listens to that discovery and asks again for its own every half second.
    static func scan(index: UInt16, until deadline: ContinuousClock.Instant,
                     log: (String) -> Void = { _ in },
                     socket makeSocket: () throws(Int32Error) -> ManagementSocket = { () throws(Int32Error) in try ManagementSocket() }) async -> [BLEAdvertisement]? {
        guard let socket = try? makeSocket() else {
            log("the management interface cannot be opened; scanning through HCI commands")
            return nil
        }
        var found: [BLEAdvertisement] = []
        var ours = false
        var nextAttempt = ContinuousClock.now
        func handle(_ event: ManagementSocket.Event) {
            guard event.index == index else { return }
            switch event.code {
            case 0x0012:
                if let advertisement = deviceFound(event.parameters) { found.append(advertisement) }
            case 0x0013 where event.parameters.count >= 2 && event.parameters[event.parameters.startIndex + 1] == 0:
                // The discovery round ended before the caller's time (ours, or the one we listened to): start another.
                ours = false
                nextAttempt = ContinuousClock.now
            default:
                break
            }
        }
        func start() async -> Bool {
            let status = await socket.command(0x0023, index: index, parameters: [leTypes], other: handle)
            switch status {
            case .success(0):
                ours = true
                return true
            case .success(busy):
                log("discovery on hci\(index) is busy; listening to the one running and asking again")
                nextAttempt = ContinuousClock.now + .milliseconds(500)
                return true
            default:
                log("the kernel's discovery on hci\(index) refused (\(status)); scanning through HCI commands")
                return false
            }
        }
        guard await start() else { return nil }
        reading: while !Task.isCancelled {
            let now = ContinuousClock.now
            if now >= deadline { break }
            if !ours, now >= nextAttempt {
                guard await start() else { break }
                continue
            }
            // Until the next event, the end of the scan, or the time to ask again for a discovery of our own.
            switch await socket.nextEvent(until: ours ? deadline : min(deadline, nextAttempt)) {
            case let .success(event?): handle(event)
            case .success(nil): continue
            case let .failure(e):
                log("reading the kernel's discovery events on hci\(index) failed (\(POSIX.describe(e.code)))")
                break reading
            }
        }
        // What comes while discovery stops is still what the caller asked for. (Cancelled, the command is sent but its
        // answer not waited for.)
        if ours { _ = await socket.command(0x0024, index: index, parameters: [leTypes], other: handle) }
        log("the kernel's discovery on hci\(index) reported \(found.count) advertisements")
        return found
    }

    /// A Device Found event's parameters: address (6, least significant first), address type (1 public, 2 random),
    /// RSSI, flags (4), data length (2), data. Nil for a BR/EDR device or parameters cut short.
    static func deviceFound(_ p: ArraySlice<UInt8>) -> BLEAdvertisement? {
        let b = Array(p)
        guard b.count >= 14, b[6] == 1 || b[6] == 2 else { return nil }
        let length = Int(UInt16(b[12]) | UInt16(b[13]) << 8)
        guard b.count >= 14 + length, let address = BluetoothAddress(BluetoothAddress.format(written: Array(b[0..<6].reversed()))) else { return nil }
        let fields = AdvertisingData.decode(Array(b[14..<(14 + length)]))
        return BLEAdvertisement(address: BLEAddress(address, random: b[6] == 2), name: fields.name, services16: fields.services16,
                                rssi: Int8(bitPattern: b[7]))
    }
}

/// Advertising data (Core spec Vol 3 Part C §11): length-type-value structures. Pure.
public enum AdvertisingData {
    /// What one advertisement says.
    public struct Fields: Sendable, Hashable {
        public var name: String?
        public var services16: [UInt16] = []
        public init(name: String? = nil, services16: [UInt16] = []) {
            self.name = name
            self.services16 = services16
        }
    }

    /// Flags (LE general discoverable, no BR/EDR), the complete list of 16-bit service UUIDs, and the name (cut to fit
    /// 31 bytes, marked shortened then).
    public static func encode(_ fields: Fields) -> [UInt8] {
        var out: [UInt8] = [0x02, 0x01, 0x06]
        if !fields.services16.isEmpty {
            out += [UInt8(1 + 2 * fields.services16.count), 0x03] + fields.services16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        }
        if let name = fields.name, !name.isEmpty {
            let room = 31 - out.count - 2
            let bytes = Array(name.utf8)
            if room > 0 { out += [UInt8(1 + min(room, bytes.count)), bytes.count > room ? 0x08 : 0x09] + bytes.prefix(room) }
        }
        return Array(out.prefix(31))
    }

    /// The LE Set Advertising Data command's parameters: length, then 31 bytes.
    static func command(_ data: [UInt8]) -> [UInt8] {
        [UInt8(data.count)] + data + [UInt8](repeating: 0, count: 31 - data.count)
    }

    /// Reads the name and 16-bit service UUIDs; stops at a structure that runs past the end.
    public static func decode(_ data: [UInt8]) -> Fields {
        var fields = Fields()
        var i = 0
        while i < data.count {
            let length = Int(data[i])
            guard length > 0, i + 1 + length <= data.count else { break }
            let type = data[i + 1]
            let value = Array(data[(i + 2)..<(i + 1 + length)])
            switch type {
            case 0x02, 0x03:
                for j in stride(from: 0, to: value.count - 1, by: 2) { fields.services16.append(UInt16(value[j]) | UInt16(value[j + 1]) << 8) }
            case 0x08, 0x09:
                fields.name = String(decoding: value, as: UTF8.self)
            default: break
            }
            i += 1 + length
        }
        return fields
    }
}

/// A device seen advertising.
public struct BLEAdvertisement: Sendable, Hashable, CustomStringConvertible {
    public var address: BLEAddress
    public var name: String?
    public var services16: [UInt16]
    public var rssi: Int8

    public var description: String {
        "\(address)" + (name.map { " \"\($0)\"" } ?? "") + " rssi \(rssi) dBm"
    }

    /// The advertising reports of one HCI LE Meta event (subevent 0x02), from the bytes after the event header:
    /// `02 | count | per report: type, address type, address (6, least significant first), length, data, rssi`.
    /// Reports cut short are dropped.
    public static func reports(inLEMeta event: [UInt8]) -> [BLEAdvertisement] {
        guard event.count >= 2, event[0] == 0x02 else { return [] }
        var out: [BLEAdvertisement] = []
        var i = 2
        for _ in 0..<Int(event[1]) {
            guard i + 9 <= event.count else { break }
            let addressType = event[i + 1]
            let bytes = Array(event[(i + 2)..<(i + 8)].reversed())
            let length = Int(event[i + 8])
            guard i + 9 + length + 1 <= event.count else { break }
            let data = Array(event[(i + 9)..<(i + 9 + length)])
            let rssi = Int8(bitPattern: event[i + 9 + length])
            if let address = BluetoothAddress(BluetoothAddress.format(written: bytes)) {
                let fields = AdvertisingData.decode(data)
                out.append(BLEAdvertisement(address: BLEAddress(address, random: addressType & 1 == 1), name: fields.name,
                                            services16: fields.services16, rssi: rssi))
            }
            i += 10 + length
        }
        return out
    }
}

/// LE scanning through a raw HCI socket: the devices that advertise a service.
public enum BLEScanner {
    /// Scans (passively) for `duration` on `adapter` (`hciN` or its address; nil: the first adapter that is up) and
    /// returns each device seen once (its latest report), those advertising `service` only when given.
    ///
    /// Throws `TransportError` "cannot scan for BLE devices: REASON": `.unsupported` (no Bluetooth in this kernel),
    /// `.notFound` (no adapter, or it is down), `.permissionDenied`, `.io` — or `CancellationError`.
    public static func scan(adapter: String? = nil, for duration: Duration, service: UInt16? = 0xFDD2,
                            logger: Logger? = nil) async throws -> [BLEAdvertisement] {
        let context = "cannot scan for BLE devices"
        let chosen: BluetoothAdapter
        if let adapter {
            let selector: AdapterSelector
            do { selector = try AdapterSelector(parsing: adapter) } catch { throw TransportError(.invalidAddress, "\(context): \(error.message)") }
            chosen = try BluetoothAdapters.adapter(selector, context: context)
        } else {
            let all: [BluetoothAdapter]
            do {
                all = try BluetoothAdapters.list()
            } catch {
                let prefix = "cannot list Bluetooth adapters: "
                let reason = error.message.hasPrefix(prefix) ? String(error.message.dropFirst(prefix.count)) : error.message
                throw TransportError(error.code, "\(context): \(reason)", errno: error.errno)
            }
            guard let up = all.first(where: \.isUp) else {
                throw TransportError(.notFound, "\(context): " + (all.isEmpty ? "no Bluetooth adapter found" : "no Bluetooth adapter is up (\(all.map(\.name).joined(separator: ", ")) down)"))
            }
            chosen = up
        }
        guard chosen.isUp else { throw TransportError(.notFound, "\(context): adapter \(chosen.name) is down (bring it up: hciconfig \(chosen.name) up)") }
        logger?.debug("scanning on \(chosen.name) for \(duration.shortDescription)")
        let deadline = ContinuousClock.now + duration
        // The kernel's discovery (extended advertisers too) where it can be used; else raw HCI scanning. Both read
        // their events through the I/O reactor: no thread waits out the scan.
        let seen: [BLEAdvertisement]
        if let found = await ManagementDiscovery.scan(index: chosen.id, until: deadline, log: { logger?.debug("\($0)") }) {
            seen = found
        } else {
            seen = try await hciScan(device: chosen.id, until: deadline, context: context)
        }
        try Task.checkCancellation()
        var latest: [BLEAddress: BLEAdvertisement] = [:]
        var order: [BLEAddress] = []
        for a in seen {
            if latest[a.address] == nil { order.append(a.address) }
            var merged = a
            if merged.name == nil { merged.name = latest[a.address]?.name }
            if merged.services16.isEmpty { merged.services16 = latest[a.address]?.services16 ?? [] }
            latest[a.address] = merged
        }
        return order.compactMap { latest[$0] }.filter { ad in service.map { ad.services16.contains($0) } ?? true }
    }

    /// The raw HCI scan: set up (libbluetooth's blocking command calls) on the blocking executor, the LE meta events
    /// read through the I/O reactor until `deadline` or cancellation, then scanning switched off and the socket
    /// closed on a short-lived thread.
    private static func hciScan(device: UInt16, until deadline: ContinuousClock.Instant, context: String) async throws -> [BLEAdvertisement] {
        let opened = try await Blocking.run("tuneup-le-scan", discard: { (r: Result<HCIScanSocket, TransportError>) in
            if case .success(let socket) = r { socket.finish() }
        }) { HCIScanSocket.start(device: device, context: context) }
        let socket = try opened.get()
        defer {
            if (try? DedicatedThread.spawn(name: "tuneup-le-scan", { socket.finish() })) == nil { socket.finish() }
        }
        let dd = socket.descriptor
        _ = fcntl(dd, F_SETFL, fcntl(dd, F_GETFL) | O_NONBLOCK)
        var found: [BLEAdvertisement] = []
        var buffer = [UInt8](repeating: 0, count: 260)
        while !Task.isCancelled {
            let n = read(dd, &buffer, buffer.count)
            if n > 0 {
                // HCI event packet: 04 | event 3E | length | LE meta parameters.
                if n > 3, buffer[0] == 0x04, buffer[1] == 0x3E { found += BLEAdvertisement.reports(inLEMeta: Array(buffer[3..<n])) }
                continue
            }
            let e = errno
            if n < 0, e == EINTR { continue }
            guard n < 0, e == EAGAIN || e == EWOULDBLOCK else { break }
            let left = deadline - ContinuousClock.now
            guard left > .zero, case .ready = try await SocketWait.wait(for: .readable, on: dd, wake: WakeSignal(), timeout: left) else { break }
        }
        return found
    }

    /// A raw HCI socket set up for a passive LE scan: only LE meta events pass its filter, scanning is on. Internal.
    final class HCIScanSocket: Sendable {
        let descriptor: Int32
        private let device: UInt16
        private let oldFilter: [UInt8]

        private init(descriptor: Int32, device: UInt16, oldFilter: [UInt8]) {
            self.descriptor = descriptor
            self.device = device
            self.oldFilter = oldFilter
        }

        /// Opens the adapter's HCI socket, filters LE meta events, sets passive scanning (10 ms interval and window,
        /// public own address, accept all) and switches it on. Blocking: on the blocking executor.
        static func start(device: UInt16, context: String) -> Result<HCIScanSocket, TransportError> {
            let dd = hci_open_dev(Int32(device))
            guard dd >= 0 else { return .failure(BluetoothErrors.adapterError(errno, adapter: "hci\(device)", context: context)) }
            var old = [UInt8](repeating: 0, count: MemoryLayout<hci_filter>.size)
            var oldLength = socklen_t(old.count)
            if old.withUnsafeMutableBytes({ getsockopt(dd, SOL_HCI, HCI_FILTER, $0.baseAddress, &oldLength) }) != 0 { oldLength = 0 }
            var filter = hci_filter()
            hci_filter_clear(&filter)
            hci_filter_set_ptype(HCI_EVENT_PKT, &filter)
            hci_filter_set_event(EVT_LE_META_EVENT, &filter)
            guard setsockopt(dd, SOL_HCI, HCI_FILTER, &filter, socklen_t(MemoryLayout<hci_filter>.size)) == 0 else {
                let e = errno
                Glibc.close(dd)
                return .failure(TransportError(.io, "\(context): cannot filter HCI events: \(POSIX.describe(e))", errno: e))
            }
            let socket = HCIScanSocket(descriptor: dd, device: device, oldFilter: Array(old.prefix(Int(oldLength))))
            _ = HCICommands.send(dd, ocf: 0x000C, parameters: [0, 0])  // scanning off first: parameters cannot change while on
            if case let .failure(e) = HCICommands.send(dd, ocf: 0x000B, parameters: [0x00, 0x10, 0x00, 0x10, 0x00, 0x00, 0x00]) {
                socket.close()
                return .failure(scanError(e.code, device: device, context: context))
            }
            switch HCICommands.send(dd, ocf: 0x000C, parameters: [1, 0]) {
            case let .failure(e):
                socket.close()
                return .failure(scanError(e.code, device: device, context: context))
            case let .success(status) where status != 0:
                socket.close()
                return .failure(TransportError(.io, "\(context): hci\(device) refused to scan (HCI status 0x\(String(status, radix: 16)))"))
            default:
                return .success(socket)
            }
        }

        /// Switches scanning off, then restores the filter and closes the socket. Blocking: off the cooperative pool.
        func finish() {
            _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK)
            _ = HCICommands.send(descriptor, ocf: 0x000C, parameters: [0, 0])
            close()
        }

        private func close() {
            if !oldFilter.isEmpty {
                _ = oldFilter.withUnsafeBytes { setsockopt(descriptor, SOL_HCI, HCI_FILTER, $0.baseAddress, socklen_t($0.count)) }
            }
            Glibc.close(descriptor)
        }
    }

    private static func scanError(_ e: Int32, device: UInt16, context: String) -> TransportError {
        switch e {
        case ENETDOWN: return TransportError(.notFound, "\(context): adapter hci\(device) is down (bring it up: hciconfig hci\(device) up)", errno: e)
        case EACCES, EPERM: return TransportError(.permissionDenied, "\(context): permission denied (raw HCI needs CAP_NET_RAW)", errno: e)
        default: return TransportError(.io, "\(context): hci\(device): \(POSIX.describe(e))", errno: e)
        }
    }
}

/// A BLE peripheral's ATT server socket: listens on the ATT channel (CID 4) of one adapter and advertises (connectable,
/// with the service's 16-bit UUID and a name) until closed; accepted connections are `.packets` transports
/// (`ble:PEER`), so a `SimulatedDeviceServer` serves a device on them unchanged. Advertising is switched on again
/// while waiting for a connection (a controller stops advertising when a central connects). Keep bluetoothd off
/// that adapter (its own GATT server listens on the same channel).
public final class ATTListener: TransportListener, Sendable {
    public let endpoint: String
    public let adapter: BluetoothAdapter
    private let listening: ListeningSocket
    /// The kernel advertises (management interface), and advertises again after a connection by itself.
    private let managedAdvertising = Atomic<Bool>(false)
    private let logger: Logger?

    /// A listener on a socket that already listens (a test's Unix socket); `bind` makes the real one.
    init(adoptingListeningSocket fd: Int32, adapter: BluetoothAdapter, logger: Logger?) {
        self.listening = ListeningSocket(adopting: fd)
        self.adapter = adapter
        self.endpoint = "ble:\(adapter.address)"
        self.logger = logger
    }

    deinit { close() }

    /// Listens on `adapter` (`hciN` or its address) and starts advertising `name` and `service`.
    ///
    /// Throws `TransportError` "cannot serve BLE on ADAPTER: REASON": `.unsupported` (no Bluetooth in this kernel),
    /// `.notFound` (no such adapter, or it is down), `.busy` (the ATT channel is taken: bluetoothd?), `.io`
    /// (advertising refused).
    public static func bind(adapter: String, name: String, service: UInt16 = 0xFDD2, logger: Logger? = nil) async throws -> ATTListener {
        let context = "cannot serve BLE on \(adapter)"
        let selector: AdapterSelector
        do { selector = try AdapterSelector(parsing: adapter) } catch { throw TransportError(.invalidAddress, "\(context): \(error.message)") }
        let type = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let fd = socket(AF_BLUETOOTH, type, BTPROTO_L2CAP)
        guard fd >= 0 else { throw BluetoothErrors.socketError(errno, context: context, protocolName: "L2CAP") }
        var handedOver = false
        defer { if !handedOver { POSIX.close(fd) } }
        let chosen = try BluetoothAdapters.adapter(selector, context: context)
        guard chosen.isUp else { throw TransportError(.notFound, "\(context): adapter \(chosen.name) is down (bring it up: hciconfig \(chosen.name) up)") }
        guard L2CAPLESocketAddress(address: chosen.address.kernelAddress, type: 1).withSockaddr({ Glibc.bind(fd, $0, $1) }) == 0,
              listen(fd, 4) == 0 else {
            let e = errno
            if e == EADDRINUSE { throw TransportError(.busy, "\(context): the ATT channel of \(chosen.name) is taken (is bluetoothd running on it?)", errno: e) }
            throw TransportError(.io, "\(context): \(POSIX.describe(e))", errno: e)
        }
        let data = AdvertisingData.encode(.init(name: name, services16: [service]))
        // The kernel's advertising (management interface) where it can; else raw HCI commands (legacy advertising,
        // which centrals that scan with extended scanning do not see on every controller).
        let managed = await ManagementAdvertising.add(index: chosen.id, data: data)
        let started: Result<UInt8, Int32Error>
        if case .success(0) = managed {
            started = managed
        } else {
            logger?.debug("management advertising on \(chosen.name) failed (\(managed)); advertising through HCI commands")
            started = try await Blocking.run("tuneup-le-adv") { HCICommands.startAdvertising(device: chosen.id, data: data) }
        }
        switch started {
        case .success(0): break
        case let .success(status): throw TransportError(.io, "\(context): \(chosen.name) refused to advertise (HCI status 0x\(String(status, radix: 16)))")
        case let .failure(e): throw TransportError(.io, "\(context): cannot advertise on \(chosen.name): \(POSIX.describe(e.code))", errno: e.code)
        }
        handedOver = true
        // LE links already up on this adapter have no ATT server: the kernel gives a link the ATT channel of the
        // listener there when it comes up, so they were a previous server's (a simulator killed and started again).
        // A device that restarts drops its links; end them, so their centrals see the loss now and connect again.
        let stale = await ManagementLinks.connections(index: chosen.id) ?? []
        for peer in stale { await ManagementLinks.disconnect(index: chosen.id, peer) }
        if !stale.isEmpty { logger?.debug("ended \(stale.count) LE link(s) left on \(chosen.name) without an ATT server") }
        logger?.debug("advertising \"\(name)\" (service 0x\(String(service, radix: 16))) and listening for ATT on \(chosen.name) (\(chosen.address))")
        let listener = ATTListener(adoptingListeningSocket: fd, adapter: chosen, logger: logger)
        if case .success(0) = managed { listener.managedAdvertising.store(true, ordering: .relaxed) }
        return listener
    }

    private var closedError: TransportError { TransportError(.closed, "the listener on \(endpoint) is closed") }

    /// The number of `accept()` calls waiting for a connection on the reactor now (for tests and diagnostics).
    var pendingAccepts: Int { listening.pendingWaits }

    public func accept() async throws -> any Transport {
        while true {
            try Task.checkCancellation()
            let next = try listening.acceptNext(endpoint: endpoint, closedError: closedError) { raw -> (name: String, link: ManagementLinks.Peer?) in
                guard let peer = L2CAPLESocketAddress(raw), let address = BluetoothAddress(kernelAddress: peer.address) else {
                    return ("ble:unknown", nil)
                }
                let a = peer.address.b
                return (BLEAddress(address, random: peer.type == 2).description, ManagementLinks.Peer(address: [a.0, a.1, a.2, a.3, a.4, a.5], type: peer.type))
            }
            if let (fd, peer) = next {
                logger?.debug("accepted \(peer.name) on \(endpoint)")
                let transport = try FileDescriptorTransport(adopting: fd, peerDescription: peer.name, framing: .packets, logger: logger)
                guard let link = peer.link else { return transport }
                return BLEPeripheralLink(transport, adapter: adapter.id, peer: link, logger: logger)
            }
            if try await listening.waitReadable(timeout: .seconds(1), closedError: closedError) == .timedOut {
                // A central that connected stopped the advertising: switch it on again (refused while on: no harm).
                // The kernel's own advertising does that itself.
                guard !managedAdvertising.load(ordering: .relaxed) else { continue }
                let id = adapter.id
                _ = try? await Blocking.run("tuneup-le-adv") { HCICommands.send(device: id, ocf: 0x000A, parameters: [1]) }
            }
        }
    }

    /// Stops listening and advertising: wakes pending `accept()`s (they throw `.closed`), releases the socket once
    /// none is still waking up, and stops the advertising (the management interface's Remove Advertising in a task,
    /// or an HCI command on a short-lived thread). Idempotent.
    public func close() {
        guard listening.close() else { return }
        let id = adapter.id
        if managedAdvertising.load(ordering: .relaxed) {
            Task { await ManagementAdvertising.remove(index: id) }
        } else {
            try? DedicatedThread.spawn(name: "tuneup-le-adv") { _ = HCICommands.send(device: id, ocf: 0x000A, parameters: [0]) }
        }
    }
}

/// A central's link accepted by `ATTListener`: the ATT socket, and the LE link under it. `close()` by this side ends
/// the link at once (the management interface's Disconnect) before releasing the socket, as a device that drops a
/// connection does: closing the socket alone leaves the link up until the kernel's disconnect timeout (4 s for a link
/// the adapter accepted) and the central sees nothing until then. A link the central (or the radio) already ended is
/// not touched: its address may be connected again by then. Without the management interface (no CAP_NET_ADMIN) it
/// closes the socket only.
final class BLEPeripheralLink: Transport {
    private let inner: FileDescriptorTransport
    private let adapter: UInt16
    private let peer: ManagementLinks.Peer
    private let logger: Logger?
    /// The link ended from the other side (a receive or send failed before `close()`).
    private let ended = Mutex(false)

    init(_ inner: FileDescriptorTransport, adapter: UInt16, peer: ManagementLinks.Peer, logger: Logger?) {
        self.inner = inner
        self.adapter = adapter
        self.peer = peer
        self.logger = logger
    }

    var peerDescription: String { inner.peerDescription }
    var framing: LinkFraming { inner.framing }

    func send(_ bytes: [UInt8]) async throws {
        do { try await inner.send(bytes) } catch let error as TransportError {
            ended.withLock { $0 = true }
            throw error
        }
    }

    func receive() async throws -> [UInt8] {
        do { return try await inner.receive() } catch let error as TransportError {
            ended.withLock { $0 = true }
            throw error
        }
    }

    func close() async {
        let endLink = ended.withLock { e in
            defer { e = true }
            return !e
        }
        if endLink {
            let (adapter, peer) = (adapter, peer)
            let status = await ManagementLinks.disconnect(index: adapter, peer)
            logger?.debug("ended the LE link to \(peerDescription): \(status)")
        }
        await inner.close()
    }
}
