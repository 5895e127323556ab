import Transport

/// What a `USBGadget` presents to the USB host and where it lives on this machine.
///
/// The identity (vendor and product id, the three strings) is what the host sees in the device descriptor; the rest
/// names the configfs gadget, the FunctionFS instance and its mount point. The defaults are the Tuneup simulator's
/// application identity (pid.codes test VID 0x1209, PID 0x0001, manufacturer "Tuneup", product
/// "Tuneup Sim Headset") under configfs gadget `tuneup`, FunctionFS instance `tuneup` mounted at `/dev/ffs-tuneup`,
/// bound to the first free UDC.
public struct USBGadgetConfiguration: Sendable, Hashable {
    /// idVendor (default 0x1209, the pid.codes test vendor id).
    public var vendorID: UInt16
    /// idProduct (default 0x0001: the simulator's application; its bootloader is 0x0002).
    public var productID: UInt16
    /// bcdDevice (default 0x0100).
    public var deviceRelease: UInt16
    /// iManufacturer string (default "Tuneup").
    public var manufacturer: String
    /// iProduct string (default "Tuneup Sim Headset").
    public var product: String
    /// iSerialNumber string: the device's serial number, e.g. "TS1-000001".
    public var serialNumber: String
    /// The HID interface's string (FunctionFS strings blob; default "Tuneup HID").
    public var interfaceName: String
    /// The configfs gadget directory name under `usb_gadget/` (default "tuneup"). A leftover gadget of this name is
    /// removed by `USBGadget.start`.
    public var gadgetName: String
    /// The FunctionFS instance name (`functions/ffs.NAME`, and the mount source); nil: the gadget name. It must be
    /// unique on the machine.
    public var functionName: String?
    /// Where FunctionFS is mounted; nil: `/dev/ffs-` + the function name.
    public var mountPoint: String?
    /// The UDC to bind to (an entry of `/sys/class/udc`); nil: the first one no other configfs gadget uses.
    public var udc: String?
    /// bMaxPower in mA (default 100).
    public var maxPowerMilliamps: Int
    /// Where configfs is mounted (default "/sys/kernel/config"; tests point it elsewhere).
    public var configfsRoot: String
    /// The directory listing the UDCs (default "/sys/class/udc"; tests point it elsewhere).
    public var udcClassDirectory: String

    /// The simulator's application identity: PID 0x0001.
    public static let applicationProductID: UInt16 = 0x0001
    /// The simulator's bootloader identity: PID 0x0002.
    public static let bootloaderProductID: UInt16 = 0x0002
    /// The product string while the application runs.
    public static let applicationProduct = "Tuneup Sim Headset"
    /// The product string while the bootloader runs.
    public static let bootloaderProduct = "Tuneup Sim Headset (bootloader)"

    /// Creates a configuration; see the properties for the defaults.
    public init(vendorID: UInt16 = 0x1209, productID: UInt16 = USBGadgetConfiguration.applicationProductID,
                deviceRelease: UInt16 = 0x0100, manufacturer: String = "Tuneup",
                product: String = USBGadgetConfiguration.applicationProduct, serialNumber: String,
                interfaceName: String = "Tuneup HID", gadgetName: String = "tuneup", functionName: String? = nil,
                mountPoint: String? = nil, udc: String? = nil, maxPowerMilliamps: Int = 100,
                configfsRoot: String = "/sys/kernel/config", udcClassDirectory: String = "/sys/class/udc") {
        self.vendorID = vendorID
        self.productID = productID
        self.deviceRelease = deviceRelease
        self.manufacturer = manufacturer
        self.product = product
        self.serialNumber = serialNumber
        self.interfaceName = interfaceName
        self.gadgetName = gadgetName
        self.functionName = functionName
        self.mountPoint = mountPoint
        self.udc = udc
        self.maxPowerMilliamps = maxPowerMilliamps
        self.configfsRoot = configfsRoot
        self.udcClassDirectory = udcClassDirectory
    }

    /// The identity of the simulated headset with serial `serialNumber`: PID 0x0001 and product
    /// "Tuneup Sim Headset" for the application, PID 0x0002 and "Tuneup Sim Headset (bootloader)" for the bootloader.
    public static func simulatedHeadset(serialNumber: String, bootloader: Bool = false) -> USBGadgetConfiguration {
        USBGadgetConfiguration(productID: bootloader ? bootloaderProductID : applicationProductID,
                               product: bootloader ? bootloaderProduct : applicationProduct, serialNumber: serialNumber)
    }

    /// The address a host opens to reach this device: `usb:VID:PID:SERIAL` (e.g. `usb:1209:0001:TS1-000001`).
    public var address: DeviceAddress {
        .usb(vendorID: vendorID, productID: productID, serial: serialNumber.isEmpty ? nil : serialNumber)
    }

    /// The configfs and FunctionFS paths this configuration uses.
    public var paths: GadgetPaths {
        let function = functionName ?? gadgetName
        return GadgetPaths(configfsRoot: configfsRoot, gadgetName: gadgetName, functionName: function,
                           mountPoint: mountPoint ?? "/dev/ffs-" + function)
    }

