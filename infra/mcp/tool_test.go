package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	mcpproto "github.com/mark3labs/mcp-go/mcp"
)

func TestResultText(t *testing.T) {
	cases := []struct {
		name string
		res  mcpproto.CallToolResult
		want string
	}{
		{"text parts joined", mcpproto.CallToolResult{Content: []mcpproto.Content{
			mcpproto.NewTextContent("a"), mcpproto.NewTextContent("b")}}, "a\nb"},
		{"pointer text", mcpproto.CallToolResult{Content: []mcpproto.Content{&mcpproto.TextContent{Type: "text", Text: "p"}}}, "p"},
		{"image summarised", mcpproto.CallToolResult{Content: []mcpproto.Content{
			mcpproto.NewTextContent("chart:"), mcpproto.NewImageContent("AAAA", "image/png")}},
			"chart:\n[image omitted: image/png, about 3 bytes]"},
		{"audio summarised", mcpproto.CallToolResult{Content: []mcpproto.Content{mcpproto.NewAudioContent("AAAAAAAA", "audio/wav")}},
			"[audio omitted: audio/wav, about 6 bytes]"},
		{"embedded text resource", mcpproto.CallToolResult{Content: []mcpproto.Content{
			mcpproto.NewEmbeddedResource(mcpproto.TextResourceContents{URI: "file:///a.txt", Text: "inside"})}}, "inside"},
		{"embedded blob", mcpproto.CallToolResult{Content: []mcpproto.Content{
			mcpproto.NewEmbeddedResource(mcpproto.BlobResourceContents{URI: "file:///a.bin", MIMEType: "application/zip", Blob: "AA=="})}},
			"[binary resource omitted: file:///a.bin (application/zip)]"},
		{"resource link", mcpproto.CallToolResult{Content: []mcpproto.Content{
			mcpproto.NewResourceLink("https://example.com/r", "report", "", "")}}, "[resource link: report <https://example.com/r>]"},
		{"structured only", mcpproto.CallToolResult{StructuredContent: map[string]any{"n": 1}}, `{"n":1}`},
		{"empty", mcpproto.CallToolResult{}, ""},
		{"error", mcpproto.CallToolResult{IsError: true, Content: []mcpproto.Content{mcpproto.NewTextContent("bad input")}}, "Error: bad input"},
		{"error without text", mcpproto.CallToolResult{IsError: true}, "Error: the tool reported an error without details"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := resultText(&tc.res); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCallArguments(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
	}{
		{"", "{}", true},
		{"  ", "{}", true},
		{"null", "{}", true},
		{` {"a":1} `, `{"a":1}`, true},
		{`{"big":12345678901234567890}`, `{"big":12345678901234567890}`, true},
		{`[]`, "", false},
		{`"s"`, "", false},
		{`{"a":`, "", false},
		{`{} {}`, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := callArguments(tc.in)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok=%v", err, tc.ok)
			}
			if tc.ok && string(got) != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func FuzzCallArguments(f *testing.F) {
	for _, s := range []string{"", "{}", `{"a":[1,2]}`, "[1]", "nul", `{"x":"\u0000"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := callArguments(in)
		if err != nil {
			return
		}
		var m map[string]any
		if err := json.Unmarshal(got, &m); err != nil {
			t.Fatalf("accepted %q, which is not a JSON object: %v", in, err)
		}
	})
}

func TestParamsFromRawSchema(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		wantErr bool
		check   string // substring of the re-encoded schema
	}{
		{"plain object", `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`, false, `"required":["q"]`},
		{"no type", `{"properties":{"q":{"type":"string"}}}`, false, `"type":"object"`},
		{"empty", `{}`, false, `"type":"object"`},
		{"defs and refs", `{"type":"object","$defs":{"P":{"type":"integer"}},"properties":{"p":{"$ref":"#/$defs/P"}}}`, false, `"$ref":"#/$defs/P"`},
		{"closed object", `{"type":"object","additionalProperties":false}`, false, `"additionalProperties":false`},
		{"not an object", `{"type":"string"}`, true, ""},
		{"invalid JSON", `{"type":`, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := paramsFromRawSchema([]byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			s, err := p.ToJSONSchema()
			if err != nil {
				t.Fatal(err)
			}
			out, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(out), tc.check) {
				t.Errorf("schema %s lacks %s", out, tc.check)
			}
		})
	}
}

func TestParamsFromSchemaDraft07(t *testing.T) {
	// Servers built on older generators still send "definitions".
	var tl mcpproto.Tool
	in := `{"name":"t","inputSchema":{"type":"object","definitions":{"P":{"type":"integer"}},"properties":{"p":{"$ref":"#/definitions/P"}}}}`
	if err := json.Unmarshal([]byte(in), &tl); err != nil {
		t.Fatal(err)
	}
	p, err := paramsFromSchema(tl.InputSchema)
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.ToJSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"$defs":{"P"`) || !strings.Contains(string(out), `"#/$defs/P"`) {
		t.Errorf("schema %s lost its definitions", out)
	}
}

func FuzzParamsFromRawSchema(f *testing.F) {
	for _, s := range []string{`{}`, `{"type":"object"}`, `{"type":["object","null"]}`, `true`, `{"properties":{"a":true}}`, `[]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		p, err := paramsFromRawSchema([]byte(in))
		if err != nil {
			return
		}
		if _, err := p.ToJSONSchema(); err != nil {
			t.Fatalf("accepted %q but cannot render it: %v", in, err)
		}
	})
}

func TestModelToolName(t *testing.T) {
	cases := map[string]string{
		"echo":                  "echo",
		"get-weather_v2":        "get-weather_v2",
		"files.read":            "files_read",
		"résumé":                "r_sum_",
		"":                      "mcp_tool",
		strings.Repeat("a", 80): strings.Repeat("a", 64),
	}
	for in, want := range cases {
		if got := modelToolName(in); got != want {
			t.Errorf("modelToolName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIsConnectionError(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"transport closed", transport.NewError(transport.ErrTransportClosed), true},
		{"refused", transport.NewError(errors.New("dial tcp: connection refused")), true},
		{"deadline", transport.NewError(context.DeadlineExceeded), false},
		{"cancelled", fmt.Errorf("call: %w", context.Canceled), false},
		{"json-rpc error", errors.New("method not found"), false},
	}
	for _, tc := range cases {
		if got := isConnectionError(tc.err); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestChildEnv(t *testing.T) {
	t.Setenv("DEER_GO_TEST_SECRET", "hunter2")
	t.Setenv("PATH", "/usr/bin")
	env := strings.Join(childEnv(map[string]string{"TOKEN": "t", "PATH": "/opt/bin"}), "\n")
	if strings.Contains(env, "hunter2") {
		t.Errorf("secret leaked: %s", env)
	}
	if !strings.Contains(env, "TOKEN=t") || !strings.Contains(env, "PATH=/opt/bin") {
		t.Errorf("env = %s", env)
	}
}

func TestServerConfigDefaults(t *testing.T) {
	var c ServerConfig
	if !c.servesAgent("researcher") || c.servesAgent("coder") {
		t.Error("empty AddToAgents must mean researcher only")
	}
	if !c.toolEnabled("anything") {
		t.Error("empty EnabledTools must allow every tool")
	}
	if c.callTimeout() != DefaultCallTimeout {
		t.Errorf("timeout = %v", c.callTimeout())
	}
	c.AddToAgents = []string{"coder"}
	c.EnabledTools = []string{"a"}
	if c.servesAgent("researcher") || !c.servesAgent("coder") || c.toolEnabled("b") {
		t.Error("explicit lists not honoured")
	}
}
