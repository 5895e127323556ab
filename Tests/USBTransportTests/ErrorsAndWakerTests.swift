import CLibUSB
import Synchronization
import TestSupport
import Testing
import Transport
@testable import USBTransport

@Suite struct LibUSBErrorTests {
    let peer = "usb:1209:0001"

    @Test func stallNamesTheReport() {
        let e = LibUSBErrors.transferError(LIBUSB_TRANSFER_STALL, peer: peer, request: "GET_REPORT 0xF0", reportID: 0xF0, timeout: .seconds(2))
        #expect(e.code == .io)
        #expect(e.message == "usb:1209:0001: the device stalled report 0xF0 (GET_REPORT 0xF0)")
    }

    @Test func unpluggedIsClosed() {
        let e = LibUSBErrors.transferError(LIBUSB_TRANSFER_NO_DEVICE, peer: peer, request: "GET_REPORT 0xF1", reportID: 0xF1, timeout: .seconds(2))
        #expect(e.code == .closed)
        #expect(e.message == "usb:1209:0001: device unplugged")
        #expect(LibUSBErrors.submitError(LIBUSB_ERROR_NO_DEVICE.rawValue, peer: peer, request: "SET_REPORT 0xF0").code == .closed)
        #expect(LibUSBErrors.submitError(LIBUSB_ERROR_IO.rawValue, peer: peer, request: "SET_REPORT 0xF0").message
            == "usb:1209:0001: cannot submit SET_REPORT 0xF0: LIBUSB_ERROR_IO")
    }

    @Test func timeoutsSayHowLong() {
        let e = LibUSBErrors.transferError(LIBUSB_TRANSFER_TIMED_OUT, peer: peer, request: "SET_REPORT 0xF1", reportID: 0xF1, timeout: .milliseconds(2500))
        #expect(e.code == .timedOut)
        #expect(e.message == "usb:1209:0001: no answer to SET_REPORT 0xF1 within 2.5 s")
        let other = LibUSBErrors.transferError(LIBUSB_TRANSFER_ERROR, peer: peer, request: "GET_REPORT 0xF0", reportID: 0xF0, timeout: .seconds(2))
        #expect(other.code == .io)
        #expect(other.message == "usb:1209:0001: GET_REPORT 0xF0 failed (LIBUSB_TRANSFER_ERROR)")
    }

    @Test func openErrorsAreClassified() {
        let denied = LibUSBErrors.openError(LIBUSB_ERROR_ACCESS.rawValue, "cannot open usb:1209:0001 (usb:1-1 (1209:0001), /dev/bus/usb/001/002)")
        #expect(denied.code == .permissionDenied)
        #expect(denied.message.contains("permission denied") && denied.message.contains("tools/udev/")
            && denied.message.contains("USB access without root"))
        let busy = LibUSBErrors.openError(LIBUSB_ERROR_BUSY.rawValue, "cannot claim interface 0 of usb:1-1")
        #expect(busy.code == .busy)
        #expect(busy.message == "cannot claim interface 0 of usb:1-1: the device is in use by another program (its interface 0 is claimed)")
        #expect(LibUSBErrors.openError(LIBUSB_ERROR_NO_DEVICE.rawValue, "x").code == .notFound)
        #expect(LibUSBErrors.openError(LIBUSB_ERROR_NOT_SUPPORTED.rawValue, "x").code == .unsupported)
        #expect(LibUSBErrors.openError(LIBUSB_ERROR_OTHER.rawValue, "x").message == "x: LIBUSB_ERROR_OTHER")
        #expect(LibUSBErrors.openError(-12345, "x").code == .io)
        for code in [LIBUSB_ERROR_NO_DEVICE, LIBUSB_ERROR_NOT_FOUND, LIBUSB_ERROR_IO, LIBUSB_ERROR_ACCESS] {
            #expect(LibUSBErrors.isTransientOpenError(code.rawValue))
        }
        #expect(!LibUSBErrors.isTransientOpenError(LIBUSB_ERROR_BUSY.rawValue))
    }
}

