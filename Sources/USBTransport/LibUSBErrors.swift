import CLibUSB
import Transport

/// How libusb results become `TransportError`s. Internal; the messages are part of the back end's contract.
enum LibUSBErrors {
    /// Where to read about non-root access, for permission errors.
    static let permissionHint = "install the udev rule from tools/udev/ (README: \"USB access without root\"), or run as root"

    /// libusb's name for an error code, e.g. "LIBUSB_ERROR_ACCESS".
    static func name(_ code: Int32) -> String {
        guard let name = libusb_error_name(code) else { return "libusb error \(code)" }
        return String(cString: name)
    }

    /// libusb's name for a transfer status, e.g. "LIBUSB_TRANSFER_STALL".
    static func statusName(_ status: libusb_transfer_status) -> String {
        guard let name = libusb_error_name(Int32(status.rawValue)) else { return "transfer status \(status.rawValue)" }
        return String(cString: name)
    }

    /// Maps an error from opening, detaching or claiming. `what` names the step and the device, e.g.
    /// "cannot open usb:1209:0001 (/dev/bus/usb/001/002)".
    static func openError(_ code: Int32, _ what: String) -> TransportError {
        switch code {
        case LIBUSB_ERROR_ACCESS.rawValue:
            return TransportError(.permissionDenied, "\(what): permission denied; \(permissionHint)", errno: 13)
        case LIBUSB_ERROR_BUSY.rawValue:
            return TransportError(.busy, "\(what): the device is in use by another program (its interface 0 is claimed)", errno: 16)
        case LIBUSB_ERROR_NO_DEVICE.rawValue:
            return TransportError(.notFound, "\(what): the device was unplugged", errno: 19)
        case LIBUSB_ERROR_NOT_FOUND.rawValue:
            return TransportError(.notFound, "\(what): the device or its interface 0 is gone")
        case LIBUSB_ERROR_TIMEOUT.rawValue:
            return TransportError(.timedOut, "\(what): timed out")
        case LIBUSB_ERROR_NOT_SUPPORTED.rawValue:
            return TransportError(.unsupported, "\(what): not supported on this system (\(name(code)))")
        default:
            return TransportError(.io, "\(what): \(name(code))")
        }
    }

    /// Whether an open failure may clear up by itself while a device is still enumerating.
    static func isTransientOpenError(_ code: Int32) -> Bool {
        code == LIBUSB_ERROR_NO_DEVICE.rawValue || code == LIBUSB_ERROR_NOT_FOUND.rawValue
            || code == LIBUSB_ERROR_IO.rawValue || code == LIBUSB_ERROR_ACCESS.rawValue
    }

    /// Maps a control transfer's end state. `request` is e.g. "GET_REPORT 0xF0"; `reportID` the report.
    static func transferError(
        _ status: libusb_transfer_status, peer: String, request: String, reportID: UInt8, timeout: Duration
    ) -> TransportError {
        switch status {
        case LIBUSB_TRANSFER_STALL:
            return TransportError(.io, "\(peer): the device stalled report 0x\(usbHex2(reportID)) (\(request))", errno: 32)
        case LIBUSB_TRANSFER_NO_DEVICE:
            return unplugged(peer)
        case LIBUSB_TRANSFER_TIMED_OUT:
            return TransportError(.timedOut, "\(peer): no answer to \(request) within \(formatUSBDuration(timeout))", errno: 110)
        case LIBUSB_TRANSFER_OVERFLOW:
            return TransportError(.io, "\(peer): the device sent more than asked for in \(request)", errno: 75)
        default:
            return TransportError(.io, "\(peer): \(request) failed (\(statusName(status)))")
        }
    }

    /// Maps a `libusb_submit_transfer` failure.
    static func submitError(_ code: Int32, peer: String, request: String) -> TransportError {
        if code == LIBUSB_ERROR_NO_DEVICE.rawValue { return unplugged(peer) }
        return TransportError(.io, "\(peer): cannot submit \(request): \(name(code))")
    }

    /// The device went away under an open link.
    static func unplugged(_ peer: String) -> TransportError {
        TransportError(.closed, "\(peer): device unplugged", errno: 19)
    }
}
