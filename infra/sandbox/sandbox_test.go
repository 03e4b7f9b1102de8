package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// newTestRunner builds an enabled runner, skipping when no python3 exists.
func newTestRunner(t testing.TB, opts Options) *Runner {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	opts.Enabled = true
	if opts.Timeout == 0 {
		// Generous: the machine may be busy, and only the timeout tests
		// want executions to be cut short.
		opts.Timeout = 15 * time.Second
	}
	r, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return r
}

func TestRunBasic(t *testing.T) {
	t.Parallel()
	r := newTestRunner(t, Options{})
	tests := []struct {
		name       string
		code       string
		wantExit   int
		wantStdout string
		wantStderr string // substring
	}{
		{name: "print", code: "print('hello')", wantStdout: "hello\n"},
		{name: "arithmetic", code: "print(sum(range(101)))", wantStdout: "5050\n"},
		{name: "unicode", code: "print('héllo 世界 🦌')", wantStdout: "héllo 世界 🦌\n"},
		{name: "stderr on success", code: "import sys; sys.stderr.write('warn')", wantStderr: "warn"},
		{name: "exit status", code: "import sys; sys.exit(3)", wantExit: 3},
		{name: "exception", code: "print('before')\n1/0", wantExit: 1, wantStdout: "before\n",
			wantStderr: "ZeroDivisionError"},
		{name: "syntax error", code: "def (:", wantExit: 1, wantStderr: "SyntaxError"},
		{name: "stdin is empty", code: "import sys; print(repr(sys.stdin.read()))", wantStdout: "''\n"},
		{name: "no bytecode written", code: "import os; print(sorted(os.listdir('.')))", wantStdout: "['main.py']\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := r.Run(context.Background(), tt.code)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.ExitCode != tt.wantExit {
				t.Errorf("exit code = %d, want %d (stderr %q)", res.ExitCode, tt.wantExit, res.Stderr)
			}
			if tt.wantStdout != "" && res.Stdout != tt.wantStdout {
				t.Errorf("stdout = %q, want %q", res.Stdout, tt.wantStdout)
			}
			if !strings.Contains(res.Stderr, tt.wantStderr) {
				t.Errorf("stderr = %q, want it to contain %q", res.Stderr, tt.wantStderr)
			}
			if res.TimedOut || res.Truncated {
				t.Errorf("TimedOut=%v Truncated=%v, want false", res.TimedOut, res.Truncated)
			}
			if res.Duration <= 0 {
				t.Errorf("Duration = %v, want > 0", res.Duration)
			}
		})
	}
}

func TestRunTimeout(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	r := newTestRunner(t, Options{Timeout: timeout})
	tests := []struct {
		name string
		code string
	}{
		{name: "busy loop", code: "while True: pass"},
		{name: "sleep", code: "import time; time.sleep(100)"},
		{name: "ignores SIGTERM", code: "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(100)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			res, err := r.Run(context.Background(), tt.code)
			elapsed := time.Since(start)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if !res.TimedOut {
				t.Errorf("TimedOut = false, want true")
			}
			if res.ExitCode != -1 {
				t.Errorf("exit code = %d, want -1", res.ExitCode)
			}
			if elapsed > timeout+time.Second {
				t.Errorf("Run took %v, want < %v", elapsed, timeout+time.Second)
			}
		})
	}
}

// processGone reports whether pid has exited. In containers the orphan may
// linger as an unreaped zombie, which counts as gone.
func processGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	state := s[i+2]
	return state == 'Z' || state == 'X'
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			if err := exec.Command("kill", "-9", strconv.Itoa(pid)).Run(); err != nil {
				t.Logf("cleanup kill %d: %v", pid, err)
			}
			t.Fatalf("child process %d still running after Run returned", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRunKillsChildProcesses(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	short := newTestRunner(t, Options{Timeout: timeout})
	long := newTestRunner(t, Options{})
	spawn := "import subprocess, sys\np = subprocess.Popen(['sleep', '100'])\nprint(p.pid, flush=True)\n"
	tests := []struct {
		name        string
		code        string
		wantTimeout bool
	}{
		{name: "parent times out", code: spawn + "import time\ntime.sleep(100)", wantTimeout: true},
		{name: "parent exits first", code: spawn},
		{name: "grandchild via shell", code: "import subprocess\np = subprocess.Popen('sleep 100 & echo $!', shell=True, stdout=subprocess.PIPE)\nprint(p.stdout.readline().decode().strip(), flush=True)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := long
			if tt.wantTimeout {
				r = short
			}
			start := time.Now()
			res, err := r.Run(context.Background(), tt.code)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			// Neither a timed-out parent nor a lingering child may hold Run
			// up; the child would otherwise keep it waiting for 100s.
			if elapsed := time.Since(start); elapsed > timeout+time.Second {
				t.Errorf("Run took %v, want < %v", elapsed, timeout+time.Second)
			}
			if res.TimedOut != tt.wantTimeout {
				t.Errorf("TimedOut = %v, want %v", res.TimedOut, tt.wantTimeout)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(res.Stdout))
			if err != nil {
				t.Fatalf("child pid from stdout %q: %v (stderr %q)", res.Stdout, err, res.Stderr)
			}
			waitGone(t, pid)
		})
	}
}

