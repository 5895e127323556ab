import Foundation
import Spawn
import Testing

/// `tuneup station run --cfx`: a malformed URL is refused before anything starts; with a real broker every unit's
/// messages arrive; an unreachable broker is a warning, not an error, and the messages wait in the spool.
@Suite(.serialized) struct StationCFXCLITests {
    @Test func aMalformedURLExits64WithOneLine() async throws {
        let (_, recipe) = try StationCLITests.recipe()
        for url in ["mes.local/cfx", "amqp://mes.local", "amqp://mes.local:99999/cfx", "amqps://mes.local/cfx"] {
            let result = try await CLI.run(["station", "run", "--recipe", recipe, "-d", "tcp:127.0.0.1:1", "--cfx", url])
            StationCLITests.refused(result, 64, "--cfx \(url)")
        }
        let spoolOnly = try await CLI.run(["station", "run", "--recipe", recipe, "-d", "tcp:127.0.0.1:1", "--cfx-spool", "/tmp/x"])
        StationCLITests.refused(spoolOnly, 64, "--cfx-spool is for --cfx")
    }

    @Test func publishesEveryUnitToTheBroker() async throws {
        let broker = try await offThePool { try ThrowawayRabbitMQ.shared() }
        let queue = broker.newQueue()
        let sim = try await RunningSimulator.start(["--blank", "--count", "2", "--time-scale", "0", "--listen", "tcp:127.0.0.1:0"], count: 2)
        let (directory, recipe) = try StationCLITests.recipe()
        let result = try await CLI.run(["station", "run", "--recipe", recipe, "-d", sim.addresses[0], "-d", sim.addresses[1],
                                        "--station", "cfx-cli", "--cfx", broker.url(queue)], timeout: 180)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stderr.isEmpty, "no warning: \(result.stderr)")
        #expect(result.stdout.contains("cfx: 8 messages accepted"), "\(result.stdout)")
        let spool = directory + "/cfx-cli.cfx-spool"
        #expect(try await offThePool { try FileManager.default.contentsOfDirectory(atPath: spool) }.isEmpty)
        let received = try await offThePool { try consumeAMQP(url: "amqp://127.0.0.1:\(broker.port)", address: queue, expect: 8) }
        #expect(received.count == 8)
        let names = received.compactMap { message -> String? in
            let object = try? JSONSerialization.jsonObject(with: Data(message.body.utf8)) as? [String: Any]
            return object?["MessageName"] as? String
        }
        #expect(names.filter { $0 == "CFX.Production.WorkStarted" }.count == 2)
        #expect(names.filter { $0 == "CFX.Production.Assembly.UnitsPersonalized" }.count == 2)
        #expect(names.filter { $0 == "CFX.Production.TestAndInspection.UnitsTested" }.count == 2)
        #expect(names.filter { $0 == "CFX.Production.WorkCompleted" }.count == 2)
    }

    /// SIGKILL after the unit's identity was written (its WorkStarted and UnitsPersonalized made as they happened),
    /// then the station again: the killed run is recovered as aborted and its messages completed (UnitsTested,
    /// WorkCompleted `Aborted`), the new run's four follow; every message arrives, once by UniqueID (a resend of
    /// one the killed station had sent has its UniqueID).
    @Test func aKilledStationsRunIsPublishedWhenItResumes() async throws {
        let broker = try await offThePool { try ThrowawayRabbitMQ.shared() }
        let queue = broker.newQueue()
        let (sim, _, args) = try await StationCLITests.oneUnit()
        let cfxArgs = args + ["--station", "cfx-kill", "--cfx", broker.url(queue)]
        let killed = try await StationProcess.start(cfxArgs)
        let seen = try await killed.killWhen { event in
            event["event"] as? String == "step-started" && event["step"] as? String == "calibrate-anc"
        }
        #expect(seen, "the station never started calibrate-anc")
        let again = try await CLI.run(cfxArgs, timeout: 180)
        #expect(again.status == 0, "stderr: \(again.stderr)")
        #expect(StationCLITests.events(again.stdout).contains { $0["event"] as? String == "recovered" }, "\(again.stdout)")
        // Two runs (the aborted one, the passing one), four messages each.
        let received = try await offThePool { try consumeAMQP(url: "amqp://127.0.0.1:\(broker.port)", address: queue, expect: 8, timeout: 60) }
        var distinct: [String: [String: Any]] = [:]
        for message in received {
            distinct[message.id] = try? JSONSerialization.jsonObject(with: Data(message.body.utf8)) as? [String: Any]
        }
        #expect(distinct.count == 8)
        let names = distinct.values.compactMap { $0["MessageName"] as? String }
        for name in ["CFX.Production.WorkStarted", "CFX.Production.Assembly.UnitsPersonalized",
                     "CFX.Production.TestAndInspection.UnitsTested", "CFX.Production.WorkCompleted"] {
            #expect(names.filter { $0 == name }.count == 2, "\(name): \(names)")
        }
        let completed = distinct.values.filter { $0["MessageName"] as? String == "CFX.Production.WorkCompleted" }
            .compactMap { ($0["MessageBody"] as? [String: Any])?["Result"] as? String }
        #expect(completed.sorted() == ["Aborted", "Completed"], "\(completed)")
        print("cfx after SIGKILL: \(distinct.count) messages, \(received.count - distinct.count) duplicates by UniqueID, 0 lost")
        _ = await sim.quit()
    }

    @Test func anUnreachableBrokerIsAWarningAndTheSpoolKeepsTheMessages() async throws {
        let port = try await offThePool { try ThrowawayRabbitMQ.freePort() }
        let sim = try await RunningSimulator.start(["--blank", "--count", "1", "--time-scale", "0", "--listen", "tcp:127.0.0.1:0"], count: 1)
        let (directory, recipe) = try StationCLITests.recipe()
        let spool = directory + "/spool"
        let result = try await CLI.run(["station", "run", "--recipe", recipe, "-d", sim.addresses[0], "--station", "cfx-away",
                                        "--cfx", "amqp://127.0.0.1:\(port)//queue/cfx", "--cfx-spool", spool, "--cfx-wait", "1"],
                                       timeout: 180)
        #expect(result.status == 0, "an unreachable broker is not an error: \(result.stderr)")
        let warnings = result.stderrLines.filter { $0.hasPrefix("tuneup: warning: cfx:") }
        // Once (not once per message or per attempt), then what is left at the end.
        #expect(warnings.count == 2, "\(result.stderr)")
        #expect(warnings.first?.contains("cannot be reached") == true, "\(result.stderr)")
        #expect(warnings.filter { $0.contains("cannot be reached") }.count == 1, "\(result.stderr)")
        #expect(warnings.last?.contains("4 messages wait in \(spool)") == true, "\(result.stderr)")
        let files = try await offThePool { try FileManager.default.contentsOfDirectory(atPath: spool) }
        #expect(files.filter { $0.hasSuffix(".json") }.count == 4)
    }
}
