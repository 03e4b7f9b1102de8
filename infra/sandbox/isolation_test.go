package sandbox

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// plainPlan starts children without namespaces or id changes, as the runner
// did before namespaces were added. Tests use it as the control case.
var plainPlan = spawnPlan{name: "plain", uid: -1, gid: -1}

func withPlan(r *Runner, p spawnPlan) *Runner {
	c := *r
	c.plan = p
	return &c
}

func TestIsolationReport(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                  string
		opts                  Options
		wantMemory, wantProcs func(Isolation) bool
	}{
		{name: "defaults", opts: Options{},
			wantMemory: func(Isolation) bool { return true },
			// Enforcement of the process limit depends on the host.
			wantProcs: func(i Isolation) bool { return i.Processes }},
		{name: "limits switched off", opts: Options{MaxMemoryBytes: -1, MaxProcesses: -1},
			wantMemory: func(Isolation) bool { return false },
			wantProcs:  func(Isolation) bool { return false }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestRunner(t, tt.opts)
			iso := r.Isolation()
			if !iso.CPU || !iso.FileSize || iso.Notes == "" {
				t.Errorf("isolation = %+v, want CPU and FileSize with notes", iso)
			}
			if iso.Memory != tt.wantMemory(iso) || iso.Processes != tt.wantProcs(iso) {
				t.Errorf("isolation = %+v", iso)
			}
			if iso.Network != r.plan.newNamespaces {
				t.Errorf("Network = %v but plan %q", iso.Network, r.plan.name)
			}
			t.Logf("plan %q: %+v", r.plan.name, iso)
		})
	}
	off, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if iso := off.Isolation(); iso.Network || iso.Memory || iso.Processes || iso.CPU || iso.FileSize {
		t.Errorf("disabled runner claims isolation: %+v", iso)
	}
}

func TestNetworkIsolated(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if _, err := w.Write([]byte("reachable")); err != nil {
			t.Errorf("write: %v", err)
		}
	}))
	t.Cleanup(srv.Close)

	r := newTestRunner(t, Options{})
	if !r.Isolation().Network {
		t.Skipf("network namespaces are unavailable here, so the network is not isolated: %s", r.Isolation().Notes)
	}
	fetch := fmt.Sprintf("import urllib.request\ntry:\n    print(urllib.request.urlopen(%q, timeout=3).read().decode())\n"+
		"except Exception as e:\n    print('blocked:', e)", srv.URL)
	connect := "import socket\ns = socket.socket()\ns.settimeout(3)\ntry:\n    s.connect(('203.0.113.10', 80))\n    print('connected')\n" +
		"except OSError as e:\n    print('blocked:', e)"
	tests := []struct {
		name   string
		runner *Runner
		code   string
		want   string
	}{
		{name: "loopback server", runner: r, code: fetch, want: "blocked:"},
		{name: "public address", runner: r, code: connect, want: "blocked:"},
		{name: "interfaces", runner: r, code: "import socket\nprint(sorted(n for _, n in socket.if_nameindex()))", want: "['lo']"},
		// The control shows the probe would notice a reachable network.
		{name: "control without namespaces", runner: withPlan(r, plainPlan), code: fetch, want: "reachable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := hits.Load()
			res, err := tt.runner.Run(context.Background(), tt.code)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if !strings.HasPrefix(strings.TrimSpace(res.Stdout), tt.want) {
				t.Fatalf("stdout = %q, want prefix %q (stderr %q)", res.Stdout, tt.want, res.Stderr)
			}
			if reached := hits.Load() > before; reached != (tt.want == "reachable") {
				t.Errorf("server reached = %v", reached)
			}
			t.Logf("%s: %s", tt.name, strings.TrimSpace(res.Stdout))
		})
	}
}

