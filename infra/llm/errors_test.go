package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	einoopenai "github.com/cloudwego/eino-ext/components/model/openai"
	goopenai "github.com/meguminnnnnnnnn/go-openai"
)

func TestErrorMessages(t *testing.T) {
	base := Error{Role: RoleReasoning, Model: "deepseek-r1", URL: "http://localhost:11434/v1", EnvHint: "LLM_BASE_URL"}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	tests := []struct {
		name string
		mod  func(e *Error)
		want string
	}{
		{"refused", func(e *Error) { e.Unreachable, e.Err = true, refused },
			`cannot reach the LLM at http://localhost:11434/v1 (reasoning model "deepseek-r1"): connection refused; set LLM_BASE_URL to an OpenAI-compatible endpoint`},
		{"dns", func(e *Error) {
			e.Unreachable, e.Err = true, &net.DNSError{Err: "no such host", Name: "llm.invalid", IsNotFound: true}
		}, `cannot reach the LLM at http://localhost:11434/v1 (reasoning model "deepseek-r1"): host "llm.invalid" not found; set LLM_BASE_URL to an OpenAI-compatible endpoint`},
		{"no env hint", func(e *Error) { e.Unreachable, e.Err, e.EnvHint = true, refused, "" },
			`cannot reach the LLM at http://localhost:11434/v1 (reasoning model "deepseek-r1"): connection refused; configure an OpenAI-compatible endpoint`},
		{"timeout", func(e *Error) {
			e.Unreachable, e.Err = true, &timeoutError{after: 2 * time.Second, err: context.DeadlineExceeded}
		}, `cannot reach the LLM at http://localhost:11434/v1 (reasoning model "deepseek-r1"): no response within 2s; set LLM_BASE_URL to an OpenAI-compatible endpoint`},
		{"status", func(e *Error) {
			e.Status, e.Err = 500, &einoopenai.APIError{Message: "overloaded", HTTPStatusCode: 500}
		}, `the LLM at http://localhost:11434/v1 (reasoning model "deepseek-r1") returned HTTP 500: overloaded`},
		{"auth", func(e *Error) {
			e.Status, e.Err = 401, &einoopenai.APIError{Message: "invalid key", HTTPStatusCode: 401}
		}, `the LLM at http://localhost:11434/v1 (reasoning model "deepseek-r1") rejected the request with HTTP 401: invalid key; check the API key`},
		{"non-json body", func(e *Error) {
			e.Status, e.Err = 502, fmt.Errorf("wrap: %w", &goopenai.RequestError{HTTPStatusCode: 502, HTTPStatus: "502 Bad Gateway", Body: []byte("<html>bad gateway</html>")})
		}, `the LLM at http://localhost:11434/v1 (reasoning model "deepseek-r1") returned HTTP 502: <html>bad gateway</html>`},
		{"mid-stream", func(e *Error) { e.Err = fmt.Errorf("failed to receive stream chunk: %w", io.ErrUnexpectedEOF) },
			`the LLM at http://localhost:11434/v1 (reasoning model "deepseek-r1") failed: failed to receive stream chunk: unexpected EOF`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := base
			tc.mod(&e)
			if got := e.Error(); got != tc.want {
				t.Errorf("\n got %s\nwant %s", got, tc.want)
			}
			if e.Unreachable != IsUnreachable(fmt.Errorf("outer: %w", &e)) {
				t.Errorf("IsUnreachable disagrees with the field")
			}
		})
	}
}

func TestClassification(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	tests := []struct {
		name          string
		err           error
		wantStatus    int
		wantTransient bool
		wantDial      bool
	}{
		{"eino api error", fmt.Errorf("x: %w", &einoopenai.APIError{HTTPStatusCode: 429}), 429, false, false},
		{"go-openai api error", fmt.Errorf("x: %w", &goopenai.APIError{HTTPStatusCode: 503}), 503, false, false},
		{"request error", &goopenai.RequestError{HTTPStatusCode: 500}, 500, false, false},
		{"status only in text", errors.New("error, status code: 504, status: gateway"), 504, false, false},
		{"refused", fmt.Errorf("post: %w", refused), 0, true, true},
		{"dns not found", &net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}, 0, false, true},
		{"dns temporary", &net.DNSError{Err: "timeout", Name: "x", IsTimeout: true}, 0, true, true},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), 0, true, false},
		{"unexpected eof", fmt.Errorf("chunk: %w", io.ErrUnexpectedEOF), 0, true, false},
		{"context canceled", context.Canceled, 0, false, false},
		{"deadline", context.DeadlineExceeded, 0, false, false},
		{"plain", errors.New("invalid character in JSON"), 0, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := statusOf(tc.err); got != tc.wantStatus {
				t.Errorf("statusOf = %d, want %d", got, tc.wantStatus)
			}
			if got := isTransient(tc.err); got != tc.wantTransient {
				t.Errorf("isTransient = %v, want %v", got, tc.wantTransient)
			}
			if got := isDialFailure(tc.err); got != tc.wantDial {
				t.Errorf("isDialFailure = %v, want %v", got, tc.wantDial)
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
	}{
		{"none", http.Header{}, 0},
		{"seconds", http.Header{"Retry-After": {"3"}}, 3 * time.Second},
		{"fractional", http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond},
		{"ms preferred", http.Header{"Retry-After": {"3"}, "Retry-After-Ms": {"250"}}, 250 * time.Millisecond},
		{"http date", http.Header{"Retry-After": {now.Add(7 * time.Second).Format(http.TimeFormat)}}, 7 * time.Second},
		{"past date", http.Header{"Retry-After": {now.Add(-time.Hour).Format(http.TimeFormat)}}, 0},
		{"negative", http.Header{"Retry-After": {"-4"}}, 0},
		{"nan", http.Header{"Retry-After": {"NaN"}}, 0},
		{"huge", http.Header{"Retry-After": {"1e300"}}, 24 * time.Hour},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseRetryAfter(tc.header, now); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRedactURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://user:sk-123@api.example.com/v1?key=sk-456", "https://api.example.com/v1"},
		{"http://localhost:11434/v1", "http://localhost:11434/v1"},
		{"::", "<invalid URL>"},
	}
	for _, tc := range tests {
		if got := redactURL(tc.in); got != tc.want {
			t.Errorf("redactURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestBackoffBounds(t *testing.T) {
	p := newPolicy(Options{BaseBackoff: 100 * time.Millisecond, MaxBackoff: time.Second})
	tests := []struct {
		try      int
		min, max time.Duration
	}{
		{0, 50 * time.Millisecond, 100 * time.Millisecond},
		{1, 100 * time.Millisecond, 200 * time.Millisecond},
		{3, 400 * time.Millisecond, 800 * time.Millisecond},
		{4, 500 * time.Millisecond, time.Second},
		{62, 500 * time.Millisecond, time.Second},
	}
	for _, tc := range tests {
		for range 50 {
			if d := p.backoff(tc.try); d < tc.min || d > tc.max {
				t.Fatalf("backoff(%d) = %v, want within [%v, %v]", tc.try, d, tc.min, tc.max)
			}
		}
	}
	def := newPolicy(Options{})
	if def.timeout != defaultTimeout || def.maxRetries != defaultMaxRetries ||
		def.baseBackoff != defaultBaseBackoff || def.maxBackoff != defaultMaxBackoff {
		t.Errorf("defaults not applied: %+v", def)
	}
	if off := newPolicy(Options{MaxRetries: -1, Timeout: -1}); off.maxRetries != 0 || off.timeout > 0 {
		t.Errorf("negative values should disable: %+v", off)
	}
}
