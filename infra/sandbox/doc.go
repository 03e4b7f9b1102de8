// Package sandbox runs model-written Python code for the coder agent and
// exposes it as the eino tool "python_repl_tool".
//
// Isolation is best effort and process based; it protects the server's
// secrets and keeps runaway code bounded, but it is not a security boundary
// against hostile code:
//
//   - Isolated: environment (a fixed allow-list, never the server's, which
//     holds API keys), working directory and HOME (a fresh temp dir removed
//     afterwards), stdin (/dev/null), Python start-up (-I ignores PYTHON*
//     variables, user site-packages and the script's directory), wall-clock
//     time (the whole process group is SIGKILLed), CPU seconds, size of
//     written files and number of open files (rlimits), and captured output
//     (bounded buffer; the rest is drained and dropped).
//   - Not isolated: network (no network namespace), the rest of the file
//     system (the code runs as the server's user and can read whatever that
//     user can), memory (no RLIMIT_AS, numeric libraries reserve large
//     virtual mappings), process count, and processes that deliberately leave
//     the process group with setsid. Run behind a container or a dedicated
//     user when exposing this to untrusted prompts.
package sandbox
