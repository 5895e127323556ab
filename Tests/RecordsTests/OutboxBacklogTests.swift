import Foundation
@testable import Records
import TestSupport
import Testing

/// What a station's outbox still owes its line's server: an identity change the server refused (another unit or
/// station holds the value) is a conflict, reported and not retried; one not sent yet is backlog.
@Suite struct OutboxBacklogTests {
    @Test func anIdentityTheServerRefusedIsAConflictNotBacklog() async throws {
        let directory = try TestSupport.TemporaryDirectory.make("outbox-backlog")
        let store = try await SQLiteRecordStore.open(path: directory + "/records.sqlite")
        let first = try await store.mirror(held: Identity(id: IdentityID(0), kind: .serial, value: "SN-1", state: .written,
                                                          hardwareID: "hw-1", station: "s1", lease: nil, updatedAt: Date()))
        let second = try await store.mirror(held: Identity(id: IdentityID(0), kind: .serial, value: "SN-2", state: .written,
                                                           hardwareID: "hw-2", station: "s1", lease: nil, updatedAt: Date()))
        #expect(try await store.backlog() == OutboxBacklog(runs: 0, identities: 0, conflicts: 0), "mirrored: the server holds them")
        // The server refused the first (its state as the server answered it, marked a conflict); the second changed
        // here and is not uploaded yet.
        try await store.markUploaded(first.id, state: .committed, conflict: true)
        try await store.markUploaded(second.id, state: .reserved)
        #expect(try await store.backlog() == OutboxBacklog(runs: 0, identities: 1, conflicts: 1))
        #expect(try await store.identitiesToUpload().map(\.value) == ["SN-2"], "a refused change is not retried")

        try await offThePool { try FileManager.default.removeItem(atPath: directory) }
    }
}
