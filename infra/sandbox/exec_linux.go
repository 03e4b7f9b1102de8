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
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func checkPlatform() error { return nil }

// runGroup runs argv as the leader of a new process group and waits for it.
// On ctx expiry the whole group is SIGKILLed. When the leader exits on its own
// the group is SIGKILLed too, before the leader is reaped: while it is a
// zombie its pid cannot be reused, so the kill can only hit its own leftovers
// (e.g. a backgrounded subprocess).
func runGroup(ctx context.Context, argv []string, dir string, env []string, stdout, stderr io.Writer) (*os.ProcessState, error) {
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
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
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
