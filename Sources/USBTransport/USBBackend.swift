import Logging
import Support
import Transport

/// Which back end a `usb:` address goes through (`--usb-backend`).
public enum USBBackend: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The headset's hidraw node when it has one (its HID driver stays bound), else libusb.
    case auto
    /// Only the hidraw node (HIDIOCSFEATURE/HIDIOCGFEATURE); a headset without one is not found.
    case hidraw
    /// Only libusb (usbfs control transfers; the kernel's HID driver is detached while the link is open).
    case libusb

    public var description: String { rawValue }

    /// Parses `auto`, `hidraw` or `libusb`. Throws `.invalidAddress`-category usage text otherwise.
    public init(parsing text: String) throws(TransportError) {
        guard let backend = USBBackend(rawValue: text) else {
            throw TransportError(.invalidAddress, "unknown USB back end '\(text)': expected hidraw, libusb or auto")
        }
        self = backend
    }
}

/// Where a `usb:` address leads, decided from one hidraw scan (pure: tests give it fake scans).
public enum USBBackendChoice: Sendable, Hashable {
    /// Open this hidraw node.
    case hidraw(HIDRawNode)
    /// Open the device with libusb.
    case libusb
    /// The headset is attached with a HID interface 0 whose hidraw node is not there yet (usbhid is binding it):
    /// scan again in a moment.
    case waitForNode
    /// `--usb-backend hidraw` and no node matches.
    case noNode

    /// The choice for `filter` under `backend`, given the hidraw `scan` and whether a matching USB device with a HID
    /// interface 0 but no node yet is attached (`awaitingNode`).
    ///
    /// - Throws: `TransportError(.invalidAddress)` when several headsets' nodes match (listed with their ports and
    ///   serials, as libusb's ambiguity is).
    public static func choose(_ backend: USBBackend, filter: USBDeviceFilter, scan: HIDRawScan, awaitingNode: Bool) throws(TransportError) -> USBBackendChoice {
        if backend == .libusb { return .libusb }
        let nodes = HIDRawDevices.matches(filter, in: scan)
        if nodes.count > 1 {
            let candidates = nodes.compactMap { node in node.location.map { (location: $0, serial: node.serial) } }
            throw filter.ambiguityError(candidates)
        }
        if let node = nodes.first { return .hidraw(node) }
        if awaitingNode { return .waitForNode }
        return backend == .hidraw ? .noNode : .libusb
    }
}

/// Opens a headset's `usb:` or `hidraw:` address through hidraw or libusb (`USBBackend`), the policy `USBBridge`
/// applies: see `open`.
public struct USBHeadsetOpener: Sendable {
    /// What an open used, so that a re-open (after the bootloader's re-enumeration) goes the same way.
    public struct Opened: Sendable, Hashable {
        /// `.hidraw` or `.libusb` (never `.auto`).
        public var backend: USBBackend
        /// Where the device was (the hidraw node's USB position; libusb's location), when known.
        public var location: USBDeviceLocation?
    }

    public var backend: USBBackend
    public var pollInterval: Duration?
    public var knownDevices: USBKnownDevices
    public var logger: Logger?
    public var sysfsRoot = "/sys"
    public var devRoot = "/dev"
    /// How long a first open waits for the hidraw node of a headset that has just enumerated.
    public var nodeSettle: Duration = .seconds(2)

    /// Time between scans while waiting.
    public static let rescanInterval: Duration = .milliseconds(50)

    public init(backend: USBBackend, pollInterval: Duration?, knownDevices: USBKnownDevices, logger: Logger?) {
        self.backend = backend
        self.pollInterval = pollInterval
        self.knownDevices = knownDevices
        self.logger = logger
    }

