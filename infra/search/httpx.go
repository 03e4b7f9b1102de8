package search

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

const (
	defaultTimeout = 20 * time.Second
	defaultBackoff = 300 * time.Millisecond
	maxBodyBytes   = 4 << 20
	maxErrSnippet  = 200
	userAgent      = "Mozilla/5.0 (compatible; deer-go/1.0)"
)

// StatusError reports an unexpected HTTP status from a search backend.
// Body is a short, key-redacted excerpt of the response.
type StatusError struct {
	Engine     string
	StatusCode int
	Body       string
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("%s: HTTP %d %s", e.Engine, e.StatusCode, http.StatusText(e.StatusCode))
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// requester performs backend calls with a per-attempt timeout and a single
// retry, since search APIs fail transiently far more often than permanently.
type requester struct {
	engine  string
	client  *http.Client
	timeout time.Duration
	backoff time.Duration
	secret  string
}

func newRequester(engine string, client *http.Client, timeout time.Duration, secret string) requester {
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	if client == nil {
		client = &http.Client{Timeout: timeout}
	}
	return requester{engine: engine, client: client, timeout: timeout, backoff: defaultBackoff, secret: secret}
}

// do sends the request produced by build (called once per attempt so bodies
// can be replayed) and returns the status and body of a 2xx response.
func (r requester) do(ctx context.Context, build func(ctx context.Context) (*http.Request, error)) (int, []byte, error) {
	status, body, retry, err := r.once(ctx, build)
	if err == nil || !retry || ctx.Err() != nil {
		return status, body, err
	}
	slog.DebugContext(ctx, "search request failed, retrying", "engine", r.engine, "err", err)
	timer := time.NewTimer(r.backoff)
	select {
	case <-ctx.Done():
		timer.Stop()
		return 0, nil, fmt.Errorf("%w (retry abandoned: %w)", err, ctx.Err())
	case <-timer.C:
	}
	status, body, _, err = r.once(ctx, build)
	return status, body, err
}

func (r requester) once(ctx context.Context, build func(ctx context.Context) (*http.Request, error)) (status int, body []byte, retry bool, err error) {
	actx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	req, err := build(actx)
	if err != nil {
		return 0, nil, false, fmt.Errorf("%s: build request: %w", r.engine, err)
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", userAgent)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, nil, retryableTransportErr(ctx, err), fmt.Errorf("%s: request failed: %w", r.engine, err)
	}
	defer func() {
		if cerr := resp.Body.Close(); cerr != nil {
			slog.DebugContext(ctx, "closing search response body", "engine", r.engine, "err", cerr)
		}
	}()
	body, err = io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes))
	if err != nil {
		return 0, nil, retryableTransportErr(ctx, err), fmt.Errorf("%s: read response (HTTP %d): %w", r.engine, resp.StatusCode, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, nil, resp.StatusCode >= 500, &StatusError{
			Engine:     r.engine,
			StatusCode: resp.StatusCode,
			Body:       r.snippet(body),
		}
	}
	return resp.StatusCode, body, false, nil
}

// retryableTransportErr treats broken connections as transient but not
// timeouts: a second full timeout would only double the caller's wait.
func retryableTransportErr(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return true
}

// snippet condenses an error body for messages, removing the API key in
// case a backend echoes the request.
func (r requester) snippet(body []byte) string {
	s := strings.Join(strings.Fields(string(body)), " ")
	if r.secret != "" {
		s = strings.ReplaceAll(s, r.secret, "[redacted]")
	}
	if len(s) > maxErrSnippet {
		s = s[:maxErrSnippet]
		for len(s) > 0 && !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return strings.ToValidUTF8(s, "")
}

// parseBaseURL validates an http(s) base URL and strips trailing slashes so
// paths can be appended.
func parseBaseURL(engine, raw, fallback string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		raw = fallback
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("%s: %w %q: %w", engine, ErrInvalidURL, raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s: %w %q: need http(s)://host", engine, ErrInvalidURL, raw)
	}
	u.RawQuery, u.Fragment, u.RawFragment = "", "", ""
	return strings.TrimRight(u.String(), "/"), nil
}

// get is do for a plain GET of endpoint with the given headers.
func (r requester) get(ctx context.Context, endpoint string, header map[string]string) (int, []byte, error) {
	return r.do(ctx, func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
		if err != nil {
			return nil, err
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		return req, nil
	})
}
