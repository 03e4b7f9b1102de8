package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Defaults applied by New to zero-valued Options fields.
const (
	DefaultPython         = "python3"
	DefaultTimeout        = 30 * time.Second
	DefaultMaxOutputBytes = 64 << 10
	DefaultMaxMemoryBytes = 512 << 20 // RLIMIT_AS
	DefaultMaxProcesses   = 64        // RLIMIT_NPROC, threads included
	// DefaultSandboxID is the uid and gid ("nobody"/"nogroup") children run
	// as when the server itself runs as root.
	DefaultSandboxID = 65534
)

const (
	scriptName = "main.py"
	// childPATH is the only PATH the child sees; the server's PATH may point
	// at tool directories that have no business inside the sandbox.
	childPATH = "/usr/local/bin:/usr/bin:/bin"

	fileSizeLimit = 16 << 20 // RLIMIT_FSIZE, bytes
	openFileLimit = 64       // RLIMIT_NOFILE
	probeTimeout  = 10 * time.Second
	// drainGrace bounds how long output is still read after the process group
	// is gone; only a process that escaped the group can keep the pipes open.
	drainGrace = 500 * time.Millisecond
)

// ErrDisabled is returned by Run when code execution is switched off.
var ErrDisabled = errors.New("python execution is disabled on this server (set ENABLE_PYTHON_REPL=true)")

// Options configures a Runner.
type Options struct {
	Enabled        bool          // ENABLE_PYTHON_REPL; default false
	Python         string        // interpreter, default "python3" looked up on PATH
	Timeout        time.Duration // wall clock per execution, default 30s
	MaxOutputBytes int           // cap on captured stdout+stderr, default 64 KiB
	WorkDir        string        // parent dir for per-execution temp dirs, default os.TempDir()
	// MaxMemoryBytes caps the address space (RLIMIT_AS); default 512 MiB,
	// negative for no limit. Libraries that reserve large virtual mappings
	// (some BLAS builds) may need more.
	MaxMemoryBytes int64
	// MaxProcesses caps processes and threads (RLIMIT_NPROC); default 64,
	// negative for no limit. See Isolation for when the kernel enforces it.
	MaxProcesses int
	// SandboxUID and SandboxGID are the ids children run as when the server
	// runs as root; default 65534. Ignored for a non-root server, whose
	// children keep its ids.
	SandboxUID int
	SandboxGID int
}

// Isolation reports which protections the runner actually applies on this
// host, as determined by probing at New.
type Isolation struct {
	// Network: the child has its own network namespace with no usable
	// interface, so it cannot reach the host, the LAN or the internet.
	Network bool
	// Memory: RLIMIT_AS bounds the address space.
	Memory bool
	// Processes: RLIMIT_NPROC is in force for the child. The kernel ignores
	// it for root, so this needs the child to run under a non-root uid.
	Processes bool
	// CPU: RLIMIT_CPU bounds CPU seconds (besides the wall-clock timeout).
	CPU bool
	// FileSize: RLIMIT_FSIZE bounds the size of written files.
	FileSize bool
	// Notes explains the set-up and any protection that is missing.
	Notes string
}

// Result describes one execution.
type Result struct {
	Stdout    string
	Stderr    string
	ExitCode  int // -1 when the process was killed by a signal
	TimedOut  bool
	Truncated bool
	Duration  time.Duration
}

// Runner executes Python snippets. It is immutable after New and safe for
// concurrent use; every Run gets its own directory and process group.
type Runner struct {
	enabled   bool
	python    string // absolute path of the real interpreter
	prlimit   string // absolute path of prlimit, empty to fall back to sh
	timeout   time.Duration
	maxOutput int
	workDir   string
	maxMemory int64 // 0 means no RLIMIT_AS
	maxProcs  int   // 0 means no RLIMIT_NPROC
	plan      spawnPlan
	isolation Isolation
}

// spawnPlan says how a child is started: in fresh user and network
// namespaces or not, and under which ids. Plans are tried in order at New
// and the first one that runs the interpreter is kept.
type spawnPlan struct {
	name string
	// newNamespaces runs the child in a new user and network namespace.
	newNamespaces bool
	// uid and gid are the child's ids; -1 keeps the server's. Inside a new
	// user namespace they are mapped to themselves.
	uid, gid int
	// clearGroups drops supplementary groups (possible only as root).
	clearGroups bool
	// nprocEnforced is whether the kernel applies RLIMIT_NPROC to the child.
	nprocEnforced bool
	notes         string
}