func TestMemoryLimit(t *testing.T) {
	t.Parallel()
	base := newTestRunner(t, Options{})
	wrappers := map[string]*Runner{"sh": withoutPrlimit(base)}
	if base.prlimit != "" {
		wrappers["prlimit"] = base
	}
	// Zero-filled allocations are mapped lazily, so even the large ones are
	// cheap: only the address-space limit can refuse them.
	const grow = "chunks = []\ntry:\n    while True:\n        chunks.append(bytearray(16 << 20))\n" +
		"except MemoryError:\n    print(len(chunks) * 16)"
	tests := []struct {
		name       string
		code       string
		wantExit   int
		wantStderr string
	}{
		{name: "one huge allocation", code: "x = bytearray(2 * 1024**3)", wantExit: 1, wantStderr: "MemoryError"},
		{name: "growing list", code: "x = []\nwhile True:\n    x.append(bytearray(16 << 20))", wantExit: 1, wantStderr: "MemoryError"},
		{name: "measured", code: grow},
	}
	for wname, r := range wrappers {
		for _, tt := range tests {
			t.Run(wname+"/"+tt.name, func(t *testing.T) {
				res, err := r.Run(context.Background(), tt.code)
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				if res.ExitCode != tt.wantExit || !strings.Contains(res.Stderr, tt.wantStderr) || res.TimedOut {
					t.Fatalf("exit %d timedOut %v stderr %q; want exit %d with %q", res.ExitCode, res.TimedOut, res.Stderr, tt.wantExit, tt.wantStderr)
				}
				if tt.name != "measured" {
					return
				}
				mib, err := strconv.Atoi(strings.TrimSpace(res.Stdout))
				if err != nil {
					t.Fatalf("stdout %q: %v", res.Stdout, err)
				}
				if limit := int(DefaultMaxMemoryBytes >> 20); mib <= 0 || mib >= limit {
					t.Errorf("allocated %d MiB before MemoryError, want between 0 and %d", mib, limit)
				}
				t.Logf("memory bomb stopped after %d MiB (limit %d MiB)", mib, DefaultMaxMemoryBytes>>20)
			})
		}
	}
	// The same mapping with and without the limit shows that the limit is
	// what refuses it (a mapping is never touched, so the control is cheap).
	const mapping = "import mmap\ntry:\n    m = mmap.mmap(-1, 1 << 30)\n    print('mapped', len(m) >> 20)\nexcept OSError as e:\n    print('refused', e.errno)"
	unlimited := newTestRunner(t, Options{MaxMemoryBytes: -1})
	for _, tc := range []struct {
		name string
		r    *Runner
		want string
	}{
		{name: "mapping refused", r: base, want: "refused 12"}, // ENOMEM
		{name: "control without limit", r: unlimited, want: "mapped 1024"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := tc.r.Run(context.Background(), mapping)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(res.Stdout); got != tc.want {
				t.Errorf("stdout %q (stderr %q), want %q", got, res.Stderr, tc.want)
			}
		})
	}
}

// groupMembers lists live (non-zombie) processes in process group pgid.
func groupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("read /proc: %v", err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		// After "pid (comm) ": state ppid pgrp ...
		f := strings.Fields(s[i+1:])
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, err := strconv.Atoi(f[2]); err == nil && g == pgid {
			pids = append(pids, pid)
		}
	}
	return pids
}

