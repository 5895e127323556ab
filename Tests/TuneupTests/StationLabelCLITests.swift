import Foundation
import Records
import Spawn
import TestSupport
import Testing
import Transport

/// Labels as a line prints them: `station run --labels DIR --label-printer tcp:...` gives each passed unit a label
/// (ZPL to the folder and the printer port, a PNG preview that zbarimg reads back as the unit's recorded serial and
/// Bluetooth address); failed units get none; `records label` prints one again; bad label options are one line.
@Suite(.serialized) struct StationLabelCLITests {
    /// A raw printer port on loopback: every connection's bytes, in order.
    final class PrinterPort: Sendable {
        let listener: TCPListener
        let port: UInt16
        private let task: Task<[[UInt8]], Never>

        init() async throws {
            listener = try await TCPListener.bind()
            guard case .tcp(_, let port) = listener.boundAddress else { throw TestFailure("not a TCP address") }
            self.port = port
            let listener = self.listener
            task = Task {
                var jobs: [[UInt8]] = []
                while let link = try? await listener.accept() {
                    var bytes: [UInt8] = []
                    while let chunk = try? await link.receive(), !chunk.isEmpty { bytes += chunk }
                    await link.close()
                    jobs.append(bytes)
                }
                return jobs
            }
        }

        func stop() async -> [String] {
            listener.close()
            return await task.value.map { String(decoding: $0, as: UTF8.self) }
        }
    }