func TestRunOutputCap(t *testing.T) {
	t.Parallel()
	const limit = 1024
	r := newTestRunner(t, Options{MaxOutputBytes: limit})
	tests := []struct {
		name       string
		code       string
		wantExit   int
		wantStderr string
	}{
		{name: "ascii flood", code: "import sys\nsys.stdout.write('x' * 5_000_000)"},
		{name: "print loop", code: "for i in range(50_000): print(i)"},
		{name: "multibyte flood", code: "import sys\nsys.stdout.write('é世🦌' * 300_000)"},
		{name: "flood then traceback", code: "import sys\nsys.stdout.write('y' * 5_000_000)\nraise ValueError('boom')",
			wantExit: 1, wantStderr: "ValueError: boom"},
		{name: "stderr flood", code: "import sys\nsys.stderr.write('z' * 5_000_000)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := r.Run(context.Background(), tt.code)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.ExitCode != tt.wantExit {
				t.Errorf("exit code = %d, want %d", res.ExitCode, tt.wantExit)
			}
			if !res.Truncated {
				t.Errorf("Truncated = false, want true")
			}
			const markerRoom = 64
			if n := len(res.Stdout) + len(res.Stderr); n > limit+2*markerRoom {
				t.Errorf("captured %d bytes, want about %d", n, limit)
			}
			if !strings.Contains(res.Stdout+res.Stderr, "[output truncated:") {
				t.Errorf("missing truncation marker")
			}
			// The cut must land on rune boundaries, not produce replacements.
			if !utf8.ValidString(res.Stdout) || strings.ContainsRune(res.Stdout+res.Stderr, utf8.RuneError) {
				t.Errorf("output was cut inside a UTF-8 sequence")
			}
			if !strings.Contains(res.Stderr, tt.wantStderr) {
				t.Errorf("stderr = %q, want it to contain %q", res.Stderr, tt.wantStderr)
			}
		})
	}
}

func TestRunEnvironmentScrubbed(t *testing.T) {
	const secret = "sk-test-do-not-leak-1234"
	t.Setenv("DEER_TEST_API_KEY", secret)
	t.Setenv("PYTHONSTARTUP", "/nonexistent")
	r := newTestRunner(t, Options{})
	res, err := r.Run(context.Background(), "import os, json\nprint(json.dumps(dict(os.environ)))\nprint(os.getcwd())")
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if strings.Contains(res.Stdout, secret) || strings.Contains(res.Stdout, "DEER_TEST_API_KEY") {
		t.Fatalf("server environment leaked into the child: %s", res.Stdout)
	}
	lines := strings.SplitN(strings.TrimSpace(res.Stdout), "\n", 2)
	if len(lines) != 2 {
		t.Fatalf("unexpected stdout %q", res.Stdout)
	}
	tests := []struct{ key, want string }{
		{"PATH", `"PATH": "/usr/local/bin:/usr/bin:/bin"`},
		{"HOME", fmt.Sprintf(`"HOME": %q`, lines[1])},
		{"LANG", `"LANG": "C.UTF-8"`},
	}
	for _, tt := range tests {
		if !strings.Contains(lines[0], tt.want) {
			t.Errorf("%s: environment %s does not contain %s", tt.key, lines[0], tt.want)
		}
	}
}

func TestRunRemovesTempDir(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	r := newTestRunner(t, Options{WorkDir: work})
	short := newTestRunner(t, Options{WorkDir: work, Timeout: 500 * time.Millisecond})
	tests := []struct {
		name string
		code string
	}{
		{name: "success", code: "import os\nopen('data.csv', 'w').write('a,b\\n')\nprint(os.getcwd())"},
		{name: "failure", code: "import os\nprint(os.getcwd(), flush=True)\nraise RuntimeError('x')"},
		{name: "timeout", code: "import os, time\nprint(os.getcwd(), flush=True)\ntime.sleep(100)"},
		{name: "read-only subdir", code: "import os\nos.makedirs('ro/deep')\nopen('ro/deep/f', 'w').write('x')\nos.chmod('ro/deep', 0o500)\nos.chmod('ro', 0o000)\nprint(os.getcwd())"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := r
			if tt.name == "timeout" {
				r = short
			}
			res, err := r.Run(context.Background(), tt.code)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			dir := strings.TrimSpace(res.Stdout)
			if filepath.Dir(dir) != work {
				t.Fatalf("cwd %q is not under work dir %q (stderr %q)", dir, work, res.Stderr)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("temp dir %s still exists (stat err %v)", dir, err)
			}
			entries, err := os.ReadDir(work)
			if err != nil {
				t.Fatalf("ReadDir: %v", err)
			}
			if len(entries) != 0 {
				t.Errorf("work dir not empty: %v", entries)
			}
		})
	}
}

