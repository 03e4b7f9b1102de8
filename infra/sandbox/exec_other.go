//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"io"
	"os"
)

var errUnsupported = errors.New("python execution is only supported on linux")

func checkPlatform() error { return errUnsupported }

func spawnPlans(int, int) []spawnPlan { return nil }

func runGroup(context.Context, []string, string, []string, spawnPlan, io.Writer, io.Writer) (*os.ProcessState, error) {
	return nil, errUnsupported
}
