import Foundation
import LightX
import Testing

/// The CLI's USB back end against a scripted device: `tuneup` runs under `umockdev-run`, which fakes sysfs and
/// `/dev/bus/usb` and answers usbfs ioctls from a usbmon capture (pcap) written by the test.
///
/// - What umockdev expresses: a device description (descriptors, sysfs attributes), and an in-order replay of
///   control transfers: setup packets and OUT data must match exactly, IN data, short lengths and URB errors
///   (`-EPIPE` = stall, `-ENODEV` = unplugged) come from the capture. An empty testbed is a machine without the device.
/// - What it cannot express: a busy interface (umockdev answers every CLAIMINTERFACE with success), the kernel HID
///   driver (GETDRIVER/DISCONNECT are not emulated, so detaching and re-attaching are not exercised here), and
///   timing-dependent polling ("nothing ready" N times) beyond a fixed script. Those are proved in the VM (tools/vm)
///   and by the unit tests of USBTransport.
///
/// Without `umockdev-run` these tests are skipped, except on CI (`CI=true`), where `umockdevIsInstalled` fails with
/// an install hint.
@Suite(.serialized) struct USBMockTests {
    // MARK: Error paths

    @Test(.enabled(if: ProcessInfo.processInfo.environment["CI"] == "true",
                   "only CI (CI=true) must have umockdev-run; elsewhere its tests are skipped with their own reason"))
    func umockdevIsInstalled() throws {
        #expect(UMockdev.runPath != nil, "\(UMockdev.installHint)")
    }

    @Test(.enabled(if: UMockdev.available, UMockdev.skipReason))
    func deviceGoneIsNotFound() async throws {
        let r = try await UMockdev.run(["battery", "--device", "usb:1209:0001"], devices: [])
        #expect(r.status == 69, "\(r.stderr)")
        #expect(r.stderrLines == ["tuneup: USB device usb:1209:0001 not found: no device is 1209:0001 or its partner 1209:0002; no USB devices are visible at all"])
        #expect(r.stdout.isEmpty)
    }

    @Test(.enabled(if: UMockdev.available, UMockdev.skipReason))
    func otherDevicesAreNotMistakenForTheHeadset() async throws {
        let r = try await UMockdev.run(["battery", "--device", "usb:1209:0001:TS1-999999"],
                                 devices: [.headset(), .headset(port: 2, product: 0x0003, serial: "X")])
        #expect(r.status == 69, "\(r.stderr)")
        #expect(r.stderrLines.count == 1)
        #expect(r.stderr.contains("not found: no device is 1209:0001 or its partner 1209:0002 with serial TS1-999999 (2 other USB devices present"))
    }

    @Test(.enabled(if: UMockdev.available, UMockdev.skipReason))
    func stallOnGetReport() async throws {
        let r = try await UMockdev.run(["battery", "--device", "usb:1209:0001"], devices: [.headset()],
                                 script: try Script.batteryRequest() + [.get(0xF0, status: -32)])
        #expect(r.status == 69, "\(r.stderr)")
        #expect(r.stderrLines.count == 1, "\(r.stderr)")
        #expect(r.stderr.contains("usb:1209:0001: the device stalled report 0xF0 (GET_REPORT 0xF0)"), "\(r.stderr)")
    }

    @Test(.enabled(if: UMockdev.available, UMockdev.skipReason))
    func shortHeaderReport() async throws {
        let r = try await UMockdev.run(["battery", "--device", "usb:1209:0001"], devices: [.headset()],
                                 script: try Script.batteryRequest() + [.get(0xF0, answer: [0xF0, 0x01, 0x08, 0x40, 0x81])])
        #expect(r.status == 69, "\(r.stderr)")
        #expect(r.stderrLines.count == 1, "\(r.stderr)")
        #expect(r.stderr.contains("usb:1209:0001: short report 0xF0: got 5 of 14 bytes"), "\(r.stderr)")
    }

