package handler

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	einomodel "github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/hertz/pkg/app/server"

	"github.com/deer-go/deer-go/infra/llm"
	"github.com/deer-go/deer-go/internal/testkit"
)

// providerModels adapts the real LLM provider the way the app does.
type providerModels struct{ p *llm.Provider }

func (m providerModels) Chat(role string) einomodel.ToolCallingChatModel {
	return m.p.Model(llm.Role(role))
}

// newFakeLLM starts a scripted OpenAI-compatible server and a real provider on it, without retries.
func newFakeLLM(t *testing.T, r testkit.Responder) (*testkit.LLM, ChatModels) {
	t.Helper()
	fake := testkit.NewLLM(t, r)
	p, err := llm.New(context.Background(), llm.Options{
		Endpoints:  map[llm.Role]llm.Endpoint{llm.RoleBasic: {BaseURL: fake.URL, APIKey: "sk-test", Model: "fake-basic"}},
		Timeout:    5 * time.Second,
		MaxRetries: -1,
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatalf("llm.New: %v", err)
	}
	return fake, providerModels{p: p}
}

// startCompat serves the handlers on a loopback listener and returns the base URL.
func startCompat(t *testing.T, opts Options) string {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hz := server.New(
		server.WithListener(ln),
		server.WithMaxRequestBodySize(12<<20),
		server.WithDisablePrintRoute(true),
		server.WithExitWaitTime(10*time.Millisecond),
	)
	New(nil, opts).Register(hz)
	errc := make(chan error, 1)
	go func() { errc <- hz.Run() }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		if err := hz.Shutdown(ctx); err != nil && ctx.Err() == nil {
			t.Logf("shutdown: %v", err)
		}
		select {
		case <-errc:
		case <-ctx.Done():
			t.Log("server did not stop in time")
		}
	})
	base := "http://" + ln.Addr().String()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			if cerr := resp.Body.Close(); cerr != nil {
				t.Fatal(cerr)
			}
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("server not ready: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, r.body)
	}
	return m
}

func (r reply) detail(t *testing.T) string {
	t.Helper()
	d, ok := r.json(t)["detail"].(string)
	if !ok {
		t.Fatalf("no string detail in %s", r.body)
	}
	return d
}

func send(t *testing.T, method, url, contentType string, body []byte) reply {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := resp.Body.Close(); err != nil {
			t.Error(err)
		}
	}()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

func postJSON(t *testing.T, url, body string) reply {
	t.Helper()
	return send(t, http.MethodPost, url, "application/json", []byte(body))
}

