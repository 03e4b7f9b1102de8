package app_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestBadRequests(t *testing.T) {
	s := &script{}
	e := newEnv(t, s.respond)
	big := `{"messages":[{"role":"user","content":"` + strings.Repeat("x", 1<<20) + `"}]}`
	tests := []struct {
		name   string
		body   string
		status int
		detail string
	}{
		{"malformed JSON", `{"messages": [`, 400, "malformed JSON"},
		{"empty body", ``, 400, "empty"},
		{"not an object", `[1,2]`, 422, "must be an object"},
		{"trailing data", `{"messages":[{"role":"user","content":"hi"}]} {}`, 400, "trailing"},
		{"missing messages", `{"thread_id":"x"}`, 422, "messages"},
		{"empty messages", `{"messages":[]}`, 422, "messages"},
		{"empty content", `{"messages":[{"role":"user","content":"  "}]}`, 422, "non-empty"},
		{"messages wrong type", `{"messages":"hello"}`, 422, "messages"},
		{"content wrong type", `{"messages":[{"role":"user","content":42}]}`, 422, "content"},
		{"unknown role", `{"messages":[{"role":"wizard","content":"hi"}]}`, 422, "role"},
		{"bool as string", `{"messages":[{"role":"user","content":"hi"}],"auto_accepted_plan":"yes"}`, 422, "auto_accepted_plan"},
		{"unknown report style", `{"messages":[{"role":"user","content":"hi"}],"report_style":"poem"}`, 422, "report_style"},
		{"step limit out of range", `{"messages":[{"role":"user","content":"hi"}],"max_step_num":1000}`, 422, "max_step_num"},
		{"unknown feedback", `{"messages":[{"role":"user","content":"hi"}],"interrupt_feedback":"maybe"}`, 422, "interrupt_feedback"},
		{"feedback without a pending review", `{"messages":[{"role":"user","content":"ok"}],"thread_id":"nothing","interrupt_feedback":"accepted"}`, 409, "no plan review"},
		{"mcp settings without permission", `{"messages":[{"role":"user","content":"hi"}],"mcp_settings":{"servers":{"x":{"transport":"stdio","command":"sh"}}}}`, 403, "ENABLE_MCP_SERVER_CONFIGURATION"},
		{"body too large", big, 413, "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.Post(e.base+"/api/chat/stream", "application/json", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, b)
			}
			var body struct{ Detail, Error string }
			if err := json.Unmarshal(b, &body); err != nil || !strings.Contains(body.Detail, tt.detail) || body.Error == "" {
				t.Fatalf("error body %s lacks %q (%v)", b, tt.detail, err)
			}
			if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
				t.Errorf("content type %q", resp.Header.Get("Content-Type"))
			}
		})
	}
	if e.llm.Count() != 0 {
		t.Errorf("bad requests reached the model %d times", e.llm.Count())
	}
}

func TestCORSAndSmallEndpoints(t *testing.T) {
	s := &script{}
	e := newEnv(t, s.respond)
	pre := func(origin string) *http.Response {
		req, _ := http.NewRequest("OPTIONS", e.base+"/api/chat/stream", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "content-type,cache-control")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	ok := pre("http://localhost:3000")
	if ok.StatusCode != 204 || ok.Header.Get("Access-Control-Allow-Origin") != "http://localhost:3000" ||
		!strings.Contains(strings.ToLower(ok.Header.Get("Access-Control-Allow-Headers")), "cache-control") ||
		ok.Header.Get("Access-Control-Allow-Credentials") != "true" {
		t.Errorf("pre-flight from an allowed origin: %d %v", ok.StatusCode, ok.Header)
	}
	bad := pre("http://evil.example")
	if bad.StatusCode != 403 || bad.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("pre-flight from another origin: %d %v", bad.StatusCode, bad.Header)
	}

	resp, err := http.Get(e.base + "/api/config")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		RAG    map[string]any      `json:"rag"`
		Models map[string][]string `json:"models"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&cfg); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, ok := cfg.RAG["provider"]; !ok || len(cfg.Models["basic"]) != 1 || cfg.Models["basic"][0] != "fake-basic" {
		t.Errorf("config = %+v", cfg)
	}
	if _, ok := cfg.Models["reasoning"]; ok {
		t.Error("an unconfigured reasoning model is listed")
	}

	resp, err = http.Get(e.base + "/api/nope")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || !json.Valid(b) {
		t.Errorf("unknown route: %d %s", resp.StatusCode, b)
	}
}
