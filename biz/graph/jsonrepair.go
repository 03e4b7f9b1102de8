package graph

import (
	"encoding/json"
	"errors"
	"strings"
)

// RepairJSON extracts the first JSON value from model output and mends the usual damage: markdown fences, prose
// before or after, trailing commas, single-line comments, and a tail cut off mid-value (open strings, arrays
// and objects are closed). It returns valid JSON or an error.
func RepairJSON(s string) (string, error) {
	s = strings.TrimSpace(stripFences(s))
	start := strings.IndexAny(s, "{[")
	if start < 0 {
		return "", errors.New("no JSON object in the output")
	}
	s = s[start:]
	var out strings.Builder
	var stack []byte
	inStr, esc := false, false
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if inStr {
			out.WriteByte(c)
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			case c == '\n':
				// A raw newline inside a string is invalid JSON; models emit it often.
				tmp := out.String()
				out.Reset()
				out.WriteString(tmp[:len(tmp)-1])
				out.WriteString(`\n`)
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
			out.WriteByte(c)
		case '{', '[':
			stack = append(stack, c)
			out.WriteByte(c)
		case '}', ']':
			if len(stack) == 0 {
				goto done
			}
			trimTrailingComma(&out)
			want := byte('}')
			if stack[len(stack)-1] == '[' {
				want = ']'
			}
			out.WriteByte(want)
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				i++
				goto done
			}
		case '/':
			if i+1 < len(s) && s[i+1] == '/' {
				for i < len(s) && s[i] != '\n' {
					i++
				}
				continue
			}
			out.WriteByte(c)
		default:
			out.WriteByte(c)
		}
	}
done:
	res := out.String()
	if inStr {
		if esc {
			res = res[:len(res)-1]
		}
		res += `"`
	}
	if len(stack) > 0 {
		res = closeTruncated(res, stack)
	}
	if !json.Valid([]byte(res)) {
		return "", errors.New("output is not valid JSON even after repair")
	}
	return res, nil
}

func stripFences(s string) string {
	t := strings.TrimSpace(s)
	if i := strings.Index(t, "```"); i >= 0 {
		rest := t[i+3:]
		if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
			lang := strings.TrimSpace(rest[:nl])
			if len(lang) < 12 && !strings.ContainsAny(lang, "{[") {
				rest = rest[nl+1:]
			}
		}
		if j := strings.Index(rest, "```"); j >= 0 {
			rest = rest[:j]
		}
		if strings.ContainsAny(rest, "{[") {
			return rest
		}
	}
	return t
}

func trimTrailingComma(b *strings.Builder) {
	t := strings.TrimRight(b.String(), " \t\r\n")
	if strings.HasSuffix(t, ",") {
		b.Reset()
		b.WriteString(t[:len(t)-1])
	}
}

// closeTruncated closes a value cut off mid-way: it drops a dangling key or separator and closes the open
// containers in order.
func closeTruncated(s string, stack []byte) string {
	for {
		t := strings.TrimRight(s, " \t\r\n")
		switch {
		case strings.HasSuffix(t, ","), strings.HasSuffix(t, ":"):
			s = t[:len(t)-1]
			if strings.HasSuffix(t, ":") {
				s = dropLastString(s)
			}
			continue
		}
		s = t
		break
	}
	// A dangling key with no value inside an object: {"a": 1, "b"
	if stack[len(stack)-1] == '{' && strings.HasSuffix(s, `"`) {
		before := strings.TrimRight(dropLastString(s), " \t\r\n")
		if strings.HasSuffix(before, ",") || strings.HasSuffix(before, "{") {
			s = strings.TrimSuffix(before, ",")
		}
	}
	// A cut-off literal (tru, fals, nul, 12.) is replaced by null.
	for _, lit := range []string{"tru", "tr", "t", "fals", "fal", "fa", "f", "nul", "nu", "n"} {
		if strings.HasSuffix(s, lit) && len(s) > len(lit) && strings.ContainsRune(":[, ", rune(s[len(s)-len(lit)-1])) {
			s = s[:len(s)-len(lit)] + "null"
			break
		}
	}
	s = strings.TrimSuffix(s, ".")
	for i := len(stack) - 1; i >= 0; i-- {
		if stack[i] == '{' {
			s += "}"
		} else {
			s += "]"
		}
	}
	return s
}

// dropLastString removes the last JSON string literal (a key whose value never came).
func dropLastString(s string) string {
	t := strings.TrimRight(s, " \t\r\n")
	if !strings.HasSuffix(t, `"`) {
		return s
	}
	for i := len(t) - 2; i >= 0; i-- {
		if t[i] == '"' && (i == 0 || t[i-1] != '\\') {
			return t[:i]
		}
	}
	return s
}
