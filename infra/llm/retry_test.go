package llm

import (
	"context"
	"errors"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cloudwego/eino/schema"

	"github.com/deer-go/deer-go/internal/testkit"
)

func TestRetries(t *testing.T) {
	ok := testkit.Reply{Content: "finally"}
	tests := []struct {
		name       string
		responder  func() testkit.Responder // fresh per subtest: responders keep state
		maxRetries int
		wantCalls  int
		wantStatus int // 0: success expected
		minElapsed time.Duration
	}{
		{"500 then success", func() testkit.Responder { return testkit.FailFirst(1, 500, testkit.Always(ok)) }, 0, 2, 0, 0},
		{"502 503 then success", func() testkit.Responder {
			return testkit.Sequence(testkit.Reply{Status: 502}, testkit.Reply{Status: 503}, ok)
		}, 0, 3, 0, 0},
		{"429 with Retry-After seconds", func() testkit.Responder {
			return testkit.Sequence(testkit.Reply{Status: 429, Header: http.Header{"Retry-After": {"1"}}}, ok)
		}, 0, 2, 0, 900 * time.Millisecond},
		{"429 with retry-after-ms", func() testkit.Responder {
			return testkit.Sequence(testkit.Reply{Status: 429, Header: http.Header{"Retry-After-Ms": {"300"}}}, ok)
		}, 0, 2, 0, 280 * time.Millisecond},
		{"429 without hint", func() testkit.Responder { return testkit.FailFirst(1, 429, testkit.Always(ok)) }, 0, 2, 0, 0},
		{"400 not retried", func() testkit.Responder { return testkit.FailFirst(1, 400, testkit.Always(ok)) }, 0, 1, 400, 0},
		{"401 not retried", func() testkit.Responder { return testkit.FailFirst(1, 401, testkit.Always(ok)) }, 0, 1, 401, 0},
		{"retries exhausted", func() testkit.Responder { return testkit.FailFirst(10, 500, testkit.Always(ok)) }, 2, 3, 500, 0},
		{"retries disabled", func() testkit.Responder { return testkit.FailFirst(1, 503, testkit.Always(ok)) }, -1, 1, 503, 0},
		{"Retry-After beyond budget fails fast", func() testkit.Responder {
			return testkit.Sequence(testkit.Reply{Status: 429, Header: http.Header{"Retry-After": {"30"}}}, ok)
		}, 0, 1, 429, 0},
	}
	for _, tc := range tests {
		for _, stream := range []bool{false, true} {
			name := tc.name + map[bool]string{false: "/generate", true: "/stream"}[stream]
			t.Run(name, func(t *testing.T) {
				l := testkit.NewLLM(t, tc.responder())
				p := newTestProvider(t, l.URL, func(o *Options) { o.MaxRetries = tc.maxRetries })
				m := p.Model(RoleBasic)
				start := time.Now()
				var (
					content string
					err     error
				)
				if stream {
					var sr *schema.StreamReader[*schema.Message]
					sr, err = m.Stream(context.Background(), userMsg("hi"))
					if err == nil {
						var out *schema.Message
						out, _, err = drain(t, sr)
						if out != nil {
							content = out.Content
						}
					}
				} else {
					var out *schema.Message
					out, err = m.Generate(context.Background(), userMsg("hi"))
					if out != nil {
						content = out.Content
					}
				}
				elapsed := time.Since(start)
				if got := l.Count(); got != tc.wantCalls {
					t.Errorf("server saw %d calls, want %d", got, tc.wantCalls)
				}
				if tc.wantStatus == 0 {
					if err != nil || content != "finally" {
						t.Fatalf("got %q, %v", content, err)
					}
				} else {
					var e *Error
					if !errors.As(err, &e) || e.Status != tc.wantStatus {
						t.Fatalf("error = %v, want *Error with status %d", err, tc.wantStatus)
					}
					if IsUnreachable(err) {
						t.Errorf("HTTP error classified as unreachable")
					}
				}
				if elapsed < tc.minElapsed {
					t.Errorf("retried after %v, want at least %v", elapsed, tc.minElapsed)
				}
				if tc.minElapsed == 0 && elapsed > 2*time.Second {
					t.Errorf("took %v", elapsed)
				}
			})
		}
	}
}

// closedPortURL returns a loopback URL nobody listens on.
func closedPortURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr + "/v1"
}

func TestUnreachableEndpoint(t *testing.T) {
	url := closedPortURL(t)
	p := newTestProvider(t, url, nil)
	for _, stream := range []bool{false, true} {
		var err error
		if stream {
			_, err = p.Model(RoleBasic).Stream(context.Background(), userMsg("hi"))
		} else {
			_, err = p.Model(RoleBasic).Generate(context.Background(), userMsg("hi"))
		}
		if !IsUnreachable(err) {
			t.Fatalf("stream=%v: IsUnreachable(%v) = false", stream, err)
		}
		want := "cannot reach the LLM at " + url + ` (basic model "basic-m"): connection refused; set LLM_BASE_URL to an OpenAI-compatible endpoint`
		if err.Error() != want {
			t.Errorf("stream=%v:\n got %s\nwant %s", stream, err, want)
		}
		if strings.Contains(err.Error(), "sk-test-secret") {
			t.Errorf("error leaks the API key")
		}
	}
}

