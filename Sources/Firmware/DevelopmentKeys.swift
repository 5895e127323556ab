/// The development key pair committed for tests: its name says so.
///
/// Contract: `testOnlySigningKey` signs the simulated headset's factory image and the sample images in
/// `firmware-images/` (also there as `test-only-dev-private.pem` and `dev-public.pem`). It is public knowledge:
/// never use it for anything but tests and the simulator.
public enum DevelopmentKeys {
    /// The test-only private key in PKCS#8 PEM (generated with `imgtool keygen -t ed25519`).
    public static let testOnlyPrivateKeyPEM = """
        -----BEGIN PRIVATE KEY-----
        MC4CAQAwBQYDK2VwBCIEID/RtAWFWFgW5UCHsjNAnKKlaxKHHHKESrQGy9M9HfhW
        -----END PRIVATE KEY-----

        """

    /// The test-only Ed25519 signing key (public knowledge: for tests and the simulator only).
    public static let testOnlySigningKey: SigningKey = {
        do {
            return try SigningKey(pem: testOnlyPrivateKeyPEM)
        } catch {
            // The PEM above is a constant checked by the tests; no input reaches this.
            preconditionFailure("the embedded development key does not parse: \(error)")
        }
    }()

    /// The development public key (the simulator's default secure-boot key; `firmware-images/dev-public.pem`).
    public static var publicKey: VerificationKey { testOnlySigningKey.publicKey }
}