// switchesUser reports whether the child runs under ids other than the
// server's, in which case its directory must be handed over to it.
func (p spawnPlan) switchesUser() bool {
	return p.uid >= 0 && p.uid != os.Geteuid()
}

// New validates opts and, when enabled, locates the interpreter.
func New(opts Options) (*Runner, error) {
	r := &Runner{
		enabled:   opts.Enabled,
		timeout:   opts.Timeout,
		maxOutput: opts.MaxOutputBytes,
		workDir:   opts.WorkDir,
		maxMemory: opts.MaxMemoryBytes,
		maxProcs:  opts.MaxProcesses,
		plan:      spawnPlan{name: "plain", uid: -1, gid: -1},
	}
	if r.timeout <= 0 {
		r.timeout = DefaultTimeout
	}
	if r.maxOutput <= 0 {
		r.maxOutput = DefaultMaxOutputBytes
	}
	if r.workDir == "" {
		r.workDir = os.TempDir()
	}
	switch {
	case r.maxMemory == 0:
		r.maxMemory = DefaultMaxMemoryBytes
	case r.maxMemory < 0:
		r.maxMemory = 0
	}
	switch {
	case r.maxProcs == 0:
		r.maxProcs = DefaultMaxProcesses
	case r.maxProcs < 0:
		r.maxProcs = 0
	}
	if !r.enabled {
		r.isolation.Notes = "python execution is disabled"
		return r, nil
	}
	if err := checkPlatform(); err != nil {
		return nil, err
	}
	st, err := os.Stat(r.workDir)
	if err != nil {
		return nil, fmt.Errorf("sandbox work dir: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("sandbox work dir %q is not a directory", r.workDir)
	}
	name := opts.Python
	if name == "" {
		name = DefaultPython
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return nil, fmt.Errorf("python interpreter %q not found: %w", name, err)
	}
	r.python, err = resolveInterpreter(path)
	if err != nil {
		return nil, err
	}
	if p, err := exec.LookPath("prlimit"); err == nil {
		r.prlimit = p
	} else {
		slog.Warn("prlimit not found, applying rlimits through sh ulimit", "err", err)
	}
	if err := r.choosePlan(opts); err != nil {
		return nil, err
	}
	return r, nil
}

// probeCode reports the ids the child really runs under.
const probeCode = "import os\nprint(os.getuid(), os.getgid())"

// choosePlan tries the spawn plans from most to least isolated and keeps the
// first under which the interpreter starts, as the expected user, in a
// directory like the ones Run uses. Namespaces may be disabled by the kernel
// or a container's seccomp profile, and an unprivileged uid may be unable to
// read an interpreter installed under root's home; both only show up by
// trying.
func (r *Runner) choosePlan(opts Options) error {
	uid, gid := opts.SandboxUID, opts.SandboxGID
	if uid <= 0 {
		uid = DefaultSandboxID
	}
	if gid <= 0 {
		gid = DefaultSandboxID
	}
	plans := spawnPlans(uid, gid)
	var errs []error
	for i, plan := range plans {
		err := r.probePlan(plan)
		if err == nil {
			r.plan = plan
			r.isolation = r.describe(plan, errs)
			log := slog.Info
			if i > 0 {
				log = slog.Warn
			}
			log("python sandbox ready", "plan", plan.name, "network_isolated", r.isolation.Network,
				"process_limit", r.isolation.Processes, "notes", r.isolation.Notes)
			return nil
		}
		slog.Debug("python sandbox plan unavailable", "plan", plan.name, "err", err)
		errs = append(errs, fmt.Errorf("%s: %w", plan.name, err))
	}
	return fmt.Errorf("python sandbox: interpreter %q cannot run: %w", r.python, errors.Join(errs...))
}

func (r *Runner) probePlan(plan spawnPlan) error {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	probe := *r
	probe.plan = plan
	res, err := probe.Run(ctx, probeCode)
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("exit status %d: %s", res.ExitCode, strings.TrimSpace(res.Stderr))
	}
	wantUID, wantGID := plan.uid, plan.gid
	if wantUID < 0 {
		wantUID = os.Geteuid()
	}
	if wantGID < 0 {
		wantGID = os.Getegid()
	}
	if got, want := strings.TrimSpace(res.Stdout), fmt.Sprintf("%d %d", wantUID, wantGID); got != want {
		return fmt.Errorf("child reports ids %q, want %q", got, want)
	}
	return nil
}

