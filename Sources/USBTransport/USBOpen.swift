import CLibUSB
import Logging
import Transport

/// Finding and opening a device: one scan with a fresh context, matching, libusb_open, detaching the kernel HID
/// driver and claiming interface 0. Blocking: runs on a dedicated thread. Internal.
enum USBOpen {
    /// An opened, claimed device whose context and handle are owned by whoever holds this value.
    struct Opened: @unchecked Sendable {
        let context: OpaquePointer
        let handle: OpaquePointer
        let detachedKernelDriver: Bool
        let location: USBDeviceLocation
        /// The device number on its bus (changes when the device re-enumerates).
        let address: UInt8

        /// Releases everything (used when nobody takes the device, e.g. the opener was cancelled).
        func discard(peer: String, logger: Logger?) {
            USBConnection.release(context: context, handle: handle, detached: detachedKernelDriver, peer: peer, logger: logger)
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
        let scan: USBScan
        do { scan = try USBScan() } catch { return .failed(error) }
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
        var handleOut: OpaquePointer?
        var rc = libusb_open(device, &handleOut)
        guard rc == 0, let handle = handleOut else {
            let error = LibUSBErrors.openError(rc, "cannot open \(peer) (\(location), \(node))")
            let transient = LibUSBErrors.isTransientOpenError(rc) && (rc != LIBUSB_ERROR_ACCESS.rawValue || retryAccess)
            return transient ? .retry(error) : .failed(error)
        }
        var detached = false
        if libusb_kernel_driver_active(handle, 0) == 1 {
            rc = libusb_detach_kernel_driver(handle, 0)
            if rc == 0 {
                detached = true
                logger?.debug("\(peer): detached the kernel HID driver from \(location)")
            } else if rc != LIBUSB_ERROR_NOT_FOUND.rawValue {
                libusb_close(handle)
                let error = LibUSBErrors.openError(rc, "cannot detach the kernel HID driver from \(peer) (\(location))")
                return LibUSBErrors.isTransientOpenError(rc) && rc != LIBUSB_ERROR_ACCESS.rawValue ? .retry(error) : .failed(error)
            }
        }
        rc = libusb_claim_interface(handle, 0)
        guard rc == 0 else {
            if detached { _ = libusb_attach_kernel_driver(handle, 0) }
            libusb_close(handle)
            let error = LibUSBErrors.openError(rc, "cannot claim interface 0 of \(peer) (\(location))")
            let transient = rc == LIBUSB_ERROR_NO_DEVICE.rawValue || rc == LIBUSB_ERROR_NOT_FOUND.rawValue
            return transient ? .retry(error) : .failed(error)
        }
        scan.keepContext()
        logger?.debug("\(peer): opened \(location) at \(node), interface 0 claimed")
        return .opened(Opened(context: scan.context, handle: handle, detachedKernelDriver: detached, location: location, address: address))
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