    /// Opens `address`.
    ///
    /// - `usb:VID:PID[:SERIAL]` / `usb:BUS-PORT`: the headset's hidraw node (USB interface 0) when `backend` allows it
    ///   and there is one (a headset that has just enumerated gets up to `nodeSettle` for usbhid to create it), else
    ///   libusb (`.auto`). With `.auto`, a node that refuses access falls back to libusb; when that fails too, the
    ///   node's permission error is thrown.
    /// - `hidraw:PATH`: that node.
    /// - `previous` (a re-open): the same back end again, waiting up to `wait` for the device to come back (a
    ///   `hidraw:` address then finds the node of the device at the same USB port, whatever its new product id).
    ///
    /// - Throws: `TransportError` (`.notFound`, `.permissionDenied`, `.invalidAddress` for several matches, ...) or
    ///   `CancellationError`.
    public func open(_ address: DeviceAddress, previous: Opened?, wait: Duration) async throws -> (transport: any Transport, opened: Opened) {
        let peer = address.description
        let options = HIDRawTransport.Options(pollInterval: pollInterval)
        let clock = ContinuousClock()
        if let path = HIDRawAddress.path(of: address) {
            var filter: USBDeviceFilter?
            if let previous, let location = previous.location {
                filter = try USBDeviceFilter(address: .usbPort(bus: location.bus, ports: location.ports), known: knownDevices)
            }
            let deadline = clock.now + (previous == nil ? .zero : max(.zero, wait))
            while true {
                var target = path
                if let filter {
                    let scan = try await HIDRawDevices.scanOffPool(sysfsRoot: sysfsRoot, devRoot: devRoot)
                    if let node = HIDRawDevices.matches(filter, in: scan).first { target = node.path }
                }
                do {
                    let transport = try await HIDRawTransport.open(path: target, peer: peer, options: options, logger: logger)
                    let scan = try await HIDRawDevices.scanOffPool(sysfsRoot: sysfsRoot, devRoot: devRoot)
                    let location = scan.nodes.first { $0.path == target }?.location ?? previous?.location
                    return (transport, Opened(backend: .hidraw, location: location))
                } catch let error as TransportError where (error.code == .notFound || error.code == .permissionDenied) && clock.now < deadline {
                    try await Task.sleep(for: Self.rescanInterval)
                }
            }
        }

        let filter = try USBDeviceFilter(address: address, known: knownDevices)
        let backend = previous?.backend ?? self.backend
        let waitDeadline = clock.now + (previous == nil ? .zero : max(.zero, wait))
        let settleDeadline = clock.now + max(nodeSettle, previous == nil ? .zero : max(.zero, wait))
        while true {
            let scan = try await HIDRawDevices.scanOffPool(sysfsRoot: sysfsRoot, devRoot: devRoot)
            let awaiting = backend == .libusb ? false : try await hidInterfaceAwaitingNode(filter)
            switch try USBBackendChoice.choose(backend, filter: filter, scan: scan, awaitingNode: awaiting) {
            case .hidraw(let node):
                do {
                    let transport = try await HIDRawTransport.open(path: node.path, peer: peer, options: options, logger: logger)
                    logger?.debug("\(peer): through hidraw \(node.path)\(node.driver.map { " (\($0) stays bound)" } ?? "")")
                    return (transport, Opened(backend: .hidraw, location: node.location))
                } catch let error as TransportError where error.code == .permissionDenied && backend == .auto && previous == nil {
                    logger?.debug("\(peer): \(error.message); trying libusb")
                    do {
                        return try await openLibUSB(address, wait: .zero)
                    } catch is TransportError {
                        throw error
                    }
                } catch let error as TransportError where (error.code == .notFound || error.code == .permissionDenied) && clock.now < waitDeadline {
                    // The node went (the device re-enumerated again) or udev has not applied the rule yet.
                }
            case .libusb:
                return try await openLibUSB(address, wait: previous == nil ? .zero : max(.zero, waitDeadline - clock.now))
            case .waitForNode:
                guard clock.now < settleDeadline else {
                    if backend == .auto { return try await openLibUSB(address, wait: .zero) }
                    throw noNodeError(filter, waited: nodeSettle)
                }
            case .noNode:
                guard clock.now < waitDeadline else { throw noNodeError(filter, waited: previous == nil ? nil : wait) }
            }
            try await Task.sleep(for: Self.rescanInterval)
        }
    }

    private func openLibUSB(_ address: DeviceAddress, wait: Duration) async throws -> (transport: any Transport, opened: Opened) {
        let options = USBHIDTransport.Options(pollInterval: pollInterval, wait: wait, knownDevices: knownDevices)
        let transport = try await USBHIDTransport.open(address, options: options, logger: logger)
        return (transport, Opened(backend: .libusb, location: transport.location))
    }

    private func hidInterfaceAwaitingNode(_ filter: USBDeviceFilter) async throws -> Bool {
        let root = sysfsRoot
        return try await Blocking.perform("tuneup-hidraw-scan") { HIDRawDevices.hidInterfaceAwaitingNode(filter, sysfsRoot: root) }
    }

    /// `--usb-backend hidraw` and no node: what was looked for, and the way out.
    func noNodeError(_ filter: USBDeviceFilter, waited: Duration?) -> TransportError {
        var message = "no hidraw node is \(filter.lookingFor) (usb: \(filter.address)); `tuneup devices` lists the nodes, --usb-backend libusb reaches a headset without one"
        if let waited, waited > .zero { message += "; waited \(formatUSBDuration(waited))" }
        return TransportError(.notFound, message)
    }
}
