package llm

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// attempt collects what the HTTP layer saw during one try. The eino-ext
// client drops response headers when it converts errors, so Retry-After is
// captured here, below it.
type attempt struct {
	mu         sync.Mutex
	responded  bool
	status     int
	retryAfter time.Duration
}

func (a *attempt) record(resp *http.Response) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.responded = true
	a.status = resp.StatusCode
	a.retryAfter = parseRetryAfter(resp.Header, time.Now())
}

func (a *attempt) snapshot() (responded bool, status int, retryAfter time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.responded, a.status, a.retryAfter
}

type attemptKey struct{}

func withAttempt(ctx context.Context, a *attempt) context.Context {
	return context.WithValue(ctx, attemptKey{}, a)
}

// recordingTransport notes response metadata into the attempt carried by the
// request context.
type recordingTransport struct {
	base http.RoundTripper
}

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if a, ok := req.Context().Value(attemptKey{}).(*attempt); ok {
		a.record(resp)
	}
	return resp, nil
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the base.
func (t *recordingTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// parseRetryAfter reads retry-after-ms (sent by OpenAI) or Retry-After in
// seconds or as an HTTP date. Zero means no usable hint.
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return clampHint(ms / 1000)
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if !(secs > 0) { // also rejects NaN
			return 0
		}
		return clampHint(secs)
	}
	if at, err := http.ParseTime(v); err == nil {
		if d := at.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// newHTTPClient copies base (or a default client) with a recording transport.
func newHTTPClient(base *http.Client) *http.Client {
	var c http.Client
	if base != nil {
		c = *base
	}
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.Transport = &recordingTransport{base: rt}
	return &c
}

// clampHint converts seconds to a Duration without overflowing on absurd
// values; the retry loop applies its own, lower limit.
func clampHint(secs float64) time.Duration {
	const maxHint = 24 * time.Hour
	if secs >= maxHint.Seconds() {
		return maxHint
	}
	return time.Duration(secs * float64(time.Second))
}
