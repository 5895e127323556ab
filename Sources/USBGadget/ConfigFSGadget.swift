import Glibc
import Transport

/// The configfs gadget and its FunctionFS instance: creation in the measured order, binding, identity changes and
/// teardown. Blocking; used only from the gadget's own thread (and by tests with a fake `GadgetSystem`). Internal.
///
/// Creation (`create()`): preflight checks with one-line errors, removal of a leftover gadget of the same name, the
/// configfs tree, the function symlink, the FunctionFS mount, ep0 opened with the descriptors and strings blobs each
/// written in one `write()`, then the bind to the first free UDC. A failure removes whatever was created.
/// Teardown (`destroy()`): unbind, close ep0, unmount, remove the mount point, unlink the function, remove the
/// directories bottom-up.
struct ConfigFSGadget {
    let configuration: USBGadgetConfiguration
    let paths: GadgetPaths
    let system: any GadgetSystem
    /// ep0, open after `create()`.
    private(set) var ep0: Int32 = -1
    /// The UDC the gadget is bound to, or was last bound to.
    private(set) var udc: String?
    /// Whether the gadget is bound now.
    private(set) var isBound = false
    /// The identity written to configfs now.
    private(set) var productID: UInt16
    private(set) var product: String
    /// Log lines for the owner (what was removed, which UDC was chosen).
    var notes: [String] = []

    init(configuration: USBGadgetConfiguration, system: any GadgetSystem) {
        self.configuration = configuration
        self.paths = configuration.paths
        self.system = system
        self.productID = configuration.productID
        self.product = configuration.product
    }

    // MARK: - Errors

    /// No UDC at all.
    static func noUDC(_ directory: String) -> TransportError {
        TransportError(.notFound, "no USB device controller (UDC): load dummy_hcd or run on a board with one (\(directory) is empty or missing)")
    }

    /// FunctionFS missing (usb_f_fs not loaded or not built).
    static func noFunctionFS(_ detail: String, errno: Int32?) -> TransportError {
        TransportError(.unsupported, "FunctionFS is not available (\(detail)): load usb_f_fs", errno: errno)
    }

    private func failure(_ what: String, _ code: Int32) -> TransportError {
        let kind: TransportError.Code = code == EACCES || code == EPERM ? .permissionDenied : (code == EBUSY ? .busy : .io)
        return TransportError(kind, "USB gadget: \(what): \(POSIX.describe(code))", errno: code)
    }

    // MARK: - Preflight

    /// The UDC names to try, in order. Throws the one-line errors for a missing UDC, a missing root, a missing
    /// configfs or libcomposite.
    func preflight() throws(TransportError) -> [String] {
        let all = system.listDirectory(configuration.udcClassDirectory) ?? []
        guard !all.isEmpty else { throw Self.noUDC(configuration.udcClassDirectory) }
        if let wanted = configuration.udc, !all.contains(wanted) {
            throw TransportError(.notFound, "no USB device controller named '\(wanted)' in \(configuration.udcClassDirectory) (there is \(all.joined(separator: ", ")))")
        }
        guard system.effectiveUserID == 0 else {
            throw TransportError(.permissionDenied, "a USB gadget needs root: configfs and FunctionFS are writable by root only")
        }
        guard system.exists(paths.gadgetsDirectory) else {
            if (system.listDirectory(configuration.configfsRoot) ?? []).isEmpty {
                throw TransportError(.unsupported, "configfs is not mounted at \(configuration.configfsRoot): mount -t configfs none \(configuration.configfsRoot)")
            }
            throw TransportError(.unsupported, "no USB gadget support in configfs (\(paths.gadgetsDirectory) is missing): load libcomposite")
        }
        if let wanted = configuration.udc { return [wanted] }
        // Free UDCs first: those no other configfs gadget names in its UDC attribute.
        let used = Set((system.listDirectory(paths.gadgetsDirectory) ?? []).filter { $0 != paths.gadgetName }.compactMap { name -> String? in
            guard let bytes = system.readFile(paths.gadgetsDirectory + "/" + name + "/UDC") else { return nil }
            let text = String(decoding: bytes, as: UTF8.self).trimmingWhitespace()
            return text.isEmpty ? nil : text
        })
        return all.filter { !used.contains($0) } + all.filter { used.contains($0) }
    }

