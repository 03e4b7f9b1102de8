package llm

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEstimateTokens(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"abcd", 1},
		{"abcde", 2},
		{"你好世界", 4},
		{"привет", 3},
		{"ab你", 2},
	}
	for _, tc := range tests {
		if got := EstimateTokens(tc.in); got != tc.want {
			t.Errorf("EstimateTokens(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestTrimToTokens(t *testing.T) {
	long := strings.Repeat("0123456789", 100) // 1000 bytes, 250 tokens
	lines := strings.Repeat("line of tool output\n", 50)
	tests := []struct {
		name      string
		in        string
		max       int
		want      string // exact result, or "" to check properties only
		wantTrunc bool
	}{
		{"fits", "short", 10, "short", false},
		{"exact fit", "abcdefgh", 2, "abcdefgh", false},
		{"zero budget", "abc", 0, "", false},
		{"ascii", long, 20, long[:50] + "\n…[truncated 950 characters]", true},
		{"cjk", strings.Repeat("深", 100), 20, strings.Repeat("深", 12) + "\n…[truncated 88 characters]", true},
		{"marker does not fit", long, 3, long[:12], false},
		{"prefers line end", lines, 30, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := TrimToTokens(tc.in, tc.max)
			if tc.want != "" || tc.max == 0 {
				if got != tc.want {
					t.Errorf("got %q\nwant %q", got, tc.want)
				}
			}
			if EstimateTokens(got) > tc.max {
				t.Errorf("result costs %d tokens, budget %d", EstimateTokens(got), tc.max)
			}
			if strings.Contains(got, "[truncated ") != tc.wantTrunc {
				t.Errorf("marker presence = %v, want %v: %q", !tc.wantTrunc, tc.wantTrunc, got)
			}
			if tc.name == "prefers line end" && !strings.HasSuffix(strings.SplitN(got, "\n…", 2)[0], "output") {
				t.Errorf("cut inside a line: %q", got)
			}
		})
	}
}

func FuzzTrimToTokens(f *testing.F) {
	f.Add("hello world", 2)
	f.Add(strings.Repeat("研究报告 research ", 40), 25)
	f.Add(strings.Repeat("é", 300), 9)
	f.Add("\xff\xfe broken \xe4\xbd", 1)
	f.Add(strings.Repeat("line\n", 100), 40)
	f.Fuzz(func(t *testing.T, s string, maxTokens int) {
		maxTokens %= 1 << 20
		got := TrimToTokens(s, maxTokens)
		if maxTokens <= 0 {
			if got != "" {
				t.Fatalf("non-positive budget returned %q", got)
			}
			return
		}
		if EstimateTokens(got) > maxTokens {
			t.Fatalf("result costs %d tokens, budget %d", EstimateTokens(got), maxTokens)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("result is not valid UTF-8: %q", got)
		}
		if EstimateTokens(s) <= maxTokens {
			if got != s {
				t.Fatalf("input within budget was changed")
			}
			return
		}
		kept, _, _ := strings.Cut(got, "\n…[truncated ")
		if !strings.HasPrefix(s, kept) {
			t.Fatalf("result does not start with a prefix of the input")
		}
	})
}
