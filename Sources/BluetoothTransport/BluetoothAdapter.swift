import CBluetooth
import Glibc
import Transport

/// A local Bluetooth controller (`hciN`), as the kernel reports it.
public struct BluetoothAdapter: Sendable, Hashable, CustomStringConvertible {
    /// The kernel's device id: N in `hciN`.
    public let id: UInt16
    /// The kernel's name for it, `hciN`.
    public let name: String
    /// The controller's public address.
    public let address: BluetoothAddress
    /// Whether the controller is powered up (`hciconfig hciN up`).
    public let isUp: Bool
    /// Whether it answers pages (page scan): other devices can connect to it.
    public let isConnectable: Bool
    /// Whether it answers inquiries (inquiry scan): other devices can discover it.
    public let isDiscoverable: Bool

    /// Creates an adapter description (tests and callers that list adapters themselves).
    public init(id: UInt16, name: String, address: BluetoothAddress, isUp: Bool, isConnectable: Bool, isDiscoverable: Bool) {
        self.id = id
        self.name = name
        self.address = address
        self.isUp = isUp
        self.isConnectable = isConnectable
        self.isDiscoverable = isDiscoverable
    }

    /// "hci0 00:AA:01:00:00:00 up, connectable, discoverable" (or "down").
    public var description: String {
        var state = [isUp ? "up" : "down"]
        if isConnectable { state.append("connectable") }
        if isDiscoverable { state.append("discoverable") }
        return "\(name) \(address) " + state.joined(separator: ", ")
    }

    /// Decodes a `struct hci_dev_info` as filled in by HCIGETDEVINFO (dev_id, name[8], bdaddr little-endian, flags).
    /// Nil if the buffer is too short.
    init?(deviceInfo raw: UnsafeRawBufferPointer) {
        guard raw.count >= MemoryLayout<hci_dev_info>.size else { return nil }
        let info = raw.loadUnaligned(as: hci_dev_info.self)
        let nameBytes = withUnsafeBytes(of: info.name) { Array($0.prefix { $0 != 0 }) }
        guard let address = BluetoothAddress(kernelAddress: info.bdaddr) else { return nil }
        self.id = info.dev_id
        self.name = nameBytes.isEmpty ? "hci\(info.dev_id)" : String(decoding: nameBytes, as: UTF8.self)
        self.address = address
        self.isUp = info.flags & (1 << TUNEUP_HCI_UP) != 0
        self.isConnectable = info.flags & (1 << TUNEUP_HCI_PSCAN) != 0
        self.isDiscoverable = info.flags & (1 << TUNEUP_HCI_ISCAN) != 0
    }
}

/// How a caller names a local adapter: `hciN`, or the adapter's address `AA:BB:CC:DD:EE:FF`.
public enum AdapterSelector: Sendable, Hashable, CustomStringConvertible {
    /// `hciN`.
    case id(UInt16)
    /// The adapter whose address this is.
    case address(BluetoothAddress)

    /// Parses `hciN` (N = 0...65535, decimal) or `AA:BB:CC:DD:EE:FF`.
    ///
    /// - Throws: `TransportError(.invalidAddress)` with a one-line message naming the expected forms.
    public init(parsing text: String) throws(TransportError) {
        if text.hasPrefix("hci") {
            let digits = text.dropFirst(3)
            if !digits.isEmpty, digits.count <= 5, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let id = UInt16(digits) {
                self = .id(id)
                return
            }
        } else if let address = BluetoothAddress(text) {
            self = .address(address)
            return
        }
        throw TransportError(.invalidAddress, "bad Bluetooth adapter '\(text)': expected hciN (e.g. hci0) or the adapter's address AA:BB:CC:DD:EE:FF")
    }

    /// `hciN` or the address.
    public var description: String {
        switch self {
        case .id(let id): return "hci\(id)"
        case .address(let address): return address.description
        }
    }
}

/// The local adapters, read from the kernel with the HCIGETDEVLIST and HCIGETDEVINFO ioctls on a raw HCI socket.
///
/// These ioctls answer from the kernel's tables without waiting for the controller, so they are plain synchronous
/// calls. Errors are one-line `TransportError`s: `.unsupported` "no Bluetooth support in this kernel (AF_BLUETOOTH
/// unavailable)", `.notFound` for an adapter that does not exist, `.permissionDenied`, `.io`.
public enum BluetoothAdapters {
    /// Every adapter the kernel knows, in id order (up or down).
    public static func list() throws(TransportError) -> [BluetoothAdapter] {
        let control = try openControlSocket(context: "cannot list Bluetooth adapters")
        defer { POSIX.close(control) }
        let ids = try deviceIDs(control, context: "cannot list Bluetooth adapters")
        var adapters: [BluetoothAdapter] = []
        for id in ids {
            switch deviceInfo(control, id: id) {
            case .success(let adapter): adapters.append(adapter)
            case .failure(let e) where e.code == ENODEV: continue  // removed meanwhile
            case .failure(let e): throw BluetoothErrors.adapterError(e.code, adapter: "hci\(id)", context: "cannot list Bluetooth adapters")
            }
        }
        return adapters.sorted { $0.id < $1.id }
    }

