package mcp

import (
	"errors"
	"strings"
	"testing"
)

func TestPolicyValidate(t *testing.T) {
	stdio := func(cmd string, args ...string) ServerConfig {
		return ServerConfig{Name: "s", Transport: TransportStdio, Command: cmd, Args: args}
	}
	withEnv := func(k, v string) ServerConfig {
		c := stdio("npx", "-y", "@scope/server")
		c.Env = map[string]string{k: v}
		return c
	}
	remote := func(tr, u string) ServerConfig {
		return ServerConfig{Name: "r", Transport: tr, URL: u}
	}
	withHeader := func(k, v string) ServerConfig {
		c := remote(TransportSSE, "https://mcp.example.com/sse")
		c.Headers = map[string]string{k: v}
		return c
	}
	manyArgs := make([]string, maxArgs+1)
	for i := range manyArgs {
		manyArgs[i] = "a"
	}
	custom := Policy{AllowedCommands: []string{"/opt/mcp/bin/server", "node"}}

	cases := []struct {
		name   string
		policy Policy
		cfg    ServerConfig
		field  string // "" means valid
	}{
		{"npx with package", Policy{}, stdio("npx", "-y", "@modelcontextprotocol/server-github"), ""},
		{"python module", Policy{}, stdio("python3", "-m", "mcp_server_fetch", "--user-agent=deer"), ""},
		{"uvx", Policy{}, stdio("uvx", "mcp-server-time", "--local-timezone=UTC"), ""},
		{"absolute path allowed exactly", custom, stdio("/opt/mcp/bin/server"), ""},
		{"bare name from custom list", custom, stdio("node", "index.js"), ""},
		{"default list replaced by custom", custom, stdio("npx"), "command"},
		{"absolute path of allowed name", Policy{}, stdio("/tmp/evil/npx"), "command"},
		{"unclean absolute path", custom, stdio("/opt/mcp/bin/../bin/server"), "command"},
		{"relative path", Policy{}, stdio("./npx"), "command"},
		{"shell", Policy{}, stdio("sh", "-c", "id"), "command"},
		{"bash", Policy{}, stdio("bash"), "command"},
		{"missing command", Policy{}, stdio(""), "command"},
		{"semicolon", Policy{}, stdio("npx", "pkg;rm -rf /"), "args[0]"},
		{"pipe", Policy{}, stdio("npx", "a", "b|c"), "args[1]"},
		{"ampersand", Policy{}, stdio("npx", "a&"), "args[0]"},
		{"backtick", Policy{}, stdio("npx", "`id`"), "args[0]"},
		{"dollar", Policy{}, stdio("npx", "$(id)"), "args[0]"},
		{"redirect out", Policy{}, stdio("npx", ">x"), "args[0]"},
		{"redirect in", Policy{}, stdio("npx", "<x"), "args[0]"},
		{"newline", Policy{}, stdio("npx", "a\nb"), "args[0]"},
		{"dot dot", Policy{}, stdio("node", "../../etc/passwd"), "args[0]"},
		{"long arg", Policy{}, stdio("npx", strings.Repeat("a", maxArgLength+1)), "args[0]"},
		{"longest arg", Policy{}, stdio("npx", strings.Repeat("a", maxArgLength)), ""},
		{"too many args", Policy{}, stdio("npx", manyArgs...), "args"},
		{"max args", Policy{}, stdio("npx", manyArgs[:maxArgs]...), ""},
		{"plain env", Policy{}, withEnv("GITHUB_TOKEN", "ghp_x"), ""},
		{"env PATH", Policy{}, withEnv("PATH", "/tmp"), "env.PATH"},
		{"env lower-case path", Policy{}, withEnv("Path", "/tmp"), "env.Path"},
		{"env LD_PRELOAD", Policy{}, withEnv("LD_PRELOAD", "/tmp/x.so"), "env.LD_PRELOAD"},
		{"env LD_LIBRARY_PATH", Policy{}, withEnv("LD_LIBRARY_PATH", "/tmp"), "env.LD_LIBRARY_PATH"},
		{"env DYLD", Policy{}, withEnv("DYLD_INSERT_LIBRARIES", "/tmp/x"), "env.DYLD_INSERT_LIBRARIES"},
		{"env PYTHONPATH", Policy{}, withEnv("PYTHONPATH", "/tmp"), "env.PYTHONPATH"},
		{"env NODE_OPTIONS", Policy{}, withEnv("NODE_OPTIONS", "--require /tmp/x.js"), "env.NODE_OPTIONS"},
		{"env NODE_PATH", Policy{}, withEnv("NODE_PATH", "/tmp"), "env.NODE_PATH"},
		{"env RUBYLIB", Policy{}, withEnv("RUBYLIB", "/tmp"), "env.RUBYLIB"},
		{"env PERL5LIB", Policy{}, withEnv("PERL5LIB", "/tmp"), "env.PERL5LIB"},
		{"env PYTHONSTARTUP", Policy{}, withEnv("PYTHONSTARTUP", "/tmp/x.py"), "env.PYTHONSTARTUP"},
		{"env BASH_ENV", Policy{}, withEnv("BASH_ENV", "/tmp/x"), "env.BASH_ENV"},
		{"env ENV", Policy{}, withEnv("ENV", "/tmp/x"), "env.ENV"},
		{"env bad name", Policy{}, withEnv("A-B", "x"), "env.A-B"},
		{"env leading digit", Policy{}, withEnv("1A", "x"), "env.1A"},
		{"env empty name", Policy{}, withEnv("", "x"), "env."},
		{"env NUL value", Policy{}, withEnv("A", "x\x00y"), "env.A"},
		{"sse https", Policy{}, remote(TransportSSE, "https://mcp.example.com/sse"), ""},
		{"streamable http", Policy{}, remote(TransportStreamableHTTP, "http://10.0.0.5:8080/mcp"), ""},
		{"missing url", Policy{}, remote(TransportSSE, ""), "url"},
		{"file url", Policy{}, remote(TransportSSE, "file:///etc/passwd"), "url"},
		{"ws url", Policy{}, remote(TransportStreamableHTTP, "ws://host/mcp"), "url"},
		{"no host", Policy{}, remote(TransportStreamableHTTP, "http:///mcp"), "url"},
		{"credentials", Policy{}, remote(TransportStreamableHTTP, "https://user:pw@host/mcp"), "url"},
		{"user only", Policy{}, remote(TransportStreamableHTTP, "https://user@host/mcp"), "url"},
		{"unparsable url", Policy{}, remote(TransportSSE, "http://[::1"), "url"},
		{"header ok", Policy{}, withHeader("Authorization", "Bearer x"), ""},
		{"header CRLF value", Policy{}, withHeader("X-A", "v\r\nX-Injected: 1"), "headers.X-A"},
		{"header LF value", Policy{}, withHeader("X-A", "v\nw"), "headers.X-A"},
		{"header CRLF name", Policy{}, withHeader("X-A\r\nX-B", "v"), "headers"},
		{"header bad name", Policy{}, withHeader("X A", "v"), "headers.X A"},
		{"unknown transport", Policy{}, ServerConfig{Name: "x", Transport: "websocket"}, "transport"},
		{"missing transport", Policy{}, ServerConfig{Name: "x"}, "transport"},
		{"missing name", Policy{}, ServerConfig{Transport: TransportStdio, Command: "npx"}, "name"},
		{"control char in name", Policy{}, ServerConfig{Name: "a\nb", Transport: TransportStdio, Command: "npx"}, "name"},
		// Fields of other transports are not used and so not judged.
		{"stdio ignores url", Policy{}, ServerConfig{Name: "s", Transport: TransportStdio, Command: "npx", URL: "file:///x"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.policy.Validate(tc.cfg)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("err = %v, want a *ValidationError for %q", err, tc.field)
			}
			if ve.Field != tc.field {
				t.Errorf("field = %q, want %q (%v)", ve.Field, tc.field, err)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("message %q does not name %q", err, tc.field)
			}
		})
	}
}

