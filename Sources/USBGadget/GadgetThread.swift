import Glibc

/// The gadget's threads (from `DedicatedThread`) run the blocking configfs and ep0 calls with every asynchronous
/// signal blocked. Internal.
enum GadgetThread {
    /// Blocks every asynchronous signal on the calling thread; call first thing on a gadget thread. Process signals
    /// then go to other threads: a signal handled here would interrupt a data stage (EINTR makes FunctionFS dequeue
    /// the request and the host's transfer fail).
    static func blockAsynchronousSignals() {
        var mask = sigset_t()
        sigfillset(&mask)
        for synchronous in [SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT] { sigdelset(&mask, synchronous) }
        pthread_sigmask(SIG_BLOCK, &mask, nil)
    }
}