    // MARK: - Creation

    /// Creates, mounts, writes the blobs and binds. On failure everything created is removed again.
    mutating func create() throws(TransportError) {
        let udcs = try preflight()
        try removeLeftover()
        do {
            try build()
            try bind(candidates: udcs)
        } catch {
            destroy()
            throw error
        }
    }

    private mutating func build() throws(TransportError) {
        for directory in paths.directoriesToCreate.dropLast() {
            try makeDirectory(directory)
        }
        for (path, value) in paths.attributeWrites(for: configuration) {
            if let e = system.writeFile(path, Array(value.utf8)) { throw failure("cannot write \(path)", e) }
        }
        if let e = system.makeDirectory(paths.function), e != EEXIST {
            throw Self.noFunctionFS("cannot create \(paths.function): \(POSIX.describe(e))", errno: e)
        }
        if let e = system.makeSymlink(target: paths.function, at: paths.functionLink), e != EEXIST {
            throw failure("cannot link \(paths.function) into \(paths.config)", e)
        }
        try makeDirectory(paths.mountPoint)
        if let e = system.mountFunctionFS(source: paths.functionName, at: paths.mountPoint) {
            if e == ENODEV { throw Self.noFunctionFS("the kernel has no functionfs file system", errno: e) }
            throw failure("cannot mount functionfs '\(paths.functionName)' on \(paths.mountPoint)", e)
        }
        switch system.openEndpointZero(paths.ep0) {
        case .success(let fd): ep0 = fd
        case .failure(let e): throw failure("cannot open \(paths.ep0)", e.code)
        }
        if let e = system.writeBlob(ep0, HIDDescriptors.functionFSDescriptors) {
            throw failure("FunctionFS refused the descriptors written to \(paths.ep0)", e)
        }
        if let e = system.writeBlob(ep0, HIDDescriptors.functionFSStrings(interfaceName: configuration.interfaceName)) {
            throw failure("FunctionFS refused the strings written to \(paths.ep0)", e)
        }
    }

    private func makeDirectory(_ path: String) throws(TransportError) {
        if let e = system.makeDirectory(path), e != EEXIST { throw failure("cannot create \(path)", e) }
    }

    private mutating func bind(candidates: [String]) throws(TransportError) {
        var busy: [String] = []
        for name in candidates {
            guard let e = system.writeFile(paths.udcFile, Array(name.utf8)) else {
                udc = name
                isBound = true
                notes.append("bound to UDC \(name)")
                return
            }
            guard e == EBUSY else { throw failure("cannot bind to UDC \(name) (\(paths.udcFile))", e) }
            busy.append(name)
        }
        throw TransportError(.busy, "every USB device controller is in use (\(busy.joined(separator: ", "))): stop the other gadget or load dummy_hcd with num=2", errno: EBUSY)
    }

    // MARK: - Bind, unbind, identity

    /// Binds again to the UDC used before (the host sees the device appear). No-op when bound.
    mutating func rebind() throws(TransportError) {
        guard !isBound else { return }
        guard let udc else { throw TransportError(.closed, "USB gadget: not set up") }
        if let e = system.writeFile(paths.udcFile, Array(udc.utf8)) { throw failure("cannot bind to UDC \(udc)", e) }
        isBound = true
    }

    /// Unbinds (the host sees a disconnect). No-op when unbound.
    mutating func unbind() throws(TransportError) {
        guard isBound else { return }
        if let e = system.writeFile(paths.udcFile, Array("\n".utf8)) { throw failure("cannot unbind (\(paths.udcFile))", e) }
        isBound = false
    }

