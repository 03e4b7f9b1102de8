package conf

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

const knownSecret = "sk-test-0123456789abcdef"

func TestStringRedactsSecrets(t *testing.T) {
	c := Default()
	c.LLM.Basic.APIKey = knownSecret
	c.LLM.Reasoning = ModelEndpoint{BaseURL: "https://u:" + knownSecret + "@r.example/v1", APIKey: knownSecret, Model: "r"}
	c.LLM.Code = ModelEndpoint{BaseURL: "https://c.example/v1?key=" + knownSecret, Model: "c"}
	c.Search.TavilyAPIKey = knownSecret
	c.Search.SearxHost = "user:" + knownSecret + "@searx.internal"
	c.Search.DDGBaseURL = "http://127.0.0.1:1/#" + knownSecret

	var jsonLog, textLog bytes.Buffer
	slog.New(slog.NewJSONHandler(&jsonLog, nil)).Info("config", "config", c)
	slog.New(slog.NewTextHandler(&textLog, nil)).Info("config", "config", c)

	renderings := map[string]string{
		"String":       c.String(),
		"%v pointer":   fmt.Sprintf("%v", c),
		"%+v pointer":  fmt.Sprintf("%+v", c),
		"%v value":     fmt.Sprintf("%v", *c),
		"%+v value":    fmt.Sprintf("%+v", *c),
		"endpoint %v":  fmt.Sprintf("%v", c.LLM),
		"slog json":    jsonLog.String(),
		"slog text":    textLog.String(),
		"search value": fmt.Sprint(c.Search),
	}
	for name, s := range renderings {
		if strings.Contains(s, knownSecret) {
			t.Errorf("%s leaks the secret: %s", name, s)
		}
	}

	s := c.String()
	for _, want := range []string{"api_key=***", "tavily_api_key=***", "model=qwen2.5", "addr=127.0.0.1:8000", "https://***@r.example/v1", "key=***"} {
		if !strings.Contains(s, want) {
			t.Errorf("String() lacks %q: %s", want, s)
		}
	}
}

func TestStringEmptySecret(t *testing.T) {
	s := Default().String()
	if !strings.Contains(s, "api_key= ") || !strings.Contains(s, "tavily_api_key= ") || strings.Contains(s, "***") {
		t.Fatalf("empty keys should render empty: %s", s)
	}
	if got := (*Config)(nil).String(); got != "<nil>" {
		t.Fatalf("nil String() = %q", got)
	}
}

func TestRedactURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"http://localhost:11434/v1", "http://localhost:11434/v1"},
		{"https://a:b@h.example/p", "https://***@h.example/p"},
		{"https://h.example/p?token=x", "https://h.example/p?***"},
		{"user:pass@host", "<opaque-url>"},
		{"http://h/%zz", "<invalid-url>"},
	}
	for _, tt := range tests {
		if got := redactURL(tt.in); got != tt.want {
			t.Errorf("redactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
