import Glibc
import Testing
@testable import Transport

@Suite struct PseudoTerminalTests {
    /// A client that opens the slave like a naive program would: no termios changes, no flush.
    func rawClient(_ path: String) throws -> any Transport {
        let fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { throw TransportError(.io, "open \(path) failed: errno \(errno)") }
        return try FileDescriptorTransport(adopting: fd, peerDescription: "raw:\(path)")
    }

    /// A client on the terminal's slave (`SerialTransport`, as the tools open it) and the session `pty` accepted for it.
    static func serialSession(_ pty: PseudoTerminal) async throws -> (client: any Transport, session: any Transport) {
        async let accepted = pty.accept()
        let client = try await SerialTransport.open(path: pty.slavePath)
        return (client, try await accepted)
    }

    @Test func twoSuccessiveClientSessions() async throws {
        try await withTimeLimit {
            let pty = try PseudoTerminal.open()
            defer { pty.close() }
            for round in 0..<2 {
                let (client, session) = try await Self.serialSession(pty)
                #expect(session.peerDescription.hasPrefix("pty:\(pty.slavePath)#"))
                let request: [UInt8] = [0x0D, 0x0A, UInt8(round), 0x03, 0x00, 0xFF]
                try await client.send(request)
                #expect(try await receiveExactly(request.count, from: session) == request)
                let reply = [UInt8](repeating: 0x11, count: 3) + [0x13, UInt8(round)]
                try await session.send(reply)
                #expect(try await receiveExactly(reply.count, from: client) == reply)
                await client.close()
                // The session ends when its client leaves.
                let (rest, error) = await receiveUntilError(session)
                #expect(rest.isEmpty)
                #expect((error as? TransportError)?.code == .closed)
                #expect((error as? TransportError)?.message == "\(pty.slavePath): the client closed the terminal")
                await session.close()
            }
        }
    }

    @Test func slaveIsRawEvenForClientsThatDoNotConfigureIt() async throws {
        try await withTimeLimit {
            let pty = try PseudoTerminal.open()
            defer { pty.close() }
            async let accepted = pty.accept()
            let client = try rawClient(pty.slavePath)
            let session = try await accepted
            let bytes = SerialTransportTests.allBytes
            try await client.send(bytes)
            #expect(try await receiveExactly(bytes.count, from: session) == bytes)
            try await session.send(bytes)
            #expect(try await receiveExactly(bytes.count, from: client) == bytes)
            await client.close()
            await session.close()
        }
    }

    @Test func bytesWrittenJustBeforeTheClientClosesAreDelivered() async throws {
        try await withTimeLimit {
            let pty = try PseudoTerminal.open()
            defer { pty.close() }
            let (client, session) = try await Self.serialSession(pty)
            let payload = pattern(3000, seed: 9)
            try await client.send(payload)
            await client.close()
            let (bytes, error) = await receiveUntilError(session)
            #expect(bytes == payload)
            #expect((error as? TransportError)?.code == .closed)
            await expectTransportError(.closed) { try await session.send([1]) }
        }
    }

    @Test func sendAfterTheClientLeftIsClosed() async throws {
        try await withTimeLimit {
            let pty = try PseudoTerminal.open()
            defer { pty.close() }
            let (client, session) = try await Self.serialSession(pty)
            await client.close()
            // Wait until the terminal has noticed (the client count drops to 0 in the same step that marks the
            // session's client gone).
            try await waitUntil("the terminal saw the client leave") { pty.attachedClients == 0 }
            await expectTransportError(.closed) { try await session.send([1, 2, 3]) }
            await expectTransportError(.closed) { _ = try await session.receive() }
        }
    }