// describe turns the chosen plan into the Isolation report; skipped lists
// why better plans were not usable.
func (r *Runner) describe(plan spawnPlan, skipped []error) Isolation {
	iso := Isolation{
		Network:   plan.newNamespaces,
		Memory:    r.maxMemory > 0,
		Processes: r.maxProcs > 0 && plan.nprocEnforced,
		CPU:       true,
		FileSize:  true,
	}
	notes := []string{plan.notes}
	if r.maxMemory <= 0 {
		notes = append(notes, "no memory limit configured")
	}
	if r.maxProcs <= 0 {
		notes = append(notes, "no process limit configured")
	}
	for _, err := range skipped {
		notes = append(notes, "unavailable: "+err.Error())
	}
	iso.Notes = strings.Join(notes, "; ")
	return iso
}

// Isolation reports the protections applied to every execution.
func (r *Runner) Isolation() Isolation { return r.isolation }

// resolveInterpreter asks the interpreter for its real executable. Version
// managers such as pyenv install shell shims that need the server's
// environment to work; the child runs with a scrubbed one, so it must start
// the real binary directly. The probe runs our own fixed code, so inheriting
// the environment here is fine.
func resolveInterpreter(path string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "-I", "-c", "import sys; print(sys.executable)")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("probe python interpreter %q: %w (%s)", path, err, strings.TrimSpace(stderr.String()))
	}
	exe := strings.TrimSpace(string(out))
	if exe == "" || !filepath.IsAbs(exe) {
		// sys.executable may be empty in unusual embeddings; the looked-up
		// path is still usable then.
		return path, nil
	}
	return exe, nil
}

// Enabled reports whether Run will execute code.
func (r *Runner) Enabled() bool { return r.enabled }

// Timeout is the per-execution wall-clock limit.
func (r *Runner) Timeout() time.Duration { return r.timeout }

// Run executes code in a fresh temp directory and returns its captured
// output. A non-zero exit or a timeout is reported in the Result, not as an
// error; errors mean the code could not be run or ctx was cancelled (the
// partial Result is still returned then).
func (r *Runner) Run(ctx context.Context, code string) (*Result, error) {
	if !r.enabled {
		return nil, ErrDisabled
	}
	dir, err := os.MkdirTemp(r.workDir, "pyrun-")
	if err != nil {
		return nil, fmt.Errorf("create sandbox dir: %w", err)
	}
	defer removeDir(ctx, dir)
	script := filepath.Join(dir, scriptName)
	if err := os.WriteFile(script, []byte(code), 0o600); err != nil {
		return nil, fmt.Errorf("write script: %w", err)
	}
	if r.plan.switchesUser() {
		// The child runs as another user; it gets the directory, nothing
		// else of ours. The server (root) can still remove it afterwards.
		for _, p := range []string{dir, script} {
			if err := os.Lchown(p, r.plan.uid, r.plan.gid); err != nil {
				return nil, fmt.Errorf("hand sandbox dir to uid %d: %w", r.plan.uid, err)
			}
		}
	}

	runCtx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	argv := r.command(scriptName)
	stdout := newCapBuffer(r.maxOutput)
	stderr := newCapBuffer(r.maxOutput)
	start := time.Now()
	state, err := runGroup(runCtx, argv, dir, r.env(dir), r.plan, stdout, stderr)
	res := &Result{Duration: time.Since(start), ExitCode: -1}
	if state != nil {
		res.ExitCode = state.ExitCode()
	}
	r.fillOutput(res, stdout, stderr)
	if ctx.Err() != nil {
		return res, fmt.Errorf("python execution cancelled: %w", ctx.Err())
	}
	if err != nil {
		return res, fmt.Errorf("run python: %w", err)
	}
	// A process that finished on its own just as the deadline passed was not
	// cut short; only a killed one counts as timed out.
	res.TimedOut = res.ExitCode < 0 && errors.Is(runCtx.Err(), context.DeadlineExceeded)
	slog.DebugContext(ctx, "python executed", "exit_code", res.ExitCode, "timed_out", res.TimedOut,
		"truncated", res.Truncated, "duration", res.Duration, "code_bytes", len(code))
	return res, nil
}