@Suite struct PollWakerTests {
    /// An hour's sleep ends with `true` (kicked; its timer would say `false`), whether the kick comes before or
    /// while it sleeps; the time limit is a hang guard.
    @Test(.timeLimit(.minutes(1))) func kickCutsAnInterruptibleSleepShort() async throws {
        let waker = USBPollWaker()
        let generation = waker.generation
        async let slept = waker.sleep(for: .seconds(3600), generation: generation, interruptible: true)
        waker.kick()
        #expect(await slept == true)
    }

    @Test(.timeLimit(.minutes(1))) func kickBeforeTheSleepStartsIsNotMissed() async {
        let waker = USBPollWaker()
        let generation = waker.generation
        waker.kick()
        #expect(await waker.sleep(for: .seconds(3600), generation: generation, interruptible: true) == true)
    }

    @Test func uninterruptibleSleepRunsItsCourse() async throws {
        let waker = USBPollWaker()
        let start = ContinuousClock.now
        async let slept = waker.sleep(for: .milliseconds(300), generation: waker.generation, interruptible: false)
        try await waitUntil("the sleep started") { waker.hasSleeper }
        waker.kick()
        #expect(await slept == false)
        #expect(ContinuousClock.now - start >= .milliseconds(300))
    }

    @Test func closeAndCancellationWakeAnEndlessSleep() async throws {
        let waker = USBPollWaker()
        async let closed = waker.sleep(for: nil, generation: waker.generation, interruptible: true)
        try await waitUntil("the sleep started") { waker.hasSleeper }
        waker.close()
        #expect(await closed == false)
        #expect(await waker.sleep(for: nil, generation: waker.generation, interruptible: true) == false)

        let other = USBPollWaker()
        let task = Task { await other.sleep(for: nil, generation: other.generation, interruptible: false) }
        try await waitUntil("the sleep started") { other.hasSleeper }
        task.cancel()
        try await withTimeLimit { await task.value }
    }
}

@Suite(.serialized) struct HostLibUSBTests {
    /// This build machine has no USB host controller: libusb starts and sees no device. The back end must say so in
    /// one line, not crash. (On a machine that does have a simulated headset plugged in, this test is skipped.)
    @Test func openingAnAbsentHeadsetIsNotFound() async throws {
        let devices = try await USBDeviceList.scan(all: false, known: .standard)
        try #require(devices.isEmpty, "a known headset is attached to this machine")
        let start = ContinuousClock.now
        do {
            let transport = try await USBHIDTransport.open(try DeviceAddress(parsing: "usb:1209:0001:NOPE"),
                                                           options: .init(wait: .milliseconds(200)))
            await transport.close()
            Issue.record("opened \(transport.peerDescription)")
        } catch let error as TransportError {
            #expect(error.code == .notFound)
            #expect(error.message.hasPrefix("USB device usb:1209:0001:NOPE not found: no device is 1209:0001 or its partner 1209:0002 with serial NOPE"))
            #expect(error.message.contains("waited 200 ms"))
            #expect(!error.message.contains("\n"))
        }
        // It rescanned for the whole wait.
        #expect(ContinuousClock.now - start >= .milliseconds(200))
    }

    @Test func openingIsCancellable() async throws {
        let task = Task {
            try await USBHIDTransport.open(try DeviceAddress(parsing: "usb:1209:0001"), options: .init(wait: .seconds(120)))
        }
        try await Task.sleep(for: .milliseconds(150))
        task.cancel()
        // Far below the 120 s wait (a hang guard; cancellation is quick when it works).
        let result = try await withTimeLimit(60) { await task.result }
        #expect(throws: CancellationError.self) { try result.get() }
    }

    @Test func nonUSBAddressIsRefusedBeforeTouchingLibUSB() async {
        await #expect(throws: TransportError(.invalidAddress, "")) {
            try await USBHIDTransport.open(.tcp(host: "127.0.0.1", port: 1))
        }
    }

    @Test func listingEverythingWorksWithoutDevices() async throws {
        let all = try await USBDeviceList.scan(all: true, known: .standard)
        // Whatever is attached, every entry is well formed.
        for device in all {
            #expect(device.nodePath.hasPrefix("/dev/bus/usb/"))
            #expect(!device.address.isEmpty)
        }
    }
}