func TestRAGReadEndpoints(t *testing.T) {
	base := startCompat(t, Options{})
	tests := []struct {
		name, path, want string
	}{
		{"config", "/api/rag/config", `{"provider":null}`},
		{"resources without query", "/api/rag/resources", `{"resources":[]}`},
		{"resources with empty query", "/api/rag/resources?query=", `{"resources":[]}`},
		{"resources with unencoded query", "/api/rag/resources?query=50%25&more=yes+c++", `{"resources":[]}`},
		{"resources with broken escape", "/api/rag/resources?query=100%zz", `{"resources":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := send(t, http.MethodGet, base+tt.path, "", nil)
			if r.status != http.StatusOK || string(r.body) != tt.want {
				t.Fatalf("got %d %s, want 200 %s", r.status, r.body, tt.want)
			}
			if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("content type %q", ct)
			}
		})
	}
}

func TestRAGQuery(t *testing.T) {
	tests := []struct{ raw, want string }{
		{"", ""},
		{"query=", ""},
		{"query=solar", "solar"},
		{"query=a&b", "a&b"},
		{"x=1&query=deep%20research", "deep research"},
		{"query=100%", "100%"},
		{"query=100%zz", "100%zz"},
		{"query=c++", "c++"},
		{"query=%E4%B8%AD%E6%96%87", "中文"},
		{"query=%ff", "\uFFFD"},
		{"other=1", ""},
		{"notquery=x", ""},
	}
	for _, tt := range tests {
		if got := ragQuery(tt.raw); got != tt.want {
			t.Errorf("ragQuery(%q) = %q, want %q", tt.raw, got, tt.want)
		}
	}
}

func multipartBody(t *testing.T, field, filename string, content []byte) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, err := mw.CreateFormFile(field, filename)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fw.Write(content); err != nil {
		t.Fatal(err)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return mw.FormDataContentType(), buf.Bytes()
}

func TestRAGUpload(t *testing.T) {
	base := startCompat(t, Options{})
	tests := []struct {
		name       string
		json       bool
		field      string
		filename   string
		content    []byte
		wantStatus int
		wantDetail string
	}{
		{"not multipart", true, "", "", nil, 400, "multipart/form-data"},
		{"wrong field", false, "document", "a.md", []byte("x"), 400, "field named file"},
		{"pdf", false, "file", "a.pdf", []byte("x"), 400, "upload a .md or .txt file"},
		{"no extension", false, "file", "README", []byte("x"), 400, "upload a .md or .txt file"},
		{"empty", false, "file", "notes.txt", nil, 400, "is empty"},
		{"too large", false, "file", "big.txt", bytes.Repeat([]byte("a"), maxUploadBytes+1), 413, "larger than 10 MiB"},
		{"path stripped", false, "file", `C:\docs\..\evil.exe`, []byte("x"), 400, `"evil.exe"`},
		{"valid markdown", false, "file", "notes.MD", []byte("# hi"), 501, "No RAG provider is configured on this server"},
		{"valid text", false, "file", "dir/notes.txt", []byte("hi"), 501, "No RAG provider is configured on this server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ct, body := "application/json", []byte(`{"file":"x"}`)
			if !tt.json {
				ct, body = multipartBody(t, tt.field, tt.filename, tt.content)
			}
			r := send(t, http.MethodPost, base+"/api/rag/upload", ct, body)
			if r.status != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", r.status, tt.wantStatus, r.body)
			}
			if d := r.detail(t); !strings.Contains(d, tt.wantDetail) {
				t.Errorf("detail %q does not contain %q", d, tt.wantDetail)
			}
		})
	}
}

func TestPromptEnhance(t *testing.T) {
	tests := []struct {
		name       string
		llmReply   testkit.Reply
		noLLM      bool
		body       string
		wantStatus int
		wantResult string
		wantDetail string
		wantSystem string // substring of the system prompt sent
		wantUser   string // substring of the user message sent
	}{
		{name: "plain", llmReply: testkit.Reply{Content: "Compare the adoption of heat pumps in Germany and France since 2020."},
			body:       `{"prompt":"heat pumps europe"}`,
			wantStatus: 200, wantResult: "Compare the adoption of heat pumps in Germany and France since 2020.",
			wantSystem: "scholarly inquiry", wantUser: "heat pumps europe"},
		{name: "upper-case style and context", llmReply: testkit.Reply{Content: "Latest news on X."},
			body:       `{"prompt":"x","context":"the election","report_style":"NEWS"}`,
			wantStatus: 200, wantResult: "Latest news on X.", wantSystem: "factual news angle", wantUser: "the election"},
		{name: "unknown style is academic", llmReply: testkit.Reply{Content: "ok"},
			body:       `{"prompt":"x","report_style":"poetry"}`,
			wantStatus: 200, wantResult: "ok", wantSystem: "scholarly inquiry"},
		{name: "wrappers removed", llmReply: testkit.Reply{Content: "```text\nEnhanced prompt: \"分析中国光伏产业的竞争格局\"\n```"},
			body: `{"prompt":"光伏"}`, wantStatus: 200, wantResult: "分析中国光伏产业的竞争格局"},
		{name: "empty answer keeps the prompt", llmReply: testkit.Reply{Content: "   "},
			body: `{"prompt":"  keep me "}`, wantStatus: 200, wantResult: "keep me"},
		{name: "missing prompt", body: `{"context":"x"}`, wantStatus: 422, wantDetail: "prompt: is required"},
		{name: "blank prompt", body: `{"prompt":"  "}`, wantStatus: 422, wantDetail: "prompt: is required"},
		{name: "prompt not a string", body: `{"prompt":3}`, wantStatus: 422, wantDetail: "prompt: must be a string"},
		{name: "malformed", body: `{"prompt":`, wantStatus: 400, wantDetail: "malformed JSON"},
		{name: "empty body", body: ``, wantStatus: 400, wantDetail: "request body is empty"},
		{name: "llm failure", llmReply: testkit.Reply{Status: 500, ErrorMessage: "backend exploded"},
			body: `{"prompt":"x"}`, wantStatus: 502, wantDetail: "prompt enhancement failed"},
		{name: "no model", noLLM: true, body: `{"prompt":"x"}`, wantStatus: 503, wantDetail: "no language model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake, r, done := llmCase(t, "/api/prompt/enhance", tt.body, tt.llmReply, tt.noLLM, tt.wantStatus, tt.wantDetail)
			if done {
				return
			}
			if got := r.json(t)["result"]; got != tt.wantResult {
				t.Errorf("result %q, want %q", got, tt.wantResult)
			}
			last := fake.Last()
			if last == nil {
				t.Fatal("the model was not called")
			}
			if !strings.Contains(last.System(), tt.wantSystem) {
				t.Errorf("system prompt lacks %q:\n%s", tt.wantSystem, last.System())
			}
			if !strings.Contains(last.LastUser(), tt.wantUser) {
				t.Errorf("user message lacks %q:\n%s", tt.wantUser, last.LastUser())
			}
		})
	}
}