    static func zbarimg(_ png: String) async throws -> [String] {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/zbarimg") else {
            throw TestFailure("zbarimg is not installed (tools/install-deps.sh installs zbar-tools)")
        }
        return try await offThePool {
            let process = try ChildProcess("/usr/bin/zbarimg", ["--quiet", "--raw", png], stderr: .null)
            process.waitUntilExit(within: 60)
            return process.output!.textBlocking(timeout: 10).split(separator: "\n").map(String.init).sorted()
        }
    }

    @Test func passedUnitsGetLabelsThatReadBackAsTheirRecords() async throws {
        let sim = try await RunningSimulator.start(["--blank", "--count", "2", "--time-scale", "0", "--listen", "tcp:127.0.0.1:0"], count: 2)
        let (directory, recipe) = try StationCLITests.recipe()
        let labels = directory + "/labels"
        try FileManager.default.createDirectory(atPath: labels, withIntermediateDirectories: true)
        let printer = try await PrinterPort()
        let result = try await CLI.run(["station", "run", "--recipe", recipe, "-d", sim.addresses[0], "-d", sim.addresses[1],
                                        "--labels", labels, "--label-printer", "tcp:127.0.0.1:\(printer.port)", "--format", "json"], timeout: 120)
        _ = await sim.quit()
        let jobs = await printer.stop()
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let events = StationCLITests.events(result.stdout)
        let labelEvents = events.filter { $0["event"] as? String == "label" }
        #expect(labelEvents.count == 2, "\(result.stdout)")

        let store = try await SQLiteRecordStore.open(path: directory + "/records.sqlite")
        let units = try await store.units()
        #expect(units.count == 2)
        #expect(jobs.count == 2 && jobs.allSatisfy { $0.hasPrefix("^XA\n") && $0.hasSuffix("^XZ\n") }, "one whole label per connection")
        for unit in units {
            let serial = try #require(unit.identities.first { $0.kind == .serial && $0.state == .committed }?.value)
            let address = try #require(unit.identities.first { $0.kind == .bluetoothAddress && $0.state == .committed }?.value)
            let zpl = try String(contentsOfFile: "\(labels)/\(serial).zpl", encoding: .utf8)
            #expect(zpl.contains("^FD\(serial)^FS") && zpl.contains("^FD\(address)^FS") && zpl.contains("^FDTuneup Sim Headset^FS"))
            #expect(jobs.contains(zpl), "the printer got the same label as the folder")
            #expect(try await Self.zbarimg("\(labels)/\(serial).png") == [serial, address].sorted())
            #expect(labelEvents.contains { $0["serial"] as? String == serial && ($0["files"] as? [String])?.count == 2 })
        }

        // Printed again from the records: the same ZPL.
        let again = directory + "/again"
        try FileManager.default.createDirectory(atPath: again, withIntermediateDirectories: true)
        let serial = try #require(units[0].identities.first { $0.kind == .serial && $0.state == .committed }?.value)
        let reprint = try await CLI.run(["records", "label", serial, "--product", "Tuneup Sim Headset", "--labels", again,
                                         "--db", directory + "/records.sqlite"])
        #expect(reprint.status == 0, "stderr: \(reprint.stderr)")
        #expect(FileManager.default.contents(atPath: "\(again)/\(serial).zpl") == FileManager.default.contents(atPath: "\(labels)/\(serial).zpl"))
        let unknown = try await CLI.run(["records", "label", "NO-SUCH-UNIT", "--product", "X", "--labels", again, "--db", directory + "/records.sqlite"])
        StationCLITests.refused(unknown, 66, "NO-SUCH-UNIT")
    }

    @Test func failedUnitsGetNoLabelAndAPrinterThatIsGoneIsReportedNotFatal() async throws {
        let sim = try await RunningSimulator.start(["--blank", "--fail-share", "1", "--time-scale", "0", "--listen", "tcp:127.0.0.1:0"])
        let (directory, recipe) = try StationCLITests.recipe()
        let labels = directory + "/labels"
        try FileManager.default.createDirectory(atPath: labels, withIntermediateDirectories: true)
        let failed = try await CLI.run(["station", "run", "--recipe", recipe, "-d", sim.addresses[0], "--labels", labels, "--format", "json"], timeout: 120)
        _ = await sim.quit()
        #expect(failed.status == 1, "stderr: \(failed.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: labels).isEmpty, "no label for a failed unit")
        #expect(!StationCLITests.events(failed.stdout).contains { ($0["event"] as? String)?.hasPrefix("label") == true })
        let hardwareID = try #require(try await SQLiteRecordStore.open(path: directory + "/records.sqlite").units().first?.hardwareID)
        let refused = try await CLI.run(["records", "label", hardwareID, "--product", "X", "--labels", labels, "--db", directory + "/records.sqlite"])
        StationCLITests.refused(refused, 1, "has not passed")

        // A printer port nothing listens on: the unit passes, the label is reported as not printed.
        let gone = try await TCPListener.bind()
        guard case .tcp(_, let port) = gone.boundAddress else { throw TestFailure("not a TCP address") }
        gone.close()
        let passing = try await RunningSimulator.start(["--blank", "--time-scale", "0", "--listen", "tcp:127.0.0.1:0"])
        let (_, recipe2) = try StationCLITests.recipe()
        let result = try await CLI.run(["station", "run", "--recipe", recipe2, "-d", passing.addresses[0],
                                        "--label-printer", "tcp:127.0.0.1:\(port)"], timeout: 120)
        _ = await passing.quit()
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout.contains("not printed: label printer tcp:127.0.0.1:\(port) cannot be reached"), "\(result.stdout)")
        #expect(result.stdout.contains("labels: 1 not printed"), "\(result.stdout)")
    }

    @Test func badLabelOptionsAreOneLine() async throws {
        let (directory, recipe) = try StationCLITests.recipe()
        let base = ["station", "run", "--recipe", recipe, "-d", "tcp:127.0.0.1:9"]
        StationCLITests.refused(try await CLI.run(base + ["--label-printer", "lpt1"]), 64, "tcp:HOST[:PORT]")
        StationCLITests.refused(try await CLI.run(base + ["--label-printer", "tcp:host:99999"]), 64, "tcp:HOST[:PORT]")
        StationCLITests.refused(try await CLI.run(base + ["--label-code", "qr", "--labels", directory]), 64, "qr")
        StationCLITests.refused(try await CLI.run(base + ["--label-code", "datamatrix"]), 64, "--label-code needs")
        StationCLITests.refused(try await CLI.run(base + ["--labels", directory + "/missing"]), 74, "does not exist")
        #expect(!FileManager.default.fileExists(atPath: directory + "/missing"))
        StationCLITests.refused(try await CLI.run(["records", "label", "X", "--product", "P", "--db", directory + "/r.sqlite"]), 64, "--labels")
    }
}
