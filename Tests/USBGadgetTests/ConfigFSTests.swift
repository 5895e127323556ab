import Glibc
import Testing
import Transport
@testable import USBGadget
import TestSupport

extension USBGadgetConfiguration {
    /// The simulator's identity on the fake machine (configfs at /cfg, UDCs in /udc).
    static func fake(serial: String = "TS1-000001") -> USBGadgetConfiguration {
        var c = USBGadgetConfiguration.simulatedHeadset(serialNumber: serial)
        c.configfsRoot = "/cfg"
        c.udcClassDirectory = "/udc"
        return c
    }
}

@Suite struct ConfigurationTests {
    @Test func pathsFollowTheMeasuredLayout() {
        let c = USBGadgetConfiguration(serialNumber: "TS1-000001")
        let p = c.paths
        #expect(p.gadget == "/sys/kernel/config/usb_gadget/tuneup")
        #expect(p.strings == "/sys/kernel/config/usb_gadget/tuneup/strings/0x409")
        #expect(p.config == "/sys/kernel/config/usb_gadget/tuneup/configs/c.1")
        #expect(p.configStrings == "/sys/kernel/config/usb_gadget/tuneup/configs/c.1/strings/0x409")
        #expect(p.function == "/sys/kernel/config/usb_gadget/tuneup/functions/ffs.tuneup")
        #expect(p.functionLink == "/sys/kernel/config/usb_gadget/tuneup/configs/c.1/ffs.tuneup")
        #expect(p.mountPoint == "/dev/ffs-tuneup" && p.ep0 == "/dev/ffs-tuneup/ep0")
        #expect(p.udcFile == "/sys/kernel/config/usb_gadget/tuneup/UDC")
        #expect(p.directoriesToCreate == [p.gadget, p.strings, p.config, p.configStrings, p.function])

        var other = c
        other.gadgetName = "hs2"
        other.functionName = "hid"
        other.mountPoint = "/run/ffs"
        other.configfsRoot = "/cfg/"
        #expect(other.paths.function == "/cfg/usb_gadget/hs2/functions/ffs.hid")
        #expect(other.paths.ep0 == "/run/ffs/ep0")
    }

    @Test func attributeWritesCarryTheIdentity() {
        let c = USBGadgetConfiguration.simulatedHeadset(serialNumber: "TS1-000007", bootloader: true)
        let writes = Dictionary(uniqueKeysWithValues: c.paths.attributeWrites(for: c).map { ($0.path, $0.value) })
        let p = c.paths
        #expect(writes[p.attribute("idVendor")] == "0x1209")
        #expect(writes[p.attribute("idProduct")] == "0x0002")
        #expect(writes[p.attribute("bcdDevice")] == "0x0100")
        #expect(writes[p.attribute("bcdUSB")] == "0x0200")
        #expect(writes[p.strings + "/manufacturer"] == "Tuneup")
        #expect(writes[p.strings + "/product"] == "Tuneup Sim Headset (bootloader)")
        #expect(writes[p.strings + "/serialnumber"] == "TS1-000007")
        #expect(writes[p.configStrings + "/configuration"] == "HID")
        #expect(writes[p.config + "/MaxPower"] == "100")
        #expect(p.hex(0xABC) == "0x0abc")
    }

    @Test func identityAndAddress() throws {
        let app = USBGadgetConfiguration.simulatedHeadset(serialNumber: "TS1-000001")
        #expect(app.vendorID == 0x1209 && app.productID == 0x0001 && app.product == "Tuneup Sim Headset")
        #expect(app.manufacturer == "Tuneup")
        #expect(app.address.description == "usb:1209:0001:TS1-000001")
        let boot = USBGadgetConfiguration.simulatedHeadset(serialNumber: "TS1-000001", bootloader: true)
        #expect(boot.address.description == "usb:1209:0002:TS1-000001")
        #expect(try DeviceAddress(parsing: boot.address.description) == boot.address)
    }

    @Test func validationNamesTheBadField() {
        var c = USBGadgetConfiguration(serialNumber: "TS1-000001")
        #expect(throws: Never.self) { try c.validate() }
        func fails(_ change: (inout USBGadgetConfiguration) -> Void, _ word: String) {
            var bad = c
            change(&bad)
            do {
                try bad.validate()
                Issue.record("expected a failure mentioning \(word)")
            } catch {
                #expect(error.code == .invalidAddress)
                #expect(error.message.contains(word), "\(error.message)")
            }
        }
        fails({ $0.gadgetName = "a/b" }, "name")
        fails({ $0.gadgetName = ".." }, "name")
        fails({ $0.gadgetName = "" }, "name")
        fails({ $0.functionName = "x y" }, "function name")
        fails({ $0.udc = "../x" }, "UDC")
        fails({ $0.serialNumber = "" }, "serial number")
        fails({ $0.product = String(repeating: "p", count: 127) }, "product")
        fails({ $0.manufacturer = "a\nb" }, "manufacturer")
        fails({ $0.maxPowerMilliamps = 600 }, "MaxPower")
        fails({ $0.mountPoint = "relative" }, "mount point")
        c.udc = "dummy_udc.0"
        #expect(throws: Never.self) { try c.validate() }
    }