    /// Checks the names and strings. Throws `TransportError(.invalidAddress)` naming the bad field: names must be
    /// 1...64 characters of letters, digits, `-`, `_`, `.` (not `.` or `..`); strings at most 126 characters without
    /// control characters (a USB string descriptor holds 126 UTF-16 units); the serial number non-empty.
    public func validate() throws(TransportError) {
        func name(_ value: String, _ what: String) throws(TransportError) {
            let ok = !value.isEmpty && value.count <= 64 && value != "." && value != ".."
                && value.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-_.".unicodeScalars.contains($0)) }
            guard ok else {
                throw TransportError(.invalidAddress, "bad USB gadget \(what) '\(value)': use 1-64 letters, digits, '-', '_' or '.'")
            }
        }
        func text(_ value: String, _ what: String, allowEmpty: Bool = true) throws(TransportError) {
            guard allowEmpty || !value.isEmpty else {
                throw TransportError(.invalidAddress, "the USB gadget's \(what) is empty")
            }
            guard value.utf16.count <= 126, !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                throw TransportError(.invalidAddress, "bad USB gadget \(what) '\(value)': at most 126 characters, no control characters")
            }
        }
        try name(gadgetName, "name")
        try name(functionName ?? gadgetName, "function name")
        if let udc { try name(udc, "UDC name") }
        try text(manufacturer, "manufacturer")
        try text(product, "product")
        try text(serialNumber, "serial number", allowEmpty: false)
        try text(interfaceName, "interface name")
        guard (0...500).contains(maxPowerMilliamps) else {
            throw TransportError(.invalidAddress, "bad USB gadget MaxPower \(maxPowerMilliamps) mA: expected 0...500")
        }
        let paths = self.paths
        for (path, what) in [(paths.mountPoint, "mount point"), (configfsRoot, "configfs root"), (udcClassDirectory, "UDC directory")] {
            guard path.hasPrefix("/"), !path.contains("\n"), path.count <= 512 else {
                throw TransportError(.invalidAddress, "bad USB gadget \(what) '\(path)': expected an absolute path")
            }
        }
    }
}

/// The configfs and FunctionFS paths of one gadget (the layout measured in the VM rig):
///
/// ```
/// ROOT/usb_gadget/NAME/{idVendor,idProduct,bcdDevice,bcdUSB,UDC}
/// ROOT/usb_gadget/NAME/strings/0x409/{manufacturer,product,serialnumber}
/// ROOT/usb_gadget/NAME/configs/c.1/{MaxPower,strings/0x409/configuration}
/// ROOT/usb_gadget/NAME/functions/ffs.FUNCTION      (linked as configs/c.1/ffs.FUNCTION)
/// MOUNTPOINT  (mount -t functionfs FUNCTION MOUNTPOINT; MOUNTPOINT/ep0)
/// ```
public struct GadgetPaths: Sendable, Hashable {
    /// Where configfs is mounted.
    public let configfsRoot: String
    /// The gadget directory name.
    public let gadgetName: String
    /// The FunctionFS instance name (also the mount source).
    public let functionName: String
    /// Where FunctionFS is mounted.
    public let mountPoint: String

    /// Creates the paths for these names.
    public init(configfsRoot: String, gadgetName: String, functionName: String, mountPoint: String) {
        self.configfsRoot = configfsRoot.count > 1 && configfsRoot.hasSuffix("/") ? String(configfsRoot.dropLast()) : configfsRoot
        self.gadgetName = gadgetName
        self.functionName = functionName
        self.mountPoint = mountPoint
    }

    /// `ROOT/usb_gadget`: present when libcomposite is loaded.
    public var gadgetsDirectory: String { configfsRoot + "/usb_gadget" }
    /// `ROOT/usb_gadget/NAME`.
    public var gadget: String { gadgetsDirectory + "/" + gadgetName }
    /// A gadget attribute file, e.g. `attribute("idProduct")`.
    public func attribute(_ name: String) -> String { gadget + "/" + name }
    /// `.../strings/0x409`.
    public var strings: String { gadget + "/strings/0x409" }
    /// `.../configs/c.1`.
    public var config: String { gadget + "/configs/c.1" }
    /// `.../configs/c.1/strings/0x409`.
    public var configStrings: String { config + "/strings/0x409" }
    /// `.../functions/ffs.FUNCTION`.
    public var function: String { gadget + "/functions/ffs." + functionName }
    /// `.../configs/c.1/ffs.FUNCTION`: the symlink putting the function into the configuration.
    public var functionLink: String { config + "/ffs." + functionName }
    /// `MOUNTPOINT/ep0`.
    public var ep0: String { mountPoint + "/ep0" }
    /// `.../UDC`: the name of the UDC the gadget is bound to; "\n" unbinds.
    public var udcFile: String { attribute("UDC") }

    /// The attribute writes that create the gadget, in order: (path, value). Directories come from
    /// `directoriesToCreate`; the function symlink, the mount and the ep0 blobs follow.
    public func attributeWrites(for c: USBGadgetConfiguration) -> [(path: String, value: String)] {
        [
            (attribute("idVendor"), hex(c.vendorID)),
            (attribute("idProduct"), hex(c.productID)),
            (attribute("bcdDevice"), hex(c.deviceRelease)),
            (attribute("bcdUSB"), "0x0200"),
            (strings + "/manufacturer", c.manufacturer),
            (strings + "/product", c.product),
            (strings + "/serialnumber", c.serialNumber),
            (configStrings + "/configuration", "HID"),
            (config + "/MaxPower", String(c.maxPowerMilliamps)),
        ]
    }

    /// The directories to create, parents first (the function directory last: creating it needs usb_f_fs).
    public var directoriesToCreate: [String] { [gadget, strings, config, configStrings, function] }

    /// `0x1209`-style text for a configfs id attribute.
    public func hex(_ value: UInt16) -> String {
        let digits = String(value, radix: 16)
        return "0x" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