    @Test(.enabled(if: UMockdev.available, UMockdev.skipReason))
    func shortBufferReport() async throws {
        let reply = try Script.batteryReply()
        let r = try await UMockdev.run(["battery", "--device", "usb:1209:0001"], devices: [.headset()],
                                 script: try Script.batteryRequest() + [
                                    .get(0xF0, answer: [0xF0, 0x01] + reply.header.encoded),
                                    .get(0xF1, answer: [0xF1, 87, 0]),
                                 ])
        #expect(r.status == 69, "\(r.stderr)")
        #expect(r.stderrLines.count == 1, "\(r.stderr)")
        #expect(r.stderr.contains("short report 0xF1: got 3 bytes, the header announced 4 buffer bytes (5 with the report id)"), "\(r.stderr)")
    }

    @Test(.enabled(if: UMockdev.available, UMockdev.skipReason))
    func unpluggedMidTransfer() async throws {
        let r = try await UMockdev.run(["battery", "--device", "usb:1209:0001"], devices: [.headset()],
                                 script: try Script.batteryRequest() + [.get(0xF0, status: -19)])
        #expect(r.status == 69, "\(r.stderr)")
        #expect(r.stderrLines.count == 1, "\(r.stderr)")
        #expect(r.stderr.contains("usb:1209:0001: device unplugged"), "\(r.stderr)")
    }

    @Test(.enabled(if: UMockdev.available, UMockdev.skipReason))
    func interfaceThatIsNotHIDIsRefused() async throws {
        let r = try await UMockdev.run(["battery", "--device", "usb:1-1"], devices: [.headset(interfaceClass: 0x08)])
        #expect(r.status == 69, "\(r.stderr)")
        #expect(r.stderrLines == ["tuneup: usb:1-1 (1209:0001) is not a LightX USB headset: its interface 0 is not HID (class 0x08)"])
    }

    @Test(.enabled(if: UMockdev.available, UMockdev.skipReason))
    func twoHeadsetsNeedASerial() async throws {
        let r = try await UMockdev.run(["battery", "--device", "usb:1209:0001"],
                                 devices: [.headset(serial: "TS1-000001"), .headset(port: 2, product: 0x0002, serial: "TS1-000002")])
        #expect(r.status == 69, "\(r.stderr)")
        #expect(r.stderrLines == ["tuneup: usb:1209:0001 matches 2 USB devices: usb:1-1 (1209:0001) serial TS1-000001; usb:1-2 (1209:0002) serial TS1-000002; add the serial (usb:VID:PID:SERIAL) or use the port form usb:BUS-PORT"])
    }

    @Test(.enabled(if: UMockdev.available && UMockdev.canDropRoot, "needs root, setpriv and umockdev-run"))
    func permissionDeniedPointsAtTheUdevRule() async throws {
        let r = try await UMockdev.run(["battery", "--device", "usb:1209:0001"], devices: [.headset()], denyNode: true)
        #expect(r.status == 69, "\(r.stderr)")
        #expect(r.stderrLines.count == 1, "\(r.stderr)")
        #expect(r.stderr.contains("cannot open usb:1209:0001 (usb:1-1 (1209:0001), /dev/bus/usb/001/002): permission denied"), "\(r.stderr)")
        #expect(r.stderr.contains("tools/udev/"))
    }

    // MARK: Success

