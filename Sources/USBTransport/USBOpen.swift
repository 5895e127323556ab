import CLibUSB
import Glibc
import Logging
import Transport

/// Finding and opening a device: one scan with a fresh context, matching, opening the device node and wrapping it in
/// the shared context (`USBEventLoop`), detaching the kernel HID driver and claiming interface 0. Blocking: runs on a
/// thread of the blocking pool. Internal.
enum USBOpen {
    /// An opened, claimed device whose handle and node are owned by whoever holds this value.
    struct Opened: @unchecked Sendable {
        let loop: USBEventLoop
        let handle: OpaquePointer
        /// The device node, which the handle wraps.
        let node: Int32
        let detachedKernelDriver: Bool
        let location: USBDeviceLocation
        /// The device number on its bus (changes when the device re-enumerates).
        let address: UInt8

        /// Releases everything (used when nobody takes the device, e.g. the opener was cancelled).
        func discard(peer: String, logger: Logger?) {
            USBConnection.release(handle: handle, node: node, detached: detachedKernelDriver, peer: peer, logger: logger)
        }
    }

    enum Attempt: Sendable {
        case opened(Opened)
        /// Nothing matched; `seen` devices (root hubs excluded) were present.
        case notFound(seen: Int)
        /// A failure that may clear up while the device finishes enumerating (or its node's permissions are set).
        case retry(TransportError)
        case failed(TransportError)

        func discard(peer: String, logger: Logger?) {
            if case .opened(let opened) = self { opened.discard(peer: peer, logger: logger) }
        }
    }

    /// One attempt. `retryAccess`: whether a permission error may be transient (while waiting for a device to come
    /// back, udev may not have applied its rule to the new node yet).
    static func attempt(filter: USBDeviceFilter, peer: String, retryAccess: Bool, logger: Logger?) -> Attempt {
        let loop: USBEventLoop
        let scan: USBScan
        do {
            loop = try USBEventLoop.shared.get()
            scan = try USBScan()
        } catch {
            return .failed(error)
        }
        defer { scan.finish() }

        var matches = scan.devices.indices.filter { filter.matches(scan.devices[$0].location) }
        var serials: [Int: String] = [:]
        if let wanted = filter.serial {
            var unreadable: [String] = []
            var denied = false
            matches = matches.filter { i in
                let (device, location, address) = scan.devices[i]
                let identity = USBStrings.identity(device: device, location: location, descriptor: scan.descriptors[i],
                                                   nodePath: USBScan.nodePath(bus: location.bus, address: address))
                serials[i] = identity.serial
                if identity.serial == nil, let problem = identity.problem {
                    unreadable.append("\(location): \(problem)")
                    denied = denied || identity.deniedAccess
                }
                return identity.serial == wanted
            }
            if matches.isEmpty, !unreadable.isEmpty {
                let error = TransportError(denied ? .permissionDenied : .io,
                                           "cannot read the serial number of \(unreadable.joined(separator: "; "))")
                return denied && !retryAccess ? .failed(error) : .retry(error)
            }
        }
        guard !matches.isEmpty else { return .notFound(seen: scan.attachedCount) }
        guard matches.count == 1 else {
            let candidates = matches.map { i -> (location: USBDeviceLocation, serial: String?) in
                let (device, location, address) = scan.devices[i]
                let serial = serials[i] ?? USBStrings.identity(
                    device: device, location: location, descriptor: scan.descriptors[i],
                    nodePath: USBScan.nodePath(bus: location.bus, address: address)).serial
                return (location, serial)
            }
            let sorted = candidates.sorted { a, b in
                a.location.bus != b.location.bus ? a.location.bus < b.location.bus
                    : a.location.ports.lexicographicallyPrecedes(b.location.ports)
            }
            return .failed(filter.ambiguityError(sorted))
        }

        let (device, location, address) = scan.devices[matches[0]]
        let node = USBScan.nodePath(bus: location.bus, address: address)
        if let problem = interfaceProblem(device) {
            return .failed(TransportError(.unsupported, "\(location) is not a LightX USB headset: \(problem)"))
        }
        let (handleOut, fd, rc0) = open(bus: location.bus, address: address, node: node, in: loop)
        var rc = rc0
        guard rc == 0, let handle = handleOut else {
            let error = LibUSBErrors.openError(rc, "cannot open \(peer) (\(location), \(node))")
            let transient = LibUSBErrors.isTransientOpenError(rc) && (rc != LIBUSB_ERROR_ACCESS.rawValue || retryAccess)
            return transient ? .retry(error) : .failed(error)
        }
        func giveUp() {
            libusb_close(handle)
            if fd >= 0 { Glibc.close(fd) }
        }
        var detached = false
        if libusb_kernel_driver_active(handle, 0) == 1 {
            rc = libusb_detach_kernel_driver(handle, 0)
            if rc == 0 {
                detached = true
                logger?.debug("\(peer): detached the kernel HID driver from \(location)")
            } else if rc != LIBUSB_ERROR_NOT_FOUND.rawValue {
                giveUp()
                let error = LibUSBErrors.openError(rc, "cannot detach the kernel HID driver from \(peer) (\(location))")
                return LibUSBErrors.isTransientOpenError(rc) && rc != LIBUSB_ERROR_ACCESS.rawValue ? .retry(error) : .failed(error)
            }
        }
        rc = libusb_claim_interface(handle, 0)
        guard rc == 0 else {
            if detached { _ = libusb_attach_kernel_driver(handle, 0) }
            giveUp()
            let error = LibUSBErrors.openError(rc, "cannot claim interface 0 of \(peer) (\(location))")
            let transient = rc == LIBUSB_ERROR_NO_DEVICE.rawValue || rc == LIBUSB_ERROR_NOT_FOUND.rawValue
            return transient ? .retry(error) : .failed(error)
        }
        logger?.debug("\(peer): opened \(location) at \(node), interface 0 claimed")
        return .opened(Opened(loop: loop, handle: handle, node: fd, detachedKernelDriver: detached, location: location, address: address))
    }