func TestRunDisabled(t *testing.T) {
	t.Parallel()
	r, err := New(Options{Python: "definitely-not-a-python-binary"})
	if err != nil {
		t.Fatalf("New with Enabled=false must not look for python: %v", err)
	}
	if r.Enabled() {
		t.Fatal("Enabled() = true, want false")
	}
	res, err := r.Run(context.Background(), "print(1)")
	if !errors.Is(err, ErrDisabled) {
		t.Fatalf("Run error = %v, want ErrDisabled", err)
	}
	if res != nil {
		t.Errorf("Run result = %+v, want nil", res)
	}
	if !strings.Contains(err.Error(), "ENABLE_PYTHON_REPL=true") {
		t.Errorf("error %q does not tell the operator how to enable it", err)
	}
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts Options
	}{
		{name: "missing interpreter", opts: Options{Enabled: true, Python: "definitely-not-a-python-binary"}},
		{name: "not python", opts: Options{Enabled: true, Python: "false"}},
		{name: "missing work dir", opts: Options{Enabled: true, WorkDir: filepath.Join(t.TempDir(), "nope")}},
		{name: "work dir is a file", opts: Options{Enabled: true, WorkDir: file}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.opts); err == nil {
				t.Fatal("New succeeded, want error")
			}
		})
	}
}

func TestNewDefaults(t *testing.T) {
	t.Parallel()
	r := newTestRunner(t, Options{Timeout: -1})
	if r.timeout != DefaultTimeout || r.maxOutput != DefaultMaxOutputBytes || r.workDir != os.TempDir() {
		t.Errorf("defaults not applied: timeout=%v max=%d dir=%q", r.timeout, r.maxOutput, r.workDir)
	}
	if !filepath.IsAbs(r.python) {
		t.Errorf("interpreter %q not resolved to an absolute path", r.python)
	}
}

func TestRunContextCancelled(t *testing.T) {
	t.Parallel()
	r := newTestRunner(t, Options{Timeout: 10 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := r.Run(ctx, "import time\nprint('started', flush=True)\ntime.sleep(100)")
	elapsed := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run error = %v, want context.DeadlineExceeded", err)
	}
	if elapsed > 2*time.Second {
		t.Errorf("Run took %v after cancellation, want < 2s", elapsed)
	}
	if res == nil || res.TimedOut {
		t.Fatalf("result = %+v, want partial non-timeout result", res)
	}

	pre, cancelPre := context.WithCancel(context.Background())
	cancelPre()
	if _, err := r.Run(pre, "print(1)"); !errors.Is(err, context.Canceled) {
		t.Errorf("Run with cancelled context error = %v, want context.Canceled", err)
	}
}

// TestRunLimits checks the rlimits with both wrappers.
func TestRunLimits(t *testing.T) {
	t.Parallel()
	base := newTestRunner(t, Options{})
	wrappers := map[string]*Runner{"sh": withoutPrlimit(base)}
	if base.prlimit != "" {
		wrappers["prlimit"] = base
	}
	tests := []struct {
		name       string
		code       string
		wantStderr string
	}{
		{name: "file size", code: "with open('big', 'wb') as f:\n    f.write(b'0' * (17 << 20))", wantStderr: "File too large"},
		{name: "open files", code: "fs = [open('f%d' % i, 'w') for i in range(100)]", wantStderr: "Too many open files"},
	}
	for wname, r := range wrappers {
		for _, tt := range tests {
			t.Run(wname+"/"+tt.name, func(t *testing.T) {
				res, err := r.Run(context.Background(), tt.code)
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				if res.ExitCode == 0 || !strings.Contains(res.Stderr, tt.wantStderr) {
					t.Errorf("exit %d, stderr %q; want failure with %q", res.ExitCode, res.Stderr, tt.wantStderr)
				}
			})
		}
		t.Run(wname+"/within limits", func(t *testing.T) {
			res, err := r.Run(context.Background(), "import resource as r\nprint(*(r.getrlimit(x)[0] for x in (r.RLIMIT_NOFILE, r.RLIMIT_CPU, r.RLIMIT_AS, r.RLIMIT_NPROC)))")
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			// CPU soft limit: whole seconds of the timeout plus one.
			want := fmt.Sprintf("64 %d %d %d", int(r.timeout/time.Second)+1, DefaultMaxMemoryBytes, DefaultMaxProcesses)
			if got := strings.TrimSpace(res.Stdout); got != want {
				t.Errorf("limits = %q, want %q (stderr %q)", got, want, res.Stderr)
			}
		})
	}
}

func withoutPrlimit(r *Runner) *Runner {
	c := *r
	c.prlimit = ""
	return &c
}

// BenchmarkRunHello measures a run without namespaces, the baseline for
// BenchmarkRunHelloIsolated.
func BenchmarkRunHello(b *testing.B) {
	r := newTestRunner(b, Options{})
	r.plan = spawnPlan{name: "plain", uid: -1, gid: -1}
	ctx := context.Background()
	for b.Loop() {
		res, err := r.Run(ctx, "print('hello')")
		if err != nil {
			b.Fatal(err)
		}
		if res.Stdout != "hello\n" {
			b.Fatalf("stdout = %q", res.Stdout)
		}
	}
}