func waitGroupGone(t *testing.T, pgid int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		left := groupMembers(t, pgid)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range left {
				if err := exec.Command("kill", "-9", strconv.Itoa(pid)).Run(); err != nil {
					t.Logf("cleanup kill %d: %v", pid, err)
				}
			}
			t.Fatalf("%d processes of group %d survived Run: %v", len(left), pgid, left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// limitedRunner returns a runner under which the kernel enforces the process
// limit, trying the configured interpreter and then system ones (an
// interpreter under root's home cannot be run by the unprivileged sandbox
// user). It returns nil when no such runner exists on this host.
func limitedRunner(t *testing.T, opts Options) *Runner {
	t.Helper()
	for _, py := range []string{"", "/usr/bin/python3", "/usr/local/bin/python3"} {
		if py != "" {
			if _, err := os.Stat(py); err != nil {
				continue
			}
		}
		opts.Python = py
		r := newTestRunner(t, opts)
		if r.Isolation().Processes {
			return r
		}
		t.Logf("interpreter %q: process limit not enforced: %s", py, r.Isolation().Notes)
	}
	return nil
}

func TestForkBomb(t *testing.T) {
	t.Parallel()
	const timeout = 5 * time.Second
	const limit = 16

	t.Run("process limit", func(t *testing.T) {
		t.Parallel()
		r := limitedRunner(t, Options{MaxProcesses: limit, Timeout: timeout})
		if r == nil {
			t.Skip("RLIMIT_NPROC cannot be enforced on this host (see the timeout subtest for what still holds)")
		}
		// First a bounded probe: a real fork bomb is only unleashed once
		// the limit is known to hold, or it would exhaust the host's pids.
		probe := "import os, time\nn = 0\ntry:\n    for _ in range(100):\n        if os.fork() == 0:\n" +
			"            time.sleep(30)\n            os._exit(0)\n        n += 1\nexcept OSError as e:\n    print(n, e.errno)\nelse:\n    print(n, 0)"
		res, err := r.Run(context.Background(), probe)
		if err != nil {
			t.Fatal(err)
		}
		var forked, errno int
		if _, err := fmt.Sscan(res.Stdout, &forked, &errno); err != nil {
			t.Fatalf("probe stdout %q stderr %q: %v", res.Stdout, res.Stderr, err)
		}
		if forked >= limit || errno != 11 { // EAGAIN
			t.Fatalf("forked %d children (errno %d) under a limit of %d; not running the fork bomb", forked, errno, limit)
		}
		t.Logf("bounded probe: fork refused after %d children (limit %d, plan %q)", forked, limit, r.plan.name)

		start := time.Now()
		res, err = r.Run(context.Background(), "import os\nprint(os.getpgrp(), flush=True)\nwhile True:\n    os.fork()")
		elapsed := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		pgid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(res.Stdout, "\n", 2)[0]))
		if err != nil {
			t.Fatalf("pgid from stdout %q: %v", res.Stdout, err)
		}
		if res.TimedOut || res.ExitCode == 0 || !strings.Contains(res.Stderr, "Resource temporarily unavailable") {
			t.Errorf("exit %d timedOut %v stderr %.200q; want the bomb to die of EAGAIN", res.ExitCode, res.TimedOut, res.Stderr)
		}
		waitGroupGone(t, pgid)
		t.Logf("fork bomb stopped by RLIMIT_NPROC=%d after %v, no processes left", limit, elapsed.Round(time.Millisecond))
	})

	t.Run("timeout kills the whole tree", func(t *testing.T) {
		t.Parallel()
		// Bounded on purpose (32 processes): this also runs where the
		// process limit does not hold.
		const short = time.Second
		r := newTestRunner(t, Options{MaxProcesses: limit, Timeout: short})
		code := "import os, time\nprint(os.getpgrp(), flush=True)\nfor _ in range(5):\n    os.fork()\ntime.sleep(100)"
		start := time.Now()
		res, err := r.Run(context.Background(), code)
		elapsed := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		pgid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(res.Stdout, "\n", 2)[0]))
		if err != nil {
			t.Fatalf("pgid from stdout %q: %v", res.Stdout, err)
		}
		if r.Isolation().Processes {
			// 32 processes exceed the limit: the forks fail instead.
			if res.ExitCode == 0 {
				t.Errorf("exit 0; want fork failures under the process limit (stderr %q)", res.Stderr)
			}
		} else if !res.TimedOut || res.ExitCode != -1 {
			t.Errorf("TimedOut %v exit %d; want the tree killed at the timeout", res.TimedOut, res.ExitCode)
		}
		if elapsed > short+time.Second {
			t.Errorf("Run took %v, want < %v", elapsed, short+time.Second)
		}
		waitGroupGone(t, pgid)
		t.Logf("plan %q: bounded bomb ended after %v (timed out %v), no processes left", r.plan.name, elapsed.Round(time.Millisecond), res.TimedOut)
	})
}

func TestSandboxUser(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("the server is not root: children keep its uid")
	}
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("top secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	code := fmt.Sprintf("import os\nprint(os.getuid(), end=' ')\ntry:\n    print(open(%q).read())\nexcept OSError as e:\n    print('denied', e.errno)", secret)
	r := limitedRunner(t, Options{})
	if r == nil {
		t.Skip("no interpreter is usable by the sandbox user here")
	}
	tests := []struct {
		name   string
		runner *Runner
		want   string
	}{
		{name: "sandbox user", runner: r, want: fmt.Sprintf("%d denied 13", DefaultSandboxID)},
		{name: "control as root", runner: withPlan(r, plainPlan), want: "0 top secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := tt.runner.Run(context.Background(), code)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(res.Stdout); got != tt.want {
				t.Errorf("stdout = %q, want %q (stderr %q)", got, tt.want, res.Stderr)
			}
		})
	}
}

func BenchmarkRunHelloIsolated(b *testing.B) {
	r := newTestRunner(b, Options{})
	if !r.Isolation().Network {
		b.Skipf("no namespaces here: %s", r.Isolation().Notes)
	}
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
