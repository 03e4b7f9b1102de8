package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	einoopenai "github.com/cloudwego/eino-ext/components/model/openai"
	goopenai "github.com/meguminnnnnnnnn/go-openai"
)

// Error describes a failed LLM call in terms an operator can act on. It never
// carries the API key.
type Error struct {
	Role    Role
	Model   string
	URL     string // base URL with credentials removed
	EnvHint string // env var that configures URL, e.g. LLM_BASE_URL
	Status  int    // HTTP status, 0 when no HTTP response was received
	// Unreachable is set when no HTTP response arrived: connection refused,
	// DNS failure, dial failure or no answer before the timeout.
	Unreachable bool
	Err         error
}

func (e *Error) Error() string {
	who := fmt.Sprintf("the LLM at %s (%s model %q)", e.URL, e.Role, e.Model)
	switch {
	case e.Unreachable:
		return fmt.Sprintf("cannot reach the LLM at %s (%s model %q): %s; %s",
			e.URL, e.Role, e.Model, shortReason(e.Err), e.configHint())
	case e.Status == 401 || e.Status == 403:
		return fmt.Sprintf("%s rejected the request with HTTP %d: %s; check the API key",
			who, e.Status, apiMessage(e.Err))
	case e.Status == 404:
		return fmt.Sprintf("%s returned HTTP 404: %s; check the model name and that the base URL ends in /v1",
			who, apiMessage(e.Err))
	case e.Status != 0:
		return fmt.Sprintf("%s returned HTTP %d: %s", who, e.Status, apiMessage(e.Err))
	default:
		return fmt.Sprintf("%s failed: %s", who, shortReason(e.Err))
	}
}

func (e *Error) Unwrap() error { return e.Err }

func (e *Error) configHint() string {
	if e.EnvHint == "" {
		return "configure an OpenAI-compatible endpoint"
	}
	return "set " + e.EnvHint + " to an OpenAI-compatible endpoint"
}

// IsUnreachable reports whether err means the endpoint could not be reached
// at all, as opposed to answering with an error.
func IsUnreachable(err error) bool {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Unreachable
	}
	return isDialFailure(err)
}

// timeoutError marks a call that ran out of its configured time budget.
type timeoutError struct {
	after     time.Duration
	responded bool // the server had started answering
	err       error
}

func (t *timeoutError) Error() string {
	if t.responded {
		return fmt.Sprintf("did not finish within %s", t.after)
	}
	return fmt.Sprintf("no response within %s", t.after)
}

func (t *timeoutError) Unwrap() error { return t.err }

// statusOf extracts the HTTP status from the error chain of the eino-ext
// client, which surfaces go-openai's APIError (converted) or RequestError
// (for non-JSON error bodies).
func statusOf(err error) int {
	if e, ok := errors.AsType[*einoopenai.APIError](err); ok && e.HTTPStatusCode != 0 {
		return e.HTTPStatusCode
	}
	if e, ok := errors.AsType[*goopenai.APIError](err); ok && e.HTTPStatusCode != 0 {
		return e.HTTPStatusCode
	}
	if e, ok := errors.AsType[*goopenai.RequestError](err); ok && e.HTTPStatusCode != 0 {
		return e.HTTPStatusCode
	}
	if m := statusPattern.FindStringSubmatch(err.Error()); m != nil {
		if n, convErr := strconv.Atoi(m[1]); convErr == nil {
			return n
		}
	}
	return 0
}

var statusPattern = regexp.MustCompile(`status code: (\d{3})`)

// apiMessage returns the provider's error message without the client's
// boilerplate.
func apiMessage(err error) string {
	if e, ok := errors.AsType[*einoopenai.APIError](err); ok && e.Message != "" {
		return e.Message
	}
	if e, ok := errors.AsType[*goopenai.APIError](err); ok && e.Message != "" {
		return e.Message
	}
	if e, ok := errors.AsType[*goopenai.RequestError](err); ok {
		body := strings.TrimSpace(string(e.Body))
		if len(body) > 300 {
			body = body[:300] + "…"
		}
		if body != "" {
			return body
		}
		return e.HTTPStatus
	}
	return err.Error()
}

// isDialFailure reports errors that happen before any byte reaches the
// server: refused or unroutable connections and DNS failures.
func isDialFailure(err error) bool {
	if err == nil {
		return false
	}
	if _, ok := errors.AsType[*net.DNSError](err); ok {
		return true
	}
	if op, ok := errors.AsType[*net.OpError](err); ok && op.Op == "dial" {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EHOSTUNREACH) ||
		errors.Is(err, syscall.ENETUNREACH)
}

// isTransient reports connection-level failures worth another attempt.
func isTransient(err error) bool {
	if dns, ok := errors.AsType[*net.DNSError](err); ok {
		// A name that does not exist will not appear on retry.
		return !dns.IsNotFound
	}
	if isDialFailure(err) {
		return true
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() && !errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	// Some failures only survive as text after the client's wrapping.
	msg := err.Error()
	for _, s := range []string{"connection reset", "broken pipe", "unexpected EOF", "server closed idle connection", "GOAWAY"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// shortReason turns a low-level error into a few words for messages.
func shortReason(err error) string {
	if err == nil {
		return "unknown error"
	}
	if t, ok := errors.AsType[*timeoutError](err); ok {
		return t.Error()
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.EHOSTUNREACH):
		return "host unreachable"
	case errors.Is(err, syscall.ENETUNREACH):
		return "network unreachable"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset by peer"
	}
	if dns, ok := errors.AsType[*net.DNSError](err); ok {
		if dns.IsNotFound {
			return fmt.Sprintf("host %q not found", dns.Name)
		}
		return "DNS lookup failed: " + dns.Err
	}
	if op, ok := errors.AsType[*net.OpError](err); ok && op.Op == "dial" && op.Timeout() {
		return "connection timed out"
	}
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err.Error()
	}
	return err.Error()
}

// redactURL drops user info and query parameters, where keys tend to hide.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<invalid URL>"
	}
	u.User = nil
	u.RawQuery = ""
	u.Fragment = ""
	return u.String()
}
