package mcp

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestToolsForHTTP(t *testing.T) {
	for _, tr := range httpTransports {
		t.Run(tr, func(t *testing.T) {
			srv := startTestServer(t, tr)
			cfg := srv.config("per-request")
			cfg.EnabledTools = []string{"echo", "fail"}

			tools, closer, err := ToolsFor(context.Background(), cfg, "researcher", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := toolNames(t, tools); !slices.Equal(got, []string{"echo", "fail"}) {
				t.Fatalf("tools = %v", got)
			}
			if got := call(t, findTool(t, tools, "echo"), `{"text":"once"}`); got != "echo: once" {
				t.Errorf("echo = %q", got)
			}
			if got := call(t, findTool(t, tools, "fail"), `{}`); got != "Error: boom" {
				t.Errorf("fail = %q", got)
			}
			if err := closer(); err != nil {
				t.Fatalf("closer: %v", err)
			}
		})
	}
}

func TestToolsForUnreachable(t *testing.T) {
	srv := downTestServer(t, TransportStreamableHTTP)
	tools, closer, err := ToolsFor(context.Background(), srv.config("gone"), "researcher", nil)
	if err == nil || len(tools) != 0 {
		t.Fatalf("got %d tools, err %v; want an error", len(tools), err)
	}
	if !strings.Contains(err.Error(), `"gone"`) {
		t.Errorf("error %q does not name the server", err)
	}
	if closer == nil || closer() != nil {
		t.Errorf("closer must be callable after a failure")
	}
}

func TestListTools(t *testing.T) {
	for _, tr := range httpTransports {
		t.Run(tr, func(t *testing.T) {
			srv := startTestServer(t, tr)
			cfg := srv.config("meta")
			cfg.EnabledTools = []string{"echo"} // not applied to metadata
			got, err := ListTools(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 5 {
				t.Fatalf("got %d tools, want 5", len(got))
			}
			raw, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			var decoded []metaJSON
			if err := json.Unmarshal(raw, &decoded); err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(decoded, func(m metaJSON) bool { return m.Name == "echo" })
			if i < 0 {
				t.Fatalf("no echo in %s", raw)
			}
			echo := decoded[i]
			if echo.Description != "Echo the text back." || echo.InputSchema.Type != "object" ||
				echo.InputSchema.Properties["text"] == nil || !slices.Equal(echo.InputSchema.Required, []string{"text"}) {
				t.Errorf("echo metadata = %+v", echo)
			}
		})
	}
}

// metaJSON is what the metadata endpoint's clients read.
type metaJSON struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	InputSchema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	} `json:"inputSchema"`
}