// command builds the argv. Limits are applied by a wrapper that then execs
// the interpreter in place, so the pid (and process group) stays the same.
// The script is passed by relative name and never spliced into a shell string.
func (r *Runner) command(script string) []string {
	// The soft CPU limit sits just above the wall clock so the timeout is
	// what normally fires; the hard limit is a backstop.
	cpu := int64(r.timeout.Seconds()+0.999) + 1
	py := []string{r.python, "-I", "-B", "-X", "utf8", script}
	if r.prlimit != "" {
		args := []string{r.prlimit,
			"--cpu=" + strconv.FormatInt(cpu, 10) + ":" + strconv.FormatInt(cpu+1, 10),
			"--fsize=" + strconv.Itoa(fileSizeLimit),
			"--nofile=" + strconv.Itoa(openFileLimit),
			"--core=0",
		}
		// Soft and hard limits alike, so the code cannot raise them back.
		if r.maxMemory > 0 {
			args = append(args, "--as="+strconv.FormatInt(r.maxMemory, 10))
		}
		if r.maxProcs > 0 {
			args = append(args, "--nproc="+strconv.Itoa(r.maxProcs))
		}
		return append(append(args, "--"), py...)
	}
	// POSIX ulimit -f counts 512-byte blocks; -v counts KiB. The process
	// limit is -u in bash and -p in dash and busybox.
	limits := fmt.Sprintf("ulimit -t %d && ulimit -f %d && ulimit -n %d && ulimit -c 0", cpu, fileSizeLimit/512, openFileLimit)
	if r.maxMemory > 0 {
		limits += fmt.Sprintf(" && ulimit -v %d", r.maxMemory/1024)
	}
	if r.maxProcs > 0 {
		limits += fmt.Sprintf(" && { ulimit -u %d 2>/dev/null || ulimit -p %d; }", r.maxProcs, r.maxProcs)
	}
	return append([]string{"/bin/sh", "-c", limits + " && exec \"$@\"", "sh"}, py...)
}

// env is the complete child environment. The PYTHON* entries are inert under
// -I but keep the intent visible should the flags change; "-X utf8" is what
// actually pins the encoding.
func (r *Runner) env(dir string) []string {
	return []string{
		"PATH=" + childPATH,
		"HOME=" + dir,
		"LANG=C.UTF-8",
		"PYTHONIOENCODING=utf-8",
		"PYTHONDONTWRITEBYTECODE=1",
	}
}

func (r *Runner) fillOutput(res *Result, stdout, stderr *capBuffer) {
	outBuf, outTotal := stdout.snapshot()
	errBuf, errTotal := stderr.snapshot()
	outMax, errMax := splitBudget(outTotal, errTotal, r.maxOutput)
	var outCut, errCut bool
	res.Stdout, outCut = truncateUTF8(outBuf, outTotal, outMax)
	res.Stderr, errCut = truncateUTF8(errBuf, errTotal, errMax)
	res.Truncated = outCut || errCut
}

// removeDir deletes the execution directory. The code may have dropped write
// permission on its own subdirectories, so permissions are restored and the
// removal retried once before giving up.
func removeDir(ctx context.Context, dir string) {
	err := os.RemoveAll(dir)
	if err == nil {
		return
	}
	var fixErrs []error
	walkErr := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			// Keep going: other branches may still be fixable.
			fixErrs = append(fixErrs, err)
			return nil
		}
		if d.IsDir() {
			if err := os.Chmod(path, 0o700); err != nil {
				fixErrs = append(fixErrs, err)
			}
		}
		return nil
	})
	fixErrs = append(fixErrs, walkErr)
	if err = os.RemoveAll(dir); err != nil {
		slog.WarnContext(ctx, "sandbox dir not removed", "dir", dir, "err", err, "chmod_err", errors.Join(fixErrs...))
	}
}