    /// Writes idProduct and the product string (allowed while unbound; the host reads them at enumeration).
    mutating func setIdentity(productID: UInt16, product: String) throws(TransportError) {
        if productID != self.productID {
            if let e = system.writeFile(paths.attribute("idProduct"), Array(paths.hex(productID).utf8)) {
                throw failure("cannot write idProduct", e)
            }
            self.productID = productID
        }
        if product != self.product {
            if let e = system.writeFile(paths.strings + "/product", Array(product.utf8)) { throw failure("cannot write the product string", e) }
            self.product = product
        }
    }

    // MARK: - Teardown

    /// Removes the gadget in the measured order; best effort, never throws. Idempotent.
    mutating func destroy() {
        if system.exists(paths.gadget) { _ = system.writeFile(paths.udcFile, Array("\n".utf8)) }
        isBound = false
        if ep0 >= 0 {
            system.closeDescriptor(ep0)
            ep0 = -1
        }
        if system.functionFSMounts().contains(where: { $0.path == paths.mountPoint }) {
            _ = system.unmount(paths.mountPoint)
        }
        _ = system.removeDirectory(paths.mountPoint)
        if system.isSymlink(paths.functionLink) { _ = system.removeLink(paths.functionLink) }
        for directory in paths.directoriesToCreate.reversed() where system.exists(directory) {
            _ = system.removeDirectory(directory)
        }
    }

    /// Removes a gadget of this name left by an earlier run, whatever its layout: unmount the FunctionFS instances of
    /// its functions, unbind, unlink its functions from its configurations, remove its directories. Throws `.busy`,
    /// touching nothing, when another process still serves it (its FunctionFS cannot be unmounted).
    mutating func removeLeftover() throws(TransportError) {
        let g = paths.gadget
        // Our mount point may hold a FunctionFS instance from an earlier run even without the gadget.
        let mounts = system.functionFSMounts()
        guard system.exists(g) else {
            if mounts.contains(where: { $0.path == paths.mountPoint }) { _ = system.unmount(paths.mountPoint) }
            return
        }
        notes.append("removing a leftover gadget \(g)")
        // Unmount first: while a process still serves the gadget (ep0 open) this fails with EBUSY and nothing has
        // been touched yet; a crashed server's gadget is already unbound (closing ep0 unbinds).
        let functions = system.listDirectory(g + "/functions") ?? []
        let instances = Set(functions.filter { $0.hasPrefix("ffs.") }.map { String($0.dropFirst(4)) })
        for mount in mounts where instances.contains(mount.source) || mount.path == paths.mountPoint {
            if let e = system.unmount(mount.path) {
                throw TransportError(.busy, "a USB gadget named '\(paths.gadgetName)' is in use (cannot unmount \(mount.path): \(POSIX.describe(e))); stop the process serving it", errno: e)
            }
            _ = system.removeDirectory(mount.path)
        }
        if let current = system.readFile(paths.udcFile), !String(decoding: current, as: UTF8.self).trimmingWhitespace().isEmpty {
            _ = system.writeFile(paths.udcFile, Array("\n".utf8))
        }
        for config in system.listDirectory(g + "/configs") ?? [] {
            let c = g + "/configs/" + config
            for entry in system.listDirectory(c) ?? [] where system.isSymlink(c + "/" + entry) {
                _ = system.removeLink(c + "/" + entry)
            }
            for language in system.listDirectory(c + "/strings") ?? [] {
                _ = system.removeDirectory(c + "/strings/" + language)
            }
            _ = system.removeDirectory(c)
        }
        for function in functions { _ = system.removeDirectory(g + "/functions/" + function) }
        for language in system.listDirectory(g + "/strings") ?? [] {
            _ = system.removeDirectory(g + "/strings/" + language)
        }
        if let e = system.removeDirectory(g) {
            throw TransportError(.busy, "cannot remove the leftover USB gadget \(g): \(POSIX.describe(e))", errno: e)
        }
    }
}

extension String {
    /// Without leading and trailing spaces, tabs and newlines.
    func trimmingWhitespace() -> String {
        let ws: Set<Character> = [" ", "\t", "\n", "\r"]
        return String(drop { ws.contains($0) }.reversed().drop { ws.contains($0) }.reversed())
    }
}
