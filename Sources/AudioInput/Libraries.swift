import CCurl
import CSndfile
import CSoxr

/// libsndfile, libsoxr and libcurl are opened with dlopen when a source first needs them, not linked: together they
/// bring some thirty-five shared libraries (codecs, TLS, LDAP, Kerberos...) that every other command of the CLI would
/// map at start-up (issue 17 §5; the loaders are the C targets CSndfile, CSoxr and CCurl). Each entry point that
/// needs one checks it here first, so that a machine without it gets one line naming the Debian package.
enum AudioLibraries {
    /// Decoding (files, HTTP bodies, standard input).
    static func requireSndfile() throws(AudioInputError) {
        if let why = tuneup_sndfile_load() { throw AudioInputError(.libraryMissing, String(cString: why)) }
    }

    /// Resampling.
    static func requireSoxr() throws(AudioInputError) {
        if let why = tuneup_soxr_load() { throw AudioInputError(.libraryMissing, String(cString: why)) }
    }

    /// HTTP(S) transfers.
    static func requireCurl() throws(AudioInputError) {
        if let why = tuneup_curl_load() { throw AudioInputError(.libraryMissing, String(cString: why)) }
    }
}
