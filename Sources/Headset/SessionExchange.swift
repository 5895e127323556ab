import LightX

extension LightXSession {
    /// Sends `request` and returns the reply when its status is Ok; any other status is `HeadsetError.deviceStatus`.
    func exchange(_ request: Packet, timeout: Duration? = nil, retransmissions: Int? = nil) async throws -> Packet {
        try okReply(try await self.request(request, timeout: timeout, retransmissions: retransmissions), to: request.command)
    }
}

/// `reply` when its status is OK, else the device's status as a `HeadsetError`.
func okReply(_ reply: Packet, to command: Command) throws -> Packet {
    guard reply.status == .ok else { throw HeadsetError.deviceStatus(reply.status, command: command, buffer: reply.buffer) }
    return reply
}

/// Builds a request, turning the codec's refusal (a value out of range, a buffer too long) into
/// `HeadsetError(.invalidArgument)` with the codec's message.
func encodeRequest(_ build: () throws(LightXError) -> Packet) throws -> Packet {
    do {
        return try build()
    } catch {
        throw HeadsetError(.invalidArgument, error.message)
    }
}
