import Testing
@testable import Transport

@Suite(.serialized) struct LinkConditionerTests {
    let clock = ContinuousClock()

    func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18
    }

    /// Receives exactly `count` bytes; also returns when the first of them arrived.
    func receiveExactlyNotingFirst(_ count: Int, from transport: any Transport) async throws -> ([UInt8], ContinuousClock.Instant) {
        var out = try await transport.receive()
        let first = clock.now
        while out.count < count { out += try await transport.receive() }
        #expect(out.count == count)
        return (out, first)
    }

    /// Checks a lane's own schedule against the model, whatever the load on the machine. The lane ended at `end`
    /// after carrying `wire` worth of data and idling `idle` (time when the loop feeding it was late — which is what
    /// a loaded machine adds, and why wall-clock ceilings are only hang guards here). So it began carrying at
    /// `end - idle - wire`, and that must lie between `start` (nothing was handed over earlier) and `firstArrival -
    /// latency` (the first bytes arrived after they were carried). A wrong wire time or latency moves that instant out
    /// of the window by about the error.
    func expectSchedule(end: ContinuousClock.Instant, idle: Duration, wire: Duration, latency: Duration = .zero,
                        start: ContinuousClock.Instant, firstArrival: ContinuousClock.Instant,
                        sourceLocation: SourceLocation = #_sourceLocation) {
        let began = end - idle - wire
        #expect(began >= start, "the schedule began \(start - began) before the data was handed over", sourceLocation: sourceLocation)
        #expect(began <= firstArrival - latency, "the first bytes arrived \(began - (firstArrival - latency)) too early for the schedule",
                sourceLocation: sourceLocation)
    }

    /// A conditioned end and the plain far end of an in-memory pair.
    func link(_ spec: String, framing: LinkFraming = .byteStream) throws -> (ConditionedTransport, any Transport) {
        let (near, far) = InMemoryTransport.pair(framing: framing, capacity: 256 * 1024)
        return (ConditionedTransport(wrapping: near, conditions: try LinkConditions(parsing: spec)), far)
    }

    @Test func bandwidthLimitsOutgoingTraffic() async throws {
        try await withTimeLimit {
            let (conditioned, far) = try link("bw=700k")
            let payload = pattern(70_000)
            let start = clock.now
            async let received = receiveExactlyNotingFirst(payload.count, from: far)
            try await conditioned.send(payload)
            let sendTook = seconds(clock.now - start)
            let (bytes, firstArrival) = try await received
            #expect(bytes == payload)
            let took = seconds(clock.now - start)
            // 70 000 bytes · 8 / 700 000 bit/s = 0.8 s: never faster; slower only by the time the sender was late,
            // which the link accounts as idle. (No ceiling: a loaded machine makes everything slow; withTimeLimit is the
            // hang guard.)
            #expect(took >= 0.78, "took \(took) s")
            expectSchedule(end: conditioned.linkFreeAt.outgoing, idle: conditioned.statistics.outgoing.idleTime,
                           wire: .milliseconds(800), start: start, firstArrival: firstArrival)
            // send() returns once the last piece is queued (4096 bytes before the end of the transfer).
            #expect(sendTook >= 0.7 && sendTook < took, "send took \(sendTook) s")
            #expect(conditioned.statistics.outgoing.bytes == 70_000)
            await conditioned.close()
        }
    }

    @Test func bandwidthLimitsIncomingTraffic() async throws {
        try await withTimeLimit {
            let (conditioned, far) = try link("bw=700k")
            let payload = pattern(70_000, seed: 2)
            let start = clock.now
            try await far.send(payload)
            let (bytes, firstArrival) = try await receiveExactlyNotingFirst(payload.count, from: conditioned)
            #expect(bytes == payload)
            let took = seconds(clock.now - start)
            // As above: the model is checked on the link's own schedule.
            #expect(took >= 0.78, "took \(took) s")
            expectSchedule(end: conditioned.linkFreeAt.incoming, idle: conditioned.statistics.incoming.idleTime,
                           wire: .milliseconds(800), start: start, firstArrival: firstArrival)
            #expect(conditioned.statistics.incoming.bytes == 70_000)
            await conditioned.close()
        }
    }

    @Test func manySmallSendsDoNotDrift() async throws {
        try await withTimeLimit {
            // A 16 000-byte chunk fills the link buffer, then 80 × 100 bytes follow, each send waiting for room:
            // 24 000 bytes at 160 kbit/s = 1.2 s. Sleep overshoot must not add up. (The buffer holds 0.8 s of data, so
            // a sender delayed by a loaded machine still keeps the link busy; with the 4096-byte default a delay of
            // 0.2 s already counted as starvation.)
            let (conditioned, far) = try link("bw=160k,buffer=16000")
            let start = clock.now
            async let received = receiveExactly(24_000, from: far)
            try await conditioned.send([UInt8](repeating: 0xEE, count: 16_000))
            let firstStart = conditioned.linkFreeAt.outgoing - .milliseconds(800)
            for i in 0..<80 { try await conditioned.send([UInt8](repeating: UInt8(i), count: 100)) }
            // The link carried data for exactly 1.2 s, whatever the sleeps overshot. (If this process was so busy that
            // the sender fell more than a whole link buffer behind, the link idled; that time is accounted apart.)
            let busy = conditioned.linkFreeAt.outgoing - firstStart
            let idle = conditioned.statistics.outgoing.idleTime
            #expect(abs(seconds(busy - idle) - 1.2) < 0.000_001, "busy for \(busy), idle \(idle)")
            #expect(conditioned.statistics.outgoing.bytes == 24_000 && conditioned.statistics.outgoing.chunks >= 81,
                    "\(conditioned.statistics.outgoing)")
            let bytes = try await received
            #expect(bytes.count == 24_000)
            let took = seconds(clock.now - start)
            // Never faster than the model (the model is checked above).
            #expect(took >= 1.19, "took \(took) s")
            await conditioned.close()
        }
    }

    @Test func latencyIsAddedInEachDirection() async throws {
        try await withTimeLimit {
            // A latency of a second. Sends do not wait for it: both return before the first byte arrives (an order,
            // not a wall-clock ceiling: a send that waited for the latency would return after its byte arrived).
            let (conditioned, far) = try link("latency=1s")
            let start = clock.now
            let arrival = Task { () throws -> ([UInt8], ContinuousClock.Instant) in
                var got: [UInt8] = []
                var first: ContinuousClock.Instant?
                while got.count < 2 {
                    got += try await far.receive()
                    if first == nil { first = clock.now }
                }
                return (got, first!)
            }
            try await conditioned.send([1])
            try await conditioned.send([2])
            let sent = clock.now
            let (bytes, firstArrival) = try await arrival.value
            #expect(bytes == [1, 2])
            #expect(sent < firstArrival, "the sends returned \(sent - firstArrival) after the first byte arrived")
            let oneWay = seconds(firstArrival - start)
            try await far.send([3])
            #expect(try await conditioned.receive() == [3])
            let roundTrip = seconds(clock.now - start)
            // Never sooner than the model; no ceiling (a loaded machine makes everything slow).
            #expect(oneWay >= 0.999, "one way \(oneWay) s")
            #expect(roundTrip >= 1.999, "round trip \(roundTrip) s")
            #expect(conditioned.statistics.outgoing.bytes == 2 && conditioned.statistics.incoming.bytes == 1)
            await conditioned.close()
        }
    }

    @Test func latencyAddsToSerialisationTime() async throws {
        try await withTimeLimit {
            // 7 000 bytes at 700 kbit/s = 80 ms, plus 100 ms latency.
            let (conditioned, far) = try link("bw=700k,latency=100ms")
            let start = clock.now
            try await conditioned.send(pattern(7000))
            let (_, firstArrival) = try await receiveExactlyNotingFirst(7000, from: far)
            let took = seconds(clock.now - start)
            // The model on the link's schedule (latency included).
            #expect(took >= 0.179, "took \(took) s")
            expectSchedule(end: conditioned.linkFreeAt.outgoing, idle: conditioned.statistics.outgoing.idleTime,
                           wire: .milliseconds(80), latency: .milliseconds(100), start: start, firstArrival: firstArrival)
            await conditioned.close()
        }
    }

    @Test func sendBlocksWhileTheLinkBufferIsFull() async throws {
        try await withTimeLimit {
            // 10 000 bytes/s with a 1 000-byte buffer: a 5 000-byte send returns after ~0.4 s.
            let (conditioned, far) = try link("bw=80k,buffer=1000")
            let drain = Task { try await receiveExactly(5000, from: far) }
            let start = clock.now
            try await conditioned.send(pattern(5000))
            let returned = clock.now
            let took = seconds(returned - start)
            // Never sooner than the model. The model on the link's schedule: the last
            // 1000 bytes were queued once 4000 had gone out, so send() returned at least 0.4 s after the link began.
            #expect(took >= 0.38, "send took \(took) s")
            expectSchedule(end: conditioned.linkFreeAt.outgoing, idle: conditioned.statistics.outgoing.idleTime,
                           wire: .milliseconds(500), start: start, firstArrival: returned - .milliseconds(400))
            #expect(try await drain.value == pattern(5000))
            await conditioned.close()
        }
    }

    func corruptedOutput(seed: UInt64, count: Int = 100_000) async throws -> ([UInt8], LinkStatistics) {
        let (conditioned, far) = try link("corrupt=0.01,seed=\(seed)")
        let zeros = [UInt8](repeating: 0, count: count)
        async let received = receiveExactly(count, from: far)
        // Uneven chunking: corruption positions must not depend on it.
        var offset = 0
        var size = 1
        while offset < count {
            let n = min(size, count - offset)
            try await conditioned.send(Array(zeros[offset..<offset + n]))
            offset += n
            size = size % 5000 + 777
        }
        let output = try await received
        let stats = conditioned.statistics
        await conditioned.close()
        return (output, stats)
    }

    @Test func corruptionIsRateAccurateAndReproducible() async throws {
        try await withTimeLimit {
            let (first, stats) = try await corruptedOutput(seed: 7)
            let corrupted = first.filter { $0 != 0 }
            // Every corrupted byte has exactly one bit flipped.
            #expect(corrupted.allSatisfy { $0.nonzeroBitCount == 1 })
            // 100 000 bytes at 1 %: mean 1000, σ ≈ 31.5.
            #expect((850...1150).contains(corrupted.count), "corrupted \(corrupted.count)")
            #expect(stats.outgoing.corruptedBytes == corrupted.count)
            // All eight bit positions occur.
            #expect(Set(corrupted).count == 8)
            let (again, _) = try await corruptedOutput(seed: 7)
            #expect(again == first)
            let (other, _) = try await corruptedOutput(seed: 8)
            #expect(other != first)
        }
    }

    @Test func corruptionAppliesToIncomingBytesToo() async throws {
        try await withTimeLimit {
            func run() async throws -> [UInt8] {
                let (conditioned, far) = try link("corrupt=0.02,seed=3")
                try await far.send([UInt8](repeating: 0xFF, count: 20_000))
                let got = try await receiveExactly(20_000, from: conditioned)
                #expect(conditioned.statistics.incoming.corruptedBytes == got.filter { $0 != 0xFF }.count)
                #expect(conditioned.statistics.outgoing.corruptedBytes == 0)
                await conditioned.close()
                return got
            }
            let a = try await run()
            let flipped = a.filter { $0 != 0xFF }.count
            #expect((300...500).contains(flipped), "flipped \(flipped)")
            #expect(try await run() == a)
        }
    }

    @Test func dropsWholeChunksReproducibly() async throws {
        try await withTimeLimit {
            func run(seed: UInt64) async throws -> ([UInt8], LinkStatistics) {
                let (conditioned, far) = try link("drop=0.3,seed=\(seed)", framing: .packets)
                for i in 0..<200 { try await conditioned.send([UInt8(i), 0xAA, 0x55]) }
                try await conditioned.send([0xFF, 0xFF, 0xFF, 0xFF]) // may be dropped too
                var got: [UInt8] = []
                let stats = conditioned.statistics
                let expected = 201 - stats.outgoing.droppedChunks
                for _ in 0..<expected {
                    let packet = try await far.receive()
                    if packet.count == 3 {
                        #expect(packet[1...] == [0xAA, 0x55])
                        got.append(packet[0])
                    }
                }
                await conditioned.close()
                return (got, stats)
            }
            let (kept, stats) = try await run(seed: 1)
            #expect(stats.outgoing.chunks == 201)
            #expect((40...80).contains(stats.outgoing.droppedChunks), "dropped \(stats.outgoing.droppedChunks)")
            #expect(kept == kept.sorted())
            #expect(kept.count >= 200 - stats.outgoing.droppedChunks)
            let (again, _) = try await run(seed: 1)
            #expect(again == kept)
            let (other, _) = try await run(seed: 2)
            #expect(other != kept)
        }
    }

    @Test func stallsPauseTheLink() async throws {
        try await withTimeLimit {
            let (conditioned, far) = try link("stall=1:200ms")
            let start = clock.now
            try await conditioned.send([1])
            #expect(try await far.receive() == [1])
            let arrived = clock.now
            let took = seconds(arrived - start)
            // The stall on the link's schedule (it ends the carrying 200 ms after it began).
            #expect(took >= 0.199, "took \(took) s")
            expectSchedule(end: conditioned.linkFreeAt.outgoing, idle: .zero, wire: .milliseconds(200), start: start, firstArrival: arrived)
            #expect(conditioned.statistics.outgoing.stalls == 1)
            await conditioned.close()
        }
    }

    @Test func disconnectAfterBytesClosesBothSides() async throws {
        try await withTimeLimit {
            let (conditioned, far) = try link("disconnect=500")
            try await conditioned.send(pattern(300))
            // This send crosses the limit: 200 of its bytes are carried, then the link is down.
            await expectTransportError(.closed) { try await conditioned.send(pattern(300, seed: 5)) }
            let (farBytes, farError) = await receiveUntilError(far)
            #expect(farBytes == pattern(300) + pattern(300, seed: 5).prefix(200))
            #expect((farError as? TransportError)?.code == .closed)
            let error = await expectTransportError(.closed) { _ = try await conditioned.receive() }
            #expect(error?.message.contains("disconnected after 500 bytes") == true)
            await expectTransportError(.closed) { try await conditioned.send([1]) }
            #expect(conditioned.statistics.disconnected)
            #expect(conditioned.statistics.outgoing.bytes == 500)
            await conditioned.close()
        }
    }

    @Test func disconnectCountsBothDirections() async throws {
        try await withTimeLimit {
            let (conditioned, far) = try link("disconnect=1000,latency=20ms")
            try await conditioned.send(pattern(400))
            _ = try await receiveExactly(400, from: far)
            try await far.send(pattern(900, seed: 6))
            let (bytes, error) = await receiveUntilError(conditioned)
            #expect(bytes == Array(pattern(900, seed: 6).prefix(600)))
            #expect((error as? TransportError)?.code == .closed)
            let (_, farError) = await receiveUntilError(far)
            #expect((farError as? TransportError)?.code == .closed)
            await expectTransportError(.closed) { try await conditioned.send([1]) }
            await conditioned.close()
        }
    }

    @Test func closeDeliversBytesStillInFlight() async throws {
        try await withTimeLimit {
            let (conditioned, far) = try link("latency=100ms")
            try await conditioned.send([1, 2, 3])
            await conditioned.close()
            let (bytes, error) = await receiveUntilError(far)
            #expect(bytes == [1, 2, 3])
            #expect((error as? TransportError)?.code == .closed)
            await expectTransportError(.closed) { _ = try await conditioned.receive() }
            await expectTransportError(.closed) { try await conditioned.send([4]) }
        }
    }

    @Test func closeFailsAPendingReceive() async throws {
        try await withTimeLimit {
            let (conditioned, _) = try link("latency=10ms")
            let pending = Task { try await conditioned.receive() }
            try await waitUntil("the receive is waiting") { conditioned.hasPendingReceive }
            await conditioned.close()
            await expectTransportError(.closed) { _ = try await pending.value }
        }
    }

    @Test func peerCloseArrivesAfterTheDataAndTheLatency() async throws {
        try await withTimeLimit {
            let (conditioned, far) = try link("latency=50ms")
            // Read before the send: the conditioner's reader may take the data and the close before this task resumes.
            let start = clock.now
            try await far.send([1, 2])
            await far.close()
            let (bytes, error) = await receiveUntilError(conditioned)
            #expect(bytes == [1, 2])
            #expect((error as? TransportError)?.code == .closed)
            #expect(seconds(clock.now - start) >= 0.04)
            await conditioned.close()
        }
    }

    @Test func cancelledReceiveLosesNoBytes() async throws {
        try await withTimeLimit {
            // The receive must still be waiting when it is cancelled, with the bytes on the link: 3 s of latency
            // leaves room for a slow machine between seeing that and the cancel.
            let (conditioned, far) = try link("latency=3s")
            try await far.send([1, 2, 3])
            let pending = Task { try await conditioned.receive() }
            try await waitUntil("the bytes are in flight and the receive waits for them") {
                conditioned.statistics.incoming.bytes == 3 && conditioned.hasPendingReceive
            }
            pending.cancel()
            await #expect(throws: CancellationError.self) { _ = try await pending.value }
            #expect(try await conditioned.receive() == [1, 2, 3])
            await conditioned.close()
        }
    }

    @Test func perfectLinkPassesEverythingThrough() async throws {
        try await withTimeLimit {
            let (conditioned, far) = try link("none")
            #expect(conditioned.peerDescription == far.peerDescription.replacingOccurrences(".a", ".b"))
            let up = pattern(300_000, seed: 1)
            let down = pattern(300_000, seed: 2)
            async let a = receiveExactly(up.count, from: far)
            async let b = receiveExactly(down.count, from: conditioned)
            try await conditioned.send(up)
            try await far.send(down)
            #expect(try await a == up)
            #expect(try await b == down)
            await conditioned.close()
        }
    }
}

extension String {
    fileprivate func replacingOccurrences(_ target: String, _ replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
