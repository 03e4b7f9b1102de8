package mcp

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// defaultAllowedCommands are the launchers a client-supplied stdio server may
// use when Policy.AllowedCommands is empty.
var defaultAllowedCommands = []string{"node", "npx", "python3", "uvx", "uv", "deno", "bun"}

// DefaultAllowedCommands returns the launchers allowed when
// Policy.AllowedCommands is empty.
func DefaultAllowedCommands() []string { return slices.Clone(defaultAllowedCommands) }

const (
	maxArgs      = 100
	maxArgLength = 1000
)

// shellMeta are characters that have no business in an argv entry and hint
// at an attempt to smuggle a shell pipeline through a wrapper script.
const shellMeta = ";|&`$><\n\r"

// blockedEnv are variables that change what a launched interpreter loads, so
// a client could use them to run code other than the allowed command.
var blockedEnv = []string{
	"PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "PYTHONPATH", "NODE_PATH",
	"NODE_OPTIONS", "RUBYLIB", "PERL5LIB", "PYTHONSTARTUP", "BASH_ENV", "ENV",
}

// Policy restricts MCP servers supplied by API clients; operator-configured
// servers are trusted and not checked.
type Policy struct {
	// AllowedCommands lists bare command names (matched against a bare
	// command) and absolute paths (matched exactly). Empty means
	// DefaultAllowedCommands().
	AllowedCommands []string
}

// ValidationError reports the first rule a ServerConfig broke.
type ValidationError struct {
	Field   string // e.g. "command", "args[2]", "env.PATH", "headers.X-Key"
	Message string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("mcp server config: %s: %s", e.Field, e.Message)
}

func invalid(field, format string, a ...any) error {
	return &ValidationError{Field: field, Message: fmt.Sprintf(format, a...)}
}

// Validate checks a client-supplied server against the policy. The returned
// error is a *ValidationError naming the offending field.
func (p Policy) Validate(c ServerConfig) error {
	if strings.TrimSpace(c.Name) == "" {
		return invalid("name", "is required")
	}
	if strings.ContainsFunc(c.Name, isControl) {
		return invalid("name", "contains control characters")
	}
	switch c.Transport {
	case TransportStdio:
		return p.validateStdio(c)
	case TransportSSE, TransportStreamableHTTP:
		return validateHTTP(c)
	case "":
		return invalid("transport", "is required (stdio, sse or streamable_http)")
	default:
		return invalid("transport", "unknown transport %q (want stdio, sse or streamable_http)", c.Transport)
	}
}

func (p Policy) validateStdio(c ServerConfig) error {
	if err := p.checkCommand(c.Command); err != nil {
		return err
	}
	if len(c.Args) > maxArgs {
		return invalid("args", "has %d entries, at most %d allowed", len(c.Args), maxArgs)
	}
	for i, a := range c.Args {
		field := fmt.Sprintf("args[%d]", i)
		switch {
		case len(a) > maxArgLength:
			return invalid(field, "is %d characters long, at most %d allowed", len(a), maxArgLength)
		case strings.ContainsAny(a, shellMeta):
			return invalid(field, "contains a shell metacharacter")
		case strings.ContainsRune(a, 0):
			return invalid(field, "contains a NUL byte")
		case strings.Contains(a, ".."):
			return invalid(field, "contains \"..\"")
		}
	}
	for k, v := range c.Env {
		field := "env." + k
		if !validEnvName(k) {
			return invalid(field, "is not a valid variable name")
		}
		if envBlocked(k) {
			return invalid(field, "may not be set")
		}
		if strings.ContainsRune(v, 0) {
			return invalid(field, "value contains a NUL byte")
		}
	}
	return nil
}

func (p Policy) checkCommand(cmd string) error {
	if cmd == "" {
		return invalid("command", "is required for the stdio transport")
	}
	allowed := p.AllowedCommands
	if len(allowed) == 0 {
		allowed = defaultAllowedCommands
	}
	if filepath.IsAbs(cmd) {
		// Only an exact, clean match: a client-chosen directory holding a
		// binary called "node" must not pass as node.
		if cmd == filepath.Clean(cmd) && slices.ContainsFunc(allowed, func(a string) bool {
			return filepath.IsAbs(a) && filepath.Clean(a) == cmd
		}) {
			return nil
		}
		return invalid("command", "%q is not an allowed command", cmd)
	}
	if strings.ContainsAny(cmd, `/\`) {
		return invalid("command", "relative paths are not allowed, use a bare command name or an absolute path")
	}
	if slices.ContainsFunc(allowed, func(a string) bool {
		return !filepath.IsAbs(a) && filepath.Base(a) == cmd
	}) {
		return nil
	}
	return invalid("command", "%q is not an allowed command (allowed: %s)", cmd, strings.Join(allowed, ", "))
}

func validateHTTP(c ServerConfig) error {
	if c.URL == "" {
		return invalid("url", "is required for the %s transport", c.Transport)
	}
	if err := checkURL(c.URL); err != nil {
		return invalid("url", "%v", err)
	}
	for k, v := range c.Headers {
		field := "headers." + k
		if strings.ContainsAny(k, "\r\n") {
			return invalid("headers", "a header name contains CR or LF")
		}
		if !httpguts.ValidHeaderFieldName(k) {
			return invalid(field, "is not a valid header name")
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return invalid(field, "value contains CR, LF or NUL")
		}
	}
	return nil
}

func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("cannot be parsed: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New("scheme must be http or https")
	}
	if u.Hostname() == "" {
		return errors.New("has no host")
	}
	if u.User != nil {
		return errors.New("must not carry credentials (user:password@)")
	}
	return nil
}

func validEnvName(k string) bool {
	if k == "" {
		return false
	}
	for i, r := range k {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// envBlocked compares case-insensitively: some platforms treat variable names
// that way, and no legitimate server needs "Path" or "node_options".
func envBlocked(k string) bool {
	u := strings.ToUpper(k)
	return strings.HasPrefix(u, "DYLD_") || slices.Contains(blockedEnv, u)
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }
