//go:build linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func checkPlatform() error { return nil }

// spawnPlans lists the ways to start a child, most isolated first.
//
// RLIMIT_NPROC is never enforced for uid 0, not even for uid 0 inside a user
// namespace mapped from root (the kernel exempts the root user itself), so a
// root server must run the child under another uid for the limit to hold.
// In a fresh user namespace the kernel counts the limit per namespace, which
// makes it per execution instead of shared by everything that uid runs.
func spawnPlans(sandboxUID, sandboxGID int) []spawnPlan {
	uid, gid := os.Geteuid(), os.Getegid()
	if uid == 0 {
		return []spawnPlan{
			{
				name: "userns+netns as uid " + strconv.Itoa(sandboxUID), newNamespaces: true,
				uid: sandboxUID, gid: sandboxGID, clearGroups: true, nprocEnforced: true,
				notes: fmt.Sprintf("own user and network namespace; runs as uid %d/gid %d with no supplementary groups, "+
					"so it can only read world-readable files; process limit counted per execution", sandboxUID, sandboxGID),
			},
			{
				name: "userns+netns as root", newNamespaces: true, uid: 0, gid: 0, clearGroups: true,
				notes: "own user and network namespace, but still uid 0 (root's files are readable) and the process " +
					"limit is not enforced for root; only the timeout stops a fork bomb",
			},
			{
				name: "uid " + strconv.Itoa(sandboxUID), uid: sandboxUID, gid: sandboxGID, clearGroups: true, nprocEnforced: true,
				notes: fmt.Sprintf("no namespaces (network is NOT isolated); runs as uid %d/gid %d; the process limit "+
					"counts every process of that uid, concurrent executions included", sandboxUID, sandboxGID),
			},
			{
				name: "plain root", uid: -1, gid: -1,
				notes: "no namespaces (network is NOT isolated); runs as root, so the process limit is not enforced " +
					"and root's files are readable",
			},
		}
	}
	return []spawnPlan{
		{
			name: "userns+netns", newNamespaces: true, uid: uid, gid: gid, nprocEnforced: true,
			notes: fmt.Sprintf("own user and network namespace as uid %d; process limit counted per execution", uid),
		},
		{
			name: "plain", uid: -1, gid: -1, nprocEnforced: true,
			notes: fmt.Sprintf("no namespaces (network is NOT isolated); the process limit counts every process "+
				"and thread of uid %d, the server's own included", uid),
		},
	}
}

// sysProcAttr builds the clone settings for plan. The child leads a new
// process group either way so the whole tree can be killed at once.
func (p spawnPlan) sysProcAttr() *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if p.uid < 0 {
		return attr
	}
	attr.Credential = &syscall.Credential{Uid: uint32(p.uid), Gid: uint32(p.gid)}
	if p.clearGroups {
		attr.Credential.Groups = []uint32{}
	} else {
		// Unprivileged user namespaces forbid setgroups.
		attr.Credential.NoSetGroups = true
	}
	if !p.newNamespaces {
		return attr
	}
	attr.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET
	// Identity maps: ids mean the same inside and out, and the mapping is
	// one an unprivileged server may write for its own ids.
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: p.uid, HostID: p.uid, Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: p.gid, HostID: p.gid, Size: 1}}
	attr.GidMappingsEnableSetgroups = p.clearGroups
	return attr
}

// runGroup runs argv as the leader of a new process group and waits for it.
// On ctx expiry the whole group is SIGKILLed. When the leader exits on its own
// the group is SIGKILLed too, before the leader is reaped: while it is a
// zombie its pid cannot be reused, so the kill can only hit its own leftovers
// (e.g. a backgrounded subprocess).
func runGroup(ctx context.Context, argv []string, dir string, env []string, plan spawnPlan, stdout, stderr io.Writer) (*os.ProcessState, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	defer closeLogged(ctx, outR)
	errR, errW, err := os.Pipe()
	if err != nil {
		closeLogged(ctx, outW)
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	defer closeLogged(ctx, errR)

	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin = nil // exec opens /dev/null
	// Plain *os.File outputs: exec starts no copy goroutines, and Wait returns
	// as soon as the process does, whatever still holds the pipes.
	cmd.Stdout = outW
	cmd.Stderr = errW
	cmd.SysProcAttr = plan.sysProcAttr()
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }

	startErr := cmd.Start()
	// The child holds its own copies; ours must go so readers see EOF.
	closeLogged(ctx, outW)
	closeLogged(ctx, errW)
	if startErr != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], startErr)
	}

	var readers sync.WaitGroup
	readers.Add(2)
	go drain(ctx, &readers, outR, stdout)
	go drain(ctx, &readers, errR, stderr)

	pid := cmd.Process.Pid
	waitErr := waitExitedNoReap(pid)
	if err := killGroup(pid); err != nil && !errors.Is(err, os.ErrProcessDone) {
		slog.WarnContext(ctx, "kill python process group", "pgid", pid, "err", err)
	}
	err = cmd.Wait()
	finishDrain(ctx, &readers, outR, errR)

	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return exitErr.ProcessState, nil
	}
	if err != nil {
		return cmd.ProcessState, fmt.Errorf("wait: %w", err)
	}
	if waitErr != nil {
		// Only informative: Wait above still reaped the process correctly.
		slog.DebugContext(ctx, "waitid", "err", waitErr)
	}
	return cmd.ProcessState, nil
}

// waitExitedNoReap blocks until pid has exited but leaves it a zombie.
func waitExitedNoReap(pid int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

func killGroup(pgid int) error {
	err := syscall.Kill(-pgid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// drain copies r into w until EOF or until finishDrain gives up on it.
func drain(ctx context.Context, wg *sync.WaitGroup, r *os.File, w io.Writer) {
	defer wg.Done()
	if _, err := io.Copy(w, r); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		slog.DebugContext(ctx, "read python output", "err", err)
	}
}

// finishDrain waits for the readers, but not forever: a process that left
// the group can hold the pipes open indefinitely.
func finishDrain(ctx context.Context, wg *sync.WaitGroup, pipes ...*os.File) {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	timer := time.NewTimer(drainGrace)
	defer timer.Stop()
	select {
	case <-done:
		return
	case <-timer.C:
	}
	slog.WarnContext(ctx, "python output still open after the process group exited; abandoning it")
	for _, p := range pipes {
		if err := p.SetReadDeadline(time.Now()); err != nil {
			slog.WarnContext(ctx, "stop reading python output", "err", err)
		}
	}
	<-done
}

func closeLogged(ctx context.Context, f *os.File) {
	if err := f.Close(); err != nil {
		slog.DebugContext(ctx, "close pipe", "err", err)
	}
}