func TestDefaultAllowedCommandsIsACopy(t *testing.T) {
	d := DefaultAllowedCommands()
	d[0] = "sh"
	if err := (Policy{}).Validate(ServerConfig{Name: "x", Transport: TransportStdio, Command: "sh"}); err == nil {
		t.Fatal("mutating the returned slice changed the policy")
	}
}

func FuzzPolicyValidateArgs(f *testing.F) {
	for _, s := range []string{"-y", "@scope/pkg", "a;b", "..", "$HOME", "x\ny", strings.Repeat("z", 1001)} {
		f.Add("npx", s, "KEY", "value")
	}
	f.Fuzz(func(t *testing.T, cmd, arg, envKey, envVal string) {
		cfg := ServerConfig{Name: "f", Transport: TransportStdio, Command: cmd, Args: []string{arg}, Env: map[string]string{envKey: envVal}}
		if err := (Policy{}).Validate(cfg); err != nil {
			return
		}
		if strings.ContainsAny(arg, shellMeta) || strings.Contains(arg, "..") || len(arg) > maxArgLength {
			t.Errorf("accepted arg %q", arg)
		}
		if !validEnvName(envKey) || envBlocked(envKey) {
			t.Errorf("accepted env key %q", envKey)
		}
		if strings.ContainsAny(cmd, `/\`) {
			t.Errorf("accepted command %q", cmd)
		}
	})
}