    @Test(.enabled(if: UMockdev.available, UMockdev.skipReason))
    func batteryOverScriptedReports() async throws {
        let reply = try Script.batteryReply()
        let script = try Script.batteryRequest() + [
            .get(0xF0, answer: [0xF0] + [UInt8](repeating: 0, count: 13)),  // nothing ready yet: poll again
            .get(0xF0, answer: [0xF0, 0x01] + reply.header.encoded),
            .get(0xF1, answer: [0xF1] + reply.buffer + [UInt8](repeating: 0, count: 256 - reply.buffer.count)),
        ]
        let text = try await UMockdev.run(["battery", "--device", "usb:1209:0001"], devices: [.headset()], script: script)
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout == "87%\n")
        #expect(text.stderr.isEmpty, "\(text.stderr)")
        // The same device by port, found as the bootloader partner, in JSON.
        let json = try await UMockdev.run(["battery", "--device", "usb:1209:0002", "--format", "json"], devices: [.headset()], script: script)
        #expect(json.status == 0, "\(json.stderr)")
        #expect(try TuneupTests.json(json.stdout)["percent"] as? Int == 87)
        let port = try await UMockdev.run(["battery", "--device", "usb:1-1", "--poll-interval", "5ms"], devices: [.headset()], script: script)
        #expect(port.status == 0, "\(port.stderr)")
        #expect(port.stdout == "87%\n")
    }

    // MARK: tuneup devices

    @Test(.enabled(if: UMockdev.available, UMockdev.skipReason))
    func devicesListsHeadsetsWithTheirStrings() async throws {
        let devices: [UMockdev.Device] = [
            .headset(),
            .headset(port: 2, vendor: 0x1D6B, product: 0x0104, serial: nil, manufacturer: "Other", name: "Gadget"),
        ]
        let text = try await UMockdev.run(["devices"], devices: devices)
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout == """
            usb:1-1  1209:0001 (application; bootloader 1209:0002)
              Manufacturer  Tuneup
              Product       Tuneup Sim Headset
              Serial        TS1-000001
              Open with     --device usb:1209:0001:TS1-000001
              Reach by      libusb (no hidraw node)

            """)
        let all = try await UMockdev.run(["devices", "--all", "--format", "json"], devices: devices)
        #expect(all.status == 0, "\(all.stderr)")
        let list = try TuneupTests.json(all.stdout)["devices"] as? [[String: Any]] ?? []
        #expect(list.count == 2)
        let headset = list.first { $0["vendorID"] as? String == "1209" }
        #expect(headset?["address"] as? String == "usb:1209:0001:TS1-000001")
        #expect(headset?["port"] as? String == "usb:1-1")
        #expect(headset?["role"] as? String == "application")
        #expect(headset?["partnerProductID"] as? String == "0002")
        #expect(headset?["product"] as? String == "Tuneup Sim Headset")
        #expect(headset?["access"] as? String == "ok")
        let other = list.first { $0["vendorID"] as? String == "1d6b" }
        #expect(other?["address"] as? String == "usb:1-2")
        #expect(other?["role"] == nil)
        #expect(other?["manufacturer"] as? String == "Other")
    }

    @Test(.enabled(if: UMockdev.available, UMockdev.skipReason))
    func devicesHonoursTuneupUSBIDs() async throws {
        let devices: [UMockdev.Device] = [.headset(port: 3, vendor: 0x0A12, product: 0x0200, serial: "B1")]
        let plain = try await UMockdev.run(["devices"], devices: devices)
        #expect(plain.status == 0)
        #expect(plain.stdout.hasPrefix("No USB headsets found (looking for 1209:0001/0002;"), "\(plain.stdout)")
        let known = try await UMockdev.run(["devices", "--format", "json"], devices: devices, environment: ["TUNEUP_USB_IDS": "0a12:0100/0200"])
        #expect(known.status == 0, "\(known.stderr)")
        let o = try TuneupTests.json(known.stdout)
        #expect(o["knownIDs"] as? [String] == ["1209:0001/0002", "0a12:0100/0200"])
        let entry = (o["devices"] as? [[String: Any]])?.first
        #expect(entry?["role"] as? String == "bootloader")
        #expect(entry?["partnerProductID"] as? String == "0100")
        let bad = try await UMockdev.run(["devices"], devices: devices, environment: ["TUNEUP_USB_IDS": "0a12"])
        #expect(bad.status == 64)
        #expect(bad.stderrLines == ["tuneup: bad TUNEUP_USB_IDS entry '0a12': expected VVVV:PPPP[/BBBB] in hex, e.g. 1209:0001/0002"])
    }

    @Test(.enabled(if: UMockdev.available, UMockdev.skipReason))
    func devicesWithNothingAttached() async throws {
        let r = try await UMockdev.run(["devices"], devices: [])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "No USB headsets found (looking for 1209:0001/0002; add others with TUNEUP_USB_IDS=VVVV:PPPP[/BBBB], or list every device with --all).\n")
        let json = try await UMockdev.run(["devices", "--format", "json"], devices: [])
        #expect((try TuneupTests.json(json.stdout)["devices"] as? [Any])?.isEmpty == true)
    }

    /// A machine without a USB subsystem is not "nothing attached": exit 69, as the help says.
    @Test(.enabled(if: UMockdev.available, UMockdev.skipReason))
    func devicesWithoutUSBSupport() async throws {
        for args in [["devices"], ["devices", "--all", "--format", "json"]] {
            let r = try await UMockdev.run(args, devices: [], usbSubsystem: false)
            #expect(r.status == 69, "\(args): \(r.stderr)")
            #expect(r.stdout.isEmpty && r.stderrLines.count == 1 && r.stderr.contains("no USB subsystem"), "\(r.stderr)")
        }
    }
}