// sseBlocks splits an event stream into blocks of lines.
func sseBlocks(t *testing.T, body []byte) [][]string {
	t.Helper()
	var blocks [][]string
	var cur []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if cur != nil {
				blocks = append(blocks, cur)
			}
			cur = nil
			continue
		}
		cur = append(cur, line)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Fatalf("unterminated block %q", cur)
	}
	return blocks
}

func TestProseGenerate(t *testing.T) {
	tests := []struct {
		name       string
		llmReply   testkit.Reply
		noLLM      bool
		body       string
		wantStatus int
		wantText   string // concatenated data values
		wantPrefix string // instead of wantText: a non-empty proper prefix of this
		wantDetail string
		wantSystem string
		wantUser   string
	}{
		{name: "improve", llmReply: testkit.Reply{Content: "Solar power grew fast."},
			body: `{"prompt":"solar grew fast","option":"improve"}`, wantStatus: 200,
			wantText: "Solar power grew fast.", wantSystem: "Improve the writing", wantUser: "solar grew fast"},
		{name: "newlines are dropped, text kept", llmReply: testkit.Reply{Content: "First line.\nSecond line.\r\n\nThird: end"},
			body: `{"prompt":"x","option":"continue"}`, wantStatus: 200,
			wantText: "First line.Second line.Third: end", wantSystem: "Continue the text"},
		{name: "chinese", llmReply: testkit.Reply{Content: "光伏装机容量快速增长。"},
			body: `{"prompt":"光伏","option":"LONGER"}`, wantStatus: 200, wantText: "光伏装机容量快速增长。", wantSystem: "Expand"},
		{name: "zap carries the command", llmReply: testkit.Reply{Content: "Done."},
			body: `{"prompt":"text","option":"zap","command":"make it a haiku"}`, wantStatus: 200,
			wantText: "Done.", wantSystem: "Apply the user's instruction", wantUser: "make it a haiku"},
		{name: "empty answer is an empty stream", llmReply: testkit.Reply{Content: ""},
			body: `{"prompt":"x","option":"fix"}`, wantStatus: 200, wantText: ""},
		{name: "stream breaks before any text", llmReply: testkit.Reply{Content: "never seen", BreakAfter: 1},
			body: `{"prompt":"x","option":"fix"}`, wantStatus: 502, wantDetail: "prose generation failed"},
		{name: "stream breaks midway", llmReply: testkit.Reply{Content: "abcdefghijklmnop", BreakAfter: 3},
			body: `{"prompt":"x","option":"fix"}`, wantStatus: 200, wantPrefix: "abcdefghijklmnop"},
		{name: "unknown option", body: `{"prompt":"x","option":"poem"}`, wantStatus: 422, wantDetail: "option: must be one of"},
		{name: "missing option", body: `{"prompt":"x"}`, wantStatus: 422, wantDetail: "option: must be one of"},
		{name: "missing prompt", body: `{"option":"fix"}`, wantStatus: 422, wantDetail: "prompt: is required"},
		{name: "zap without command", body: `{"prompt":"x","option":"zap"}`, wantStatus: 422, wantDetail: "command: is required"},
		{name: "malformed", body: `{"prompt":"x",}`, wantStatus: 400, wantDetail: "malformed JSON"},
		{name: "llm failure", llmReply: testkit.Reply{Status: 401, ErrorMessage: "bad key"},
			body: `{"prompt":"x","option":"fix"}`, wantStatus: 502, wantDetail: "prose generation failed"},
		{name: "no model", noLLM: true, body: `{"prompt":"x","option":"fix"}`, wantStatus: 503, wantDetail: "no language model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake, r, done := llmCase(t, "/api/prose/generate", tt.body, tt.llmReply, tt.noLLM, tt.wantStatus, tt.wantDetail)
			if done {
				return
			}
			if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
				t.Errorf("content type %q", ct)
			}
			var text strings.Builder
			for _, b := range sseBlocks(t, r.body) {
				if len(b) != 1 || !strings.HasPrefix(b[0], "data: ") {
					t.Fatalf("block %q is not a single data line", b)
				}
				text.WriteString(strings.TrimPrefix(b[0], "data: "))
			}
			if tt.wantPrefix != "" {
				if got := text.String(); got == "" || got == tt.wantPrefix || !strings.HasPrefix(tt.wantPrefix, got) {
					t.Errorf("text %q is not a proper prefix of %q", got, tt.wantPrefix)
				}
			} else if text.String() != tt.wantText {
				t.Errorf("text %q, want %q\nraw: %q", text.String(), tt.wantText, r.body)
			}
			last := fake.Last()
			if last == nil || !last.Stream {
				t.Fatal("the model was not called in stream mode")
			}
			if !strings.Contains(last.System(), tt.wantSystem) {
				t.Errorf("system prompt lacks %q:\n%s", tt.wantSystem, last.System())
			}
			if !strings.Contains(last.LastUser(), tt.wantUser) {
				t.Errorf("user message lacks %q:\n%s", tt.wantUser, last.LastUser())
			}
		})
	}
}