    /// The adapter named `hciN` or having the given address (see `AdapterSelector`).
    ///
    /// - Throws: `.invalidAddress` for a malformed name, `.notFound` "no Bluetooth adapter hci3", `.unsupported`, …
    public static func adapter(named name: String) throws(TransportError) -> BluetoothAdapter {
        try adapter(try AdapterSelector(parsing: name))
    }

    /// The adapter `selector` names.
    public static func adapter(_ selector: AdapterSelector) throws(TransportError) -> BluetoothAdapter {
        try adapter(selector, context: "cannot use Bluetooth adapter \(selector)")
    }

    /// The adapter `selector` names; error messages start with `context`.
    static func adapter(_ selector: AdapterSelector, context: String) throws(TransportError) -> BluetoothAdapter {
        let control = try openControlSocket(context: context)
        defer { POSIX.close(control) }
        switch selector {
        case .id(let id):
            switch deviceInfo(control, id: id) {
            case .success(let adapter): return adapter
            case .failure(let e): throw BluetoothErrors.adapterError(e.code, adapter: selector.description, context: context)
            }
        case .address(let address):
            for id in try deviceIDs(control, context: context) {
                if case .success(let adapter) = deviceInfo(control, id: id), adapter.address == address { return adapter }
            }
            throw TransportError(.notFound, "\(context): no local Bluetooth adapter has the address \(address)")
        }
    }

    /// The adapter the kernel would route through when none is named: the first one that is up (as
    /// `hci_get_route(NULL)` picks it). Nil when no adapter is up (or there is no Bluetooth at all).
    public static func defaultAdapter() -> BluetoothAdapter? {
        (try? list())?.first { $0.isUp }
    }

    // MARK: - ioctls

    /// socket(AF_BLUETOOTH, SOCK_RAW, BTPROTO_HCI), unbound: enough for the device ioctls.
    static func openControlSocket(context: String) throws(TransportError) -> Int32 {
        let type = Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let fd = socket(AF_BLUETOOTH, type, BTPROTO_HCI)
        guard fd >= 0 else { throw BluetoothErrors.socketError(errno, context: context) }
        return fd
    }

    /// Size of the HCIGETDEVLIST buffer: `struct hci_dev_list_req` (u16 dev_num, then `hci_dev_req`s at offset 4).
    static let deviceListEntries = Int(HCI_MAX_DEV)
    static let deviceListBytes = 4 + deviceListEntries * MemoryLayout<hci_dev_req>.stride

    /// The device ids in a HCIGETDEVLIST answer. Nil if the buffer is malformed.
    static func parseDeviceList(_ raw: UnsafeRawBufferPointer) -> [UInt16]? {
        guard raw.count >= 4 else { return nil }
        let count = Int(raw.loadUnaligned(as: UInt16.self))
        let stride = MemoryLayout<hci_dev_req>.stride
        guard 4 + count * stride <= raw.count else { return nil }
        return (0..<count).map { raw.loadUnaligned(fromByteOffset: 4 + $0 * stride, as: UInt16.self) }
    }

    private static func deviceIDs(_ control: Int32, context: String) throws(TransportError) -> [UInt16] {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: deviceListBytes, alignment: 8)
        defer { buffer.deallocate() }
        buffer.initializeMemory(as: UInt8.self, repeating: 0)
        buffer.storeBytes(of: UInt16(deviceListEntries), as: UInt16.self)
        guard tuneup_bt_ioctl(control, TUNEUP_HCIGETDEVLIST, buffer.baseAddress) == 0 else {
            throw BluetoothErrors.adapterError(errno, adapter: nil, context: context)
        }
        guard let ids = parseDeviceList(UnsafeRawBufferPointer(buffer)) else {
            throw TransportError(.io, "\(context): the kernel returned a malformed adapter list")
        }
        return ids
    }

    /// HCIGETDEVINFO for `id`: the adapter, or the errno (ENODEV: no such adapter).
    private static func deviceInfo(_ control: Int32, id: UInt16) -> Result<BluetoothAdapter, Int32Error> {
        // The kernel copies sizeof(struct hci_dev_info) bytes back: give it at least the C size.
        let size = max(MemoryLayout<hci_dev_info>.stride, 128)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 8)
        defer { buffer.deallocate() }
        buffer.initializeMemory(as: UInt8.self, repeating: 0)
        buffer.storeBytes(of: id, as: UInt16.self)
        guard tuneup_bt_ioctl(control, TUNEUP_HCIGETDEVINFO, buffer.baseAddress) == 0 else {
            return .failure(Int32Error(errno))
        }
        guard let adapter = BluetoothAdapter(deviceInfo: UnsafeRawBufferPointer(buffer)) else {
            return .failure(Int32Error(EIO))
        }
        return .success(adapter)
    }
}

/// An errno as an `Error` (for `Result`). Internal.
struct Int32Error: Error, Equatable {
    let code: Int32
    init(_ code: Int32) { self.code = code }
}