    @Test func parsesFunctionFSMounts() {
        let table = """
            sysfs /sys sysfs rw 0 0
            hid /dev/ffs-hid functionfs rw,relatime 0 0
            tuneup /dev/ffs\\040x functionfs rw 0 0
            configfs /sys/kernel/config configfs rw 0 0
            """
        let mounts = LinuxGadgetSystem.parseMounts(table)
        #expect(mounts.map(\.source) == ["hid", "tuneup"])
        #expect(mounts.map(\.path) == ["/dev/ffs-hid", "/dev/ffs x"])
        #expect(LinuxGadgetSystem.unescape("a\\134b\\") == "a\\b\\")
    }
}

@Suite struct ConfigFSSequenceTests {
    /// The creation sequence, in the measured order; the UDC is written only after both blobs.
    @Test func createsInTheMeasuredOrder() throws {
        let fs = FakeGadgetSystem()
        var g = ConfigFSGadget(configuration: .fake(), system: fs)
        try g.create()
        let G = "/cfg/usb_gadget/tuneup"
        #expect(fs.log == [
            "mkdir \(G)", "mkdir \(G)/strings/0x409", "mkdir \(G)/configs/c.1", "mkdir \(G)/configs/c.1/strings/0x409",
            "write \(G)/idVendor=0x1209", "write \(G)/idProduct=0x0001", "write \(G)/bcdDevice=0x0100", "write \(G)/bcdUSB=0x0200",
            "write \(G)/strings/0x409/manufacturer=Tuneup", "write \(G)/strings/0x409/product=Tuneup Sim Headset",
            "write \(G)/strings/0x409/serialnumber=TS1-000001", "write \(G)/configs/c.1/strings/0x409/configuration=HID",
            "write \(G)/configs/c.1/MaxPower=100",
            "mkdir \(G)/functions/ffs.tuneup", "symlink \(G)/configs/c.1/ffs.tuneup -> \(G)/functions/ffs.tuneup",
            "mkdir /dev/ffs-tuneup", "mount tuneup /dev/ffs-tuneup", "open /dev/ffs-tuneup/ep0",
            "write ep0 70 bytes", "write ep0 29 bytes", "write \(G)/UDC=dummy_udc.0",
        ])
        #expect(fs.blobs == [HIDDescriptors.functionFSDescriptors, HIDDescriptors.functionFSStrings()])
        #expect(g.isBound && g.udc == "dummy_udc.0" && g.ep0 >= 0)
        fs.clearLog()

        g.destroy()
        #expect(fs.log == [
            "write \(G)/UDC=\n", "close ep0", "umount /dev/ffs-tuneup", "rmdir /dev/ffs-tuneup",
            "unlink \(G)/configs/c.1/ffs.tuneup", "rmdir \(G)/functions/ffs.tuneup", "rmdir \(G)/configs/c.1/strings/0x409",
            "rmdir \(G)/configs/c.1", "rmdir \(G)/strings/0x409", "rmdir \(G)",
        ])
        #expect(fs.entries(under: "/cfg/usb_gadget").isEmpty)
        #expect(!fs.exists("/dev/ffs-tuneup"))
        #expect(!g.isBound && g.ep0 == -1)
    }

    @Test func reenumerationUnbindsRewritesAndRebinds() throws {
        let fs = FakeGadgetSystem()
        var g = ConfigFSGadget(configuration: .fake(), system: fs)
        try g.create()
        fs.clearLog()
        let G = "/cfg/usb_gadget/tuneup"
        try g.unbind()
        try g.setIdentity(productID: 0x0002, product: "Tuneup Sim Headset (bootloader)")
        try g.rebind()
        #expect(fs.log == ["write \(G)/UDC=\n", "write \(G)/idProduct=0x0002",
                           "write \(G)/strings/0x409/product=Tuneup Sim Headset (bootloader)", "write \(G)/UDC=dummy_udc.0"])
        fs.clearLog()
        // Unchanged values are not rewritten; bind/unbind are idempotent.
        try g.rebind()
        try g.setIdentity(productID: 0x0002, product: "Tuneup Sim Headset (bootloader)")
        #expect(fs.log.isEmpty)
        g.destroy()
    }

    /// A leftover gadget of the same name, laid out differently (the C fixture's "ffs.hid" at /dev/ffs-hid), bound
    /// and mounted, is removed first.
    @Test func removesALeftoverGadget() throws {
        let fs = FakeGadgetSystem()
        let G = "/cfg/usb_gadget/tuneup"
        fs.addDirectory(G)
        for d in ["functions", "configs", "strings", "os_desc"] { fs.addDirectory(G + "/" + d, isDefault: true) }
        fs.addDirectory(G + "/strings/0x409")
        fs.addDirectory(G + "/configs/c.2")
        fs.addDirectory(G + "/configs/c.2/strings", isDefault: true)
        fs.addDirectory(G + "/configs/c.2/strings/0x409")
        fs.addDirectory(G + "/functions/ffs.hid")
        fs.addLink(G + "/configs/c.2/ffs.hid", to: G + "/functions/ffs.hid")
        fs.addFile(G + "/UDC", "dummy_udc.0\n")
        fs.addDirectory("/dev/ffs-hid")
        fs.addMount(source: "hid", path: "/dev/ffs-hid")

        var g = ConfigFSGadget(configuration: .fake(), system: fs)
        try g.create()
        let log = fs.log
        let firstMkdir = try #require(log.firstIndex(of: "mkdir \(G)"))
        let removal = Array(log[..<firstMkdir])
        #expect(removal.prefix(3) == ["umount /dev/ffs-hid", "rmdir /dev/ffs-hid", "write \(G)/UDC=\n"])
        #expect(removal.contains("unlink \(G)/configs/c.2/ffs.hid"))
        #expect(removal.last == "rmdir \(G)")
        #expect(!fs.exists("/dev/ffs-hid"))
        #expect(!fs.exists(G + "/configs/c.2"))
        #expect(g.notes.contains { $0.contains("leftover") })
        g.destroy()
        #expect(fs.entries(under: "/cfg/usb_gadget").isEmpty)
    }

    @Test func aLeftoverStillInUseIsReportedAsBusy() throws {
        let fs = FakeGadgetSystem()
        let G = "/cfg/usb_gadget/tuneup"
        fs.addDirectory(G)
        fs.addDirectory(G + "/functions", isDefault: true)
        fs.addDirectory(G + "/functions/ffs.tuneup")
        fs.addDirectory("/dev/ffs-tuneup")
        fs.addMount(source: "tuneup", path: "/dev/ffs-tuneup")
        fs.fail("umount /dev/ffs-tuneup", EBUSY)
        fs.addFile(G + "/UDC", "dummy_udc.0\n")
        var g = ConfigFSGadget(configuration: .fake(), system: fs)
        do {
            try g.create()
            Issue.record("expected .busy")
        } catch {
            #expect(error.code == .busy)
            #expect(error.message.contains("in use"), "\(error.message)")
        }
        // The live gadget was not touched: still bound, still there.
        #expect(fs.file(G + "/UDC") == "dummy_udc.0\n")
        #expect(!fs.log.contains { $0.hasPrefix("write ") || $0.hasPrefix("rmdir ") })
    }

    @Test func picksTheFirstFreeUDCAndSkipsBusyOnes() throws {
        let fs = FakeGadgetSystem(udcs: ["dummy_udc.0", "dummy_udc.1", "dummy_udc.2"])
        fs.addDirectory("/cfg/usb_gadget/other")
        fs.addFile("/cfg/usb_gadget/other/UDC", "dummy_udc.0\n")
        fs.fail("write /cfg/usb_gadget/tuneup/UDC=dummy_udc.1", EBUSY)
        var g = ConfigFSGadget(configuration: .fake(), system: fs)
        #expect(try g.preflight() == ["dummy_udc.1", "dummy_udc.2", "dummy_udc.0"])
        try g.create()
        #expect(g.udc == "dummy_udc.2")
        g.destroy()

        var named = USBGadgetConfiguration.fake()
        named.udc = "dummy_udc.1"
        var h = ConfigFSGadget(configuration: named, system: fs)
        #expect(try h.preflight() == ["dummy_udc.1"])
        do {
            try h.create()
            Issue.record("expected .busy")
        } catch {
            #expect(error.code == .busy)
            #expect(error.message.contains("in use"))
        }
        // Nothing is left behind after the failure.
        #expect(fs.entries(under: "/cfg/usb_gadget/tuneup").isEmpty && !fs.exists("/cfg/usb_gadget/tuneup"))
        #expect(!fs.exists("/dev/ffs-tuneup"))

        named.udc = "dummy_udc.9"
        let missing = ConfigFSGadget(configuration: named, system: fs)
        #expect(throws: TransportError(.notFound, "")) { try missing.preflight() }
    }

    /// The one-line errors of a machine without the pieces.
    @Test func preflightErrors() {
        func message(_ fs: FakeGadgetSystem, _ code: TransportError.Code) -> String {
            var g = ConfigFSGadget(configuration: .fake(), system: fs)
            do {
                try g.create()
                Issue.record("expected \(code)")
                return ""
            } catch {
                #expect(error.code == code)
                #expect(!error.message.contains("\n"))
                return error.message
            }
        }
        #expect(message(FakeGadgetSystem(udcs: []), .notFound).hasPrefix("no USB device controller (UDC): load dummy_hcd or run on a board with one"))
        let user = FakeGadgetSystem()
        user.setUID(1000)
        #expect(message(user, .permissionDenied).contains("needs root"))
        #expect(message(FakeGadgetSystem(configfs: false), .unsupported).contains("configfs is not mounted at /cfg"))
        #expect(message(FakeGadgetSystem(libcomposite: false), .unsupported).contains("load libcomposite"))

        let noFFS = FakeGadgetSystem()
        noFFS.fail("mkdir /cfg/usb_gadget/tuneup/functions/ffs.tuneup", ENOENT)
        #expect(message(noFFS, .unsupported).contains("FunctionFS is not available"))
        #expect(noFFS.entries(under: "/cfg/usb_gadget").isEmpty, "cleaned up")

        let noMount = FakeGadgetSystem()
        noMount.fail("mount /dev/ffs-tuneup", ENODEV)
        #expect(message(noMount, .unsupported).contains("load usb_f_fs"))
        #expect(noMount.entries(under: "/cfg/usb_gadget").isEmpty && !noMount.exists("/dev/ffs-tuneup"))

        let refused = FakeGadgetSystem()
        refused.fail("write ep0 70", EINVAL)
        #expect(message(refused, .io).contains("refused the descriptors"))
        #expect(refused.entries(under: "/cfg/usb_gadget").isEmpty && refused.log.contains("close ep0"))

        let denied = FakeGadgetSystem()
        denied.fail("write /cfg/usb_gadget/tuneup/idVendor", EACCES)
        #expect(message(denied, .permissionDenied).contains("idVendor"))
    }

    /// On this host (no UDC, no configfs, no FunctionFS) the real start fails with one clear line. Only run when the
    /// machine has no UDC, so the test can never create a real gadget.
    @Test(.enabled(if: LinuxGadgetSystem().listDirectory("/sys/class/udc")?.isEmpty ?? true,
                   "this machine has a UDC: the real start could create a real gadget"))
    func startOnThisHostFailsWithOneClearLine() async throws {
        do {
            _ = try await USBGadget.start(.simulatedHeadset(serialNumber: "TS1-000001"))
            Issue.record("expected a failure")
        } catch let error as TransportError {
            #expect(error.code == .notFound)
            #expect(error.message.hasPrefix("no USB device controller (UDC): load dummy_hcd or run on a board with one"))
            #expect(!error.message.contains("\n"))
        }
    }

    /// The real system calls, on plain directories: every missing piece gives its one-line error, and a failure
    /// part-way leaves nothing behind.
    @Test func startWithTheRealSystemOnPlainDirectories() async throws {
        let dir = try TemporaryDirectory.make("tuneup-gadget-test")
        defer { _ = rmdir(dir + "/udc/dummy_udc.0"); _ = rmdir(dir + "/udc"); _ = rmdir(dir + "/cfg/usb_gadget"); _ = rmdir(dir + "/cfg"); _ = rmdir(dir) }
        var c = USBGadgetConfiguration.simulatedHeadset(serialNumber: "TS1-000001")
        c.udcClassDirectory = dir + "/udc"
        c.configfsRoot = dir + "/cfg"
        c.mountPoint = dir + "/ffs"
        func failure(_ c: USBGadgetConfiguration) async -> TransportError? {
            do {
                let g = try await USBGadget.start(c)
                await g.shutdown()
                return nil
            } catch {
                return error as? TransportError
            }
        }
        #expect(await failure(c)?.message.hasPrefix("no USB device controller (UDC)") == true)
        mkdir(dir + "/udc", 0o755)
        mkdir(dir + "/udc/dummy_udc.0", 0o755)
        #expect(await failure(c)?.message.contains("configfs is not mounted") == true)
        mkdir(dir + "/cfg", 0o755)
        mkdir(dir + "/cfg/usb_gadget", 0o755)
        // Plain directories lack configfs's default groups: creating strings/0x409 fails, and everything created is
        // removed again.
        let e = await failure(c)
        #expect(e?.code == .io && e?.message.contains("cannot create") == true, "\(String(describing: e))")
        #expect(LinuxGadgetSystem().listDirectory(dir + "/cfg/usb_gadget") == [])
    }
}
