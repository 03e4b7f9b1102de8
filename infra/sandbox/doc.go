// Package sandbox runs model-written Python code for the coder agent and
// exposes it as the eino tool "python_repl_tool".
//
// Isolation is process based and best effort; it keeps the server's secrets
// away from the code and keeps runaway code bounded, but it is not a
// security boundary against a determined attacker (no seccomp filter, no
// mount or PID namespace, shared kernel). Runner.Isolation reports what New
// found usable on the host.
//
// Always applied on Linux:
//
//   - environment: a fixed allow-list, never the server's (which holds API
//     keys); HOME and the working directory are a fresh temp dir removed
//     afterwards; stdin is /dev/null; python -I ignores PYTHON* variables,
//     user site-packages and the script's directory;
//   - wall-clock timeout: the whole process group is SIGKILLed, and so is
//     whatever is left of it when the main process exits;
//   - rlimits, set soft and hard so the code cannot raise them: CPU seconds,
//     written file size (16 MiB), open files (64), no core dumps, address
//     space (RLIMIT_AS, default 512 MiB: a 2 GiB allocation or a growing
//     list ends in MemoryError) and processes (RLIMIT_NPROC, default 64,
//     threads included);
//   - captured output is bounded; the rest is drained and dropped.
//
// Probed at New, most isolated first (the first plan under which the
// interpreter starts as the expected user wins):
//
//   - network: the child gets a new user and network namespace (the same as
//     "unshare -rn", done with clone flags). It only has a loopback
//     interface that is down, so the host, the LAN, the internet and DNS are
//     all unreachable. Without namespaces the network is not isolated.
//   - processes: the kernel never applies RLIMIT_NPROC to the root user, not
//     even to root mapped into a user namespace. A root server therefore runs
//     the child as uid/gid 65534 (Options.SandboxUID/GID) mapped into its
//     own namespace; the limit is then counted per namespace, i.e. per
//     execution, and a fork bomb dies of EAGAIN within milliseconds. As a
//     side effect the child can only read world-readable files. This needs an
//     interpreter and work dir that uid can use: an interpreter under /root
//     (pyenv) is not, and then the child stays root in its namespace, the
//     process limit is NOT enforced and only the timeout ends a fork bomb,
//     which can exhaust the host's pids before that. A non-root server keeps
//     its own uid, for which the limit is enforced.
//
// Not isolated: the rest of the file system (readable per the child's uid),
// the kernel, and processes that leave the process group with setsid (they
// are not killed at the end; with the process limit in force they stay
// bounded). Run behind a container or VM when exposing this to untrusted
// prompts.
package sandbox
