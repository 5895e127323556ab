import Failure
import Foundation
import Headset
import TestSupport
import Testing
import Transport
@testable import TuneupKit

/// A fresh directory for one test's files.
func scratchDirectory() throws -> String {
    try TemporaryDirectory.make("tuneupkit")
}

@Suite struct DevicesTests {
    /// One address of each kind the tools open; a scheme added to `Devices.addressSchemes` needs one here.
    static let examples = [
        "sim", "sim:headset", "tcp:127.0.0.1:4000", "serial:/dev/ttyUSB0", "usb:1209:0001", "usb:1-2.3", "bt:00:1A:7D:DA:71:13",
    ]
    /// Addresses of schemes registered outside Transport (`DeviceAddress(parsing:)` does not know them).
    static let registeredExamples = ["sim:wearable", "ble:00:AA:01:00:00:00", "speaker:127.0.0.1:4000", "sim:speaker", "hidraw:/dev/hidraw0"]

    @Test func everySchemeHasAnOpener() throws {
        let connector = Devices.connector()
        var reached = Set<String>()
        for text in Self.examples + Self.registeredExamples {
            let address = try Devices.parseAddress(text)
            #expect(connector.canOpen(address.scheme), "no opener for \(text) (scheme \(address.scheme))")
            if let resolved = Devices.addressSchemes.resolve(text) { reached.insert(resolved.scheme.name) }
        }
        let registered = Set(Devices.addressSchemes.schemes.map(\.name))
        #expect(reached == registered, "schemes without an example here: \(registered.subtracting(reached).sorted())")
    }

    @Test func theRegistryParsesAsTransportDoesAndSaysWhatEachSchemeMeans() throws {
        for text in Self.examples + ["sim:/tmp/h.json", "sim:headset:/tmp/h.json", "tcp:[::1]:1"] {
            #expect(try Devices.parseAddress(text) == DeviceAddress(parsing: text))
        }
        #expect(try Devices.parseAddress("sim:headset:/tmp/h.json") == .simulator(statePath: "/tmp/h.json"))
        for scheme in Devices.addressSchemes.schemes {
            #expect(!scheme.summary.isEmpty && !scheme.summary.contains("\n"), "\(scheme.name)")
        }
        #expect(Devices.addressSchemes.scheme(named: "usb")?.summary.contains("TUNEUP_USB_IDS") == true)
        #expect(Devices.addressSchemes.scheme(named: "bt")?.summary.contains("TUNEUP_BT_ADAPTER") == true)
        do {
            _ = try Devices.parseAddress("ftp:host")
            Issue.record("ftp:host parsed")
        } catch {
            #expect(error.message == "unknown address scheme 'ftp'; expected sim, tcp:, serial:, usb:, hidraw:, bt:, ble: or speaker:")
        }
    }

    @Test func aBadUSBTableIsAUsageSetting() throws {
        do {
            _ = try USBBridge.knownDevices(environment: ["TUNEUP_USB_IDS": "0a12"])
            Issue.record("a malformed TUNEUP_USB_IDS was accepted")
        } catch {
            #expect(error.code == .badEnvironment)
            #expect(error.variable == "TUNEUP_USB_IDS")
            #expect(error.category == .usage)
            #expect(error.message == "bad TUNEUP_USB_IDS entry '0a12': expected VVVV:PPPP[/BBBB] in hex, e.g. 1209:0001/0002")
        }
        let known = try USBBridge.knownDevices(environment: ["TUNEUP_USB_IDS": "0a12:0100/0200"])
        #expect(known.matchingProductIDs(vendorID: 0x0a12, productID: 0x0100).contains(0x0200))
    }

    @Test func opensTheSimulatedHeadsetByAddressWithTheGivenOptions() async throws {
        try await withTimeLimit {
            let dir = try scratchDirectory()
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let address = try Devices.parseAddress("sim:headset:\(dir)/state.json")
            let options = ConnectionOptions(session: .init(timeout: .milliseconds(1500), retransmissions: 1))
            let headset = try await Devices.openHeadset(address, options: options)
            let identity = try await headset.identity()
            await headset.close()
            #expect(identity.product == "Tuneup Sim Headset")
            // The simulator used the state file named in the address (its lock file sits beside it).
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir).contains { $0.hasPrefix("state.json") })
        }
    }

    @Test func wrapsLinksInTheGivenConditions() async throws {
        try await withTimeLimit {
            let dir = try scratchDirectory()
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let conditions = try LinkConditions(parsing: "latency=1ms,seed=9")
            let transport = try await Devices.connector(ConnectionOptions(linkConditions: conditions))
                .open(.simulator(statePath: "\(dir)/state.json"))
            let conditioned = try #require(transport as? ConditionedTransport)
            #expect(conditioned.conditions.seed == 9)
            await transport.close()
        }
    }

    @Test func aMissingStateDirectoryIsALocalFileFailure() async throws {
        let dir = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            _ = try await Devices.openHeadset(.simulator(statePath: "\(dir)/missing/state.json"))
            Issue.record("opened a simulator whose state directory does not exist")
        } catch let error as any CodedError {
            #expect(error.category == .localFile, "\(error)")
            #expect(error.message.contains("does not exist"))
        }
    }

    @Test func helpLinesAndTheDocsTableListEveryScheme() {
        let lines = Devices.schemeLines()
        #expect(lines.count == 2 * Devices.addressSchemes.schemes.count)
        for (index, scheme) in Devices.addressSchemes.schemes.enumerated() {
            #expect(lines[2 * index] == "  " + scheme.form)
            #expect(lines[2 * index + 1] == "      " + scheme.summary)
            #expect(scheme.summary.count <= Devices.summaryWidth, "\(scheme.name): \(scheme.summary.count) characters")
            #expect(Devices.schemeTable.contains(scheme.summary))
        }
    }

    /// docs/cli.md lists the schemes as the registry does (regenerate the table from `Devices.schemeTable`).
    @Test func theCLIDocsListTheRegisteredSchemes() throws {
        let docs = try String(contentsOfFile: repositoryRoot + "/docs/cli.md", encoding: .utf8)
        #expect(docs.contains("\n" + Devices.schemeTable + "\n"), "docs/cli.md should hold this table:\n\(Devices.schemeTable)")
    }
}

/// The package root (three levels above this file).
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path
