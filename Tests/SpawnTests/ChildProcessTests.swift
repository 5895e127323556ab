import Failure
import Foundation
import Glibc
import Spawn
import Support
import Testing

/// `ChildProcess`: a child inherits nothing but its standard streams, so a long-lived child started meanwhile
/// cannot keep another child's pipes open; its end is its exit status. The tests wait with the async waits (they
/// suspend), and the blocking ones run on the blocking executor: nothing here blocks the cooperative pool.
@Suite struct ChildProcessTests {
    /// The descriptors a running process holds.
    static func descriptors(of pid: pid_t) throws -> [Int] {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").compactMap(Int.init).sorted()
    }

    @Test func aChildHoldsOnlyItsStandardStreams() async throws {
        // A descriptor of ours without close-on-exec, as any library may leave one.
        var leaky: [Int32] = [-1, -1]
        #expect(pipe(&leaky) == 0)
        defer { leaky.forEach { _ = close($0) } }
        let child = try ChildProcess("/bin/sleep", ["30"], stdin: .pipe)
        defer { child.signal(SIGKILL) }
        // The program may hold a descriptor of its own for a moment as it starts (a locale file): wait for it to settle.
        // An inherited descriptor would never go away.
        var held = try Self.descriptors(of: child.processIdentifier)
        let deadline = ContinuousClock.now + .seconds(10)
        while held != [0, 1, 2], ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
            held = try Self.descriptors(of: child.processIdentifier)
        }
        #expect(held == [0, 1, 2])
        #expect(await child.exited(within: 0) == .signal(SIGTERM))
    }

    /// The failure this type exists for: a child (the first) started before a long-lived one (the second) ends
    /// while the second runs; its end and its output's end are seen at once.
    @Test func aChildEndsWhileALongLivedOneStartedAfterItRuns() async throws {
        let first = try ChildProcess("/bin/sh", ["-c", "read line; echo \"got $line\"; echo oops >&2; exit 3"], stdin: .pipe)
        let longLived = try ChildProcess("/bin/sleep", ["30"])
        defer { longLived.signal(SIGKILL) }
        first.write("hello\n")
        #expect(await first.exited(within: 10) == .exit(3))
        #expect(longLived.isRunning)
        #expect(await first.output?.finishedText(timeout: 10) == "got hello\n")
        #expect(first.output?.isFinished == true)
        #expect(await first.errors?.finishedText(timeout: 10) == "oops\n")
        await longLived.exited(within: 0)
    }

    @Test func signalsAndStatuses() async throws {
        let sleeper = try ChildProcess("/bin/sleep", ["30"])
        #expect(sleeper.isRunning && sleeper.termination == nil && sleeper.terminationStatus == -1)
        sleeper.terminate()
        #expect(await sleeper.exited() == .signal(SIGTERM))
        #expect(sleeper.terminationStatus == SIGTERM && sleeper.shellStatus == 128 + SIGTERM)
        sleeper.terminate()  // After it ended (and was reaped): nothing is sent.

        // A child that does not end in time is stopped.
        let slow = try ChildProcess("/bin/sleep", ["30"])
        #expect(await slow.exited(within: 0.05) == .signal(SIGTERM))

        // One that ignores SIGTERM is killed after the grace period.
        let stubborn = try ChildProcess("/bin/sh", ["-c", "trap '' TERM; echo ready; sleep 30 & wait"])
        #expect(await stubborn.output?.lines(1, timeout: 10) == ["ready"])
        #expect(await stubborn.exited(within: 0, grace: 0.2) == .signal(SIGKILL))

        // The blocking waits, for threads that may block (on the blocking executor here), behave alike.
        let blocking = try ChildProcess("/bin/sh", ["-c", "trap '' TERM; echo ready; sleep 30 & wait"])
        let (lines, end) = try await Blocking.perform("test") {
            (blocking.output?.linesBlocking(1, timeout: 10), blocking.waitUntilExit(within: 0, grace: 0.2))
        }
        #expect(lines == ["ready"] && end == .signal(SIGKILL))
        let quick = try ChildProcess("/bin/sh", ["-c", "echo done; exit 4"])
        let (text, status) = try await Blocking.perform("test") { (quick.output?.textBlocking(timeout: 10), quick.waitUntilExit()) }
        #expect(text == "done\n" && status == .exit(4))
    }

    @Test func streamsEnvironmentAndDirectory() async throws {
        let dir = NSTemporaryDirectory() + "spawn-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        setenv("SPAWN_TEST_REMOVED", "present", 1)
        let merged = try ChildProcess("/bin/sh", ["-c", "pwd; echo \"$SPAWN_TEST_SET:${SPAWN_TEST_REMOVED-unset}\"; echo err >&2"],
                                      environment: ["SPAWN_TEST_SET": "set", "SPAWN_TEST_REMOVED": nil], directory: dir,
                                      stderr: .stdout)
        #expect(await merged.exited(within: 10) == .exit(0))
        #expect(merged.errors == nil)
        #expect(await merged.output?.finishedText(timeout: 10) == "\(dir)\nset:unset\nerr\n")

        let file = dir + "/out.txt"
        let toFile = try ChildProcess("/bin/echo", ["to a file"], stdout: .file(file), stderr: .null)
        #expect(await toFile.exited(within: 10) == .exit(0))
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "to a file\n")

        // stdin from a file, stdout handed to the caller.
        let cat = try ChildProcess("/bin/cat", [], stdin: .file(file), stdout: .pipeToCaller)
        let descriptor = try #require(cat.outputDescriptor)
        let read = try await Blocking.perform("test") {
            String(decoding: FileHandle(fileDescriptor: descriptor, closeOnDealloc: true).readDataToEndOfFile(), as: UTF8.self)
        }
        #expect(read == "to a file\n")
        #expect(await cat.exited(within: 10) == .exit(0))
    }

    @Test func aProgramThatCannotStartIsAnError() throws {
        // Coded like every module's errors: the code, the category (exit 74) and one line naming the program.
        let missing = #expect(throws: SpawnError.self) { try ChildProcess("/nonexistent/program", []) }
        #expect(missing?.code == .cannotStart && missing?.category == .localFile)
        #expect(missing?.message.hasPrefix("cannot start /nonexistent/program: ") == true, "\(String(describing: missing))")
        #expect(throws: SpawnError(.cannotStart)) { try ChildProcess("/bin/true", [], directory: "/nonexistent/directory") }
    }
}
