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

func runGroup(context.Context, []string, string, []string, io.Writer, io.Writer) (*os.ProcessState, error) {
	return nil, errUnsupported
}