/// The control transfers a test expects, in order (a usbmon capture for umockdev's pcap replay).
enum Script {
    /// One control transfer: the setup packet, the OUT data, the URB status, the IN data.
    struct Transfer {
        var setup: [UInt8]
        var outData: [UInt8] = []
        var status: Int32 = 0
        var inData: [UInt8] = []

        /// SET_REPORT (feature) of `report` (byte 0 is its id).
        static func set(_ report: [UInt8]) -> Transfer {
            let n = report.count
            return Transfer(setup: [0x21, 0x09, report.first ?? 0, 0x03, 0, 0, UInt8(n & 0xFF), UInt8(n >> 8)], outData: report)
        }

        /// GET_REPORT (feature) of report `id`, as the host asks for it (14 or 257 bytes).
        static func get(_ id: UInt8, answer: [UInt8] = [], status: Int32 = 0) -> Transfer {
            let n = id == 0xF0 ? 14 : 257
            return Transfer(setup: [0xA1, 0x01, id, 0x03, 0, 0, UInt8(n & 0xFF), UInt8(n >> 8)], status: status, inData: answer)
        }
    }

    /// `tuneup battery`'s request as the contract puts it on the wire: SET_REPORT 0xF1 with the 256-byte zero
    /// argument, then SET_REPORT 0xF0 with the header (08 40 81 40, command 0xB0, param1 256).
    static func batteryRequest() throws -> [Transfer] {
        let packet = RawPacketCodec.encode(try RequestStyle.usb.request(.read, .appBatteryLevel))
        #expect(Array(packet.prefix(12)) == [0x08, 0x40, 0x81, 0x40, 0, 0, 0, 0xB0, 0, 1, 0, 0])
        return [.set([0xF1] + packet.dropFirst(12)), .set([0xF0, 0x00] + packet.prefix(12))]
    }

    /// The device's reply: modules unchanged (USB), battery 87 as a u32.
    static func batteryReply() throws -> Packet {
        try Packet.reply(to: try RequestStyle.usb.request(.read, .appBatteryLevel), buffer: [87, 0, 0, 0], swapModules: false)
    }

    /// The capture: pcap, link type 220 (USB_LINUX_MMAPPED), an 'S' and a 'C' record per transfer, for device 2 on
    /// bus 1.
    static func pcap(_ transfers: [Transfer]) -> Data {
        var out = Data()
        out.le(UInt32(0xA1B2_C3D4)); out.le(UInt16(2)); out.le(UInt16(4))
        out.le(Int32(0)); out.le(UInt32(0)); out.le(UInt32(65535)); out.le(UInt32(220))
        var time = 1_000_000  // microseconds
        for (i, t) in transfers.enumerated() {
            let isIn = t.setup[0] & 0x80 != 0
            let endpoint: UInt8 = isIn ? 0x80 : 0x00
            let wLength = Int(t.setup[6]) | Int(t.setup[7]) << 8
            record(&out, id: UInt64(i + 1), type: "S", endpoint: endpoint, status: -115, length: wLength,
                   setup: t.setup, data: isIn ? [] : t.outData, time: time)
            time += 1000
            let completed = isIn ? t.inData.count : (t.status == 0 ? t.outData.count : 0)
            record(&out, id: UInt64(i + 1), type: "C", endpoint: endpoint, status: t.status, length: completed,
                   setup: nil, data: isIn ? t.inData : [], time: time)
            time += 1000
        }
        return out
    }

