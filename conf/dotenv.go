package conf

import (
	"fmt"
	"strings"
)

// parseDotenv reads KEY=VALUE lines. Supported: blank lines, full-line and
// trailing " #" comments, an optional "export " prefix, single quotes
// (literal) and double quotes (with \n \r \t \" \\ escapes). Errors name the
// line but never echo its content, which may hold a secret.
func parseDotenv(data []byte) (map[string]string, error) {
	text := strings.TrimPrefix(string(data), "\uFEFF")
	vars := make(map[string]string)
	for i, line := range strings.Split(text, "\n") {
		lineNo := i + 1
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "export"); ok && rest != "" && isBlank(rest[0]) {
			line = strings.TrimLeft(rest, " \t")
		}
		key, raw, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("line %d: missing '='", lineNo)
		}
		key = strings.TrimSpace(key)
		if !validEnvKey(key) {
			return nil, fmt.Errorf("line %d: invalid variable name", lineNo)
		}
		val, err := dotenvValue(raw)
		if err != nil {
			return nil, fmt.Errorf("line %d: %s: %w", lineNo, key, err)
		}
		vars[key] = val
	}
	return vars, nil
}

func dotenvValue(raw string) (string, error) {
	trimmed := strings.TrimLeft(raw, " \t")
	if trimmed == "" {
		return "", nil
	}
	switch trimmed[0] {
	case '\'':
		end := strings.IndexByte(trimmed[1:], '\'')
		if end < 0 {
			return "", fmt.Errorf("unterminated single quote")
		}
		return trimmed[1 : end+1], checkTrailer(trimmed[end+2:])
	case '"':
		return doubleQuoted(trimmed[1:])
	}
	// An unquoted '#' starts a comment only after whitespace, so values
	// such as URL fragments or passwords containing '#' survive.
	for i := 1; i < len(raw); i++ {
		if raw[i] == '#' && isBlank(raw[i-1]) {
			raw = raw[:i]
			break
		}
	}
	return strings.TrimSpace(raw), nil
}

func doubleQuoted(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), checkTrailer(s[i+1:])
		case '\\':
			if i+1 == len(s) {
				return "", fmt.Errorf("unterminated double quote")
			}
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case '"', '\\':
				b.WriteByte(s[i])
			default:
				b.WriteByte('\\')
				b.WriteByte(s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", fmt.Errorf("unterminated double quote")
}

// checkTrailer allows only whitespace and a comment after a closing quote.
func checkTrailer(s string) error {
	s = strings.TrimLeft(s, " \t")
	if s == "" || s[0] == '#' {
		return nil
	}
	return fmt.Errorf("unexpected text after closing quote")
}

func validEnvKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		letter := c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }
