import Capture
import Logging
import Session
import SpeakerSession
import Synchronization
import Transport

/// A speaker's control port on the network: where `speaker:HOST:PORT` (or `tcp:HOST:PORT`) points, and where its
/// audio goes (`host`, the port its hello announces) and a lost speaker is reconnected.
public struct SpeakerEndpoint: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: UInt16

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// `HOST:PORT`, IPv6 hosts in brackets (how the speaker commands name a speaker).
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// The speakers' network address scheme, `speaker:HOST:PORT`: a speaker's control port on TCP (a real speaker, a
/// `tuneup sim speaker` or a `tuneup speaker receive`). `tcp:HOST:PORT` reaches the same port; the in-process
/// simulated speaker is `sim:speaker` (`SpeakerSimulatorBridge`, plugged in by TuneupKit).
public enum SpeakerBridge {
    /// The scheme's name.
    public static let scheme = "speaker"

    /// The address of the speaker at `endpoint`.
    public static func address(_ endpoint: SpeakerEndpoint) -> DeviceAddress {
        .registered(RegisteredAddress(scheme: scheme, text: "\(scheme):\(endpoint)", value: endpoint))
    }

    /// Parses the text after `speaker:`: `HOST:PORT` in the TCP grammar, port 1...65535; an IPv6 host in brackets
    /// (a host with a `:` otherwise is refused, so `a:b:1` is no speaker).
    public static func parse(_ rest: String, _ text: String) throws(TransportError) -> DeviceAddress {
        let bad = TransportError(.invalidAddress, "bad speaker address '\(text)': expected speaker:HOST:PORT (IPv6: speaker:[::1]:PORT) with PORT 1...65535")
        if let port = decimalPort(rest), !(1...65535).contains(port) {
            throw TransportError(.invalidAddress, "bad speaker address '\(text)': port \(port) is out of range (1...65535)")
        }
        guard case let .tcp(host, port)? = try? AddressSchemes.builtIn.parse("tcp:" + rest), port != 0,
              rest.hasPrefix("[") || !host.contains(":") else { throw bad }
        return address(SpeakerEndpoint(host: host, port: port))
    }

    /// The port of `HOST:PORT` (`[IPV6]:PORT`) when it is a decimal number, however large (nil: no such port).
    static func decimalPort(_ rest: String) -> Int? {
        guard let colon = rest.lastIndex(of: ":") else { return nil }
        let host = rest[..<colon], digits = rest[rest.index(after: colon)...]
        guard !host.isEmpty, host.hasPrefix("[") || !host.contains(":"), !digits.isEmpty, digits.count <= 18,
              digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int(digits)
    }

    /// The address scheme (for `AddressSchemes`).
    public static let addressScheme = AddressScheme(
        name: scheme, form: "speaker:HOST:PORT", summary: "an HKWirelessHD speaker's control port on TCP ('sim speaker' prints them)",
        parse: parse)

    /// Opens a TCP link to the speaker's control port.
    public static func open(_ address: DeviceAddress, context: TransportConnector.Context) async throws -> any Transport {
        guard let endpoint = endpoint(of: address) else {
            throw TransportError(.invalidAddress, "\(address) is not a speaker's network address")
        }
        return try await TCPTransport.connect(host: endpoint.host, port: endpoint.port, timeout: context.connectTimeout, logger: context.logger)
    }

    /// The network endpoint of a `speaker:` or `tcp:` address (nil for any other).
    public static func endpoint(of address: DeviceAddress) -> SpeakerEndpoint? {
        switch address {
        case let .tcp(host, port): SpeakerEndpoint(host: host, port: port)
        case let .registered(r) where r.scheme == scheme: r.value(as: SpeakerEndpoint.self)
        default: nil
        }
    }

    /// The schemes whose addresses are speakers (what the speaker commands take).
    public static let schemes = [scheme, "tcp", "sim:speaker"]
}

extension DeviceRegistry {
    /// The forms of the speakers' addresses, as the registry spells them.
    public var speakerForms: [String] {
        SpeakerBridge.schemes.compactMap { addressSchemes.scheme(named: $0)?.form }
    }

