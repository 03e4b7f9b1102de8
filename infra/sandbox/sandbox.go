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
}

// New validates opts and, when enabled, locates the interpreter.
func New(opts Options) (*Runner, error) {
	r := &Runner{
		enabled:   opts.Enabled,
		timeout:   opts.Timeout,
		maxOutput: opts.MaxOutputBytes,
		workDir:   opts.WorkDir,
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
	if !r.enabled {
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
	return r, nil
}

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

	runCtx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	argv := r.command(scriptName)
	stdout := newCapBuffer(r.maxOutput)
	stderr := newCapBuffer(r.maxOutput)
	start := time.Now()
	state, err := runGroup(runCtx, argv, dir, r.env(dir), stdout, stderr)
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
		return append([]string{r.prlimit,
			"--cpu=" + strconv.FormatInt(cpu, 10) + ":" + strconv.FormatInt(cpu+1, 10),
			"--fsize=" + strconv.Itoa(fileSizeLimit),
			"--nofile=" + strconv.Itoa(openFileLimit),
			"--core=0",
			"--"}, py...)
	}
	// POSIX ulimit -f counts 512-byte blocks.
	limits := fmt.Sprintf("ulimit -t %d && ulimit -f %d && ulimit -n %d && ulimit -c 0 && exec \"$@\"",
		cpu, fileSizeLimit/512, openFileLimit)
	return append([]string{"/bin/sh", "-c", limits, "sh"}, py...)
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
