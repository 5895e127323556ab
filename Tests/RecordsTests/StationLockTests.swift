import Foundation
@testable import Records
import Testing
import TestSupport

/// A station's name held on one records file: refused while live, free once its holder is gone.
struct StationLockTests {
    static func records() -> String {
        let directory = (try? TestSupport.TemporaryDirectory.make("station-lock")) ?? "/nonexistent/station-lock-could-not-be-made"
        return directory + "/records.sqlite"
    }

    @Test func aSecondHolderOfTheSameNameIsRefusedWithOneLine() async throws {
        let path = Self.records()
        let first = try await StationLock.acquire(station: "s1", recordsPath: path)
        let error = await #expect(throws: RecordsError.self) { _ = try await StationLock.acquire(station: "s1", recordsPath: path) }
        #expect(error?.code == .stationLive)
        #expect(error?.message.contains("station s1 is running already on \(path)") == true, "\(String(describing: error))")
        #expect(error?.message.contains("\n") == false)
        withExtendedLifetime(first) {}
    }

    @Test func otherNamesAndOtherFilesAreFree() async throws {
        let path = Self.records()
        let first = try await StationLock.acquire(station: "s1", recordsPath: path)
        let other = try await StationLock.acquire(station: "s2", recordsPath: path)
        let elsewhere = try await StationLock.acquire(station: "s1", recordsPath: Self.records())
        #expect(first.path == other.path)
        #expect(elsewhere.path != first.path)
        #expect(StationLock.offset(of: "s1") != StationLock.offset(of: "s2"))
        withExtendedLifetime((first, other, elsewhere)) {}
    }

    @Test func aGoneHolderLeavesTheNameFree() async throws {
        let path = Self.records()
        var first: StationLock? = try await StationLock.acquire(station: "line-3", recordsPath: path)
        #expect(first != nil)
        first = nil
        // The lock goes with its last reference, which the blocking executor's thread that made it may hold a moment
        // longer on a busy machine (the parallel suite saw "running already" once): wait for the name to be free.
        var again: StationLock?
        try await waitUntil("the name is free once its holder is gone") {
            again = try? await StationLock.acquire(station: "line-3", recordsPath: path)
            return again != nil
        }
        #expect(again?.station == "line-3")
    }

    @Test func anUnwritablePlaceIsRefusedWithOneLine() async throws {
        let error = await #expect(throws: RecordsError.self) {
            _ = try await StationLock.acquire(station: "s1", recordsPath: "/nonexistent-\(UUID().uuidString)/records.sqlite")
        }
        #expect(error?.code == .cannotOpen)
    }
}