    /// Parses a speaker's address through the registry (`addressSchemes`): `speaker:HOST:PORT`, `tcp:HOST:PORT` or
    /// `sim:speaker[:SEED]`; a text that no scheme claims and that is `HOST:PORT` is `speaker:HOST:PORT` (as the
    /// speaker commands always took it). Throws `TransportError(.invalidAddress)` with one line: the
    /// registry's for an unknown or bad address, or naming the speakers' forms for another family's address.
    public func parseSpeakerAddress(_ text: String) throws(TransportError) -> DeviceAddress {
        let address: DeviceAddress
        if addressSchemes.resolve(text) == nil, text.contains(":") {
            // HOST:PORT with a port out of range is said so; not HOST:PORT either: the registry's own line (an
            // unknown scheme, with the schemes it knows).
            if SpeakerBridge.decimalPort(text) != nil {
                address = try SpeakerBridge.parse(text, text)
            } else {
                do { address = try SpeakerBridge.parse(text, text) } catch { address = try parseAddress(text) }
            }
        } else {
            address = try parseAddress(text)
        }
        guard SpeakerBridge.schemes.contains(address.scheme) else {
            throw TransportError(.invalidAddress, "'\(text)' is not a speaker's address: expected \(speakerForms.joined(separator: ", ")) (HOST:PORT alone: speaker:HOST:PORT)")
        }
        // Where a speaker listens on every interface, not where one is reached.
        if let endpoint = SpeakerBridge.endpoint(of: address), SpeakerSession.isUnspecified(host: endpoint.host) {
            throw TransportError(.invalidAddress, "bad speaker address '\(text)': \(endpoint.host) means every interface, not a speaker; give the host it is reached at (127.0.0.1 for this machine)")
        }
        return address
    }

    /// Opens the speaker at `address` through `connector(options)` (so `options.linkConditions` apply to its control
    /// link) and says hello. Audio goes to the endpoint's host, else to the scheme's `localHost` (the loopback for
    /// `sim:speaker`).
    /// - Throws: `SpeakerSessionError` (`.connectionFailed` naming the speaker when it cannot be reached; the session's
    ///   failures), `CancellationError`.
    public func openSpeaker(
        _ address: DeviceAddress, options: ConnectionOptions = .init(), requestOptions: RequestOptions = RequestOptions(),
        logger: Logger = Logger(label: "tuneup.speaker")
    ) async throws -> SpeakerSession {
        let endpoint = SpeakerBridge.endpoint(of: address)
        let display = endpoint?.description ?? address.description
        let transport: any Transport
        do {
            transport = try await connector(options).open(address)
        } catch let error as TransportError {
            throw SpeakerSessionError(.connectionFailed, "cannot reach speaker \(display): \(error.message)")
        }
        let host = endpoint?.host ?? entry(named: address.scheme)?.localHost
        return try await SpeakerSession.open(transport: transport, address: display, host: host, controlPort: endpoint?.port,
                                             options: requestOptions, logger: logger)
    }

    /// Opens every speaker of `addresses` (`openSpeaker`), in order, and reads their DeviceInfo; on a failure the
    /// sessions already opened are closed.
    public func openSpeakers(
        _ addresses: [DeviceAddress], options: ConnectionOptions = .init(), requestOptions: RequestOptions = RequestOptions()
    ) async throws -> SpeakerController {
        let opened = Mutex<[UInt64: DeviceAddress]>([:])
        let controller = try await SpeakerController.open(addresses) { address in
            let session = try await openSpeaker(address, options: options, requestOptions: requestOptions)
            opened.withLock { $0[session.deviceId] = address }
            return session
        }
        // A speaker lost during playback is opened again here, by its address: the link conditions and the capture
        // reach the new link as they did the first (the player's own fallback is plain TCP).
        let registry = self
        await controller.setReopen { lost in
            guard let address = opened.withLock({ $0[lost.deviceId] }) else {
                throw SpeakerSessionError(.disconnected, "speaker \(lost.deviceId) was not opened by address")
            }
            return try await registry.openSpeaker(address, options: options, requestOptions: requestOptions)
        }
        if let capture = options.capture {
            // The player's audio and clock datagrams go to the same capture as the control links (docs/capture.md).
            let datagrams = try await capture.datagrams()
            await controller.setDatagramTap { d in
                datagrams.record(d.kind == .audio ? .hkwhdAudio : .hkwhdClock, peer: "udp:\(d.host):\(d.port)",
                                 direction: d.outbound ? .outbound : .inbound, d.bytes)
            }
        }
        return controller
    }
}