    private static func record(_ out: inout Data, id: UInt64, type: Character, endpoint: UInt8, status: Int32, length: Int,
                               setup: [UInt8]?, data: [UInt8], time: Int) {
        var header = Data()
        header.le(id)
        header.append(type.asciiValue ?? 0)
        header.append(2)  // control
        header.append(endpoint)
        header.append(2)  // device number
        header.le(UInt16(1))  // bus
        header.append(setup == nil ? UInt8(ascii: "-") : 0)
        header.append(data.isEmpty ? (endpoint & 0x80 != 0 ? UInt8(ascii: "<") : UInt8(ascii: ">")) : 0)
        header.le(Int64(time / 1_000_000)); header.le(Int32(time % 1_000_000))
        header.le(status); header.le(UInt32(length)); header.le(UInt32(data.count))
        header.append(contentsOf: setup ?? [UInt8](repeating: 0, count: 8))
        header.le(Int32(0)); header.le(Int32(0)); header.le(UInt32(0)); header.le(UInt32(0))
        let body = header + Data(data)
        out.le(UInt32(time / 1_000_000)); out.le(UInt32(time % 1_000_000))
        out.le(UInt32(body.count)); out.le(UInt32(body.count))
        out.append(body)
    }
}

extension Data {
    fileprivate mutating func le<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }
}

/// Running `tuneup` under `umockdev-run`.
enum UMockdev {
    /// A fake USB device on bus 1: its descriptors and the sysfs attributes libusb and `tuneup devices` read.
    struct Device: Sendable {
        var port: Int
        var vendor: UInt16
        var product: UInt16
        var serial: String?
        var manufacturer: String?
        var productName: String?
        var interfaceClass: UInt8

        /// The simulated headset (1209:0001, HID interface 0) at port `port`, device number `port + 1`; `name` is its
        /// product string.
        static func headset(port: Int = 1, vendor: UInt16 = 0x1209, product: UInt16 = 0x0001, serial: String? = "TS1-000001",
                            manufacturer: String? = "Tuneup", name productName: String? = "Tuneup Sim Headset",
                            interfaceClass: UInt8 = 0x03) -> Device {
            Device(port: port, vendor: vendor, product: product, serial: serial, manufacturer: manufacturer,
                   productName: productName, interfaceClass: interfaceClass)
        }

        var devnum: Int { port + 1 }
        var sysfsPath: String { "/sys/devices/pci0000:00/0000:00:14.0/usb1/1-\(port)" }
        var node: String { String(format: "/dev/bus/usb/001/%03d", devnum) }

        /// Device + configuration descriptors as sysfs `descriptors` holds them (uppercase hex).
        var descriptorsHex: String {
            let device: [UInt8] = [0x12, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 0x40,
                                   UInt8(vendor & 0xFF), UInt8(vendor >> 8), UInt8(product & 0xFF), UInt8(product >> 8),
                                   0x00, 0x01, manufacturer == nil ? 0 : 1, productName == nil ? 0 : 2, serial == nil ? 0 : 3, 0x01]
            let config: [UInt8] = [0x09, 0x02, 0x22, 0x00, 0x01, 0x01, 0x04, 0x80, 0x32,
                                   0x09, 0x04, 0x00, 0x00, 0x01, interfaceClass, 0x00, 0x00, 0x05,
                                   0x09, 0x21, 0x11, 0x01, 0x00, 0x01, 0x22, 0x20, 0x00,
                                   0x07, 0x05, 0x81, 0x03, 0x40, 0x00, 0x04]
            return (device + config).map { String(format: "%02X", $0) }.joined()
        }

        /// The umockdev-record text for this device.
        var record: String {
            let hex = descriptorsHex
            var lines = [
                "P: \(sysfsPath.dropFirst("/sys".count))",
                "N: bus/usb/001/\(String(format: "%03d", devnum))=\(hex)",
                "E: BUSNUM=001", "E: DEVNAME=\(node)", "E: DEVNUM=\(String(format: "%03d", devnum))",
                "E: DEVTYPE=usb_device", "E: DRIVER=usb", "E: MAJOR=189", "E: MINOR=\(devnum - 1)",
                "E: PRODUCT=\(String(vendor, radix: 16))/\(String(product, radix: 16))/100", "E: SUBSYSTEM=usb",
                "A: bConfigurationValue=1", "A: bDeviceClass=00", "A: bNumConfigurations=1", "A: bNumInterfaces= 1",
                "A: busnum=1", "A: descriptors=\(hex)", "H: descriptors=\(hex)", "A: devnum=\(devnum)", "A: devpath=\(port)",
                "A: idProduct=\(String(format: "%04x", product))", "A: idVendor=\(String(format: "%04x", vendor))",
                "A: speed=480",
            ]
            if let manufacturer { lines.append("A: manufacturer=\(manufacturer)") }
            if let productName { lines.append("A: product=\(productName)") }
            if let serial { lines.append("A: serial=\(serial)") }
            return lines.joined(separator: "\n") + "\n"
        }
    }

