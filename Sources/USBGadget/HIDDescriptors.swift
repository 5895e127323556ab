/// The bytes the gadget writes to FunctionFS and answers to GET_DESCRIPTOR: the LightX HID interface with vendor
/// feature reports 0xF0 (13 data bytes) and 0xF1 (256 data bytes; ids and sizes in `HIDReports`), exactly as measured in the VM rig
/// (docs/protocol.md §2.3).
public enum HIDDescriptors {
    /// The HID report descriptor (32 bytes): vendor page 0xFF00, application collection, feature reports 0xF0 × 13
    /// and 0xF1 × 256 bytes.
    public static let reportDescriptor: [UInt8] = [
        0x06, 0x00, 0xFF,  // Usage Page (Vendor Defined 0xFF00)
        0x09, 0x01,  // Usage (0x01)
        0xA1, 0x01,  // Collection (Application)
        0x15, 0x00,  //   Logical Minimum (0)
        0x26, 0xFF, 0x00,  //   Logical Maximum (255)
        0x75, 0x08,  //   Report Size (8)
        0x85, 0xF0,  //   Report ID (0xF0)
        0x09, 0x02,  //   Usage (0x02)
        0x95, 0x0D,  //   Report Count (13)
        0xB1, 0x02,  //   Feature (Data,Var,Abs)
        0x85, 0xF1,  //   Report ID (0xF1)
        0x09, 0x03,  //   Usage (0x03)
        0x96, 0x00, 0x01,  //   Report Count (256): needs the 2-byte form
        0xB1, 0x02,  //   Feature (Data,Var,Abs)
        0xC0,  // End Collection
    ]

    /// The 9-byte HID class descriptor (type 0x21): bcdHID 1.11, no country, one report descriptor of
    /// `reportDescriptor.count` bytes.
    public static var hidDescriptor: [UInt8] {
        let n = reportDescriptor.count
        return [9, 0x21, 0x11, 0x01, 0x00, 0x01, 0x22, UInt8(n & 0xFF), UInt8(n >> 8)]
    }

    /// FunctionFS descriptors blob, v2 format (70 bytes), written to ep0 in one `write()`: magic 3, length,
    /// flags HAS_FS_DESC|HAS_HS_DESC, 3 full-speed and 3 high-speed descriptors (interface 0 class HID with one
    /// endpoint and iInterface 1, the HID descriptor, interrupt IN endpoint 0x81 of 64 bytes with bInterval 10 at full
    /// speed and 4 (1 ms) at high speed).
    public static var functionFSDescriptors: [UInt8] {
        var body: [UInt8] = []
        for bInterval: UInt8 in [10, 4] {
            body += [9, 0x04, 0, 0, 1, 0x03, 0, 0, 1]  // interface 0, alt 0, 1 endpoint, HID, iInterface 1
            body += hidDescriptor
            body += [7, 0x05, 0x81, 0x03, 64, 0, bInterval]  // EP 0x81 IN, interrupt, 64 bytes
        }
        var blob = le32(3)  // FUNCTIONFS_DESCRIPTORS_MAGIC_V2
        blob += le32(UInt32(20 + body.count))
        blob += le32(0x1 | 0x2)  // FUNCTIONFS_HAS_FS_DESC | FUNCTIONFS_HAS_HS_DESC
        blob += le32(3)  // fs_count
        blob += le32(3)  // hs_count
        return blob + body
    }

    /// FunctionFS strings blob: magic 2, length, one string, one language (0x0409), `interfaceName` NUL-terminated
    /// (29 bytes for "Tuneup HID").
    public static func functionFSStrings(interfaceName: String = "Tuneup HID") -> [UInt8] {
        let text = Array(interfaceName.utf8) + [0]
        var blob = le32(2)  // FUNCTIONFS_STRINGS_MAGIC
        blob += le32(UInt32(16 + 2 + text.count))
        blob += le32(1)  // str_count
        blob += le32(1)  // lang_count
        blob += [0x09, 0x04]
        return blob + text
    }

    private static func le32(_ v: UInt32) -> [UInt8] {
        [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8), UInt8(truncatingIfNeeded: v >> 16), UInt8(truncatingIfNeeded: v >> 24)]
    }
}