func TestSplitProseToken(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"\n", nil},
		{"word", []string{"word"}},
		{" leading space", []string{" leading space"}},
		{"a\nb", []string{"a", "b"}},
		{"a\r\nb\rc\n\n", []string{"a", "b", "c"}},
	}
	for _, tt := range tests {
		got := splitProseToken(tt.in)
		if fmt.Sprint(got) != fmt.Sprint(tt.want) || len(got) != len(tt.want) {
			t.Errorf("splitProseToken(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestNotAvailableEndpoints(t *testing.T) {
	base := startCompat(t, Options{})
	tests := []struct {
		path, body string
		wantStatus int
		wantDetail string
	}{
		{"/api/podcast/generate", `{"content":"# Report"}`, 501, "Podcast generation is not available in deer-go yet"},
		{"/api/podcast/generate", `{"content":""}`, 422, "content: is required"},
		{"/api/podcast/generate", `{}`, 422, "content: is required"},
		{"/api/podcast/generate", `{"content":null}`, 422, "content: is required"},
		{"/api/podcast/generate", `{"content":1}`, 422, "content: must be a string"},
		{"/api/podcast/generate", `{"content":`, 400, "malformed JSON"},
		{"/api/podcast/generate", `["content"]`, 422, "body: must be an object"},
		{"/api/ppt/generate", `{"content":"# Report","locale":"en-US"}`, 501, "PPT generation is not available in deer-go yet"},
		{"/api/ppt/generate", `{"locale":"en-US"}`, 422, "content: is required"},
		{"/api/ppt/generate", `nope`, 400, "malformed JSON"},
		{"/api/tts", `{"text":"hello","encoding":"mp3"}`, 501, "Text-to-speech is not available in deer-go yet"},
		{"/api/tts", `{"content":"hello"}`, 422, "text: is required"},
		{"/api/tts", ``, 400, "request body is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.path+" "+tt.body, func(t *testing.T) {
			r := postJSON(t, base+tt.path, tt.body)
			if r.status != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", r.status, tt.wantStatus, r.body)
			}
			if d := r.detail(t); !strings.Contains(d, tt.wantDetail) {
				t.Errorf("detail %q does not contain %q", d, tt.wantDetail)
			}
		})
	}
}