    static let installHint = "umockdev-run not found: install umockdev (apt-get install umockdev; tools/install-deps.sh does it)"

    /// `umockdev-run` on the PATH, if any.
    static let runPath: String? = findOnPath("umockdev-run")

    static var available: Bool { runPath != nil }

    static let skipReason: Comment = "umockdev-run is not installed (\(installHint))"

    /// Whether the permission test can run: as root, with setpriv to become nobody.
    static var canDropRoot: Bool { geteuid() == 0 && findOnPath("setpriv") != nil }

    static func findOnPath(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            let candidate = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// Runs `tuneup ARGS` in a testbed with `devices`; `script` is replayed for the first device.
    /// `denyNode`: run as nobody with the first device's node made unreadable (permission denied).
    /// The wait runs off the cooperative pool (see `CLI.run`).
    /// `usbSubsystem: false` with no devices: a machine without USB at all (no /sys/bus/usb); otherwise the testbed
    /// has the USB bus even when nothing is attached.
    static func run(_ args: [String], devices: [Device], script: [Script.Transfer]? = nil, denyNode: Bool = false,
                    environment: [String: String] = [:], usbSubsystem: Bool = true, timeout: Double = 60) async throws -> CLI.Result {
        let transfers = script.map { Script.pcap($0) }
        return try await offThePool {
            try runBlocking(args, devices: devices, pcap: transfers, denyNode: denyNode, environment: environment,
                            usbSubsystem: usbSubsystem, timeout: timeout)
        }
    }

    private static func runBlocking(_ args: [String], devices: [Device], pcap: Data?, denyNode: Bool,
                                    environment: [String: String], usbSubsystem: Bool, timeout: Double) throws -> CLI.Result {
        guard let runPath else { throw CLIError(installHint) }
        let dir = Scratch.directory
        var umockArgs: [String] = []
        for (i, device) in devices.enumerated() {
            let file = "\(dir)/device\(i).umockdev"
            try device.record.write(toFile: file, atomically: true, encoding: .utf8)
            umockArgs += ["--device", file]
        }
        if let pcap, let first = devices.first {
            let file = "\(dir)/script.pcap"
            try pcap.write(to: URL(fileURLWithPath: file))
            umockArgs += ["--pcap", "\(first.sysfsPath)=\(file)"]
        }
        var command = umockArgs + ["--", CLI.binary.path] + args
        if devices.isEmpty, usbSubsystem {
            command = ["--", "/bin/sh", "-c", "mkdir -p \"$UMOCKDEV_DIR/sys/bus/usb/devices\" && exec \"$0\" \"$@\"", CLI.binary.path] + args
        }
        var executable = URL(fileURLWithPath: runPath)
        if denyNode, let first = devices.first {
            // As nobody, the testbed belongs to nobody; take the node's permissions away inside it.
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: dir)
            command = umockArgs + ["--", "/bin/sh", "-c", "chmod 000 \"$UMOCKDEV_DIR\(first.node)\" && exec \"$0\" \"$@\"", CLI.binary.path] + args
            executable = URL(fileURLWithPath: findOnPath("setpriv") ?? "/usr/bin/setpriv")
            command = ["--reuid=65534", "--regid=65534", "--clear-groups", "--", runPath] + command
        }
        var env: [String: String?] = ["XDG_STATE_HOME": dir, "TUNEUP_DEVICE": nil, "TUNEUP_USB_IDS": nil,
                                      "UMOCKDEV_DEBUG": nil, "G_MESSAGES_DEBUG": nil]
        for (key, value) in environment { env[key] = value }
        var result = try CLI.runProcess(executable, command, environment: env, timeout: timeout,
                                        name: "umockdev-run tuneup \(args.joined(separator: " "))")
        // umockdev's own diagnostics (GLib messages about the replay) are not tuneup's output.
        let stderr = result.stderr.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.hasPrefix("** ") && !$0.hasPrefix("(umockdev-run:") && !$0.contains("umockdev-") }
            .joined(separator: "\n")
        result.stderr = stderr.trimmingCharacters(in: .newlines).isEmpty ? "" : stderr
        return result
    }
}
