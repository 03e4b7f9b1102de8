package sandbox

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cloudwego/eino/schema"
)

func TestToolInfo(t *testing.T) {
	t.Parallel()
	r, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	info, err := NewTool(r).Info(context.Background())
	if err != nil {
		t.Fatalf("Info: %v", err)
	}
	if info.Name != "python_repl_tool" {
		t.Errorf("name = %q", info.Name)
	}
	js, err := info.ToJSONSchema()
	if err != nil {
		t.Fatalf("ToJSONSchema: %v", err)
	}
	raw, err := json.Marshal(js)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.Properties["code"].Type != string(schema.String) || len(got.Required) != 1 || got.Required[0] != "code" {
		t.Errorf("schema = %s, want a required string \"code\"", raw)
	}
}

func TestToolRun(t *testing.T) {
	t.Parallel()
	r := newTestRunner(t, Options{})
	short := newTestRunner(t, Options{Timeout: time.Second})
	tests := []struct {
		name   string
		runner *Runner
		code   string
		want   string // exact output unless prefix is set
		prefix bool
		has    []string
	}{
		{
			name: "success", runner: r, code: `print("hi")`,
			want: "Successfully executed:\n```python\nprint(\"hi\")\n```\nStdout: hi\n",
		},
		{
			name: "no output", runner: r, code: "x = 1",
			want: "Successfully executed:\n```python\nx = 1\n```\nStdout: ",
		},
		{
			name: "exception", runner: r, code: "def f():\n    raise KeyError('missing')\nf()",
			want:   "Error executing code:\n```python\ndef f():\n    raise KeyError('missing')\nf()\n```\nError: Traceback (most recent call last):\n",
			prefix: true, has: []string{"KeyError: 'missing'", `line 3, in <module>`},
		},
		{
			name: "silent exit", runner: r, code: "import sys; sys.exit(4)",
			want: "Error executing code:\n```python\nimport sys; sys.exit(4)\n```\nError: process exited with status 4",
		},
		{
			name: "killed by signal", runner: r, code: "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
			want: "Error executing code:\n```python\nimport os, signal; os.kill(os.getpid(), signal.SIGKILL)\n```\nError: process was killed by a signal",
		},
		{
			name: "timeout", runner: short, code: "while True: pass",
			want: "Error executing code:\n```python\nwhile True: pass\n```\nError: timed out after 1s",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args, err := json.Marshal(map[string]string{"code": tt.code})
			if err != nil {
				t.Fatal(err)
			}
			got, err := NewTool(tt.runner).InvokableRun(context.Background(), string(args))
			if err != nil {
				t.Fatalf("InvokableRun: %v", err)
			}
			if tt.prefix {
				if !strings.HasPrefix(got, tt.want) {
					t.Errorf("output = %q, want prefix %q", got, tt.want)
				}
			} else if got != tt.want {
				t.Errorf("output = %q, want %q", got, tt.want)
			}
			for _, h := range tt.has {
				if !strings.Contains(got, h) {
					t.Errorf("output %q does not contain %q", got, h)
				}
			}
		})
	}
}

func TestToolDisabled(t *testing.T) {
	t.Parallel()
	r, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := NewTool(r).InvokableRun(context.Background(), `{"code":"print(1)"}`)
	if err != nil {
		t.Fatalf("InvokableRun: %v", err)
	}
	want := "Error executing code:\n```python\nprint(1)\n```\nError: Python execution is disabled on this server (set ENABLE_PYTHON_REPL=true)"
	if got != want {
		t.Errorf("output = %q, want %q", got, want)
	}
}

func TestToolBadArguments(t *testing.T) {
	t.Parallel()
	r, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	tl := NewTool(r)
	tests := []struct{ name, args string }{
		{"not json", `print(1)`},
		{"missing code", `{}`},
		{"null code", `{"code": null}`},
		{"blank code", `{"code": "  \n"}`},
		{"code not a string", `{"code": 42}`},
		{"array", `["print(1)"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if out, err := tl.InvokableRun(context.Background(), tt.args); err == nil {
				t.Errorf("InvokableRun(%s) = %q, nil; want an error", tt.args, out)
			}
		})
	}
}

func TestToolCancelled(t *testing.T) {
	t.Parallel()
	r := newTestRunner(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if out, err := NewTool(r).InvokableRun(ctx, `{"code":"print(1)"}`); err == nil {
		t.Errorf("InvokableRun with cancelled context = %q, nil; want an error", out)
	}
}

func FuzzToolArguments(f *testing.F) {
	f.Add(`{"code":"print(1)"}`)
	f.Add(`{"code":""}`)
	f.Add(`{`)
	f.Add(`{"code":{"x":1}}`)
	r, err := New(Options{}) // disabled: arguments are parsed, nothing runs
	if err != nil {
		f.Fatal(err)
	}
	tl := NewTool(r)
	f.Fuzz(func(t *testing.T, args string) {
		out, err := tl.InvokableRun(context.Background(), args)
		if err == nil && !strings.HasPrefix(out, "Error executing code:\n```python\n") {
			t.Fatalf("unexpected output %q", out)
		}
		if err != nil && out != "" {
			t.Fatalf("output %q returned together with error %v", out, err)
		}
	})
}