    /// Opens the device at `bus`/`address` in the shared context. Returns the handle and the device node it wraps
    /// (-1 when none), or a libusb error code.
    ///
    /// The shared context's own device list is used when it knows the device (udevd keeps it current on a normal
    /// system, and so does umockdev's fake udev). A device it has not seen — without udevd, as in the test VM, a
    /// context never learns of devices that appear after it started — joins through its node
    /// (`libusb_wrap_sys_device`).
    private static func open(bus: UInt8, address: UInt8, node: String, in loop: USBEventLoop) -> (OpaquePointer?, Int32, Int32) {
        if let device = loop.device(bus: bus, address: address) {
            defer { libusb_unref_device(device) }
            var handle: OpaquePointer?
            let rc = libusb_open(device, &handle)
            if rc == 0, let handle { return (handle, -1, 0) }
            guard rc == LIBUSB_ERROR_NO_DEVICE.rawValue || rc == LIBUSB_ERROR_NOT_FOUND.rawValue else { return (nil, -1, rc) }
        }
        return wrap(node: node, in: loop)
    }

    /// Opens the device node `path` and wraps it in the shared context. Returns the handle and the node, or a
    /// libusb error code (an errno from opening the node is mapped to the libusb code that means the same).
    private static func wrap(node path: String, in loop: USBEventLoop) -> (OpaquePointer?, Int32, Int32) {
        let fd = Glibc.open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else {
            switch errno {
            case EACCES, EPERM: return (nil, -1, LIBUSB_ERROR_ACCESS.rawValue)
            case ENOENT, ENODEV, ENXIO: return (nil, -1, LIBUSB_ERROR_NO_DEVICE.rawValue)
            case EBUSY: return (nil, -1, LIBUSB_ERROR_BUSY.rawValue)
            default: return (nil, -1, LIBUSB_ERROR_IO.rawValue)
            }
        }
        var handle: OpaquePointer?
        let rc = libusb_wrap_sys_device(loop.context, Int(fd), &handle)
        guard rc == 0, handle != nil else {
            Glibc.close(fd)
            return (nil, -1, rc == 0 ? LIBUSB_ERROR_OTHER.rawValue : rc)
        }
        return (handle, fd, 0)
    }

    /// Why the device's interface 0 cannot carry LightX reports (it must be HID, class 3), or nil when it can — or
    /// when the configuration cannot be read (then opening goes ahead and the transfers tell).
    static func interfaceProblem(_ device: OpaquePointer) -> String? {
        var configuration: UnsafeMutablePointer<libusb_config_descriptor>?
        guard libusb_get_active_config_descriptor(device, &configuration) == 0, let configuration else { return nil }
        defer { libusb_free_config_descriptor(configuration) }
        let config = configuration.pointee
        guard config.bNumInterfaces > 0, let interfaces = config.interface else {
            return "it has no interfaces"
        }
        let interface = interfaces[0]
        guard interface.num_altsetting > 0, let settings = interface.altsetting else { return "its interface 0 is empty" }
        let setting = settings[0]
        guard setting.bInterfaceNumber == 0 else { return nil }
        guard setting.bInterfaceClass == UInt8(LIBUSB_CLASS_HID.rawValue) else {
            return "its interface 0 is not HID (class 0x\(usbHex2(setting.bInterfaceClass)))"
        }
        return nil
    }
}

extension USBStrings.Identity {
    /// Whether the strings were unreadable because access to the device node was denied.
    var deniedAccess: Bool { problem?.contains("permission denied") == true }
}