func TestMCPMetadata(t *testing.T) {
	const disabled = "MCP server configuration is disabled. Set ENABLE_MCP_SERVER_CONFIGURATION=true to enable it."
	echo := func(_ context.Context, body json.RawMessage) (any, int, error) {
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, 0, fmt.Errorf("decode: %w", err)
		}
		if m["transport"] == "bad" {
			return nil, http.StatusUnprocessableEntity, fmt.Errorf("transport must be stdio, sse or streamable_http")
		}
		if m["transport"] == "down" {
			return nil, 0, fmt.Errorf("connect: refused")
		}
		m["tools"] = []map[string]any{{"name": "echo"}}
		return m, 0, nil
	}
	tests := []struct {
		name       string
		enabled    bool
		hook       MCPMetadataFunc
		body       string
		wantStatus int
		wantDetail string
		wantTool   bool
	}{
		{"disabled", false, echo, `{"transport":"stdio","command":"npx"}`, 403, disabled, false},
		{"disabled ignores body", false, echo, `garbage`, 403, disabled, false},
		{"no hook", true, nil, `{"transport":"stdio"}`, 501, "not available in deer-go yet", false},
		{"success", true, echo, `{"transport":"stdio","command":"npx","args":["-y","x"],"name":"ignored"}`, 200, "", true},
		{"hook rejects", true, echo, `{"transport":"bad"}`, 422, "transport must be", false},
		{"hook fails without status", true, echo, `{"transport":"down"}`, 500, "connect: refused", false},
		{"malformed", true, echo, `{"transport":`, 400, "malformed JSON", false},
		{"null body", true, echo, `null`, 422, "JSON object", false},
		{"array body", true, echo, `[]`, 422, "body: must be an object", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := startCompat(t, Options{EnableMCPServerConfiguration: tt.enabled, MCPMetadata: tt.hook})
			r := postJSON(t, base+"/api/mcp/server/metadata", tt.body)
			if r.status != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", r.status, tt.wantStatus, r.body)
			}
			if tt.wantDetail != "" {
				if d := r.detail(t); !strings.Contains(d, tt.wantDetail) {
					t.Errorf("detail %q does not contain %q", d, tt.wantDetail)
				}
			}
			if tt.wantTool {
				m := r.json(t)
				if m["command"] != "npx" || m["tools"] == nil {
					t.Errorf("response does not echo the request with tools: %s", r.body)
				}
			}
		})
	}
}

func TestCleanEnhanced(t *testing.T) {
	tests := []struct{ in, want string }{
		{"  plain  ", "plain"},
		{"```\nword\nsecond line\n```", "word\nsecond line"},
		{"```markdown\nCompare X and Y.\n```", "Compare X and Y."},
		{"Rewritten prompt: Study Z.", "Study Z."},
		{"“引号里的提示”", "引号里的提示"},
		{`"quoted"`, "quoted"},
		{`""`, `""`},
		{"```", "```"},
	}
	for _, tt := range tests {
		if got := cleanEnhanced(tt.in); got != tt.want {
			t.Errorf("cleanEnhanced(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// llmCase posts body to path on a compat server whose model answers with answer (or that has no model), and checks the
// status and, for errors, the detail. done is true when the case ends there.
func llmCase(t *testing.T, path, body string, answer testkit.Reply, noLLM bool, status int, detail string) (*testkit.LLM, reply, bool) {
	t.Helper()
	fake, models := newFakeLLM(t, testkit.Always(answer))
	opts := Options{LLM: models}
	if noLLM {
		opts.LLM = nil
	}
	r := postJSON(t, startCompat(t, opts)+path, body)
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if detail != "" {
		if d := r.detail(t); !strings.Contains(d, detail) {
			t.Errorf("detail %q does not contain %q", d, detail)
		}
		return fake, r, true
	}
	return fake, r, false
}