    @Test func repliesNobodyReadAreNotDeliveredToTheNextClient() async throws {
        try await withTimeLimit {
            let pty = try PseudoTerminal.open()
            defer { pty.close() }
            async let accepted1 = pty.accept()
            let first = try rawClient(pty.slavePath)
            let session1 = try await accepted1
            let stale = Array("stale reply".utf8)
            try await session1.send(stale)
            // The kernel moves what the master wrote to the slave's input queue asynchronously: wait until all of it
            // is there, unread, so that it really is left behind when the client goes.
            let slave = try #require((first as? FileDescriptorTransport)?.descriptor)
            try await waitUntil("the reply reached the client's input queue") { unreadBytes(slave) == stale.count }
            await first.close() // never read it
            let (_, error) = await receiveUntilError(session1)
            #expect((error as? TransportError)?.code == .closed)
            await session1.close()

            async let accepted2 = pty.accept()
            let second = try rawClient(pty.slavePath)
            let session2 = try await accepted2
            try await session2.send(Array("fresh".utf8))
            #expect(try await receiveExactly(5, from: second) == Array("fresh".utf8))
            await second.close()
            await session2.close()
        }
    }

    @Test func closingASessionWhileTheClientStaysServesItAgain() async throws {
        try await withTimeLimit {
            let pty = try PseudoTerminal.open()
            defer { pty.close() }
            let (client, first) = try await Self.serialSession(pty)
            try await client.send([1])
            #expect(try await first.receive() == [1])
            await first.close()
            await expectTransportError(.closed) { _ = try await first.receive() }
            let second = try await pty.accept()
            #expect(second.peerDescription != first.peerDescription)
            try await client.send([2])
            #expect(try await second.receive() == [2])
            try await second.send([3])
            #expect(try await client.receive() == [3])
            #expect(pty.attachedClients == 1)
            await client.close()
            await second.close()
        }
    }

    @Test func acceptWaitsForAClientAndIsCancellable() async throws {
        try await withTimeLimit {
            let pty = try PseudoTerminal.open()
            defer { pty.close() }
            let waiting = Task { try await pty.accept() }
            try await waitUntil("accept() is waiting for a client") { pty.hasPendingAccept }
            waiting.cancel()
            await #expect(throws: CancellationError.self) { _ = try await waiting.value }
            // A client that opened and already left still gets its session, which drains then ends.
            let quick = try rawClient(pty.slavePath)
            try await quick.send([7, 7])
            await quick.close()
            try await waitUntil("the terminal saw the client leave") { pty.attachedClients == 0 }
            let session = try await pty.accept()
            let (bytes, error) = await receiveUntilError(session)
            #expect(bytes == [7, 7])
            #expect((error as? TransportError)?.code == .closed)
        }
    }

    @Test func closeFailsPendingAcceptAndSessions() async throws {
        try await withTimeLimit {
            let pty = try PseudoTerminal.open()
            let (client, session) = try await Self.serialSession(pty)
            let receiving = Task { try await session.receive() }
            let live = try #require(session as? PTYSession)
            try await waitUntil("the session's receive is waiting") { live.hasPendingReceive }
            pty.close()
            let error = await expectTransportError(.closed) { _ = try await receiving.value }
            #expect(error?.message == "the pseudo-terminal \(pty.slavePath) is closed")
            await expectTransportError(.closed) { _ = try await pty.accept() }
            // The client sees the hang-up.
            let (_, clientError) = await receiveUntilError(client)
            #expect((clientError as? TransportError)?.code == .closed)
            await client.close()
            pty.close() // idempotent
        }
    }

    @Test func closedPseudoTerminalReleasesItsDescriptors() async throws {
        let pty = try PseudoTerminal.open()
        let path = pty.slavePath
        #expect(access(path, F_OK) == 0)
        pty.close()
        // Once the master is closed the slave node disappears (soon; the 30 s only bound a slow machine).
        let deadline = ContinuousClock.now + .seconds(30)
        var gone = false
        while !gone, ContinuousClock.now < deadline {
            gone = access(path, F_OK) != 0
            if !gone { try await Task.sleep(for: .milliseconds(10)) }
        }
        #expect(gone)
    }
}

/// Bytes waiting unread in a tty's input queue (FIONREAD), or -1 when the descriptor cannot tell.
private func unreadBytes(_ fd: Int32) -> Int {
    var count: Int32 = 0
    return ioctl(fd, UInt(FIONREAD), &count) == 0 ? Int(count) : -1
}