func TestTimeoutOnHang(t *testing.T) {
	tests := []struct {
		name            string
		reply           testkit.Reply
		stream          bool
		wantUnreachable bool
		wantText        string
	}{
		{"generate hang", testkit.Reply{Hang: true}, false, true, "no response within 300ms"},
		{"stream hang", testkit.Reply{Hang: true}, true, true, "no response within 300ms"},
		{"stream stalls mid-way", testkit.Reply{Content: "a slow stream of words", ChunkDelay: time.Hour}, true, false, "did not finish within 300ms"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := testkit.NewLLM(t, testkit.Always(tc.reply))
			p := newTestProvider(t, l.URL, func(o *Options) { o.Timeout = 300 * time.Millisecond })
			start := time.Now()
			var err error
			if tc.stream {
				var sr *schema.StreamReader[*schema.Message]
				sr, err = p.Model(RoleBasic).Stream(context.Background(), userMsg("hi"))
				if err == nil {
					_, _, err = drain(t, sr)
				}
			} else {
				_, err = p.Model(RoleBasic).Generate(context.Background(), userMsg("hi"))
			}
			if elapsed := time.Since(start); elapsed > 2*time.Second {
				t.Errorf("returned after %v, want about 300ms", elapsed)
			}
			if err == nil || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("error = %v, want a deadline error", err)
			}
			if IsUnreachable(err) != tc.wantUnreachable {
				t.Errorf("IsUnreachable = %v, want %v (%v)", !tc.wantUnreachable, tc.wantUnreachable, err)
			}
			if !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("error %q does not mention %q", err, tc.wantText)
			}
			if l.Count() != 1 {
				t.Errorf("timed-out call was retried: %d requests", l.Count())
			}
		})
	}
}

func TestStreamFailures(t *testing.T) {
	long := "one two three four five six seven eight nine ten eleven twelve"
	tests := []struct {
		name      string
		responder testkit.Responder
		wantErr   bool
		wantCalls int
	}{
		// Chunk 0 is the empty role delta, which the client folds into the
		// first real chunk, so breaking after it fails before any chunk.
		{"break before first chunk is retried", testkit.Sequence(
			testkit.Reply{Content: long, BreakAfter: 1}, testkit.Reply{Content: long}), false, 2},
		{"break mid-stream is reported", testkit.Always(testkit.Reply{Content: long, BreakAfter: 4}), true, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := testkit.NewLLM(t, tc.responder)
			p := newTestProvider(t, l.URL, nil)
			sr, err := p.Model(RoleBasic).Stream(context.Background(), userMsg("hi"))
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			out, n, err := drain(t, sr)
			if l.Count() != tc.wantCalls {
				t.Errorf("server saw %d calls, want %d", l.Count(), tc.wantCalls)
			}
			if !tc.wantErr {
				if err != nil || out.Content != long {
					t.Fatalf("got %q, %v", out.Content, err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("mid-stream error = %v (%T), want *Error", err, err)
			}
			if n == 0 {
				t.Errorf("no chunks before the failure")
			}
			if e.Unreachable || e.Role != RoleBasic || e.Model != "basic-m" {
				t.Errorf("error fields = %+v", e)
			}
		})
	}
}

func TestCallerCancellationNotRetried(t *testing.T) {
	l := testkit.NewLLM(t, testkit.Always(testkit.Reply{Hang: true}))
	p := newTestProvider(t, l.URL, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	_, err := p.Model(RoleBasic).Generate(ctx, userMsg("hi"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error = %v", err)
	}
	if IsUnreachable(err) {
		t.Errorf("caller's deadline reported as unreachable endpoint: %v", err)
	}
	if l.Count() != 1 {
		t.Errorf("server saw %d calls, want 1", l.Count())
	}
}

// leakedGoroutines lists goroutines still running code that a stream owns:
// our relay, the eino-ext reader and the fake server's handler.
func leakedGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "leakedGoroutines") {
			continue
		}
		for _, marker := range []string{"infra/llm.(*retrying)", "acl/openai.(*Client).Stream", "testkit.(*LLM).handleChat"} {
			if strings.Contains(g, marker) {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

func waitNoLeaks(t *testing.T, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		leaks := leakedGoroutines()
		if len(leaks) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines still alive after %v:\n%s", len(leaks), within, strings.Join(leaks, "\n\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStreamReleasesResourcesWhenAbandoned(t *testing.T) {
	tests := []struct {
		name string
		stop func(cancel context.CancelFunc, sr *schema.StreamReader[*schema.Message])
	}{
		{"reader closed mid-way", func(_ context.CancelFunc, sr *schema.StreamReader[*schema.Message]) { sr.Close() }},
		{"caller context cancelled mid-way", func(cancel context.CancelFunc, sr *schema.StreamReader[*schema.Message]) {
			cancel()
			defer sr.Close()
			for {
				if _, err := sr.Recv(); err != nil {
					return
				}
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Chunks a minute apart and a long timeout: only prompt
			// cancellation can free the request within the test.
			l := testkit.NewLLM(t, testkit.Always(testkit.Reply{Content: "many words arriving slowly one by one", ChunkDelay: time.Minute}))
			p := newTestProvider(t, l.URL, func(o *Options) { o.Timeout = time.Hour })
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sr, err := p.Model(RoleBasic).Stream(ctx, userMsg("hi"))
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if _, err := sr.Recv(); err != nil {
				t.Fatalf("first Recv: %v", err)
			}
			if len(leakedGoroutines()) == 0 {
				t.Fatal("no stream goroutines found while streaming; the leak check would be vacuous")
			}
			tc.stop(cancel, sr)
			waitNoLeaks(t, 2*time.Second)
		})
	}
}

func TestStreamClosedAfterCompletionLeavesNothing(t *testing.T) {
	l := testkit.NewLLM(t, testkit.Always(testkit.Reply{Content: "short answer here"}))
	p := newTestProvider(t, l.URL, nil)
	for range 3 {
		sr, err := p.Model(RoleBasic).Stream(context.Background(), userMsg("hi"))
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		if _, _, err := drain(t, sr); err != nil {
			t.Fatalf("drain: %v", err)
		}
	}
	waitNoLeaks(t, 2*time.Second)
}
