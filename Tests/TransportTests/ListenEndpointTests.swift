import Testing
import Transport

/// The one parser of the tools' listen options: HOST:PORT / [IPv6]:PORT, and tcp:HOST:PORT.
struct ListenEndpointTests {
    @Test func hostAndPortWithIPv6InBrackets() throws {
        #expect(try ListenEndpoint(parsing: "127.0.0.1:8080", option: "--ui") == ListenEndpoint(host: "127.0.0.1", port: 8080))
        #expect(try ListenEndpoint(parsing: "[::1]:0", option: "--ui") == ListenEndpoint(host: "::1", port: 0))
        #expect(try ListenEndpoint(parsing: "0.0.0.0:65535", option: "--listen").description == "0.0.0.0:65535")
        #expect(ListenEndpoint(host: "::1", port: 80).description == "[::1]:80")
    }

    @Test func badAddressesAreOneUsageLineNamingTheOption() {
        let cases: [(String, String)] = [
            ("8080", "--listen takes HOST:PORT with a port 0...65535, got '8080'"),
            ("host:65536", "--listen takes HOST:PORT with a port 0...65535, got 'host:65536'"),
            ("host:-1", "--listen takes HOST:PORT with a port 0...65535, got 'host:-1'"),
            (":80", "--listen takes HOST:PORT, got ':80'"),
            ("a b:80", "--listen takes HOST:PORT, got 'a b:80'"),
            ("::1:80", "--listen: write an IPv6 address in brackets, [ADDRESS]:PORT, got '::1:80'"),
        ]
        for (text, message) in cases {
            let error = #expect(throws: TransportError.self) { try ListenEndpoint(parsing: text, option: "--listen") }
            #expect(error?.message == message && error?.category == .usage, "\(text)")
        }
    }

    @Test func theTCPSchemeForm() throws {
        #expect(try ListenEndpoint(parsingTCP: "tcp:127.0.0.1:0", option: "--listen") == ListenEndpoint(host: "127.0.0.1", port: 0))
        for bad in ["127.0.0.1:80", "serial:/dev/ttyS0", "tcp:host", "tcp:host:70000"] {
            let error = #expect(throws: TransportError.self) { try ListenEndpoint(parsingTCP: bad, option: "--listen") }
            #expect(error?.message == "--listen takes tcp:HOST:PORT, got '\(bad)'" && error?.category == .usage)
        }
    }
}
